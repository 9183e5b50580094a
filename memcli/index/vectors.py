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
this process (:class:`Matrix`). Nothing here is imported by hooks or one-shot commands.
"""

from __future__ import annotations

import json
import sqlite3
import threading

from memcli.index import Query, paths_match
from memcli.model import Memory, from_dict

SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (id TEXT NOT NULL, model TEXT NOT NULL, hash TEXT NOT NULL,"
          " cjk INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (id, model))")
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
    """Create the ``vectors`` table if it is missing, register the SQL function the filters
    use, and, given a ``model_id``, delete the rows of every other model. Never raises:
    False when the database refused (read-only, locked), and the caller goes on without vectors.
    """
    try:
        db.create_function("memcli_paths_match", 2, _paths_match, deterministic=True)
        db.execute(SCHEMA)
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'vectors_INSERT'").fetchone():
            from memcli.index.db import change_triggers

            for statement in change_triggers("vectors"):
                db.execute(statement)
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
        "SELECT d.id, d.hash, d.record FROM docs d LEFT JOIN vectors v ON v.id = d.id AND v.model = ?"
        " WHERE d.id IS NOT NULL AND (v.id IS NULL OR v.hash != d.hash)"
        " ORDER BY d.status != 'active', d.updated DESC LIMIT ?", (model_id, limit)).fetchall()
    return [(i, h, text_of(from_dict(json.loads(r)))) for i, h, r in rows]


def store(db: sqlite3.Connection, model_id: str, rows: list[tuple[str, str, str]], vectors) -> None:  # noqa: ANN001
    """Write the vectors of ``rows`` (``(id, hash, text)`` as :func:`missing` gives them;
    ``vectors`` their ``(n, dim)`` float32 array) in one transaction.

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


def backfill(db: sqlite3.Connection, embedder, limit: int | None = None, stop=None) -> int:  # noqa: ANN001
    """Embed memories of one index that have no current vector, ``BATCH`` at a time.

    Args:
        db: a connection to the index (its own: this runs in a background thread).
        embedder: a loaded ``embed.Embedder``.
        limit: at most this many memories (None: all of them).
        stop: a ``threading.Event``; the backfill ends between two batches when it is set.

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
        vectors = embedder.embed([t for _, _, t in rows])
        try:
            store(db, embedder.model_id, rows, vectors)
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
    """The vectors of one index and model held in this process: ``ids``, their ``hashes``, a
    ``(capacity, dim)`` float32 array whose first ``size`` rows are in use, and ``cjk`` flags.
    Rows are loaded from the table when a search first needs them and replaced in place when
    a memory's hash changes; a new id takes the next row (the array doubles when full)."""

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.row: dict[str, int] = {}
        self.hashes: list[str] = []
        self.size = 0
        self.vectors = np.zeros((64, dim), dtype=np.float32)
        self.cjk = np.zeros(64, dtype=bool)
        self.lock = threading.Lock()
        self.version = 0  # moves on every put: a cached row set (:func:`_rows`) is then stale
        self.allowed: dict[tuple, tuple] = {}  # filters -> (stamp, ids, rows, expire): see _rows

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
        self.version += 1


def matrix_of(path: str, embedder) -> Matrix:  # noqa: ANN001
    """This process's :class:`Matrix` for the index at ``path`` and ``embedder``'s model."""
    key = (path, embedder.model_id)
    with _LOCK:
        found = _MATRICES.get(key)
        if found is None:
            found = _MATRICES[key] = Matrix(embedder.dim)
    return found


def search(db: sqlite3.Connection, path: str, embedder, query: Query, vector, limit: int,  # noqa: ANN001
           also: list[str] | tuple[str, ...] = ()) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Score the memories of one index that pass ``query``'s filters against the query ``vector``.

    Args:
        db: a connection to the index (``prepare`` is called on it).
        path: the index file (the key of this process's :class:`Matrix`).
        embedder: the loaded ``embed.Embedder`` that made ``vector`` (``(dim,)`` float32).
        query: its filters apply (``search._filters``); its text is not read here.
        limit: how many of the best to return.
        also: ids whose score is wanted whatever their rank (the lexical hits, for
            ``parts["cosine"]``); only those that pass the filters get one.

    Returns:
        ``([(id, score)] best first, at most limit; {id: score} for ``also``)``; scores are
        the model's weighted cosines (-1 to 1). Empty when the index has no vectors table.
    """
    import numpy as np

    from memcli.index.embed import is_cjk

    if not prepare(db):
        return [], {}
    matrix = matrix_of(path, embedder)
    with matrix.lock:
        found = _rows(db, matrix, embedder, query)
        if found is None:
            return [], {}
        ids, index, expire = found
        if not query.include_expired:  # the cached set holds every expiry: cut at this query's now
            live = np.isnan(expire) | (expire > query.now.timestamp())
            ids, index = [i for i, keep in zip(ids, live) if keep] if not live.all() else ids, index[live]
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


def _rows(db: sqlite3.Connection, matrix: Matrix, embedder, query: Query):  # noqa: ANN001, ANN202
    """The memories of one index that pass ``query``'s filters, expiry aside, and have a
    current vector: ``(ids, their matrix rows as an int64 array, their expireAt as float
    seconds, NaN for none)``, or None when the index refused. Kept in ``matrix.allowed`` per
    set of filters (in whichever connection) while neither the index (its ``changes``
    counter, moved by triggers on ``docs`` and ``vectors``: ``db.change_triggers``) nor the
    matrix has changed: a warm process's repeated recall then reads no rows and loops over
    none in Python. A set kept
    too long could only miss a memory, never show one the filters refuse: every hit is read
    again through them (``records``). Called with ``matrix.lock`` held.
    """
    import numpy as np

    from memcli.index.search import _filters

    where, params = _filters(query)
    params["now"] = float("-inf")  # every expiry passes here; the caller cuts at its own now
    key = (where, tuple(sorted((k, str(v)) for k, v in params.items())))
    try:
        changes = db.execute("SELECT n FROM changes").fetchone()[0]
    except (sqlite3.Error, TypeError):
        return None
    cached = matrix.allowed.get(key)
    if cached is not None and cached[0] == (changes, matrix.version):
        return cached[1:]
    try:
        allowed = db.execute(f"SELECT d.id, d.hash, d.expire FROM docs d WHERE {where}", params).fetchall()
    except sqlite3.Error:
        return None
    stale = [(i, h) for i, h, _ in allowed if (at := matrix.row.get(i)) is None or matrix.hashes[at] != h]
    if stale:
        wanted = dict(stale)
        for start in range(0, len(stale), CHUNK):
            chunk = [i for i, _ in stale[start:start + CHUNK]]
            marks = ",".join("?" * len(chunk))
            for memory_id, digest, cjk, blob in db.execute(
                    f"SELECT id, hash, cjk, vec FROM vectors WHERE model = ? AND id IN ({marks})",
                    (embedder.model_id, *chunk)):
                if wanted.get(memory_id) == digest:
                    matrix.put(memory_id, digest, blob, bool(cjk))
    kept = [(i, at, e) for i, h, e in allowed if (at := matrix.row.get(i)) is not None and matrix.hashes[at] == h]
    found = ([i for i, _, _ in kept], np.fromiter((at for _, at, _ in kept), dtype=np.int64, count=len(kept)),
             np.fromiter((np.nan if e is None else e for _, _, e in kept), dtype=np.float64, count=len(kept)))
    if len(matrix.allowed) >= 32:
        matrix.allowed.clear()
    matrix.allowed[key] = ((changes, matrix.version), *found)
    return found


def records(db: sqlite3.Connection, query: Query, ids: list[str]) -> dict[str, Memory]:
    """The memories of ``ids`` that pass ``query``'s filters in this index (the check every
    semantic hit goes through before it is shown, whoever scored it)."""
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
        sql = f"SELECT d.record FROM docs d INDEXED BY docs_id WHERE {where} AND d.id IN ({marks})"
        for (record,) in db.execute(sql, {**params, **names}):
            memory = from_dict(json.loads(record))
            out[memory.id] = memory
    return out
