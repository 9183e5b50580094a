"""Harvest in a real, scripted Claude Code session (issue 25, "what it must show" 2): the pinned
Claude Code, against the scripted model server (tests/modelsim.py), writes its auto memory with
its own Write tool in the format its system prompt asks for; memcli's session-end hook (installed
by ``hook install claude``, ``[agents] harvest = true``) imports it into the person's scope, and
the next session's start tells the model once. The same for Codex (tests/modelsim_codex.py: its
model writes an ad-hoc memory note with Codex's own apply_patch, as Codex's memory prompt asks) and
Gemini CLI (tests/modelsim_gemini.py: write_file into its private project memory). The set-up is
tests/test_agent_session.py's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from modelsim import ModelSim, Request, Turn

from test_agent_session import agents, claude, claude_bin, claude_env, describe  # noqa: F401 - claude_bin: a fixture

if TYPE_CHECKING:
    from modelsim_codex import CodexRequest
    from modelsim_gemini import GeminiRequest

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

TOPIC = ("---\nname: use-pnpm-not-npm\ndescription: Install packages with pnpm, never npm\n"
         "metadata:\n  type: feedback\n---\n\n"
         "Use pnpm, never npm, to install packages in this repository.\n\n**Why:** npm's lockfile broke CI.\n")
INDEX = "- [Use pnpm not npm](use-pnpm-not-npm.md) — pnpm, never npm\n"


def memory_dir(request: Request) -> Path:
    found = re.search(r"persistent file-based memory at `([^`]+)`", request.system)
    assert found, "Claude Code's system prompt names no memory folder (is auto memory off?)"
    return Path(found.group(1))


def test_claude_session_end_harvests_its_auto_memory_and_the_next_start_says_so(claude_bin, tmp_path):  # noqa: F811
    (tmp_path / "session").mkdir()
    home, project = agents.setup(tmp_path / "session")
    config = project / ".memcli" / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"),
                      encoding="utf-8")
    script = [lambda r: Turn.tools(("Write", {"file_path": str(memory_dir(r) / "use-pnpm-not-npm.md"),
                                              "content": TOPIC})),
              lambda r: Turn.tools(("Write", {"file_path": str(memory_dir(r) / "MEMORY.md"), "content": INDEX})),
              Turn.text("Saved to memory.")]
    with ModelSim(script) as sim:
        first = claude(claude_bin, project, claude_env(home, sim), ["Remember: pnpm, never npm."],
                       "--allowedTools", "Write")
        assert first.code == 0 and sim.used == 3 and not sim.errors, describe(sim, first)
        folder = memory_dir(sim.main()[0])
    assert (folder / "use-pnpm-not-npm.md").is_file()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}
    listed = subprocess.run([sys.executable, "-m", "memcli", "--json", "list", "--tag", "claude-code"], cwd=project,
                            env=env, capture_output=True, text=True, timeout=120)
    hits = json.loads(listed.stdout)["data"]["memories"] if listed.returncode == 0 else []
    assert [(m["text"].split("\n")[0], m["provenance"]["actor"], m["provenance"]["sourceType"], m["status"])
            for m in hits] == [("Use pnpm, never npm, to install packages in this repository.", "claude-code",
                                "model_derived", "active")], listed
    with ModelSim([Turn.text("ok"), Turn.text("ok")]) as sim:
        second = claude(claude_bin, project, claude_env(home, sim), ["hello"])
        assert second.code == 0, describe(sim, second)
        started = sim.main()[0].hook_context("SessionStart")
    assert any("1 new memory from Claude Code's auto memory: review with `memcli list --tag claude-code`" in c
               for c in started), started
    with ModelSim([Turn.text("ok")]) as sim:
        third = claude(claude_bin, project, claude_env(home, sim), ["hello again"])
        assert third.code == 0, describe(sim, third)
        assert not any("new memory from" in c for c in sim.main()[0].hook_context("SessionStart"))


def test_gemini_session_end_harvests_its_project_memory(claude_bin, tmp_path):  # noqa: F811
    """The pinned Gemini CLI (scripted by tests/modelsim_gemini.py) writes its private project
    memory with write_file, as its system prompt routes a machine-specific note; its SessionEnd
    hook harvests it; the next session's start says so once."""
    import pytest

    gemini_sim = pytest.importorskip("modelsim_gemini")
    gemini_bin = claude_bin.parent / "gemini"
    (tmp_path / "session").mkdir()
    home, project = agents.setup(tmp_path / "session")
    config = project / ".memcli" / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"),
                      encoding="utf-8")

    def private(request: GeminiRequest) -> Path:
        found = re.search(r"\*\*Private Project Memory\*\* \(`([^`]+)`\)", request.system)
        assert found, "Gemini CLI's system prompt names no private project memory"
        return Path(found.group(1))

    note = "# Private project memory\n\n- The staging tunnel listens on port 6543 on this machine.\n"
    script = [lambda r: Turn.tools(("write_file", {"file_path": str(private(r)), "content": note})),
              Turn.text("Saved.")]
    node = shutil.which("node")
    assert node is not None
    env = {"HOME": str(home), "PATH": ":".join(dict.fromkeys(["/usr/bin", "/bin", str(Path(node).parent)])),
           "NO_COLOR": "1", "TZ": "UTC"}
    with gemini_sim.GeminiSim(script) as sim:
        sim.write_settings(home)
        run_env = {**env, **sim.env()}
        first = subprocess.run([str(gemini_bin), "-p", "Remember: on my machine the tunnel is port 6543.",
                                "--approval-mode", "yolo"], cwd=project, env=run_env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=180)
        assert first.returncode == 0 and sim.used == 2 and not sim.errors, (first.stdout[-400:], first.stderr[-800:])
    listed = subprocess.run([sys.executable, "-m", "memcli", "--json", "list", "--tag", "gemini-cli"], cwd=project,
                            env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                            timeout=120)
    texts = [m["text"] for m in json.loads(listed.stdout)["data"]["memories"]] if listed.returncode == 0 else []
    assert texts == ["The staging tunnel listens on port 6543 on this machine."], listed
    with gemini_sim.GeminiSim([Turn.text("ok")]) as sim:
        second = subprocess.run([str(gemini_bin), "-p", "hello", "--approval-mode", "yolo"], cwd=project,
                                env={**env, **sim.env()}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=180)
        assert second.returncode == 0, second.stderr[-800:]
        seen = "\n".join(sim.main()[0].texts())
    assert "1 new memory from Gemini CLI's project memory" in seen, seen[-2000:]


def test_the_gemini_inbox_fixture_is_what_gemini_clis_own_inbox_code_accepts(claude_bin):  # noqa: F811
    """The Auto Memory inbox fixture (tests/fixtures/agent_memory/gemini-inbox: patches written in
    the format of Gemini CLI 0.61's extraction prompt, since 0.61 cannot be made to write one in a
    scripted run), under the HOME they were written for, passes the pinned CLI's own
    ``listInboxMemoryPatches``, what `/memory inbox` lists: both kinds, every target allowed."""
    import importlib
    import sys

    import pytest

    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    recorder = importlib.import_module("record-agent-memory")
    fixtures = Path(__file__).parent / "fixtures" / "agent_memory"
    home = Path("/tmp/memcli-agent-memory/home")  # the patches' headers name this HOME's files
    if home.exists():
        pytest.skip(f"{home} is in use (a recording)")
    memory = home / ".gemini" / "tmp" / "project" / "memory"
    try:
        shutil.copytree(fixtures / "gemini" / ".gemini", home / ".gemini")
        shutil.copytree(fixtures / "gemini-inbox" / ".gemini" / "tmp" / "project" / "memory" / ".inbox",
                        memory / ".inbox")
        listed = recorder.gemini_inbox(claude_bin.parent, home, memory, "list")
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)
    assert sorted((k["kind"], len(k["entries"])) for k in listed) == [("global", 1), ("private", 2)], listed


CODEX_NOTE = "Run the tests with `-p no:cacheprovider` in this repository: a stale .pytest_cache hid a failure.\n"


def test_codex_session_end_harvests_its_ad_hoc_note(claude_bin, tmp_path):  # noqa: F811
    """The pinned Codex with ``[features] memories = true`` and the recorded memories_v2 (so its
    prompt carries the memory read path): asked to remember something, the scripted model appends
    a note under the folder that prompt names ("append a small Markdown note under
    `<base>/extensions/ad_hoc/notes/`") with Codex's own ``apply_patch``; Codex's SessionEnd hook
    harvests it (the store was imported before the session, so only the note is new); the next
    session's start says so once."""
    from modelsim_codex import CodexSim

    codex_bin = claude_bin.parent / "codex"
    (tmp_path / "session").mkdir()
    home, project = agents.setup(tmp_path / "session")
    config = project / ".memcli" / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"),
                      encoding="utf-8")
    shutil.copytree(Path(__file__).parent / "fixtures" / "agent_memory" / "codex" / ".codex", home / ".codex")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}

    def memcli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memcli", *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=120)

    assert memcli("import", "--agent", "codex").returncode == 0  # the store as it was before the session
    node = shutil.which("node")
    assert node is not None
    run_env = {"HOME": str(home), "PATH": ":".join(dict.fromkeys(["/usr/bin", "/bin", str(Path(node).parent)])),
               "NO_COLOR": "1", "TZ": "UTC"}
    extra = f'[features]\nmemories = true\n[projects."{project}"]\ntrust_level = "trusted"\n'

    def notes_folder(request: CodexRequest) -> Path:
        found = re.search(r"append a small Markdown note under\s+`([^`]+)`", "\n".join(request.texts()))
        assert found, "Codex's prompt names no ad-hoc notes folder (is the memory read path off?)"
        return Path(found.group(1))

    def note(request: CodexRequest) -> Turn:
        path = notes_folder(request) / "2026-12-06T10-00-00-tests-no-cacheprovider.md"
        lines = "".join(f"+{line}\n" for line in CODEX_NOTE.splitlines())
        return Turn.tools(("apply_patch", f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"))  # type: ignore[arg-type]

    def codex(sim: CodexSim, prompt: str) -> subprocess.CompletedProcess:
        sim.write_config(home / ".codex", extra)
        return subprocess.run([str(codex_bin), "exec", "--dangerously-bypass-hook-trust", prompt], cwd=project,
                              env=run_env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)

    with CodexSim([note, Turn.text("Noted.")]) as sim:
        first = codex(sim, "Remember: run the tests with -p no:cacheprovider here, a stale cache hid a failure.")
        why = (first.returncode, first.stderr[-1500:], sim.errors)
        assert first.returncode == 0 and sim.used == 2 and not sim.errors, why
        patched = sim.main()[1].output_of("apply_patch")
        folder = notes_folder(sim.main()[0])
    assert patched is not None and "Success" in patched, patched
    assert (folder / "2026-12-06T10-00-00-tests-no-cacheprovider.md").is_file()
    listed = memcli("--json", "list", "--tag", "ad-hoc-note")
    hits = json.loads(listed.stdout)["data"]["memories"] if listed.returncode == 0 else []
    assert [(m["text"], m["provenance"]["actor"], m["provenance"]["sourceType"], m["status"]) for m in hits] == [
        (CODEX_NOTE.strip(), "codex", "model_derived", "active")], (listed, first.stderr[-1500:])
    with CodexSim([Turn.text("ok")]) as sim:
        second = codex(sim, "hello")
        assert second.returncode == 0, second.stderr[-800:]
        seen = "\n".join(sim.main()[0].texts())
    assert "1 new memory from Codex Memories: review with `memcli list --tag codex`" in seen, seen[-3000:]
    with CodexSim([Turn.text("ok")]) as sim:
        third = codex(sim, "hello again")
        assert third.returncode == 0, third.stderr[-800:]
        assert "new memory from" not in "\n".join(sim.main()[0].texts())
