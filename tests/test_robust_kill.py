"""Crash safety (SPEC.md section 8, CASES.md R4): writers killed at random instants with SIGKILL.

Each writer runs in its own process group and the whole group is killed, git children
included, so a kill can land anywhere: before the journal, while files are written,
inside a git plumbing command, between moving the branch and renaming the index.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MEMCLI, git, personal_store

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

KILLS = 50


def _memcli_staged(ws: Path) -> list[str]:
    """Paths under memories/ whose index entry differs from HEAD (what a `git commit` would carry)."""
    return [p for p in git(ws, "diff", "--cached", "--name-only").splitlines() if p.startswith("memories/")]


def _store(kind: str, ws: Path, project: Path, run) -> Path:
    """The store the writers write to: ``ws`` itself (a folder of its own repository), the memory
    branch's worktree of ``project``, or the person's own store of ``ws`` (made by a first write)."""
    if kind == "in-tree":
        return ws
    if kind == "branch":
        made = run("init", cwd=project)
        assert made.code == 0, made
        return project / ".memcli"
    first = run("remember", "My own note, which makes my personal store.", "--scope", "user:alice")
    assert first.code == 0, first
    return personal_store(ws)


@pytest.mark.parametrize("kind", ["in-tree", "branch", "personal"])
def test_fifty_writers_killed_at_random_instants_leave_a_consistent_workspace(kind, ws, project, run):
    store = _store(kind, ws, project, run)
    if kind == "branch":  # the memory branch's worktree keeps git's index split (memcli.git.commit)
        assert (store / ".git").is_file()
    where = ["-w", str(store)]
    git_dir = Path(git(store, "rev-parse", "--absolute-git-dir").strip())
    index_lock = Path(git(store, "rev-parse", "--path-format=absolute", "--git-path", "index.lock").strip())
    user_file = store / "notes.txt"
    user_file.write_text("the person's own staged work\n", encoding="utf-8")
    git(store, "add", "notes.txt")
    first = run(*where, "remember", "A memory written before the kills, superseded by some of them.",
                "--subject", "kill")
    assert first.code == 0, first

    started = time.monotonic()
    timed = subprocess.run([*MEMCLI, *where, "remember", "A timing run for the kill instants."], capture_output=True)
    assert timed.returncode == 0, timed
    span = max(0.3, (time.monotonic() - started) * 1.3)

    rng = random.Random(20261201)
    windows = 0
    for number in range(KILLS):
        args = [*MEMCLI, *where, "remember", f"Killed writer number {number} says hello."]
        if number % 3 == 0:
            args += ["--subject", "kill"]  # a rewrite of another file too (supersede)
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0, span))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)
        staged = _memcli_staged(store)
        if staged:  # only between moving the branch and renaming the index: index.lock then blocks git commit
            assert index_lock.exists(), (number, staged)
            windows += 1
    print(f"{KILLS} writers killed; {windows} kills landed between update-ref and the index rename")

    doctor = run(*where, "doctor", timeout=120)
    assert doctor.code in (0, 11), doctor
    assert "Traceback" not in doctor.err
    assert _memcli_staged(store) == [], "nothing of memcli's is staged after recovery"
    assert not index_lock.exists()
    assert git(store, "diff", "--cached", "--name-only").split() == ["notes.txt"], "the person's staging is kept"
    fsck = subprocess.run(["git", "-C", str(store), "fsck", "--no-progress"], capture_output=True, text=True)
    assert fsck.returncode == 0 and "error" not in fsck.stderr.lower(), fsck.stderr
    assert not list(git_dir.glob("memcli-index.*")), "temporary indexes are cleaned up"
    assert not list((store / "memories").rglob(".*.tmp")), "no half-written file is left"
    assert not (store / ".cache" / "unfinished-write.json").exists()

    listed = run(*where, "--json", "list", "--status", "active")
    assert listed.code == 0 and "skipped" not in listed.err, listed
    # every memory file on disk is committed: nothing half-done is left in the working tree
    assert git(store, "status", "--porcelain", "--untracked-files=all", "--", "memories") == ""

    after = run(*where, "--json", "remember", "The write after the kills succeeds.")
    assert after.code == 0, after
    assert after.json()["data"]["commit"]
    assert git(store, "status", "--porcelain", "--", "memories") == ""
    assert git(store, "diff", "--cached", "--name-only").split() == ["notes.txt"]
    if kind != "in-tree":  # only memcli stages there: its commits keep git's index split
        assert list(git_dir.glob("sharedindex.*"))
