"""Robustness (issue 10; CASES.md R1-R5): one bad file is one warning, unsafe git states are
refused, a killed writer is completed or rolled back, any batch size commits, no exit 1 for input.
Real git repositories and the real CLI in subprocesses.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import MEMCLI, git

PROJECT = Path("memories") / "project"

#: Files that each used to take every command down (exit 1, or a hang for the pipe).
BAD_FILES = {
    "far-future.md": "---\nexpireAt: 9999-12-31T23:59:59-05:00\n---\nFar future.\n",
    "far-past.md": "---\ncreatedAt: 0001-01-01T00:00:00+14:00\n---\nFar past.\n",
    "binary-review.md": "---\nreview: !!binary aGVsbG8=\n---\nBinary review.\n",
    "set-review.md": "---\nreview: !!set {a, b}\n---\nSet review.\n",
    "foo-merged.md": "---\nmerged: !foo bar\n---\nCustom tag in merged.\n",
    "foo-review.md": "---\nreview: {by: !foo x}\n---\nCustom tag inside review.\n",
    "deep.md": "---\nreview: " + "[" * 3000 + "]" * 3000 + "\n---\nDeep nesting.\n",
    "deep-map.md": "---\nreview:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 400)) + "---\nDeep map.\n",
}


def _good(ws: Path, run, count: int = 3) -> list[str]:
    ids = []
    for number in range(count):
        result = run("--json", "remember", f"Good memory number {number} about deployments.")
        assert result.code == 0, result
        ids.append(result.json()["data"]["id"])
    return ids


def _every_command_still_works(ws: Path, run, ids: list[str], bad: list[str]) -> None:
    listed = run("--json", "list", timeout=30)
    assert listed.code == 0, listed
    assert {m["id"] for m in listed.json()["data"]["memories"]} >= set(ids)
    assert "Traceback" not in listed.err
    recall = run("recall", "deployments", timeout=30)
    assert recall.code == 0 and ids[0] in recall.out, recall
    context = run("context", timeout=30)
    assert context.code == 0 and ids[0] in context.out, context
    hook = run("hook", "claude", "session-start", input='{"session_id": "s1", "source": "startup"}', timeout=30)
    assert hook.code == 0 and ids[0] in hook.out, hook
    json.loads(hook.out)
    doctor = run("--json", "doctor", timeout=30)
    assert doctor.code == 11, doctor
    named = {p["path"].rsplit("/", 1)[-1] for p in doctor.json()["data"]["problems"]}
    assert set(bad) <= named, (bad, named)
    stats = run("--json", "stats", timeout=30)
    assert stats.code == 0, stats
    written = run("remember", "A write still works beside the bad files.", timeout=30)
    assert written.code == 0, written


def test_r1_each_bad_file_is_one_warning_and_the_rest_is_served(ws, run):
    ids = _good(ws, run)
    for name, text in BAD_FILES.items():
        (ws / PROJECT / name).write_text(text, encoding="utf-8")
    _every_command_still_works(ws, run, ids, list(BAD_FILES))
    doctor = run("doctor")
    assert "far-future.md:2: expireAt" in doctor.out and "outside the calendar" in doctor.out, doctor.out
    assert "deep.md" in doctor.out and "internal error" not in doctor.err


def test_r2_pipes_folders_and_links_named_md_are_reported_never_opened(ws, run):
    ids = _good(ws, run)
    os.mkfifo(ws / PROJECT / "pipe.md")
    (ws / PROJECT / "notes.md").mkdir()
    (ws / PROJECT / "notes.md" / "inner.md").write_text("inside a folder named like a file\n", encoding="utf-8")
    _every_command_still_works(ws, run, ids, ["pipe.md", "notes.md"])
    doctor = run("doctor")
    assert "pipe.md: a named pipe (FIFO)" in doctor.out, doctor.out
    assert "notes.md: a folder named like a memory file" in doctor.out, doctor.out
    rebuilt = run("index", "rebuild", timeout=30)
    assert rebuilt.code == 0, rebuilt


def test_an_unreadable_file_and_folder_are_reported(ws, run):
    ids = _good(ws, run)
    locked = ws / PROJECT / "locked"
    locked.mkdir()
    (locked / "inside.md").write_text("a memory inside a locked folder\n", encoding="utf-8")
    secret = ws / PROJECT / "secret.md"
    secret.write_text("a memory nobody may read\n", encoding="utf-8")
    env = {}
    if os.geteuid() == 0:  # root reads a chmod 000 file: test the same path with an unreadable device
        os.mknod(secret.with_name("device.md"), 0o600 | 0o020000, os.makedev(1, 3))
        unreadable = ["device.md"]
    else:
        secret.chmod(0)
        locked.chmod(0)
        unreadable = ["secret.md", "locked"]
    try:
        doctor = run("--json", "doctor", env=env, timeout=30)
        assert doctor.code == 11, doctor
        named = {p["path"].rsplit("/", 1)[-1]: p["reason"] for p in doctor.json()["data"]["problems"]}
        assert set(unreadable) <= set(named), named
        listed = run("--json", "list", timeout=30)
        assert listed.code == 0 and {m["id"] for m in listed.json()["data"]["memories"]} >= set(ids)
    finally:
        locked.chmod(0o755)
        secret.chmod(0o644)


def test_unreadable_paths_are_reported_by_the_loader_itself(tmp_path):
    """The one place a file is loaded: a chmod 000 file or folder is a problem with the OS's reason."""
    from memcli.errors import InvalidMemoryFile
    from memcli.store.files import MemoryFiles

    files = MemoryFiles(tmp_path)
    folder = tmp_path / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "okay.md").write_text("fine\n", encoding="utf-8")
    os.mkfifo(folder / "pipe.md")
    scan = files.scan()
    assert [m.id for m in scan.memories] == ["okay"]
    assert [(p.path, p.reason.split(":")[0]) for p in scan.problems] == [("memories/project/pipe.md",
                                                                          "a named pipe (FIFO)")]
    with pytest.raises(InvalidMemoryFile, match="cannot read: No such file"):
        files.load(folder / "missing.md")


def test_a_huge_hand_written_body_is_served_in_part_with_a_warning(ws, run):
    from memcli.store.files import MAX_FILE_BYTES

    ids = _good(ws, run, 1)
    big = ws / PROJECT / "big.md"
    big.write_bytes(b"---\nid: bigone\n---\n" + "deploy 部署 ".encode() * (3 * MAX_FILE_BYTES // 10))
    listed = run("--json", "list", timeout=60)
    assert listed.code == 0, listed
    served = {m["id"]: m for m in listed.json()["data"]["memories"]}
    assert set(ids) <= set(served) and "bigone" in served
    assert len(served["bigone"]["text"].encode()) <= MAX_FILE_BYTES
    plain = run("list", timeout=60)
    assert "big.md: served in part" in plain.err and "skipped" not in plain.err, plain.err
    index = run("--json", "index", "status")
    assert index.json()["data"]["bytes"] < 20 * MAX_FILE_BYTES


def test_one_item_scalars_are_read_as_lists(ws, run):
    (ws / PROJECT).mkdir(parents=True, exist_ok=True)
    (ws / PROJECT / "hand.md").write_text(
        "---\nsupersededBy: 01abcdefgh\nsupersedes: oldone\ntags: tooling\npaths: web/**\nstatus: superseded\n---\n"
        "A hand-written memory with one link.\n", encoding="utf-8")
    shown = run("--json", "show", "hand")
    assert shown.code == 0, shown
    memory = shown.json()["data"]
    assert (memory["supersededBy"], memory["supersedes"], memory["tags"], memory["paths"]) == (
        ["01abcdefgh"], ["oldone"], ["tooling"], ["web/**"])


# --- point 2: unsafe git states ----------------------------------------------------------


def _state_refused(ws: Path, run, what: str) -> None:
    before = git(ws, "rev-parse", "HEAD")
    files = sorted(p.name for p in (ws / "memories").rglob("*.md"))
    result = run("--json", "remember", f"A memory written during {what}.")
    assert result.code == 14, (what, result)
    error = result.json()["error"]
    assert error["code"] == "unsafe_git_state" and "nothing was written" in error["message"], error
    assert sorted(p.name for p in (ws / "memories").rglob("*.md")) == files
    plain = run("remember", f"A memory written during {what}.")
    assert plain.code == 14 and len(plain.err.strip().splitlines()) == 1 and "Traceback" not in plain.err
    assert git(ws, "rev-parse", "HEAD") == before


def test_r3_detached_head_and_every_operation_in_progress_are_refused(ws, run):
    _good(ws, run, 1)
    git(ws, "checkout", "-q", "--detach")
    _state_refused(ws, run, "a detached HEAD")
    git(ws, "checkout", "-q", "main")
    git_dir = ws / ".git"
    for marker, what in (("rebase-merge", "a rebase"), ("rebase-apply", "a rebase or `git am`"),
                         ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"),
                         ("BISECT_LOG", "a bisect"), ("MERGE_HEAD", "a merge")):
        path = git_dir / marker
        if marker.startswith("rebase"):
            path.mkdir()
        else:
            path.write_text(git(ws, "rev-parse", "HEAD"), encoding="utf-8")
        _state_refused(ws, run, what)
        result = run("remember", "x during the state")
        assert what in result.err, (what, result.err)
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
    assert run("remember", "Written once git is back to normal.").code == 0


def test_r3_a_real_rebase_stopped_on_a_conflict_is_refused(ws, run):
    (ws / "code.txt").write_text("base\n", encoding="utf-8")
    git(ws, "add", "code.txt")
    git(ws, "commit", "-q", "-m", "base")
    git(ws, "checkout", "-q", "-b", "side")
    (ws / "code.txt").write_text("side\n", encoding="utf-8")
    git(ws, "commit", "-q", "-am", "side")
    git(ws, "checkout", "-q", "main")
    (ws / "code.txt").write_text("main\n", encoding="utf-8")
    git(ws, "commit", "-q", "-am", "main")
    stopped = subprocess.run(["git", "-C", str(ws), "rebase", "side"], capture_output=True, text=True)
    assert stopped.returncode != 0 and (ws / ".git" / "rebase-merge").exists()
    result = run("remember", "Must not vanish at rebase --abort.")
    assert result.code == 14 and "rebase" in result.err, result
    git(ws, "rebase", "--abort")
    assert "Must not vanish" not in "".join(p.read_text() for p in (ws / "memories").rglob("*.md"))


def test_a_linked_worktree_finds_its_own_state(project, run, tmp_path):
    result = run("init", str(project))
    assert result.code == 0, result
    other = tmp_path / "other"
    git(project, "worktree", "add", "-q", str(other))
    assert run("remember", "Written in the main worktree.", cwd=project).code == 0


# --- point 3: crash safety -----------------------------------------------------------------


def test_r4_a_killed_writer_is_rolled_back_by_the_next_command_and_says_so(ws, run):
    """The state a writer killed after writing its files and taking index.lock leaves behind."""
    _good(ws, run, 1)
    dead = subprocess.Popen(["true"])
    dead.wait()
    half = ws / PROJECT / "2026-12" / "01halfwrittenmemoryxxxxxxx-half.md"
    half.parent.mkdir(parents=True, exist_ok=True)
    half.write_text("---\nid: 01halfwrittenmemoryxxxxxxx\n---\nHalf written.\n", encoding="utf-8")
    (ws / ".git" / "index.lock").write_bytes(f"memcli {dead.pid}\n".encode())
    record = {"pid": dead.pid, "op": "remember", "at": "2026-12-01T20:00:00+00:00", "new": None, "checksum": None,
              "files": {half.relative_to(ws).as_posix(): None}}
    (ws / ".cache" / "unfinished-write.json").write_text(json.dumps(record), encoding="utf-8")
    head = git(ws, "rev-parse", "HEAD")

    doctor = run("doctor")
    assert "rolled back an unfinished remember" in doctor.out, doctor
    assert not half.exists() and not (ws / ".git" / "index.lock").exists()
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "status", "--porcelain") == ""
    assert run("remember", "The next write works.").code == 0


def test_r4_a_write_never_stages_in_the_users_index_and_keeps_their_staging(ws, run):
    (ws / "mine.txt").write_text("staged by the person\n", encoding="utf-8")
    git(ws, "add", "mine.txt")
    result = run("--json", "remember", "Committed without touching the person's staging.")
    assert result.code == 0, result
    assert git(ws, "diff", "--cached", "--name-only").split() == ["mine.txt"]
    assert "mine.txt" not in git(ws, "show", "--name-only", "--format=", "HEAD")
    assert git(ws, "status", "--porcelain", "--", "memories") == ""
    message = git(ws, "log", "-1", "--format=%B")
    assert "Memcli-Op: remember" in message


def test_g3_a_stale_index_lock_is_reported_with_its_age_and_doctor_fix_clears_it(ws, run):
    _good(ws, run, 1)
    lock = ws / ".git" / "index.lock"
    lock.write_bytes(b"")
    old = os.stat(lock).st_mtime - 3600
    os.utime(lock, (old, old))
    refused = run("remember", "Blocked by a stale lock.")
    assert refused.code == 9 and "60 minutes old" in refused.err and "doctor --fix" in refused.err, refused
    report = run("doctor")
    assert "index.lock is 3600 s old" in report.out or "index.lock is 360" in report.out, report
    assert lock.exists()
    fixed = run("doctor", "--fix")
    assert "removed git's" in fixed.out and not lock.exists(), fixed
    assert run("remember", "Works after doctor --fix.").code == 0


# --- point 4: batch sizes ------------------------------------------------------------------


@pytest.mark.slow
def test_r5_compact_apply_over_thousands_of_expired_memories_makes_one_commit(ws, run):
    folder = ws / PROJECT / "2025-01"
    folder.mkdir(parents=True)
    count = 1500  # 10,000 shown by a command in the report; 1,500 already passes the old 128 KiB message limit
    for number in range(count):
        (folder / f"m{number:05d}.md").write_text(
            f"---\nid: m{number:05d}\nscope: project\ncreatedAt: 2025-01-01T00:00:00Z\n"
            f"expireAt: 2025-06-01T00:00:00Z\n---\nExpired memory {number} with a long enough text to list.\n",
            encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "seed")
    before = int(git(ws, "rev-list", "--count", "HEAD"))
    result = run("compact", "--apply", timeout=600)
    assert result.code == 0, result
    assert int(git(ws, "rev-list", "--count", "HEAD")) == before + 1
    assert len(git(ws, "show", "--name-only", "--format=", "HEAD").split()) == count
    assert git(ws, "status", "--porcelain") == ""


# --- point 7: no exit 1 for input ----------------------------------------------------------


@pytest.mark.parametrize("stdin", ["[" * 200_000, "{\"a\":" * 200_000, "[" * 200_000 + "]" * 200_000,
                                   '{"prompt": "x", "n": ' + "9" * 5_000 + "}"])  # past Python's int digit limit
@pytest.mark.slow
def test_hook_stdin_nested_too_deeply_or_past_limits_exits_0_with_valid_output(ws, run, stdin):
    _good(ws, run, 1)
    for event in ("session-start", "user-prompt-submit", "pre-tool-use"):
        result = run("hook", "claude", event, input=stdin, timeout=60)
        assert result.code == 0 and "Traceback" not in result.err, result
        if result.out.strip():
            json.loads(result.out)


@pytest.mark.parametrize("args", [
    ("recall", "--grep", "(?R)"), ("list", "--created-after", "0001-01-01T00:00:00+14:00"),
    ("list", "--created-before", "9999-12-31T23:59:59-05:00"), ("list", "--created-after", "9999-12-31"),
    ("recall", "x", "--created-before", "0001-01-01"),
])
def test_edge_inputs_end_in_a_documented_status_not_exit_1(ws, run, args):
    result = run(*args, timeout=60)
    assert result.code in (0, 2, 5), result
    assert "internal error" not in result.err and "Traceback" not in result.err


@pytest.mark.parametrize("now", ["9999-12-31T23:00:00Z", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+14:00"])
def test_a_clock_near_the_ends_of_the_calendar_is_a_clear_error(ws, run, now):
    for args in (("remember", "At the end of time."), ("remember", "x", "--ttl", "30d"), ("list",), ("context",)):
        result = run(*args, env={"MEMCLI_NOW": now}, timeout=60)
        assert result.code in (0, 5), (args, result)
        assert "internal error" not in result.err, (args, result)


def test_a_disk_that_refuses_the_write_is_exit_15_and_writes_nothing(ws, run):
    _good(ws, run, 1)
    head = git(ws, "rev-parse", "HEAD")

    def small_files() -> None:  # a write past 3 KB fails with EFBIG, as a full disk fails with ENOSPC
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    proc = subprocess.run([*MEMCLI, "remember", "y" * 5000], preexec_fn=small_files, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 15, proc
    assert proc.stderr.count("\n") == 1 and "nothing was written" in proc.stderr
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "status", "--porcelain") == ""


def test_the_unfinished_write_record_is_base64_of_the_old_bytes(ws, run):
    """The journal keeps every byte of a file it may restore (CRLF, BOM, non-UTF-8 included)."""
    data = b"\xef\xbb\xbf---\r\nid: x\r\n---\r\nbody\xff\r\n"
    assert base64.b64decode(base64.b64encode(data).decode("ascii")) == data


def test_a_committed_archive_link_is_never_written_through(shared_tree_ws, ws, run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    archive = ws / "archive"
    for child in archive.iterdir():
        child.unlink()
    archive.rmdir()
    archive.symlink_to(elsewhere)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "remember: use pnpm"},
                                      "uuid": "u1", "sessionId": "s1"}) + "\n", encoding="utf-8")
    result = run("compact", "--transcript", str(transcript), "--apply", timeout=60)
    assert result.code in (3, 5), result
    assert "symbolic link" in result.err and "Traceback" not in result.err
    assert list(elsewhere.iterdir()) == []


def test_a_linked_scope_folder_is_never_written_through(ws, run, tmp_path):
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    (ws / "memories" / "project").mkdir(parents=True, exist_ok=True)
    (ws / "memories" / "channel").symlink_to(elsewhere)
    result = run("remember", "A channel memory.", "--scope", "channel:team")
    assert result.code == 5 and ("symbolic link" in result.err or "outside memories" in result.err), result
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("args, code, said", [
    (("list", "--created-after", ""), 5, "'' is not a date"),
    (("remember", "x", "--ttl", "99999999999y"), 5, "past 9999-12-31T23:59:59Z"),
    (("remember", "x", "--expire-at", "9999-12-31T23:59:59-12:00"), 5, "outside the calendar in UTC"),
    (("import", "/dev/zero"), 2, "is not a regular file or folder"),
    (("check", "nosuch..HEAD"), 12, "no such revision: nosuch"),
])
def test_odd_inputs_get_a_line_that_says_what_is_wrong(ws, run, args, code, said):
    result = run(*args, timeout=60)
    assert result.code == code and said in result.err and result.err.count("\n") == 1, result


def test_an_unknown_configuration_key_is_one_warning_not_silence(ws, run):
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("prompt_floor =", "prompt_flor =")
                      + "\n[hookz]\ndeadline = 3\n", encoding="utf-8")
    result = run("list")
    assert result.code == 0, result
    assert "unknown [hooks] prompt_flor, [hookz] (ignored" in result.err, result
    assert result.err.count("\n") == 1
