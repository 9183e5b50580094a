"""``memcli compact``: consolidate the workspace's memories (a plan, or one commit).

The planning is pure (``policy.consolidate.plan``); this module gathers the memories the
caller may see, leaves out what it must never rewrite (unreadable files, files that hold
a secret, files with uncommitted edits), and applies the plan under the workspace lock in
one commit through ``service.write.apply``.

A file with uncommitted changes (staged or not, or never committed) is left out of the
plan, as an unreadable one is: memcli's commit would otherwise carry the person's hand
edits under memcli's name. With ``[git] autocommit = false`` every write leaves files
uncommitted by design, so there the check is not made. ``--apply`` asks git again under
the workspace lock, since it plans again there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.errors import SecretDetected
from memcli.model import Memory, scope_of_parts
from memcli.policy import consolidate, gates
from memcli.service import Ctx
from memcli.store.files import MEMORIES

#: Statuses compaction reads: it acts on active, superseded and rejected memories only.
READ = ("active", *consolidate.RETIRED)


@dataclass
class Skipped:
    """A file compaction leaves alone: its workspace-relative path and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"path": self.path, "reason": self.reason}


@dataclass
class CompactResult:
    """What ``compact`` planned and, with ``--apply``, did.

    Attributes:
        plan: the actions, conflicts and front-matter changes.
        skipped: files left alone (unreadable, holding a secret, or with uncommitted edits).
        applied: True when the changes were written.
        commit: the commit hash, or None (dry run, nothing to do, or ``autocommit = false``).
    """

    plan: consolidate.Plan
    skipped: list[Skipped] = field(default_factory=list)
    applied: bool = False
    commit: str | None = None
    unused: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``actions``, ``conflicts``, ``skipped``, ``applied``, ``commit``, and
        ``waiting`` (``[{"id", "due"}]``: superseded or rejected memories not yet old enough to retire)."""
        return {"actions": [a.to_dict() for a in self.plan.actions],
                "waiting": [{"id": i, "due": when.isoformat().replace("+00:00", "Z")} for i, when in self.plan.waiting],
                "conflicts": [c.to_dict() for c in self.plan.conflicts],
                "skipped": [s.to_dict() for s in self.skipped], "applied": self.applied, "commit": self.commit,
                "retireCandidates": self.unused}

    def lines(self) -> list[str]:
        """The plan for a person: one line per action, conflict and skipped file, then a summary."""
        out = []
        for action in self.plan.actions:
            text = _short(action.text)
            if action.action == "merge":
                out.append(f"merge {', '.join(action.ids)} into {action.keeper} ({action.scope}): "
                           f"{action.reason} — {text}")
            else:
                out.append(f"{action.action} {action.ids[0]} ({action.scope}): {action.reason} — {text}")
        for conflict in self.plan.conflicts:
            kind = "possible conflict" if conflict.kind == "possible" else "conflict"
            out.append(f"{kind} {' '.join(conflict.ids)} ({conflict.scope}): {conflict.reason}; "
                       "left as they are — supersede one")
        out.extend(f"skip {s.path}: {s.reason}" for s in self.skipped)
        out.extend(f"candidate to retire {u['id']} ({u['scope']}): never delivered to your sessions in "
                   f"{UNUSED_DAYS} days (memcli stats --memories); forget it if it no longer matters — "
                   f"{_short(u['text'])}" for u in self.unused)
        out.append(self.summary())
        return out

    def why_nothing(self) -> str:
        """Why a plan has no action: what compaction looks for, and when the first superseded or
        rejected memory becomes old enough to retire (``[compact] retention``)."""
        retention = self.plan.retention_text
        base = (f"nothing has expired, no two active memories are duplicates, and no superseded or rejected "
                f"memory is older than [compact] retention ({retention})")
        if not self.plan.waiting:
            return base
        count, first = len(self.plan.waiting), self.plan.waiting[0][1].date().isoformat()
        if count == 1:
            return f"{base}; the one superseded or rejected memory retires on {first}"
        return f"{base}; {count} superseded or rejected memories wait, the first retires on {first}"

    def summary(self) -> str:
        """The last line: counts, and the commit (or what to run next)."""
        counts: dict[str, int] = {}
        for action in self.plan.actions:
            counts[action.action] = counts.get(action.action, 0) + len(action.ids)
        parts = [f"{counts[k]} to {k}" for k in ("archive", "retire", "merge") if k in counts]
        extra = [_count(len(self.plan.conflicts), "conflict") + " left", _count(len(self.skipped), "file") + " skipped"]
        tail = ", ".join([*parts, *extra])
        if not self.plan.actions:
            quiet = [e for e in extra if not e.startswith("0 ")]
            return "nothing to compact" + (f" ({', '.join(quiet)})" if quiet else "") + ": " + self.why_nothing()
        if self.commit:
            return f"compacted: {tail}; commit {self.commit[:12]}"
        if self.applied:
            return f"compacted: {tail}; files written, not committed ([git] autocommit = false)"
        return f"plan: {tail}; run `memcli compact --apply` to make these changes"


#: Days without a delivery after which an active memory is proposed for retirement (never applied).
UNUSED_DAYS = 90


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def compact(ctx: Ctx, scopes: list[str] | None = None, apply: bool = False) -> CompactResult:
    """Plan the consolidation of the memories the caller may see, and with ``apply`` make it in one commit.

    Args:
        scopes: only these scopes (``--scope``); default every scope but other users'
            personal ones (``Ctx.may_see``).
        apply: write the changes (under the workspace lock, after reading the files again)
            and commit them once; without it nothing is written.

    Returns:
        The :class:`CompactResult`; an empty plan writes nothing and makes no commit.

    Raises:
        ScopeViolation, ValidationFailed: a ``--scope`` is another user's or malformed.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written (GitFailed also when the
            workspace is not in a git work tree and ``autocommit`` is on).
        InvalidMemoryFile: a file to rewrite changed under the lock and no longer parses.
    """
    from memcli.service.stats import unused

    stores = [ctx, *ctx.personal_stores()]  # each store compacts, and commits, on its own
    results = [_compact_store(store, scopes, apply) for store in stores]
    # decay by use (issue 24 point 3): proposed only, from the caller's own usage journal
    results[0].unused = [{"id": m.id, "scope": m.scope, "text": m.text} for m in unused(ctx, UNUSED_DAYS)
                         if scopes is None or m.scope in scopes][:50]
    if len(results) == 1:
        return results[0]
    joined = CompactResult(consolidate.Plan(), applied=apply)
    for result in results:
        joined.plan.actions += result.plan.actions
        joined.plan.conflicts += result.plan.conflicts
        joined.plan.changes.update(result.plan.changes)
        joined.plan.waiting = sorted(joined.plan.waiting + result.plan.waiting, key=lambda pair: pair[1])
        joined.plan.retention_text = result.plan.retention_text
        joined.skipped += result.skipped
        joined.commit = joined.commit or result.commit
        joined.unused += result.unused
    return joined


def _compact_store(ctx: Ctx, scopes: list[str] | None, apply: bool) -> CompactResult:
    """:func:`compact` within one store."""
    wanted = ctx.scopes(scopes) if scopes else None
    if not apply:
        return _planned(ctx, wanted)[0]
    from memcli.service.write import apply as write_all
    from memcli.service.write import rewrite

    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        result, members = _planned(ctx, wanted)
        if not members:
            return result
        writes: dict[Path, bytes] = {}
        for memory in members:
            item = ctx.load(memory)
            writes[item.file] = rewrite(item, result.plan.changes[memory.id])
        # _planned skipped every file with uncommitted edits under this lock: no second git status
        result.commit = write_all(ctx, writes, "compact", members, [], edits_checked=True)
        result.applied = True
    return result


def _planned(ctx: Ctx, wanted: list[str] | None) -> tuple[CompactResult, list[Memory]]:
    """Plan over the visible memories, and list the memories the plan rewrites.

    A memory to be rewritten that holds a secret is skipped and the plan made again
    without it, until no such memory is left.
    """
    catalog = ctx.catalog()
    memories = [m for status in READ for m in catalog.with_status(status) if _within(ctx, m, wanted)]
    skipped = [Skipped(p.path, p.reason if p.lineno is None else f"line {p.lineno}: {p.reason}")
               for p in catalog.problems(actor=ctx.actor) if _problem_within(p.path, wanted)
               and not Path(p.path).is_absolute()]  # another store's: that store reports it
    dirty = _uncommitted(ctx)
    skipped.extend(Skipped(m.path, "uncommitted edits; commit or discard them first")
                   for m in sorted(memories, key=lambda m: m.path) if m.path in dirty)
    memories = [m for m in memories if m.path not in dirty]
    config = ctx.ws.config
    settings = consolidate.Settings(config.retention(), config.compact_retention, config.compact_near_duplicate)
    while True:
        plan = consolidate.plan(memories, settings, ctx.now)
        members = [m for m in memories if m.id in plan.changes]
        refused = []
        for memory in members:
            try:  # a hand-edited file may hold a secret: memcli never commits what it has not checked
                gates.check_memory(memory)
            except SecretDetected as err:
                refused.append(Skipped(memory.path, "not rewritten: " + err.message.removeprefix("refused: ")))
        if not refused:
            return CompactResult(plan, skipped), members
        skipped.extend(refused)
        paths = {s.path for s in refused}
        memories = [m for m in memories if m.path not in paths]


def _uncommitted(ctx: Ctx) -> set[str]:
    """Workspace-relative paths of the memory files git reports as changed, staged or untracked.

    Empty with ``[git] autocommit = false`` (files stay uncommitted by design). One
    ``git status`` over ``memories/``.

    Raises:
        GitFailed: the workspace is not in a git work tree, or git failed.
    """
    if not ctx.ws.config.autocommit:
        return set()
    repo = ctx.history()
    prefix = repo.prefix
    return {path[len(prefix):] for path in repo.uncommitted([ctx.ws.root / MEMORIES]) if path.startswith(prefix)}


def _within(ctx: Ctx, memory: Memory, wanted: list[str] | None) -> bool:
    """True for a memory compaction may touch: the caller may see it (never another person's
    ``user:*`` or session memory, ``Ctx.may_see``), its scope is one of ``wanted`` when given,
    and it is a file of this store."""
    return ctx.may_see(memory) and (wanted is None or memory.scope in wanted) and \
        not Path(memory.path).is_absolute()  # another store's (index.merged): that store compacts it


def _problem_within(path: str, wanted: list[str] | None) -> bool:
    """True for an unreadable file (one the caller may see) to report: in a wanted scope's folder, or any."""
    parts = Path(path).parts
    if wanted is None:
        return True
    folder = scope_of_parts(tuple(parts[1:-1])) if parts[:1] == (MEMORIES,) else None
    return folder in wanted
