"""Freshness without a walk of every file on the hot path (issue 21 point 1; docs/search.md, "Freshness").

A full walk (``db.walk``: one ``stat`` per memory file) grows with the store; a read
instead checks what a hand change must move, and leaves the full walk to after its answer:

- the **folder state** (``index.sqlite3.folders``, a small marshal file beside the index):
  the ``(mtime_ns, inode)`` of every folder under ``memories/`` as the last full walk or
  check saw it, the files still *racy* (hashed within ``db.RACY_NS`` of their last change,
  so a same-size rewrite in the same clock tick would not show in their ``stat``), and
  ``walked_ns``: the wall-clock instant (``time.time_ns()``) the last complete full walk
  *began*;
- the **read marker** (``index.read`` in the cache folder): its modification time is the
  start instant of the latest read that has answered (written with :func:`finish_read`).

A read (``IndexDB.quick_sync``) stats the folders of the state (about 800 at 100,000
memories) and the racy files, lists only the folders whose mtime moved (a file added,
deleted or renamed moves its folder's mtime), and indexes what changed there. An edit in
place moves no folder: it is found by the full walk, which every read starts after its
answer (:func:`spawn_walk`: one detached ``python -m memcli.index.fresh`` holding the
build lock, so any number of concurrent reads start one walk). A read that finds the
marker newer than ``walked_ns`` (a read answered since the last full walk began: that
walk is owed) waits for the running walk within its deadline, or walks itself; so a
hand change is missed by at most the one read that started first after it.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from memcli.index.db import IndexDB

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


def spawn_walk(root: Path, index: Path) -> bool:
    """Start the full walk after an answer: one detached ``python -m memcli.index.fresh ROOT``
    that inherits the build lock taken here (``flock``, not blocking), so no second walk
    starts while it runs. True when it was started; False when the lock was held (a build
    or walk runs already: it covers this read, having begun after its start) or on any
    failure. Never raises.

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
        try:
            log = os.open(cache / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0),
                          0o600)
        except OSError:
            return False
        try:
            subprocess.Popen([sys.executable, "-m", "memcli.index.fresh", str(root), str(index), str(fd)], cwd=root,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, pass_fds=(fd,),
                             start_new_session=True)
        except OSError:
            return False
        finally:
            os.close(log)
        return True
    finally:
        os.close(fd)  # the child keeps the lock through its own copy of the descriptor


def set_walker(walker: Callable[[Path, Path], None] | None) -> None:
    """Have :func:`walk_after` call ``walker(root, index)`` instead of starting a child: a
    long-lived process (the MCP server) walks in its own thread. None: children again."""
    global _WALKER
    _WALKER = walker


_WALKER: Callable[[Path, Path], None] | None = None


def walk_after(root: Path, index: Path) -> None:
    """Start the full walk a read owes (see :func:`set_walker`, :func:`spawn_walk`). Never raises."""
    if _WALKER is not None:
        _WALKER(root, index)
    else:
        spawn_walk(root, index)


#: Files this process has just written and re-indexed (``IndexDB.refresh``): absolute path ->
#: their ``(st_ctime_ns, st_size)`` then (None: deleted). A watch's event on such a file that
#: still has that stat is memcli's own write, already in the index, not a change to walk for.
_WRITTEN: dict[str, tuple[int, int] | None] = {}


def note_written(paths: list[Path]) -> None:
    """Record files this process has just written (or deleted) and re-indexed (see ``_WRITTEN``). Never raises."""
    for path in paths:
        try:
            info = os.lstat(path)
            _WRITTEN[str(path)] = (info.st_ctime_ns, info.st_size)
        except OSError:
            _WRITTEN[str(path)] = None


def _foreign(events: set[str]) -> bool:
    """Whether ``events`` (paths from :meth:`Watch.changed`) hold a change that is not this
    process's own, re-indexed write: any path but a hidden one (never indexed: an atomic
    write's temporary file) or a written file whose stat is still the one recorded."""
    written = dict(_WRITTEN)
    _WRITTEN.clear()
    for path in events:
        if os.path.basename(path).startswith("."):
            continue
        if path not in written:
            return True
        try:
            info = os.lstat(path)
            now: tuple[int, int] | None = (info.st_ctime_ns, info.st_size)
        except OSError:
            now = None
        if now != written[path]:
            return True
    return False


class Watch:
    """Linux inotify watches on every folder under ``top`` (``inotify(7)``, through libc with
    ``ctypes``): :meth:`changed` says whether anything happened in them since the last call.

    A long-lived process holding one knows, without a walk, that no memory file was added,
    deleted, renamed, written or touched (``IN_ATTRIB``: ``touch``, ``utime``) since then:
    the kernel queues an event with the change itself. A new folder, a lost folder or a full
    queue (``IN_Q_OVERFLOW``) make the watch untrustworthy: :meth:`changed` then says None and
    the owner walks and starts a new watch.

    Raises:
        OSError: inotify is missing (not Linux) or a watch cannot be added (the
            ``max_user_watches`` limit, a folder gone meanwhile).
    """

    #: inotify(7): IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE,
    #: IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF; with IN_ONLYDIR and IN_DONT_FOLLOW.
    MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x01000000 | 0x02000000
    #: Events after which the watches no longer cover the tree: IN_Q_OVERFLOW, IN_IGNORED,
    #: IN_DELETE_SELF, IN_MOVE_SELF, and IN_ISDIR with a create or a move in (a new folder).
    _LOST = 0x4000 | 0x8000 | 0x400 | 0x800

    def __init__(self, top: Path) -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if not hasattr(libc, "inotify_init1"):
            raise OSError("inotify is not available here")
        self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)  # IN_NONBLOCK, IN_CLOEXEC
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        try:
            folders = [str(top)]
            for base, dirs, _ in os.walk(top):  # does not follow symbolic links
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                folders.extend(os.path.join(base, d) for d in dirs)
            self._folders: dict[int, str] = {}
            for folder in folders:
                wd = libc.inotify_add_watch(self._fd, os.fsencode(folder), self.MASK)
                if wd < 0:
                    raise OSError(ctypes.get_errno(), f"cannot watch {folder}")
                self._folders[wd] = folder
        except BaseException:
            os.close(self._fd)
            raise

    def changed(self) -> set[str] | None:
        """The paths (absolute) that something happened to under the watched folders since the
        last call (or since the watches were made): empty when nothing did; None when the
        watch no longer covers the tree (see the class)."""
        import struct

        seen: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return None
            at = 0
            while at + 16 <= len(data):
                wd, mask, _, length = struct.unpack_from("iIII", data, at)
                name = data[at + 16:at + 16 + length].rstrip(b"\0")
                at += 16 + length
                if mask & self._LOST or (mask & 0x40000000 and mask & (0x100 | 0x80)):  # IN_ISDIR created/moved in
                    return None
                folder = self._folders.get(wd)
                if folder is None:
                    return None
                seen.add(os.path.join(folder, os.fsdecode(name)))

    def close(self) -> None:
        """Remove the watches. Never raises."""
        try:
            os.close(self._fd)
        except OSError:
            pass


class Walker:
    """The full walks of a long-lived process, in one background thread (the MCP server's
    replacement for :func:`spawn_walk`): :meth:`kick` asks for a walk of a store and returns
    at once; the thread walks each store asked for since its last round (a full
    ``IndexDB.sync`` on its own connection, under the build lock as any walk).

    With ``watch`` (Linux), each store's ``memories/`` tree is watched (:class:`Watch`): a
    round in which nothing happened there records a complete walk without walking
    (``IndexDB.walked_unchanged``), so back-to-back calls do not each wait for a walk of every
    file; any event, or a watch that cannot be trusted or made, means a full walk as before."""

    def __init__(self, watch: bool = True) -> None:
        import threading

        self._todo: dict[Path, Path] = {}
        self._mutex = threading.Lock()
        self._event = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch = watch
        self._watches: dict[Path, Watch] = {}
        self._dirty: set[Path] = set()  # stores whose events a kick took in: their next round walks
        #: Walks finished (for tests and ``status``-like reports).
        self.rounds = 0
        #: Rounds that walked every file, and rounds that the watch answered without a walk.
        self.walks = 0
        self.skipped = 0

    def kick(self, root: Path, index: Path) -> None:
        """Ask for a full walk of the store at ``root`` whose index file is ``index``; when its
        watch saw nothing change, the walk is recorded here at once (a few milliseconds), so
        the next call finds it done instead of racing the thread for it."""
        import threading

        if self._watch and self._unchanged(root, index):
            return
        with self._mutex:
            self._todo[index] = root
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="memcli-freshness", daemon=True)
                self._thread.start()
        self._event.set()

    def _unchanged(self, root: Path, index_path: Path) -> bool:
        """Whether the store's watch saw nothing since the last round and the walk is recorded
        as done (``IndexDB.walked_unchanged``). Events it takes in mark the store for a walk."""
        from memcli.index.db import IndexDB, IndexUnavailable
        from memcli.store.files import MemoryFiles

        began = time.time_ns()
        with self._mutex:
            watch = self._watches.get(index_path)
            if watch is None or index_path in self._dirty:
                return False
            events = watch.changed()
            if events is None:
                self._forget(index_path)
                return False
            if _foreign(events):
                self._dirty.add(index_path)
                return False
        try:
            index = IndexDB(MemoryFiles(root), index_path)
        except IndexUnavailable:
            return False
        try:
            done = index.walked_unchanged(began)
        except IndexUnavailable:
            return False
        finally:
            index.close()
        if done:
            self.skipped += 1
        return done

    def _run(self) -> None:
        from memcli.index.db import IndexDB, IndexUnavailable
        from memcli.store.files import MemoryFiles

        while True:
            self._event.wait()
            self._event.clear()
            with self._mutex:
                todo, self._todo = self._todo, {}
            for index_path, root in todo.items():
                try:
                    index = IndexDB(MemoryFiles(root), index_path)
                except IndexUnavailable:
                    continue
                try:
                    self._round(index, index_path, root)
                except Exception:  # noqa: BLE001 - a failed walk is owed again: the next read walks itself
                    self._forget(index_path)
                finally:
                    index.close()
            self.rounds += 1

    def _round(self, index: IndexDB, index_path: Path, root: Path) -> None:
        """One store's walk: skipped when its watch saw nothing since the last round (and no
        :meth:`kick` took in an event meanwhile)."""
        began = time.time_ns()
        with self._mutex:
            watch = self._watches.get(index_path)
            dirty = index_path in self._dirty
            self._dirty.discard(index_path)
            events = watch.changed() if watch is not None else None
            if events is None:
                self._forget(index_path)
            changed = events is None or _foreign(events)
        if not dirty and not changed and index.walked_unchanged(began):
            self.skipped += 1
            return
        if self._watch and index_path not in self._watches:
            try:  # made before the walk: whatever happens after it shows as an event
                watch = Watch(index.files.base)
                with self._mutex:
                    self._watches[index_path] = watch
            except OSError:
                pass
        index.sync()
        self.walks += 1

    def _forget(self, index_path: Path) -> None:
        watch = self._watches.pop(index_path, None)
        if watch is not None:
            watch.close()


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


def _child(root: str, index_file: str, fd: int) -> int:
    """The detached walk: a full sync under the build lock held through ``fd``."""
    from memcli.index.db import IndexDB, IndexUnavailable
    from memcli.store.files import MemoryFiles
    from memcli.testpoint import reached

    reached("fresh:walking")

    try:
        index = IndexDB(MemoryFiles(Path(root)), Path(index_file))
    except IndexUnavailable:
        return 1
    try:
        index.sync(locked=True)
    except IndexUnavailable:
        return 1
    finally:
        index.close()
        os.close(fd)
    return 0


if __name__ == "__main__":  # python -m memcli.index.fresh ROOT INDEX FD (spawn_walk)
    sys.exit(_child(sys.argv[1], sys.argv[2], int(sys.argv[3])))
