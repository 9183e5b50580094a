"""The look-ups the service needs, over the index or, as a fallback, over a scan of the files.

A :class:`Catalog` answers the questions of the read paths and of the write gates
(id prefix, idempotency key, same text in a scope, subject holder, review queue) and
hands out a retriever for search. :func:`open_catalog` opens the FTS5 index, syncs it
and returns an :class:`IndexCatalog`; when the index cannot be used it returns a
:class:`ScanCatalog` and says why, so a read never fails because of the cache.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from memcli.errors import InvalidMemoryFile
from memcli.index import Retriever
from memcli.model import Memory, normalise_text
from memcli.store.files import MemoryFiles, Scan, visible_problems

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from memcli.index import Hit, Query
    from memcli.index.db import IndexDB, SyncReport
    from memcli.index.search import FtsRetriever

T = TypeVar("T")

LIVE = ("active", "pending_review")


class Catalog(Protocol):
    """Look-ups over every memory of a workspace (scope filtering is the caller's job)."""

    def retriever(self) -> Retriever:
        """The search interface over the same memories."""
        ...

    def problems(self, *, actor: str | None, limit: int | None = None) -> list[InvalidMemoryFile]:
        """Files that cannot be served, in path order.

        Args:
            actor: the reader: with a name, only the problems that reader may hear about
                (``store.files.visible_problems``: nothing from another user's personal
                folder, counted or named); None: every problem (never shown to a person).
            limit: at most this many, the first (a read's warnings name five); None: all.
        """
        ...

    def problem_count(self, *, actor: str | None) -> int:
        """How many :meth:`problems` there are, without making each one."""
        ...

    def by_prefix(self, prefix: str) -> list[Memory]:
        """Memories whose id starts with ``prefix`` (lower case)."""
        ...

    def by_idempotency_key(self, key: str, scope: str) -> Memory | None:
        """The first memory of ``scope`` written with this idempotency key (a key counts within one scope)."""
        ...

    def live_texts(self, scope: str, include_pending: bool = True,
                   lengths: tuple[int, int] | None = None) -> dict[str, str]:
        """``id -> normalised text`` of the active (and, by default, pending) memories of one scope;
        with ``lengths`` (low, high), only texts of that many characters, bounds included
        (``policy.gates.ratio_lengths``: the only ones that can reach a rapidfuzz ratio)."""
        ...

    def active_with_subject(self, scope: str, subject: str) -> list[Memory]:
        """Active memories of one scope holding ``subject``."""
        ...

    def with_status(self, status: str) -> list[Memory]:
        """Every memory with this status."""
        ...

    def guarded(self) -> list[Memory]:
        """The active memories with ``guards`` or an anchor's ``commands`` (what the pre-tool
        hook enforces and matches by command), and maybe a few others: the caller checks them."""
        ...

    def record_access(self, ids: list[str], at: datetime) -> None:
        """Count a recall of these ids (access statistics live in the cache only)."""
        ...

    def refresh(self, paths: list[Path]) -> None:
        """Take in files memcli has just written or deleted (absolute paths)."""
        ...


class ScanCatalog:
    """A catalog over memories read from the files (the fallback, and small workspaces).

    Args:
        scan: the result of ``MemoryFiles.scan``.
    """

    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        self.memories = scan.memories

    def retriever(self) -> Retriever:
        """A scanning retriever over these memories."""
        from memcli.index.scan import ScanRetriever

        return ScanRetriever(self.memories)

    def problems(self, *, actor: str | None, limit: int | None = None) -> list[InvalidMemoryFile]:
        """See :class:`Catalog`."""
        found = list(self.scan.problems) if actor is None else visible_problems(self.scan.problems, actor)
        return found if limit is None else found[:limit]

    def problem_count(self, *, actor: str | None) -> int:
        """See :class:`Catalog`."""
        return len(self.problems(actor=actor))

    def by_prefix(self, prefix: str) -> list[Memory]:
        """See :class:`Catalog`."""
        return [m for m in self.memories if m.id.startswith(prefix)]

    def by_idempotency_key(self, key: str, scope: str) -> Memory | None:
        """See :class:`Catalog`."""
        return next((m for m in self.memories if m.provenance.idempotency_key == key and m.scope == scope), None)

    def live_texts(self, scope: str, include_pending: bool = True,
                   lengths: tuple[int, int] | None = None) -> dict[str, str]:
        """See :class:`Catalog`."""
        statuses = LIVE if include_pending else ("active",)
        low, high = lengths or (0, sys.maxsize)
        texts = {m.id: normalise_text(m.text) for m in self.memories if m.scope == scope and m.status in statuses}
        return {k: v for k, v in texts.items() if low <= len(v) <= high}

    def active_with_subject(self, scope: str, subject: str) -> list[Memory]:
        """See :class:`Catalog` (subjects compare without case)."""
        return [m for m in self.memories if m.scope == scope and (m.subject or "").casefold() == subject.casefold()
                and m.status == "active"]

    def with_status(self, status: str) -> list[Memory]:
        """See :class:`Catalog`."""
        return [m for m in self.memories if m.status == status]

    def guarded(self) -> list[Memory]:
        """See :class:`Catalog`."""
        return [m for m in self.memories if m.status == "active" and (m.guards or (m.anchor or {}).get("commands"))]

    def record_access(self, ids: list[str], at: datetime) -> None:
        """No statistics without the index."""

    def refresh(self, paths: list[Path]) -> None:
        """Nothing to keep in step: the next command scans the files again."""


#: What reading a row of the index raises when the row was edited outside memcli (a NULL, a
#: wrong type, a bad JSON column): ``IndexCatalog`` then checks the rows and rebuilds the damaged ones.
def _damage() -> tuple[type[BaseException], ...]:
    import sqlite3

    return (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError, IndexError)


class IndexCatalog:
    """A catalog over the synced FTS5 index.

    The index is a cache: a read that trips on one of its rows (a row edited by hand, in
    SQLite, so that it no longer holds what a sync writes) has the rows checked
    (``IndexDB.damaged``); the damaged ones are rebuilt from their files, a warning says so,
    and the read runs again. When they cannot be rebuilt (a read-only cache), this command
    is served from the files. A read that trips on a sound index is a bug: it raises.

    Args:
        index: an opened and synced ``IndexDB``.
        report: what its sync did (``SyncReport``).
        files: the workspace's ``memories/`` tree, to rebuild rows from.
        warnings: the command's list of warnings, which receives the line about a repair.
    """

    def __init__(self, index: IndexDB, report: SyncReport, files: MemoryFiles | None = None,
                 warnings: list[str] | None = None) -> None:
        self.index = index
        self.db = index.db
        self.report = report
        self.files = files
        self.warnings = [] if warnings is None else warnings
        self._scan: ScanCatalog | None = None  # the files, once damaged rows could not be rebuilt
        #: How many times damaged rows were rebuilt during this command.
        self.repaired = 0

    def _read(self, on_index: Callable[[], T], on_files: Callable[[ScanCatalog], T]) -> T:
        """``on_index()``; after damaged rows that could not be rebuilt, ``on_files(scan_catalog)`` (see the class)."""
        if self._scan is None:
            try:
                return on_index()
            except _damage():
                if not self._repair():
                    raise
                self.repaired += 1
            if self._scan is None:
                return on_index()
        return on_files(self._scan)

    def _repair(self) -> bool:
        """Rebuild the damaged rows from their files; False when no row is damaged (the error is a bug)."""
        from memcli.index.db import IndexUnavailable

        damaged = self.index.damaged()
        if not damaged or self.files is None:
            return False
        what = f"{len(damaged)} damaged row{'s' * (len(damaged) != 1)} (changed outside memcli)"
        try:
            self.index.repair(damaged)
        except IndexUnavailable as err:
            self.warnings.append(f"the search index held {what} and could not be repaired ({err}); "
                                 "searching the files directly (run `memcli index rebuild`)")
            self._scan = ScanCatalog(self.files.scan())
            return True
        self.warnings.append(f"the search index held {what}; {'they were' if len(damaged) > 1 else 'it was'} "
                             "rebuilt from the files")
        return True

    def refresh(self, paths: list[Path]) -> None:
        """See :class:`Catalog`; delegates to ``IndexDB.refresh``."""
        if self._scan is None:
            self.index.refresh(paths)

    def record_access(self, ids: list[str], at: datetime) -> None:
        """Count a recall of ``ids`` (hits, last recalled) in the cache; best effort, never raises."""
        import sqlite3

        from memcli.index.db import BUSY_TIMEOUT_MS
        from memcli.timeutil import format_instant

        if self._scan is not None:
            return
        try:
            self.db.execute("PRAGMA busy_timeout = 50")  # statistics never make a recall wait
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany(
                "INSERT INTO access (id, hits, last_recalled) VALUES (?, 1, ?) ON CONFLICT(id) DO UPDATE"
                " SET hits = hits + 1, last_recalled = excluded.last_recalled",
                [(i, format_instant(at)) for i in ids])
            self.db.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def _records(self, sql: str, params: tuple) -> list[Memory]:
        from memcli.index.db import decode

        return [decode(r, b) for r, b in self.db.execute(sql, params)]

    def retriever(self) -> Retriever:
        """The FTS5 retriever, guarded as every read of this catalog (see the class)."""
        return _Guarded(self)

    def problems(self, *, actor: str | None, limit: int | None = None) -> list[InvalidMemoryFile]:
        """See :class:`Catalog`; read from the index only as far as ``limit`` needs."""
        def on_index() -> list[InvalidMemoryFile]:
            found = self.index.problems()
            if actor is not None:
                return visible_problems(found, actor, limit)
            return list(found) if limit is None else [p for _, p in zip(range(limit), found)]
        return self._read(on_index, lambda scan: scan.problems(actor=actor, limit=limit))

    def problem_count(self, *, actor: str | None) -> int:
        """See :class:`Catalog`."""
        return self._read(lambda: self.index.problem_count(actor), lambda scan: scan.problem_count(actor=actor))

    def by_prefix(self, prefix: str) -> list[Memory]:
        """See :class:`Catalog`."""
        from memcli.index.db import TEXT_JOIN

        sql = f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE d.id >= ? AND d.id < ? ORDER BY d.id LIMIT 50"
        return self._read(lambda: self._records(sql, (prefix, prefix + "\uffff")),
                          lambda scan: scan.by_prefix(prefix))

    def by_idempotency_key(self, key: str, scope: str) -> Memory | None:
        """See :class:`Catalog`."""
        from memcli.index.db import TEXT_JOIN

        def on_index() -> Memory | None:
            found = self._records(f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE d.idem = ? AND d.scope = ?"
                                  " ORDER BY d.created, d.id LIMIT 1", (key, scope))
            return found[0] if found else None
        return self._read(on_index, lambda scan: scan.by_idempotency_key(key, scope))

    def live_texts(self, scope: str, include_pending: bool = True,
                   lengths: tuple[int, int] | None = None) -> dict[str, str]:
        """See :class:`Catalog`. With ``lengths``, SQLite reads only the texts of those lengths
        (``chars``, Python's ``len`` of the form), found by the index ``texts_dup`` (scope,
        status, chars) in the narrow ``texts`` rows."""
        def on_index() -> dict[str, str]:
            from memcli.index.db import NORM_SQL

            statuses = "('active', 'pending_review')" if include_pending else "('active')"
            sql = f"SELECT t.id, {NORM_SQL} FROM texts t WHERE t.scope = ? AND t.status IN {statuses}"
            args: tuple = (scope,)
            if lengths is not None:
                sql += " AND t.chars BETWEEN ? AND ?"
                args = (scope, *lengths)
            found = dict(self.db.execute(sql, args))
            if not all(isinstance(v, str) for v in found.values()):
                raise TypeError("a row's norm is not text")
            return found
        return self._read(on_index, lambda scan: scan.live_texts(scope, include_pending, lengths))

    def active_with_subject(self, scope: str, subject: str) -> list[Memory]:
        """See :class:`Catalog`."""
        from memcli.index.db import TEXT_JOIN

        sql = (f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE d.scope = ? AND d.subject = ? COLLATE NOCASE"
               " AND d.status = 'active'")
        return self._read(lambda: self._records(sql, (scope, subject)),
                          lambda scan: scan.active_with_subject(scope, subject))

    def with_status(self, status: str) -> list[Memory]:
        """See :class:`Catalog`."""
        from memcli.index.db import TEXT_JOIN

        return self._read(lambda: self._records(f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE d.status = ?"
                                                " ORDER BY d.created, d.id",
                                                (status,)),
                          lambda scan: scan.with_status(status))

    def guarded(self) -> list[Memory]:
        """See :class:`Catalog`: the rows whose record holds the key ``guards`` or ``commands``
        (a key of the record's JSON is written ``"key": ``; the text is not in the record, and a
        tag or subject that holds those words has its quotes escaped, so it is no match). One
        pass over the active rows' records, no decoding but of the few that match (a Bash
        pre-tool hook decoded every active memory: 1.1-1.8 s at 10,000, past its deadline under
        load)."""
        from memcli.index.db import TEXT_JOIN

        sql = (f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE d.status = 'active'"
               " AND (instr(d.record, '\"guards\": ') > 0 OR instr(d.record, '\"commands\": ') > 0)"
               " ORDER BY d.created, d.id")
        return self._read(lambda: self._records(sql, ()), lambda scan: scan.guarded())


class _Guarded:
    """The retriever of an :class:`IndexCatalog`: the FTS5 retriever's ``search`` and ``count``
    through the catalog's guard (see :class:`IndexCatalog`)."""

    def __init__(self, catalog: IndexCatalog) -> None:
        self.catalog = catalog
        self._fts: FtsRetriever | None = None
        self._made = -1  # the catalog's ``repaired`` count when ``_fts`` was made: its caches predate a repair

    def _retriever(self) -> FtsRetriever:
        from memcli.index.search import FtsRetriever

        if self._fts is None or self._made != self.catalog.repaired:
            self._fts, self._made = FtsRetriever(self.catalog.index), self.catalog.repaired
        return self._fts

    def search(self, query: Query) -> list[Hit]:
        """See :class:`memcli.index.Retriever`."""
        return self.catalog._read(lambda: self._retriever().search(query), lambda scan: scan.retriever().search(query))

    def count(self, query: Query) -> int:
        """See :class:`memcli.index.Retriever`."""
        return self.catalog._read(lambda: self._retriever().count(query), lambda scan: scan.retriever().count(query))


def open_catalog(files: MemoryFiles, cache: Path, warnings: list[str],
                 progress: Callable[[int, int], None] | None = None,
                 deadline: float | None = None, wait: float | None = None, reader: str | None = None,
                 full: bool = False, kept: dict | None = None) -> Catalog:
    """Open and sync the index; fall back to scanning the files if it cannot be used.

    A read (``full`` False) syncs with ``IndexDB.quick_sync`` (no walk of every file, see
    ``memcli.index.fresh``) and queues, for once its answer is out
    (``fresh.run_after_answer``), the record of its start and the full walk it owes; a
    writer, ``index status`` and ``doctor`` (``full``) walk every file first.

    A corrupt index file (not a database, malformed) is deleted and rebuilt once, since
    the index is only a cache. Any other failure (a read-only folder) serves this
    command from the files and adds a warning. An index that another process is building
    is served as it is, with a warning, after at most ``wait`` seconds.

    Args:
        files: the workspace's ``memories/`` tree.
        cache: the workspace's cache folder.
        warnings: list that receives one line per problem.
        progress: optional ``progress(done, total)`` callback for the sync.
        deadline: a ``time.monotonic()`` instant for the sync (hooks); the files it did not
            reach are left to one background build (``memcli.index.build.spawn_build``).
        wait: seconds to wait for another process's build (default ``db.LOCK_WAIT``).
        reader: the caller's name: a sync cut short by ``deadline`` has indexed their files first.
        full: walk every file (see above).
        kept: a long-lived process's opened indexes (index path -> ``IndexDB``): the one of
            this store is used and kept open there, instead of opened for this command.
    """
    from memcli.index.db import INDEX_NAME, LOCK_WAIT, IndexDB, IndexUnavailable

    path = cache / INDEX_NAME
    wait = LOCK_WAIT if wait is None else wait
    if deadline is not None:  # a hook does not wait past its own deadline for another build
        import time

        wait = max(0.0, min(wait, deadline - time.monotonic()))
    for attempt in (1, 2):
        try:
            index = kept.get(path) if kept is not None else None
            if index is None:
                index = IndexDB(files, path)
                if kept is not None:
                    kept[path] = index
                    index.map_pages()
            index.reader = reader
            if full:
                report = index.sync(progress, deadline, wait)
            else:
                report = index.quick_sync(progress, deadline, wait)
                _owe(files.root, index)
            _explain(report, files, cache, warnings, deadline is not None)
            return IndexCatalog(index, report, files, warnings)
        except IndexUnavailable as err:
            if kept is not None:
                dropped = kept.pop(path, None)
                if dropped is not None:
                    dropped.close()
            broken = any(s in str(err) for s in ("not a database", "malformed", "corrupt"))
            if attempt == 1 and broken:
                warnings.append(f"the search index was corrupt ({err}); rebuilding it from the files")
                remove_index(path)
                continue
            warnings.append(f"search index unavailable ({err}); searching the files directly")
            break
    return ScanCatalog(files.scan())


def _owe(root: Path, index: IndexDB) -> None:
    """Queue what a read owes once it has answered: the record of its start and, unless it
    walked every file itself, the full walk (``memcli.index.fresh``)."""
    from memcli.index import fresh

    started, path, walked = index.read_started, index.path, index.walked

    def work() -> None:
        fresh.finish_read(path.parent, started)
        if not walked:
            fresh.walk_after(root, path)
    fresh.after_answer(work)


def _explain(report: SyncReport, files: MemoryFiles, cache: Path, warnings: list[str], background: bool) -> None:
    """Warn about an index that is not complete; start the background build a hook leaves."""
    if report.busy:
        warnings.append("the search index is being updated by another memcli process; this answer may miss "
                        "the newest changes (run the command again in a moment)")
    elif report.pending:
        started = False
        if background:
            from memcli.index.build import spawn_build

            started = spawn_build(files.root, cache)
        rest = "finishing in the background" if started else "the next command goes on with it"
        if report.pending < 0:
            warnings.append(f"the search index was not checked against the files in time ({rest}); "
                            "this answer may miss the newest changes")
        else:
            warnings.append(f"the search index is still being built: {report.pending} of {report.files} files "
                            f"not indexed yet ({rest}); this answer may miss memories")


def incomplete(catalog: object) -> str | None:
    """One line saying why ``catalog`` (a merged one: any of its stores) may miss memories
    this read should see: an index still being built, or not checked against the files
    within the read's deadline, or held by another process's build; None when complete
    (issue 21 point 5: a partial answer says so, in the answer)."""
    parts = [p.catalog for p in getattr(catalog, "parts", ())] or [catalog]
    pending, files, unchecked, busy = 0, 0, False, False
    for part in parts:
        report = getattr(part, "report", None)
        if report is None:
            continue
        if report.pending > 0:
            pending, files = pending + report.pending, files + report.files
        unchecked |= report.pending < 0
        busy |= report.busy
    if pending:
        return (f"answered from a partial index: {pending} of {files} memory files are not indexed yet "
                "(being indexed in the background); this answer may miss memories")
    if unchecked:
        return "answered before the index was checked against the files; this answer may miss the newest changes"
    if busy:
        return ("answered while another memcli process updates the index; this answer may miss the newest "
                "changes")
    return None


def remove_index(path: Path) -> None:
    """Delete the index file and its WAL and shared-memory companions."""
    for suffix in ("", "-wal", "-shm", "-journal", ".snapshot", ".folders"):
        Path(str(path) + suffix).unlink(missing_ok=True)
