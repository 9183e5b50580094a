"""memcli's file lock (``memcli.store.oslock``): the ``flock`` that ``filelock`` takes on Unix,
without importing ``filelock`` (issue 21 point 4), so the two exclude each other."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import filelock
import pytest

from memcli.store.oslock import FileLock, Timeout


def test_it_and_filelock_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "index.lock"
    theirs = filelock.FileLock(str(path), timeout=0)
    with theirs:
        with pytest.raises(Timeout):
            FileLock(path, timeout=0.05).acquire(poll_interval=0.01)
    mine = FileLock(path, timeout=0).acquire()
    try:
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(path), timeout=0.05).acquire()
        with pytest.raises(Timeout):  # another descriptor, even in this process
            FileLock(path, timeout=0).acquire()
    finally:
        mine.release()
    with FileLock(path, timeout=0) as again:
        assert again.is_locked
    assert not again.is_locked
    again.release()  # releasing what is not held does nothing


def test_a_lock_holder_killed_lets_the_lock_go(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    code = ("import sys, time; from memcli.store.oslock import FileLock; FileLock(sys.argv[1], timeout=0).acquire(); "
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(Timeout):
            FileLock(path, timeout=0.05).acquire(poll_interval=0.01)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        lock = FileLock(path, timeout=10).acquire(poll_interval=0.01)
        lock.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_wait_gives_up_at_its_timeout_and_a_negative_one_waits_for_the_release(tmp_path: Path) -> None:
    path = tmp_path / "l.lock"
    held = FileLock(path, timeout=0).acquire()
    with pytest.raises(Timeout):
        FileLock(path, timeout=0.2).acquire(poll_interval=0.01)
    held.release()
    FileLock(path, timeout=-1).acquire().release()


def test_a_symbolic_link_as_lock_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("", encoding="utf-8")
    (tmp_path / "x.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        FileLock(tmp_path / "x.lock", timeout=0).acquire()


def test_neither_a_write_nor_a_read_imports_filelock(ws: Path) -> None:
    from test_imports import loaded_modules

    assert "filelock" not in loaded_modules("remember", "The queue drains every night")
    assert "filelock" not in loaded_modules("recall", "queue")
