"""The derived SQLite index: schema, opening, and the lazy incremental sync (SPEC.md section 5).

The files are the only truth; this database is a cache in ``.cache/index.sqlite3``
that may be deleted at any time. It is opened in WAL mode with a busy timeout, so
readers never block each other and a writer waits instead of failing.

Sync, run at the start of each command that reads:

1. walk ``memories/`` and ``stat`` every file (mtime in ns and size: the fast path);
   if the walk equals the snapshot saved by the last sync, stop: nothing changed;
2. for a new or changed file, read it and hash it (BLAKE2b); the hash is the truth:
   a file whose hash is unchanged only gets its new mtime recorded;
3. a row whose file is missing is deleted only after ``os.path.exists`` confirms it
   is gone; a new file with the hash of a vanished one is counted as a move;
4. when two files hold the same id, the one with the smaller path wins (as in a full
   rebuild, which reads files in path order) and the other is recorded as a problem.

Nothing is written when nothing changed, so concurrent readers take no write lock.

Builds are shared and resumable (issue 9 point 2, issue 10 point 8): one process at a
time holds the build lock (``.cache/index.lock``, an OS file lock, released if the process
dies); the change list is made only under it, so concurrent cold starts never read the
same files twice. The rows are committed every ``BATCH`` files, so a build that is killed
keeps what it committed and the next sync goes on from there. A sync may be given a
deadline: it then stops between two files, commits, and reports how many files it left
(``SyncReport.pending``); a reader that cannot get the build lock within ``LOCK_WAIT``
seconds serves the index as it is (``SyncReport.busy``) instead of waiting.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Callable

from memcli.errors import InvalidMemoryFile
from memcli.index.tokenize import normalise, prepare
from memcli.model import Memory, normalise_text
from memcli.store.files import MEMORIES, MemoryFiles, duplicate_reason, read_file

SCHEMA_VERSION = "8"  # 8: the `changes` counter; 7: a partial index of unreadable files; 6: a `<ulid>-<slug>.md`
# file's default id is the ULID
#: A file modified this close (ns) to when it was hashed may have changed again within the
#: same mtime tick without changing size: it is hashed again until it is older (git's
#: "racy clean" problem; 2 s covers file systems with 1 s timestamps).
RACY_NS = 2_000_000_000
INDEX_NAME = "index.sqlite3"
#: The build lock beside the index: held by the one process that reads changed files.
BUILD_LOCK = "index.lock"
#: Seconds a sync waits for another process's build before serving the index as it is.
LOCK_WAIT = 2.0
#: Milliseconds SQLite waits for another connection's write transaction (at most one
#: batch, well under a second, since every build commits every ``BATCH`` files).
BUSY_TIMEOUT_MS = 2_000
#: Files read per transaction: what a killed build keeps, at most this many files lost.
BATCH = 200
#: A sync with at most this many changed files ignores its deadline (0.2 s on an idle
#: machine): small workspaces and ordinary edits always get a complete answer.
SMALL_SYNC = 500
#: A walk stops at its deadline only past this many files (20 ms on an idle machine).
SMALL_WALK = 5_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    changed_ns INTEGER NOT NULL,
    synced_ns INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL,
    hash TEXT NOT NULL,
    id TEXT,
    scope TEXT, status TEXT, category TEXT, subject TEXT,
    importance INTEGER, pinned INTEGER,
    created REAL, updated REAL, expire REAL,
    idem TEXT, norm TEXT,
    tags TEXT, search_text TEXT, record TEXT,
    error TEXT, error_line INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs(id) WHERE id IS NOT NULL;
CREATE INDEX IF NOT EXISTS docs_scope ON docs(scope, status);
CREATE INDEX IF NOT EXISTS docs_idem ON docs(idem) WHERE idem IS NOT NULL;
CREATE INDEX IF NOT EXISTS docs_error ON docs(path) WHERE error IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    body, subject, tags, tokenize = 'unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'row');
CREATE TABLE IF NOT EXISTS access (id TEXT PRIMARY KEY, hits INTEGER NOT NULL, last_recalled TEXT);
CREATE TABLE IF NOT EXISTS changes (n INTEGER NOT NULL);
INSERT INTO changes SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM changes);
"""
#: Statements that keep ``changes.n`` moving on every change to ``table``, by any process:
#: what a long-lived process keeps between calls (``vectors._rows``) holds while it stays.
#: (Run one by one: a trigger's body holds ``;``.)
CHANGE_TRIGGERS = ("CREATE TRIGGER IF NOT EXISTS {table}_{event} AFTER {event} ON {table} "
                   "BEGIN UPDATE changes SET n = n + 1; END")


def change_triggers(table: str) -> list[str]:
    """The ``CHANGE_TRIGGERS`` statements for ``table`` (insert, update, delete)."""
    return [CHANGE_TRIGGERS.format(table=table, event=event) for event in ("INSERT", "UPDATE", "DELETE")]


class IndexUnavailable(Exception):
    """The index cannot be opened, written or read; callers fall back to scanning files."""


class SyncReport:
    """What one sync did: counts of files added, updated, removed, moved, and touched-only.

    ``files`` is how many memory files the walk found. ``rebuilt`` (the index was built
    anew) and ``notes`` (messages; a fresh empty list when None) are shown in ``index
    status``'s ``last_sync``; no sync sets them yet.
    ``pending`` is the number of changed files left for a later sync (the deadline came
    first; -1: it came before the walk of the files ended, so what changed is not known);
    ``busy`` is True when another process held the build lock past the wait, so
    nothing was read and the index was served as it was.
    """

    __slots__ = ("added", "updated", "removed", "moved", "touched", "files", "rebuilt", "notes", "pending", "busy")

    def __init__(self, added: int = 0, updated: int = 0, removed: int = 0, moved: int = 0, touched: int = 0,
                 files: int = 0, rebuilt: bool = False, notes: list[str] | None = None, pending: int = 0,
                 busy: bool = False) -> None:
        self.added = added
        self.updated = updated
        self.removed = removed
        self.moved = moved
        self.touched = touched
        self.files = files
        self.rebuilt = rebuilt
        self.notes = [] if notes is None else notes
        self.pending = pending
        self.busy = busy

    def to_dict(self) -> dict[str, object]:
        """Every attribute by name, JSON-ready (``index status``'s ``last_sync``)."""
        return {"added": self.added, "updated": self.updated, "removed": self.removed, "moved": self.moved,
                "touched": self.touched, "files": self.files, "rebuilt": self.rebuilt, "notes": self.notes,
                "pending": self.pending, "busy": self.busy}

    @property
    def complete(self) -> bool:
        """Whether the index now agrees with every file of the walk."""
        return not self.pending and not self.busy

    @property
    def changed(self) -> int:
        """Rows written by this sync."""
        return self.added + self.updated + self.removed


def file_hash(data: bytes) -> str:
    """The content hash used as the truth of "has this file changed" (BLAKE2b, 128 bits)."""
    import hashlib

    return hashlib.blake2b(data, digest_size=16).hexdigest()


class DamagedRow(ValueError):
    """A row of the index does not hold what a sync writes (it was edited outside memcli)."""


def decode(record: object) -> Memory:
    """The memory a row's ``record`` column holds, checked as a sync writes it.

    Raises:
        DamagedRow: the column is not a memory's JSON, or a field has a type or value no
            memory file gives (a NULL scope, a text that is a number, an importance of "high").
    """
    from memcli.model import CATEGORIES, STATUSES, check_importance, check_scope, from_dict

    try:
        memory = from_dict(json.loads(record))  # type: ignore[arg-type]
        check_scope(memory.scope)
        check_importance(memory.importance)
        sound = (isinstance(memory.id, str) and memory.status in STATUSES and memory.category in CATEGORIES
                 and isinstance(memory.text, str) and isinstance(memory.subject, str | None)
                 and all(isinstance(v, str) for v in (*memory.tags, *memory.paths)))
    except Exception as err:  # noqa: BLE001 - whatever a record makes fail, it is not one a sync wrote
        raise DamagedRow(f"a record of the index is damaged ({type(err).__name__})") from None
    if not sound:
        raise DamagedRow("a record of the index is damaged (a field of the wrong type)")
    return memory


def score(value: object) -> float:
    """A score computed from a row's columns; a NULL or text in them makes it no number.

    Raises:
        DamagedRow: ``value`` is not a number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DamagedRow("a column of the index is damaged (a score is not a number)")
    return value


def _inside(path: object) -> bool:
    """Whether ``path`` is a row path a sync writes: relative, under ``memories/``, without ``..``."""
    return (isinstance(path, str) and path.startswith(MEMORIES + "/") and "\\" not in path
            and ".." not in path.split("/"))


def walk(files: MemoryFiles, deadline: float | None = None) -> dict[str, tuple[int, int]] | None:
    """Every memory file as ``absolute path -> (changed_ns, size)``; hidden entries skipped;
    None when ``deadline`` (a ``time.monotonic()`` instant) passed before the walk ended.

    ``changed_ns`` is the inode change time (ctime), not the modification time: ``touch -r``,
    ``cp -p`` or ``rsync -t`` can set a file's mtime back, never its ctime. A symbolic link
    is listed by its own ``lstat`` and never followed.

    The hot loop of every command: one ``scandir`` per folder and one ``stat`` per file.
    """
    out: dict[str, tuple[int, int]] = {}
    stack_base = str(files.base)
    stack = [stack_base]
    while stack:
        if deadline is not None and len(out) >= SMALL_WALK and time.monotonic() >= deadline:
            return None
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    try:
                        if name.endswith(".md"):
                            info = entry.stat(follow_symlinks=False)
                            out[entry.path] = (info.st_ctime_ns, info.st_size)
                        elif entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            if folder != stack_base:  # an unlistable folder is one reported problem (read_file says why)
                try:
                    info = os.lstat(folder)
                    out[folder] = (info.st_ctime_ns, info.st_size)
                except OSError:
                    pass
            continue
    return out


def build_running(path: Path) -> bool:
    """Whether another process holds the build lock at ``path`` (a non-blocking ``flock``
    probe, the lock ``filelock`` takes on Unix; False where it cannot be told)."""
    try:
        import fcntl
    except ImportError:  # not Unix: let filelock decide
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _dated_by_mtime(known: tuple) -> bool:
    """True when a row's ``createdAt`` may be its file's old modification time (a file with
    no ``createdAt`` takes it, SPEC.md section 2): a touched file must then be read again,
    as a rebuild would, even though its content hash is unchanged."""
    changed_ns, created = known[0], known[3]
    return created is not None and 0 <= changed_ns / 1e9 - created < 1.001


def _relative(disk: dict[str, tuple[int, int]], root: Path) -> dict[str, tuple[int, int]]:
    prefix = len(str(root)) + 1
    return {path[prefix:].replace(os.sep, "/"): stat for path, stat in disk.items()}


def reading_order(path: str, reader: str) -> int:
    """Where a changed file comes in a sync for ``reader``: 0 for their personal folder
    (``memories/user/<reader>/``), 2 for another person's (never shown to them), 1 for the rest.

    Args:
        path: workspace-relative, ``/`` separated.
    """
    parts = path.split("/", 3)
    if len(parts) > 3 and parts[1] == "user":
        return 0 if parts[2] == reader else 2
    return 1


class IndexDB:
    """The index database of one workspace.

    Args:
        files: the workspace's ``memories/`` tree.
        path: the database file (``.cache/index.sqlite3``).

    Raises:
        IndexUnavailable: the file cannot be opened or is not a database (callers then
            delete it and rebuild, or fall back to scanning).
    """

    def __init__(self, files: MemoryFiles, path: Path) -> None:
        self.files = files
        self.path = path
        #: Who reads through this index (``ctx.actor``): their own files are indexed first,
        #: other people's personal folders last (see :func:`reading_order`).
        self.reader: str | None = None
        self.snapshot_path = path.with_name(path.name + ".snapshot")
        try:
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = self.db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.db.execute("PRAGMA synchronous = NORMAL")
            if mode != "wal":
                raise IndexUnavailable(f"cannot use WAL mode (got {mode})")
            self._ensure_schema()
            self.generation = self.db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        except sqlite3.Error as err:
            raise IndexUnavailable(f"{path.name}: {err}") from None

    def _version(self) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:  # no meta table: a new or foreign file
            return None
        return row[0] if row else None

    def _ensure_schema(self) -> None:
        """Create the tables, or recreate them when the schema version differs (it is a cache)."""
        if self._version() == SCHEMA_VERSION:
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if self._version() != SCHEMA_VERSION:  # another process may have created it meanwhile
                for table in ("vocab", "fts", "docs", "meta", "access", "changes"):
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in [*_SCHEMA.split(";"), *change_triggers("docs")]:
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                self.db.execute("INSERT INTO meta VALUES ('generation', ?)", (os.urandom(8).hex(),))
            self.db.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # --- sync --------------------------------------------------------------------------

    def sync(self, progress: Callable[[int, int], None] | None = None, deadline: float | None = None,
             wait: float = LOCK_WAIT) -> SyncReport:
        """Bring the index in step with the files (see the module docstring).

        Args:
            progress: called as ``progress(done, total)`` while changed files are read.
            deadline: a ``time.monotonic()`` instant; the sync stops reading files then
                (after at least one), commits, and reports the rest as ``pending``. A sync
                of at most ``SMALL_SYNC`` changed files ignores it.
            wait: seconds to wait for another process's build lock; then ``busy``.

        Raises:
            IndexUnavailable: the database could not be read or written.
        """
        try:
            return self._sync(progress, deadline, wait)
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"sync failed: {err}") from None

    def _sync(self, progress: Callable[[int, int], None] | None, deadline: float | None, wait: float) -> SyncReport:
        lock_path = self.path.with_name(BUILD_LOCK)
        lock = None
        if build_running(lock_path):  # wait for it before walking: a walk of 100,000 files takes seconds
            lock = self._build_lock(lock_path, wait)
            if lock is None:
                return SyncReport(busy=True)
        try:
            absolute = walk(self.files, deadline)
            if absolute is None:  # a hook's deadline came first (a huge tree, a loaded machine)
                return SyncReport(pending=-1)
            report = SyncReport(files=len(absolute))
            if self._snapshot() == absolute:
                return report
            if lock is None:
                lock = self._build_lock(lock_path, wait)
                if lock is None:
                    report.busy = True
                    return report
                if self._snapshot() == absolute:  # another process synced while this one waited
                    return report
            self._sync_locked(absolute, report, progress, deadline)
            return report
        finally:
            if lock is not None:
                lock.release()

    @staticmethod
    def _build_lock(path: Path, wait: float):  # noqa: ANN205 - a held filelock.FileLock, or None
        """The build lock, held, or None when another process kept it for ``wait`` seconds.

        Raises:
            IndexUnavailable: the lock file cannot be opened (a read-only cache folder).
        """
        from filelock import FileLock, Timeout

        lock = FileLock(str(path), timeout=wait)
        try:
            lock.acquire()
        except Timeout:
            return None
        except OSError as err:
            raise IndexUnavailable(f"cannot take the index build lock: {err.strerror}") from None
        return lock

    def _sync_locked(self, absolute: dict[str, tuple[int, int]], report: SyncReport,
                     progress: Callable[[int, int], None] | None, deadline: float | None) -> None:
        """The sync under the build lock: the change list, then batches of ``BATCH`` files."""
        disk = _relative(absolute, self.files.root)
        known = {row[0]: row[1:] for row in self.db.execute(
            "SELECT path, changed_ns, size, hash, created, synced_ns FROM docs")}
        # The reader's own folders first, then the shared ones, other people's last; newest
        # first within each (project/ by month, descending): a build stopped half-way by a
        # hook's deadline serves what this reader sees, recent work first. The order changes no result: an id
        # held by two files goes to the smaller path whichever is read first (``_insert_row``).
        changed = sorted((p for p, stat in disk.items()
                          if p not in known or known[p][:2] != stat or known[p][0] + RACY_NS >= known[p][4]),
                         reverse=True)
        reader = self.reader
        if reader:
            changed.sort(key=lambda p: reading_order(p, reader))  # stable: newest first within each
        vanished = [p for p in known if p not in disk and (not _inside(p) or not (self.files.root / p).exists())]
        if not changed and not vanished:
            self._save_snapshot(absolute)
            return
        gone_hashes = {known[p][2] for p in vanished}
        if len(changed) <= SMALL_SYNC:
            deadline = None
        self.db.execute("BEGIN IMMEDIATE")
        for path in vanished:
            self._delete(path)
            report.removed += 1
        in_batch = len(vanished)
        for done, path in enumerate(changed, 1):
            if progress:
                progress(done, len(changed))
            self._apply(path, known.get(path), gone_hashes, report)
            in_batch += 1
            late = deadline is not None and time.monotonic() >= deadline
            if in_batch >= BATCH or late or done == len(changed):
                self._commit_batch(report)
                in_batch = 0
                if late and done < len(changed):
                    report.pending = len(changed) - done
                    return
                if done < len(changed):
                    self.db.execute("BEGIN IMMEDIATE")
        if in_batch:  # only vanished files
            self._commit_batch(report)
        self._save_snapshot(absolute)

    def _commit_batch(self, report: SyncReport) -> None:
        """End one batch: settle id contests, note the change, commit (a killed build keeps it)."""
        self._retry_duplicates()
        if report.changed:
            self._note_change("sync", report.changed)
        self.db.execute("COMMIT")

    def refresh(self, paths: list[Path]) -> None:
        """Re-index files memcli has just written (or deleted) and patch the snapshot.

        Called after a write under the workspace lock, when the index was synced just
        before it: the next command then finds the snapshot equal to its walk and reads
        nothing. On any database error the snapshot is dropped, so the next command
        does a full comparison instead; it never raises.
        """
        snapshot = self._snapshot()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            for path in paths:
                rel = self.files.rel(path)
                self._delete(rel)
                if path.exists():
                    data, info = path.read_bytes(), path.stat()
                    self._insert(rel, data, info, file_hash(data))
                    if snapshot is not None:
                        snapshot[str(path)] = (info.st_ctime_ns, info.st_size)
                elif snapshot is not None:
                    snapshot.pop(str(path), None)
            self._retry_duplicates()
            self._note_change("write", len(paths))
            self.db.execute("COMMIT")
        except (sqlite3.Error, OSError):
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            snapshot = None
        if snapshot is None:
            self.snapshot_path.unlink(missing_ok=True)
        else:
            self._save_snapshot(snapshot)

    def _note_change(self, kind: str, files: int) -> None:
        """Remember, inside the open transaction, when the index last changed and how many
        files that change took in (``kind``: ``sync`` for files found added, changed or
        removed on disk, ``write`` for files memcli itself just wrote); ``status`` reports it."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('last_change', ?)",
                        (json.dumps({"at": stamp, "kind": kind, "files": files}),))

    # The snapshot: the walk that the index last agreed with, as a marshal file beside it.
    # When a new walk equals it, nothing changed and the database is not read at all.
    # It carries the database's generation, so a rebuilt or replaced index ignores it.

    def _snapshot(self) -> dict | None:
        import marshal

        try:
            generation, stats = marshal.loads(self.snapshot_path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return stats if generation == self.generation else None

    def _save_snapshot(self, stats: dict[str, tuple[int, int]]) -> None:
        """Save the walk the index agrees with; files too recent to trust get size -1, so
        the next walk differs and they are hashed again (``RACY_NS``)."""
        import marshal

        recent = time.time_ns() - RACY_NS
        stats = {p: (m, s if m < recent else -1) for p, (m, s) in stats.items()}
        from memcli.store.files import atomic_write

        try:
            atomic_write(self.snapshot_path, marshal.dumps((self.generation, stats)))
        except OSError:
            self.snapshot_path.unlink(missing_ok=True)

    def _delete(self, path: str) -> None:
        row = self.db.execute("SELECT rowid FROM docs WHERE path = ?", (path,)).fetchone()
        if row:
            self.db.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
            self.db.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))

    def _apply(self, path: str, known: tuple | None, gone_hashes: set[str], report: SyncReport) -> None:
        full = self.files.root / path
        try:  # only a regular file is opened: a link, pipe, folder or unreadable file is one problem row
            data, info, _ = read_file(full, path)
        except InvalidMemoryFile as err:
            try:
                info = full.lstat()
            except OSError:
                return  # vanished between the walk and now: the next sync removes the row
            self._delete(path)
            self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, synced_ns, error) VALUES (?,?,?,?,?,?)",
                            (path, info.st_ctime_ns, info.st_size, "", time.time_ns(), err.reason))
            report.updated += 1
            return
        digest = file_hash(data)
        if known is not None and known[2] == digest and not _dated_by_mtime(known):
            self.db.execute("UPDATE docs SET changed_ns = ?, size = ?, synced_ns = ? WHERE path = ?",
                            (info.st_ctime_ns, info.st_size, time.time_ns(), path))
            if (known[0], known[1]) != (info.st_ctime_ns, info.st_size):
                report.touched += 1
            return
        if known is None and digest in gone_hashes:
            report.moved += 1
        if known is None:
            report.added += 1
        else:
            report.updated += 1
        self._delete(path)
        self._insert(path, data, info, digest)

    def _insert(self, path: str, data: bytes, info: os.stat_result, digest: str) -> None:
        """Index one file's bytes, hashed just now (see ``RACY_NS``)."""
        self._insert_row(path, data, info, digest)
        self.db.execute("UPDATE docs SET synced_ns = ? WHERE path = ?", (time.time_ns(), path))

    def _insert_row(self, path: str, data: bytes, info: os.stat_result, digest: str) -> None:
        base = (path, info.st_ctime_ns, info.st_size, digest)
        try:
            loaded = self.files.load(self.files.root / path, data=data, mtime=info.st_mtime, round_trip=False)
            memory = loaded.memory
        except InvalidMemoryFile as err:
            self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, error, error_line) VALUES (?,?,?,?,?,?)",
                            (*base, err.reason, err.lineno))
            return
        holder = self.db.execute("SELECT path FROM docs WHERE id = ?", (memory.id,)).fetchone()
        if holder is not None:
            if holder[0] < path:
                self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, error) VALUES (?,?,?,?,?)",
                                (*base, duplicate_reason(memory.id, holder[0])))
                return
            self._demote(holder[0], memory.id, path)
        cursor = self.db.execute(
            "INSERT INTO docs (path, changed_ns, size, hash, id, scope, status, category, subject, importance,"
            " pinned, created, updated, expire, idem, norm, tags, search_text, record, error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (*base, *self._columns(memory), loaded.warning))  # a warning: served in part (files.PARTIAL)
        self.db.execute("INSERT INTO fts (rowid, body, subject, tags) VALUES (?,?,?,?)",
                        (cursor.lastrowid, prepare(memory.text), prepare(memory.subject or ""),
                         prepare(" ".join(memory.tags))))

    def _demote(self, path: str, memory_id: str, winner: str) -> None:
        # The loser keeps no memory column (scope, idem, norm, ...): exactly the row a
        # rebuild writes, so no look-up by those columns finds a row without a record.
        row = self.db.execute("SELECT changed_ns, size, hash, synced_ns FROM docs WHERE path = ?", (path,)).fetchone()
        self._delete(path)
        self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, synced_ns, error) VALUES (?,?,?,?,?,?)",
                        (path, *row, duplicate_reason(memory_id, winner)))

    def _retry_duplicates(self) -> None:
        """Re-read files that lost an id contest whose winner is gone or changed; name the current winner."""
        rows = self.db.execute("SELECT path FROM docs WHERE error LIKE 'duplicate id %'").fetchall()
        for (path,) in rows:
            row = self.db.execute("SELECT error FROM docs WHERE path = ?", (path,)).fetchone()
            if row is None or not (row[0] or "").startswith("duplicate id "):
                continue
            error = row[0]
            memory_id = error.split()[2]
            holder = self.db.execute("SELECT path FROM docs WHERE id = ?", (memory_id,)).fetchone()
            if holder is not None and holder[0] < path:
                message = duplicate_reason(memory_id, holder[0])
                if error != message:  # the winner changed (a smaller path took the id)
                    self.db.execute("UPDATE docs SET error = ? WHERE path = ?", (message, path))
            else:
                try:  # regular files only, as every read (a pipe put in its place is never waited on)
                    data, info, _ = read_file(self.files.root / path, path)
                except InvalidMemoryFile:
                    continue  # the next sync sees the change and records the problem
                self._delete(path)
                self._insert(path, data, info, file_hash(data))

    @staticmethod
    def _columns(memory: Memory) -> tuple:
        def stamp(value):  # noqa: ANN001, ANN202
            return value.timestamp() if value else None
        search_text = normalise(" ".join([memory.text, memory.subject or "", *memory.tags]))
        return (memory.id, memory.scope, memory.status, memory.category, memory.subject, memory.importance,
                int(memory.pinned), stamp(memory.created_at), stamp(memory.updated_at), stamp(memory.expire_at),
                memory.provenance.idempotency_key, normalise_text(memory.text),
                json.dumps(memory.tags, ensure_ascii=False), search_text,
                json.dumps(memory.to_dict(), ensure_ascii=False))

    # --- damaged rows (a hand-edited index) ---------------------------------------------

    def damaged(self) -> list[str]:
        """Paths of the rows that do not hold what a sync writes: a ``record`` that is not a
        memory's JSON, a column that differs from it (a NULL, another type, another value),
        or a path outside ``memories/``. Reads every row: for a read that tripped, not for
        every command.
        """
        bad = []
        rows = self.db.execute("SELECT path, id, scope, status, category, subject, importance, pinned, created, "
                               "updated, expire, idem, norm, tags, search_text, record FROM docs "
                               "WHERE id IS NOT NULL OR record IS NOT NULL OR scope IS NOT NULL")
        for path, *columns in rows:
            try:
                sound = tuple(columns) == self._columns(decode(columns[-1])) and _inside(path)
            except Exception:  # noqa: BLE001 - whatever a row makes fail, it is not a row a sync wrote
                sound = False
            if not sound:
                bad.append(path)
        return bad

    def repair(self, paths: list[str]) -> SyncReport:
        """Rebuild these rows from their files: each is marked changed (no hash), so the sync
        that follows reads its file again, and a row whose file is gone is removed.

        Raises:
            IndexUnavailable: the database cannot be written (a read-only cache folder).
        """
        try:
            self.db.execute("BEGIN IMMEDIATE")
            for path in paths:
                if _inside(path):
                    self.db.execute("UPDATE docs SET hash = '', changed_ns = -1 WHERE path = ?", (path,))
                else:  # a path no walk gives: no sync would ever remove it
                    self._delete(path)
            self.db.execute("COMMIT")
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"cannot repair the index: {err}") from None
        self.snapshot_path.unlink(missing_ok=True)
        return self.sync()

    # --- reading -----------------------------------------------------------------------

    def problems(self) -> list[InvalidMemoryFile]:
        """Files that could not be served, in path order."""
        rows = self.db.execute("SELECT path, error, error_line FROM docs WHERE error IS NOT NULL ORDER BY path")
        return [InvalidMemoryFile(path, reason, line) for path, reason, line in rows]

    def status(self) -> dict:
        """Counts for ``index status``: memories, unreadable files, size in bytes, schema, and
        ``last_change`` (``{"at", "kind", "files"}``: when the index last took in changed
        files, or None).

        Every command syncs first, so the index is in step with the files when this runs;
        what the sync just did is in its :class:`SyncReport`.
        """
        memories, problems = self.db.execute("SELECT count(id), count(error) FROM docs").fetchone()
        size = sum(p.stat().st_size for p in (self.path, Path(str(self.path) + "-wal")) if p.exists())
        row = self.db.execute("SELECT value FROM meta WHERE key = 'last_change'").fetchone()
        return {"path": str(self.path), "memories": memories, "problems": problems, "bytes": size,
                "schema": SCHEMA_VERSION, "folder": MEMORIES, "last_change": json.loads(row[0]) if row else None}
