"""The ranked tiers' bounded pool (issue 21: recall of a common word at 100,000 memories):
``search._RANKED`` reads the rows of only the matches that can reach the top ``k`` and
gives the same rows, in the same order, with the same scores and relevance, as the plain
``ORDER BY score DESC, d.id`` over the join of every match with its row.

Real files, a real FTS5 index (``IndexDB.sync``); the plain join is the reference, run on
the same connection and state. The bar is set by the ``POOL_FIRST`` most relevant matches;
the property test lowers it so that small stores prune too.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.index import Query
from memcli.index import search as S

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
FILLER = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "islet", "juniper", "kelp"]


def _write(root: Path, n: int, body: str, importance: int, age_days: int, status: str = "active",
           scope: str = "project", category: str = "fact") -> None:
    stamp = (NOW - timedelta(days=age_days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    folder = root / "memories" / scope / "2026-01"
    folder.mkdir(parents=True, exist_ok=True)
    memory_id = f"01jz{n:022d}"
    (folder / f"{memory_id}.md").write_text(
        f"---\nid: {memory_id}\nscope: {scope}\nstatus: {status}\ncategory: {category}\nimportance: {importance}\n"
        f"createdAt: {stamp}\nupdatedAt: {stamp}\n---\n{body}\n", encoding="utf-8")


def _body(mentions: int, length: int, salt: int) -> str:
    return " ".join(["deploy"] * mentions + [FILLER[(salt + k) % len(FILLER)] for k in range(length)])


def _plain(retriever: S.FtsRetriever, query: Query, expression: str, limit: int) -> list[tuple]:
    """The reference: every match joined with its row, scored and sorted by SQLite."""
    where, params = S._filters(query)
    params.update(match=expression, limit=limit)
    return [(S._memory(r, b).id, score, rel) for r, b, score, rel in retriever.db.execute(
        f"SELECT d.record, t.body, {S._SCORE} AS score, {S._RELEVANCE} AS rel"
        f" FROM fts JOIN docs d ON d.rowid = fts.rowid {S.TEXT_JOIN} WHERE fts MATCH :match AND {where}"
        " ORDER BY score DESC, d.id LIMIT :limit", params)]


def _bounded(retriever: S.FtsRetriever, query: Query, expression: str, limit: int) -> list[tuple]:
    return [(h.memory.id, h.score, h.parts["bm25"]) for h in retriever._run(query, expression, "exact", set(), limit)]


def _read(retriever: S.FtsRetriever, query: Query, expression: str, limit: int) -> tuple[int, int]:
    """(matches, matches whose rows the bounded statement reads past the bar), from its own pieces."""
    where, params = S._filters(query)
    params.update(match=expression, limit=limit, first=max(S.POOL_FIRST, 4 * limit), bound=S.SCORE_BOUND)
    head = S._RANKED.format(where=where).split("best(r, score")[0].rstrip().rstrip(",")
    return retriever.db.execute(
        f"{head} SELECT count(*), sum((SELECT s FROM bar) IS NULL OR rel * :bound >= (SELECT s FROM bar)) FROM pool",
        params).fetchone()


def _index(root: Path):
    from memcli.index.db import IndexDB
    from memcli.store.files import MemoryFiles

    (root / ".cache").mkdir(exist_ok=True)
    index = IndexDB(MemoryFiles(root), root / ".cache" / "index.sqlite3")
    index.sync()
    return index


QUERIES = [
    (10, {}), (1, {}), (3, {}), (25, {"statuses": ("active", "archived")}),
    (10, {"category": "decision"}), (5, {"scopes": ("global",)}), (10, {"include_expired": True}),
]


@pytest.mark.slow
def test_a_common_word_over_a_thousand_memories_reads_a_part_and_ranks_as_the_plain_join():
    """Where it matters: a word in 1,200 memories of varied length, mentions, importance,
    age, status, scope and category (many exact ties too); for each limit and filter the
    hits, their order, scores and relevance are those of the plain join, and for the plain
    query the bar leaves most rows unread."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in range(1200):
            _write(root, n, _body(1 + n % 3, 3 + (n * 7) % 11, n), 1 + (n * 5) % 5, (n * 13) % 400,
                   status="archived" if n % 17 == 0 else "active", scope="global" if n % 9 == 0 else "project",
                   category="decision" if n % 23 == 0 else "fact")
        for n in range(1200, 1260):  # same text, importance and age: equal scores, ordered by id
            _write(root, n, _body(3, 3, 0), 5, 0)
        index = _index(root)
        try:
            retriever = S.FtsRetriever(index)
            for limit, extra in QUERIES:
                query = Query(text="deploy", scopes=extra.pop("scopes", ("project", "global")), now=NOW, limit=limit,
                              **extra)
                assert _bounded(retriever, query, '"deploy"', limit) == _plain(retriever, query, '"deploy"', limit)
            query = Query(text="deploy", scopes=("project", "global"), now=NOW, limit=10)
            matches, read = _read(retriever, query, '"deploy"', 10)
            assert matches == 1260 and read < matches // 2, (matches, read)
        finally:
            index.close()


doc = st.tuples(st.integers(0, 4), st.integers(0, 9), st.integers(1, 5), st.sampled_from([0, 0, 3, 45, 200, 2000]),
                st.sampled_from(["active", "active", "active", "archived"]), st.sampled_from(["project", "global"]),
                st.sampled_from(["fact", "decision"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc, min_size=1, max_size=40), first=st.integers(1, 6), limit=st.integers(1, 8),
       which=st.integers(0, len(QUERIES) - 1))
@pytest.mark.slow
def test_property_the_bounded_pool_ranks_as_the_plain_join(monkeypatch, docs, first, limit, which):
    """Any store (mentions 0-4 of the word, lengths, importance, ages, statuses, scopes,
    categories; repeated tuples give exact ties), a bar set by 1-6 matches, any limit and
    filter: the same hits in the same order with the same scores as the plain join."""
    monkeypatch.setattr(S, "POOL_FIRST", first)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n, (mentions, length, importance, age, status, scope, category) in enumerate(docs):
            _write(root, n, _body(mentions, length, n % 3), importance, age, status, scope, category)
        index = _index(root)
        try:
            retriever = S.FtsRetriever(index)
            extra = dict(QUERIES[which][1])
            query = Query(text="deploy", scopes=extra.pop("scopes", ("project", "global")), now=NOW, limit=limit,
                          **extra)
            assert _bounded(retriever, query, '"deploy"', limit) == _plain(retriever, query, '"deploy"', limit)
        finally:
            index.close()
