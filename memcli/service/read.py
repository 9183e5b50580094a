"""Read operations: recall, list, show, review, log, index status; context selection.

Every read applies scope isolation and status/expiry filtering (SPEC.md section 3):
queries through :class:`memcli.index.Query`, id look-ups through ``Ctx.resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcli.errors import UsageProblem, ValidationFailed
from memcli.gitlog import Entry
from memcli.index import Hit, Query, Retriever
from memcli.model import CATEGORIES, STATUSES, Memory, check_choice
from memcli.policy.gates import personal_owner
from memcli.service import Ctx
from memcli.timeutil import parse_instant

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
    path: str | None = None
    created_after: str | None = None
    created_before: str | None = None
    updated_after: str | None = None
    updated_before: str | None = None


def retriever(ctx: Ctx) -> Retriever:
    """The retriever for this workspace: the FTS5 index, or a file scan when it is unusable."""
    return ctx.catalog().retriever()


def build_query(ctx: Ctx, text: str, filters: Filters, mode: str = "ranked") -> Query:
    """Validate filters and make a :class:`Query` limited to the caller's scopes.

    Raises:
        ValidationFailed, ScopeViolation: a filter value is not acceptable.
    """
    statuses = tuple(check_choice("status", s.strip(), STATUSES)
                     for value in filters.statuses for s in value.split(",") if s.strip()) or ("active",)
    if filters.category is not None:
        check_choice("category", filters.category, CATEGORIES)
    if not 1 <= filters.limit <= MAX_LIMIT:
        raise ValidationFailed(f"invalid limit {filters.limit}: use 1 to {MAX_LIMIT}")
    times = {}
    for name in ("created_after", "created_before", "updated_after", "updated_before"):
        value = getattr(filters, name)
        try:
            times[name] = parse_instant(value) if value else None
        except ValueError:
            raise ValidationFailed(f"--{name.replace('_', '-')}: {value!r} is not a date or RFC 3339 time") from None
    return Query(text=text, scopes=ctx.scopes(filters.scopes or None), now=ctx.now, mode=mode,
                 statuses=statuses, include_expired=filters.include_expired, category=filters.category,
                 tag=filters.tag, subject=filters.subject, limit=filters.limit, path=filters.path,
                 actor=ctx.actor, **times)


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
    hits = retriever(ctx).search(build_query(ctx, text, filters, mode))
    if hits:
        ctx.catalog().record_access([h.memory.id for h in hits], ctx.now)
    return hits


def list_memories(ctx: Ctx, filters: Filters) -> list[Memory]:
    """Memories passing the filters, newest first."""
    query = build_query(ctx, "", filters)
    query.order = "newest"
    return [h.memory for h in retriever(ctx).search(query)]


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
    return [m for m in ctx.catalog().with_status("pending_review") if ctx.may_see(m)]


def log(ctx: Ctx, ref: str | None, limit: int) -> list[Entry]:
    """memcli commits, newest first; for one memory when ``ref`` is given (its file may be gone).

    Each entry holds the operation, ids, scope, actor and run (trailers), the time, the
    commit and the message text (the memory's text). Commits about another user's personal
    scope are left out.

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` does not name one visible memory, now or in history.
        ValidationFailed: ``limit`` is not from 1 to 1000 (as for ``recall``).
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"invalid limit {limit}: use 1 to {MAX_LIMIT}")

    def visible(entry: Entry) -> bool:  # another user's personal memories stay out of the trail
        owners = {personal_owner(s) for s in entry.trailers.get("scope", "").split()} - {None}
        return owners <= {ctx.actor}

    from memcli.service.audit import find_id

    repo = ctx.git()
    if ref is None:
        return repo.log(limit=limit, keep=visible)
    memory_id, _ = find_id(ctx, ref)  # a purged memory's id is found in history
    return repo.log(memory_id=memory_id, limit=limit, keep=visible)


def index_status(ctx: Ctx) -> dict[str, Any]:
    """Index freshness and size; ``backend`` says whether the index or a file scan is in use."""
    from memcli.index.catalog import IndexCatalog

    catalog = ctx.catalog()
    if isinstance(catalog, IndexCatalog):
        return {"backend": "fts5", **catalog.index.status(), "files": catalog.report.files,
                "last_sync": catalog.report.__dict__}
    return {"backend": "scan", "memories": len(catalog.memories), "problems": len(catalog.problems())}


def index_rebuild(ctx: Ctx, progress=None) -> dict[str, Any]:  # noqa: ANN001
    """Delete the index and build it again from the files.

    Args:
        progress: optional ``progress(done, total)`` callback.

    Raises:
        WorkspaceLocked: a writer holds the workspace lock past the wait limit.
    """
    from memcli.index.catalog import IndexCatalog, remove_index
    from memcli.index.db import INDEX_NAME

    with ctx.ws.lock():
        remove_index(ctx.ws.cache / INDEX_NAME)
        catalog = ctx.catalog(refresh=True, progress=progress)
    if not isinstance(catalog, IndexCatalog):
        return {"backend": "scan", "memories": len(catalog.memories), "problems": len(catalog.problems())}
    return {"backend": "fts5", **catalog.index.status(), "files": catalog.report.files,
            "last_sync": catalog.report.__dict__}


def check_mode(fuzzy: bool, grep: bool) -> str:
    """The search mode from the ``--fuzzy``/``--grep`` flags.

    Raises:
        UsageProblem: both flags given.
    """
    if fuzzy and grep:
        raise UsageProblem("--fuzzy and --grep cannot be combined", hint="pick one search mode")
    return "fuzzy" if fuzzy else "grep" if grep else "ranked"
