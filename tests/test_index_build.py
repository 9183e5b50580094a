"""Index builds never hold a session up (issue 9 point 2, issue 10 point 8).

A killed build keeps its committed batches and the next start goes on from there; a hook
with a short deadline answers from what is indexed and leaves the rest to one background
build; a held build lock makes readers serve the index as it is instead of waiting; a
``.cache`` that is a symbolic link is refused. Real workspaces and processes; no timed
assertions (subprocess timeouts are hang guards only).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MEMCLI
from test_index import dump

HOOK_INPUT = json.dumps({"session_id": "s-build", "hook_event_name": "SessionStart", "source": "startup"})


def write_memories(ws: Path, count: int) -> None:
    """``count`` hand-written memory files (front-matter with an id), as a clone would bring."""
    folder = ws / "memories" / "project" / "2026-11"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"m{i:06d}.md").write_text(
            f"---\nid: m{i:06d}\nscope: project\ncategory: fact\ncreatedAt: 2026-11-02T09:14:05Z\n---\n"
            f"Memory number {i} about the quokka ledger {i % 7}.\n", encoding="utf-8")


def set_deadline(ws: Path, seconds: float) -> None:
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8").replace("deadline = 2.0", f"deadline = {seconds}")
    assert f"deadline = {seconds}" in text
    config.write_text(text, encoding="utf-8")


def indexed(ws: Path) -> int:
    """Rows committed in the index (0 while it does not exist yet)."""
    try:
        db = sqlite3.connect(f"file:{ws / '.cache' / 'index.sqlite3'}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM docs").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def session_start(ws: Path, run) -> dict:
    result = run("hook", "claude", "session-start", input=HOOK_INPUT, timeout=120)
    assert result.code == 0 and "Traceback" not in result.err, result
    return json.loads(result.out)


def assert_equals_rebuild(ws: Path, tmp_path: Path, run) -> None:
    incremental = dump(ws)
    copy = tmp_path / "rebuilt"
    shutil.copytree(ws, copy, symlinks=True)
    shutil.rmtree(copy / ".cache")
    assert run("index", "rebuild", env={"MEMCLI_WORKSPACE": str(copy)}).code == 0
    fresh = dump(copy)
    for key in ("docs", "fts", "vocab", "found"):
        assert incremental[key] == fresh[key], key


@pytest.mark.slow
def test_a_killed_build_keeps_its_batches_and_the_next_start_resumes(ws, run, tmp_path):
    total = 800
    write_memories(ws, total)
    kept = 0
    for _attempt in range(5):  # kill it half-way; on a machine fast enough to finish first, try again
        shutil.rmtree(ws / ".cache", ignore_errors=True)
        proc = subprocess.Popen([*MEMCLI, "index", "build"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while proc.poll() is None and not 0 < indexed(ws) < total:
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
        kept = indexed(ws)
        if 0 < kept < total:
            break
    assert 0 < kept < total, "could not stop a build half-way"
    assert not (ws / ".cache" / "index.sqlite3.snapshot").exists()  # an incomplete build saves no snapshot
    set_deadline(ws, 60)
    answer = session_start(ws, run)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    status = run("--json", "index", "status").json()["data"]
    assert status["complete"] and status["memories"] == total
    assert status["last_change"]["files"] == total - kept  # only what the killed build had not committed
    assert_equals_rebuild(ws, tmp_path, run)


@pytest.mark.slow
def test_a_hook_past_its_deadline_answers_and_leaves_the_rest_to_one_background_build(ws, run, tmp_path):
    total = 800
    write_memories(ws, total)
    set_deadline(ws, 0.1)
    result = run("hook", "claude", "session-start", input=HOOK_INPUT, timeout=120)
    assert result.code == 0, result
    assert json.loads(result.out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    # the deadline came during the file walk or the reading of the files (the sync stops and
    # says so), or before the sync could start (the watchdog answers and starts the build)
    assert ("search index" in result.err and "finishing in the background" in result.err
            or "no memories within the [hooks] deadline" in result.err), result
    log = ws / ".cache" / "index-build.log"
    for _ in range(1200):  # hang guard: 120 s
        if f"{total} memories" in (log.read_text(encoding="utf-8") if log.exists() else ""):
            break
        time.sleep(0.1)
    assert f"{total} memories" in log.read_text(encoding="utf-8")
    from memcli.index.db import RACY_NS

    time.sleep(RACY_NS / 1e9 + 0.2)  # files written this recently are hashed again by every sync (racy mtime)
    status = run("--json", "index", "status").json()["data"]
    assert status["complete"] and status["memories"] == total and status["last_sync"]["added"] == 0
    again = run("hook", "claude", "session-start", input=HOOK_INPUT, timeout=120)
    assert again.code == 0 and "finishing in the background" not in again.err, again
    assert_equals_rebuild(ws, tmp_path, run)


@pytest.mark.slow
def test_concurrent_cold_starts_all_answer_and_leave_one_complete_index(ws, run, tmp_path):
    write_memories(ws, 300)
    set_deadline(ws, 60)
    env = {**os.environ, "MEMCLI_WORKSPACE": str(ws)}
    procs = [subprocess.Popen([*MEMCLI, "hook", "claude", "session-start"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    for proc in procs:
        out, err = proc.communicate(HOOK_INPUT, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in err, err
        assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert_equals_rebuild(ws, tmp_path, run)


@pytest.mark.slow
def test_a_held_build_lock_never_holds_a_read_up(ws, run):
    from filelock import FileLock

    write_memories(ws, 20)
    assert run("index", "status").code == 0
    (ws / "memories" / "project" / "2026-11" / "m000003.md").write_text(
        "---\nid: m000003\nscope: project\n---\nNow about wombats.\n", encoding="utf-8")
    lock = FileLock(str(ws / ".cache" / "index.lock"))
    with lock:
        recall = run("recall", "quokka", timeout=60)  # hang guard only
        assert recall.code == 0 and "being updated by another memcli process" in recall.err, recall
        context = run("context", timeout=60)
        assert context.code == 0 and "quokka" in context.out, context
        hook = run("hook", "claude", "session-start", input=HOOK_INPUT, timeout=60)
        assert hook.code == 0 and "quokka" in json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert "wombats" in run("recall", "wombats").out  # the lock released, the next read syncs


def test_a_cache_folder_that_is_a_link_is_refused(ws, run, tmp_path):
    assert run("remember", "Use pnpm for every package").code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(ws / ".cache")
    (ws / ".cache").symlink_to(elsewhere)
    recall = run("recall", "pnpm")
    assert recall.code == 0 and "pnpm" in recall.out
    assert "is a symbolic link" in recall.err and "searching the files directly" in recall.err
    hook = run("hook", "claude", "session-start", input=HOOK_INPUT)
    assert hook.code == 0 and "pnpm" in json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    written = run("remember", "Another fact to keep")
    assert written.code == 3 and written.err.count("\n") == 1 and "is a symbolic link" in written.err, written
    assert list(elsewhere.iterdir()) == []
    assert "Another fact" not in run("--json", "list").out
    # a real .cache that holds a link to somewhere else is refused the same way
    (ws / ".cache").unlink()
    (ws / ".cache").mkdir()
    (ws / ".cache" / "write.lock").symlink_to(elsewhere / "victim")
    refused = run("remember", "Another fact to keep")
    assert refused.code == 3 and "holds a symbolic link (write.lock)" in refused.err, refused
    assert list(elsewhere.iterdir()) == []


def test_a_bad_hooks_deadline_is_one_line_exit_3(ws, run):
    set_deadline(ws, 0.01)
    result = run("recall", "x")
    assert result.code == 3 and "[hooks] deadline must be from 0.1 to 60 seconds" in result.err, result
    assert result.err.count("\n") == 1


def test_the_watchdog_keeps_the_deadline_of_every_read_hook_and_starts_the_build(ws, run):
    """[hooks] deadline = 0.1 s: less than the interpreter's start-up, so the work can never
    finish in time and the watchdog (memcli.cli.watchdog) must answer, for each read hook."""
    write_memories(ws, 50)
    set_deadline(ws, 0.1)
    payloads = {
        "session-start": HOOK_INPUT,
        "user-prompt-submit": json.dumps({"session_id": "s-build", "hook_event_name": "UserPromptSubmit",
                                          "prompt": "what is the quokka ledger?"}),
        "pre-tool-use": json.dumps({"session_id": "s-build", "hook_event_name": "PreToolUse", "tool_name": "Read",
                                    "tool_input": {"file_path": str(ws / "memcli.toml")}}),
    }
    for event, payload in payloads.items():
        result = run("hook", "claude", event, input=payload, timeout=120)
        assert result.code == 0 and "Traceback" not in result.err, (event, result)
        assert "no memories within the [hooks] deadline of 0.1 s" in result.err, (event, result)
        answer = json.loads(result.out) if result.out.strip() else {}
        context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        if event == "session-start":
            assert "could not gather this project's memories within the hook's deadline" in context
            assert "memcli recall WORDS" in context
        else:
            assert "quokka" not in context, (event, answer)
    log = ws / ".cache" / "index-build.log"
    for _ in range(1200):  # hang guard: 120 s; the watchdog started the build before it answered
        if "50 memories" in (log.read_text(encoding="utf-8") if log.exists() else ""):
            break
        time.sleep(0.1)
    assert "50 memories" in log.read_text(encoding="utf-8")
    set_deadline_from(ws, 0.1, 60)
    result = run("hook", "claude", "session-start", input=HOOK_INPUT, timeout=120)
    assert result.code == 0 and "deadline" not in result.err, result
    assert "quokka ledger" in json.loads(result.out)["hookSpecificOutput"]["additionalContext"]


def set_deadline_from(ws: Path, old: float, new: float) -> None:
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(f"deadline = {old}", f"deadline = {new}"),
                      encoding="utf-8")


def test_a_build_read_by_worker_processes_writes_the_index_one_process_writes(ws, run, tmp_path):
    # memcli.index.parallel: with enough changed files, workers read and parse while one process
    # writes; the rows and every token of the FTS5 table are those of a build in one process
    write_memories(ws, 450)
    folder = ws / "memories" / "project" / "2026-11"
    (folder / "m000007.md").write_text("---\nid: m000003\nscope: project\ncategory: fact\n---\nSame id as another.\n",
                                       encoding="utf-8")  # an id held twice: the smaller path wins either way
    (folder / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    dumps = []
    for workers in ("0", "2"):
        assert run("index", "rebuild", env={"MEMCLI_TEST_INDEX_WORKERS": workers}).code == 0
        dumps.append(dump(ws))
    assert dumps[0]["orphans"] == dumps[1]["orphans"] == (0,)
    for key in ("docs", "fts", "vocab", "found"):
        assert dumps[0][key] == dumps[1][key], key
    assert any(row[0].endswith("broken.md") and row[-2] for row in dumps[1]["docs"])  # a problem row
    assert len(dumps[1]["fts"]) > 450 * 5


def test_the_rebuild_progress_bar_runs_no_thread_so_the_build_may_fork_its_workers(monkeypatch) -> None:
    # index/parallel.py forks workers only from a process that runs no other thread: rich's
    # refresh thread made a rebuild in a terminal read every file in one process
    import threading

    from memcli.cli.index_cmds import progress_bar
    from memcli.index import parallel

    monkeypatch.delenv(parallel.WORKERS_VARIABLE, raising=False)
    cpus = len(os.sched_getaffinity(0))
    assert threading.active_count() == 1
    with progress_bar() as task:
        update = task("indexing")
        for done in range(1, 4):
            update(done, 3)
        assert threading.active_count() == 1
        assert parallel.workers(parallel.MIN_FILES) == (cpus if cpus > 1 else 0)


def test_a_rebuild_in_a_terminal_shows_its_bar_and_builds_the_index(ws, run) -> None:
    import pty

    write_memories(ws, 30)
    main, other = pty.openpty()
    try:
        proc = subprocess.run([*MEMCLI, "index", "rebuild"], stdin=other, stdout=other, stderr=other, timeout=120)
    finally:
        os.close(other)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the terminal's other side is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, shown
    assert "Traceback" not in shown and "30 memories" in shown, shown
