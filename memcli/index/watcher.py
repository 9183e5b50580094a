"""The freshness watcher of one store: a long-lived process that lets reads skip the walk of
every file (issue 21 point 1; docs/search.md, "Freshness"; the reads' side is ``index.fresh``).

Started by ``fresh.spawn_walk`` (the walk a read owes) as ``python -m memcli.index.watcher
ROOT INDEX FD``, holding the index's build lock through ``FD``, it:

1. makes an inotify watch on every folder under ``memories/`` (:class:`Watch`), before it
   walks, so that any change during or after the walk is reported by the kernel;
2. walks every file (``IndexDB.sync``), as the detached walk always did;
3. serves ``sockets.socket_path(INDEX, "fresh")`` (``index.warm.Server``: owner-only folder,
   0600 socket, the peer's uid checked), binding it before it lets the build lock go, so a
   read that finds the lock free also finds the watcher;
4. answers ``{"fresh": true}`` (:meth:`Watcher.fresh`): it reads what the kernel queued
   since the last question, indexes the files named there (``IndexDB.watched``, under the
   build lock) and records a complete walk as of the moment before it read the queue, then
   says ``{"fresh": "clean"}``; and ``{"ping": true}`` with what it has done;
5. exits after ``IDLE`` seconds without a question, when its ``memories/`` folder or index
   file is gone or replaced (an ``index rebuild``), when another process took its socket
   over (this one had been stopped), on SIGTERM, and when the watch no longer covers the
   store (a folder added or removed, the kernel's queue overflowed): it then answers
   ``{"fresh": "lost"}`` and the read that asked falls back to its own check and starts a
   new watcher, which walks again.

Off Linux, or when the watch cannot be made (the ``max_user_watches`` limit), it does
step 2 only and exits, as the detached walk did. Its output goes to ``index-build.log``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from memcli.index.db import IndexDB, IndexUnavailable
from memcli.store.files import MemoryFiles
from memcli.testpoint import reached

#: Seconds without a question after which the watcher exits (the next read starts another).
IDLE = 600.0
#: Test-only: another value for ``IDLE`` (seconds). Not a user setting.
IDLE_ENV = "MEMCLI_TEST_WATCH_IDLE"
#: Seconds between the watcher's checks that its store, index and socket are still there.
CHECK = 1.0


class Watch:
    """Linux inotify watches on every folder under ``top`` (``inotify(7)``, through libc with
    ``ctypes``): :meth:`changed` says what happened in them since the last call.

    The kernel queues an event with the change itself: a memory file added, deleted,
    renamed, written or touched (``IN_ATTRIB``: ``touch``, ``utime``) is reported to the
    next :meth:`changed`. A new folder, a lost folder or a full queue (``IN_Q_OVERFLOW``)
    make the watch untrustworthy: :meth:`changed` then says None.

    Raises:
        OSError: inotify is missing (not Linux) or a watch cannot be added (the
            ``max_user_watches`` limit, a folder gone meanwhile).
    """

    #: inotify(7): IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE,
    #: IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF; with IN_ONLYDIR and IN_DONT_FOLLOW.
    MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x01000000 | 0x02000000
    #: Events after which the watches no longer cover the tree: IN_Q_OVERFLOW, IN_IGNORED,
    #: IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, and IN_ISDIR with a create or a move in (a new folder).
    _LOST = 0x4000 | 0x8000 | 0x400 | 0x800 | 0x2000

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
                dirs[:] = [d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(base, d))]
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

    @property
    def folders(self) -> int:
        """How many folders are watched."""
        return len(self._folders)

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


def _memory_file(path: str) -> bool:
    """Whether an event's ``path`` may be a memory file (what ``db.walk`` lists): a visible
    ``.md`` name; an atomic write's hidden temporary file is not."""
    name = os.path.basename(path)
    return name.endswith(".md") and not name.startswith(".")


class Watcher:
    """The serving half of the watcher process (see the module docstring): the handlers of
    its socket and the checks of its main loop.

    Args:
        index: the store's index, walked in full since ``watch`` was made.
        watch: the inotify watch of its ``memories/`` tree.
    """

    def __init__(self, index: IndexDB, watch: Watch) -> None:
        self.index = index
        self.watch = watch
        self.mutex = threading.Lock()
        self.stopping = ""  # why it stops, once it does
        self.done = threading.Event()
        self.last = time.monotonic()
        self.since = time.time()
        info = os.stat(index.path)
        self._opened = (info.st_dev, info.st_ino)
        #: Questions answered, of them ``clean``, and memory files taken in (tests, ``ping``).
        self.asked = 0
        self.clean = 0
        self.indexed = 0

    def ping(self, request: dict) -> dict:
        """``{"ping": true}`` -> ``{"pid", "since", "asked", "clean", "indexed", "folders"}``;
        an error while it stops (a read then starts a new watcher)."""
        if self.stopping:
            return {"error": f"stopping: {self.stopping}"}
        return {"pid": os.getpid(), "since": self.since, "asked": self.asked, "clean": self.clean,
                "indexed": self.indexed, "folders": self.watch.folders}

    def fresh(self, request: dict) -> dict:
        """``{"fresh": true}`` -> ``{"fresh": "clean"}`` once every change the kernel reported
        is indexed and a complete walk recorded; ``"lost"`` (the watch or the index cannot be
        trusted any more: the watcher stops) or ``"busy"`` (the build lock was held) otherwise."""
        with self.mutex:
            self.last = time.monotonic()
            self.asked += 1
            if self.stopping:
                return {"fresh": "lost"}
            why = self.gone()
            began = time.time_ns()  # before the queue is read: what happens later is reported next time
            events = self.watch.changed() if not why else None
            if events is None:
                self.stop(why or "the watch no longer covers every folder (a folder added or removed, "
                                 "or the event queue overflowed)")
                return {"fresh": "lost"}
            paths = sorted(p for p in events if _memory_file(p))
            if paths:
                reached("watcher:indexing")
            try:
                report = self.index.watched(paths, began)
            except IndexUnavailable as err:
                self.stop(f"the index cannot be used: {err}")
                return {"fresh": "lost"}
            if report is None:
                from memcli.index import fresh

                if fresh.load_state(self.index.path, self.index.generation) is None:
                    self.stop("the folder state is gone or of another index")
                    return {"fresh": "lost"}
                return {"fresh": "busy"}
            self.clean += 1
            self.indexed += report.changed
            return {"fresh": "clean"}

    def gone(self) -> str:
        """Why the watcher must stop now ("" when it need not): its store or index gone or replaced."""
        if not self.index.files.base.is_dir():
            return f"{self.index.files.base} is gone"
        return self._index_gone()

    def _index_gone(self) -> str:
        try:
            info = os.stat(self.index.path)
        except OSError:
            return f"{self.index.path} is gone"
        if (info.st_dev, info.st_ino) != self._opened:
            return f"{self.index.path} was replaced (rebuilt)"
        return ""

    def stop(self, why: str) -> None:
        """Stop serving: the main loop closes the socket and the process exits."""
        if not self.stopping:
            self.stopping = why
        self.done.set()

    def close_index(self) -> bool:
        """Close the index connection if its file is still the one opened (checked under the
        build lock, so no rebuild replaces it meanwhile); False when it is not: the process
        must then end with ``os._exit``, since SQLite's clean-up on close (a checkpoint, then
        the ``-wal`` file removed *by name*) would hit the files of the new index (SQLite's
        "How To Corrupt An SQLite Database File", section 2.4: unlinking an open database)."""
        from memcli.index.db import BUILD_LOCK, LOCK_WAIT
        from memcli.store.oslock import FileLock, Timeout

        lock = FileLock(self.index.path.with_name(BUILD_LOCK), timeout=LOCK_WAIT)
        try:
            lock.acquire()
        except (Timeout, OSError):
            return False
        try:
            if self._index_gone():
                return False
            self.index.close()
            return True
        finally:
            lock.release()

    def idle_limit(self) -> float:
        """``IDLE``, or the test-only ``$MEMCLI_TEST_WATCH_IDLE``."""
        try:
            return float(os.environ.get(IDLE_ENV, "")) if os.environ.get(IDLE_ENV) else IDLE
        except ValueError:
            return IDLE

    def wait(self, owns: Callable[[], bool]) -> str:
        """Serve until a reason to stop (the module docstring, step 5); return it.

        Args:
            owns: whether the socket is still this process's (``Server.owns``).
        """
        idle = self.idle_limit()
        while not self.done.wait(CHECK):
            with self.mutex:
                why = self.gone()
                if time.monotonic() - self.last > idle:
                    self.stop(f"idle for {idle:g} s")
                elif why:
                    self.stop(why)
                elif not owns():
                    self.stop("another process serves its socket")
        return self.stopping


def _preload(index: IndexDB) -> None:
    """Read one memory file as a change would be read (no database write): the modules that
    takes (the YAML reader, the record, the tokenizer: 0.15 s and more under load) are then
    loaded before a read asks about its first hand edit, not while it waits. Never raises."""
    from memcli.index.db import read_row

    try:
        for base, dirs, names in os.walk(index.files.base):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in names:
                if name.endswith(".md") and not name.startswith("."):
                    read_row(index.files, index.files.rel(Path(base) / name), None)
                    return
    except Exception:  # noqa: BLE001 - a head start only: the first change loads them otherwise
        pass


def _say(line: str) -> None:
    """One line of the log (``index-build.log``)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} watcher {os.getpid()}: {line}", flush=True)


def main(root: str, index_file: str, fd: int) -> int:
    """The watcher process (see the module docstring): 0 when it walked (and served), 1 when
    the index could not be used."""
    from memcli.index import fresh
    from memcli.index.warm import Server

    reached("fresh:walking")
    _say(f"started for {root}")
    index_path = Path(index_file)
    lock_held = True

    def release() -> None:
        nonlocal lock_held
        if lock_held:
            os.close(fd)
            lock_held = False

    try:
        try:
            index = IndexDB(MemoryFiles(Path(root)), index_path)
        except IndexUnavailable as err:
            _say(f"cannot open the index: {err}")
            return 1
        if fresh.watcher_alive(index_path):  # started by a read that asked it too late: it covers this one
            index.close()
            return 0
        watch: Watch | None = None
        if sys.platform.startswith("linux"):
            try:  # made before the walk: whatever happens after it shows as an event
                watch = Watch(index.files.base)
            except OSError as err:
                _say(f"walks without watching: {err}")
        try:
            index.sync(locked=True)
        except IndexUnavailable as err:
            _say(f"the walk failed: {err}")
            index.close()
            return 1
        index._kept_snapshot = None  # up to 100,000 entries: not needed again here
        if watch is None:
            index.close()
            return 0
        watcher = Watcher(index, watch)
        try:
            server = Server(fresh_socket(index_path), {"ping": watcher.ping, "fresh": watcher.fresh})
        except OSError as err:
            _say(f"not serving: {err}")
            watch.close()
            index.close()
            return 0
        release()
        watcher.fresh({"fresh": True})  # what changed during the walk, and this code's first run out of the reads' way
        watcher.asked = watcher.clean = 0
        _preload(index)
        _say(f"watching {watch.folders} folders of {root}")

        def terminated(signum: int, frame: object) -> None:
            watcher.stop(f"signal {signum}")

        signal.signal(signal.SIGTERM, terminated)
        try:
            why = watcher.wait(server.owns)
        finally:
            server.close()
            watch.close()
        _say(f"exits: {why}")
        if not watcher.close_index():
            sys.stdout.flush()
            os._exit(0)  # see ``close_index``: no clean-up may touch another database's files
        return 0
    finally:
        release()


def fresh_socket(index: Path) -> Path:
    """The watcher's socket for the store whose index file is ``index``."""
    from memcli.index.fresh import SERVICE
    from memcli.index.sockets import socket_path

    return socket_path(index, SERVICE)


if __name__ == "__main__":  # python -m memcli.index.watcher ROOT INDEX FD (fresh.spawn_walk)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
