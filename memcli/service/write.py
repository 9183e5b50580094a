"""Write operations: remember, supersede, approve, reject, forget; all through the gates.

Every write happens under the workspace lock, re-reads the files inside it, writes
atomically and makes one commit (or, with ``autocommit = false``, leaves the files for
the user to commit). If the commit fails, the files are restored: an error writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from memcli import fileformat, model
from memcli.errors import (
    HiddenText,
    HistoryConflict,
    MemcliError,
    ReviewRefused,
    SecretDetected,
    SubjectConflict,
    ValidationFailed,
    WrongStatus,
)
from memcli.git import log as gitlog
from memcli.model import Memory, Provenance
from memcli.policy import gates
from memcli.service import Ctx
from memcli.store.files import Loaded, atomic_write
from memcli.timeutil import NotPositive, OutOfCalendar, format_instant, parse_duration, parse_instant, shift

if TYPE_CHECKING:
    from memcli.git.history import History
    from memcli.policy.review import Identity


class WriteOptions:
    """Options of a new memory (``remember``, ``supersede``). Unset values take defaults.

    Plain classes here, not dataclasses: ``dataclasses`` and the ``inspect`` it imports
    cost every write about 10 ms (issue 21 point 3).

    Attributes:
        source, line: provenance: the file a memory was taken from (``import``), its 1-based line.
        sha256: provenance: the hex SHA-256 of that file (``compact --transcript``).
        allow_secret: secret kinds a person let through (CLI only).
        actor: the provenance actor when it is not the person (the agent of an MCP client).
        cross_project: a personal memory for every workspace (``remember --all-projects``).
        memory_id: the id to give it, chosen by the caller (``import``: the ids its dry run shows).
        review: hold it for review whatever its scope (an agent's own proposal; ``share``).
        deny, ask, warn: guard patterns (``memcli.guards``): calls the hooks deny, ask the
            person about, or let through and count as violations.
        The others are ``remember``'s options of the same names. A list left None becomes a
        fresh empty list.
    """

    __slots__ = ("scope", "category", "subject", "importance", "pinned", "tags", "paths", "ttl", "expire_at",
                 "source_type", "run_id", "idempotency_key", "on_conflict", "source", "line", "sha256",
                 "allow_secret", "actor", "cross_project", "memory_id", "review", "deny", "ask", "warn")

    def __init__(self, scope: str | None = None, category: str | None = None, subject: str | None = None,
                 importance: int | None = None, pinned: bool | None = None, tags: list[str] | None = None,
                 paths: list[str] | None = None, ttl: str | None = None, expire_at: str | None = None,
                 source_type: str = "user_said", run_id: str | None = None, idempotency_key: str | None = None,
                 on_conflict: str | None = None, source: str | None = None, line: int | None = None,
                 sha256: str | None = None, allow_secret: list[str] | None = None, actor: str | None = None,
                 cross_project: bool = False, memory_id: str | None = None, review: bool = False,
                 deny: list[str] | None = None, ask: list[str] | None = None, warn: list[str] | None = None) -> None:
        self.scope = scope
        self.category = category
        self.subject = subject
        self.importance = importance
        self.pinned = pinned
        self.tags = [] if tags is None else tags
        self.paths = [] if paths is None else paths
        self.ttl = ttl
        self.expire_at = expire_at
        self.source_type = source_type
        self.run_id = run_id
        self.idempotency_key = idempotency_key
        self.on_conflict = on_conflict
        self.source = source
        self.line = line
        self.sha256 = sha256
        self.allow_secret = [] if allow_secret is None else allow_secret
        self.actor = actor
        self.cross_project = cross_project
        self.memory_id = memory_id
        self.review = review
        self.deny = [] if deny is None else deny
        self.ask = [] if ask is None else ask
        self.warn = [] if warn is None else warn

    def __eq__(self, other: object) -> bool:
        return type(other) is WriteOptions and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: as a dataclass

    def __repr__(self) -> str:
        return f"WriteOptions({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class WriteResult:
    """What a write did.

    Attributes:
        op: the operation (``remember``, ``supersede``, ``approve`` …).
        memory: the memory written or acted on (for a no-op, the existing one).
        outcome: ``created``, ``pending_review``, ``updated`` or ``noop``.
        gate: the gate that decided a no-op or a review (``duplicate``, ``idempotency``, ``review``), else None.
        changed: ids of other memories this write changed (superseded ones).
        commit: the commit hash, or None (no-op, or ``autocommit = false``).
        message: one line for a person.
        gates: each gate and what it said, in order.
        warnings: lines for stderr (near duplicates, possible conflicts).
        A list left None becomes a fresh empty list.
    """

    __slots__ = ("op", "memory", "outcome", "message", "gate", "changed", "commit", "gates", "warnings")

    def __init__(self, op: str, memory: Memory, outcome: str, message: str, gate: str | None = None,
                 changed: list[str] | None = None, commit: str | None = None,
                 gates: list[tuple[str, str]] | None = None, warnings: list[str] | None = None) -> None:
        self.op = op
        self.memory = memory
        self.outcome = outcome
        self.message = message
        self.gate = gate
        self.changed = [] if changed is None else changed
        self.commit = commit
        self.gates = [] if gates is None else gates
        self.warnings = [] if warnings is None else warnings

    def __repr__(self) -> str:
        return f"WriteResult({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """JSON-ready form."""
        return {"op": self.op, "outcome": self.outcome, "gate": self.gate, "message": self.message,
                "id": self.memory.id, "memory": self.memory.to_dict(now), "changed": self.changed,
                "commit": self.commit, "gates": [{"gate": g, "result": r} for g, r in self.gates]}


# --- the transaction ------------------------------------------------------------------

#: The commit dates git accepts in RFC 3339 form (measured with git 2.39: 1969 and 2100 are refused).
GIT_YEARS = (1970, 2099)


def apply(ctx: Ctx, writes: Mapping[Path, bytes | None], op: str, memories: list[Memory], related: list[str],
          trailers: dict[str, str] | None = None, with_text: bool = True, edits_checked: bool = False,
          message: str | None = None) -> str | None:
    """Write files atomically and commit them once; restore them all if anything fails.

    With ``[git] autocommit = true``, a file to rewrite or delete that git tracks and that
    differs from ``HEAD`` (a person's uncommitted edit, staged or not) is never committed
    under memcli's name nor lost: the write is refused (one ``git status``, made only when an existing
    file is rewritten). A file git has never committed is adopted as it is.

    Args:
        writes: absolute path -> new bytes, or None to delete the file.
        op: the operation, named in the commit message.
        memories: the memories the change is about (the message names them; one or many).
        related: ids of other memories the change touched (superseded ones).
        trailers: more ``Memcli-*`` trailers (``{"Undoes": hash}``).
        with_text: put the memory text in the message body (``purge`` does not).
        edits_checked: the caller has already left out files with uncommitted edits
            (:func:`edited_by_hand`, under the same lock), so git is not asked again.
        message: the whole commit message, for a write of files that are not memories
            (``memcli.toml``, ``.gitattributes``; ``memories`` is then empty).

    Returns:
        The commit hash, or None with ``autocommit = false``.

    A write killed half-way is completed or rolled back by the next one (``service.journal``),
    and the warning says which.

    Raises:
        HistoryConflict: a file to rewrite has uncommitted edits; nothing is written.
        UnsafeGitState: a detached HEAD or an operation in progress (rebase, merge …); nothing is written.
        GitLocked, GitFailed: nothing is left written.
    """
    _check_file_sizes(ctx, writes)
    try:
        commit = _apply(ctx, writes, op, memories, related, trailers, with_text, edits_checked, message)
    except MemcliError as err:
        raise nothing_written(err) from None
    if memories or related:
        from memcli.service.stale_notes import drop

        drop(ctx, [m.id for m in memories] + list(related))  # their verdicts no longer hold
    return commit


def _check_file_sizes(ctx: Ctx, writes: Mapping[Path, bytes | None]) -> None:
    """No memory file is written that memcli would then read only in part (``store.files.MAX_FILE_BYTES``).

    Raises:
        ValidationFailed: a memory file over the limit; nothing is written.
    """
    from memcli.store.files import MAX_FILE_BYTES, MEMORIES

    for path, data in writes.items():
        if data is not None and len(data) > MAX_FILE_BYTES and MEMORIES in path.parts:
            raise ValidationFailed(f"the memory file would have {len(data):,} bytes, over the {MAX_FILE_BYTES // 1024} "
                                   "KiB memcli reads; nothing was written",
                                   hint="shorten the text, tags or paths")


def nothing_written(err: MemcliError) -> MemcliError:
    """``err`` with "nothing was written" added to its message when it does not say so already.

    For an error a write raised after restoring every file (``apply``): the person must know
    that no half of the change is left behind, whatever git said (a hook refusing the ref
    update, a lock, a failed recovery of an earlier interrupted write).
    """
    if "nothing was written" not in err.message and "nothing written" not in err.message:
        err.message += "; nothing was written"
        if err.hint is None:
            err.hint = "check the repository (`git status`), then retry"
        err.args = (err.line(),)
    return err


def _apply(ctx: Ctx, writes: Mapping[Path, bytes | None], op: str, memories: list[Memory], related: list[str],
           trailers: dict[str, str] | None, with_text: bool, edits_checked: bool, message: str | None) -> str | None:
    """:func:`apply`, without the wording of its errors."""
    from memcli.git import commit as gitcommit
    from memcli.service import journal

    repo = ctx.history() if ctx.ws.config.autocommit else None
    branch = None
    if repo is not None:
        done = journal.recover(ctx, repo)  # a write killed earlier: completed or rolled back first
        if done:
            ctx.warnings.append(done)
        branch = gitcommit.check_state(repo)  # before any file is touched
        if not GIT_YEARS[0] <= ctx.now.year <= GIT_YEARS[1]:
            raise ValidationFailed(f"the clock ({format_instant(ctx.now)}) is outside the years git can record "
                                   f"({GIT_YEARS[0]}-{GIT_YEARS[1]}); nothing was written", hint="check $MEMCLI_NOW")
    if repo is not None and not edits_checked:
        _refuse_edited(ctx, op, edited_by_hand(ctx, list(writes), repo))  # deletions too (purge)
    backups = {path: path.read_bytes() if path.exists() else None for path in writes}
    from memcli.service import arrived as arrival

    verified = repo is not None and arrival.unmoved(ctx)  # HEAD as verified: memcli's own commit is too
    if repo is not None:
        journal.begin(ctx, op, backups)
    try:
        # New files first: a writer killed half-way leaves a new memory that points at an
        # old one still active, never an old one marked superseded by a memory that is missing.
        # Deletions last, for the same reason.
        for path in sorted(writes, key=lambda p: (writes[p] is None, backups[p] is not None)):
            data = writes[path]
            if data is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, data)
        commit = None
        if repo is not None:
            from memcli.service.branch import unshared_index

            commit = repo.commit(list(writes), message or _message(ctx, op, memories, related, trailers, with_text),
                                 actor=ctx.actor, timeout=ctx.ws.config.lock_timeout, date=format_instant(ctx.now),
                                 on_commit=lambda new, checksum: journal.mark(ctx, new, checksum),
                                 split_index=unshared_index(ctx.ws.root, ctx.ws.config.kind), branch=branch)
    except BaseException:
        _restore(backups)  # raises if a file cannot be put back: the record then stays for the next write
        journal.clear(ctx)  # every file as it was: nothing is left to roll back
        raise
    journal.clear(ctx)
    arrival.advance(ctx, verified, commit)
    if memories:
        ctx.catalog().refresh(list(writes))  # the next command then finds the index in step at once
        record_scans(ctx, memories)
    return commit


def _restore(backups: Mapping[Path, bytes | None]) -> None:
    """Put every file of a failed write back as ``backups`` holds it (absolute path -> old bytes,
    or None for a file that did not exist), touching only those that differ: a write the disk
    refused before it changed anything (a read-only folder) restores nothing and cannot fail.

    Raises:
        OSError: a changed file cannot be put back (the journal's record then stays).
    """
    for path, data in backups.items():
        try:
            now = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        except OSError:
            now = b"" if data is None else None  # unreadable: differs from what it held
        if now == data:
            continue
        if data is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write(path, data)


def record_scans(ctx: Ctx, memories: list[Memory]) -> None:
    """Keep the secret scan of each written memory's text in ``ctx``'s scan memo
    (``service/redact.py``), so the next read of it neither scans it again nor loads the rules.

    The write's gate has just scanned the same text (``text.secrets`` keeps that scan for the
    process), so this costs a look-up. A memo that cannot be written is skipped (the next
    read scans the text, as it would have).
    """
    from memcli.service.redact import cache_of, text_spans

    text_spans([m.text for m in memories], cache_of(ctx))


def edited_by_hand(ctx: Ctx, paths: list[Path], repo: History | None = None) -> list[Path]:
    """The files among ``paths`` that ``HEAD`` holds and that differ from it, staged or not.

    Files that do not exist yet, or that git has never committed (untracked, or only
    added to the index), are not listed: memcli may adopt them. Empty with ``[git]
    autocommit = false`` (files stay uncommitted by design) or when no file exists; else
    one ``git status``.

    Args:
        paths: absolute paths inside the workspace.
        repo: the workspace's ``History``, if already open.

    Raises:
        GitFailed: the workspace is not in a git work tree, or git failed.
    """
    existing = [p for p in paths if p.exists()]
    if not existing or not ctx.ws.config.autocommit:
        return []
    repo = repo or ctx.history()
    edited = set(repo.uncommitted(existing, committed_only=True))
    return [p for p in existing if repo.top_rel(p) in edited]


def _refuse_edited(ctx: Ctx, op: str, edited: list[Path]) -> None:
    """Refuse a write whose files hold uncommitted edits, naming the first one and what to do.

    Raises:
        HistoryConflict: ``edited`` is not empty.
    """
    if not edited:
        return
    rel = ctx.ws.files.rel(edited[0])
    more = f" (and {len(edited) - 1} more)" if len(edited) > 1 else ""
    raise HistoryConflict(f"{rel} has uncommitted edits{more}; {op} refused, nothing written",
                          hint=f"commit or discard them first (see `git diff -- {rel}`), or set them aside "
                               "with `git stash`")


def _message(ctx: Ctx, op: str, memories: list[Memory], related: list[str],
             trailers: dict[str, str] | None = None, with_text: bool = True) -> str:
    """The commit message: operation, ids, scopes and actor, the text, ``Memcli-*`` trailers."""
    scopes = " ".join(dict.fromkeys(m.scope for m in memories))
    runs = " ".join(dict.fromkeys(m.provenance.run_id for m in memories if m.provenance.run_id))
    summary = gitlog.summary([m.id for m in memories], scopes.split(), ctx.actor)
    allowed = sorted({k for m in memories for k in m.provenance.allow_secret})
    if allowed:  # a person let a secret through: the override is recorded, the value stays out of the message
        from memcli.service.redact import cache_of, redact_text

        memories = [m if not m.provenance.allow_secret else
                    m.with_(body=redact_text(m.text, cache_of(ctx))) for m in memories]
    if len(memories) == 1:
        body = memories[0].text if len(memories[0].text) <= 2000 else memories[0].text[:2000] + " …"
    else:
        body = "\n".join(f"- {m.id}: {m.text.splitlines()[0][:100]}" for m in memories)
    return gitlog.message(op, summary, {
        "Op": op, "Id": " ".join(m.id for m in memories), "Scope": scopes, "Actor": ctx.actor,
        "Run": runs or None, "Related": " ".join(related) or None,
        "Allow-Secret": " ".join(allowed) or None, **(trailers or {})},
        body=body if with_text else "")


def rewrite(item: Loaded, changes: dict[str, Any]) -> bytes:
    """New bytes for an existing file with ``changes`` applied surgically (see ``fileformat.update``)."""
    return fileformat.update(item.doc, changes)


# --- building a new memory through the gates --------------------------------------------


def _allowed_kinds(opts: WriteOptions) -> list[str]:
    """``--allow-secret`` kinds, checked: known slugs, and only for a person's own write.

    Raises:
        ValidationFailed: an unknown kind, or an agent or tool source (``model_derived``,
            ``tool_result``): the override is a person's explicit, recorded act.
    """
    if not opts.allow_secret:
        return []
    from memcli.text.secrets import SLUGS

    if opts.source_type not in ("user_said", "admin_edit"):
        raise ValidationFailed("--allow-secret is a person's override: an agent or tool write cannot use it",
                               hint="remove the secret and store where it lives instead")
    known = set(SLUGS.values())
    for kind in opts.allow_secret:
        if kind not in known:
            raise ValidationFailed("--allow-secret: unknown kind of secret",
                                   hint="give the kind the refusal named, e.g. --allow-secret payment-card")
    return sorted(set(opts.allow_secret))


#: rapidfuzz ratio over which a live memory of the scope is checked for a contradiction.
CONTRADICTION_CANDIDATES = 70


def _contradictions(memory: Memory, texts: dict[str, str]) -> list[str]:
    """Warnings for live memories of the scope that the new one may contradict
    (``policy.contradiction``), each with the command that settles it."""
    from rapidfuzz import fuzz, process

    from memcli.policy.contradiction import contradiction

    wanted = model.normalise_text(memory.text)
    # words in any order: "never rebase main; always merge" against "always rebase main; never merge"
    # is a ratio of 65 but the same words (stop 34)
    near = process.extract(wanted, texts, scorer=fuzz.token_sort_ratio, score_cutoff=CONTRADICTION_CANDIDATES,
                           limit=10)
    out = []
    for other, _, other_id in near:
        why = contradiction(wanted, other)
        if why:
            out.append(f"possible conflict with {other_id} ({why}): {other[:80]}; if the new memory replaces it, "
                       f"retire it with `memcli forget {other_id}` (next time: `memcli supersede {other_id} TEXT`)")
    return out


def _expiry(ctx: Ctx, opts: WriteOptions, category: str) -> datetime | None:
    """``expireAt`` of a new memory: ``--ttl``, else ``--expire-at``, else the ``[ttl]`` default of its category."""
    if opts.ttl and opts.expire_at:
        raise ValidationFailed("give --ttl or --expire-at, not both")
    if opts.ttl is not None and not opts.ttl.strip():
        raise ValidationFailed("--ttl is empty", hint="give a duration such as 30d, 12h, 2w or 1y")
    try:
        if opts.ttl:
            return shift(ctx.now, parse_duration(opts.ttl))
        if not opts.expire_at:
            default = ctx.ws.config.default_ttl(category)
            return shift(ctx.now, default) if default else None
        when = parse_instant(opts.expire_at)
    except NotPositive:
        option = "--ttl" if opts.ttl else f"[ttl] {category}"
        raise ValidationFailed(f"{option}: a TTL must be positive: a memory that expires at once is never served",
                               hint="give e.g. --ttl 30d; to retire a memory now, `memcli forget ID`") from None
    except ValueError as err:  # OutOfCalendar too: the message says which end of the calendar
        option = "--ttl" if opts.ttl else "--expire-at" if opts.expire_at else f"[ttl] {category}"
        hint = ("leave out --ttl and --expire-at for a memory that never expires"
                if isinstance(err, OutOfCalendar) and opts.ttl else "e.g. --ttl 30d, or --expire-at 2027-05-01")
        raise ValidationFailed(f"{option}: {err}", hint=hint) from None
    if when <= ctx.now:
        raise ValidationFailed(f"expireAt {format_instant(when)} is already past",
                               hint="give a future date, or use `memcli forget` to retire a memory")
    return when


def _new_id(ctx: Ctx) -> str:
    """A ULID (lower case) whose time part is memcli's clock to the millisecond, so ids sort
    by ``createdAt`` and two memories written in one second still differ in their first
    10 characters (``createdAt`` itself is stored to the second).

    The second comes from ``ctx.now`` (``$MEMCLI_NOW`` when set), the milliseconds from
    the wall clock unless ``$MEMCLI_NOW`` freezes the clock. When the wall clock has moved on
    to a later second since ``ctx.now`` was read (a write that waited for the lock), the id
    takes that second's last millisecond: the wall clock's milliseconds on ``ctx.now``'s
    second made a later memory's id sort before an earlier one's (newcomer MEDIUM, stop 34).
    """
    import os
    from datetime import timezone

    stamp = ctx.now.replace(microsecond=0)
    if not os.environ.get("MEMCLI_NOW"):
        wall = datetime.now(timezone.utc)
        if wall.replace(microsecond=0) > stamp:
            stamp = stamp.replace(microsecond=999_000)
        elif wall.replace(microsecond=0) == stamp:
            stamp = stamp.replace(microsecond=wall.microsecond // 1000 * 1000)
    try:
        return model.new_id(stamp)
    except (ValueError, OverflowError):
        raise ValidationFailed(f"the clock ({format_instant(ctx.now)}) is outside what ids can hold (1970-10889)",
                               hint="check $MEMCLI_NOW") from None


def _chosen_id(ctx: Ctx, memory_id: str | None) -> str | None:
    """``memory_id`` when it is a well-formed id no memory of the store holds, else None (a new one is made)."""
    if not memory_id or not re.fullmatch(r"[0-9a-hjkmnp-tv-z]{26}", memory_id):
        return None
    return None if any(m.id == memory_id for m in ctx.catalog().by_prefix(memory_id)) else memory_id


def _validated(ctx: Ctx, text: str, opts: WriteOptions, base: Memory | None) -> Memory:
    """Gate 1, validation: build the record or raise ValidationFailed/ScopeViolation."""
    model.check_text(text)
    scope = gates.check_write_scope(opts.scope if opts.scope is not None
                                    else (base.scope if base else ctx.ws.config.write_scope), ctx.actor)
    category = opts.category if opts.category is not None else (base.category if base else "fact")
    alias = category.strip().lower() if isinstance(category, str) else None
    extra_tags = []
    if alias in model.CATEGORY_ALIASES:
        category, word = model.CATEGORY_ALIASES[alias], alias.removesuffix("s")
        extra_tags.append(word)
        ctx.warnings.append(f"category {alias!r} is not one of memcli's: written as {category!r} tagged {word!r} "
                            f"(find it with --tag {word})")
    category = model.check_choice("category", category, model.CATEGORIES)
    importance = model.check_importance(opts.importance if opts.importance is not None
                                        else (base.importance if base else 3))
    subject = opts.subject if opts.subject is not None else (base.subject if base else None)
    if subject is not None:
        model.check_subject(subject)
    model.check_choice("source type", opts.source_type, model.SOURCE_TYPES)
    for label, value in (("run id", opts.run_id), ("idempotency key", opts.idempotency_key)):
        if value is not None and (not value.strip() or len(value) > 200 or "\n" in value):
            raise ValidationFailed(f"invalid {label}: use one line of at most 200 characters")
    tags = list(dict.fromkeys([*(opts.tags or (list(base.tags) if base else [])), *extra_tags]))
    paths = opts.paths or (list(base.paths) if base else [])
    model.check_label_bounds(tags, list(paths))  # counts first: 36,000 tags are refused before any other work
    tags = model.check_labels("tags", tags)
    paths = model.check_labels("paths", paths)
    if opts.paths:  # the new ones: a supersede keeps its base's paths as they were written
        model.check_path_globs(paths)
    if opts.deny or opts.ask or opts.warn:
        from memcli import guards

        guarded = guards.to_list(guards.build(opts.deny, opts.ask, opts.warn))
    else:
        guarded = [dict(g) for g in base.guards] if base else []
    body = text.replace("\r\n", "\n").strip() + "\n"
    return Memory(
        id=_chosen_id(ctx, opts.memory_id) or _new_id(ctx), scope=scope, body=body, category=category,
        subject=subject or None, status="active", importance=importance,
        pinned=opts.pinned if opts.pinned is not None else bool(base and base.pinned),
        created_at=ctx.now, updated_at=ctx.now, expire_at=_expiry(ctx, opts, category),
        provenance=Provenance(source_type=opts.source_type, actor=opts.actor or ctx.actor, run_id=opts.run_id,
                              at=ctx.now, idempotency_key=opts.idempotency_key, source=opts.source, line=opts.line,
                              sha256=opts.sha256, allow_secret=_allowed_kinds(opts)),
        tags=tags, paths=paths, supersedes=[base.id] if base else [], anchor=_anchor(ctx, body, paths),
        guards=guarded)


def _anchor(ctx: Ctx, text: str, paths: list[str]) -> dict[str, Any] | None:
    """The new memory's ``anchor`` (``service.anchor.anchor_for``): the code commit it is
    written against, found once per command and store."""
    from memcli.service.anchor import anchor_for

    return anchor_for(ctx, text, paths)


def check_session_owner(ctx: Ctx, scope: str) -> None:
    """Part of gate 1: a ``session:*`` scope that holds another person's memories is theirs
    (``policy.owner``), so nobody else writes there, nor learns what it holds.

    Raises:
        ScopeViolation: ``scope`` is a session scope holding a memory the caller may not see.
    """
    from memcli.errors import ScopeViolation
    from memcli.index import Query
    from memcli.policy.owner import is_session

    if not is_session(scope):
        return
    search = ctx.catalog().retriever()
    every, mine = (Query(text="", scopes=[scope], now=ctx.now, statuses=model.STATUSES, include_expired=True, limit=1,
                         actor=actor) for actor in (None, ctx.actor))
    if search.count(every) > search.count(mine):
        raise ScopeViolation(f"cannot write to {scope}: it is another person's session",
                             hint=f"write to your own session or to user:{ctx.actor}")


class Batch:
    """Writes gathered under one lock and committed once (``remember`` is a batch of one).

    Attributes:
        writes: absolute path -> new bytes.
        added: memories this batch creates, so later items see them as duplicates.
    """

    __slots__ = ("writes", "added")

    def __init__(self) -> None:
        self.writes: dict[Path, bytes] = {}
        self.added: list[Memory] = []


def _decide(ctx: Ctx, op: str, text: str, opts: WriteOptions, base: Loaded | None, batch: Batch) -> WriteResult:
    """Run the six gates of SPEC.md section 3, in order, and add the memory to ``batch``.

    The caller holds the workspace lock and has synced the catalog.

    Raises:
        ValidationFailed, ScopeViolation, SecretDetected, SubjectConflict, InvalidMemoryFile.
    """
    memory = _validated(ctx, text, opts, base.memory if base else None)
    check_session_owner(ctx, memory.scope)
    decided = [("validation", "passed")]
    gates.check_memory(memory)  # every value written: text, labels, scope, run id, key, source
    if memory.guards:  # a pattern is written and shown to agents as the text is: no secret in it either
        gates.check_secrets("\n".join(p for g in memory.guards for p in g.values()), allow=tuple(_allowed_kinds(opts)))
    decided.append(("sensitive_data", f"passed (allowed by the writer: {', '.join(memory.provenance.allow_secret)})"
                    if memory.provenance.allow_secret else "passed"))
    catalog = ctx.catalog()
    if opts.idempotency_key:  # a key counts within one scope: another user's key never matches
        first = next((m for m in batch.added if m.provenance.idempotency_key == opts.idempotency_key), None) \
            or catalog.by_idempotency_key(opts.idempotency_key, memory.scope)
        if first is not None and (first.scope != memory.scope or not ctx.may_see(first)):
            first = None
        if first is not None:
            decided.append(("idempotency", f"repeated key; first result {first.id}"))
            return WriteResult(op, first, "noop", f"already written with this idempotency key: {first.id}",
                               gate="idempotency", gates=decided)
    decided.append(("idempotency", "passed"))
    if base is not None:  # another writer may have superseded it since it was looked up
        now_held = [m for m in catalog.by_prefix(base.memory.id) if m.id == base.memory.id]
        if not now_held or now_held[0].status != "active":
            raise WrongStatus(f"{base.memory.id} is no longer active (another writer changed it)",
                              hint=f"see it with `memcli show {base.memory.id}`")
    pending = opts.review or gates.review_required(memory.scope, memory.provenance.source_type,
                                                   ctx.ws.config.shared_scopes)
    # A pending proposal does not swallow a person's active write of the same text.
    # only texts whose length lets them reach either gate's ratio (the duplicate's, the contradiction's)
    window = gates.ratio_lengths(len(model.normalise_text(memory.text)),
                                 min(ctx.ws.config.near_duplicate, CONTRADICTION_CANDIDATES))
    texts = catalog.live_texts(memory.scope, include_pending=pending, lengths=window)
    texts.update({m.id: model.normalise_text(m.text) for m in batch.added
                  if m.scope == memory.scope and (pending or m.status == "active")})
    if base is not None and _differences(memory, base.memory, opts):
        texts.pop(base.memory.id, None)  # the same text with other paths, tags, guards …: a change of those
    dups = gates.find_duplicates(memory.text, texts, ctx.ws.config.near_duplicate)
    if dups and dups[0].exact:
        first = next((m for m in batch.added if m.id == dups[0].memory_id), None) \
            or catalog.by_prefix(dups[0].memory_id)[0]
        decided.append(("duplicate", f"exact duplicate of {first.id}"))
        if base is not None and first.id != base.memory.id and first.status == "active" and not pending:
            return _superseded_by_existing(ctx, op, base, first, batch, decided)
        return WriteResult(op, first, "noop", f"already exists: {first.id}{_not_applied(memory, first, opts)}",
                           gate="duplicate", gates=decided)
    if base is not None:  # the memory being replaced is near the new one by design: no warning about it
        dups = [d for d in dups if d.memory_id != base.memory.id]
        texts = {k: v for k, v in texts.items() if k != base.memory.id}
    warnings = [f"near duplicate of {d.memory_id} ({d.ratio:.0f}% similar): {texts[d.memory_id][:80]}"
                for d in dups]
    warnings.extend(_contradictions(memory, texts))
    decided.append(("duplicate", "near duplicate reported" if dups else "passed"))
    changed: list[str] = []
    if not pending:
        changed = _retire(ctx, memory, batch.writes, opts.on_conflict)
    decided.append(("conflict", f"supersedes {', '.join(changed)}" if changed else "passed"))
    if pending:
        memory.status = "pending_review"
    decided.append(("review", "active" if not pending else "pending_review: held for review by its writer"
                    if opts.review and not gates.review_required(memory.scope, memory.provenance.source_type,
                                                                 ctx.ws.config.shared_scopes)
                    else "pending_review: shared scope and an agent or tool source"))
    path = ctx.ws.files.new_path(memory)
    memory.path = ctx.ws.files.rel(path)
    batch.writes[path] = fileformat.render_new(model.to_mapping(memory), memory.body)
    batch.added.append(memory)
    outcome = "pending_review" if pending else "created"
    verb = "waiting for review" if pending else "remembered"
    extra = f"; supersedes {', '.join(changed)}" if changed else ""
    if memory.expire_at and not opts.ttl and not opts.expire_at:  # say what a default did (issue 14)
        extra += (f"; expires {format_instant(memory.expire_at)[:10]} by the [ttl] default for {memory.category} "
                  f"({ctx.ws.config.ttl.get(memory.category)}; --ttl or --expire-at sets another)")
    return WriteResult(op, memory, outcome, f"{verb}: {memory.id} ({memory.scope}){extra}",
                       gate="review" if pending else None, changed=changed, gates=decided, warnings=warnings)


def _superseded_by_existing(ctx: Ctx, op: str, base: Loaded, first: Memory, batch: Batch,
                            decided: list[tuple[str, str]]) -> WriteResult:
    """A supersede of ``base`` whose new text is already the active memory ``first``: ``base``
    is marked superseded by ``first`` (and ``first`` names it in ``supersedes``), one commit.
    Before, the write was a no-op that exited 0 and left the outdated memory active beside the
    one that replaces it (newcomer, stop 36)."""
    links = [*base.memory.superseded_by, first.id]
    batch.writes[base.file] = rewrite(base, {"status": "superseded", "supersededBy": links, "updatedAt": ctx.now})
    if base.memory.id not in first.supersedes and all(m.id != first.id for m in batch.added):
        held = ctx.load(first)
        batch.writes[held.file] = rewrite(held, {"supersedes": [*held.memory.supersedes, base.memory.id],
                                                 "updatedAt": ctx.now})
    decided.append(("conflict", f"supersedes {base.memory.id}"))
    return WriteResult(op, first, "updated", f"already exists: {first.id}; {base.memory.id} is now superseded by it",
                       gate="duplicate", changed=[base.memory.id], gates=decided)


def _differences(memory: Memory, held: Memory, opts: WriteOptions) -> list[tuple[str, str, list[str]]]:
    """What ``memory`` (being written) takes from the options given in ``opts`` that ``held``
    (a memory of the same text) does not hold: ``(field, what held has, the options that
    give memory's)`` per field, in the order of ``remember``'s options; [] when none."""
    import shlex

    out: list[tuple[str, str, list[str]]] = []
    if opts.category is not None and memory.category != held.category:
        out.append(("category", held.category, [f"--category {memory.category}"]))
    if opts.subject is not None and memory.subject != held.subject:
        out.append(("subject", held.subject or "none", [f"--subject {shlex.quote(memory.subject or '')}"]))
    if opts.importance is not None and memory.importance != held.importance:
        out.append(("importance", str(held.importance), [f"--importance {memory.importance}"]))
    if opts.tags and set(memory.tags) != set(held.tags):
        out.append(("tags", ", ".join(held.tags) or "none", [f"--tag {shlex.quote(t)}" for t in memory.tags]))
    if opts.paths and set(memory.paths) != set(held.paths):
        out.append(("paths", ", ".join(held.paths) or "none", [f"--path {shlex.quote(p)}" for p in memory.paths]))
    if (opts.ttl or opts.expire_at) and memory.expire_at != held.expire_at:
        given = f"--ttl {shlex.quote(opts.ttl)}" if opts.ttl else f"--expire-at {shlex.quote(opts.expire_at or '')}"
        out.append(("expiry", format_instant(held.expire_at) if held.expire_at else "never", [given]))
    if opts.pinned is not None and memory.pinned != held.pinned:
        out.append(("pinned", "yes" if held.pinned else "no", ["--pinned" if memory.pinned else "--no-pinned"]))
    if memory.guards != held.guards:
        out.append(("guards", str(len(held.guards)) if held.guards else "none",
                    [f"--{kind} {shlex.quote(pattern)}" for kind, patterns in (("deny", opts.deny), ("ask", opts.ask),
                                                                               ("warn", opts.warn))
                     for pattern in patterns]))
    return out


def _not_applied(memory: Memory, held: Memory, opts: WriteOptions) -> str:
    """For a write that is an exact duplicate of ``held``: what it asked for that ``held`` does
    not have, and the supersede that gives it (``''`` when nothing differs). Without this
    the options of a repeated text (``remember TEXT --path P``) were dropped without a word."""
    found = _differences(memory, held, opts)
    if not found:
        return ""
    what = "; ".join(f"its {name}: {value}" for name, value, _ in found)
    args = " ".join(arg for _, _, given in found for arg in given)
    return (f" ({what}): the {', '.join(name for name, _, _ in found)} given were not applied; to change them: "
            f"memcli supersede {held.id} {args}")


def _gate(ctx: Ctx, op: str, text: str, opts: WriteOptions, base: Loaded | None = None) -> WriteResult:
    """One memory through the gates, written and committed on its own."""
    model.check_text(text)
    gates.check_secrets(text, allow=tuple(_allowed_kinds(opts)))  # before the lock: a refused secret never waits
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        batch = Batch()
        result = _decide(ctx, op, text, opts, base, batch)
        if batch.writes:
            result.commit = apply(ctx, batch.writes, op, [result.memory], result.changed)
    return result


def write_batch(ctx: Ctx, op: str, items: Sequence[tuple[str, WriteOptions] | Memory],
                dry_run: bool = False, deadline: float | None = None) -> tuple[list, str | None]:
    """Send many memories through the gates under one lock and commit the accepted ones once.

    Args:
        op: the operation named in the commit (``extract``, ``import`` …).
        items: ``(text, options)`` pairs, in order; a later item sees earlier ones as
            duplicates or repeated idempotency keys. An item may instead be a complete
            :class:`Memory` to restore with its own id and fields (see ``service.restore``).
        dry_run: run every gate, write nothing (the results say what would happen).
        deadline: a ``time.monotonic()`` instant (a hook's budget): checked before each item's
            gates; once past, nothing is written and ``agents.transcript.DeadlineReached`` is raised.

    Returns:
        ``(results, commit)``: per item a :class:`WriteResult` or the ``MemcliError`` a
        gate raised for it (refused items do not stop the others); the commit hash, or
        None when nothing was written (or ``autocommit = false``).

    Raises:
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
        DeadlineReached: ``deadline`` passed; nothing is written.
    """
    groups: dict[Path, tuple[Ctx, list[int]]] = {}
    for number, item in enumerate(items):  # each store commits on its own (SPEC.md section 1)
        store = _item_store(ctx, item)
        groups.setdefault(store.ws.root, (store, []))[1].append(number)
    if len(groups) > 1 or (groups and next(iter(groups.values()))[0] is not ctx):
        results: list = [None] * len(items)
        commit = None
        for store, numbers in groups.values():
            done, made = write_batch(store, op, [items[n] for n in numbers], dry_run, deadline)
            for number, result in zip(numbers, done):
                results[number] = result
            commit = commit or made
            if store is not ctx:  # read through the workspace's catalog, and its scan memo
                record_scans(ctx, [r.memory for r in done if isinstance(r, WriteResult) and r.outcome != "noop"])
        return results, commit
    return _one_store_batch(ctx, op, items, dry_run, deadline)


def _item_store(ctx: Ctx, item: tuple[str, WriteOptions] | Memory) -> Ctx:
    """The store one item of a batch goes to (a restored memory: the one of its scope)."""
    from memcli.errors import MemcliError

    try:
        return ctx.store_for(item.scope) if isinstance(item, Memory) else store_of(ctx, item[1])
    except MemcliError:
        return ctx  # its own gates report it


def _one_store_batch(ctx: Ctx, op: str, items: Sequence[tuple[str, WriteOptions] | Memory],
                     dry_run: bool, deadline: float | None) -> tuple[list, str | None]:
    """:func:`write_batch` within one store."""
    import time

    from memcli.errors import MemcliError
    from memcli.service.restore import restore

    results: list = []
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        batch = Batch()
        for item in items:
            if deadline is not None and time.monotonic() > deadline:
                from memcli.agents.transcript import DeadlineReached

                raise DeadlineReached(len(results), "candidates through the gates")  # nothing written yet
            try:
                results.append(restore(ctx, op, item, batch) if isinstance(item, Memory)
                               else _decide(ctx, op, item[0], item[1], None, batch))
            except MemcliError as err:
                results.append(err)
        commit = None
        if batch.writes and not dry_run:
            changed = [c for r in results if isinstance(r, WriteResult) for c in r.changed]
            commit = apply(ctx, batch.writes, op, batch.added, changed)
    for result in results:
        if isinstance(result, WriteResult) and result.outcome != "noop":
            result.commit = commit
    return results, commit


def _retire(ctx: Ctx, memory: Memory, writes: dict[Path, bytes], on_conflict: str | None) -> list[str]:
    """Mark what ``memory`` replaces as superseded: its ``supersedes`` list and the subject holder.

    The index finds the candidates; each is then read from disk (``Ctx.load``), since a write
    checks the folders, not every file (docs/search.md, "Freshness"): one edited in place
    since the last full walk that is no longer active, or no longer holds the subject, is
    left alone.

    Raises:
        SubjectConflict: another active memory holds the subject and the policy is ``fail``.
        InvalidMemoryFile: a file to rewrite no longer parses (memcli never rewrites it).
    """
    policy = on_conflict or ctx.ws.config.on_conflict
    catalog = ctx.catalog()
    found = {m.id: m for ref in memory.supersedes for m in catalog.by_prefix(ref)
             if m.id == ref and m.status == "active"}
    if memory.subject:
        found.update((m.id, m) for m in catalog.active_with_subject(memory.scope, memory.subject)
                     if m.id != memory.id and m.id not in found)
    subject = (memory.subject or "").casefold()
    targets: list[Loaded] = []
    for candidate in found.values():
        item = ctx.load(candidate)  # from disk: the index may not have seen an edit in place yet
        held = item.memory
        named = candidate.id in memory.supersedes
        if held.status != "active" or not named and (held.scope != memory.scope
                                                     or (held.subject or "").casefold() != subject):
            continue
        if not named and policy == "fail":
            raise SubjectConflict(f"{held.id} already holds subject {memory.subject!r} in {memory.scope}",
                                  hint=f"supersede it with `memcli supersede {held.id} TEXT`, "
                                       "or pass --on-conflict supersede")
        targets.append(item)
    changed = []
    for item in targets:
        target = item.memory
        links = [*target.superseded_by, memory.id]
        writes[item.file] = rewrite(item, {"status": "superseded", "supersededBy": links, "updatedAt": ctx.now})
        if target.id not in memory.supersedes:
            memory.supersedes.append(target.id)
        changed.append(target.id)
    return changed


def store_of(ctx: Ctx, opts: WriteOptions, base: Memory | None = None, text: str | None = None) -> Ctx:
    """The context of the store a new memory goes to (``Ctx.store_for``): the person's own
    store for a personal scope of a workspace with an id, else ``ctx`` (SPEC.md section 1).

    Args:
        base: the memory a supersede replaces (its scope is the default).
        text: the new memory's text: when the person's store would be made by this write, the
            write gates' checks of text, secrets and fields run first, so a refused write makes none.

    Raises:
        ValidationFailed: ``opts.cross_project`` for a scope other than ``user:<name>``; with
            ``text``, what gate 1 refuses (and SecretDetected, HiddenText from the secrets gate).
        WorkspaceInvalid, GitFailed: the personal store cannot be created.
    """
    from memcli.errors import MemcliError

    scope = opts.scope if opts.scope is not None else (base.scope if base else ctx.ws.config.write_scope)
    try:
        scope = gates.check_write_scope(scope, ctx.actor)
    except MemcliError:
        return ctx  # gate 1 reports it, in the store it would have gone to
    if opts.cross_project and not scope.startswith("user:"):
        raise ValidationFailed(f"--all-projects keeps a user:NAME memory for every workspace; {scope} is not one",
                               hint=f"add --scope user:{ctx.actor}")
    if text is not None and ctx.store_for(scope, opts.cross_project, create=False) is None:
        # the person's store is made on this write: a write the gates refuse makes nothing
        model.check_text(text)
        gates.check_secrets(text, allow=tuple(_allowed_kinds(opts)))
        _validated(ctx, text, opts, base)
    return ctx.store_for(scope, opts.cross_project)


def remember(ctx: Ctx, text: str, opts: WriteOptions) -> WriteResult:
    """Write a new memory through the gates (SPEC.md sections 3 and 4), in the store its
    scope belongs to (:func:`store_of`).

    Raises:
        ValidationFailed, ScopeViolation, SecretDetected, SubjectConflict, WorkspaceLocked,
        GitLocked, GitFailed: as their names say; nothing is written.
    """
    store = store_of(ctx, opts, text=text)
    result = _gate(store, "remember", text, opts)
    if store is not ctx:  # read through the workspace's catalog, and its scan memo
        record_scans(ctx, [result.memory])
    return result


def supersede(ctx: Ctx, old_ref: str, text: str | None, opts: WriteOptions) -> WriteResult:
    """Write a replacement for an active memory and mark the old one, linked both ways, in one commit.

    The new memory inherits the old one's scope, category, subject, importance, tags and
    paths unless ``opts`` says otherwise, and its guards unless ``opts`` gives some. ``text``
    None keeps the old text (a change of guards or labels only). If the new one must wait
    for review, the old one stays active until the new one is approved.

    Raises:
        MemoryNotFound, AmbiguousId: ``old_ref`` does not name one visible memory.
        WrongStatus: the old memory is not active.
        and the errors of :func:`remember`.
    """
    workspace, ctx = ctx, ctx.owner(old_ref)  # the replacement goes to the store of the memory it replaces
    old = ctx.resolve(old_ref)
    if store_of(workspace, opts, old.memory).ws.root != ctx.ws.root:
        raise ValidationFailed(f"{old.memory.id} is in {old.memory.scope}; its replacement cannot go to "
                               f"{opts.scope}, a scope kept in another store",
                               hint="remember the new text on its own, then `memcli forget` the old one")
    if old.memory.status != "active":
        raise WrongStatus(f"{old.memory.id} is {old.memory.status}, only an active memory can be superseded",
                          hint=f"see it with `memcli show {old.memory.id}`")
    result = _gate(ctx, "supersede", old.memory.text if text is None else text, opts, base=old)
    if ctx is not workspace:  # read through the workspace's catalog, and its scan memo
        record_scans(workspace, [result.memory])
    return result


# --- status changes on one memory -------------------------------------------------------


#: Transitions that take a memory out of service: allowed on a file whose text fails today's gates.
RETIRING = ("forget", "reject")


def _transition(ctx: Ctx, ref: str, op: str, allowed: tuple[str, ...], changes: dict[str, Any],
                check: Callable[[Memory], None] | None = None) -> WriteResult:
    ctx = ctx.owner(ref)  # a personal memory changes in the person's own store
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        item = ctx.resolve(ref)
        memory = item.memory
        if memory.status not in allowed:
            cls = ReviewRefused if op in ("approve", "reject") else WrongStatus
            raise cls(f"{memory.id} is {memory.status}; {op} needs {' or '.join(allowed)}",
                      hint=f"see it with `memcli show {memory.id}`")
        if check:
            check(memory)
        # The file may have been edited by hand since it passed the gates: what memcli commits, it checks.
        # Retiring it (forget, reject) adds nothing to what is already committed: it goes on, with a warning.
        gates.check_values(("the reason", changes.get("review", {}).get("reason")), ("the actor", ctx.actor))
        unsafe = False  # the text fails today's gates: the commit message and the answer get it cleaned
        try:
            gates.check_memory(memory)
        except (SecretDetected, HiddenText) as err:
            if op not in RETIRING:
                raise
            unsafe = True
            ctx.warnings.append(f"{memory.id}: {err.message.removeprefix('refused: ')}; it is retired, but the file "
                                f"and its history still hold it: `memcli purge {memory.id} --history` removes them")
        writes = {item.file: rewrite(item, {**changes, "updatedAt": ctx.now})}
        memory.status = changes.get("status", memory.status)
        changed: list[str] = []
        if op == "approve":
            changed = _retire(ctx, memory, writes, None)
            if changed and set(changed) - set(item.memory.supersedes):
                writes[item.file] = rewrite(item, {**changes, "updatedAt": ctx.now, "supersedes": memory.supersedes})
        if unsafe:  # as every read channel shows it
            from memcli.service.redact import for_reader

            (memory,) = for_reader(ctx, [memory])
        commit = apply(ctx, writes, op, [memory], changed)
    extra = f"; supersedes {', '.join(changed)}" if changed else ""
    return WriteResult(op, memory, "updated", f"{op}: {memory.id} is now {memory.status}{extra}",
                       changed=changed, commit=commit)


def approve(ctx: Ctx, ref: str, reason: str | None = None) -> WriteResult:
    """Approve a ``pending_review`` memory: it becomes active and retires what it supersedes.

    Raises:
        ReviewRefused: not pending; the caller wrote it or committed its proposal (an agent's
            write on the caller's behalf) and self-approval is off (``[review]
            allow_self_approve``); an agent's tool runs memcli (``agents.callers``).
    """
    _person_only("approve a memory")

    def not_self(memory: Memory) -> None:
        if ctx.ws.config.allow_self_approve:
            return
        if memory.provenance.actor == ctx.actor:
            raise ReviewRefused(f"{memory.id} was written by you ({ctx.actor}); a different reviewer must approve it",
                                hint="ask another person, or set [review] allow_self_approve = true")
        proposer = _proposer(ctx.owner(ref), memory)
        if proposer is not None and proposer.named_by(ctx.actor):
            # an agent's write on your behalf is committed as you: `memcli check` and every teammate's
            # clone call your approval of it an approval by its own proposer (policy.review)
            raise ReviewRefused(f"{memory.id} was proposed in a commit by you ({proposer.show()}), as an agent "
                                "writing on your behalf commits; a different person must approve it",
                                hint="ask a teammate; working alone, set [review] allow_self_approve = true")
    review = {"by": ctx.actor, "at": ctx.now, "decision": "approved", **({"reason": reason} if reason else {})}
    changes: dict[str, Any] = {"status": "active", "review": review}

    def checked(memory: Memory) -> None:  # the approver checks it against today's code: anchored now
        not_self(memory)
        anchor = _anchor(ctx.owner(ref), memory.text, memory.paths)
        if anchor is not None:
            changes["anchor"] = anchor
    return _transition(ctx, ref, "approve", ("pending_review",), changes, checked)


def confirm(ctx: Ctx, refs: list[str]) -> WriteResult:
    """Re-anchor active memories a person has checked against today's code (``memcli
    confirm``): each gets a fresh ``anchor`` at the code's ``HEAD`` with ``confirmedBy`` and
    ``confirmedAt``, all in one commit, so ``memcli stale`` no longer lists them.

    Raises:
        NotFound, AmbiguousId: a reference names no memory, or several.
        WrongStatus: a memory is not active.
        ValidationFailed: no memory given, or a memory lives in a store with no code
            repository (the person's own store, a store outside git).
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
    """
    from memcli.service.anchor import anchor_for

    _person_only("confirm a memory against the code")
    if not refs:
        raise ValidationFailed("confirm needs at least one memory id", hint="list candidates with `memcli stale`")
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        writes: dict[Path, bytes | None] = {}
        memories: list[Memory] = []
        for ref in dict.fromkeys(refs):
            item = ctx.resolve(ref)
            memory = item.memory
            if memory.status != "active":
                raise WrongStatus(f"{memory.id} is {memory.status}; confirm needs active",
                                  hint=f"see it with `memcli show {memory.id}`")
            if Path(memory.path).is_absolute():
                raise ValidationFailed(f"{memory.id} is in your own store, which has no code to anchor to",
                                       hint="only project memories are anchored to the code")
            anchor = anchor_for(ctx, memory.text, memory.paths)
            if anchor is None:
                raise ValidationFailed(f"{memory.id}: this workspace has no code commit to anchor to",
                                       hint="commit the code first (memcli anchors to its HEAD)")
            anchor.update({"confirmedBy": ctx.actor, "confirmedAt": ctx.now})
            writes[item.file] = rewrite(item, {"anchor": anchor, "updatedAt": ctx.now})
            memory.anchor = anchor
            memories.append(memory)
        commit = apply(ctx, writes, "confirm", memories, [])
    names = ", ".join(m.id for m in memories)
    return WriteResult("confirm", memories[0], "updated",
                       f"confirmed {names} against the code at {memories[0].anchor['commit'][:10]}"
                       if memories[0].anchor else f"confirmed {names}", commit=commit)


def reject(ctx: Ctx, ref: str, reason: str) -> WriteResult:
    """Reject a ``pending_review`` memory, recording the reviewer and the reason.

    Raises:
        ValidationFailed: the reason is blank.
        ReviewRefused: the memory is not pending, or an agent's tool runs memcli.
    """
    _person_only("reject a memory")
    if not reason or not reason.strip():
        raise ValidationFailed("a rejection needs a reason", hint="pass --reason TEXT")
    review = {"by": ctx.actor, "at": ctx.now, "decision": "rejected", "reason": reason.strip()}
    return _transition(ctx, ref, "reject", ("pending_review",), {"status": "rejected", "review": review})


def forget(ctx: Ctx, ref: str) -> WriteResult:
    """Archive an active memory: it stops being served; the file and its history stay.

    Raises:
        WrongStatus: the memory is not active (reject a pending one instead).
        ReviewRefused: an agent's tool runs memcli and the memory is in a shared scope (exit 8).
    """
    def shared_only_by_people(memory: Memory) -> None:
        if gates.review_required(memory.scope, "model_derived", ctx.ws.config.shared_scopes):
            _person_only(f"archive a memory of the shared scope {memory.scope!r}")
    return _transition(ctx, ref, "forget", ("active",), {"status": "archived"}, shared_only_by_people)


def _person_only(action: str) -> None:
    """``agents.callers.person_only`` on this process's environment (ReviewRefused, exit 8)."""
    import os

    from memcli.agents.callers import person_only

    person_only(os.environ, action)


def _proposer(ctx: Ctx, memory: Memory) -> Identity | None:
    """The git identity that committed ``memory``'s first version (its proposer, as ``memcli
    check`` reads it); None when it was never committed."""
    from memcli.policy.review import Identity

    found = ctx.history().first_author(ctx.ws.root / memory.path)
    return Identity(*found) if found else None

