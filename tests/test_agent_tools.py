"""Tool calls in whole sessions of the three real agent CLIs, offline: each pinned CLI
(scripts/agent-clis.txt) talks to its scripted model server (tests/modelsim.py for Claude Code,
tests/modelsim_codex.py for Codex, tests/modelsim_gemini.py for Gemini CLI), which answers
with a shell tool call (``npm install left-pad``) and more, while memcli's hooks are installed;
the requests the CLI sends back to the "model" show the tool's output and what memcli's
pre-tool hook returned.

``npm`` on the agents' PATH is a stand-in script (no network in tests): it prints a line and
leaves a marker file, so a test can tell that the command ran (or, when a guard denies it,
that it did not).

The throw-away project is the one of ``scripts/real-agents.py`` (``setup()``: private HOME,
git repository, ``memcli init``, two memories, every agent's hooks) plus a code file with a
memory about it (``--path``). The CLIs are installed by ``scripts/install-agent-clis.sh``, as
for tests/test_agent_session.py; the tests skip only when node or npm is missing.

Guards (issue 24: ``memcli remember TEXT --deny PATTERN``, enforced in each agent's pre-tool
hook): the ``guard`` tests show, for each CLI, the call denied, the memory's text and id reaching
the model, and ``memcli stats --memories`` counting the denial.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from modelsim import ModelSim, Turn, result_text
from modelsim_codex import CodexRequest, CodexSim
from modelsim_gemini import GeminiRequest, GeminiSim

from test_agent_session import BILLING, BILLING_FILE, CLI_TIMEOUT, INSTALL, PREFIX, agents

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

#: what the stand-in npm prints, and the file it leaves in the project when it runs
NPM_SAYS = "added 1 package: left-pad (the memcli stand-in for npm)"
NPM_MARK = "npm-ran.txt"
COMMAND = "npm install left-pad"
GUARD = "Use pnpm, never npm, for packages in this repository."
PATCH = f"*** Begin Patch\n*** Update File: {BILLING_FILE}\n@@\n-RATE_CENTS = 300\n+RATE_CENTS = 301\n*** End Patch\n"


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    """The folder of the pinned CLIs, installed once by scripts/install-agent-clis.sh (skip without node/npm)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the pinned agent CLIs need Node.js 20+ and npm")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "GIT_"))}
    if PREFIX:
        env["MEMCLI_AGENT_PREFIX"] = PREFIX
    done = subprocess.run([str(INSTALL)], check=False, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, f"installing the agent CLIs failed:\n{done.stderr}"
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert all((folder / name).exists() for name in ("claude", "codex", "gemini")), done.stdout + done.stderr
    return folder


def memcli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """``memcli ARGS`` in ``project`` with the private HOME."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run([sys.executable, "-m", "memcli", *args], check=False, cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)


def project_with_tools(tmp_path: Path) -> tuple[Path, Path, Path]:
    """real-agents' project with BILLING (importance 1, ``--path`` BILLING_FILE) and a stand-in
    ``npm`` in ``tmp_path/bin``: (home, project, bin folder)."""
    (tmp_path / "session").mkdir()
    home, project = agents.setup(tmp_path / "session")
    (project / "src").mkdir()
    (project / BILLING_FILE).write_text("RATE_CENTS = 300\n", encoding="utf-8")
    done = memcli(project, home, "remember", "--importance", "1", "--path", BILLING_FILE, BILLING)
    assert done.returncode == 0, done.stderr
    tools = tmp_path / "bin"
    tools.mkdir()
    npm = tools / "npm"
    npm.write_text(f"#!/bin/sh\necho \"$*\" > {NPM_MARK}\necho '{NPM_SAYS}'\n", encoding="utf-8")
    npm.chmod(0o755)
    return home, project, tools


def agent_env(home: Path, tools: Path, extra: dict[str, str]) -> dict[str, str]:
    """The CLI's environment: private HOME, the stand-in npm first on PATH, node, no memcli."""
    node = shutil.which("node")
    assert node is not None
    path = ":".join(dict.fromkeys([str(tools), "/usr/bin", "/bin", str(Path(node).parent)]))
    return {"HOME": str(home), "PATH": path, "NO_COLOR": "1", "TZ": "UTC", "DISABLE_AUTOUPDATER": "1", **extra}


def run_cli(binary: Path, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """One CLI run, stdin closed; a hang is a failed run (exit -9), never a timed assertion."""
    try:
        return subprocess.run([str(binary), *args], check=False, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT)
    except subprocess.TimeoutExpired as err:
        return subprocess.CompletedProcess(err.cmd, -9, str(err.stdout or ""), f"timed out after {CLI_TIMEOUT} s")


def describe(sim: ModelSim, done: subprocess.CompletedProcess) -> str:
    """A failure message: the CLI's end, and each request with what it was answered."""
    return (f"exit {done.returncode}\nstdout {done.stdout[-600:]!r}\nstderr {done.stderr[-1500:]!r}\n"
            f"errors {sim.errors}\n" + "\n".join(f"{r!r}: sent {r.reply}" for r in sim.requests))


def hook_runs(project: Path, agent: str) -> list[dict[str, Any]]:
    """memcli's event-log lines of ``agent``'s hooks, in order."""
    lines = (project / ".memcli" / ".cache" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if str(e.get("command", "")).startswith(f"hook {agent} ")]


def guarded(project: Path, home: Path) -> str:
    """Remember GUARD with ``--deny 'Bash(npm install:*)'``; return the new memory's id."""
    done = memcli(project, home, "--json", "remember", GUARD, "--deny", "Bash(npm install:*)")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    found = data.get("data", data)
    memory_id = found.get("id") or (found.get("memory") or {}).get("id")
    assert isinstance(memory_id, str) and memory_id, done.stdout
    return memory_id


def denials(project: Path, home: Path, memory_id: str) -> int:
    """The guard denials ``memcli --json stats --memories`` counts for ``memory_id`` (0 when its
    row is missing)."""
    done = memcli(project, home, "--json", "stats", "--memories")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)["data"]["perMemory"]
    return next((row["denied"] for row in rows if row["id"] == memory_id), 0)


def assert_counted(project: Path, home: Path, memory_id: str) -> None:
    """``stats`` counts the denial of ``memory_id``."""
    assert denials(project, home, memory_id) >= 1, f"stats counts no denial for {memory_id}"


# -- Claude Code ---------------------------------------------------------------------------------


def claude_run(bin_dir: Path, home: Path, project: Path, tools: Path, sim: ModelSim,
               allowed: str) -> subprocess.CompletedProcess:
    return run_cli(bin_dir / "claude", ["-p", "install left-pad, then look at the billing code",
                                        "--allowedTools", allowed], agent_env(home, tools, sim.env()), project)


def test_claude_runs_the_scripted_shell_call_and_the_pre_tool_hook_reaches_the_model(
        bin_dir: Path, tmp_path: Path) -> None:
    """``claude -p``: the model calls ``Bash`` with ``npm install left-pad``, then ``Read`` on the
    billing file, then answers. The second request holds the command's output as the ``Bash``
    ``tool_result``; the third holds ``Read``'s result and the PreToolUse:Read hook's context
    with the billing memory (its ``paths`` name the file)."""
    home, project, tools = project_with_tools(tmp_path)
    script = [Turn.tools(("Bash", {"command": COMMAND, "description": "Install left-pad"})),
              Turn.tools(("Read", {"file_path": str(project / BILLING_FILE)})), Turn.text("Installed; cents.")]
    with ModelSim(script) as sim:
        done = claude_run(bin_dir, home, project, tools, sim, "Bash,Read")
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 3 and not sim.errors, why
        _, second, third = sim.main()[:3]
    ran = second.result_of("Bash")
    assert ran is not None and NPM_SAYS in result_text(ran), second.tool_results()
    assert (project / NPM_MARK).read_text(encoding="utf-8").strip() == "install left-pad"
    context = third.hook_context("PreToolUse")
    assert context and BILLING[:60] in context[0], third.texts()
    assert any(e["command"].endswith("pre-tool-use") and e.get("exit") == 0 for e in hook_runs(project, "claude"))


def test_claude_guard_denies_npm_install_and_the_model_gets_the_memory(bin_dir: Path, tmp_path: Path) -> None:
    """A memory with ``--deny 'Bash(npm install:*)'``: Claude Code's PreToolUse hook denies the
    scripted ``npm install left-pad``; the ``Bash`` ``tool_result`` the model gets quotes the
    memory's text and id; the command never ran; ``stats`` counts the denial."""
    home, project, tools = project_with_tools(tmp_path)
    memory_id = guarded(project, home)
    script = [Turn.tools(("Bash", {"command": COMMAND, "description": "Install left-pad"})), Turn.text("Denied.")]
    with ModelSim(script) as sim:
        done = claude_run(bin_dir, home, project, tools, sim, "Bash")
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 2 and not sim.errors, why
        second = sim.main()[1]
    denied = second.result_of("Bash")
    assert denied is not None, second.tool_results()
    reason = result_text(denied) + "\n".join(second.hook_context("PreToolUse"))
    assert GUARD in reason and memory_id in reason, reason
    assert not (project / NPM_MARK).exists()
    assert_counted(project, home, memory_id)


# -- Codex ---------------------------------------------------------------------------------------


def codex_run(bin_dir: Path, home: Path, project: Path, tools: Path, sim: CodexSim) -> subprocess.CompletedProcess:
    sim.write_config(home / ".codex", f'[projects."{project}"]\ntrust_level = "trusted"\n')
    return run_cli(bin_dir / "codex", ["exec", "--dangerously-bypass-hook-trust", "install left-pad, then fix the "
                                       "rate"], agent_env(home, tools, {}), project)


def after_call(request: CodexRequest, name: str) -> str:
    """Everything the request holds after the last call of ``name``: its output and the
    messages after it (where Codex puts hook context), as one text."""
    items = request.items
    at = max(i for i, item in enumerate(items) if item.get("name") == name)
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items[at + 1:])


def test_codex_runs_the_scripted_shell_call_and_the_pre_tool_hook_reaches_the_model(
        bin_dir: Path, tmp_path: Path) -> None:
    """``codex exec``: the model calls ``exec_command`` with ``npm install left-pad``, then the
    freeform ``apply_patch`` on the billing file, then answers. The second request holds the
    command's output (``function_call_output``); the third holds the patch's
    ``custom_tool_call_output`` and, after the call, a developer message with memcli's
    PreToolUse context: the billing memory (its ``paths`` name the patched file)."""
    home, project, tools = project_with_tools(tmp_path)
    script = [Turn.tools(("exec_command", {"cmd": COMMAND, "login": False})), Turn.tools(("apply_patch", PATCH)),  # type: ignore[arg-type]
              Turn.text("Installed; rate fixed.")]
    with CodexSim(script) as sim:
        done = codex_run(bin_dir, home, project, tools, sim)
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 3 and not sim.errors, why
        _, second, third = sim.main()[:3]
    output = second.output_of("exec_command")
    assert output is not None and NPM_SAYS in output, second.outputs()
    assert "hook: PreToolUse Completed" in done.stderr + done.stdout, why
    patched = third.output_of("apply_patch")
    assert patched is not None and "Success" in patched, third.outputs()
    assert "RATE_CENTS = 301" in (project / BILLING_FILE).read_text(encoding="utf-8")
    later = after_call(third, "apply_patch")
    assert "<memcli-context>" in later and BILLING[:60] in later, later[:2000]
    assert not any(BILLING[:60] in text for text in second.texts()), "the billing memory came before the patch"
    assert any(e["command"].endswith("pre-tool-use") and e.get("exit") == 0 for e in hook_runs(project, "codex"))


def test_codex_guard_denies_npm_install_and_the_model_gets_the_memory(bin_dir: Path, tmp_path: Path) -> None:
    """A memory with ``--deny 'Bash(npm install:*)'``: Codex's PreToolUse hook denies the scripted
    ``exec_command`` ``npm install left-pad``; what the model gets after the call quotes the
    memory's text and id; the command never ran; ``stats`` counts the denial."""
    home, project, tools = project_with_tools(tmp_path)
    memory_id = guarded(project, home)
    with CodexSim([Turn.tools(("exec_command", {"cmd": COMMAND, "login": False})), Turn.text("Denied.")]) as sim:
        done = codex_run(bin_dir, home, project, tools, sim)
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 2 and not sim.errors, why
        second = sim.main()[1]
    reason = after_call(second, "exec_command")
    assert GUARD in reason and memory_id in reason, reason[:2000]
    assert not (project / NPM_MARK).exists()
    assert_counted(project, home, memory_id)


# -- Gemini CLI ----------------------------------------------------------------------------------


def gemini_run(bin_dir: Path, home: Path, project: Path, tools: Path, sim: GeminiSim) -> subprocess.CompletedProcess:
    sim.write_settings(home)
    return run_cli(bin_dir / "gemini", ["-p", "install left-pad, then look at the billing code", "--approval-mode",
                                        "yolo"], agent_env(home, tools, sim.env()), project)


def response_text(request: GeminiRequest, tool: str) -> str:
    """The ``functionResponse`` of the last call of ``tool``, as JSON text ("" when absent)."""
    found = request.response_of(tool)
    return json.dumps(found, ensure_ascii=False) if found is not None else ""


def after_function_call(request: GeminiRequest) -> str:
    """The contents after the last one holding a ``functionCall`` (its ``functionResponse`` and
    anything Gemini CLI added), as JSON text ("" when there was no call)."""
    calls = [i for i, c in enumerate(request.contents) if any("functionCall" in p for p in c.get("parts") or [])]
    return json.dumps(request.contents[calls[-1] + 1:], ensure_ascii=False) if calls else ""


def test_gemini_runs_the_scripted_shell_call_and_its_output_reaches_the_model(
        bin_dir: Path, tmp_path: Path) -> None:
    """``gemini -p``: the model calls ``run_shell_command`` with ``npm install left-pad``, then
    ``read_file`` on the billing file, then answers. The second request's ``functionResponse``
    holds the command's output, the third's the file's text."""
    home, project, tools = project_with_tools(tmp_path)
    script = [Turn.tools(("run_shell_command", {"command": COMMAND})),
              Turn.tools(("read_file", {"file_path": str(project / BILLING_FILE)})), Turn.text("Installed; cents.")]
    with GeminiSim(script) as sim:
        done = gemini_run(bin_dir, home, project, tools, sim)
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 3 and not sim.errors, why
        _, second, third = sim.main()[:3]
    assert NPM_SAYS in response_text(second, "run_shell_command"), second.responses()
    assert (project / NPM_MARK).read_text(encoding="utf-8").strip() == "install left-pad"
    assert "RATE_CENTS = 300" in response_text(third, "read_file"), third.responses()


def test_gemini_after_tool_hook_delivers_the_file_memory_with_the_result(bin_dir: Path, tmp_path: Path) -> None:
    """``gemini -p``: the model calls ``read_file`` on the billing file. Gemini CLI 0.61 passes no
    BeforeTool context to the model (docs/hooks.md), so memcli gives the billing memory (its
    ``paths`` name the file) from its AfterTool hook: the next request holds it in the
    ``functionResponse``, after the file's text, as ``<hook_context>``; the usage journal counts
    one delivery."""
    home, project, tools = project_with_tools(tmp_path)
    script = [Turn.tools(("read_file", {"file_path": str(project / BILLING_FILE)})), Turn.text("Cents.")]
    with GeminiSim(script) as sim:
        done = gemini_run(bin_dir, home, project, tools, sim)
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 2 and not sim.errors, why
        first, second = sim.main()[:2]
    response = response_text(second, "read_file")
    assert "RATE_CENTS = 300" in response and "hook_context" in response, response[:2000]
    assert BILLING[:60] in response, response[:2000]
    assert not any(BILLING[:60] in text for text in first.texts()), "the billing memory came before the read"
    runs = hook_runs(project, "gemini")
    assert any(e["command"].endswith("post-tool-use") and e.get("exit") == 0 for e in runs), runs
    rows = json.loads(memcli(project, home, "--json", "stats", "--memories").stdout)["data"]["perMemory"]
    assert sum(r["delivered"] for r in rows) == 1, rows


def test_gemini_guard_denies_npm_install_and_the_model_gets_the_memory(bin_dir: Path, tmp_path: Path) -> None:
    """A memory with ``--deny 'Bash(npm install:*)'``: Gemini CLI's BeforeTool hook denies the
    scripted ``run_shell_command`` ``npm install left-pad``; the ``functionResponse`` (or what
    follows the call) quotes the memory's text and id; the command never ran; ``stats`` counts it."""
    home, project, tools = project_with_tools(tmp_path)
    memory_id = guarded(project, home)
    with GeminiSim([Turn.tools(("run_shell_command", {"command": COMMAND})), Turn.text("Denied.")]) as sim:
        done = gemini_run(bin_dir, home, project, tools, sim)
        why = describe(sim, done)
        assert done.returncode == 0 and sim.used == 2 and not sim.errors, why
        second = sim.main()[1]
    reason = after_function_call(second)
    assert GUARD in reason and memory_id in reason, reason[:2000]
    assert not (project / NPM_MARK).exists()
    assert_counted(project, home, memory_id)


# -- a session without the pre-tool hook: the violation is counted from the transcript -----------

#: each CLI's settings file and the pre-tool hook events memcli installs there
PRE_TOOL = {"claude": (".claude/settings.json", ["PreToolUse"]), "codex": (".codex/hooks.json", ["PreToolUse"]),
            "gemini": (".gemini/settings.json", ["BeforeTool", "AfterTool"])}


def without_pre_tool_hook(project: Path, agent: str) -> None:
    """Remove memcli's tool hooks from ``agent``'s settings file (as a person who installed the
    hooks before guards existed has them); the others stay."""
    name, events = PRE_TOOL[agent]
    path = project / name
    data = json.loads(path.read_text(encoding="utf-8"))
    for event in events:
        del data["hooks"][event]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def violations(project: Path, home: Path, memory_id: str) -> tuple[int, int]:
    """``(denied, violated)`` that ``memcli stats --memories --json`` counts for ``memory_id``."""
    done = memcli(project, home, "--json", "stats", "--memories")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next((r for r in json.loads(done.stdout)["data"]["perMemory"] if r["id"] == memory_id), None)
    return (row["denied"], row["violated"]) if row else (0, 0)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_without_the_pre_tool_hook_the_call_runs_and_session_end_counts_the_violation(
        bin_dir: Path, tmp_path: Path, agent: str) -> None:
    """The memory with ``--deny 'Bash(npm install:*)'``, but the agent's pre-tool hook removed:
    the scripted ``npm install left-pad`` runs; the session-end hook reads the agent's
    transcript and counts one violation of the memory (and no denial)."""
    home, project, tools = project_with_tools(tmp_path)
    memory_id = guarded(project, home)
    without_pre_tool_hook(project, agent)
    if agent == "claude":
        with ModelSim([Turn.tools(("Bash", {"command": COMMAND, "description": "Install"})), Turn.text("Ok.")]) as sim:
            done = claude_run(bin_dir, home, project, tools, sim, "Bash")
            why = describe(sim, done)
    elif agent == "codex":
        with CodexSim([Turn.tools(("exec_command", {"cmd": COMMAND, "login": False})), Turn.text("Ok.")]) as csim:
            done = codex_run(bin_dir, home, project, tools, csim)
            why = describe(csim, done)
    else:
        with GeminiSim([Turn.tools(("run_shell_command", {"command": COMMAND})), Turn.text("Ok.")]) as gsim:
            done = gemini_run(bin_dir, home, project, tools, gsim)
            why = describe(gsim, done)
    assert done.returncode == 0, why
    assert (project / NPM_MARK).read_text(encoding="utf-8").strip() == "install left-pad", why
    ends = [e for e in hook_runs(project, agent) if e["command"].endswith("session-end")]
    assert ends and all(e.get("exit") == 0 for e in ends), hook_runs(project, agent)
    assert violations(project, home, memory_id) == (0, 1), why
