"""Read operations: recall, list, show, review, log, index status; context selection.

Every read applies scope isolation and status/expiry filtering (SPEC.md section 3):
queries through :class:`memcli.index.Query`, id look-ups through ``Ctx.resolve``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from memcli.errors import UsageProblem, ValidationFailed
from memcli.filters import FILTERS, TIMES, Filters
from memcli.index import Hit, Query, Retriever
from memcli.model import CATEGORIES, STATUSES, Memory, check_choice
from memcli.policy.owner import scope_in_commit_is_mine
from memcli.service import Ctx
from memcli.service.redact import cache_of, for_reader, redact_texts
from memcli.timeutil import parse_instant

if TYPE_CHECKING:
    from pathlib import Path

    from memcli.git.history import History
    from memcli.git.log import Entry
    from memcli.index.catalog import Catalog

MAX_LIMIT = 1000


def retriever(ctx: Ctx) -> Retriever:
    """The retriever for this workspace: the FTS5 index, or a file scan when it is unusable."""
    return ctx.catalog().retriever()


def semantic_retriever(ctx: Ctx, budget: float | None = None) -> Retriever:
    """The retriever of a one-shot command or a hook: hybrid through the model of a warm
    process of this workspace when one answers (``service.semantic.warm_for``, within
    ``budget`` seconds, default ``index.hybrid.WARM_BUDGET``), else the lexical one.
    ``index.hybrid.describe(retriever)`` says, after a search, which one answered. Never
    loads a model, never imports numpy."""
    from memcli.service.semantic import warm_for

    lexical = retriever(ctx)
    try:
        return warm_for(ctx, lexical, budget) or lexical
    except Exception:  # noqa: BLE001 - the warm process is an optimisation, never a requirement
        return lexical


def build_query(ctx: Ctx, text: str, filters: Filters, mode: str = "ranked") -> Query:
    """Validate filters (``memcli.filters``) and make a :class:`Query` limited to the caller's scopes.

    Raises:
        ValidationFailed, ScopeViolation: a filter value is not acceptable.
    """
    statuses = tuple(check_choice("status", s.strip(), STATUSES)
                     for value in filters.statuses for s in value.split(",") if s.strip()) or ("active",)
    if filters.category is not None:
        from memcli.model import CATEGORY_ALIASES

        word = filters.category.strip().lower()
        if word in CATEGORY_ALIASES:
            raise ValidationFailed(f"invalid category {word!r}: memcli writes a {word.removesuffix('s')} as "
                                   f"category {CATEGORY_ALIASES[word]!r} tagged {word.removesuffix('s')!r}",
                                   hint=f"use --tag {word.removesuffix('s')}")
        check_choice("category", filters.category, CATEGORIES)
    if not 1 <= filters.limit <= MAX_LIMIT:
        raise ValidationFailed(f"invalid limit {filters.limit}: use 1 to {MAX_LIMIT}")
    times: dict[str, Any] = {}  # Query's keyword arguments of the same names
    for name in TIMES:
        value = getattr(filters, name)
        try:
            times[name] = parse_instant(value) if value is not None else None  # "" is an error, not "no filter"
        except ValueError:
            from memcli.text.secrets import shown

            raise ValidationFailed(
                f"--{name.replace('_', '-')}: {shown(value)} is not a date or RFC 3339 time") from None
    scopes = ctx.scopes(filters.scopes or None) + (["session:*"] if filters.sessions else [])
    passed = {f.name: getattr(filters, f.name) for f in FILTERS if f.query}  # checked above, or taken as they are
    return Query(text=text, scopes=scopes, now=ctx.now, mode=mode, statuses=statuses, actor=ctx.actor,
                 **passed, **times)


#: Characters a query (or ``--grep`` pattern) may have (the prompt hook searches a prompt's first 2,000;
#: the MCP tools publish it as ``maxLength``).
MAX_QUERY = 2_000


def recall(ctx: Ctx, text: str, filters: Filters, mode: str = "ranked", using: Retriever | None = None,
           meaning: str = "") -> list[Hit]:
    """Search memories (SPEC.md section 5).

    Args:
        text: the query; in ``grep`` mode a regular expression. Must not be blank.
        mode: ``ranked``, ``fuzzy`` or ``grep``.
        using: the retriever to ask (default :func:`retriever`: lexical); e.g.
            :func:`semantic_retriever`'s, or the MCP server's hybrid one.
        meaning: what a hybrid retriever's model reads instead of ``text`` (``Query.meaning``;
            '' for ``text``); its first ``MAX_QUERY`` characters are used.

    Raises:
        UsageProblem: blank query, a query (or regular expression) over ``MAX_QUERY`` characters,
            or a regular expression that does not compile or cannot be run (``index.scan.Grep``).
    """
    if not text or not text.strip():
        raise UsageProblem("the query is empty", hint="give words to search for, or use `memcli list`")
    if len(text) > MAX_QUERY:
        what = "regular expression" if mode == "grep" else "query"
        raise UsageProblem(f"the {what} is {len(text):,} characters long; recall takes at most {MAX_QUERY:,}",
                           hint="search on the few words that matter" if mode != "grep" else "shorten the pattern")
    if mode == "grep":
        from memcli.index.scan import Grep

        Grep(text)  # a pattern that cannot be run is refused before the index is opened
    query = build_query(ctx, text, filters, mode)
    query.meaning = meaning[:MAX_QUERY]
    folder = cache_of(ctx)
    query.served = lambda texts: redact_texts(texts, folder)  # a pattern sees what a reader sees
    search = using if using is not None else retriever(ctx)
    hits = ordinary_first(search, query, search.search(query), ctx.actor)
    if hits:
        hits = served_matches(query, hits, for_reader(ctx, [h.memory for h in hits]))
    if hits:
        ctx.catalog().record_access([h.memory.id for h in hits], ctx.now)
    return hits


def ordinary_first(search: Retriever, query: Query, hits: list[Hit], reader: str | None) -> list[Hit]:
    """``hits`` (``search``'s answer to ``query``) with the unvetted instruction-like ones
    (``agents.injection.unvetted``) after every other, at most ``query.limit``.

    Each unvetted hit among the first ``query.limit`` is a place an ordinary hit further down
    may take: the search is asked again for that many more until the extra places hold no
    new unvetted hit (or the memories run out), so a teammate's pinned, important instruction
    never pushes an ordinary hit out of the answer. No extra search when there is none.
    """
    from memcli.agents.injection import unvetted

    limit = query.limit
    doubt = sum(unvetted(h.memory, reader) for h in hits)
    try:
        while doubt and len(hits) >= query.limit and query.limit < limit + MAX_LIMIT:
            query.limit = limit + doubt
            hits = search.search(query)
            now = sum(unvetted(h.memory, reader) for h in hits)
            if now == doubt:
                break
            doubt = now
    finally:
        query.limit = limit
    if not doubt:
        return hits[:limit]
    marks = [unvetted(h.memory, reader) for h in hits]
    return ([h for h, m in zip(hits, marks) if not m] + [h for h, m in zip(hits, marks) if m])[:limit]


def served_matches(query: Query, hits: list[Hit], served: list[Memory]) -> list[Hit]:
    """``hits`` with their memories as served (secrets replaced by markers: ``service.redact``),
    less those that the query matches only in what was cut out.

    A search must match the text as a reader is shown it, or it becomes an oracle: a query
    that is a prefix of a hidden token finds the memory, one that is not does not, so an agent
    could rebuild the token a character at a time. ``grep`` mode already matches the served
    text (``Query.served``); a ranked or fuzzy hit whose memory had something cut out is kept
    only when the scanning retriever (``index.scan``: its words as substrings, or close by
    rapidfuzz) matches the query in the served memory too.
    """
    kept = []
    for hit, memory in zip(hits, served):
        changed = memory is not hit.memory
        hit.memory = memory  # secrets in hand-written files never shown (service/redact.py)
        if changed and query.mode != "grep":
            from memcli.index.scan import ScanRetriever

            probe = Query(query.text, query.scopes, query.now, query.mode, statuses=(memory.status,),
                          include_expired=True, actor=query.actor)
            if not ScanRetriever([memory]).search(probe):
                continue
        kept.append(hit)
    return kept


#: What a reader is told when the hits do not answer the query (``index.strength``).
WEAK_NOTE = ("no memory matches every word of the query: the hits below hold only some of them and may be "
             "about something else")
NONE_NOTE = "no memories match the query"
#: ... when the first hit holds none of the query's words (found by meaning alone, not close enough).
MEANING_NOTE = ("no memory holds the words of the query, and none is close in meaning: the hits below were found "
                "by meaning alone and may be about something else")
#: ... when the query is stop words only ("the", "what is it"): matched as typed, no answer to a question.
STOP_NOTE = "the query holds only stop words: the hits below merely contain them"


def recall_data(ctx: Ctx, query: str, mode: str, hits: list[Hit], explain: bool = False,
                answered: str = "lexical") -> dict[str, Any]:
    """The result of a recall as the CLI's ``--json`` and the MCP ``recall`` tool give it (one shape).

    Keys: ``query`` (redacted), ``mode``, ``answer`` (``strong``, ``weak`` or ``none``:
    ``index.strength``), ``note`` (a sentence for a weak or missing answer, else None),
    ``partial`` (:func:`partial_note`: why the index this answer came from may miss memories, else None),
    ``retriever`` (which retriever answered: ``lexical``, or ``hybrid (MODEL)``), and ``hits``
    (each memory's fields, ``score``, ``match``, ``instructionLike``, ``mayBeOutdated``: the note
    ``memcli stale`` left when the memory's code moved, else None; with ``explain`` the score's factors).
    Hits keep their relevance order: a search names what it wants, so a stale hit is marked, not
    moved (the context block and the hooks, which choose for the agent, put stale memories last).

    Args:
        query: the query as typed.
        mode: ``ranked``, ``fuzzy`` or ``grep``.
        hits: what :func:`recall` returned.
        explain: add each hit's ``explain`` factors.
        answered: which retriever answered (``index.hybrid.describe``).
    """
    from memcli.index import strength
    from memcli.text.secrets import redact

    answer = strength(hits)
    partial = partial_note(ctx)
    note = {"weak": WEAK_NOTE, "none": NONE_NOTE}.get(answer)
    if answer == "weak" and hits[0].match == "semantic":
        note = MEANING_NOTE
    elif answer == "weak" and hits[0].parts.get("stopwords"):
        note = STOP_NOTE
    if answer == "none" and partial:
        note = f"{NONE_NOTE} in what is indexed so far"
    from memcli.agents.injection import instruction_like  # the label MCP and the context block show too
    from memcli.service.stale_notes import notes as stale_notes
    from memcli.service.unbacked import notes as unbacked

    notes = stale_notes(ctx) if hits else {}
    unverified = unbacked(ctx, [h.memory for h in hits])
    return {"query": redact(query, full=False), "mode": mode, "answer": answer, "note": note,
            "partial": partial, "retriever": answered,
            "hits": [{**h.memory.to_dict(ctx.now), "score": float(f"{h.score:.6g}"), "match": h.match,
                      "instructionLike": instruction_like(h.memory.text), "mayBeOutdated": notes.get(h.memory.id),
                      "actorUnverified": unverified.get(h.memory.id),
                      **({"explain": {k: float(f"{v:.6g}") for k, v in h.parts.items()}} if explain else {})}
                     for h in hits]}


def partial_note(ctx: Ctx) -> str | None:
    """One line when this command's index was not complete (a build in progress, the deadline
    hit during its sync, another process's build held the index): the answer came from what is
    indexed (``index.catalog.incomplete``); None when it was complete or no catalog was opened."""
    from memcli.index.catalog import incomplete

    return incomplete(ctx._catalog) if ctx._catalog is not None else None


def list_memories(ctx: Ctx, filters: Filters) -> list[Memory]:
    """Memories passing the filters, newest first."""
    query = build_query(ctx, "", filters)
    query.order = "newest"
    return for_reader(ctx, [h.memory for h in retriever(ctx).search(query)])


class Shown:
    """A memory for ``show``: the record, whether it is expired now, its raw file text, and its
    file's last change made outside memcli (:func:`hand_change`), if that is its last change."""

    __slots__ = ("memory", "expired", "raw", "by_hand")

    def __init__(self, memory: Memory, expired: bool, raw: str, by_hand: dict[str, Any] | None = None) -> None:
        self.memory = memory
        self.expired = expired
        self.raw = raw
        self.by_hand = by_hand

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``changedByHand``: :func:`hand_change`, or None)."""
        return {**self.memory.to_dict(), "expired": self.expired, "changedByHand": self.by_hand}


def hand_change(ctx: Ctx, memory: Memory) -> dict[str, Any] | None:
    """The last change of ``memory``'s file when memcli did not make it (a hand edit, committed
    with plain git or not committed yet), else None: the memory's provenance names who wrote it
    through memcli, so a teammate's edit by hand would otherwise pass as theirs.

    Returns:
        ``{"commit": hash or None (not committed yet), "author": "Name <email>" or None,
        "at": ISO 8601 time or None}``. None also when git cannot tell (no repository, git
        missing): ``show`` must not fail for it. One ``git log`` of the file, and a read of
        its committed blob. None with ``[git] autocommit = false``, where memcli's own writes are
        not committed either.
    """
    from pathlib import Path

    from memcli.errors import MemcliError
    from memcli.service.audit import read_disk

    owner = ctx.owner(memory.id)
    if not owner.ws.config.autocommit:  # memcli's own writes wait uncommitted there too: no telling them apart
        return None
    path = memory.path
    if Path(path).is_absolute():  # a personal store's memory: its path within that store
        path = Path(path).relative_to(owner.ws.root).as_posix()
    try:
        repo = owner.history()
        if read_disk(owner, path) != repo.blobs([("HEAD", path)])[0]:
            return {"commit": None, "author": None, "at": None}
        entries = repo.commits([path])
    except MemcliError:
        return None
    if not entries or entries[-1].trailers.get("op"):
        return None
    last = entries[-1]
    return {"commit": last.commit, "author": f"{last.author} <{last.email}>" if last.email else last.author,
            "at": last.at}


def show(ctx: Ctx, ref: str) -> Shown:
    """One memory by id or prefix, whatever its status, marked expired when it is.

    Raises:
        MemoryNotFound, AmbiguousId: see ``Ctx.resolve``.
    """
    from memcli.service.redact import cache_of, redact_text

    item = ctx.resolve(ref)
    (memory,) = for_reader(ctx, [item.memory])
    raw = redact_text(item.file.read_text(encoding="utf-8-sig"), cache_of(ctx))
    return Shown(memory, item.memory.is_expired(ctx.now), raw, hand_change(ctx, item.memory))


def review_queue(ctx: Ctx) -> list[Memory]:
    """Memories waiting in ``pending_review`` that the caller may see, oldest first."""
    return for_reader(ctx, [m for m in ctx.catalog().with_status("pending_review") if ctx.may_see(m)])


def log(ctx: Ctx, ref: str | None, limit: int) -> list[Entry]:
    """memcli commits, newest first; for one memory when ``ref`` is given (its file may be gone).
    The trail of every store the workspace reads (its own and the person's, ``Ctx.personal_stores``),
    merged by time; one memory's from the store that holds it.

    Each entry holds the operation, ids, scope, actor and run (trailers), the time, the
    commit and the message text (the memory's text, its secrets replaced by markers). Another
    user's personal memories stay out of the trail: a commit about nothing else is left out, and a commit that also
    changed memories the caller may see is listed with only those (see :func:`trimmed`).

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` does not name one visible memory, now or in history.
        ValidationFailed: ``limit`` is not from 1 to 1000 (as for ``recall``).
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"invalid limit {limit}: use 1 to {MAX_LIMIT}")
    if ref is not None:
        ctx = ctx.owner(ref)  # a personal memory's trail is in the person's own store
    elif ctx.personal_stores():  # the trails of every store, merged newest first (issue 12)
        merged = [e for store in (ctx, *ctx.personal_stores()) for e in _log(store, None, limit)
                  if store is ctx or e.trailers.get("op") != "init"]
        from memcli.timeutil import parse_instant

        # git times are whole seconds: within one, a store's init (its first commit) is the oldest
        return sorted(merged, key=lambda e: (parse_instant(e.at), e.trailers.get("op") != "init"),
                      reverse=True)[:limit]
    return _log(ctx, ref, limit)


def _log(ctx: Ctx, ref: str | None, limit: int) -> list[Entry]:
    """:func:`log` of one store."""
    from memcli.service.audit import find_id

    def visible(entry: Entry) -> bool:
        scopes = entry.trailers.get("scope", "").split()
        return not scopes or any(_mine(ctx, s, entry) for s in scopes)

    repo = ctx.history()
    memory_id = find_id(ctx, ref)[0] if ref is not None else None  # a purged memory's id is found in history
    entries = [trimmed(ctx, repo, e) for e in repo.log(memory_id=memory_id, limit=limit, keep=visible)]
    from memcli.service.signing import attribute, trust_for_reading

    attribute(trust_for_reading(ctx), entries)  # an actor no signature (or authorship) backs is a claim

    from memcli.service.redact import cache_of, redact_texts

    texts = redact_texts([e.text for e in entries], cache_of(ctx))  # an override's secret stays out of sight
    return [e if text == e.text else e.replaced(text=text) for e, text in zip(entries, texts)]


def _mine(ctx: Ctx, scope: str, entry: Entry) -> bool:
    """True for a scope of ``entry``'s ``Memcli-Scope`` trailer that the caller may see (``policy.owner``)."""
    return scope_in_commit_is_mine(scope, entry.trailers.get("actor") or entry.author, ctx.actor)


def trimmed(ctx: Ctx, repo: History, entry: Entry) -> Entry:
    """``entry`` as the caller may see it: unchanged unless it names another user's personal scope.

    Then its ``Id``, ``Related`` and ``Run`` trailers keep only the caller's memories, its
    ``Scope`` trailer only the caller's scopes, its subject is made again from those
    (``git.log.summary``), and its text keeps only the ``- ID: first line`` lines of those
    memories (a batch body; any other text is dropped, since it cannot be told apart).
    An id counts as the caller's when a file named for it that the commit touched lies
    outside other users' personal folders, or, when no such file is named, when the
    catalog's memory of that id is one the caller may see. A session's file says nothing
    of its owner: there the catalog's memory decides, else (the file is gone) the
    commit's actor (``policy.owner``).
    """
    from memcli.git.log import Entry, summary
    from memcli.store.files import MEMORIES, others_folder

    trailers = entry.trailers
    scopes = trailers.get("scope", "").split()
    if all(_mine(ctx, s, entry) for s in scopes):
        return entry
    root = ctx.ws.root
    paths = [p.relative_to(root).as_posix() for p in repo.changed_files(entry.commit) if root in p.parents]
    commit_actor = entry.trailers.get("actor") or entry.author

    def seen(memory_id: str) -> bool:
        named = [p for p in paths if p.rsplit("/", 1)[-1].lower().startswith(memory_id)]
        found = [m for m in ctx.catalog().by_prefix(memory_id) if m.id == memory_id]
        if any(p.startswith(f"{MEMORIES}/session/") for p in named):
            return ctx.may_see(found[0]) if found else commit_actor == ctx.actor
        if named:
            return any(not others_folder(p, ctx.actor) for p in named)
        return bool(found) and ctx.may_see(found[0])

    ids = [i for i in trailers.get("id", "").split() if seen(i)]
    related = [i for i in trailers.get("related", "").split() if seen(i)]
    runs = {m.provenance.run_id for i in ids for m in ctx.catalog().by_prefix(i) if m.id == i}
    kept_scopes = [s for s in scopes if _mine(ctx, s, entry)]
    actor = trailers.get("actor") or entry.author
    out = {**trailers, "id": " ".join(ids), "scope": " ".join(kept_scopes), "related": " ".join(related),
           "run": " ".join(r for r in trailers.get("run", "").split() if r in runs)}
    lines = [line for line in entry.text.splitlines() if any(line.startswith(f"- {i}: ") for i in ids)]
    op = trailers.get("op", "")
    return Entry(entry.commit, entry.at, entry.author, f"memcli: {op} {summary(ids, kept_scopes, actor)}",
                 {k: v for k, v in out.items() if v}, "\n".join(lines), entry.touched, email=entry.email)


def index_status(ctx: Ctx) -> dict[str, Any]:
    """Index freshness and size; ``backend`` says whether the index or a file scan is in use."""
    return _status(ctx, ctx.catalog(full=True))


def index_rebuild(ctx: Ctx, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Delete the index and build it again from the files.

    Args:
        progress: optional ``progress(done, total)`` callback.

    Raises:
        WorkspaceLocked: a writer holds the workspace lock past the wait limit.
    """
    from memcli.index.catalog import remove_index
    from memcli.index.db import BUILD_LOCK, INDEX_NAME

    wait = ctx.ws.config.lock_timeout
    with ctx.ws.lock():
        with _build_lock(ctx.ws.cache / BUILD_LOCK, wait):  # no build is half-way through the old file
            remove_index(ctx.ws.cache / INDEX_NAME)
        catalog = ctx.catalog(refresh=True, progress=progress, wait=wait, full=True)
    return _status(ctx, catalog)


def index_build(ctx: Ctx, progress: Callable[[int, int], None] | None = None,
                background: bool = False) -> dict[str, Any]:
    """Bring the index in step with the files, going on from where a stopped build left off.

    This is what a hook leaves to the background when its deadline comes first
    (``memcli.index.build``). When another process holds the build lock for
    ``memcli.index.db.LOCK_WAIT`` seconds this one leaves the work to it (``last_sync``
    then says ``busy``).

    Args:
        progress: optional ``progress(done, total)`` callback.
        background: start the build as a detached process and return at once
            (``{"backend": "background", "started": bool, "log": path}``).
    """
    if background:
        from memcli.index.build import LOG_NAME, spawn_build

        cache = ctx.ws.cache
        return {"backend": "background", "started": spawn_build(ctx.ws.root, cache), "log": str(cache / LOG_NAME)}
    return _status(ctx, ctx.catalog(progress=progress, full=True))


class _build_lock:  # lower case: used as a context manager, like a function
    """Hold the index build lock (``wait`` seconds at most, then go on: the index is a cache)."""

    def __init__(self, path: Path, wait: float) -> None:
        from memcli.store.oslock import FileLock

        self.lock = FileLock(path, timeout=wait)
        self.held = False

    def __enter__(self) -> None:
        from memcli.store.oslock import Timeout

        try:
            self.lock.acquire()
            self.held = True
        except (Timeout, OSError):
            pass

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.lock.release()


def _status(ctx: Ctx, catalog: Catalog) -> dict[str, Any]:
    """``index status`` data; unreadable files counted as ``Ctx.catalog`` reports them (the caller's only)."""
    from memcli.index.catalog import IndexCatalog

    problems = len(catalog.problems(actor=ctx.actor))
    own: Any = getattr(catalog, "own", catalog)  # the workspace's own index (index.merged)
    own = getattr(own, "inner", own)  # under its quarantine (index.quarantined)
    if not isinstance(own, IndexCatalog):
        return {"backend": "scan", "memories": len(own.memories), "problems": problems}
    return {"backend": "fts5", **own.index.status(), "problems": problems, "files": own.report.files,
            "complete": own.report.complete, "last_sync": own.report.to_dict()}


def check_mode(fuzzy: bool, grep: bool) -> str:
    """The search mode from the ``--fuzzy``/``--grep`` flags.

    Raises:
        UsageProblem: both flags given.
    """
    if fuzzy and grep:
        raise UsageProblem("--fuzzy and --grep cannot be combined", hint="pick one search mode")
    return "fuzzy" if fuzzy else "grep" if grep else "ranked"
