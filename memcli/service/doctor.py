"""``memcli doctor``: report files that cannot be served; ``--fix`` writes documented defaults in.

SPEC.md section 2: a hand-written file with minimal or no front-matter is served with
defaults (see ``model.from_mapping``): id from the file name, scope from the folder,
category ``fact``, status ``active``, importance 3, provenance ``admin_edit`` by
``unknown``, ``updatedAt`` equal to ``createdAt``, and ``createdAt`` from the file.
:func:`fix` writes exactly those values into every such file the caller may see, so
nothing a reader sees changes, with one exception that makes the record stable:
``createdAt`` becomes the author date of the commit that first added the file (the
loader's default, the file's modification time, changes on every checkout), or the
modification time when git never saw the file. Existing keys, comments and the body stay
byte for byte (``fileformat.update``). Files that cannot be parsed are reported and never
rewritten; a file whose text holds a secret is not fixed either (what memcli commits, it
checks: the sensitive-data gate), and is reported as refused. A committed file with
uncommitted edits (staged or not) is skipped and listed, so a person's draft is never
committed under memcli's name; a file git has never committed is fixed and adopted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memcli.errors import InvalidMemoryFile
from memcli.model import KEY_ORDER, STATUSES, Memory
from memcli.service import Ctx

#: The keys ``--fix`` writes when a file lacks them (or holds them empty), in file order.
DEFAULTED = ("id", "scope", "category", "status", "importance", "createdAt", "updatedAt", "provenance")
OP = "doctor"


@dataclass
class Fixed:
    """One file ``--fix`` rewrote: its path (relative to the workspace), id and the keys it added."""

    path: str
    id: str
    added: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"path": self.path, "id": self.id, "added": self.added}


@dataclass
class Report:
    """What ``doctor`` found and, with ``--fix``, did.

    Attributes:
        problems: files that cannot be served (never rewritten).
        fixed: files that got their defaults written in (empty without ``--fix``).
        refused: ``(path, reason)`` of files that lack defaults but hold a secret, left as they are.
        skipped: ``(path, reason)`` of files that lack defaults but have uncommitted edits, left as they are.
        commit: the commit of the fix, or None (nothing to fix, or ``autocommit = false``).
        repository: lines on the repository's state: an unfinished write completed or rolled
            back, a leftover ``index.lock`` (its age, and whether ``--fix`` removed it).
        moved: with ``--fix``, what ``service.move.move_personal`` did (personal memories found in
            the project workspace moved to their owner's store); without, that there are some.
    """

    problems: list[InvalidMemoryFile]
    fixed: list[Fixed] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    commit: str | None = None
    repository: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def check(ctx: Ctx) -> Report:
    """Files that cannot be served, with path, line and reason (none in another user's personal folder),
    after :func:`repository` has looked at (and repaired) the git side."""
    notes = repository(ctx, fix=False) + exposure(ctx, fix=False)
    report = Report(ctx.catalog(full=True).problems(actor=ctx.actor), repository=notes + quarantined(ctx))
    report.refused = holding_secrets(ctx)
    if ctx.ws.config.kind == "project":
        from memcli.policy.owner import owner_of
        from memcli.service import move

        mine = [m for m in move.in_tree(ctx) if m.status == "active" and owner_of(m) == ctx.actor]
        if ctx.ws.config.workspace_id:  # a planted file is listed as a problem, never offered a move
            mine = move.unfinished(ctx, mine)
        if mine:
            what, it = (("1 personal memory of yours is", "it") if len(mine) == 1
                        else (f"{len(mine)} personal memories of yours are", "them"))
            report.moved.append(f"{what} kept in this workspace, where a push publishes {it}: "
                                f"`memcli doctor --fix` moves {it} to your own store")
    return report


def holding_secrets(ctx: Ctx) -> list[tuple[str, str]]:
    """``(path, reason)`` of this workspace's files the caller may see whose text holds a secret
    (the write gate's ``check_memory``): a file written by hand, committed or not, never went
    through the gate, and ``doctor`` said "all memory files are readable" while two held a token
    and a key that only ``doctor --fix`` and ``check`` named."""
    from memcli.errors import SecretDetected
    from memcli.policy.gates import check_memory

    catalog = ctx.catalog()
    found = []
    for memory in (m for status in STATUSES for m in catalog.with_status(status) if ctx.may_see(m)):
        if Path(memory.path).is_absolute():  # a personal store's (index.merged): its own doctor says
            continue
        try:
            check_memory(memory, ("the actor", ctx.actor))
        except SecretDetected as err:
            found.append((memory.path, err.message.removeprefix("refused: ")))
    return found


def quarantined(ctx: Ctx) -> list[str]:
    """One line per change quarantined on arrival (``service.arrival``; the catalog's read has
    verified what arrived), with its reason and the two commands that end it."""
    from memcli.service import arrival

    return [f"quarantined on arrival, not served: {e.line()}; `memcli quarantine accept {e.id}` or "
            f"`memcli quarantine revert {e.id}`" for e in arrival.entries(ctx)]


def exposure(ctx: Ctx, fix: bool) -> list[str]:
    """Folders and files others may read in the person's own stores (memories, index, git objects)
    and in the project's ``.cache/`` (``store.personal.too_open``); with ``fix`` they become 0700
    folders and 0600 files (issue 22 point 6).

    Returns:
        One line per place with wider modes (or per place repaired); empty when all are private.
    """
    from memcli.store import personal

    places = [(store.ws.root, "your personal store") for store in ctx.personal_stores()]
    if ctx.ws.config.kind == "personal":
        places.append((ctx.ws.root, "this personal store"))
    places.append((ctx.ws.root / ".cache", "the workspace's cache (index, statistics)"))
    notes = []
    for root, what in places:
        wide = personal.too_open(root)
        if not wide:
            continue
        example = f"{wide[0]} is {oct(wide[0].lstat().st_mode & 0o777)[2:]}"
        if fix:
            done = personal.make_private(wide)
            notes.append(f"made {done} folders and files of {what} {root} private to you (0700 folders, 0600 files)")
        else:
            notes.append(f"{len(wide)} folders and files of {what} {root} are open to other users ({example}): "
                         "`memcli doctor --fix` makes them private (0700 folders, 0600 files)")
    return notes


def repository(ctx: Ctx, fix: bool) -> list[str]:
    """Look at the git side of the workspace; complete or roll back a write a kill interrupted.

    A write whose process died is completed or rolled back (``service.journal``), whatever
    ``fix`` says: that restores what memcli promised. A leftover ``index.lock`` is reported
    with its age and whether a git process is running in the repository; with ``fix`` it is
    removed when none is (Linux ``/proc`` tells; elsewhere it is only reported).

    A ``memcli.toml`` that does not load comes first (``Config.broken``: what memcli works by
    instead, and how to mend it; ``service.settings``); ``--fix`` leaves the file to its person.

    Returns:
        One line per thing found or done; empty when all is well (or there is no git).
    """
    from memcli.errors import GitFailed, MemcliError
    from memcli.git import commit as gitcommit
    from memcli.service import journal

    notes = ([ctx.ws.config.broken] if ctx.ws.config.broken else []) + unfinished(ctx, fix)
    if not ctx.ws.config.autocommit:
        return notes
    try:
        repo = ctx.git()
    except GitFailed:
        return notes
    if journal.pending(ctx):
        try:
            with ctx.ws.lock():
                done = journal.recover(ctx, repo)
        except MemcliError as err:
            done = f"an unfinished write is recorded but could not be finished yet: {err.message}"
        if done:
            notes.append(done)
    lock = repo.index_lock()
    age = gitcommit.lock_age(lock)
    if age is not None:
        running = gitcommit.git_processes(repo)
        if running and running != [-1]:
            notes.append(f"git's {lock} ({age:.0f} s old) is held by running git process "
                         f"{', '.join(map(str, running[:5]))}: leave it; commits wait for it")
        elif fix and not running:
            lock.unlink(missing_ok=True)
            notes.append(f"removed git's {lock}: {age:.0f} s old and no git process is running in the repository")
        else:
            why = "no git process is running in the repository" if not running else "it may be stale"
            notes.append(f"git's {lock} is {age:.0f} s old and {why}: it blocks every commit; "
                         + ("remove it if no git is running (`rm " + str(lock) + "`)" if running
                            else "`memcli doctor --fix` removes it"))
    return notes


def unfinished(ctx: Ctx, fix: bool) -> list[str]:
    """Name the operations a kill left half-done beyond one commit; with ``fix``, finish or roll them back.

    A ``sync`` merge (``service.sync_recover``) is rolled back (``memcli sync`` merges again);
    a ``purge --history`` (``service.purge``) is finished: history no longer holds the text.
    The workspace and the person's own stores are looked at.

    Returns:
        One line per operation found (what it is and which command settles it) or settled.
    """
    from memcli.errors import MemcliError
    from memcli.service import journal, purge, sync_recover

    notes: list[str] = []
    for store in (ctx, *ctx.personal_stores()):
        record = journal.load(store, journal.SYNC)
        if record is None:
            continue
        where = "" if store is ctx else f"your personal store {store.ws.root}: "
        if not fix:
            notes.append(where + sync_recover.pending_line(store, record))
            continue
        try:
            with store.ws.lock():
                done = sync_recover.roll_back(store)
        except MemcliError as err:
            done = f"an interrupted `sync` merge could not be rolled back yet: {err.line()}"
        else:
            done = done and done + "; `memcli sync` merges again"
        if done:
            notes.append(where + done)
    found = purge.pending(ctx)
    if found is not None and not fix:
        notes.append(purge.pending_line(found[1]))
    elif found is not None:
        try:
            result = purge.purge(ctx, found[1]["id"], history=True)
        except MemcliError as err:
            notes.append(f"an unfinished `purge --history` of {found[1]['id']} could not be finished: {err.line()}")
        else:
            notes += [result.message, *result.warnings]
    return notes


def defaults(memory: Memory, meta: dict, created: datetime | None) -> dict[str, Any]:
    """The keys of ``DEFAULTED`` that ``meta`` lacks (absent or empty), with the values served.

    Args:
        memory: the record the loader built from the file (it holds the defaults).
        meta: the file's front-matter mapping (``{}`` for a body-only file).
        created: the first-add author date from git, or None (then the served
            ``createdAt``, i.e. the file's modification time, is kept).
    """
    missing = [k for k in DEFAULTED if meta.get(k) is None]
    created_at = created if created is not None and "createdAt" in missing else memory.created_at
    values = {"id": memory.id, "scope": memory.scope, "category": memory.category, "status": memory.status,
              "importance": memory.importance, "createdAt": created_at,
              "updatedAt": created_at,  # the loader's default: updatedAt = createdAt
              "provenance": {"sourceType": memory.provenance.source_type, "actor": memory.provenance.actor,
                             "runId": memory.provenance.run_id}}
    return {k: values[k] for k in KEY_ORDER if k in missing}


def fix(ctx: Ctx) -> Report:
    """Write the documented defaults into every served file the caller may see that lacks them.

    One commit (op ``doctor``) for all files; none when nothing lacks a default. A file
    whose text holds a secret is left as it is and listed in ``refused``; one with
    uncommitted edits (``[git] autocommit = true``) is left as it is and listed in ``skipped``.

    Raises:
        WorkspaceLocked, GitLocked, GitFailed: nothing is left written.
    """
    from memcli import fileformat
    from memcli.errors import SecretDetected
    from memcli.policy.gates import check_memory
    from memcli.service.move import move_personal
    from memcli.service.write import apply, edited_by_hand

    notes = repository(ctx, fix=True) + exposure(ctx, fix=True)
    moved = move_personal(ctx)
    with ctx.ws.lock():
        catalog = ctx.catalog(refresh=True, full=True)
        problems = catalog.problems(actor=ctx.actor)
        files = ctx.ws.files
        lacking: list[tuple[Memory, dict]] = []
        refused: list[tuple[str, str]] = []
        for memory in (m for status in STATUSES for m in catalog.with_status(status) if ctx.may_see(m)):
            if Path(memory.path).is_absolute():  # a personal store's (index.merged): not this workspace's file
                continue
            try:
                item = files.load(ctx.ws.root / memory.path, round_trip=False)
            except InvalidMemoryFile as err:  # changed since the sync: report it, leave it alone
                problems.append(err)
                continue
            if not any(item.doc.meta.get(k) is None for k in DEFAULTED):
                continue
            try:
                check_memory(item.memory, ("the actor", ctx.actor))
            except SecretDetected as err:
                refused.append((memory.path, err.message))
                continue
            lacking.append((item.memory, item.doc.meta))
        edited = {files.rel(p) for p in edited_by_hand(ctx, [ctx.ws.root / m.path for m, _ in lacking])}
        skipped = [(m.path, f"uncommitted edits; commit or discard them first (see `git diff -- {m.path}`)")
                   for m, _ in lacking if m.path in edited]
        lacking = [(m, meta) for m, meta in lacking if m.path not in edited]
        if not lacking:
            return Report(problems, refused=refused, skipped=skipped, repository=notes + quarantined(ctx),
                          moved=moved)
        added = added_dates(ctx, [m.path for m, meta in lacking if meta.get("createdAt") is None])
        writes: dict[Path, bytes] = {}
        fixed: list[Fixed] = []
        for memory, _ in lacking:
            item = ctx.load(memory)  # the round-trip reading, for a surgical rewrite
            changes = defaults(item.memory, item.doc.meta, added.get(memory.path))
            writes[item.file] = fileformat.update(item.doc, changes)
            fixed.append(Fixed(memory.path, memory.id, list(changes)))
        commit = apply(ctx, writes, OP, [m for m, _ in lacking], [], edits_checked=True)
    return Report(problems, fixed, refused, skipped, commit, notes + quarantined(ctx), moved)


def added_dates(ctx: Ctx, paths: list[str]) -> dict[str, datetime]:
    """``path -> author date`` of the commit that first added each file, for those git knows.

    Args:
        paths: file paths relative to the workspace.

    Returns:
        Aware UTC datetimes; a file git never committed (or a workspace outside git) is
        absent, so the caller keeps the file's modification time.
    """
    from memcli.errors import GitFailed
    from memcli.timeutil import parse_instant

    if not paths:
        return {}
    try:
        found = ctx.history().first_added("memories")
    except GitFailed:
        return {}
    dates = {}
    for path in paths:
        try:
            dates[path] = parse_instant(found[path])
        except (KeyError, ValueError):
            continue
    return dates


def stale_ids(ctx: Ctx) -> list[str]:
    """Ids of the active memories the last ``memcli stale`` found outdated, sorted (from its
    cached verdicts: ``service.stale_notes``; none before it ran). Informational: it never
    changes ``doctor``'s exit status, since stale memories are still served, marked."""
    from memcli.service.stale_notes import notes

    outdated = notes(ctx)
    if not outdated:
        return []
    catalog = ctx.catalog()
    return sorted(m.id for m in catalog.with_status("active") if m.id in outdated and ctx.may_see(m))


def stale_behind(ctx: Ctx) -> bool:
    """True when the cached verdicts ``stale_ids`` reads were made at another code ``HEAD``
    than today's, or were never made, in a store with code and anchored memories
    (``service.stale_notes.code_moved``: no process). Informational, as ``stale_ids``."""
    from memcli.service.stale_notes import code_moved

    return code_moved(ctx) and any(m.anchor for m in ctx.catalog().with_status("active") if ctx.may_see(m))


def semantic(ctx: Ctx) -> dict[str, Any]:
    """The semantic retriever's state for ``doctor``: ``{"active": bool, "model": str | None,
    "reason": str, "warm": bool, "vectors": {"current", "memories"} | None}`` (SPEC.md section
    5; see ``service.semantic.status``). Loads no model; never raises."""
    from memcli.service.semantic import status

    try:
        return status(ctx)
    except Exception as err:  # noqa: BLE001 - doctor reports, it does not fail on a report
        return {"active": False, "model": None, "reason": f"cannot tell ({type(err).__name__})", "warm": False,
                "vectors": None}


def semantic_line(state: dict[str, Any]) -> str:
    """One line for a person: ``semantic search: on (MODEL): reason`` or ``… off: reason``."""
    if not state["active"]:
        return f"semantic search: off: {state['reason']}"
    vectors = state.get("vectors")
    count = f"; {vectors['current']} of {vectors['memories']} memories embedded" if vectors else ""
    return f"semantic search: on ({state['model']}): {state['reason']}{count}"
