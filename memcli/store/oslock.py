"""An exclusive file lock held by the operating system: ``flock(2)`` on Unix.

memcli's locks (the workspace's ``write.lock``, the index's build lock ``index.lock``) are
taken by hooks and writes on every run. The ``filelock`` package takes the same lock on Unix
(``UnixFileLock``: ``fcntl.flock(fd, LOCK_EX | LOCK_NB)`` polled until a timeout), but
importing it loads about a hundred modules (``logging``, ``dataclasses``, ``inspect``,
``decimal``, ``asyncio`` helpers: 50 ms on an idle machine, 0.1-0.4 s under load, most of a
hook's CPU on a large store; issue 21 point 4). This module takes that very lock with
``fcntl`` alone, so the two interoperate: a ``filelock.FileLock`` on the same path (a
test, an older memcli) and this one exclude each other. The lock is released when the
descriptor is closed, also when the process dies. Where ``fcntl`` is missing (Windows),
``filelock`` is used.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


class Timeout(TimeoutError):
    """The lock was held by another process for the whole wait."""


class FileLock:
    """An exclusive lock on ``path`` (created 0644 if missing; symbolic links refused).

    Args:
        path: the lock file.
        timeout: seconds to wait in :meth:`acquire` (negative: for ever; 0: one try).

    Not reentrant: one :meth:`acquire` per :meth:`release`.
    """

    def __init__(self, path: str | Path, timeout: float = -1) -> None:
        self.path = str(path)
        self.timeout = timeout
        self._fd: int | None = None
        self._other: Any = None  # a filelock.FileLock where fcntl is missing

    @property
    def is_locked(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None or (self._other is not None and self._other.is_locked)

    def acquire(self, poll_interval: float = 0.05) -> FileLock:
        """Take the lock, trying every ``poll_interval`` seconds until ``timeout``.

        Raises:
            Timeout: another process held it for the whole wait.
            OSError: the lock file cannot be opened or created.
        """
        try:
            import fcntl
        except ImportError:  # not Unix
            return self._acquire_elsewhere(poll_interval)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if self.timeout >= 0 and time.monotonic() >= deadline:
                        raise Timeout(f"{self.path} is held by another process") from None
                    time.sleep(poll_interval)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Let the lock go (closing its descriptor). Nothing when it is not held."""
        if self._other is not None:
            self._other.release()
            self._other = None
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor of this open file releases the flock

    def _acquire_elsewhere(self, poll_interval: float) -> FileLock:
        import filelock

        other = self._other = filelock.FileLock(self.path, timeout=self.timeout)
        try:
            other.acquire(poll_interval=poll_interval)
        except filelock.Timeout:
            self._other = None
            raise Timeout(f"{self.path} is held by another process") from None
        return self

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
