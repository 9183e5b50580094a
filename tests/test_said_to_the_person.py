"""What the person must know reaches them (issue 19 item 8): a prompt or tool hook that cannot
answer within its deadline puts a short note in the agent's context once per session, and
`init` in a clone that holds the team's memory branch says which branch it took."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import git, run_memcli

PROMPT = {"session_id": "s-late", "hook_event_name": "UserPromptSubmit", "prompt": "what is the quokka ledger?"}


def test_a_late_prompt_hook_notes_it_once_per_session(ws):
    """In process: the answer the watchdog would give, as `run_hook` hands it over at open."""
    from memcli.service.hooks import LATE_PROMPT_NOTE, run_hook

    def late(event: str, payload: dict) -> tuple[str | None, object]:
        handed = []
        run_hook("claude", event, json.dumps(payload), str(ws), None, lambda *args: handed.append(args))
        # handed at open; a pre-tool hook hands over again while guards are matched, then the answer of open
        deadline, before_exit, answer = handed[-1]
        assert handed[0][2] == answer and all(d == 2.0 for d, _, _ in handed)
        return answer, before_exit

    answer, before_exit = late("user-prompt-submit", PROMPT)
    context = json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert context == LATE_PROMPT_NOTE and "once per session" in context and "memcli recall" in context
    before_exit()  # the watchdog answered: the note is given
    answer, _ = late("user-prompt-submit", PROMPT)
    assert json.loads(answer)["hookSpecificOutput"]["additionalContext"] == ""  # not twice in one session
    tool = {"session_id": "s-late", "hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": str(ws / "memcli.toml")}}
    assert late("pre-tool-use", tool)[0] == ""
    other = late("user-prompt-submit", {**PROMPT, "session_id": "s-other"})[0]
    assert "once per session" in json.loads(other)["hookSpecificOutput"]["additionalContext"]
    run_hook("claude", "session-end", json.dumps({"session_id": "s-late", "hook_event_name": "SessionEnd"}),
             str(ws), None)
    assert "once per session" in late("user-prompt-submit", PROMPT)[0]  # its mark went with the session
    handed = []
    run_hook("codex", "user-prompt-submit", json.dumps({**PROMPT, "session_id": "s-codex"}), str(ws), None,
             lambda *args: handed.append(args))
    assert handed[0][2] == LATE_PROMPT_NOTE  # Codex takes plain text


def test_the_watchdog_answers_what_it_was_last_handed():
    """A real process: the answer handed over at open is the one written when the deadline comes."""
    script = ("import time\nfrom memcli.cli.watchdog import Watchdog\n"
              "dog = Watchdog('early', time.monotonic(), 5.0)\n"
              "dog.move(0.3, None, 'late-note')\ntime.sleep(30)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout == "late-note", proc
    assert "no memories within the [hooks] deadline of 0.3 s" in proc.stderr


def test_a_hook_whose_stdin_never_ends_is_told_so(ws):
    """Newcomer LOW (stop 34): a prompt hook given its JSON on a stdin left open answered at the
    deadline blaming a busy machine or the index; it now says the input never ended."""
    import os

    from test_index_build import set_deadline

    set_deadline(ws, 0.5)
    payload = json.dumps({**PROMPT, "cwd": str(ws)})
    env = {**os.environ, "MEMCLI_WORKSPACE": str(ws)}
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "hook", "claude", "user-prompt-submit"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None
    proc.stdin.write(payload)
    proc.stdin.flush()  # and never closed
    try:
        proc.wait(timeout=60)  # not communicate(): it would close stdin
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.returncode == 0 and json.loads(out)["hookSpecificOutput"]["additionalContext"] == "", (out, err)
    assert "its input on stdin never ended" in err and "machine is busy" not in err, err


def test_init_in_a_clone_says_which_memory_branch_it_took(project, tmp_path):
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("remember", "The staging database is called ledger_stage.", cwd=project).code == 0
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "origin", "--all")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    result = run_memcli("init", cwd=clone)
    assert result.code == 0, result
    assert "memory branch memcli/memory" in result.out and "origin/memcli/memory" in result.out, result
    assert "1 memor" in result.out, result
    assert "ledger_stage" in run_memcli("context", cwd=clone).out
