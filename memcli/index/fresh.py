"""Freshness without a walk of every file on the hot path (issue 21 point 1; docs/search.md, "Freshness").

A full walk (``db.walk``: one ``stat`` per memory file) grows with the store; a read
instead asks the store's **watcher** whether anything changed, and without one checks
what a hand change must move, leaving the full walk to after its answer:

- the **watcher** (``index.watcher``): a long-lived process per store holding an inotify
  watch on every folder under ``memories/``, reached over a Unix socket only its owner can
  open (``index.sockets``). Asked by a read (:func:`watched`, within ``ASK_BUDGET``), it
  takes in the files the kernel reported changed since the last question, records a
  complete walk as of that moment, and answers ``clean``: the read needs nothing else. It
  is started by the walk a read owes (below), exits after ``watcher.IDLE`` seconds without
  a question, and is never required: no answer in time means the path below;
- the **folder state** (``index.sqlite3.folders``, a small marshal file beside the index):
  the ``(mtime_ns, inode)`` of every folder under ``memories/`` as the last full walk or
  check saw it, the files still *racy* (hashed within ``db.RACY_NS`` of their last change,
  so a same-size rewrite in the same clock tick would not show in their ``stat``), and
  ``walked_ns``: the wall-clock instant (``time.time_ns()``) the last complete full walk
  *began* (or the watcher's last answer, which stands for one);
- the **read marker** (``index.read`` in the cache folder): its modification time is the
  start instant of the latest read that has answered (written with :func:`finish_read`).

Without a watcher's answer, a read (``IndexDB.quick_sync``) stats the folders of the state
(one per scope and month: about 120 at 100,000 memories) and the racy files, lists only the folders whose mtime
moved (a file added, deleted or renamed moves its folder's mtime), and indexes what
changed there. An edit in place moves no folder: it is found by the full walk, which such
a read starts after its answer (:func:`spawn_walk`: one detached ``python -m
memcli.index.watcher`` holding the build lock, so any number of concurrent reads start
one; it walks, then stays as the watcher). A read that finds the marker newer than
``walked_ns`` (a read answered since the last full walk began: that walk is owed) waits
for the running walk within its deadline, or walks itself; so a hand change is missed by
at most the one read that started first after it.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from pathlib import Path
from typing import Callable

#: The file beside the index holding the folder state.
STATE_SUFFIX = ".folders"
#: The read marker in the cache folder (its mtime is what counts).
MARKER = "index.read"
#: A store of at most this many files is walked whole by every read, in-process (about 10 ms,
#: less than starting the walk's process): the folder check is for larger ones.
INLINE_WALK = 2_000
#: Test-only: another value for ``INLINE_WALK`` (tests/test_freshness.py sets 0, so a
#: handful of files takes the path of a large store). Not a user setting.
INLINE_ENV = "MEMCLI_TEST_INLINE_WALK"
#: Work to do once the answer is out (``run_after_answer``): set by the read that owes a walk.
_AFTER: list[Callable[[], None]] = []


class FolderState:
    """What the hot path compares with (see the module docstring).

    Attributes:
        generation: the index's ``generation`` the state belongs to (a rebuilt index ignores it).
        walked_ns: ``time.time_ns()`` when the last complete full walk began (0: never).
        folders: absolute folder path -> ``(st_mtime_ns, st_ino)``.
        racy: absolute paths of the files to hash again on every read until they settle.
        files: how many memory files the last full walk found.
    """

    __slots__ = ("generation", "walked_ns", "folders", "racy", "files")

    def __init__(self, generation: str, walked_ns: int, folders: dict[str, tuple[int, int]],
                 racy: list[str], files: int = 0) -> None:
        self.generation = generation
        self.walked_ns = walked_ns
        self.folders = folders
        self.racy = racy
        self.files = files

    @property
    def inline(self) -> bool:
        """Whether the store is small enough for every read to walk it whole (``INLINE_WALK``)."""
        limit = INLINE_WALK
        if os.environ.get(INLINE_ENV, "").isdigit():
            limit = int(os.environ[INLINE_ENV])
        return self.files <= limit


def state_path(index: Path) -> Path:
    """The folder state's file beside the index file ``index``."""
    return index.with_name(index.name + STATE_SUFFIX)


def load_state(index: Path, generation: str) -> FolderState | None:
    """The folder state of the index at ``index``; None when missing, unreadable or of another generation."""
    try:
        data = marshal.loads(state_path(index).read_bytes())
        gen, walked, folders, racy, files = data
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if gen != generation or not isinstance(folders, dict) or not isinstance(racy, list) \
            or not isinstance(walked, int) or not isinstance(files, int):
        return None
    return FolderState(gen, walked, folders, racy, files)


def save_state(index: Path, state: FolderState) -> None:
    """Write the folder state atomically; on failure remove it (the next read walks in full). Never raises.

    A folder whose mtime is within ``db.RACY_NS`` of now is saved with mtime -1, so every
    read lists it until it is older: a file added in the same clock tick as the folder's
    ``stat`` leaves the mtime as it was (the folders' "racy clean" case)."""
    from memcli.index.db import RACY_NS
    from memcli.store.files import atomic_write

    recent = time.time_ns() - RACY_NS
    folders = {f: (m if m < recent else -1, i) for f, (m, i) in state.folders.items()}
    path = state_path(index)
    try:
        atomic_write(path, marshal.dumps((state.generation, state.walked_ns, folders, state.racy, state.files)),
                     durable=False)  # a cache: unreadable after a power loss means a full walk
    except OSError:
        drop_state(index)


def drop_state(index: Path) -> None:
    """Remove the folder state (the next read walks every file). Never raises."""
    try:
        state_path(index).unlink(missing_ok=True)
    except OSError:
        pass


def folder_key(info: os.stat_result) -> tuple[int, int]:
    """What the state keeps of a folder's ``stat``: its modification time (ns) and inode."""
    return (info.st_mtime_ns, info.st_ino)


def last_read(cache: Path) -> int:
    """The start instant (``time.time_ns()``) of the latest read that answered; 0 when none is known."""
    try:
        return os.stat(cache / MARKER).st_mtime_ns
    except OSError:
        return 0


def finish_read(cache: Path, started_ns: int) -> None:
    """Record that a read which began at ``started_ns`` has answered (the marker's mtime,
    never moved back). Never raises."""
    path = cache / MARKER
    try:
        if os.stat(path).st_mtime_ns >= started_ns:
            return
    except FileNotFoundError:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
        except OSError:
            return
    except OSError:
        return
    try:
        os.utime(path, ns=(started_ns, started_ns), follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass


#: The watcher's socket service name (``sockets.socket_path(index, SERVICE)``).
SERVICE = "fresh"
#: Seconds a read gives the watcher to answer. An answer takes about a millisecond when
#: nothing changed; the rest is room for a loaded machine and a few files changed by hand.
#: Spent in full only when a watcher runs and is stuck. Given also when a hook's share of
#: its deadline for the sync has passed (a loaded machine's start-up can take that long):
#: the check the answer spares costs as much, and the hook's watchdog still guards its answer.
ASK_BUDGET = 0.1


def watched(index: Path) -> bool:
    """Ask the store's watcher to take in what changed and record a complete walk (see the
    module docstring): True when it answered ``clean`` within ``ASK_BUDGET``, so the index
    holds every change made before this call. False when no watcher runs (off Linux: never),
    it answered otherwise (its watch lost track, its index was replaced, the build lock was
    held) or not in time. Never raises.

    Args:
        index: the store's index file.
    """
    if not sys.platform.startswith("linux"):
        return False
    from memcli.index.sockets import ask, socket_path

    try:
        path = socket_path(index, SERVICE)
    except OSError:
        return False
    reply = ask(path, {"fresh": True}, ASK_BUDGET)
    return reply is not None and reply.get("fresh") == "clean"


def watcher_alive(index: Path, budget: float = 0.2) -> bool:
    """Whether a watcher of the store whose index file is ``index`` answers now (a ``ping``
    within ``budget`` seconds; costs one ``stat`` when none runs). Never raises."""
    from memcli.index.sockets import ask, socket_path

    try:
        path = socket_path(index, SERVICE)
        if not os.path.lexists(path):
            return False
    except OSError:
        return False
    return ask(path, {"ping": True}, budget) is not None


def spawn_walk(root: Path, index: Path) -> bool:
    """Start the full walk after an answer: one detached ``python -m memcli.index.watcher ROOT
    INDEX FD`` that inherits the build lock taken here (``flock``, not blocking), so no second
    walk starts while it runs; after the walk it stays as the store's watcher (Linux). True
    when it was started; False when the lock was held (a build, walk or watcher's change runs
    already: it covers this read, having begun after its start), when a watcher answers
    (checked under the lock: 16 hooks at once start one process), or on any failure. Never raises.

    Args:
        root: the workspace folder.
        index: its index file; the build lock (``db.BUILD_LOCK``) and the child's log
            (``index-build.log``) are beside it.
    """
    try:
        import fcntl
        import subprocess
    except ImportError:  # not Unix: the next read walks in-process when it must
        return False
    from memcli.index.build import LOG_NAME
    from memcli.index.db import BUILD_LOCK

    cache = index.parent
    try:
        fd = os.open(cache / BUILD_LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        if watcher_alive(index):  # it was slow to answer, not gone: it records the walk itself
            return False
        try:
            log = os.open(cache / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0),
                          0o600)
        except OSError:
            return False
        try:
            subprocess.Popen([sys.executable, "-m", "memcli.index.watcher", str(root), str(index), str(fd)],
                             cwd=root, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                             pass_fds=(fd,), start_new_session=True)
        except OSError:
            return False
        finally:
            os.close(log)
        return True
    finally:
        os.close(fd)  # the child keeps the lock through its own copy of the descriptor


def walk_after(root: Path, index: Path) -> None:
    """Start the full walk a read owes (:func:`spawn_walk`). Never raises."""
    spawn_walk(root, index)


def after_answer(work: Callable[[], None]) -> None:
    """Queue ``work`` for :func:`run_after_answer` (once the command's answer is written)."""
    _AFTER.append(work)


def run_after_answer() -> None:
    """Run what reads queued once their answer is out (the CLI calls it after flushing
    stdout, before exit). Never raises."""
    while _AFTER:
        work = _AFTER.pop(0)
        try:
            work()
        except Exception:  # noqa: BLE001 - the answer is given; freshness work never fails a command
            pass
