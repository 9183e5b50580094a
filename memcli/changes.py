"""What changed between two versions of one memory file, in words. Pure: no I/O.

``history`` and ``diff`` read old versions from git, parse them with memcli's own parsers
and hand each pair ``(before, after)`` of one file to :func:`classify`, which names the
change the way a reviewer would: added, proposed, approved, rejected, superseded,
archived, merged, un-merged, unlinked, relinked, restored, rolled back, undone, expired,
edited, edited by hand, deleted, purged, moved, unreadable.

Which change a status transition is follows SPEC.md section 3 (``pending_review →
active | rejected``, ``active → superseded | archived``, any → its previous state on
rollback). Whether an edit was made "by hand" follows the commit: a commit without a
``Memcli-Op`` trailer, or a change not yet committed, is a person's edit.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memcli.model import Memory, to_mapping
from memcli.timeutil import format_instant

#: Front-matter keys a memcli status change rewrites; any other difference is an edit.
TRANSITION_KEYS = ("status", "updatedAt", "review", "supersedes", "supersededBy")
#: Operations whose archive is a consolidation, not a person forgetting.
COMPACT_OPS = ("compact",)
#: Operations that put an earlier state back.
RESTORE_OPS = ("rollback", "undo", "restore")


@dataclass
class Version:
    """One version of a memory file: the parsed record, or why it cannot be read.

    Attributes:
        path: workspace-relative path of the file in this version.
        memory: the record, None when the file does not parse (then ``error`` says why).
        error: the parser's one-line reason, or None.
    """

    path: str
    memory: Memory | None = None
    error: str | None = None


@dataclass
class Step:
    """Who made a change: the commit (None: uncommitted), its operation, actor and time.

    ``op`` is the ``Memcli-Op`` trailer, None for a commit memcli did not make (a hand
    edit) or for uncommitted changes; ``actor`` is the ``Memcli-Actor`` trailer, else the
    git author, else None. For an ``undo``, ``undoes`` is the commit it reversed (its
    ``Memcli-Undoes`` trailer) and ``undone_op`` that commit's operation, when known.
    """

    commit: str | None
    op: str | None
    actor: str | None
    at: datetime
    undoes: str | None = None
    undone_op: str | None = None

    def how(self) -> str:
        """Who or what made the change, in words: ``by hand``, ``uncommitted``, ``by forget``,
        ``by undo of compact 1a2b3c4d5e``."""
        if self.op is None:
            return "by hand" if self.commit else "uncommitted"
        return f"by {self.undo()}" if self.op == "undo" else f"by {self.op}"

    def undo(self) -> str:
        """``undo of compact 1a2b3c4d5e`` (plain ``undo`` when the reversed commit is not known)."""
        return f"undo of {self.undone_op or 'commit'} {self.undoes[:10]}" if self.undoes else "undo"


@dataclass
class Change:
    """One change to one memory, ready to print (:meth:`line`) or to serialise (:meth:`to_dict`)."""

    id: str
    scope: str
    change: str
    path: str
    text: str = ""
    old_text: str | None = None
    from_status: str | None = None
    to_status: str | None = None
    by: str | None = None
    reason: str | None = None
    commit: str | None = None
    at: datetime | None = None
    details: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line in words: ``approved 01jd… (project) by bob: reason``."""
        words = f"{self.change} {self.id} ({self.scope})"
        if self.by:
            words += f" by {self.by}"
        if self.details:
            words += f": {'; '.join(self.details)}"
        if self.reason:
            words += f" (reason: {self.reason})"
        when = format_instant(self.at) if self.at else ""
        if self.commit:
            return f"{words} [{self.commit[:10]}, {when}]"
        return f"{words} [{when}]" if self.change == "expired" else f"{words} [uncommitted]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``changes`` items of ``memcli diff --json``)."""
        return {"id": self.id, "scope": self.scope, "change": self.change, "from_status": self.from_status,
                "to_status": self.to_status, "by": self.by, "reason": self.reason, "text": self.text,
                "old_text": self.old_text, "path": self.path, "commit": self.commit,
                "at": format_instant(self.at) if self.at else None, "details": self.details}


def first_line(text: str, width: int = 100) -> str:
    """The first non-blank line of ``text``, cut to ``width`` characters with an ellipsis."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def field_changes(old: Memory, new: Memory) -> list[str]:
    """What differs between two versions, in words: ``status active → superseded``, ``text edited`` …"""
    words = []
    if old.status != new.status:
        words.append(f"status {old.status} → {new.status}")
    if old.text != new.text:
        words.append("text edited")
    if old.expire_at != new.expire_at:
        words.append(f"expireAt {_when(old.expire_at)} → {_when(new.expire_at)}")
    added = [i for i in new.superseded_by if i not in old.superseded_by]
    if added:
        words.append(f"superseded by {', '.join(added)}")
    if (old.review or {}) != (new.review or {}) and new.review:
        words.append(f"review: {new.review.get('decision', '?')} by {new.review.get('by', '?')}")
    before, after = _mapping(old), _mapping(new)
    keys = [k for k in dict.fromkeys([*before, *after])
            if k not in (*TRANSITION_KEYS, "expireAt") and before.get(k) != after.get(k)]
    if keys:
        words.append(f"{', '.join(keys)} changed")
    return words


def classify(before: Version | None, after: Version | None, step: Step) -> list[Change]:
    """Name the change(s) ``step`` made to one memory file.

    Args:
        before: the version before the step; None when the file did not exist.
        after: the version after it; None when the step deleted the file.
        step: the commit (or the uncommitted edit) that made the change.

    Returns:
        Usually one :class:`Change`; a status change together with a hand edit of
        other keys or of the text gives two. Nothing when the versions are equal.
    """
    if after is None and before is None:
        return []
    if (before is not None and before.memory is None) or (after is not None and after.memory is None):
        return [_unreadable(before, after, step)]
    if after is None:  # deleted; ``before`` is readable (both sides None and unreadable ones returned above)
        assert before is not None and before.memory is not None
        return [_change(before.memory, "deleted", step, path=before.path, from_status=before.memory.status,
                        details=[_deleted(step)])]
    old = before.memory if before else None
    new = after.memory
    assert new is not None  # an unreadable side returned above
    if old is None:
        kind = ("undone" if step.op == "undo" else "rolled back" if step.op == "rollback" else "restored"
                if step.op in RESTORE_OPS else "proposed" if new.status == "pending_review" else "added")
        details = [] if new.status in ("active", "pending_review") else [f"status {new.status}"]
        if new.expire_at:
            details.append(f"expires {_when(new.expire_at)}")
        if (step.op is None and kind == "added") or kind == "undone":
            details.append(step.undo() if kind == "undone" else step.how())
        return [_change(new, kind, step, to_status=new.status, details=details)]
    out: list[Change] = []
    if before is not None and before.path != after.path:  # moved
        out.append(_change(new, "moved", step, details=[f"{before.path} → {after.path}",
                                                        *([step.how()] if step.op is None else [])]))
    if old.status != new.status:
        out.append(_transition(old, new, step))
    edits = [w for w in field_changes(old, new) if not w.startswith(("status ", "superseded by ", "review: "))]
    taken = [str(m.get("id")) for m in new.merged if m not in old.merged]
    given = [str(m.get("id")) for m in old.merged if m not in new.merged]
    merge_ids = {*taken, *given}
    links = [] if old.status != new.status else link_changes(old, new, step, skip=merge_ids)
    if taken or given:  # compact merged duplicates into it, or a rollback gave one back: say so
        rest = [w.replace("merged, ", "").replace(", merged changed", " changed") for w in edits
                if w != "merged changed"]
        kind = "undone" if step.op == "undo" else "merged" if taken else "un-merged"
        said = ([f"took in {', '.join(taken)}" + ("" if step.op == "undo" else " (their provenance kept)")]
                if taken else []) + ([f"gave back {', '.join(given)}"] if given else [])
        how = [step.undo()] if kind == "undone" else [step.how()] if kind == "un-merged" else []
        out.append(_change(new, kind, step, from_status=old.status, to_status=new.status,
                           details=[*said, *rest, *links, *how]))
        edits = links = []
    if edits or links:
        past = (new.expire_at is not None and old.expire_at != new.expire_at and new.expire_at <= step.at
                and new.status == "active")
        rest = [w for w in edits if not w.startswith("expireAt ")]
        if past:
            out.append(_change(new, "expired", step, to_status=new.status,
                               details=[f"expireAt edited to {_when(new.expire_at)}, already past"]))
        if rest or links or not past:
            kind = ("edited by hand" if step.op is None else "undone" if step.op == "undo"
                    else "edited" if edits else "unlinked" if all(" removed" in w for w in links) else "relinked")
            how = [] if step.op is None or step.op == "purge" else [step.undo() if kind == "undone" else step.how()]
            change = _change(new, kind, step, from_status=old.status, to_status=new.status,
                             details=[*(rest if past else edits), *links, *how])
            if old.text != new.text:
                change.old_text = old.text
            out.append(change)
    return out


def link_changes(old: Memory, new: Memory, step: Step, skip: AbstractSet[str] = frozenset()) -> list[str]:
    """The supersede links one version added or removed, in words (ids in ``skip`` left out).

    ``link to 01ab… removed`` (``(purged)`` when a purge pruned it), ``link to 01ab… added``,
    ``no longer superseded by 01ab…``, ``superseded by 01ab… added``.
    """
    why = " (purged)" if step.op == "purge" else ""
    words = [f"link to {i} removed{why}" for i in old.supersedes if i not in new.supersedes and i not in skip]
    words += [f"link to {i} added" for i in new.supersedes if i not in old.supersedes and i not in skip]
    words += [f"no longer superseded by {i}{why}" for i in old.superseded_by
              if i not in new.superseded_by and i not in skip]
    words += [f"superseded by {i} added" for i in new.superseded_by if i not in old.superseded_by and i not in skip]
    return words


def purged_from_history(step: Step, ids: list[str], scopes: list[str], touched: list[str]) -> list[Change]:
    """A ``purge`` commit whose memory's file it no longer deletes: ``purge --history`` emptied it.

    Args:
        step: the purge commit.
        ids, scopes: its ``Memcli-Id`` and ``Memcli-Scope`` trailers.
        touched: workspace-relative paths the commit still changes.

    Returns:
        One ``purged`` change per purged id no touched file is named after; nothing for
        another operation or a plain purge (whose deletion shows as ``deleted``).
    """
    if step.op != "purge":
        return []
    names = [t.rsplit("/", 1)[-1].lower() for t in touched]
    return [Change(id=i, scope=scopes[0] if len(scopes) == 1 else " ".join(scopes) or "?", change="purged",
                   path="", by=step.actor, commit=step.commit, at=step.at,
                   details=["its file and text were removed from every commit (history rewritten)"])
            for i in ids if not any(n.startswith(i) for n in names)]


def expired_between(memory: Memory, start: datetime, end: datetime) -> bool:
    """True when ``memory`` is active and its ``expireAt`` falls in ``(start, end]`` (aware UTC)."""
    return memory.status == "active" and memory.expire_at is not None and start < memory.expire_at <= end


def expiry(memory: Memory, path: str) -> Change:
    """The ``expired`` change of a memory whose ``expireAt`` passed while it stayed active."""
    return Change(id=memory.id, scope=memory.scope, change="expired", path=path, text=memory.text,
                  from_status="active", to_status="active", at=memory.expire_at,
                  details=[f"expireAt {_when(memory.expire_at)} passed; no longer served"])


def _transition(old: Memory, new: Memory, step: Step) -> Change:
    """The change a status transition is, with who decided and why."""
    review = new.review or {}
    pair = (old.status, new.status)
    details: list[str] = []
    by, reason = step.actor, None
    if step.op == "undo":  # named by what it reversed, whichever way the status went
        kind = "undone"
        details += [f"{old.status} → {new.status}", step.undo()]
    elif pair == ("pending_review", "active"):
        kind, by, reason = "approved", review.get("by") or by, review.get("reason")
    elif pair == ("pending_review", "rejected"):
        kind, by, reason = "rejected", review.get("by") or by, review.get("reason")
    elif new.status == "superseded":
        kind = "superseded"
        newer = [i for i in new.superseded_by if i not in old.superseded_by] or new.superseded_by
        details.append(f"by {', '.join(newer)}" if newer else "no successor named")
    elif new.status == "archived":
        kind = "archived"
        details.append("compacted" if step.op in COMPACT_OPS else "forgotten" if step.op == "forget"
                       else f"by {step.op}" if step.op else "by hand")
    elif new.status == "active" and step.op == "rollback":
        kind = "rolled back"
        details.append(f"{old.status} → active")
    elif new.status == "active":
        kind = "restored"
        details.append(f"active again from {old.status}" + (f" by {step.op}" if step.op else ""))
    else:
        kind = "status changed"
        details.append(f"{old.status} → {new.status}")
    if step.op is None and kind not in ("approved", "rejected"):
        details.append("by hand" if step.commit else "uncommitted")
    change = _change(new, kind, step, from_status=old.status, to_status=new.status, details=details)
    change.by, change.reason = by, reason
    return change


def _change(memory: Memory, kind: str, step: Step, path: str | None = None, **values: Any) -> Change:
    return Change(id=memory.id, scope=memory.scope, change=kind, path=path or memory.path, text=memory.text,
                  by=step.actor, commit=step.commit, at=step.at, **values)


def _unreadable(before: Version | None, after: Version | None, step: Step) -> Change:
    """A change where one side does not parse: say which side and why, never guess."""
    good = (after.memory if after and after.memory else before.memory if before and before.memory else None)
    bad = after if after is not None and after.memory is None else before
    assert bad is not None, "one side does not parse"
    side = "after" if bad is after else "before"
    stem = bad.path.rsplit("/", 1)[-1].removesuffix(".md")
    kind, details = "unreadable", [f"the version {side} this change cannot be parsed: {bad.error}"]
    if after is None:
        kind, details = "deleted", [f"{_deleted(step)}; its last version could not be parsed: {bad.error}"]
    return Change(id=good.id if good else stem, scope=good.scope if good else "?", change=kind, path=bad.path,
                  text=good.text if good else "", by=step.actor, commit=step.commit, at=step.at, details=details)


def _deleted(step: Step) -> str:
    """How a file came to be deleted: purged, by hand, uncommitted, or by another operation (an undo)."""
    if step.op == "purge":
        return "the file was removed (purged)"
    return "the file was deleted " + (step.how() if step.op else "by hand" if step.commit else "(uncommitted)")


def _mapping(memory: Memory) -> dict[str, Any]:
    values = to_mapping(memory)
    return {k: (format_instant(v) if isinstance(v, datetime) else v) for k, v in values.items()}


def _when(value: datetime | None) -> str:
    return format_instant(value) if value else "none"
