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

Each memory's text is stored once, as it is (issue 21 point 6): in ``texts.body``, a narrow
table keyed by the ``docs`` row (``texts.doc``, its rowid), with the scope, status and length
of the duplicate gate's form (``chars``) beside it and indexed (``texts_dup``), so the gate
reads only the live texts of a scope within a length range, from narrow rows, without a
second copy. ``docs.record`` holds the rest of the memory as JSON (:func:`decode` puts the
two together). The forms derived from the text are computed from it in
SQL where SQLite can, and stored only where it cannot: ``search_text``, the form the
substring search reads (``tokenize.normalise``, blank runs collapsed), only when
``lower(body)`` is not it (a capital outside ASCII, a line break or a run of blanks:
:data:`SEARCH_SQL`); ``norm``, the duplicate gate's form, only when ``search_text`` without
its closing punctuation is not it (Latin accents: :data:`NORM_SQL`). The FTS5 table is
contentless (``content=''``, SQLite's "Contentless Tables"): it holds the inverted index only,
and a row leaves it by the ``'delete'`` command given the same tokens again, computed from the
stored memory (:func:`fts_values`); when what the tokens depend on changes
(``tokenize.fingerprint``), the table is filled again from the rows.

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
from typing import TYPE_CHECKING, Callable, Iterator

from memcli.errors import InvalidMemoryFile
from memcli.index.tokenize import fingerprint, normalise, prepare
from memcli.model import Memory, normalise_text
from memcli.store.files import MEMORIES, MemoryFiles, duplicate_reason, read_file

if TYPE_CHECKING:
    from datetime import datetime

    from memcli.index.fresh import FolderState
    from memcli.store.oslock import FileLock

#: 13: the text once, in ``texts.body`` (``record`` without it; ``search_text`` only where
#: ``lower(body)`` does not give it; ``texts_dup`` for the duplicate gate); 11 and 12 (never
#: released): the text in ``docs.body``, then in a ``texts`` table clustered on the gate's key;
#: 10: no per-row triggers on ``docs`` (each transaction that writes it moves ``changes`` once,
#: ``IndexDB._bump``); 9: a contentless FTS5 table, ``norm`` only where ``search_text`` does not
#: give it; 8: the ``changes`` counter;
#: 7: a partial index of unreadable files; 6: a ``<ulid>-<slug>.md`` file's default id is the ULID.
SCHEMA_VERSION = "13"
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
#: The address space a long-lived process maps the index into (:meth:`IndexDB.map_pages`; 1 GiB,
#: well above a 100,000-memory index's 200 MB; only the pages read use memory).
MMAP_BYTES = 1 << 30
#: Files read per transaction: what a killed build keeps, at most this many files lost.
BATCH = 200
#: A sync with at most this many changed files ignores its deadline (0.2 s on an idle
#: machine): small workspaces and ordinary edits always get a complete answer.
SMALL_SYNC = 500
#: A walk stops at its deadline only past this many files (20 ms on an idle machine).
SMALL_WALK = 5_000
#: Test-only (tests/test_partial_index.py, not a setting): a sync with a deadline stops after this
#: many changed files as if its deadline had come, so a test gets a partial index without a clock.
STOP_AFTER_ENV = "MEMCLI_TEST_SYNC_FILES"

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
    idem TEXT,
    tags TEXT, search_more TEXT, record TEXT,
    error TEXT, error_line INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs(id) WHERE id IS NOT NULL;
CREATE INDEX IF NOT EXISTS docs_scope ON docs(scope, status);
CREATE INDEX IF NOT EXISTS docs_idem ON docs(idem) WHERE idem IS NOT NULL;
CREATE INDEX IF NOT EXISTS docs_error ON docs(path) WHERE error IS NOT NULL;
CREATE TABLE IF NOT EXISTS texts (
    doc INTEGER PRIMARY KEY, scope TEXT NOT NULL, status TEXT NOT NULL, chars INTEGER NOT NULL, id TEXT NOT NULL,
    body TEXT, search_text TEXT, norm TEXT
);
CREATE INDEX IF NOT EXISTS texts_dup ON texts(scope, status, chars);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    body, subject, tags, content = '', tokenize = 'unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'row');
CREATE TABLE IF NOT EXISTS access (id TEXT PRIMARY KEY, hits INTEGER NOT NULL, last_recalled TEXT);
CREATE TABLE IF NOT EXISTS changes (n INTEGER NOT NULL);
INSERT INTO changes SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM changes);
"""
#: Statements that keep ``changes.n`` moving on every change to ``table``, by any process:
#: what a long-lived process keeps between calls (``vectors._rows``) holds while it stays.
#: (Run one by one: a trigger's body holds ``;``.) The ``vectors`` table has them; ``docs`` does
#: not: a row trigger on it made each row written cost twice as much (its expression index
#: ``docs_dup`` among the others, SQLite 3.40; issue 21), so every transaction that writes
#: ``docs`` moves the counter once itself (``IndexDB._bump``), which readers, who see only
#: committed transactions, cannot tell apart.
CHANGE_TRIGGERS = ("CREATE TRIGGER IF NOT EXISTS {table}_{event} AFTER {event} ON {table} "
                   "BEGIN UPDATE changes SET n = n + 1; END")


def change_triggers(table: str) -> list[str]:
    """The ``CHANGE_TRIGGERS`` statements for ``table`` (insert, update, delete)."""
    return [CHANGE_TRIGGERS.format(table=table, event=event) for event in ("INSERT", "UPDATE", "DELETE")]


#: The substring search's form of a memory's text (``tokenize.normalise``, blank runs
#: collapsed), in SQL over ``texts t``: SQLite's ``lower`` folds ASCII letters only, so the
#: form is stored where that is not enough (``IndexDB._columns``).
SEARCH_SQL = "coalesce(t.search_text, lower(t.body))"
#: The duplicate gate's form of a memory's text (``model.normalise_text``), in SQL over ``texts t``.
NORM_SQL = f"coalesce(t.norm, rtrim({SEARCH_SQL}, ' .!。！'))"
#: The ``texts`` row of a ``docs d`` row, in a query's FROM clause (LEFT: a row without one, in a
#: hand-edited index, decodes as damaged and is repaired, never silently left out).
TEXT_JOIN = "LEFT JOIN texts t ON t.doc = d.rowid"
#: The index a context block's pool reads (``search.FtsRetriever._all``: ``ORDER BY pinned,
#: importance, updated, id LIMIT 400`` walks it in order and stops, instead of sorting every
#: eligible row) and its count (``FtsRetriever.count``: covering, no row read). Made with the
#: tables, and by the first full sync of an index made before it existed (``IndexDB.pool_index``);
#: without it the same queries scan and sort, as before.
POOL_INDEX = ("CREATE INDEX IF NOT EXISTS docs_pool"
              " ON docs(status, pinned DESC, importance DESC, updated DESC, id, scope, expire)")


def fts_values(memory: Memory) -> tuple[str, str, str]:
    """What the FTS5 table is given for ``memory``: its text, subject and tags, tokenized."""
    return prepare(memory.text), prepare(memory.subject or ""), prepare(" ".join(memory.tags))


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


def decode(record: object, body: object) -> Memory:
    """The memory a row's ``record`` and ``body`` columns hold, checked as a sync writes them.

    Args:
        record: the memory's JSON without its text (:meth:`IndexDB._columns`).
        body: the memory's text.

    Raises:
        DamagedRow: ``record`` is not a memory's JSON, ``body`` is not text, or a field has a
            type or value no memory file gives (a NULL scope, an importance of "high").
    """
    from memcli.model import CATEGORIES, STATUSES, check_importance, check_scope, from_dict

    try:
        data = json.loads(record)  # type: ignore[arg-type]
        if not isinstance(body, str) or "text" in data:
            raise TypeError("no text, or a second one")
        data["text"] = body
        memory = from_dict(data)
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


def walk(files: MemoryFiles, deadline: float | None = None,
         folders: dict[str, tuple[int, int]] | None = None) -> dict[str, tuple[int, int]] | None:
    """Every memory file as ``absolute path -> (changed_ns, size)``; hidden entries skipped;
    None when ``deadline`` (a ``time.monotonic()`` instant) passed before the walk ended.
    ``folders``, when given, receives every folder listed as ``absolute path -> (mtime_ns,
    inode)`` (``fresh.folder_key``), taken before the folder is listed.

    ``changed_ns`` is the inode change time (ctime), not the modification time: ``touch -r``,
    ``cp -p`` or ``rsync -t`` can set a file's mtime back, never its ctime. A symbolic link
    is listed by its own ``lstat`` and never followed.

    The full walk (writes, `index status`, the walk after a read): one ``scandir`` per folder and one ``stat`` per file.
    """
    return walk_from(str(files.base), deadline, folders)


def walk_from(stack_base: str, deadline: float | None = None,
              folders: dict[str, tuple[int, int]] | None = None) -> dict[str, tuple[int, int]] | None:
    """:func:`walk` from the folder ``stack_base`` (an absolute path)."""
    out: dict[str, tuple[int, int]] = {}
    stack = [stack_base]
    if folders is not None:
        try:
            info = os.lstat(stack_base)
            folders[stack_base] = (info.st_mtime_ns, info.st_ino)
        except OSError:
            pass
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
                            if folders is not None:
                                info = entry.stat(follow_symlinks=False)
                                folders[entry.path] = (info.st_mtime_ns, info.st_ino)
                    except OSError:
                        continue
        except OSError:
            if folders is not None:
                folders.pop(folder, None)  # no key: the walk after each read lists it again
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
    probe, the lock ``store.oslock`` takes on Unix; False where it cannot be told)."""
    try:
        import fcntl
    except ImportError:  # not Unix: let the lock itself decide
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


#: What lets :func:`read_row` keep a row without parsing its file: ``(hash, created, changed_ns,
#: size)`` of the row; ``created`` is its ``createdAt`` (seconds) when that may be the file's
#: modification time (:func:`_dated_by_mtime`), else None.
Same = tuple[str, float | None, int, int]


def _same_as(known: tuple | None) -> Same | None:
    """How a changed file must still be for its row to be kept as it is (only its time
    recorded): the row's hash; and, when the row's ``createdAt`` may be the file's
    modification time, either that time (whole seconds, what a parse takes it from) or the
    row's ``stat`` (the file's ``ctime`` did not move, so neither did its mtime: the racy
    re-hash of a file just indexed, as the folder check does it). None: no row."""
    if known is None:
        return None
    return known[2], (known[3] if _dated_by_mtime(known) else None), known[0], known[1]


def read_row(files: MemoryFiles, path: str, same: Same | None) -> tuple:
    """Read, hash and parse one changed file, touching no database (a build worker runs it).

    Args:
        path: workspace-relative, ``/`` separated.
        same: see :func:`_same_as`: when the file still matches it, it is not parsed (``("same", ...)``).

    Returns:
        ``("gone",)``; ``("unreadable", changed_ns, size, reason)``; ``("same", changed_ns,
        size, hash, read_ns)``; or what :func:`parse_row` gives (``read_ns``: when it was read).
    """
    full = files.root / path
    try:  # only a regular file is opened: a link, pipe, folder or unreadable file is one problem row
        data, info, _ = read_file(full, path)
    except InvalidMemoryFile as err:
        try:
            info = full.lstat()
        except OSError:
            return ("gone",)
        return ("unreadable", info.st_ctime_ns, info.st_size, err.reason)
    read_ns = time.time_ns()
    digest = file_hash(data)
    if same is not None and digest == same[0] and (same[1] is None or int(info.st_mtime) == same[1]
                                                  or (info.st_ctime_ns, info.st_size) == same[2:]):
        return ("same", info.st_ctime_ns, info.st_size, digest, read_ns)
    return parse_row(files, path, data, info, digest, read_ns)


def parse_row(files: MemoryFiles, path: str, data: bytes, info: os.stat_result, digest: str, read_ns: int) -> tuple:
    """One file's row, ready to write: ``("invalid", changed_ns, size, hash, read_ns, reason,
    line)`` or ``("memory", changed_ns, size, hash, read_ns, columns, warning, fts values)``
    (``IndexDB._columns`` and :func:`fts_values`)."""
    base = (info.st_ctime_ns, info.st_size, digest, read_ns)
    try:
        loaded = files.load(files.root / path, data=data, mtime=info.st_mtime, round_trip=False, rel=path)
    except InvalidMemoryFile as err:
        return ("invalid", *base, err.reason, err.lineno)
    memory = loaded.memory
    return ("memory", *base, IndexDB._columns(memory), loaded.warning, fts_values(memory))


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
        self._kept_snapshot: tuple[tuple[int, int, int], tuple] | None = None  # see _snapshot
        #: ``time.time_ns()`` when the last :meth:`quick_sync` began (``fresh.finish_read`` records it).
        self.read_started = 0
        #: Whether the last :meth:`quick_sync` walked every file (no walk is then owed).
        self.walked = False
        self._fts_checked = False  # the FTS5 table's tokens checked against this process's (_fts_ready)
        self._pool_ready = False  # POOL_INDEX made sure of (pool_index)
        self._fts_stale = False  # a row's entries could not be removed exactly: refill before commit
        try:  # one connection per thread at a time: a warm server serialises its calls
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                      check_same_thread=False)
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
                for table in ("vocab", "fts", "texts", "docs", "meta", "access", "changes"):
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in [*_SCHEMA.split(";"), POOL_INDEX]:
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                self.db.execute("INSERT INTO meta VALUES ('tokenizer', ?)", (fingerprint(),))
                self.db.execute("INSERT INTO meta VALUES ('generation', ?)", (os.urandom(8).hex(),))
            self.db.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def map_pages(self) -> None:
        """Read the database through memory-mapped I/O (SQLite's ``PRAGMA mmap_size``, "Memory-Mapped
        I/O"): a long-lived process's queries then read pages without a system call each (a BM25
        query matching 9,000 of 100,000 memories: 45 -> 19 ms; the substring tier's scan: 143 -> 68 ms).
        Only for a long-lived process (the MCP server): a page it reads counts in its resident size,
        so a command that scans the table would grow with the store. Safe against memcli's own
        rebuild, which deletes the file (the mapping keeps the old one) and never truncates it.
        Never raises (a build without mmap support reads as before)."""
        try:
            self.db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        except sqlite3.Error:
            pass

    def pool_index(self) -> None:
        """Make sure of :data:`POOL_INDEX` (an index made before it existed has none: about 1 s
        at 100,000 memories, once); once per process. Never raises: a busy or read-only
        database is read without it."""
        if self._pool_ready:
            return
        self._pool_ready = True
        try:
            if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'docs_pool'").fetchone():
                return
            self.db.execute(POOL_INDEX)
        except sqlite3.Error:
            pass

    # --- sync --------------------------------------------------------------------------

    def sync(self, progress: Callable[[int, int], None] | None = None, deadline: float | None = None,
             wait: float = LOCK_WAIT, locked: bool = False) -> SyncReport:
        """Bring the index in step with the files by a walk of every file (see the module docstring).

        Args:
            progress: called as ``progress(done, total)`` while changed files are read.
            deadline: a ``time.monotonic()`` instant; the sync stops reading files then
                (after at least one), commits, and reports the rest as ``pending``. A sync
                of at most ``SMALL_SYNC`` changed files ignores it.
            wait: seconds to wait for another process's build lock; then ``busy``.
            locked: the caller holds the build lock already (``fresh.spawn_walk``'s child).

        Raises:
            IndexUnavailable: the database could not be read or written.
        """
        try:
            report = self._sync(progress, deadline, wait, locked)
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"sync failed: {err}") from None
        if not report.busy and not report.pending:  # a whole walk (index status, build, the watcher's start)
            self.pool_index()
        return report

    def quick_sync(self, progress: Callable[[int, int], None] | None = None, deadline: float | None = None,
                   wait: float = LOCK_WAIT) -> SyncReport:
        """Bring the index in step with what a read must see, without a walk of every file
        (``memcli.index.fresh``): the store's watcher when it answers ``clean`` in time
        (nothing else to do then); else the folders' mtimes, the racy files, and a full walk
        only when one is owed (a read answered since the last full walk began) and none runs.

        Sets ``self.read_started`` (``time.time_ns()`` at the start): the caller records it
        with ``fresh.finish_read`` once the answer is out, and starts the walk it owes.
        Arguments and errors as :meth:`sync`.
        """
        try:
            return self._quick(progress, deadline, wait)
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"sync failed: {err}") from None

    def _sync(self, progress: Callable[[int, int], None] | None, deadline: float | None, wait: float,
              locked: bool = False) -> SyncReport:
        lock_path = self.path.with_name(BUILD_LOCK)
        lock = None
        if not locked and build_running(lock_path):  # wait for it before walking: 100,000 files take seconds
            lock = self._build_lock(lock_path, wait)
            if lock is None:
                return SyncReport(busy=True)
        try:
            began = time.time_ns()
            folders: dict[str, tuple[int, int]] = {}
            absolute = walk(self.files, deadline, folders)
            if absolute is None:  # a hook's deadline came first (a huge tree, a loaded machine)
                return SyncReport(pending=-1)
            report = SyncReport(files=len(absolute))
            snapshot = self._snapshot()
            if snapshot == absolute:
                self._walked(began, folders, report.files)
                return report
            if lock is None and not locked:
                lock = self._build_lock(lock_path, wait)
                if lock is None:
                    report.busy = True
                    return report
                snapshot = self._snapshot()
                if snapshot == absolute:  # another process synced while this one waited
                    self._walked(began, folders, report.files)
                    return report
            if self._sync_locked(absolute, report, progress, deadline, snapshot):
                self._walked(began, folders, report.files)
            return report
        finally:
            if lock is not None:
                lock.release()

    def _walked(self, began: int, folders: dict[str, tuple[int, int]], files: int) -> None:
        """Record a complete full walk that began at ``began`` (``time.time_ns()``) and saw
        ``folders`` and ``files`` memory files: the folder state of ``memcli.index.fresh``,
        with the racy rows."""
        from memcli.index import fresh

        old = fresh.load_state(self.path, self.generation)
        if old is not None and old.walked_ns > began:
            return  # a later walk has recorded itself meanwhile
        root = self.files.root
        racy = [str(root / p) for (p,) in self.db.execute(
            "SELECT path FROM docs WHERE changed_ns + ? >= synced_ns", (RACY_NS,))]
        fresh.save_state(self.path, fresh.FolderState(self.generation, began, folders, racy, files))

    def _quick(self, progress: Callable[[int, int], None] | None, deadline: float | None,
               wait: float) -> SyncReport:
        from memcli.index import fresh

        self.read_started = time.time_ns()
        self.walked = False
        cache = self.path.parent
        lock_path = self.path.with_name(BUILD_LOCK)
        state = fresh.load_state(self.path, self.generation)
        if state is not None and state.inline:
            state = None  # a small store: walked whole, here
        elif state is not None and fresh.watched(self.path):
            self.walked = True  # the watcher took in every change made before it answered
            return SyncReport()
        elif state is not None and fresh.last_read(cache) > state.walked_ns:
            if not build_running(lock_path) and not fresh.spawn_walk(self.files.root, self.path):
                state = None  # the walk that read owed never ran, and cannot be started now: walk here
            else:  # it runs (or was just started: a large store's walk is not done in a read, whose
                # memory would grow with it, 106 MB at 100,000 files): wait for it
                lock = self._build_lock(lock_path, wait)
                if lock is None:
                    return SyncReport(busy=True)
                lock.release()
                state = fresh.load_state(self.path, self.generation)
                if state is not None and fresh.last_read(cache) > state.walked_ns:
                    state = None
        if state is None:
            report = self._sync(progress, deadline, wait)
            if report.complete:
                self.walked = True
            return report
        return self._check(state, progress, deadline, wait)

    def _check(self, state: FolderState, progress: Callable[[int, int], None] | None, deadline: float | None,
               wait: float) -> SyncReport:
        """The hot path of :meth:`quick_sync` over ``state`` (a ``fresh.FolderState``)."""
        from memcli.index import fresh

        report = SyncReport()
        moved: list[str] = []
        for folder, key in state.folders.items():
            try:
                if fresh.folder_key(os.lstat(folder)) != key:
                    moved.append(folder)
            except OSError:
                moved.append(folder)
        if not moved and not state.racy:
            return report
        root = self.files.root
        prefix = len(str(root)) + 1
        disk: dict[str, tuple[int, int]] = {}  # absolute path -> (ctime_ns, size), of the folders listed
        keys: dict[str, tuple[int, int]] = {}  # the new keys of the folders listed
        gone: list[str] = []  # folders that are no more
        scanned: set[str] = set()
        known: dict[str, tuple] = {}
        for folder in moved:
            if folder in scanned:
                continue
            try:
                info = os.lstat(folder)
                if not os.path.isdir(folder) or os.path.islink(folder):
                    raise FileNotFoundError(folder)
            except OSError:
                gone.append(folder)
                known.update(self._rows_under(folder[prefix:].replace(os.sep, "/"), deep=True))
                continue
            # a folder the state knows: list its own files (its known subfolders have their own key)
            keys[folder] = fresh.folder_key(info)
            scanned.add(folder)
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        name = entry.name
                        if name[0] == ".":
                            continue
                        if name.endswith(".md"):
                            st = entry.stat(follow_symlinks=False)
                            disk[entry.path] = (st.st_ctime_ns, st.st_size)
                        elif entry.is_dir(follow_symlinks=False) and entry.path not in state.folders:
                            sub: dict[str, tuple[int, int]] = {}  # a new folder: walked whole
                            disk.update(walk_from(entry.path, folders=sub) or {})
                            keys.update(sub)
                            scanned.update(sub)
                            known.update(self._rows_under(entry.path[prefix:].replace(os.sep, "/"), deep=True))
            except OSError:  # an unlistable folder is a problem row, as a full walk records it: walk in full
                report = self._sync(progress, deadline, wait)
                if report.complete:
                    self.walked = True
                return report
            known.update(self._rows_under(folder[prefix:].replace(os.sep, "/"), deep=False))
        for path in state.racy:
            if os.path.dirname(path) in scanned or any(path.startswith(g + os.sep) for g in gone):
                continue
            try:
                st = os.lstat(path)
                disk[path] = (st.st_ctime_ns, st.st_size)
            except OSError:
                pass
            rel = path[prefix:].replace(os.sep, "/")
            row = self.db.execute("SELECT path, changed_ns, size, hash, created, synced_ns FROM docs WHERE path = ?",
                                  (rel,)).fetchone()
            if row is not None:
                known[row[0]] = row[1:]
        changed, vanished, settle, racy, now = self._differ(disk, known)
        if not changed and not vanished and not settle:
            if keys or gone or racy != state.racy:
                self._save_checked(state, keys, gone, racy, wait=0.0)
            return report
        lock = self._build_lock(self.path.with_name(BUILD_LOCK), wait)
        if lock is None:
            report.busy = True
            return report
        try:
            done = self._take_in(changed, vanished, settle, now, known, report, progress, deadline)
            if done:
                racy += [str(root / p) for p in changed]
                self._save_checked(state, keys, gone, racy, wait=None)
            else:
                report.files = self.db.execute("SELECT count(*) FROM docs").fetchone()[0] + report.pending
        finally:
            lock.release()
        return report

    def _differ(self, disk: dict[str, tuple[int, int]], known: dict[str, tuple]
                ) -> tuple[list[str], list[str], list[str], list[str], int]:
        """What a check finds from ``disk`` (absolute path -> ``(ctime_ns, size)`` of the files
        looked at) and ``known`` (workspace-relative path -> row, of the same files): the files
        to read (new, changed, or racy and hashing otherwise now), the rows whose file is gone,
        the racy rows to settle (same hash, old enough now), the files still racy (absolute),
        and the instant (``time.time_ns()``) they were judged."""
        root = self.files.root
        rel_disk = _relative(disk, root)
        changed = [p for p, stat in rel_disk.items() if p not in known or known[p][:2] != stat]
        vanished = [p for p in known if p not in rel_disk and (not _inside(p) or not (root / p).exists())]
        settle: list[str] = []
        racy: list[str] = []
        now = time.time_ns()
        for p, stat in rel_disk.items():  # same stat, hashed too soon after its change: hash it again
            row = known.get(p)
            if row is None or row[:2] != stat or row[0] + RACY_NS < row[4]:
                continue
            try:
                data, _, _ = read_file(root / p, p)
            except InvalidMemoryFile:
                changed.append(p)
                continue
            if file_hash(data) != row[2]:
                changed.append(p)
            elif now > row[0] + RACY_NS:
                settle.append(p)
            else:
                racy.append(str(root / p))
        return changed, vanished, settle, racy, now

    def _take_in(self, changed: list[str], vanished: list[str], settle: list[str], now: int,
                 known: dict[str, tuple], report: SyncReport, progress: Callable[[int, int], None] | None,
                 deadline: float | None) -> bool:
        """Under the build lock: index what :meth:`_differ` found (the reader's own files first)
        and settle the racy rows; True when every change was taken in (see ``_apply_changes``)."""
        changed.sort(reverse=True)
        reader = self.reader
        if reader:
            changed.sort(key=lambda p: reading_order(p, reader))
        done = self._apply_changes(changed, vanished, known, report, progress, deadline)
        if settle:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("UPDATE docs SET synced_ns = ? WHERE path = ?", [(now, p) for p in settle])
            self._bump()
            self.db.execute("COMMIT")
        if report.changed or report.touched:
            self.snapshot_path.unlink(missing_ok=True)  # the full walk compares every row again
        return done

    def watched(self, paths: list[str], began: int) -> SyncReport | None:
        """For the store's watcher (``index.watcher``), whose inotify watch reported ``paths``
        (absolute) changed since its last call and nothing else since its last full walk:
        index those files and record a complete full walk begun at ``began`` (``time.time_ns()``,
        taken before the watch was read), under the build lock, as any walk.

        Returns:
            what changed, or None when the walk cannot be recorded (no folder state of this
            index to move on, a small store's, or the build lock held for ``LOCK_WAIT``): the
            reads then keep to their own check.

        Raises:
            IndexUnavailable: the database could not be read or written, or the lock file opened.
        """
        from memcli.index import fresh

        lock = self._build_lock(self.path.with_name(BUILD_LOCK), LOCK_WAIT)
        if lock is None:
            return None
        try:
            state = fresh.load_state(self.path, self.generation)
            if state is None or state.inline:
                return None
            report = SyncReport()
            if paths:
                prefix = len(str(self.files.root)) + 1
                disk: dict[str, tuple[int, int]] = {}
                known: dict[str, tuple] = {}
                for path in paths:
                    try:
                        info = os.lstat(path)
                        disk[path] = (info.st_ctime_ns, info.st_size)
                    except OSError:
                        pass
                    row = self.db.execute("SELECT path, changed_ns, size, hash, created, synced_ns FROM docs "
                                          "WHERE path = ?", (path[prefix:].replace(os.sep, "/"),)).fetchone()
                    if row is not None:
                        known[row[0]] = row[1:]
                changed, vanished, settle, racy, now = self._differ(disk, known)
                if changed or vanished or settle:
                    self._take_in(changed, vanished, settle, now, known, report, None, None)
                root = self.files.root
                looked = set(paths)
                state.racy = sorted({*(p for p in state.racy if p not in looked), *racy,
                                     *(str(root / p) for p in changed)})
            state.walked_ns = max(state.walked_ns, began)
            fresh.save_state(self.path, state)
            return report
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"sync failed: {err}") from None
        finally:
            lock.release()

    def _rows_under(self, folder: str, deep: bool) -> dict[str, tuple]:
        """The rows of the files in ``folder`` (workspace-relative), ``deep``: in its subfolders too."""
        low, high = folder + "/", folder + "0"  # "0" follows "/" in code point order
        rows = self.db.execute("SELECT path, changed_ns, size, hash, created, synced_ns FROM docs "
                               "WHERE path >= ? AND path < ?", (low, high))
        return {r[0]: r[1:] for r in rows if deep or "/" not in r[0][len(low):]}

    def _save_checked(self, state: FolderState, keys: dict[str, tuple[int, int]], gone: list[str], racy: list[str],
                      wait: float | None) -> None:
        """Save the folder state after a hot check: ``keys`` replace the folders listed, ``gone``
        (and everything under them) leave, ``racy`` is the new racy list. ``wait`` 0: only if the
        build lock is free now (else the next read lists those folders again); None: it is held."""
        from memcli.index import fresh

        lock = None
        if wait is not None:
            lock = self._build_lock(self.path.with_name(BUILD_LOCK), wait)
            if lock is None:
                return
        try:
            current = fresh.load_state(self.path, self.generation)
            if current is None:
                return
            folders = current.folders
            for folder in gone:
                for name in [f for f in folders if f == folder or f.startswith(folder + os.sep)]:
                    del folders[name]
            folders.update(keys)
            current.racy = sorted(set(racy))
            fresh.save_state(self.path, current)
        finally:
            if lock is not None:
                lock.release()

    @staticmethod
    def _build_lock(path: Path, wait: float) -> FileLock | None:
        """The build lock, held, or None when another process kept it for ``wait`` seconds.

        Raises:
            IndexUnavailable: the lock file cannot be opened (a read-only cache folder).
        """
        from memcli.store.oslock import FileLock, Timeout

        lock = FileLock(str(path), timeout=wait)
        try:
            lock.acquire(poll_interval=0.005)  # a read waiting for the walk after the last one: 5 ms steps, not 50
        except Timeout:
            return None
        except OSError as err:
            raise IndexUnavailable(f"cannot take the index build lock: {err.strerror}") from None
        return lock

    def _sync_locked(self, absolute: dict[str, tuple[int, int]], report: SyncReport,
                     progress: Callable[[int, int], None] | None, deadline: float | None,
                     snapshot: dict | None = None) -> bool:
        """The sync under the build lock: the change list, then batches of ``BATCH`` files;
        True when every change was taken in. With the ``snapshot`` the index agreed with,
        only the rows of the files whose ``stat`` differs from it are compared (a write's own
        file, marked racy there, no longer makes the next walk read every row)."""
        disk = _relative(absolute, self.files.root)
        columns = "SELECT path, changed_ns, size, hash, created, synced_ns FROM docs"
        differ = None
        if snapshot is not None:
            differ = [p for p, stat in absolute.items() if snapshot.get(p) != stat]
            differ += [p for p in snapshot if p not in absolute]
        if differ is not None and len(differ) <= SMALL_SYNC:
            rel = _relative(dict.fromkeys(differ, (0, 0)), self.files.root)
            known: dict[str, tuple] = {}
            for path in rel:
                row = self.db.execute(columns + " WHERE path = ?", (path,)).fetchone()
                if row is not None:
                    known[row[0]] = row[1:]
            disk_known = {p: disk[p] for p in rel if p in disk}
        else:
            known = {row[0]: row[1:] for row in self.db.execute(columns)}
            disk_known = disk
        # The reader's own folders first, then the shared ones, other people's last; newest
        # first within each (project/ by month, descending): a build stopped half-way by a
        # hook's deadline serves what this reader sees, recent work first. The order changes no result: an id
        # held by two files goes to the smaller path whichever is read first (``_store_row``).
        changed = sorted((p for p, stat in disk_known.items()
                          if p not in known or known[p][:2] != stat or known[p][0] + RACY_NS >= known[p][4]),
                         reverse=True)
        reader = self.reader
        if reader:
            changed.sort(key=lambda p: reading_order(p, reader))  # stable: newest first within each
        vanished = [p for p in known if p not in disk and (not _inside(p) or not (self.files.root / p).exists())]
        if not changed and not vanished:
            self._save_snapshot(absolute)
            return True
        if not self._apply_changes(changed, vanished, known, report, progress, deadline):
            return False
        self._save_snapshot(absolute)
        return True

    def _apply_changes(self, changed: list[str], vanished: list[str], known: dict[str, tuple], report: SyncReport,
                       progress: Callable[[int, int], None] | None, deadline: float | None) -> bool:
        """Delete the ``vanished`` rows and read the ``changed`` files, in batches of ``BATCH``
        (``known``: their rows before); False when ``deadline`` stopped it (``report.pending``).
        Many changed files are read by worker processes (``memcli.index.parallel``)."""
        from memcli.index import parallel

        gone_hashes = {known[p][2] for p in vanished}
        forced = os.environ.get(STOP_AFTER_ENV, "") if deadline is not None else ""
        stop_after = int(forced) if forced.isdigit() else None
        if len(changed) <= SMALL_SYNC:
            deadline = None
        self.db.execute("BEGIN IMMEDIATE")
        for path in vanished:
            self._delete(path)
            report.removed += 1
        in_batch = len(vanished)
        with parallel.read_ahead(self.files, [(p, _same_as(known.get(p))) for p in changed]) as reads:
            for done, path in enumerate(changed, 1):
                if progress:
                    progress(done, len(changed))
                self._apply(path, known.get(path), gone_hashes, report, None if reads is None else next(reads))
                in_batch += 1
                late = deadline is not None and time.monotonic() >= deadline or done == stop_after
                if in_batch >= BATCH or late or done == len(changed):
                    self._commit_batch(report)
                    in_batch = 0
                    if late and done < len(changed):
                        report.pending = len(changed) - done
                        return False
                    if done < len(changed):
                        self.db.execute("BEGIN IMMEDIATE")
        if in_batch or not changed:  # only vanished files
            self._commit_batch(report)
        return True

    def _commit_batch(self, report: SyncReport) -> None:
        """End one batch: settle id contests, note the change, commit (a killed build keeps it)."""
        self._retry_duplicates()
        self._refill_if_needed()
        if report.changed:
            self._note_change("sync", report.changed)
        self._bump()
        self.db.execute("COMMIT")

    def _bump(self) -> None:
        """Move ``changes.n`` once, inside a transaction that wrote ``docs`` (see :data:`CHANGE_TRIGGERS`)."""
        self.db.execute("UPDATE changes SET n = n + 1")

    def refresh(self, paths: list[Path]) -> None:
        """Re-index files memcli has just written (or deleted) and mark them racy.

        Called after a write under the workspace lock, when the index was synced just
        before it. The files become racy in the folder state (``memcli.index.fresh``): the
        next read hashes them again, it does not compare every row. The snapshot (what a
        full walk compares with) is patched only for a store small enough that every read
        walks it whole (``FolderState.inline``); in a larger one the next full walk, which
        runs after a read has answered, finds these paths' ``stat`` differ from the
        snapshot and compares only their rows. On any database error the snapshot is
        dropped, so the next walk compares every row instead; it never raises.
        """
        from memcli.index import fresh

        state = fresh.load_state(self.path, self.generation)
        snapshot = self._snapshot() if state is None or state.inline else None
        if snapshot is not None:
            snapshot = dict(snapshot)  # patched below; the kept one stays as the file holds it
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
            self._refill_if_needed()
            self._note_change("write", len(paths))
            self._bump()
            self.db.execute("COMMIT")
        except (sqlite3.Error, OSError):
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            self.snapshot_path.unlink(missing_ok=True)
            return
        if snapshot is not None:
            self._save_snapshot(snapshot)
        if state is not None:  # hashed just now: the next reads hash them again until they settle
            state.racy = sorted({*state.racy, *(str(p) for p in paths if p.exists())})
            fresh.save_state(self.path, state)

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
        """The snapshot's stats (path -> (ctime_ns, size)), or None; kept in this object while
        the file is the same one (inode, mtime and size of the descriptor read), so a write's
        sync and its ``refresh`` load a large snapshot once (callers never change the dict
        returned: ``refresh`` patches a copy)."""
        import marshal

        try:
            with open(self.snapshot_path, "rb") as handle:
                info = os.fstat(handle.fileno())
                key = (info.st_ino, info.st_mtime_ns, info.st_size)
                if self._kept_snapshot is not None and self._kept_snapshot[0] == key:
                    generation, stats = self._kept_snapshot[1]
                else:
                    generation, stats = marshal.loads(handle.read())
                    self._kept_snapshot = (key, (generation, stats))
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return stats if generation == self.generation and isinstance(stats, dict) else None

    def _save_snapshot(self, stats: dict[str, tuple[int, int]]) -> None:
        """Save the walk the index agrees with; files too recent to trust get size -1, so
        the next walk differs and they are hashed again (``RACY_NS``)."""
        import marshal

        recent = time.time_ns() - RACY_NS
        stats = {p: (m, s if m < recent else -1) for p, (m, s) in stats.items()}
        from memcli.store.files import atomic_write

        try:
            atomic_write(self.snapshot_path, marshal.dumps((self.generation, stats)), durable=False)  # a cache
        except OSError:
            self.snapshot_path.unlink(missing_ok=True)

    def _delete(self, path: str) -> None:
        row = self.db.execute("SELECT d.rowid, d.record, t.body FROM docs d LEFT JOIN texts t ON t.doc = d.rowid"
                              " WHERE d.path = ?", (path,)).fetchone()
        if row:
            if row[1] is not None:  # only a row with a record has FTS5 entries
                self._fts_forget(row[0], row[1], row[2])
            self.db.execute("DELETE FROM texts WHERE doc = ?", (row[0],))
            self.db.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))

    def _fts_ready(self) -> None:
        """Before the first change to the FTS5 table in this connection: when the tokens would
        now come out otherwise than when the table was filled (``tokenize.fingerprint``), fill it
        again from the records (inside the caller's transaction)."""
        if self._fts_checked:
            return
        now = fingerprint()
        row = self.db.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
        if row is None or row[0] != now:
            self._refill_fts()
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer', ?)", (now,))
        self._fts_checked = True

    def _fts_forget(self, rowid: int, record: object, body: object) -> None:
        """Remove a row's FTS5 entries: the ``'delete'`` command with the tokens it was given.
        A record that no longer decodes (a hand-edited index) cannot say them: the table is
        filled again from the records before the transaction ends (``_refill_if_needed``)."""
        self._fts_ready()
        try:
            values = fts_values(decode(record, body))
        except DamagedRow:
            self._fts_stale = True
            return
        self.db.execute("INSERT INTO fts (fts, rowid, body, subject, tags) VALUES ('delete', ?, ?, ?, ?)",
                        (rowid, *values))

    def _refill_fts(self) -> None:
        """Empty the FTS5 table and give it every row's record again (rows whose record does
        not decode get none: ``damaged`` finds them)."""
        self.db.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
        rows = self.db.execute("SELECT d.rowid, d.record, t.body FROM docs d LEFT JOIN texts t ON t.doc = d.rowid"
                               " WHERE d.record IS NOT NULL").fetchall()
        for rowid, record, body in rows:
            try:
                values = fts_values(decode(record, body))
            except DamagedRow:
                continue
            self.db.execute("INSERT INTO fts (rowid, body, subject, tags) VALUES (?,?,?,?)", (rowid, *values))
        self._fts_stale = False

    def _refill_if_needed(self) -> None:
        """Inside a transaction, before it commits: fill the FTS5 table again when a removal could
        not be made exactly (see :meth:`_fts_forget`)."""
        if self._fts_stale:
            self._refill_fts()

    def _apply(self, path: str, known: tuple | None, gone_hashes: set[str], report: SyncReport,
               read: tuple | None = None) -> None:
        """Take one changed file in: ``read`` is what :func:`read_row` gave for it (in a build
        worker), else it is read here."""
        if read is None:
            read = read_row(self.files, path, _same_as(known))
        kind = read[0]
        if kind == "gone":
            return  # vanished between the walk and now: the next sync removes the row
        if kind == "unreadable":  # a link, pipe, folder or unreadable file is one problem row
            self._delete(path)
            self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, synced_ns, error) VALUES (?,?,?,?,?,?)",
                            (path, read[1], read[2], "", time.time_ns(), read[3]))
            report.updated += 1
            return
        changed_ns, size, digest, read_ns = read[1:5]
        if kind == "same":
            self.db.execute("UPDATE docs SET changed_ns = ?, size = ?, synced_ns = ? WHERE path = ?",
                            (changed_ns, size, read_ns, path))
            if known is not None and (known[0], known[1]) != (changed_ns, size):
                report.touched += 1
            return
        if known is None and digest in gone_hashes:
            report.moved += 1
        if known is None:
            report.added += 1
        else:
            report.updated += 1
        self._delete(path)
        self._store_row(path, read, read_ns)

    def _insert(self, path: str, data: bytes, info: os.stat_result, digest: str) -> None:
        """Index one file's bytes, hashed just now (see ``RACY_NS``)."""
        self._store_row(path, parse_row(self.files, path, data, info, digest, 0), time.time_ns())

    def _store_row(self, path: str, parsed: tuple, synced_ns: int) -> None:
        """Write the row of one file as :func:`parse_row` gave it (``memory`` or ``invalid``),
        hashed at ``synced_ns`` (``time.time_ns()``, see ``RACY_NS``); an id another file holds
        goes to the smaller path, the other becomes a problem row."""
        base = (path, *parsed[1:4], synced_ns)
        if parsed[0] == "invalid":
            self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, synced_ns, error, error_line)"
                            " VALUES (?,?,?,?,?,?,?)", (*base, parsed[5], parsed[6]))
            return
        columns, text, warning, values = parsed[5][:-1], parsed[5][-1], parsed[6], parsed[7]
        memory_id = columns[0]
        holder = self.db.execute("SELECT path FROM docs WHERE id = ?", (memory_id,)).fetchone()
        if holder is not None:
            if holder[0] < path:
                self.db.execute("INSERT INTO docs (path, changed_ns, size, hash, synced_ns, error)"
                                " VALUES (?,?,?,?,?,?)", (*base, duplicate_reason(memory_id, holder[0])))
                return
            self._demote(holder[0], memory_id, path)
        cursor = self.db.execute(
            "INSERT INTO docs (path, changed_ns, size, hash, synced_ns, id, scope, status, category, subject,"
            " importance, pinned, created, updated, expire, idem, tags, search_more, record, error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (*base, *columns, warning))  # a warning: served in part (files.PARTIAL)
        # OR REPLACE: a hand-edited index may hold a texts row whose docs row is gone (its rowid reused)
        self.db.execute("INSERT OR REPLACE INTO texts (scope, status, chars, doc, id, body, search_text, norm)"
                        " VALUES (?,?,?,?,?,?,?,?)", (columns[1], columns[2], text[0], cursor.lastrowid, *text[1:]))
        self._fts_ready()
        self.db.execute("INSERT INTO fts (rowid, body, subject, tags) VALUES (?,?,?,?)", (cursor.lastrowid, *values))

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
        """The ``docs`` columns of ``memory`` from ``id`` to ``record``, then its ``texts``
        columns as one tuple (``chars``, ``id``, ``body``, ``search_text``, ``norm``)."""
        def stamp(value: datetime | None) -> float | None:
            return value.timestamp() if value else None
        text = memory.text
        search_text = " ".join(normalise(text).split())
        more = normalise(" ".join([memory.subject or "", *memory.tags])).strip() or None
        norm = normalise_text(text)
        record = memory.to_dict()
        del record["text"]  # stored once, in ``body``
        lowered = text.isascii() and "\0" not in text and search_text == text.lower()  # what SEARCH_SQL gives
        return (memory.id, memory.scope, memory.status, memory.category, memory.subject, memory.importance,
                int(memory.pinned), stamp(memory.created_at), stamp(memory.updated_at), stamp(memory.expire_at),
                memory.provenance.idempotency_key, json.dumps(memory.tags, ensure_ascii=False), more,
                json.dumps(record, ensure_ascii=False),
                (len(norm), memory.id, text, None if lowered else search_text,
                 None if norm == search_text.rstrip(" .!。！") else norm))

    # --- damaged rows (a hand-edited index) ---------------------------------------------

    def damaged(self) -> list[str]:
        """Paths of the rows that do not hold what a sync writes: a ``record`` that is not a
        memory's JSON, no ``texts`` row or a ``body`` that is not text, a column of either table
        that differs from them (a NULL, another type, another value), or a path outside
        ``memories/``. Reads every row: for a read that tripped, not for every command.
        """
        bad = []
        rows = self.db.execute(
            "SELECT d.path, d.id, d.scope, d.status, d.category, d.subject, d.importance, d.pinned, d.created,"
            " d.updated, d.expire, d.idem, d.tags, d.search_more, d.record, t.chars, t.id, t.body, t.search_text,"
            " t.norm, t.scope, t.status FROM docs d LEFT JOIN texts t ON t.doc = d.rowid"
            " WHERE d.id IS NOT NULL OR d.record IS NOT NULL OR d.scope IS NOT NULL OR t.doc IS NOT NULL")
        for path, *columns in rows:
            try:
                *row, text_scope, text_status = columns
                row = [*row[:14], tuple(row[14:])]
                sound = (tuple(row) == self._columns(decode(row[13], row[14][2])) and _inside(path)
                         and (text_scope, text_status) == (row[1], row[2]))
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
            self._refill_if_needed()
            self._bump()
            self.db.execute("COMMIT")
        except sqlite3.Error as err:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise IndexUnavailable(f"cannot repair the index: {err}") from None
        self.snapshot_path.unlink(missing_ok=True)
        return self.sync()

    # --- reading -----------------------------------------------------------------------

    def problems(self) -> Iterator[InvalidMemoryFile]:
        """Files that could not be served, in path order, made one by one as they are read
        (a store may hold thousands: a caller that wants the first few reads no more)."""
        rows = self.db.execute("SELECT path, error, error_line FROM docs WHERE error IS NOT NULL ORDER BY path")
        return (InvalidMemoryFile(path, reason, line) for path, reason, line in rows)

    def problem_count(self, actor: str | None) -> int:
        """How many of :meth:`problems` ``actor`` may hear about (None: all): those in another
        user's personal folder left out, as ``store.files.others_folder`` decides, counted in
        SQL over the partial index ``docs_error`` (thousands of rows at 100,000 memories cost
        tens of milliseconds a read when each path came back to Python)."""
        from memcli.index import kept

        if actor is None:
            return kept.count(self, "problems", "SELECT count(*), NULL FROM docs WHERE error IS NOT NULL", ())
        users, mine = f"{MEMORIES}/user/", f"{MEMORIES}/user/{actor}/"
        return kept.count(self, f"problems of {actor}",  # kept: 5,966 rows in the generated store of 100,000
                          "SELECT count(*), NULL FROM docs WHERE error IS NOT NULL AND NOT (substr(path, 1, ?) = ? "
                          "AND instr(substr(path, ?), '/') > 0 AND substr(path, 1, ?) != ?)",
                          (len(users), users, len(users) + 1, len(mine), mine))

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
