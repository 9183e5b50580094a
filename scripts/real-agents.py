#!/usr/bin/env python3
"""Start the real Claude Code, Codex and Gemini CLIs with memcli's hooks installed, and check
from each CLI's own logs and session files that every hook ran, exited 0, and that the
session-start context reached the session.

Usage (from a checkout, with memcli installed in its .venv)::

    .venv/bin/python scripts/real-agents.py [--agents claude,codex,gemini] [--keep]

The pinned CLIs of ``scripts/agent-clis.txt`` are installed by ``scripts/install-agent-clis.sh``
(into ``$MEMCLI_AGENT_PREFIX``, default ``.cache/agent-clis/``, reused while the versions match). Each
CLI runs in a throw-away project (a git repository, ``memcli init`` at its root: the memory branch in
``.memcli/``, two memories, ``memcli hook install``) with a private ``HOME``, no login and no API key,
and with ``PATH`` set to ``/usr/bin:/bin`` plus node's folder only, so a hook that needs memcli on
``PATH`` fails.

What makes each CLI fire its hooks without a real model (seen with the pinned versions):

* Claude Code talks to the scripted model server of ``tests/modelsim.py`` (``ANTHROPIC_BASE_URL``
  and a dummy key), which answers each turn with a line of text, so the session runs to its end:
  ``claude -p PROMPT --debug hooks`` runs SessionStart, UserPromptSubmit and SessionEnd, and
  ``claude -p --resume ID /compact`` runs PreCompact (the server writes the summary). Without
  it, Claude Code fires the same hooks and stops at "Not logged in". Evidence: its debug log
  (``~/.claude/debug/ID.txt``: "finished with status 0", "provided additionalContext"), the
  transcript's ``hook_additional_context`` attachment, and the request the model server got.
* Codex (``codex exec --dangerously-bypass-hook-trust`` in a project trusted in
  ``~/.codex/config.toml``) is pointed at a local stub model server that answers every request
  with HTTP 400, so the turn ends at once. Evidence: its "hook: SessionStart Completed" lines,
  the developer message in the rollout file, the stub's request body. ``codex exec`` has no
  ``/compact``, so PreCompact is not fired here; SessionEnd prints nothing, so its exit status
  comes from memcli's own event log.
* Gemini CLI needs an auth method before it runs any hook: a placeholder ``GEMINI_API_KEY``
  (not a key: requests go to the same local stub through ``GOOGLE_GEMINI_BASE_URL``) and
  ``GEMINI_CLI_TRUST_WORKSPACE=true``. Evidence: its ``--debug`` lines "Hook execution for
  EVENT: 1 hooks executed successfully", the chat log's ``<hook_context>``, the stub's request.

Exit status: 0 when every check passed, 1 otherwise (each failure is printed).
"""

from __future__ import annotations

import argparse
import glob
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modelsim import ModelSim  # tests/modelsim.py, put on sys.path by main()

HERE = Path(__file__).resolve().parent
#: (importance, text). The session start's budget (BUDGET characters) holds only the first, so
#: the second reaches a session only through the prompt hook, recalled for PROMPT.
MEMORIES = [("5", "The staging database is called ledger_stage."),
            ("1", "Deploys go out on Tuesdays after the freeze; the release train leaves at 14:00 UTC. "
                  + "The on-call engineer signs the release off in the releases channel, checks the canary "
                  + "dashboards for thirty minutes, and rolls back with the previous image tag when the error "
                  + "rate doubles. Hotfixes skip the train but still need a second reviewer and a changelog "
                  + "entry written before the merge, never after it.")]
BUDGET = 700
#: Seconds of [hooks] deadline in the throw-away project (the CLIs' own hook timeouts are 5-30 s).
HOOK_DEADLINE = 4.5
PROMPT = "When do deploys go out?"
MARK = "ledger_stage"  # in a session: the session-start context reached it
PROMPT_MARK = "release train"  # in a session: the prompt hook's context reached it
CLI_TIMEOUT = 180  # seconds: a hang guard for one CLI run, never a speed assertion


class Stub(http.server.ThreadingHTTPServer):
    """A model server that refuses every request (HTTP 400) and keeps the request bodies."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(handler) -> None:  # `handler`, not `self`: self is the Stub whose bodies it keeps
                size = int(handler.headers.get("content-length") or 0)
                self.bodies.append(handler.rfile.read(size).decode("utf-8", "replace"))
                body = json.dumps({"error": {"message": "memcli test stub: no model here", "code": "invalid_request",
                                             "type": "invalid_request_error", "status": "INVALID_ARGUMENT"}}).encode()
                handler.send_response(400)
                handler.send_header("content-type", "application/json")
                handler.send_header("content-length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            do_GET = do_POST

            def log_message(handler, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Run:
    """The checks of one run: each passes or fails with a line of evidence."""

    def __init__(self) -> None:
        self.failures = 0

    def check(self, ok: bool, what: str, evidence: str) -> bool:
        print(f"{'ok  ' if ok else 'FAIL'}  {what}: {evidence}", flush=True)
        self.failures += not ok
        return ok


def cli(bin_dir: Path, name: str, args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """Run one agent CLI (stdin closed) and return its output; a hang becomes a failed run."""
    try:
        return subprocess.run([str(bin_dir / name), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT)
    except subprocess.TimeoutExpired as err:
        return subprocess.CompletedProcess(err.cmd, -9, str(err.stdout or ""), f"timed out after {CLI_TIMEOUT} s")


def setup(root: Path) -> tuple[Path, Path]:
    """A private HOME and a project with a workspace, two memories and every agent's hooks."""
    home, project = root / "home", root / "project"
    home.mkdir()
    project.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Real Agents\n\temail = real-agents@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    memcli = [sys.executable, "-m", "memcli"]
    subprocess.run(["git", "init", "-q"], cwd=project, env=env, check=True)
    (project / "README.md").write_text("# a throw-away project\n", encoding="utf-8")  # a code repository
    subprocess.run(["git", "add", "README.md"], cwd=project, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "code"], cwd=project, env=env, check=True)
    steps = [["init", "."], *[["remember", "--importance", rank, text] for rank, text in MEMORIES],
             *[["hook", "install", agent] for agent in ("claude", "codex", "gemini")]]
    for step in steps:
        done = subprocess.run([*memcli, *step], cwd=project, env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            sys.exit(f"real-agents: `memcli {' '.join(step)}` failed: {done.stderr.strip()}")
        if step == ["init", "."]:  # at the root of a code repository: the memory branch, in .memcli/
            config = project / ".memcli" / "memcli.toml"
            text = config.read_text(encoding="utf-8")
            text = re.sub(r"(?m)^budget = \d+", f"budget = {BUDGET}", text)
            # what is checked here is the agents' side; a CI machine busy with the test suite must
            # not turn the hooks' answer into the deadline watchdog's note (bench/ measures that)
            text = re.sub(r"(?m)^deadline = 2\.0$", f"deadline = {HOOK_DEADLINE}", text)
            config.write_text(text, encoding="utf-8")
    return home, project


def hook_check(run: Run, home: Path, project: Path) -> None:
    """`memcli hook check` with PATH=/usr/bin:/bin: every installed hook of every agent passes."""
    done = subprocess.run([sys.executable, "-m", "memcli", "--json", "hook", "check"], cwd=project,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300)
    checks = json.loads(done.stdout)["data"]["checks"] if done.stdout.startswith("{") else []
    bad = [f"{c['agent']} {c['event']}: {c['reason']}" for c in checks if not c["ok"]]
    run.check(done.returncode == 0 and len(checks) >= 12 and not bad, "memcli hook check (PATH=/usr/bin:/bin)",
              f"{len(checks) - len(bad)} of {len(checks)} hooks pass" + (f"; {'; '.join(bad)}" if bad else ""))


def claude(run: Run, bin_dir: Path, env: dict, project: Path, model: ModelSim) -> None:
    home = Path(env["HOME"])
    env = {**env, **model.env()}
    first = cli(bin_dir, "claude", ["-p", PROMPT, "--debug", "hooks"], env, project)
    sessions = sorted(glob.glob(str(home / ".claude" / "projects" / "*" / "*.jsonl")), key=os.path.getmtime)
    if not run.check(bool(sessions), "claude: a session was written", f"exit {first.returncode}, "
                     f"{(first.stdout + first.stderr).strip()[:120]!r}"):
        return
    transcript = Path(sessions[-1])
    session_id = transcript.stem
    second = cli(bin_dir, "claude", ["-p", "--resume", session_id, "/compact", "--debug", "hooks"], env, project)
    log = "".join(Path(p).read_text(encoding="utf-8", errors="replace")
                  for p in sorted(glob.glob(str(home / ".claude" / "debug" / "*.txt"))))
    for event, verb in (("SessionStart:startup", "finished"), ("UserPromptSubmit", "finished"),
                        ("SessionEnd:other", "completed"), ("PreCompact:manual", "completed")):
        found = re.search(rf"{re.escape(event)} \[([^\]]*memcli[^\]]*)\] {verb} with status (\d+)", log)
        run.check(bool(found) and found.group(2) == "0", f"claude {event.split(':')[0]} hook",
                  f"debug log: {found.group(0)}" if found else f"no line for {event} in the debug log "
                  f"(resume exit {second.returncode})")
    context = re.search(r"Hook SessionStart \([^)]*memcli[^)]*\) provided additionalContext \((\d+) chars\)", log)
    run.check(bool(context), "claude SessionStart additionalContext",
              f"debug log: provided additionalContext ({context.group(1)} chars)" if context
              else "not in the debug log")
    attached = [r for r in _jsonl(transcript) if r.get("type") == "attachment"
                and (r.get("attachment") or {}).get("type") == "hook_additional_context"
                and MARK in json.dumps(r["attachment"].get("content"))]
    run.check(bool(attached), "claude context reached the session",
              f"transcript {transcript.name}: attachment hook_additional_context holding {MARK!r}"
              if attached else f"no hook_additional_context attachment with {MARK!r} in {transcript}")
    prompted = [r for r in _jsonl(transcript) if r.get("type") == "attachment"
                and (r.get("attachment") or {}).get("type") == "hook_additional_context"
                and PROMPT_MARK in json.dumps(r["attachment"].get("content"))]
    run.check(bool(prompted), "claude prompt context reached the session",
              f"transcript: attachment hook_additional_context holding {PROMPT_MARK!r}" if prompted
              else f"no hook_additional_context attachment with {PROMPT_MARK!r}")
    sent = [r for r in model.main() if MARK in r.raw and PROMPT_MARK in r.raw]
    run.check(bool(sent), "claude sent the context to the model",
              f"{len(sent)} request(s) to the model server held {MARK!r} and {PROMPT_MARK!r}" if sent
              else f"none of {len(model.requests)} request(s) to the model server held both")


def codex(run: Run, bin_dir: Path, env: dict, project: Path, stub: Stub) -> None:
    home = Path(env["HOME"])
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(
        'model_provider = "memcli-stub"\n'
        f'[model_providers.memcli-stub]\nname = "memcli-stub"\nbase_url = "{stub.url}/v1"\n'
        'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\nsupports_websockets = false\n'
        f'[projects."{project}"]\ntrust_level = "trusted"\n', encoding="utf-8")
    before = len(stub.bodies)
    done = cli(bin_dir, "codex", ["exec", "--dangerously-bypass-hook-trust", PROMPT], env, project)
    output = done.stdout + done.stderr
    for event in ("SessionStart", "UserPromptSubmit"):
        ok = f"hook: {event} Completed" in output and f"hook: {event} Failed" not in output
        run.check(ok, f"codex {event} hook", f"codex printed 'hook: {event} Completed'" if ok else
                  f"exit {done.returncode}; {' | '.join(line for line in output.splitlines() if 'hook' in line)[:300]}")
    rollouts = sorted(glob.glob(str(home / ".codex" / "sessions" / "*" / "*" / "*" / "rollout-*.jsonl")))
    developer = [r for path in rollouts for r in _jsonl(Path(path))
                 if (r.get("payload") or {}).get("role") == "developer"
                 and "<memcli-context>" in json.dumps(r["payload"]) and MARK in json.dumps(r["payload"])]
    run.check(bool(developer), "codex context reached the session",
              f"rollout {Path(rollouts[-1]).name}: developer message with <memcli-context> and {MARK!r}"
              if developer else f"no developer message with the context in {rollouts}")
    prompted = [r for path in rollouts for r in _jsonl(Path(path)) if r.get("type") == "response_item"
                and PROMPT_MARK in json.dumps(r.get("payload"))]
    run.check(bool(prompted), "codex prompt context reached the session",
              f"rollout: a {prompted[0]['payload'].get('role')} message holding {PROMPT_MARK!r}" if prompted
              else f"no rollout item with {PROMPT_MARK!r}")
    sent = [b for b in stub.bodies[before:] if MARK in b and PROMPT_MARK in b]
    run.check(bool(sent), "codex sent the context to the model",
              f"{len(sent)} request(s) to the stub held {MARK!r} and {PROMPT_MARK!r}")


def gemini(run: Run, bin_dir: Path, env: dict, project: Path, stub: Stub) -> None:
    home = Path(env["HOME"])
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False}}),
        encoding="utf-8")
    env = {**env, "GEMINI_CLI_TRUST_WORKSPACE": "true", "GOOGLE_GEMINI_BASE_URL": stub.url,
           "GEMINI_API_KEY": "placeholder-the-local-stub-answers"}
    before = len(stub.bodies)
    done = cli(bin_dir, "gemini", ["-p", PROMPT, "--debug"], env, project)
    output = done.stdout + done.stderr
    for event in ("SessionStart", "BeforeAgent", "PreCompress", "SessionEnd"):
        line = f"Hook execution for {event}: 1 hooks executed successfully"
        run.check(line in output, f"gemini {event} hook", f"debug output: {line!r}" if line in output else
                  f"exit {done.returncode}; no {line!r}; "
                  f"{' | '.join(x for x in output.splitlines() if event in x)[:300]}")
    chats = sorted(glob.glob(str(home / ".gemini" / "tmp" / "*" / "chats" / "session-*.json*")))
    logged = [path for path in chats if "memcli-context" in Path(path).read_text(encoding="utf-8", errors="replace")
              and MARK in Path(path).read_text(encoding="utf-8", errors="replace")]
    run.check(bool(logged), "gemini context reached the session",
              f"chat log {Path(logged[0]).name}: <hook_context> with the memcli block and {MARK!r}" if logged
              else f"no chat log with the context in {chats}")
    prompted = [path for path in chats if PROMPT_MARK in Path(path).read_text(encoding="utf-8", errors="replace")]
    run.check(bool(prompted), "gemini prompt context reached the session",
              f"chat log: {PROMPT_MARK!r} (from BeforeAgent)" if prompted else f"no chat log with {PROMPT_MARK!r}")
    sent = [b for b in stub.bodies[before:] if MARK in b and PROMPT_MARK in b]
    run.check(bool(sent), "gemini sent the context to the model",
              f"{len(sent)} request(s) to the stub held {MARK!r} and {PROMPT_MARK!r}")


def event_log(run: Run, project: Path, agents: list[str], skip: int) -> None:
    """memcli's own event log: every hook each agent ran (after the first ``skip`` lines, which
    are the set-up's and `hook check`'s), with its exit status."""
    lines = _jsonl(project / ".memcli" / ".cache" / "events.jsonl")[skip:]
    for agent in agents:
        hooks = [e for e in lines if str(e.get("command", "")).startswith(f"hook {agent} ")]
        names = sorted({e["command"].split()[-1] for e in hooks})
        bad = [e for e in hooks if e.get("exit") != 0]
        run.check(bool(hooks) and not bad, f"{agent} hooks in memcli's event log",
                  f"{len(hooks)} runs ({', '.join(names)}), all exit 0" if hooks and not bad
                  else f"{len(hooks)} runs, {len(bad)} not exit 0")


def _jsonl(path: Path) -> list[dict]:
    records = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return records
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="claude,codex,gemini", help="comma-separated (default: all three)")
    parser.add_argument("--keep", action="store_true", help="keep the throw-away HOME and project; print where")
    args = parser.parse_args()
    agents = [a for a in args.agents.split(",") if a]
    node = shutil.which("node")
    if node is None:
        sys.exit("real-agents: node is not on PATH (Node.js 20+ and npm are needed)")
    installed = subprocess.run([str(HERE / "install-agent-clis.sh")], capture_output=True, text=True)
    if installed.returncode != 0:
        sys.exit(f"real-agents: installing the agent CLIs failed:\n{installed.stderr}")
    bin_dir = Path(installed.stdout.strip().splitlines()[-1])
    path = ":".join(dict.fromkeys(["/usr/bin", "/bin", str(Path(node).parent)]))
    if shutil.which("memcli", path=path):
        sys.exit(f"real-agents: memcli is on the agents' PATH ({shutil.which('memcli', path=path)}), so the "
                 "check that hooks run without it would prove nothing")
    root = Path(tempfile.mkdtemp(prefix="memcli-real-agents-"))
    run = Run()
    stub = Stub()
    sys.path.insert(0, str(HERE.parent / "tests"))
    from modelsim import ModelSim, Turn

    model = ModelSim()  # no script: every turn of Claude Code's gets the one line below
    model.fallback = Turn.text("real-agents: a scripted answer from tests/modelsim.py")
    try:
        home, project = setup(root)
        print(f"agents' PATH={path}; HOME={home}; project={project}", flush=True)
        hook_check(run, home, project)
        skip = len(_jsonl(project / ".memcli" / ".cache" / "events.jsonl"))
        env = {"HOME": str(home), "PATH": path, "DISABLE_AUTOUPDATER": "1", "NO_COLOR": "1"}
        if "claude" in agents:
            claude(run, bin_dir, env, project, model)
        if "codex" in agents:
            codex(run, bin_dir, env, project, stub)
        if "gemini" in agents:
            gemini(run, bin_dir, env, project, stub)
        event_log(run, project, agents, skip)
    finally:
        stub.shutdown()
        model.close()
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"real-agents: {'all checks passed' if not run.failures else f'{run.failures} check(s) failed'}")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
