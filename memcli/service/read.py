"""Read operations: recall, list, show, review, log, doctor; context selection.

Every read applies scope isolation and status/expiry filtering (SPEC.md section 3):
queries through :class:`memcli.index.Query`, id look-ups through ``Ctx.resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcli.errors import InvalidMemoryFile, UsageProblem, ValidationFailed
from memcli.gitlog import Entry
from memcli.index import Hit, Query, Retriever
from memcli.model import CATEGORIES, STATUSES, Memory, check_choice
from memcli.service import Ctx

MAX_LIMIT = 1000


@dataclass
class Filters:
    """Filters shared by ``recall`` and ``list`` (see :class:`memcli.index.Query`)."""

    scopes: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    category: str | None = None
    tag: str | None = None
    subject: str | None = None
    include_expired: bool = False
    limit: int = 20


def retriever(ctx: Ctx) -> Retriever:
    """The retriever for this workspace (today the scanning one)."""
    from memcli.index.scan import ScanRetriever

    return ScanRetriever(ctx.scan().memories)


def build_query(ctx: Ctx, text: str, filters: Filters, mode: str = "ranked") -> Query:
    """Validate filters and make a :class:`Query` limited to the caller's scopes.

    Raises:
        ValidationFailed, ScopeViolation: a filter value is not acceptable.
    """
    statuses = tuple(check_choice("status", s, STATUSES) for s in filters.statuses) or ("active",)
    if filters.category is not None:
        check_choice("category", filters.category, CATEGORIES)
    if not 1 <= filters.limit <= MAX_LIMIT:
        raise ValidationFailed(f"invalid limit {filters.limit}: use 1 to {MAX_LIMIT}")
    return Query(text=text, scopes=ctx.scopes(filters.scopes or None), now=ctx.now, mode=mode,
                 statuses=statuses, include_expired=filters.include_expired, category=filters.category,
                 tag=filters.tag, subject=filters.subject, limit=filters.limit)


def recall(ctx: Ctx, text: str, filters: Filters, mode: str = "ranked") -> list[Hit]:
    """Search memories (SPEC.md section 5).

    Args:
        text: the query; in ``grep`` mode a regular expression. Must not be blank.
        mode: ``ranked``, ``fuzzy`` or ``grep``.

    Raises:
        UsageProblem: blank query, or a regex that does not compile.
    """
    if not text or not text.strip():
        raise UsageProblem("the query is empty", hint="give words to search for, or use `memcli list`")
    return retriever(ctx).search(build_query(ctx, text, filters, mode))


def list_memories(ctx: Ctx, filters: Filters) -> list[Memory]:
    """Memories passing the filters, newest first."""
    query = build_query(ctx, "", filters)
    query.limit = MAX_LIMIT
    from memcli.index.scan import ScanRetriever

    hits = ScanRetriever(ctx.scan().memories).search(query)
    found = sorted((h.memory for h in hits), key=lambda m: m.created_at or ctx.now, reverse=True)
    return found[: filters.limit]


@dataclass
class Shown:
    """A memory for ``show``: the record, whether it is expired now, and its raw file text."""

    memory: Memory
    expired: bool
    raw: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.memory.to_dict(), "expired": self.expired}


def show(ctx: Ctx, ref: str) -> Shown:
    """One memory by id or prefix, whatever its status, marked expired when it is.

    Raises:
        MemoryNotFound, AmbiguousId: see ``Ctx.resolve``.
    """
    item = ctx.resolve(ref)
    return Shown(item.memory, item.memory.is_expired(ctx.now), item.file.read_text(encoding="utf-8-sig"))


def review_queue(ctx: Ctx) -> list[Memory]:
    """Memories waiting in ``pending_review`` that the caller may see, oldest first."""
    pending = [m for m in ctx.scan().memories if m.status == "pending_review" and ctx.may_see(m)]
    return sorted(pending, key=lambda m: m.created_at or ctx.now)


def log(ctx: Ctx, ref: str | None, limit: int) -> list[Entry]:
    """memcli commits, newest first; for one memory when ``ref`` is given.

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` does not name one visible memory.
    """
    repo = ctx.git()
    if ref is None:
        return repo.log(limit=limit)
    item = ctx.resolve(ref)
    return repo.log(memory_id=item.memory.id, limit=limit)


def doctor(ctx: Ctx) -> list[InvalidMemoryFile]:
    """Files that cannot be served, with path, line and reason."""
    return list(ctx.scan().problems)


def context_candidates(ctx: Ctx, query: str | None) -> list[Memory]:
    """Memories for the context block, best first (SPEC.md section 6).

    Only ``active``, unexpired memories in the caller's scopes. Order: pinned, then
    memories relevant to ``query`` (when given), then by importance and recency.
    """
    from memcli.index.scan import ScanRetriever

    base = Query(text="", scopes=ctx.scopes(), now=ctx.now, limit=MAX_LIMIT * 100)
    scanner = ScanRetriever(ctx.scan().memories)
    pool = [h.memory for h in scanner.search(base)]
    relevant: list[str] = []
    if query and query.strip():
        base.text = query
        relevant = [h.memory.id for h in scanner.search(base)]
    rank = {memory_id: i for i, memory_id in enumerate(relevant)}

    def key(memory: Memory) -> tuple:
        return (not memory.pinned, rank.get(memory.id, len(rank)), -memory.importance,
                -(memory.updated_at.timestamp() if memory.updated_at else 0), memory.id)
    return sorted(pool, key=key)


def check_mode(fuzzy: bool, grep: bool) -> str:
    """The search mode from the ``--fuzzy``/``--grep`` flags.

    Raises:
        UsageProblem: both flags given.
    """
    if fuzzy and grep:
        raise UsageProblem("--fuzzy and --grep cannot be combined", hint="pick one search mode")
    return "fuzzy" if fuzzy else "grep" if grep else "ranked"


def context(ctx: Ctx, query: str | None, budget: int | None, fmt: str) -> "Block":
    """The context block for an agent session (SPEC.md section 6).

    Args:
        query: optional words that pull relevant memories forward.
        budget: characters the block may take; default ``[context] budget``.
        fmt: ``text``, ``markdown`` or ``json``.

    Raises:
        ValidationFailed: budget below 200 characters or format unknown.
    """
    from memcli.agents.context import Block, render  # noqa: F401 - Block for the annotation

    size = ctx.ws.config.context_budget if budget is None else budget
    if size < 200:
        raise ValidationFailed(f"budget {size} is too small: use at least 200 characters")
    check_choice("format", fmt, ("text", "markdown", "json"))
    return render(context_candidates(ctx, query), size, fmt)
