"""Ranked, fuzzy and regex search over the FTS5 index (SPEC.md section 5).

Ranked mode finds memories in up to four tiers; a hit's ``match`` says which:

1. ``exact``: every query word matches (FTS5 ``AND`` of quoted phrases);
2. ``partial``: some words match (``OR``), when tier 1 filled fewer than ``limit``;
3. ``fuzzy``: when tiers 1–2 filled fewer than ``limit``, query words of four or more
   letters are widened to close vocabulary terms (rapidfuzz ratio >= 75, same first
   letter, length within 2) and the query is run again (``OR``) for memories not yet found;
4. ``substring``: nothing found so far, but the normalised query occurs inside a
   memory's text (``instr``), as for a single CJK character.

So a miss in the index never reads as "no memory" while a fallback would find one.

Score within a tier (higher is better), one formula, documented in the README::

    score = relevance * (0.8 + 0.1 * importance) * (0.8 + 0.2 * 0.5 ** (age_days / 90))

where ``relevance = -bm25(fts, 1.0, 2.0, 1.5)`` (body, subject and tags weighted
1 : 2 : 1.5; FTS5's bm25 is negative, better is lower) and ``age_days`` is the time
since ``updatedAt``. Both factors are positive and independent of relevance, so the
score is monotone in relevance: of two memories with equal importance and age, the
more relevant one never ranks lower. Tiers order before scores.
"""

from __future__ import annotations

import json
from datetime import datetime

from memcli.index import Hit, Query, paths_match
from memcli.index.db import IndexDB
from memcli.index.tokenize import match_expression, normalise, phrase, plain_token, quote_term, words
from memcli.model import Memory, from_dict

TIERS = ("exact", "partial", "fuzzy", "substring")
FUZZY_CUTOFF = 75
HALF_LIFE_DAYS = 90.0
#: BM25 relevance, positive (FTS5's bm25 is negative, better is lower). It may be tiny for
#: a word most memories share (FTS5 floors such an IDF at 1e-6), but it stays a common
#: factor, so importance and recency still order those memories.
_RELEVANCE = "(-bm25(fts, 1.0, 2.0, 1.5))"
_SCORE = (f"{_RELEVANCE} * (0.8 + 0.1 * d.importance)"
          " * (0.8 + 0.2 * pow(0.5, max(0.0, :now - coalesce(d.updated, :now)) / 86400.0 / :half))")


def _filters(query: Query) -> tuple[str, dict]:
    """SQL conditions on ``docs d`` for the scope, status, expiry and field filters."""
    params: dict = {"now": query.now.timestamp(), "half": HALF_LIFE_DAYS}
    scope_terms = []
    for i, scope in enumerate(query.scopes):
        params[f"s{i}"] = scope
        scope_terms.append(f"d.scope GLOB :s{i}" if any(c in scope for c in "*?[") else f"d.scope = :s{i}")
    where = ["d.id IS NOT NULL", "(" + (" OR ".join(scope_terms) or "0") + ")"]
    if query.actor is not None:  # another user's personal scope never, whatever the patterns say
        params["me"] = f"user:{query.actor}"
        where.append("(d.scope NOT LIKE 'user:%' OR d.scope = :me)")
    statuses = []
    for i, status in enumerate(query.statuses):
        params[f"st{i}"] = status
        statuses.append(f":st{i}")
    where.append(f"d.status IN ({', '.join(statuses) or 'NULL'})")
    if not query.include_expired:
        where.append("(d.expire IS NULL OR d.expire > :now)")
    for key, column in (("category", "category"), ("subject", "subject")):
        value = getattr(query, key)
        if value is not None:
            params[key] = value
            where.append(f"d.{column} = :{key}")
    if query.tag is not None:
        params["tag"] = query.tag
        where.append("EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value = :tag)")
    if query.path is not None:
        params["path"] = query.path
        where.append("memcli_paths_match(json_extract(d.record, '$.paths'), :path)")
    for name, column, op in (("created_after", "created", ">="), ("created_before", "created", "<"),
                             ("updated_after", "updated", ">="), ("updated_before", "updated", "<")):
        value = getattr(query, name)
        if value is not None:
            params[name] = value.timestamp()
            where.append(f"d.{column} {op} :{name}")
    return " AND ".join(where), params


def _sql_paths_match(globs_json: str | None, path: str) -> int:
    return int(paths_match(json.loads(globs_json or "[]"), path))


class FtsRetriever:
    """The index-backed retriever (see :class:`memcli.index.Retriever`).

    Args:
        index: an opened, synced :class:`IndexDB`.
    """

    def __init__(self, index: IndexDB) -> None:
        self.index = index
        self.db = index.db
        self.db.create_function("memcli_paths_match", 2, _sql_paths_match, deterministic=True)

    def search(self, query: Query) -> list[Hit]:
        """Search by ``query.mode``; see the module docstring for tiers and scores.

        Raises:
            UsageProblem: in ``grep`` mode, an invalid regular expression or one that takes
                over ``scan.GREP_BUDGET`` seconds.
        """
        if query.mode == "grep":
            return self._grep(query)
        if not query.text.strip():
            return self._all(query)
        if query.mode == "fuzzy":
            return self._fuzzy(query, words(query.text), [], "fuzzy")
        return self._ranked(query)

    # --- tiers -------------------------------------------------------------------------

    def _run(self, query: Query, expression: str, tier: str, exclude: set[str], limit: int) -> list[Hit]:
        where, params = _filters(query)
        params.update(match=expression, limit=limit + len(exclude))
        sql = (f"SELECT d.record, {_SCORE} AS score, {_RELEVANCE} AS rel, d.importance"
               f" FROM fts JOIN docs d ON d.rowid = fts.rowid WHERE fts MATCH :match AND {where}"
               " ORDER BY score DESC, d.id LIMIT :limit")
        hits = []
        for record, score, relevance, _ in self.db.execute(sql, params):
            memory = _memory(record)
            if memory.id not in exclude:
                hits.append(Hit(memory, score, tier, {"bm25": relevance, "tier": TIERS.index(tier)}))
        return hits[:limit]

    def _ranked(self, query: Query) -> list[Hit]:
        groups = [[p] for p in (phrase(w) for w in words(query.text)) if p]
        hits: list[Hit] = []
        if groups:
            hits = self._run(query, match_expression(groups, "AND"), "exact", set(), query.limit)
            if len(hits) < query.limit and len(groups) > 1:
                hits += self._run(query, match_expression(groups, "OR"), "partial", {h.memory.id for h in hits},
                                  query.limit - len(hits))
        if len(hits) < query.limit:
            hits += self._fuzzy(query, words(query.text), hits, "fuzzy")
        if not hits:
            hits = self._substring(query)
        return _explain(hits[: query.limit], query.now)

    def _fuzzy(self, query: Query, terms: list[str], found: list[Hit], tier: str) -> list[Hit]:
        groups, corrected = [], False
        for word in terms:
            token = plain_token(word)
            alternatives = [p for p in [phrase(word)] if p]
            # Known words are corrected too: whether a word is "known" cannot depend on the
            # vocabulary, which holds every scope and status (another user's or an archived
            # memory would switch correction off), and a typed word may match one memory
            # exactly while the one meant is spelled right (ranked below, as a fuzzy hit).
            if token and len(token) >= 4:
                from rapidfuzz import process

                pool = [t for (t,) in self.db.execute(
                    "SELECT term FROM vocab WHERE term >= ? AND term < ? AND length(term) BETWEEN ? AND ?"
                    " AND term != ?", (token[0], token[0] + "\uffff", max(3, len(token) - 6), len(token) + 3, token))]
                close = process.extract(token, pool, scorer=_typo_score, score_cutoff=FUZZY_CUTOFF, limit=5)
                alternatives += [quote_term(term) for term, _, _ in close]
                corrected = corrected or bool(close)
            if alternatives:
                groups.append(alternatives)
        if not groups or (tier == "fuzzy" and query.mode != "fuzzy" and not corrected):
            return []
        exclude = {h.memory.id for h in found}
        operator = "AND" if query.mode == "fuzzy" else "OR"
        return self._run(query, match_expression(groups, operator), tier, exclude, query.limit - len(found))

    def _substring(self, query: Query) -> list[Hit]:
        where, params = _filters(query)
        params.update(needle=normalise(" ".join(query.text.split())), limit=query.limit)
        sql = (f"SELECT d.record, (0.8 + 0.1 * d.importance) FROM docs d WHERE {where}"
               " AND instr(d.search_text, :needle) > 0 ORDER BY d.importance DESC, d.updated DESC, d.id LIMIT :limit")
        return [Hit(_memory(r), s, "substring", {"tier": 3}) for r, s in self.db.execute(sql, params)]

    def _grep(self, query: Query) -> list[Hit]:
        from memcli.index.scan import Grep

        regex = Grep(query.text)
        where, params = _filters(query)
        hits = []
        for record, text in self.db.execute(
                f"SELECT d.record, json_extract(d.record, '$.text') FROM docs d WHERE {where}"
                " ORDER BY d.importance DESC, d.updated DESC, d.id", params):
            if regex.search(text):
                hits.append(Hit(_memory(record), 1.0, "regex"))
                if len(hits) >= query.limit:
                    break
        return hits

    def _all(self, query: Query) -> list[Hit]:
        where, params = _filters(query)
        params["limit"] = query.limit
        order = ("d.created DESC, d.id DESC" if query.order == "newest"
                 else "d.pinned DESC, d.importance DESC, d.updated DESC, d.id")
        sql = f"SELECT d.record FROM docs d WHERE {where} ORDER BY {order} LIMIT :limit"
        return [Hit(_memory(r), 0.0, "all") for (r,) in self.db.execute(sql, params)]

    def count(self, query: Query) -> int:
        """See :class:`memcli.index.Retriever`."""
        where, params = _filters(query)
        return self.db.execute(f"SELECT count(*) FROM docs d WHERE {where}", params).fetchone()[0]


def _typo_score(word: str, term: str, **_: object) -> float:
    """How close a query word is to an indexed term (0–100), typo- and suffix-tolerant.

    The better of rapidfuzz's ratio against the whole term and against the word cut to
    the term's length plus one, so that a misspelt ending still reaches the stem
    (``migratoins`` -> ``migrat``, ``postgress`` -> ``postgr``). Terms under five letters
    only count whole.
    """
    from rapidfuzz import fuzz

    whole = fuzz.ratio(word, term)
    if len(term) < 5 or len(word) <= len(term):
        return whole
    return max(whole, fuzz.ratio(word[: len(term) + 1], term))


def _memory(record: str) -> Memory:
    return from_dict(json.loads(record))


def _explain(hits: list[Hit], now: datetime) -> list[Hit]:
    """Fill each hit's ``parts`` with the factors of its score (for ``recall --explain``)."""
    for hit in hits:
        memory = hit.memory
        age = max(0.0, (now - memory.updated_at).total_seconds() / 86400) if memory.updated_at else 0.0
        hit.parts.update(importance=0.8 + 0.1 * memory.importance,
                         recency=0.8 + 0.2 * 0.5 ** (age / HALF_LIFE_DAYS), age_days=round(age, 2))
    return hits
