"""The semantic retriever's vectors, in memcli's SQLite index (SPEC.md section 5, issue 18).

Table ``vectors`` of ``.cache/index.sqlite3``, created lazily by the first process that
embeds::

    vectors(id, model, hash, cjk, vec)   PRIMARY KEY (id, model)

``hash`` is the ``docs`` row's content hash (``db.file_hash``) when the vector was made:
a vector counts only while ``(id, hash)`` equals its ``docs`` row, so an edited, moved or
re-statused file is embedded again and a stale vector is never scored. ``model`` is
``Embedder.model_id``: opening the table for a model deletes every other model's rows (a
model change invalidates all vectors). ``vec`` is the float32 vector, little-endian
(``numpy.ndarray.tobytes``); ``cjk`` whether the text holds CJK (the model's weights
depend on it, ``embed.Embedder.score``).

Search is filters first: the ids that may be scored are those the ``docs`` rows give for
the query's SQL conditions (``search._filters``: scope, personal stores, status, expiry,
fields), and only those are scored, with numpy over a matrix kept per index and model in
this process (:class:`Matrix`). Hooks never import this module, and one-shot commands only
for :func:`text_of` when a warm process answers a write's question (numpy is imported by
the functions that need it, in long-lived processes).

A long-lived process keeps, per set of filters, the ids that pass them (:func:`_rows`), and
brings that set up to date after a change by reading only the memories that changed: table
``vectors_log`` (``seq``, ``id``), filled by triggers on ``docs`` and ``vectors`` that this
module creates beside the ``vectors`` table (so only indexes a semantic process has opened
carry them), lists every id whose row or vector was written or deleted, in commit order; it
prunes itself to the last ``LOG_KEEP`` or so entries, and a reader that fell further behind
(or sees the index's ``generation`` change) reads everything again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from bisect import bisect_left
from collections.abc import Sequence, Set
from typing import TYPE_CHECKING, Any, Protocol

from memcli.index import Query, paths_match
from memcli.model import Memory

if TYPE_CHECKING:  # annotations only: importing numpy is for long-lived processes
    import numpy as np
    import numpy.typing as npt

    from memcli.index.embed import Embedder, Floats


class Stop(Protocol):
    """What tells a backfill to end between two batches (a ``threading.Event``)."""

    def is_set(self) -> bool:
        """Whether to stop."""
        ...


SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (id TEXT NOT NULL, model TEXT NOT NULL, hash TEXT NOT NULL,"
          " cjk INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (id, model))")
#: The change log a long-lived process reads to update its row sets (see the module docstring).
LOG_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL)"
#: Entries the change log keeps at least (it prunes itself every ``LOG_PRUNE`` entries).
LOG_KEEP = 4096
LOG_PRUNE = 1024
#: The triggers that fill ``vectors_log``, one statement each (their bodies hold ``;``). A
#: ``docs`` row changes by a delete and an insert (``db.IndexDB._store_row``); an update of
#: the columns the filters or the vectors read is logged too, for both ids.
LOG_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS vectors_log_docs_insert AFTER INSERT ON docs WHEN new.id IS NOT NULL"
    " BEGIN INSERT INTO vectors_log (id) VALUES (new.id); END",
    "CREATE TRIGGER IF NOT EXISTS vectors_log_docs_delete AFTER DELETE ON docs WHEN old.id IS NOT NULL"
    " BEGIN INSERT INTO vectors_log (id) VALUES (old.id); END",
    "CREATE TRIGGER IF NOT EXISTS vectors_log_docs_update AFTER UPDATE OF id, hash, scope, status, category,"
    " subject, tags, created, updated, expire, record ON docs"
    " BEGIN INSERT INTO vectors_log (id) SELECT old.id WHERE old.id IS NOT NULL;"
    " INSERT INTO vectors_log (id) SELECT new.id WHERE new.id IS NOT NULL AND new.id IS NOT old.id; END",
    "CREATE TRIGGER IF NOT EXISTS vectors_log_vectors_insert AFTER INSERT ON vectors"
    " BEGIN INSERT INTO vectors_log (id) VALUES (new.id); END",
    "CREATE TRIGGER IF NOT EXISTS vectors_log_vectors_delete AFTER DELETE ON vectors"
    " BEGIN INSERT INTO vectors_log (id) VALUES (old.id); END",
    f"CREATE TRIGGER IF NOT EXISTS vectors_log_prune AFTER INSERT ON vectors_log WHEN new.seq % {LOG_PRUNE} = 0"
    f" BEGIN DELETE FROM vectors_log WHERE seq <= new.seq - {LOG_KEEP}; END",
)
_TRIGGER_NAMES = ("vectors_INSERT", "vectors_log_docs_insert", "vectors_log_docs_delete", "vectors_log_docs_update",
                  "vectors_log_vectors_insert", "vectors_log_vectors_delete", "vectors_log_prune")
#: What tells a long-lived process that an index changed: its ``changes`` counter (moved by
#: every transaction that writes ``docs``, ``db.IndexDB._bump``, and by triggers on every change
#: to ``vectors``, ``db.change_triggers``) and its ``generation`` (new whenever the
#: schema is made again: a new counter, a new log).
STAMP = "SELECT (SELECT n FROM changes), (SELECT value FROM meta WHERE key = 'generation')"
#: Changed memories at most that :func:`_rows` takes in one by one; more, and it reads the
#: filtered rows again in full (one query, cheaper than many ``IN`` lists).
INCREMENTAL_MAX = 1000
#: Memories embedded per transaction by :func:`backfill` (a killed backfill keeps the rest).
BATCH = 8
#: Ids per ``IN (...)`` list (well under SQLite's limit of host parameters).
CHUNK = 500
_MATRICES: dict[tuple[str, str], Matrix] = {}
_LOCK = threading.Lock()


def text_of(memory: Memory) -> str:
    """What is embedded for a memory: its subject (when it has one) and its text."""
    return f"{memory.subject}: {memory.text}" if memory.subject else memory.text


def _paths_match(globs_json: str | None, path: str) -> int:
    return int(paths_match(json.loads(globs_json or "[]"), path))


def prepare(db: sqlite3.Connection, model_id: str | None = None) -> bool:
    """Create the ``vectors`` table and the change log (``vectors_log`` and its triggers) if
    they are missing, register the SQL function the filters use, and, given a ``model_id``,
    delete the rows of every other model. Never raises: False when the database refused
    (read-only, locked), and the caller goes on without vectors.
    """
    try:
        db.create_function("memcli_paths_match", 2, _paths_match, deterministic=True)
        marks = ",".join("?" * len(_TRIGGER_NAMES))
        present = db.execute(f"SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})",
                             _TRIGGER_NAMES).fetchone()[0]
        if present != len(_TRIGGER_NAMES):
            from memcli.index.db import change_triggers

            own = not db.in_transaction  # inside a caller's transaction: part of it
            if own:
                db.execute("BEGIN IMMEDIATE")
            try:
                for statement in (SCHEMA, LOG_SCHEMA, *change_triggers("vectors"), *LOG_TRIGGERS):
                    db.execute(statement)
                if own:
                    db.execute("COMMIT")
            except sqlite3.Error:
                if own and db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        if model_id is not None and db.execute("SELECT 1 FROM vectors WHERE model != ? LIMIT 1",
                                               (model_id,)).fetchone():
            db.execute("DELETE FROM vectors WHERE model != ?", (model_id,))
        return True
    except sqlite3.Error:
        return False


def counts(db: sqlite3.Connection, model_id: str) -> tuple[int, int]:
    """``(memories with a current vector of this model, memories)`` in one index (0, n when
    the table does not exist yet)."""
    total = db.execute("SELECT count(*) FROM docs WHERE id IS NOT NULL").fetchone()[0]
    try:
        done = db.execute("SELECT count(*) FROM docs d JOIN vectors v ON v.id = d.id AND v.model = ?"
                          " AND v.hash = d.hash", (model_id,)).fetchone()[0]
    except sqlite3.OperationalError:
        done = 0
    return done, total


def missing(db: sqlite3.Connection, model_id: str, limit: int) -> list[tuple[str, str, str]]:
    """Up to ``limit`` memories without a current vector, active ones first:
    ``(id, hash, text to embed)``."""
    rows = db.execute(
        "SELECT d.id, d.hash, d.record, t.body FROM docs d LEFT JOIN texts t ON t.doc = d.rowid"
        " LEFT JOIN vectors v ON v.id = d.id AND v.model = ?"
        " WHERE d.id IS NOT NULL AND (v.id IS NULL OR v.hash != d.hash)"
        " ORDER BY d.status != 'active', d.updated DESC LIMIT ?", (model_id, limit)).fetchall()
    from memcli.index.db import DamagedRow, decode

    out = []
    for i, h, r, b in rows:
        try:
            out.append((i, h, text_of(decode(r, b))))
        except DamagedRow:  # a hand-edited row: the next read repairs it, then it is embedded
            continue
    return out


def store(db: sqlite3.Connection, model_id: str, rows: Sequence[tuple[str, str, str]],
          vectors: Floats | Sequence[Floats]) -> None:
    """Write the vectors of ``rows`` (``(id, hash, text)`` as :func:`missing` gives them;
    ``vectors`` their ``(n, dim)`` float32 array, or one ``(dim,)`` array each) in one transaction.

    Raises:
        sqlite3.Error: the database refused (the caller decides whether that matters).
    """
    import numpy as np

    from memcli.index.embed import is_cjk

    data = [(i, model_id, h, int(is_cjk(t)), np.asarray(v, dtype="<f4").tobytes())
            for (i, h, t), v in zip(rows, vectors)]
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany("INSERT OR REPLACE INTO vectors (id, model, hash, cjk, vec) VALUES (?,?,?,?,?)", data)
        db.execute("COMMIT")
    except sqlite3.Error:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def backfill(db: sqlite3.Connection, embedder: Embedder, limit: int | None = None, stop: Stop | None = None,
             known: dict[str, Floats] | None = None) -> int:
    """Embed memories of one index that have no current vector, ``BATCH`` at a time.

    Args:
        db: a connection to the index (its own: this runs in a background thread).
        embedder: a loaded ``embed.Embedder``.
        limit: at most this many memories (None: all of them).
        stop: a ``threading.Event``; the backfill ends between two batches when it is set.
        known: vectors this process has already made, by text (a long-lived process's query
            vectors: a write asks for the memories close to the new one with the text that is
            stored, ``text_of``, so the new memory is embedded once, not twice).

    Returns:
        How many memories were embedded. Never raises for a busy or read-only database
        (what was committed stays; the next call goes on).
    """
    if not prepare(db, embedder.model_id):
        return 0
    done = 0
    while limit is None or done < limit:
        if stop is not None and stop.is_set():
            break
        try:
            rows = missing(db, embedder.model_id, BATCH if limit is None else min(BATCH, limit - done))
        except sqlite3.Error:
            break
        if not rows:
            prune(db)
            break
        made: dict[str, Floats] = {} if known is None else {t: known[t] for _, _, t in rows if t in known}
        fresh = list(dict.fromkeys(t for _, _, t in rows if t not in made))
        if fresh:
            made.update(zip(fresh, embedder.embed(fresh)))
        try:
            store(db, embedder.model_id, rows, [made[t] for _, _, t in rows])
        except sqlite3.Error:
            break
        done += len(rows)
    return done


def prune(db: sqlite3.Connection) -> None:
    """Delete the vectors of memories the index no longer holds (never raises)."""
    orphan = "FROM vectors WHERE NOT EXISTS (SELECT 1 FROM docs WHERE docs.id = vectors.id)"
    try:
        if db.execute(f"SELECT 1 {orphan} LIMIT 1").fetchone():  # read first: no write lock for nothing
            db.execute(f"DELETE {orphan}")
    except sqlite3.Error:
        pass


class Matrix:
    """The vectors of one index and model (``model``, its id) held in this process.

    ``row`` maps a memory id to its row in ``vectors`` (a ``(capacity, dim)`` float32 array
    whose first ``size`` rows are in use; a new id takes the next row, the array doubles
    when full) and ``hashes`` holds the content hash each row's vector was made of (``""``
    once the change log says the vector or the memory changed: it is loaded again when next
    needed); ``cjk`` the texts' CJK flags. ``allowed`` keeps, per set of filters, the
    memories that pass them (:class:`Allowed`). All of it is as of the index's ``stamp``
    (``(generation, changes)``, see ``STAMP``) and entry ``seq`` of its change log
    (:func:`_rows` brings it up to date). Used with ``lock`` held.
    """

    def __init__(self, dim: int, model: str = "") -> None:
        self.model = model
        self.lock = threading.Lock()
        self.dim = dim
        self.reset(0)
        self.stamp: tuple[str, int] | None = None

    def reset(self, seq: int) -> None:
        """Forget every row and row set (a new matrix; another index file, or a change log
        that no longer reaches back to ``self.seq``); ``seq`` is the log's last entry now."""
        import numpy as np

        self.row: dict[str, int] = {}
        self.hashes: list[str] = []
        self.size = 0
        self.vectors = np.zeros((64, self.dim), dtype=np.float32)
        self.cjk = np.zeros(64, dtype=bool)
        self.allowed: dict[tuple[str, tuple[tuple[str, str], ...]], Allowed] = {}
        self.seq = seq

    def put(self, memory_id: str, digest: str, blob: bytes, cjk: bool) -> None:
        """Set the row of ``memory_id`` to the vector in ``blob`` (a float32 BLOB of the table)."""
        import numpy as np

        vector = np.frombuffer(blob, dtype="<f4")
        if vector.shape[0] != self.vectors.shape[1]:
            return  # another model's width: never scored
        at = self.row.get(memory_id)
        if at is None:
            if self.size == self.vectors.shape[0]:
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
                self.cjk = np.concatenate([self.cjk, np.zeros_like(self.cjk)])
            at = self.row[memory_id] = self.size
            self.hashes.append(digest)
            self.size += 1
        self.hashes[at] = digest
        self.vectors[at] = vector
        self.cjk[at] = cjk

    def current(self, memory_id: str, digest: str) -> int | None:
        """The row of ``memory_id`` when it holds the vector of the text whose hash is ``digest``."""
        at = self.row.get(memory_id)
        return at if at is not None and self.hashes[at] == digest else None

    def forget(self, ids: set[str]) -> None:
        """Mark the rows of ``ids`` as not current (their vector or memory changed)."""
        for memory_id in ids:
            at = self.row.get(memory_id)
            if at is not None:
                self.hashes[at] = ""


class Allowed:
    """The memories of one index that pass one set of filters (``where`` and ``params``,
    ``search._filters``, expiry aside) and have a current vector, as :func:`_rows` keeps
    them: ``ids`` sorted, their ``rows`` in the :class:`Matrix` (int64) and ``expire``
    (POSIX seconds, NaN for none) in the same order. Never changed in place."""

    __slots__ = ("where", "params", "ids", "rows", "expire")

    def __init__(self, where: str, params: dict[str, Any], ids: list[str], rows: npt.NDArray[np.int64],
                 expire: npt.NDArray[np.float64]) -> None:
        self.where = where
        self.params = params
        self.ids = ids
        self.rows = rows
        self.expire = expire


def matrix_of(path: str, embedder: Embedder) -> Matrix:
    """This process's :class:`Matrix` for the index at ``path`` and ``embedder``'s model."""
    key = (path, embedder.model_id)
    with _LOCK:
        found = _MATRICES.get(key)
        if found is None:
            found = _MATRICES[key] = Matrix(embedder.dim, embedder.model_id)
    return found


def search(db: sqlite3.Connection, path: str, embedder: Embedder, query: Query, vector: Floats, limit: int,
           also: Sequence[str] = (), skip: Set[str] = frozenset()) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Score the memories of one index that pass ``query``'s filters against the query ``vector``.

    Args:
        db: a connection to the index (``prepare`` is called on it).
        path: the index file (the key of this process's :class:`Matrix`).
        embedder: the loaded ``embed.Embedder`` that made ``vector`` (``(dim,)`` float32).
        query: its filters apply (``search._filters``); its text is not read here.
        limit: how many of the best to return.
        also: ids whose score is wanted whatever their rank (the lexical hits, for
            ``parts["cosine"]``); only those that pass the filters get one.
        skip: ids never scored (the quarantined memories of the caller's store,
            ``index.quarantined``): filtered out with the query's conditions, before the best
            are taken.

    Returns:
        ``([(id, score)] best first, at most limit; {id: score} for ``also``)``; scores are
        the model's weighted cosines (-1 to 1); equal scores in id order. Empty when the
        index has no vectors table.
    """
    import numpy as np

    from memcli.index.embed import is_cjk

    if not prepare(db):
        return [], {}
    matrix = matrix_of(path, embedder)
    with matrix.lock:
        found = _rows(db, matrix, query)
        if found is None:
            return [], {}
        ids, index = found.ids, found.rows
        if not query.include_expired:  # the kept set holds every expiry: cut at this query's now
            live = np.isnan(found.expire) | (found.expire > query.now.timestamp())
            if not live.all():
                ids, index = [i for i, keep in zip(ids, live) if keep], index[live]
        if skip:  # ids are sorted: each skipped one found by bisection, not by a walk of all
            out = [k for i in skip if (k := bisect_left(ids, i)) < len(ids) and ids[k] == i]
            if out:
                gone = set(out)
                ids, index = [i for k, i in enumerate(ids) if k not in gone], np.delete(index, out)
        if not len(ids):
            return [], {}
        scores = embedder.score(vector, is_cjk(query.text), matrix.vectors[:matrix.size], matrix.cjk[:matrix.size])
    picked = scores[index]
    count = min(limit, len(ids))
    best = np.argpartition(-picked, count - 1)[:count] if count < len(ids) else np.arange(len(ids))
    best = best[np.argsort(-picked[best], kind="stable")]
    top = [(ids[k], float(picked[k])) for k in best]
    wanted_also = set(also)
    extra = {i: float(picked[k]) for k, i in enumerate(ids) if i in wanted_also}
    return top, extra


def _rows(db: sqlite3.Connection, matrix: Matrix, query: Query) -> Allowed | None:
    """The memories of one index that pass ``query``'s filters, expiry aside, and have a
    current vector (:class:`Allowed`), or None when the index refused. Called with
    ``matrix.lock`` held.

    Kept in ``matrix.allowed`` per set of filters (in whichever connection). While the
    index's stamp (``STAMP``) stays, a kept set is the answer: a warm process's repeated
    recall reads no rows. When it moved, the matrix catches up (:func:`_catch_up`): only the
    memories the change log lists since ``matrix.seq`` are read again, through each kept
    set's filters, and their vectors loaded again. A set asked for the first time is read
    in full (:func:`_full`). Either way the result is the set a full read into a new matrix
    would give now (``tests/test_semantic_incremental.py``). A set kept too long could only
    miss a memory, never show one the filters refuse: every hit is read again through them
    (``records``).
    """
    from memcli.index.search import _filters

    where, params = _filters(query)
    params["now"] = float("-inf")  # every expiry passes here; the caller cuts at its own now
    key = (where, tuple(sorted((k, str(v)) for k, v in params.items())))
    try:
        changes, generation = db.execute(STAMP).fetchone()
        stamp = (str(generation), int(changes))
        if matrix.stamp != stamp:
            _catch_up(db, matrix, stamp)
        found = matrix.allowed.get(key)
        if found is None:
            found = _full(db, matrix, where, params)
            if len(matrix.allowed) >= 32:
                matrix.allowed.clear()
            matrix.allowed[key] = found
    except (sqlite3.Error, TypeError, ValueError):
        return None
    return found


def _catch_up(db: sqlite3.Connection, matrix: Matrix, stamp: tuple[str, int]) -> None:
    """Bring ``matrix`` and its kept sets to the index as of ``stamp`` (read just before):
    the rows of the memories the change log lists since ``matrix.seq`` are marked stale and
    each kept set reads those memories again (:func:`_update`). Another generation, or a log
    that no longer reaches back to ``matrix.seq``, empties the matrix; more than
    ``INCREMENTAL_MAX`` changed memories drop the kept sets (read in full when next asked).

    Raises:
        sqlite3.Error: the index refused (the matrix is then left to try again: every step
            can be done twice).
    """
    changed = _changed_since(db, matrix.seq) if matrix.stamp is not None and matrix.stamp[0] == stamp[0] else None
    if changed is None:
        matrix.reset(last(db))
    else:
        ids, seq = changed
        matrix.forget(ids)
        if len(ids) > INCREMENTAL_MAX:
            matrix.allowed.clear()
        elif ids:
            for key, found in list(matrix.allowed.items()):
                matrix.allowed[key] = _update(db, matrix, found, ids)
        matrix.seq = seq
    matrix.stamp = stamp


def last(db: sqlite3.Connection) -> int:
    """The change log's last entry (0 when it is empty): it moves whenever a memory or a
    vector of the index is written or deleted, by any process.

    Raises:
        sqlite3.Error: the index refused.
    """
    return int(db.execute("SELECT coalesce(max(seq), 0) FROM vectors_log").fetchone()[0])


def _changed_since(db: sqlite3.Connection, seq: int) -> tuple[set[str], int] | None:
    """The ids the change log lists after entry ``seq`` and the last entry's number, or None
    when entries after ``seq`` are gone (pruned, or the log was made again).

    Raises:
        sqlite3.Error: the index refused.
    """
    rows = db.execute("SELECT seq, id FROM vectors_log WHERE seq > ? ORDER BY seq", (seq,)).fetchall()
    if rows:
        return None if rows[0][0] != seq + 1 else ({i for _, i in rows}, rows[-1][0])
    return (set(), seq) if last(db) == seq else None


def _load(db: sqlite3.Connection, matrix: Matrix, rows: list[tuple[str, str, float | None]]) -> None:
    """Load into ``matrix`` the stored vectors of the ``(id, hash, expire)`` rows it does not
    hold for that hash (a vector of another hash is left out: it is not the text's).

    Raises:
        sqlite3.Error: the index refused.
    """
    wanted = {i: h for i, h, _ in rows if matrix.current(i, h) is None}
    stale = list(wanted)
    for start in range(0, len(stale), CHUNK):
        chunk = stale[start:start + CHUNK]
        marks = ",".join("?" * len(chunk))
        for memory_id, digest, cjk, blob in db.execute(
                f"SELECT id, hash, cjk, vec FROM vectors WHERE model = ? AND id IN ({marks})",
                (matrix.model, *chunk)):
            if wanted.get(memory_id) == digest:
                matrix.put(memory_id, digest, blob, bool(cjk))


def _full(db: sqlite3.Connection, matrix: Matrix, where: str, params: dict[str, Any]) -> Allowed:
    """Every memory of the index that passes ``where`` and has a current vector (loaded into
    ``matrix`` as needed).

    Raises:
        sqlite3.Error: the index refused.
    """
    import numpy as np

    allowed = db.execute(f"SELECT d.id, d.hash, d.expire FROM docs d WHERE {where} ORDER BY d.id", params).fetchall()
    _load(db, matrix, allowed)
    kept = [(i, at, e) for i, h, e in allowed if (at := matrix.current(i, h)) is not None]
    return Allowed(where, params, [i for i, _, _ in kept],
                   np.fromiter((at for _, at, _ in kept), dtype=np.int64, count=len(kept)),
                   np.fromiter((np.nan if e is None else e for _, _, e in kept), dtype=np.float64, count=len(kept)))


def _update(db: sqlite3.Connection, matrix: Matrix, found: Allowed, changed: set[str]) -> Allowed:
    """``found`` brought up to date for the memories ``changed`` (every id whose row or
    vector changed since it was made): those are read again through its filters and put
    back in id order; the rest stays as it was.

    Raises:
        sqlite3.Error: the index refused.
    """
    import numpy as np

    ids, rows, expire = found.ids, found.rows, found.expire
    out = [k for k, i in enumerate(ids) if i in changed]
    if out:
        ids = [i for i in ids if i not in changed]
        rows, expire = np.delete(rows, out), np.delete(expire, out)
    again: list[tuple[str, str, float | None]] = []
    listed = sorted(changed)
    for start in range(0, len(listed), CHUNK):
        names = {f"id{k}": v for k, v in enumerate(listed[start:start + CHUNK])}
        marks = ",".join(f":{k}" for k in names)
        again += db.execute(f"SELECT d.id, d.hash, d.expire FROM docs d INDEXED BY docs_id WHERE {found.where}"
                            f" AND d.id IN ({marks})", {**found.params, **names}).fetchall()
    _load(db, matrix, again)
    back = sorted((i, at, e) for i, h, e in again if (at := matrix.current(i, h)) is not None)
    if back:
        ids = list(ids)
        for memory_id, at, when in back:
            k = bisect_left(ids, memory_id)
            ids.insert(k, memory_id)
            rows = np.insert(rows, k, at)
            expire = np.insert(expire, k, np.nan if when is None else when)
    return Allowed(found.where, found.params, ids, rows, expire)


def records(db: sqlite3.Connection, query: Query, ids: list[str]) -> dict[str, Memory]:
    """The memories of ``ids`` that pass ``query``'s filters in this index (the check every
    semantic hit goes through before it is shown, whoever scored it)."""
    from memcli.index.db import decode
    from memcli.index.search import _filters

    if not ids or not prepare(db):
        return {}
    where, params = _filters(query)
    out: dict[str, Memory] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        names = {f"id{k}": v for k, v in enumerate(chunk)}
        marks = ",".join(f":{k}" for k in names)
        # INDEXED BY: by id (a few rows), not by scope (thousands), whatever the planner guesses
        sql = (f"SELECT d.record, t.body FROM docs d INDEXED BY docs_id LEFT JOIN texts t ON t.doc = d.rowid"
               f" WHERE {where} AND d.id IN ({marks})")
        for record, body in db.execute(sql, {**params, **names}):
            memory = decode(record, body)  # db.DamagedRow for a hand-edited row, as every read of the index
            out[memory.id] = memory
    return out
