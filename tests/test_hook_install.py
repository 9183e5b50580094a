"""`hook install` like a tool (issue 9 point 1): the launcher in shared files and absolute
command paths in personal ones (issue 19 item 6), earlier handlers replaced, --local/--user,
settings files it cannot merge refused, symlinks written through,
and `hook check` running every hook as the agent would (PATH=/usr/bin:/bin)."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.agents.launch_command import PREFIX

SCRIPT = str(Path(sys.executable).absolute().parent / "memcli")


def shared(*args: str) -> str:
    """The command a shared file runs: the launcher, then memcli's arguments."""
    return shlex.join([*PREFIX, *args])
CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd", "PreToolUse"]  # Codex: the same


def settings(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def commands(data: dict) -> dict[str, list[str]]:
    return {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in data["hooks"].items()}


@pytest.fixture
def proj(project: Path, run) -> Path:
    """The project repository with a workspace at its top (`memcli init` there) and one memory."""
    assert run("init", str(project)).code == 0
    assert run("remember", "The staging database is called ledger_stage.", cwd=project).code == 0
    return project


def test_install_writes_the_launcher_in_shared_files_and_this_memcli_in_personal_ones(proj, run):
    result = run("hook", "install", "claude", cwd=proj)
    assert result.code == 0 and result.err == "", result
    found = commands(settings(proj / ".claude" / "settings.json"))
    assert list(found) == CLAUDE_EVENTS
    assert found["SessionStart"] == [shared("hook", "claude", "session-start")]
    assert "added SessionStart: memcli hook claude session-start\n" in result.out
    assert run("hook", "install", "claude", "--local", cwd=proj).code == 0
    found = commands(settings(proj / ".claude" / "settings.local.json"))
    assert found["SessionStart"] == [f"{shlex.quote(SCRIPT)} hook claude session-start"]
    assert all(cmds[0].startswith(SCRIPT + " hook claude ") for cmds in found.values())


def test_a_hook_written_by_install_runs_with_a_minimal_path(proj, run):
    """CASES.md R9: installed from a virtual environment, run by the agent with PATH=/usr/bin:/bin."""
    run("hook", "install", "claude", cwd=proj)
    command = commands(settings(proj / ".claude" / "settings.json"))["SessionStart"][0]
    payload = json.dumps({"session_id": "r9", "cwd": str(proj), "hook_event_name": "SessionStart", "source": "startup"})
    proc = subprocess.run(["/bin/sh", "-c", command], input=payload, capture_output=True, text=True, cwd=proj,
                          env={"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]}, timeout=60)
    assert proc.returncode == 0, proc
    assert "ledger_stage" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_reinstall_replaces_bare_and_moved_commands_and_says_which_paths_are_gone(proj, run):
    path = proj / ".claude" / "settings.json"
    path.parent.mkdir()
    old = {"hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo keep-me"}]},
                         {"matcher": "startup|resume|clear|compact", "hooks": [
                             {"type": "command", "command": "memcli hook claude session-start", "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": [{
            "type": "command", "timeout": 5,
            "command": "/gone/venv/bin/memcli -w /old/ws hook claude user-prompt-submit"}]}],
        "PreCompact": [{"hooks": [{
            "type": "command", "command": "'/gone/py thon' -m memcli hook claude pre-compact"}]}],
    }}
    path.write_text(json.dumps(old), encoding="utf-8")
    result = run("hook", "install", "claude", cwd=proj)
    assert result.code == 0, result
    assert "updated SessionStart" in result.out and "updated UserPromptSubmit" in result.out
    assert "updated PreCompact" in result.out and "added SessionEnd" in result.out
    warnings = result.err.splitlines()
    assert len(warnings) == 2, result.err
    assert "UserPromptSubmit hook ran /gone/venv/bin/memcli, which no longer exists" in warnings[0]
    assert "PreCompact hook ran /gone/py thon, which no longer exists" in warnings[1]
    found = commands(settings(path))
    assert found["SessionStart"] == ["echo keep-me", shared("hook", "claude", "session-start")]
    for event in CLAUDE_EVENTS:
        assert sum(c.startswith(shared()) for c in found[event]) == 1, found
    again = run("hook", "install", "claude", cwd=proj)
    assert again.code == 0 and again.err == "" and "nothing to change" in again.out


def test_local_and_user_settings_files(proj, run):
    local = run("hook", "install", "claude", "--local", cwd=proj)
    assert local.code == 0 and str(proj / ".claude" / "settings.local.json") in local.out
    assert not (proj / ".claude" / "settings.json").exists()
    assert list(commands(settings(proj / ".claude" / "settings.local.json"))) == CLAUDE_EVENTS
    user = run("-w", str(proj), "hook", "install", "claude", "--user", cwd=proj)
    home = Path(os.environ["HOME"])
    assert user.code == 0 and str(home / ".claude" / "settings.json") in user.out
    assert commands(settings(home / ".claude" / "settings.json"))["SessionEnd"] == [
        f"{SCRIPT} -w {proj} hook claude session-end"]
    both = run("hook", "install", "claude", "--local", "--user", cwd=proj)
    assert both.code == 2 and both.err.count("\n") == 1
    for agent in ("codex", "gemini"):
        refused = run("hook", "install", agent, "--local", cwd=proj)
        assert refused.code == 2 and "--local is for Claude Code" in refused.err, refused
    assert not (proj / ".codex").exists() and not (proj / ".gemini").exists()
    assert run("hook", "uninstall", "claude", "--local", cwd=proj).code == 0
    assert settings(proj / ".claude" / "settings.local.json") == {}


def test_codex_and_gemini_get_every_event_and_the_trust_steps(proj, run):
    codex = run("hook", "install", "codex", cwd=proj)
    assert codex.code == 0, codex
    assert "next: Codex runs these hooks only once you trust them" in codex.out and "/hooks" in codex.out
    data = settings(proj / ".codex" / "hooks.json")
    assert list(data["hooks"]) == CLAUDE_EVENTS
    assert [g["hooks"][0]["timeout"] for g in (data["hooks"][e][0] for e in CLAUDE_EVENTS)] == [10, 5, 30, 3, 5]
    assert "matcher" not in data["hooks"]["SessionStart"][0]
    gemini = run("--json", "hook", "install", "gemini", cwd=proj).json()
    assert "trusted folder" in gemini["data"]["next"][0]
    data = settings(proj / ".gemini" / "settings.json")
    assert list(data["hooks"]) == ["SessionStart", "BeforeAgent", "PreCompress", "SessionEnd", "BeforeTool",
                                   "AfterTool"]
    assert data["hooks"]["BeforeTool"][0]["hooks"][0]["command"].endswith("hook gemini pre-tool-use")
    assert data["hooks"]["AfterTool"][0]["hooks"][0]["command"].endswith("hook gemini post-tool-use")
    assert data["hooks"]["AfterTool"][0]["matcher"] == data["hooks"]["BeforeTool"][0]["matcher"]
    assert data["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 5000
    assert data["hooks"]["BeforeAgent"][0]["hooks"][0]["command"].endswith("hook gemini user-prompt-submit")


def test_each_agent_answers_each_event_in_its_own_format(proj, run):
    base = {"session_id": "f1", "cwd": str(proj), "transcript_path": str(proj / "none.jsonl")}
    prompt = {**base, "prompt": "what is the staging database called?"}
    gemini = run("hook", "gemini", "user-prompt-submit", input=json.dumps(prompt), cwd=proj)
    body = json.loads(gemini.out)["hookSpecificOutput"]
    assert body["hookEventName"] == "BeforeAgent" and "ledger_stage" in body["additionalContext"]
    codex = run("hook", "codex", "user-prompt-submit", input=json.dumps({**prompt, "session_id": "f2"}), cwd=proj)
    assert codex.code == 0 and codex.out.startswith("<memcli-context>") and "ledger_stage" in codex.out
    for agent in ("claude", "codex", "gemini"):
        for event in ("pre-compact", "session-end"):
            quiet = run("hook", agent, event, input=json.dumps(base), cwd=proj)
            assert (quiet.code, quiet.out) == (0, ""), (agent, event, quiet)


# Settings files `hook install` must refuse (one line naming the problem, nothing written).
UNMERGEABLE = [
    ("[]", "JSON list, not an object"),
    ('"hooks"', "JSON string, not an object"),
    ("null", "JSON null, not an object"),
    ("7", "JSON number, not an object"),
    ('{"hooks": []}', '"hooks" is a list'),
    ('{"hooks": "memcli"}', '"hooks" is a string'),
    ('{"hooks": null}', '"hooks" is a null'),
    ('{"hooks": {"SessionStart": {}}}', '"hooks.SessionStart" is a object'),
    ('{"hooks": {"SessionStart": "memcli hook claude session-start"}}', '"hooks.SessionStart" is a string'),
    ('{"hooks": {"SessionStart": ["echo hi"]}}', '"hooks.SessionStart[0]" is a string'),
    ('{"hooks": {"SessionStart": [null]}}', '"hooks.SessionStart[0]" is a null'),
    ('{"hooks": {"SessionStart": [{"matcher": "startup"}]}}', '"hooks.SessionStart[0].hooks" is missing'),
    ('{"hooks": {"SessionStart": [{"hooks": {"type": "command"}}]}}', '"hooks.SessionStart[0].hooks" is a object'),
    ('{"hooks": {"SessionStart": [{"hooks": ["echo hi"]}]}}', '"hooks.SessionStart[0].hooks[0]" is a string'),
    ('{"hooks": {"SessionStart": [{"hooks": [{"command": ["memcli"]}]}]}}', '.hooks[0].command" is a list'),
    ('{"hooks": {"SessionStart": [{"matcher": 3, "hooks": []}]}}', '"hooks.SessionStart[0].matcher" is a number'),
    ('{"hooks": {"": []}}', "empty event name"),
    ('{"hooks": {}, "hooks": {"SessionStart": []}}', "the key 'hooks' appears twice"),
    ('{"env": {"A": 1, "A": 2}}', "the key 'A' appears twice"),
    ("{not json", "is not valid JSON"),
    ('{"hooks": {}} trailing', "is not valid JSON"),
    ("// a comment\n{}", "is not valid JSON"),
]


@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_settings_that_cannot_be_merged_safely_are_refused_and_left_alone(tmp_path, run, agent):
    folder = tmp_path / f".{agent}"
    folder.mkdir()
    path = folder / "settings.json"
    for text, problem in [*UNMERGEABLE, (b"\xff\xfe{}", "is not UTF-8")]:
        raw = text if isinstance(text, bytes) else text.encode()
        path.write_bytes(raw)
        result = run("hook", "install", agent, cwd=tmp_path)
        assert result.code == 5 and result.out == "", (text, result)
        assert result.err.count("\n") == 1 and problem in result.err and str(path) in result.err, (text, result.err)
        assert "it was left as it is" in result.err
        assert path.read_bytes() == raw
        as_json = run("--json", "hook", "uninstall", agent, cwd=tmp_path).json()
        assert as_json["error"]["code"] == "settings_unmergeable" and as_json["error"]["exit"] == 5
        assert path.read_bytes() == raw
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json"]  # no temporary file left


def test_odd_but_mergeable_files_keep_every_other_byte_of_meaning(tmp_path, run):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    for text in ("", "  \n", "\ufeff{}", '{"hooks": {}}', '{"hooks": {"Stop": []}}',
                 '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "extra": [1]}], "id": 2}]}}'):
        path.write_text(text, encoding="utf-8")
        before = json.loads(text.lstrip("\ufeff")) if text.strip() else {}
        assert run("hook", "install", "claude", cwd=tmp_path).code == 0, text
        after = settings(path)
        assert {k: v for k, v in after["hooks"].items() if k not in CLAUDE_EVENTS} == before.get("hooks", {})
        assert run("hook", "uninstall", "claude", cwd=tmp_path).code == 0
        assert settings(path) == (before if before.get("hooks") else {})  # a "hooks" left empty goes


def test_a_symlinked_settings_file_is_written_through(proj, run, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}), encoding="utf-8")
    real.chmod(0o644)
    (proj / ".claude").mkdir()
    link = proj / ".claude" / "settings.json"
    link.symlink_to(real)
    assert run("hook", "install", "claude", cwd=proj).code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    data = settings(real)
    assert data["permissions"] == {"allow": ["Bash(ls)"]} and list(data["hooks"]) == CLAUDE_EVENTS
    assert real.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude-settings.json"]


@pytest.mark.slow
def test_hook_check_passes_every_event_with_a_minimal_path(proj, run):
    for agent in ("claude", "codex", "gemini"):
        assert run("hook", "install", agent, cwd=proj).code == 0
    result = run("hook", "check", "claude", cwd=proj, env={"PATH": "/usr/bin:/bin"})
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert [line.split("\t")[:3] for line in lines] == [["pass", "claude", e] for e in CLAUDE_EVENTS]
    assert "characters of context" in lines[0]
    every = run("--json", "hook", "check", cwd=proj).json()
    assert every["ok"] and every["data"]["passed"]
    events = [(c["agent"], c["event"]) for c in every["data"]["checks"]]
    assert events == [("claude", e) for e in CLAUDE_EVENTS] + [("codex", e) for e in CLAUDE_EVENTS] + [
        ("gemini", e) for e in ("SessionStart", "BeforeAgent", "PreCompress", "SessionEnd", "BeforeTool", "AfterTool")]
    assert all(c["ok"] and c["exit"] == 0 for c in every["data"]["checks"])
    # LOW newcomer fault (stop 33): with extraction on, SessionEnd's check warned about its own made-up transcript
    config = next(proj.rglob("memcli.toml"))
    config.write_text(config.read_text(encoding="utf-8").replace("extract = false", "extract = true"),
                      encoding="utf-8")
    ended = run("--json", "hook", "check", "claude", cwd=proj).json()["data"]["checks"]
    assert [c["note"] for c in ended if c["event"] == "SessionEnd"] == [""], ended
    # and with a guard in force, whose violations SessionEnd counts from the transcript (stop 34)
    assert run("remember", "Never run terraform destroy", "--deny", "Bash(terraform destroy:*)", cwd=proj).code == 0
    ended = run("--json", "hook", "check", "claude", cwd=proj).json()["data"]["checks"]
    assert [c["note"] for c in ended if c["event"] == "SessionEnd"] == [""], ended


@pytest.mark.slow
def test_hook_check_names_each_failure_and_exits_18(proj, run, tmp_path):
    path = proj / ".claude" / "settings.json"
    run("hook", "install", "claude", cwd=proj)
    data = settings(path)
    data["hooks"]["SessionStart"][-1]["hooks"][0]["command"] = "memcli hook claude session-start"  # bare: not on PATH
    data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] = f"{SCRIPT} hook gemini user-prompt-submit"
    slow = tmp_path / "slow" / "memcli"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    slow.chmod(0o755)
    data["hooks"]["PreCompact"][0]["hooks"][0].update(command=f"{slow} hook claude pre-compact", timeout=1)
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run("hook", "check", cwd=proj, timeout=30)
    assert result.code == 18, result
    verdicts = {line.split("\t")[2]: line.split("\t") for line in result.out.splitlines()}
    assert verdicts["SessionStart"][0] == "FAIL" and "exit 127" in verdicts["SessionStart"][3]
    assert "memcli: not found" in verdicts["SessionStart"][3]
    assert verdicts["UserPromptSubmit"][0] == "FAIL" and "'BeforeAgent', not 'UserPromptSubmit'" in verdicts[
        "UserPromptSubmit"][3]
    assert verdicts["PreCompact"][0] == "FAIL" and "timed out after its installed timeout of 1 s" in verdicts[
        "PreCompact"][3]
    assert verdicts["SessionEnd"][0] == "pass"
    as_json = run("--json", "hook", "check", "claude", cwd=proj, timeout=30)
    assert as_json.code == 18 and as_json.json()["data"]["passed"] is False


def test_hook_check_fails_hooks_that_answer_but_cannot_open_the_workspace(proj, run):
    assert run("hook", "install", "claude", cwd=proj).code == 0
    config = proj / ".memcli" / "memcli.toml"  # `memcli init` at the project's root: the memory branch
    config.write_text(config.read_text(encoding="utf-8") + "\ngarbage = = =\n", encoding="utf-8")
    result = run("hook", "check", "claude", cwd=proj, timeout=60)
    assert result.code == 18, result
    lines = result.out.splitlines()  # the hooks answer by the last memcli.toml that loads (hnc3), and still fail
    assert all(line.startswith("FAIL\t") and "by fallback settings" in line and "cannot read configuration" in line
               for line in lines), lines


def test_hook_check_without_hooks_or_with_a_broken_file(tmp_path, run):
    none = run("hook", "check", cwd=tmp_path)
    assert none.code == 18 and none.err.count("\n") == 1 and "no memcli hooks installed" in none.err
    assert "memcli hook install" in none.err
    assert run("hook", "check", "cursor", cwd=tmp_path).code == 2
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{"hooks": []}', encoding="utf-8")
    broken = run("hook", "check", "gemini", cwd=tmp_path)
    assert broken.code == 18 and broken.out.startswith("FAIL\tgemini\t-\t") and '"hooks" is a list' in broken.out


def test_hook_check_in_a_moved_install_fails_until_install_runs_again(proj, run, tmp_path):
    """An upgrade or a move: the path written earlier is gone; check says so, install fixes it."""
    venv = tmp_path / "oldvenv" / "bin"
    venv.mkdir(parents=True)
    shutil.copy(SCRIPT, venv / "memcli")
    run("hook", "install", "claude", "--local", cwd=proj)  # a personal file: this memcli's absolute path
    path = proj / ".claude" / "settings.local.json"
    path.write_text(path.read_text(encoding="utf-8").replace(SCRIPT, str(venv / "memcli")), encoding="utf-8")
    shutil.rmtree(tmp_path / "oldvenv")
    assert run("hook", "check", "claude", cwd=proj).code == 18
    fixed = run("hook", "install", "claude", "--local", cwd=proj)
    assert fixed.err.count("which no longer exists") == 5
    assert run("hook", "check", "claude", cwd=proj).code == 0


def test_a_settings_file_that_cannot_be_written_is_one_error_line(tmp_path, run):
    (tmp_path / ".claude").write_text("a file where the folder should be\n", encoding="utf-8")
    result = run("hook", "install", "claude", cwd=tmp_path)
    assert result.code == 5 and result.out == "" and result.err.count("\n") == 1, result
    assert "cannot be written" in result.err and "Traceback" not in result.err
    assert (tmp_path / ".claude").read_text(encoding="utf-8") == "a file where the folder should be\n"


def test_hook_check_runs_are_not_counted_as_the_persons_sessions(proj, run):
    """`stats` counted `hook check`'s runs (the install's self-test, whose hooks run with only
    PATH and HOME: the person's own identity) as hooks injected in "your sessions"; an agent's
    real session start still counts."""
    home = Path(os.environ["HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\temail = newcomer@example.com\n\tname = Newcomer\n", encoding="utf-8")
    me = {"MEMCLI_ACTOR": ""}  # the actor git's identity gives, as in the hooks hook check runs
    assert run("remember", "Deploys go out on Tuesdays.", cwd=proj, env=me).code == 0
    assert run("hook", "install", "claude", cwd=proj, env=me).code == 0
    check = run("hook", "check", "claude", cwd=proj, env=me)
    assert check.code == 0 and "characters of context" in check.out, check
    usage = run("--json", "stats", cwd=proj, env=me).json()["data"]["usage"]
    assert usage["injected"] == 0, usage
    start = run("hook", "claude", "session-start", cwd=proj, env=me,
                input=json.dumps({"session_id": "s-1", "source": "startup", "cwd": str(proj)}))
    assert start.code == 0 and "Tuesdays" in start.out, start
    assert run("--json", "stats", cwd=proj, env=me).json()["data"]["usage"]["injected"] >= 1


def test_a_settings_folder_the_disk_refuses_is_exit_15_and_writes_nothing(proj: Path, run) -> None:
    """Newcomer LOW (stop 34): installing into a read-only folder was exit 5 (a file memcli cannot
    merge) where the documented status of a refused write is 15."""
    from test_interrupted import _set_read_only

    (proj / ".claude").mkdir(exist_ok=True)
    try:
        if not _set_read_only(proj / ".claude", True):
            pytest.skip("cannot make a folder read-only here")
        out = run("hook", "install", "claude", cwd=proj)
    finally:
        _set_read_only(proj / ".claude", False)
    assert out.code == 15 and "cannot be written" in out.err and out.err.count("\n") == 1, out
    assert not (proj / ".claude" / "settings.json").exists()


def test_installing_at_a_second_level_warns_that_the_agent_runs_both(proj: Path, run) -> None:
    """Newcomer LOW (stop 34): Codex's project and --user hooks both ran, every block twice,
    and neither install said so."""
    assert run("hook", "install", "codex", cwd=proj).code == 0
    second = run("hook", "install", "codex", "--user", cwd=proj)
    assert second.code == 0 and "holds memcli's Codex hooks too" in second.err, second
    assert "memcli hook uninstall codex`" in second.err  # the project's file: no flag
    assert run("hook", "uninstall", "codex", cwd=proj).code == 0
    again = run("hook", "install", "codex", "--user", cwd=proj)
    assert again.code == 0 and "hooks too" not in again.err, again


def test_an_unknown_agent_after_hook_is_named_as_one(run) -> None:
    """Newcomer LOW (stop 34): `memcli hook cursor session-start` said "unknown command 'cursor'"."""
    out = run("hook", "cursor", "session-start")
    assert out.code == 2 and out.err.count("\n") == 1, out
    assert "unknown agent or subcommand 'cursor'" in out.err and "claude, codex, gemini" in out.err, out
