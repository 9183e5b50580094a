"""Search: the retriever interface and the filters every retriever applies (SPEC.md section 5).

A retriever turns a :class:`Query` into ranked :class:`Hit` objects over the memories
it is given or keeps. Callers (the service) depend on this interface only, so the
scanning retriever of today can be replaced by an FTS5 index or an embedding retriever
without changing them.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memcli.model import Memory
from memcli.policy.gates import visible

if TYPE_CHECKING:
    from collections.abc import Callable


class Query:
    """What to look for and where.

    Attributes:
        text: the query words ('' lists everything that passes the filters).
        scopes: the readable scopes; nothing outside them is ever returned.
        now: the instant expiry is computed against (aware UTC).
        mode: ``ranked`` (default), ``fuzzy`` or ``grep`` (``text`` is a regex); ``exact``
            (internal: the exact tier alone, every word held, no correction or partial match).
        statuses: statuses to include (default ``("active",)``).
        include_expired: include memories past ``expireAt``.
        category, tag, subject: exact-match filters when set.
        limit: at most this many hits (top-k).
        path: a file path; only memories whose ``paths`` globs match it (``**`` spans folders).
        created_after, created_before, updated_after, updated_before: time range filters
            (aware UTC; ``after`` inclusive, ``before`` exclusive).
        actor: the caller; another user's personal scope is never returned, whatever ``scopes`` says.
        order: for an empty query, ``importance`` (pinned, importance, recency: what
            ``context`` wants) or ``newest`` (creation time, for ``list``).
        meaning: the text the semantic side of a hybrid retriever embeds, when it is not
            ``text`` ('' for ``text``): the prompt hook searches a prompt's content words but
            asks the model about the whole prompt (``index.hybrid``).
        served: in ``grep`` mode, texts -> the same texts as a reader is shown them (secrets
            replaced by markers: ``service.redact``), so that a pattern matches the served text,
            never a secret it hides (a pattern probing a token's prefix would rebuild it); None
            matches the texts as stored.
    """

    __slots__ = ("_text", "scopes", "now", "mode", "statuses", "include_expired", "category", "tag", "subject",
                 "limit", "path", "created_after", "created_before", "updated_after", "updated_before", "order",
                 "actor", "meaning", "served")

    def __init__(self, text: str, scopes: list[str], now: datetime, mode: str = "ranked",
                 statuses: tuple[str, ...] = ("active",), include_expired: bool = False, category: str | None = None,
                 tag: str | None = None, subject: str | None = None, limit: int = 20, path: str | None = None,
                 created_after: datetime | None = None, created_before: datetime | None = None,
                 updated_after: datetime | None = None, updated_before: datetime | None = None,
                 order: str = "importance", actor: str | None = None, meaning: str = "") -> None:
        self.text = text
        self.meaning = meaning
        self.scopes = scopes
        self.now = now
        self.mode = mode
        self.statuses = statuses
        self.include_expired = include_expired
        self.category = category
        self.tag = tag
        self.subject = subject
        self.limit = limit
        self.path = path
        self.created_after = created_after
        self.created_before = created_before
        self.updated_after = updated_after
        self.updated_before = updated_before
        self.order = order
        self.actor = actor
        self.served: Callable[[list[str]], list[str]] | None = None


    @property
    def text(self) -> str:
        """The query words; a lone surrogate (bytes that are not UTF-8 on the command line)
        is U+FFFD here, since SQLite cannot take it."""
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")


class Hit:
    """One result: the memory, its score (higher is better) and how it matched.

    ``match`` is ``exact`` (every query term found), ``partial`` (some terms),
    ``fuzzy`` (only by approximate matching), ``regex`` or ``all`` (empty query).
    ``parts``: the factors of the score by name (``coverage``, ``bm25``, ``importance``,
    ``recency``; for ``recall --explain``), a fresh empty dict when None.
    """

    __slots__ = ("memory", "score", "match", "parts")

    def __init__(self, memory: Memory, score: float, match: str, parts: dict[str, float] | None = None) -> None:
        self.memory = memory
        self.score = score
        self.match = match
        self.parts = {} if parts is None else parts


#: The order of the ranked tiers (SPEC.md section 5: exact above stems and typos above partial
#: and substring matches, above meaning-only hits). A hit's tier sorts before its score
#: wherever hits of several retrievers or stores are merged; ``regex`` and ``all`` hits have
#: one tier each and keep their own order.
TIER_ORDER = {"exact": 0, "fuzzy": 1, "partial": 2, "substring": 3, "semantic": 4}


def rank_key(hit: Hit) -> tuple[int, float, float]:
    """The sort key of a ranked hit among hits of several stores: its tier, then how narrowly
    its ``paths`` name the file a one-path query names (``parts["narrow"]``, set by the
    substring tier from :func:`path_specificity`; 0 for every other hit), then its score. So
    the memory written for exactly that file comes first in a merged answer too."""
    return (TIER_ORDER.get(hit.match, 0), -hit.parts.get("narrow", 0.0), -hit.score)


def narrowness(globs: list[str], path: str, mentioned: bool) -> float:
    """:func:`path_specificity` of ``globs`` for ``path``, and whether the memory's text names
    the file (``mentioned``, a glob of its own below every real one), as one number that
    sorts as the tuple does: larger is narrower (characters capped at 999)."""
    exact, folders, chars = path_specificity(globs, path)
    return exact * 1e9 + min(folders, 999) * 1e6 + min(chars, 999) * 1e3 + (1.0 if mentioned else 0.0)


#: A partial hit counts as an answer when it holds at least this share of the query's weight
#: (``coverage``, IDF-weighted, see ``index.search``); below it the best hit holds only some
#: of what was asked ("what port does staging db use" against a *local* Postgres port).
STRONG_COVERAGE = 0.7
#: A hit counts as an answer at this score of meaning or more (the hybrid retriever's
#: ``cosine``, ``index.hybrid``). Set on the tune split of bench/heldout_data.py: no first
#: hit of a question the store cannot answer reached 0.40 there, while right answers to
#: paraphrases ranged 0.27-0.52; so the model calls few paraphrases strong, and no miss.
STRONG_COSINE = 0.45


def strength(hits: list[Hit]) -> str:
    """Whether the hits answer the query: ``strong``, ``weak`` or ``none`` (no hit).

    ``strong`` when the first hit holds every word (``exact``, or ``fuzzy`` through a typo),
    is a ``regex``/``all`` result, a ``partial`` hit with ``coverage`` of at least
    ``STRONG_COVERAGE``, a memory written for exactly the file a path query names
    (``parts["file"]``), or a ``semantic`` hit (or any hit with a cosine, under hybrid
    retrieval) of at least ``STRONG_COSINE``. Otherwise ``weak``: the hits share only some
    words with the query and may not be about what was asked (issue 18: say when nothing
    answers, rather than let the first partial hit read as the answer), or the query is stop
    words only (``parts["stopwords"]``: "the" matched as typed answers no question).

    Args:
        hits: ranked hits, best first.
    """
    if not hits:
        return "none"
    first = hits[0]
    if first.parts.get("stopwords"):
        return "weak"
    if first.match in ("exact", "fuzzy", "regex", "all") or first.parts.get("file"):
        return "strong"
    if first.parts.get("cosine", 0.0) >= STRONG_COSINE:
        return "strong"
    if first.match == "partial" and first.parts.get("coverage", 0.0) >= STRONG_COVERAGE:
        return "strong"
    return "weak"


class Retriever(Protocol):
    """The search interface: ``search(query) -> hits`` ranked best first."""

    def search(self, query: Query) -> list[Hit]:
        """Return at most ``query.limit`` hits that pass every filter of ``query``."""
        ...

    def count(self, query: Query) -> int:
        """How many memories pass the filters of ``query`` (its text is ignored)."""
        ...


def browse_key(query: Query) -> Callable[[Memory], tuple[Any, ...]]:
    """The sort key of an empty query's results, by ``query.order`` (see :class:`Query`)."""
    if query.order == "newest":
        # ids are ULIDs (millisecond time first): within one second, the later id is newer
        return lambda m: (-(m.created_at.timestamp() if m.created_at else 0), tuple(-ord(c) for c in m.id))
    return lambda m: (not m.pinned, -m.importance, -(m.updated_at.timestamp() if m.updated_at else 0), m.id)


def paths_match(globs: list[str], path: str) -> bool:
    """True when ``path`` matches one of ``globs`` (gitignore-like ``**``, via wcmatch)."""
    if not globs:
        return False
    from wcmatch import glob

    while path.startswith(("./", "/")):  # never lstrip("./"): it ate the dot of .github/
        path = path[2:] if path.startswith("./") else path[1:]
    return glob.globmatch(path, globs, flags=glob.GLOBSTAR | glob.DOTGLOB)


def glob_specificity(glob: str) -> tuple[int, int, int]:
    """How narrow a ``paths`` glob is, as a sort key (larger is narrower).

    ``(exact, literal folders, literal characters)``: a glob with no wildcard names one
    file (``api/ledger/importer.py``) and beats every pattern; then the more leading path
    segments free of wildcards (``api/ledger/*.py`` beats ``api/**``), then the more
    characters outside wildcards (``web/src/*.ts`` beats ``web/src/*``). The rule is
    memcli's own: the narrower memory is the one written for this file.

    Args:
        glob: one ``paths`` entry (gitignore-like, ``**`` spans folders).
    """
    wild = "*?[{"
    parts = glob.strip("/").removeprefix("./").split("/")
    literal = 0
    for part in parts:
        if any(c in part for c in wild):
            break
        literal += 1
    exact = literal == len(parts)
    return (int(exact), literal, sum(1 for c in glob if c not in wild))


def path_specificity(globs: list[str], path: str) -> tuple[int, int, int]:
    """The specificity (:func:`glob_specificity`) of the narrowest of ``globs`` that matches
    ``path``; ``(0, 0, 0)`` when none does. Used to put the memory written for a file before
    the ones written for its folder or the whole tree."""
    best = (0, 0, 0)
    for glob in globs:
        key = glob_specificity(glob)
        if key > best and paths_match([glob], path):
            best = key
    return best


def _within(value: datetime | None, after: datetime | None, before: datetime | None) -> bool:
    if after is None and before is None:
        return True
    if value is None:
        return False
    return (after is None or value >= after) and (before is None or value < before)


def passes(memory: Memory, query: Query) -> bool:
    """True when ``memory`` passes the scope, status, expiry and field filters of ``query``."""
    return (
        visible(memory, query.scopes, query.actor)
        and memory.status in query.statuses
        and (query.include_expired or not memory.is_expired(query.now))
        and (query.category is None or memory.category == query.category)
        and (query.tag is None or query.tag in memory.tags)
        and (query.subject is None or memory.subject == query.subject)
        and (query.path is None or paths_match(memory.paths, query.path))
        and _within(memory.created_at, query.created_after, query.created_before)
        and _within(memory.updated_at, query.updated_after, query.updated_before)
    )
