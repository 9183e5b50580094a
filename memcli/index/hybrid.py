"""Hybrid retrieval: the lexical tiers first, meaning-only hits after them (SPEC.md section 5).

:class:`HybridRetriever` wraps the lexical retriever (``search.FtsRetriever`` or
``merged.MergedRetriever``) and a semantic side, and keeps strict tiers:

- the lexical hits keep their order and tiers (``exact`` > ``fuzzy`` > ``partial`` >
  ``substring``, ``hit.parts["tier"]``); each gets ``parts["cosine"]`` (the model's score,
  -1 to 1) when the semantic side scored it;
- memories that only the meaning finds come after them, best first, as ``match =
  "semantic"`` with ``parts = {"cosine": …, "tier": 4}``, when their score is at least
  ``SEMANTIC_FLOOR``;
- unless the lexical evidence is weak: no ``exact`` or ``fuzzy`` hit, no memory written for
  the very file a path query names (``parts["file"]``) and no ``partial`` hit holding
  ``WEAK_COVERAGE`` of the query's weight (``parts["coverage"]``). Then the partial,
  substring and semantic hits are ordered together by ``LEXICAL_WEIGHT × lexical +
  (1 − LEXICAL_WEIGHT) × cosine``, ``lexical`` being a partial hit's coverage and
  ``SUBSTRING_EVIDENCE`` for a substring hit (0 for a semantic-only one); that value becomes
  their ``score`` (the lexical score stays in ``parts["lexical"]``).

The semantic side embeds ``query.meaning`` when it is set (the prompt hook's whole prompt,
whose content words the lexical side searches), else ``query.text``.

Filters come first on the semantic side too: it scores only the memories that pass the
query's SQL conditions (``vectors.search``), and every hit it returns is read again through
the same conditions in the caller's own index (``vectors.records``) before it is shown.

Two semantic sides: :class:`LocalSemantic` (the model loaded in this process: the MCP
server) and :class:`RemoteSemantic` (a warm process's model over its socket,
``memcli.index.warm``: hooks and one-shot commands, which never load a model).
:func:`warm_retriever` is what those call; :func:`describe` says which retriever answered.
Importing this module imports neither numpy nor a model.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memcli.index import Hit, Query, Retriever
from memcli.model import Memory

if TYPE_CHECKING:  # annotations only: the model's modules load numpy
    from memcli.index.catalog import Catalog
    from memcli.index.embed import Embedder, Floats
    from memcli.index.merged import MergedCatalog, Part
    from memcli.index.quarantined import QuarantinedCatalog

#: What a semantic side answers: ``(memory, score)`` best first (each read again through the
#: query's filters in the caller's index), and the scores of the ids asked for in ``also``.
Scored = tuple[list[tuple[Memory, float]], dict[str, float]]

#: A partial hit's coverage at or over which the lexical evidence is strong (tuned on
#: bench/semantic_probe.py, docs/search.md).
WEAK_COVERAGE = 0.7
#: In the weak case, the weight of the lexical evidence against the cosine.
LEXICAL_WEIGHT = 0.1
#: The lexical evidence of a substring hit in the weak case.
SUBSTRING_EVIDENCE = 0.3
#: The least score of a hit only the meaning finds.
SEMANTIC_FLOOR = 0.2
#: Semantic candidates scored per query, however few are wanted.
POOL = 50
#: Seconds a hook or one-shot command gives the warm process in all (connect, ask, answer).
WARM_BUDGET = 0.15
#: Quarantined ids a search request names at most for the warm process to leave out
#: (``index.warm``: a request line is at most ``MAX_LINE`` bytes); more are dropped by the
#: caller's own check (``_checked``), the request asking for as many more candidates.
SKIP_MAX = 1000
#: The most candidates a search request asks the warm process for (``index.warm``).
LIMIT_MAX = 1000


class Semantic(Protocol):
    """The semantic side of a :class:`HybridRetriever`: :class:`LocalSemantic` or
    :class:`RemoteSemantic`."""

    name: str

    def scores(self, query: Query, limit: int, also: Sequence[str]) -> Scored | None:
        """The best ``limit`` memories passing ``query`` by meaning, and the scores of
        ``also``; None when the model could not answer."""
        ...


def describe(retriever: object) -> str:
    """Which retriever answered the last search of ``retriever``: ``"lexical"`` or
    ``"hybrid (MODEL)"`` (a hybrid retriever whose semantic side failed answered lexically)."""
    return getattr(retriever, "answered", None) or "lexical"


class HybridRetriever:
    """The lexical retriever with a semantic side (see the module docstring).

    Args:
        lexical: the lexical retriever (its hits keep their order and tiers).
        semantic: a :class:`LocalSemantic` or :class:`RemoteSemantic`.

    Attributes:
        answered: after a search, ``"hybrid (MODEL)"`` when the semantic side took part,
            else ``"lexical"`` (blank query, grep or fuzzy mode, or a semantic side that failed).
    """

    def __init__(self, lexical: Retriever, semantic: Semantic) -> None:
        self.lexical = lexical
        self.semantic = semantic
        self.answered = "lexical"

    @property
    def name(self) -> str:
        """``hybrid (MODEL)``."""
        return f"hybrid ({self.semantic.name})"

    def count(self, query: Query) -> int:
        """See ``Retriever.count`` (the lexical retriever's: filters only)."""
        return self.lexical.count(query)

    def search(self, query: Query) -> list[Hit]:
        """See ``Retriever.search`` and the module docstring."""
        hits = self.lexical.search(query)
        self.answered = "lexical"
        if query.mode != "ranked" or not query.text.strip():
            return hits
        words = query.text
        if query.meaning.strip():  # the model reads the whole sentence; the lexical side its words
            query.text = query.meaning
        try:
            found = self.semantic.scores(query, max(query.limit, POOL), [h.memory.id for h in hits])
        finally:
            query.text = words
        if found is None:
            return hits
        self.answered = self.name
        ranked, scores = found
        return combine(hits, ranked, scores, limit=query.limit)


def combine(hits: list[Hit], ranked: list[tuple[Memory, float]], scores: dict[str, float], limit: int) -> list[Hit]:
    """The hybrid order of lexical ``hits`` and semantic ``ranked`` (``(memory, score)`` best
    first; ``scores`` holds the scores of lexical hits outside ``ranked``), at most ``limit``."""
    cosine = {m.id: s for m, s in ranked}
    cosine.update(scores)
    for hit in hits:
        if hit.memory.id in cosine:
            hit.parts["cosine"] = round(cosine[hit.memory.id], 4)
    seen = {h.memory.id for h in hits}
    meaning = [Hit(m, round(s, 4), "semantic", {"cosine": round(s, 4), "tier": 4})
               for m, s in ranked if m.id not in seen and s >= SEMANTIC_FLOOR]
    strong = any(h.match in ("exact", "fuzzy") or "file" in h.parts for h in hits) or any(
        h.match == "partial" and h.parts.get("coverage", 0.0) >= WEAK_COVERAGE for h in hits)
    if strong:
        return (hits + meaning)[:limit]
    weak = [h for h in hits if h.match in ("partial", "substring")]
    rest = [h for h in hits if h.match not in ("partial", "substring")]
    for hit in weak + meaning:
        evidence = (hit.parts.get("coverage", 0.0) if hit.match == "partial"
                    else SUBSTRING_EVIDENCE if hit.match == "substring" else 0.0)
        if hit.match != "semantic":
            hit.parts["lexical"] = hit.score
        hit.score = round(LEXICAL_WEIGHT * evidence + (1 - LEXICAL_WEIGHT) * cosine.get(hit.memory.id, 0.0), 4)
    mixed = sorted(weak + meaning, key=lambda h: (-h.score, h.parts.get("tier", 4), h.memory.id))
    return (rest + mixed)[:limit]


class Source(NamedTuple):
    """One index a semantic side reads, as the caller's catalog lends it (:func:`_parts`).

    Attributes:
        db: a connection to the index file; path: that file (the key of its ``vectors.Matrix``).
        place: ``place(memory) -> memory`` gives another store's memory its absolute path.
        held: ``held(memory) -> bool``: the memory must never be served (its file is
            quarantined: ``index.quarantined``); checked on every hit before it is shown.
        skip: the ids of the quarantined memories, left out before the best are taken.
        extra: how many more candidates to ask for: quarantined files known only by their
            path may still take places among the best (dropped after, by ``held``).
    """

    db: sqlite3.Connection
    path: str
    place: Callable[[Memory], Memory]
    held: Callable[[Memory], bool]
    skip: frozenset[str]
    extra: int


def _never(memory: Memory) -> bool:
    return False


def _parts(catalog: Catalog | None) -> list[Source]:
    """The indexes of ``catalog`` a semantic side may read (:class:`Source`): each indexed
    store of a merged catalog, each with the quarantine of the catalog that wraps it; none
    for a catalog that scans the files, or None.

    This is the only way the semantic side reaches an index, so the filters every other read
    of the catalog applies come with it: a quarantined catalog (``index.quarantined``) does
    not lend its inner index (``QuarantinedCatalog.__getattr__``), only a :class:`Source`
    that holds its quarantine."""
    from memcli.index.merged import MergedCatalog
    from memcli.index.quarantined import QuarantinedCatalog

    if catalog is None:
        return []
    if isinstance(catalog, MergedCatalog):
        return [s._replace(place=_placing(catalog, part, s.place)) for part in catalog.parts
                for s in _parts(part.catalog)]
    if isinstance(catalog, QuarantinedCatalog):
        return [s._replace(held=_holding(catalog, s.held), skip=s.skip | catalog.ids,
                           extra=s.extra + len(catalog.paths)) for s in _parts(catalog.inner)]
    index = getattr(catalog, "index", None)
    return [] if index is None else [Source(index.db, str(index.path), _same, _never, frozenset(), 0)]


def _same(memory: Memory) -> Memory:
    return memory


def _placing(merged: MergedCatalog, part: Part, inner: Callable[[Memory], Memory]) -> Callable[[Memory], Memory]:
    def place(memory: Memory) -> Memory:
        return merged._placed(part, [inner(memory)])[0]  # a private helper: registers its store

    return place


def _holding(catalog: QuarantinedCatalog, inner: Callable[[Memory], bool]) -> Callable[[Memory], bool]:
    def held(memory: Memory) -> bool:
        return catalog.held(memory) or inner(memory)

    return held


def _checked(catalog: Catalog | None, query: Query, scored: list[tuple[str, float]]) -> list[tuple[Memory, float]]:
    """The memories of ``scored`` ids that pass ``query`` in the caller's own indexes and are
    not quarantined there, best first."""
    from memcli.index.vectors import records

    ids = [i for i, _ in scored]
    found: dict[str, Memory] = {}
    for source in _parts(catalog):
        for memory_id, memory in records(source.db, query, [i for i in ids if i not in found]).items():
            if not source.held(memory):
                found[memory_id] = source.place(memory)
    return [(found[i], s) for i, s in scored if i in found]


class LocalSemantic:
    """The semantic side with the model loaded in this process.

    Args:
        catalog: the caller's catalog (``Ctx.catalog()``: an index, or a merged one); None
            for a side that only makes vectors (:meth:`vector`).
        embedder: a loaded ``embed.Embedder``.
        queries: an optional dict to keep query vectors in (text -> vector), shared across calls.
    """

    def __init__(self, catalog: Catalog | None, embedder: Embedder, queries: dict[str, Floats] | None = None) -> None:
        self.catalog = catalog
        self.embedder = embedder
        self.name = embedder.name
        self.queries = {} if queries is None else queries

    def vector(self, text: str) -> Floats:
        """The query vector of ``text`` (kept: a prompt is often asked again)."""
        found = self.queries.get(text)
        if found is None:
            found = self.embedder.embed([text])[0]
            if len(self.queries) >= 256:
                try:
                    self.queries.pop(next(iter(self.queries)))
                except (StopIteration, KeyError, RuntimeError):  # another thread emptied or changed it
                    pass
            self.queries[text] = found
        return found

    def scores(self, query: Query, limit: int, also: Sequence[str]) -> Scored:
        """The best ``limit`` memories passing ``query`` by meaning, and the scores of ``also``."""
        from memcli.index.vectors import search

        vector = self.vector(query.text)
        scored: list[tuple[str, float]] = []
        extra: dict[str, float] = {}
        for source in _parts(self.catalog):
            top, more = search(source.db, source.path, self.embedder, query, vector, limit + source.extra, also,
                               skip=source.skip)
            scored += top
            extra.update(more)
        scored.sort(key=lambda item: -item[1])
        return _checked(self.catalog, query, scored)[:limit], extra


class RemoteSemantic:
    """The semantic side served by a warm process over its socket (``memcli.index.warm``).

    Args:
        catalog: the caller's catalog; every id the server returns is read through the
            query's filters here again.
        path: the server's socket.
        name: the model's display name (from its ping).
        deadline: a ``time.monotonic()`` instant past which the search gives up (lexical).
    """

    def __init__(self, catalog: Catalog, path: Path, name: str, deadline: float) -> None:
        self.catalog = catalog
        self.path = path
        self.name = name
        self.deadline = deadline

    def scores(self, query: Query, limit: int, also: Sequence[str]) -> Scored | None:
        """As :meth:`LocalSemantic.scores`, or None when the server did not answer in time."""
        from memcli.index.warm import ask, query_to_json

        left = self.deadline - time.monotonic()
        if left <= 0:
            return None
        sources = _parts(self.catalog)  # the server scores the same indexes; never the quarantined
        skip = sorted({i for s in sources for i in s.skip})
        more = max((s.extra for s in sources), default=0) + max(0, len(skip) - SKIP_MAX)
        request = {"search": query.text, "query": query_to_json(query), "limit": min(limit + more, LIMIT_MAX),
                   "also": list(also)}
        if skip:  # only then: a server of an older memcli refuses it, and the search answers lexically
            request["skip"] = skip[:SKIP_MAX]
        reply = ask(self.path, request, left)
        if reply is None:  # no answer in time
            return None
        try:
            hits = [(str(i), float(s)) for i, s in reply["hits"]]
            extra = {str(i): float(s) for i, s in reply.get("also", {}).items()}
        except (TypeError, KeyError, ValueError, AttributeError):
            return None
        return _checked(self.catalog, query, hits)[:limit], extra


def similar(semantic: Semantic, query: Query, text: str, threshold: float, limit: int = 3,
            exclude: tuple[str, ...] = ()) -> list[tuple[Memory, float]]:
    """Live memories close to ``text`` (a memory being written): those passing ``query``'s
    filters whose score is at least ``threshold``, best first, at most ``limit``, none of
    ``exclude``. ``semantic`` is a :class:`LocalSemantic` or :class:`RemoteSemantic`; an empty
    list when it cannot answer."""
    probe = Query(text=text, scopes=query.scopes, now=query.now, statuses=query.statuses, limit=limit,
                  actor=query.actor)
    found = semantic.scores(probe, limit + len(exclude), [])
    if not found:
        return []
    return [(m, s) for m, s in found[0] if s >= threshold and m.id not in exclude][:limit]


def warm_retriever(catalog: Catalog, lexical: Retriever, index_path: Path | None = None,
                   deadline_s: float = WARM_BUDGET) -> HybridRetriever | None:
    """A hybrid retriever whose model is a warm process's, or None (answer lexically).

    For hooks and one-shot commands, which never load a model: when a long-lived process of
    this workspace (the MCP server) serves its model on the workspace's socket
    (``warm.socket_path``), the returned retriever asks it for the semantic scores at search
    time; None when no such process answers a ping. Either way it costs at most
    ``deadline_s`` seconds in all (ping and search); a search that misses the rest of the
    budget answers lexically (``describe`` then says ``lexical``). Never raises.

    Args:
        catalog: the caller's catalog (``ctx.catalog()``).
        lexical: the caller's lexical retriever (``catalog.retriever()``).
        index_path: the workspace's index file (default: the catalog's own index).
        deadline_s: seconds for the ping and the search together (default ``WARM_BUDGET``).
    """
    from memcli.index.warm import ask, socket_path

    started = time.monotonic()
    if index_path is None:
        own = _parts(getattr(catalog, "own", catalog))
        if not own:
            return None
        index_path = Path(own[0].path)
    path = socket_path(index_path)
    try:
        if not path.exists():
            return None
    except OSError:
        return None
    reply = ask(path, {"ping": True}, deadline_s)
    if not reply or not isinstance(reply.get("name"), str):
        return None
    return HybridRetriever(lexical, RemoteSemantic(catalog, path, reply["name"], started + deadline_s))
