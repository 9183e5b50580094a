"""Ranked, fuzzy and regex search over the FTS5 index (SPEC.md section 5).

A ranked query is first analysed (:mod:`memcli.index.query`): stop words are left out
when the query has content words, unsegmented CJK is split into words, and each word
becomes its quoted FTS5 phrase plus the other side of an abbreviation (``db`` /
``database``). Memories are then found in up to four tiers; a hit's ``match`` says which:

1. ``exact``: every word matches, as typed or in another form (FTS5 ``AND``);
2. ``fuzzy``: every word matches, some only through a typo correction: a close
   vocabulary term (rapidfuzz ratio >= 75, same first letter, length within 2, not a
   longer word that starts with it), or an exact hit whose only form of a word is a
   one-letter slip that stems alike (``kubernets`` / ``kubernetes``, see
   :func:`_stemmed_typo`);
3. ``partial``: some words match (``OR``; corrections only for words no memory holds);
4. ``substring``: nothing found so far, but the normalised query occurs inside a
   memory's text (``instr``), as for a single CJK character.

So a typo ranks directly below the exact hits, and a miss in the index never reads as
"no memory" while a fallback would find one.

Score within a tier (higher is better), one formula, documented in the README::

    score = relevance * (0.8 + 0.1 * importance) * (0.8 + 0.2 * 0.5 ** (age_days / 90))

where ``relevance = -bm25(fts, 1.0, 2.0, 1.5)`` (body, subject and tags weighted
1 : 2 : 1.5; FTS5's bm25 is negative, better is lower), multiplied in the ``partial`` tier
by the hit's ``coverage`` (the IDF-weighted share of the query's words it holds, see
:meth:`FtsRetriever._coverage`: BM25 alone would count a word twice when two of its forms
match), and ``age_days`` is the time since ``updatedAt``. The importance and recency
factors are positive and independent of relevance, so the score is monotone in
relevance: of two memories with equal importance and age, the more relevant one never
ranks lower. Tiers order before scores. A ranked hit's ``parts`` hold its ``coverage``,
which the prompt hook's relevance floor reads.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from memcli.index import Hit, Query, narrowness, paths_match
from memcli.index.db import SEARCH_SQL, TEXT_JOIN, IndexDB, decode, fts_values
from memcli.index.db import score as number
from memcli.index.query import Word, analyse, content, other_forms
from memcli.index.tokenize import match_expression, normalise, quote_term, stem, surface_words, tokens
from memcli.model import Memory

TIERS = ("exact", "fuzzy", "partial", "substring")
FUZZY_CUTOFF = 75
#: In a hit's ``coverage``: the weight of a query word no memory holds, as a share of the
#: mean weight of the query's words that some memory holds (see ``FtsRetriever._coverage``).
UNKNOWN_WEIGHT = 1.0
#: The least weight (IDF) of a word in ``coverage``: in a workspace of a few memories, a word
#: most of them hold would otherwise weigh almost nothing. ln 2: a word half of them hold.
MIN_IDF = 0.6931
#: Partial hits fetched (best BM25 first) to be ordered by coverage, however few are wanted.
PARTIAL_POOL = 50
#: In a hit's ``coverage``: the share of a word's weight that a typo-corrected match earns.
TYPO_WEIGHT = 0.8
HALF_LIFE_DAYS = 90.0
#: Memories whose ``paths`` match a path-like query, looked at before the narrowest are kept.
PATH_POOL = 200
#: BM25 relevance, positive (FTS5's bm25 is negative, better is lower). It may be tiny for
#: a word most memories share (FTS5 floors such an IDF at 1e-6), but it stays a common
#: factor, so importance and recency still order those memories.
_RELEVANCE = "(-bm25(fts, 1.0, 2.0, 1.5))"
_FACTORS = ("(0.8 + 0.1 * d.importance)"
            " * (0.8 + 0.2 * pow(0.5, max(0.0, :now - coalesce(d.updated, :now)) / 86400.0 / :half))")
_SCORE = f"{_RELEVANCE} * {_FACTORS}"
#: The largest value of ``_FACTORS`` (importance 5, recency 1), with a margin for the rounding
#: of a product of doubles: a score is at most its relevance times this (``_RANKED``).
SCORE_BOUND = (0.8 + 0.1 * 5) * (1 + 1e-9)
#: The matches whose rows set the bar of ``_RANKED`` (or four times the hits wanted), most relevant first.
POOL_FIRST = 256
#: The best ``:limit`` eligible matches of ``:match`` (``{where}``: ``_filters``) by ``_SCORE``,
#: then id, with their relevance and text: the same rows, in the same order, with the same
#: numbers, as ``ORDER BY score DESC, d.id`` over the join of every match with its row, but
#: reading the rows of only the matches that can reach them. A threshold algorithm (Fagin,
#: Lotem and Naor, "Optimal aggregation algorithms for middleware", 2003) in one statement
#: (one state of the index):
#:
#: 1. ``pool``: every match and its BM25 relevance, from FTS5 alone (no row of ``docs`` read;
#:    this part still grows with the number of matches);
#: 2. ``bar``: the ``:limit``-th score among the ``:first`` most relevant matches (NULL when
#:    fewer are eligible);
#: 3. a score is its relevance times ``_FACTORS`` <= ``SCORE_BOUND``, so a match whose
#:    relevance times ``SCORE_BOUND`` is below the bar scores below it, and below the
#:    ``:limit``-th best: its row is never read. The rest are scored as before (the relevance
#:    is the same number FTS5 gave; the factors the same SQL), sorted, and only the best get
#:    their wide columns read.
#:
#: Exact, ties included (a match left out scores strictly below the bar), as long as every
#: row's importance is 1-5 (the model's range: rows are written from validated memories
#: only); tests/test_search_pool.py compares it with the plain join. For ``deploy`` at
#: 100,000 memories (9,048 matches) it reads 2,472 rows instead of 9,048; when relevance
#: hardly varies (a word most memories hold) it reads nearly all, as the plain join does.
_RANKED = f"""WITH pool(r, rel) AS MATERIALIZED (SELECT rowid, {_RELEVANCE} FROM fts WHERE fts MATCH :match),
bar(s) AS (SELECT p.rel * {_FACTORS} AS score FROM (SELECT r, rel FROM pool ORDER BY rel DESC LIMIT :first) AS p
           CROSS JOIN docs d ON d.rowid = p.r WHERE {{where}} ORDER BY score DESC LIMIT 1 OFFSET :limit - 1),
best(r, score, rel, id) AS (
    SELECT d.rowid, pool.rel * {_FACTORS} AS score, pool.rel, d.id FROM pool CROSS JOIN docs d ON d.rowid = pool.r
    WHERE ((SELECT s FROM bar) IS NULL OR pool.rel * :bound >= (SELECT s FROM bar)) AND {{where}}
    ORDER BY score DESC, d.id LIMIT :limit)
SELECT d.record, t.body, best.score, best.rel, {SEARCH_SQL}, d.search_more
FROM best CROSS JOIN docs d ON d.rowid = best.r {TEXT_JOIN} ORDER BY best.score DESC, best.id"""


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
        if any(s.startswith("session:") or any(c in s for c in "*?[") for s in query.scopes):
            params["actor"] = query.actor  # a session is its owner's (policy.owner): the provenance actor
            where.append("(d.scope NOT LIKE 'session:%' OR json_extract(d.record, '$.provenance.actor') = :actor)")
        # else no scope asked for can be a session's: no row's record is read to filter (the
        # count is then answered from POOL_INDEX alone)
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
        #: Per hit: its memory and its normalised text (``db.SEARCH_SQL`` and ``search_more``).
        self._docs: dict[str, tuple[Memory, str]] = {}
        self._tokens: dict[str, list[str]] = {}
        self._vocab: dict[str, bool] = {}
        self._counts: dict[str, int] = {}

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
            return self._fuzzy(query)
        if query.mode == "exact":
            return self._exact(query)
        return self._ranked(query)

    # --- tiers -------------------------------------------------------------------------

    def _run(self, query: Query, expression: str, tier: str, exclude: set[str], limit: int) -> list[Hit]:
        """The best ``limit`` matches of ``expression`` not in ``exclude`` (``_RANKED``), in ``tier``."""
        where, params = _filters(query)
        want = limit + len(exclude)
        params.update(match=expression, limit=want, first=max(POOL_FIRST, 4 * want), bound=SCORE_BOUND)
        hits = []
        for record, body, score, relevance, text, more in self.db.execute(_RANKED.format(where=where), params):
            memory = _memory(record, body)
            if memory.id not in exclude:
                hits.append(Hit(memory, number(score), tier, {"bm25": relevance, "tier": TIERS.index(tier)}))
                self._docs[memory.id] = (memory, f"{text or ''} {more or ''}")
        return hits[:limit]

    def _indexed(self, memory_id: str) -> list[str]:
        """The tokens the FTS5 table holds for a hit (its text, subject and tags, ``|`` between
        them), computed again from the memory: the table keeps no copy (``db.fts_values``)."""
        found = self._tokens.get(memory_id)
        if found is None:
            body, subject, tags = fts_values(self._docs[memory_id][0])
            found = self._tokens[memory_id] = f"{body} | {subject} | {tags}".split()
        return found

    def _known(self, term: str) -> bool:
        """Whether the index holds ``term`` (a token), in any memory (cached per retriever)."""
        found = self._vocab.get(term)
        if found is None:
            found = self._vocab[term] = self.db.execute(
                "SELECT 1 FROM vocab WHERE term = ? LIMIT 1", (term,)).fetchone() is not None
        return found

    def _held(self, term: str) -> int:
        """How many memories hold the token ``term`` (the vocabulary's document count; cached)."""
        found = self._counts.get(term)
        if found is None:
            row = self.db.execute("SELECT doc FROM vocab WHERE term = ?", (term,)).fetchone()
            found = self._counts[term] = row[0] if row else 0
        return found

    def _exact(self, query: Query) -> list[Hit]:
        """The exact tier alone: every content word (or its other forms) held, no typo
        correction, no partial match (``Query.mode`` ``exact``: the pre-tool hook's look-up of a
        command's words, which must not load the correction machinery on every tool call)."""
        words, _ = content(analyse(query.text, self._known))
        if not words:
            return []
        return _explain(self._run(query, match_expression([_forms(w) for w in words], "AND"), "exact", set(),
                                  query.limit), query.now)

    def _ranked(self, query: Query) -> list[Hit]:
        words, only_stop = content(analyse(query.text, self._known))
        if not words:
            return self._substring(query)
        forms = [_forms(w) for w in words]
        exact = self._run(query, match_expression(forms, "AND"), "exact", set(), query.limit)
        if only_stop:  # stop words alone: their literal text, never a looser match, never an answer
            found = _explain(exact or self._substring(query), query.now)
            for hit in found:
                hit.parts["stopwords"] = 1.0  # index.strength: weak
            return found
        slips = {h.memory.id for h in exact if _stemmed_typo(self._docs[h.memory.id][1], words)}
        hits = [h for h in exact if h.memory.id not in slips]
        if len(hits) >= query.limit:  # exact hits fill the limit: no typo correction can add one
            self._coverage(hits, forms, [[] for _ in words])
            return _explain(hits[: query.limit], query.now)
        fixes = [self._corrections(w) for w in words]
        groups = [f + c for f, c in zip(forms, fixes)]
        if slips or any(fixes):
            hits += self._run(query, match_expression(groups, "AND"), "fuzzy", {h.memory.id for h in hits},
                              query.limit - len(hits))
        if len(hits) < query.limit and (len(words) > 1 or len(words[0].tokens) > 1 and words[0].cjk):
            # a CJK word's bigrams match apart here: a bigram that some other memory holds
            # may have glued two words of the query into one (see memcli.index.query)
            pieces = [p for w, c in zip(words, fixes) for p in (_bigram_words(w) if w.cjk else [(w, c)])]
            words, fixes = [p[0] for p in pieces], [p[1] for p in pieces]
            # corrections of a word the index holds would only widen a partial match
            fixes = [c if len(w.tokens) == 1 and not self._known(w.tokens[0]) else [] for c, w in zip(fixes, words)]
            forms = [_forms(w) for w in words]
            groups = [f + c for f, c in zip(forms, fixes)]
            hits += self._run(query, match_expression(groups, "OR"), "partial", {h.memory.id for h in hits},
                              max(query.limit - len(hits), PARTIAL_POOL))
        if not hits:
            return self._substring(query)
        self._coverage(hits, forms, fixes)
        whole = [h for h in hits if h.match != "partial"]
        partial = [h for h in hits if h.match == "partial"]
        for hit in partial:  # BM25 counts a word twice when two of its forms match; coverage does not
            hit.score *= hit.parts["coverage"]
        partial.sort(key=lambda h: (-h.score, h.memory.id))
        return _explain((whole + partial)[: query.limit], query.now)

    def _corrections(self, word: Word) -> list[str]:
        """Close vocabulary terms for a typo in ``word`` (quoted), or [] (see the module docstring).

        Known words are corrected too: whether a word is "known" cannot depend on the
        vocabulary, which holds every scope and status (another user's or an archived memory
        would switch correction off), and a typed word may match one memory exactly while the
        one meant is spelled right (ranked below, as a fuzzy hit).
        """
        found = word.tokens
        if word.cjk or len(found) != 1 or not found[0].isascii() or not found[0].isalpha() or len(found[0]) < 4:
            return []
        from rapidfuzz import process

        token = found[0]
        pool = [t for (t,) in self.db.execute(
            "SELECT term FROM vocab WHERE term >= ? AND term < ? AND length(term) BETWEEN ? AND ?"
            " AND term != ?", (token[0], token[0] + "\uffff", max(3, len(token) - 6), len(token) + 3, token))]
        # a longer word (work -> worker) is no typo fix, nor, for a word the index holds, a
        # shorter one it starts with (postgres -> post: "postgres port" put "posting" above
        # "Prod Postgres runs on RDS"; deploymnet -> deploy stays a fix)
        known = self._known(token)  # a word some memory holds (postgres); a typo such as deploymnet is not
        pool = [t for t in pool if not t.startswith(token) and not (known and _shorter(word.text, token, t))]
        close = process.extract(token, pool, scorer=_typo_score, score_cutoff=FUZZY_CUTOFF, limit=5)
        return [quote_term(term) for term, _, _ in close]

    def _fuzzy(self, query: Query) -> list[Hit]:
        """``--fuzzy``: every content word, each widened to its close vocabulary terms."""
        words, _ = content(analyse(query.text, self._known))
        groups = [_forms(w) + self._corrections(w) for w in words]
        if not groups:
            return []
        return _explain(self._run(query, match_expression(groups, "AND"), "fuzzy", set(), query.limit), query.now)

    def _coverage(self, hits: list[Hit], forms: list[list[str]], fixes: list[list[str]]) -> None:
        """Set each hit's ``coverage``: the share of the query's weight that it matches (0-1).

        A query word weighs its BM25 inverse document frequency,
        ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` (Robertson-Sparck Jones, as Lucene's BM25
        has it), with ``N`` memories in the index and ``n`` of them holding the word or one of
        its corrections (from the vocabulary's document counts; for a phrase, those of its
        rarest token), and at least ``MIN_IDF``: a rare word counts for more than a common one.
        A word that no memory holds weighs ``UNKNOWN_WEIGHT`` times the mean weight of the
        query's other words (it tells nothing about which memory is meant, but that the
        query asks about more than they cover). A memory gets a word's whole
        weight when it holds the word as typed (or another form of it), ``TYPO_WEIGHT`` of it
        when it holds only a correction. Exact hits hold every word: coverage 1. Each hit's
        ``held`` is how many of the query's words (or their corrections) it holds.
        """
        import math

        if all(h.match == "exact" for h in hits):
            for hit in hits:
                hit.parts["coverage"], hit.parts["held"] = 1.0, float(len(forms))
            return
        total = max(1, self.db.execute("SELECT count(*) FROM docs WHERE id IS NOT NULL").fetchone()[0])
        idf: list[float | None] = []
        groups = [f + c for f, c in zip(forms, fixes)]
        for alternatives in groups:
            held = min(total, sum(min(self._held(t) for t in _unquote(a)) for a in alternatives))
            idf.append(max(MIN_IDF, math.log(1 + (total - held + 0.5) / (held + 0.5))) if held else None)
        known = [w for w in idf if w is not None]
        unknown = UNKNOWN_WEIGHT * (sum(known) / len(known) if known else 1.0)
        weights = [unknown if w is None else w for w in idf]
        whole = sum(weights) or 1.0
        for hit in hits:
            if hit.match == "exact":
                hit.parts["coverage"], hit.parts["held"] = 1.0, float(len(forms))
                continue
            doc = self._indexed(hit.memory.id)
            got, held = 0.0, 0
            for weight, typed, fixed in zip(weights, forms, fixes):
                if any(_holds(doc, _unquote(a)) for a in typed):
                    got, held = got + weight, held + 1
                elif any(_holds(doc, _unquote(a)) for a in fixed):
                    got, held = got + TYPO_WEIGHT * weight, held + 1
            hit.parts["coverage"] = round(min(1.0, got / whole), 4)
            hit.parts["held"] = float(held)

    def _substring(self, query: Query) -> list[Hit]:
        """The last tier: the normalised query inside a memory's text, or, for a query that is
        one file path (``api/ledger/importer.py``), a memory whose ``paths`` globs match it."""
        where, params = _filters(query)
        text = " ".join(query.text.split())
        params.update(needle=normalise(text), limit=query.limit, file=text.removeprefix("./"))
        path = bool(_PATH_LIKE.fullmatch(text))
        about = " OR memcli_paths_match(json_extract(d.record, '$.paths'), :file)" if path else ""
        if path:  # all of them, so that the memory for exactly that file is not cut by broader ones
            params["limit"] = max(query.limit, PATH_POOL)
        sql = (f"SELECT d.record, t.body, (0.8 + 0.1 * d.importance) FROM docs d {TEXT_JOIN} WHERE {where}"
               f" AND (instr({SEARCH_SQL}, :needle) > 0 OR instr(d.search_more, :needle) > 0{about})"
               " ORDER BY d.importance DESC, d.updated DESC, d.id LIMIT :limit")
        hits = [Hit(_memory(r, b), number(s), "substring", {"tier": 3}) for r, b, s in self.db.execute(sql, params)]
        if path:  # the narrowest glob first (index.narrowness), a mention in the text as a glob of its own
            named = normalise(params["file"])
            for hit in hits:
                hit.parts["narrow"] = narrowness(hit.memory.paths, params["file"], named in normalise(hit.memory.text))
                if hit.parts["narrow"] >= 1e9:
                    hit.parts["file"] = 1.0  # a memory written for exactly that file (index.strength)
            hits.sort(key=lambda h: -h.parts["narrow"])
        return hits[:query.limit]

    def _grep(self, query: Query) -> list[Hit]:
        from memcli.index.scan import Grep

        regex = Grep(query.text)
        where, params = _filters(query)
        hits: list[Hit] = []
        rows = self.db.execute(
            f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE {where}"
            " ORDER BY d.importance DESC, d.updated DESC, d.id", params)
        while len(hits) < query.limit:
            batch = rows.fetchmany(_GREP_BATCH)
            if not batch:
                break
            texts = [text for _, text in batch]
            if query.served is not None:  # the text as served: a secret is never matched (Query.served)
                texts = query.served(texts)
            for (record, body), text in zip(batch, texts):
                if regex.search(text):
                    hits.append(Hit(_memory(record, body), 1.0, "regex"))
                    if len(hits) >= query.limit:
                        break
        return hits

    def _all(self, query: Query) -> list[Hit]:
        where, params = _filters(query)
        params["limit"] = query.limit
        order = ("d.created DESC, d.id DESC" if query.order == "newest"
                 else "d.pinned DESC, d.importance DESC, d.updated DESC, d.id")
        sql = f"SELECT d.record, t.body FROM docs d {TEXT_JOIN} WHERE {where} ORDER BY {order} LIMIT :limit"
        return [Hit(_memory(r, b), 0.0, "all") for r, b in self.db.execute(sql, params)]

    def count(self, query: Query) -> int:
        """See :class:`memcli.index.Retriever`.

        Kept beside the index (:mod:`memcli.index.kept`): read again at the same state of the
        rows, the context block's count costs one row of ``changes``, not a scan of every
        eligible row (0.04-0.1 s at 100,000 memories); it holds until the first ``expireAt``
        among the rows it counted."""
        from memcli.index import kept

        where, params = _filters(query)
        key = json.dumps([where, {k: v for k, v in params.items() if k != "now"}], sort_keys=True, default=str)
        return kept.count(self.index, key, f"SELECT count(*), min(d.expire) FROM docs d WHERE {where}", params,
                          now=params["now"])


def _typo_score(word: str, term: str, **_: object) -> float:
    """How close a query word is to an indexed term (0–100), typo- and suffix-tolerant.

    The best of rapidfuzz's ratio against the whole term and against the word cut to the
    term's length plus one or minus one (not to its length: ``releas`` cut to ``relea`` is
    too close to ``relat``), so that a misspelt ending still reaches the
    stem (``migratoins`` -> ``migrat``, ``postgress`` -> ``postgr``) and so does a letter
    dropped before it (``pagnation`` stems to ``pagnat``; cut to ``pagn`` it is one letter
    from ``pagin``). Terms under five letters only count whole.
    """
    from rapidfuzz import fuzz

    whole = fuzz.ratio(word, term)
    if len(term) < 5 or len(word) <= len(term):
        return whole
    return max(whole, *(fuzz.ratio(word[:n], term) for n in (len(term) - 1, len(term) + 1)))


def _shorter(typed: str, token: str, term: str) -> bool:
    """Whether ``term`` is a shorter word that ``token`` (the stem of the typed word) starts
    with, two letters or more shorter, and not what the typed word stems to without its last
    letter (``postgress`` -> ``postgres`` -> ``postgr`` is a typo fix; ``postgr`` -> ``post`` is not)."""
    return token.startswith(term) and len(token) - len(term) >= 2 and stem(typed.strip(_PUNCT)[:-1]) != term


#: Rows read (and, with ``Query.served``, redacted in one batch) at a time by a ``grep`` search.
_GREP_BATCH = 256
_PUNCT = "\"'`.,;:!?()[]{}"
#: One file path: folders and a name with an extension (``api/ledger/importer.py``, ``.github/ci.yml``).
_PATH_LIKE = re.compile(r"(?:\./)?(?:[\w.@+-]+/)+[\w.@+-]*\.\w+")


def _forms(word: Word) -> list[str]:
    """A query word as quoted FTS5 phrases: as typed, and its other forms (abbreviations)."""
    typed = [" ".join(word.tokens)] + [" ".join(tokens(f)) for f in other_forms(word.text)]
    return [quote_term(t) for t in dict.fromkeys(typed) if t]


def _bigram_words(word: Word) -> list[tuple[Word, list[str]]]:
    """A CJK word as one word per bigram (with no corrections), for the partial tier."""
    return [(Word(word.text[i:i + 2], cjk=True), []) for i in range(len(word.text) - 1)] or [(word, [])]


def _unquote(alternative: str) -> list[str]:
    """The tokens of one quoted alternative of :func:`_forms` or a correction."""
    return alternative[1:-1].replace('""', '"').split()


def _holds(doc: list[str], phrase: list[str]) -> bool:
    """Whether the token list ``doc`` holds ``phrase`` as adjacent tokens."""
    size = len(phrase)
    return size > 0 and any(doc[i:i + size] == phrase for i in range(len(doc) - size + 1))


def _stemmed_typo(text: str, words: list[Word]) -> bool:
    """Whether an ``exact`` hit matched some query word only through a misspelling that
    stems alike (``kubernets`` and ``kubernetes`` both stem to ``kubernet``).

    ``text`` is the memory's normalised text. For each plain English query word the memory
    does not hold as typed, its words of the same stem are compared with it: another form
    (``deploy`` / ``deployments``: one is the other plus letters, or they differ by more than
    one edit) is a real match; only a one-letter slip inside the word (Damerau-Levenshtein
    distance 1, neither a prefix of the other) marks a typo.
    """
    surface = None
    for word in words:
        typed = word.text.strip("\"'`.,;:!?()[]{}")
        if word.cjk or len(typed) < 4 or not typed.isascii() or not typed.isalpha():
            continue
        if surface is None:
            surface = set(surface_words(text))
        if typed in surface:
            continue
        root = stem(typed)
        variants = [v for v in surface if v.isascii() and v.isalpha() and stem(v) == root]
        if variants and all(_slip(typed, v) for v in variants):
            return True
    return False


def _slip(a: str, b: str) -> bool:
    """One letter wrong, missing, extra or swapped inside a word (not a suffix added).

    That is an optimal-string-alignment (restricted Damerau-Levenshtein) distance of exactly
    1, checked directly: one substitution, one insertion or deletion, or two adjacent letters
    swapped (no ``rapidfuzz`` import for a check that exact hits make on every recall).
    """
    if a.startswith(b) or b.startswith(a) or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while a[i] == b[i]:  # a differing position exists: neither is a prefix of the other
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 1:i + 2] == b[i:i + 1] and a[i:i + 1] == b[i + 1:i + 2]
                                          and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1:]


def _memory(record: str, body: str) -> Memory:
    """The memory of a row's ``record`` and ``body`` (``db.decode``: a damaged row raises ``db.DamagedRow``)."""
    return decode(record, body)


def _explain(hits: list[Hit], now: datetime) -> list[Hit]:
    """Fill each hit's ``parts`` with the factors of its score (for ``recall --explain``)."""
    for hit in hits:
        memory = hit.memory
        age = max(0.0, (now - memory.updated_at).total_seconds() / 86400) if memory.updated_at else 0.0
        hit.parts.update(importance=0.8 + 0.1 * memory.importance,
                         recency=0.8 + 0.2 * 0.5 ** (age / HALF_LIFE_DAYS), age_days=round(age, 2))
    return hits
