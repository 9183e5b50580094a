"""Planning a workspace consolidation (``memcli compact``, SPEC.md sections 3-4). Pure: no I/O.

Given memories, settings and the clock, :func:`plan` says what compaction would do:

* **archive** an ``active`` memory whose ``expireAt`` has passed;
* **retire** (archive) a ``superseded`` or ``rejected`` memory last updated at least
  ``retention`` ago;
* **merge** exact duplicates (same ``model.normalise_text``) and near duplicates
  (rapidfuzz ratio >= ``near_duplicate``, via ``gates.find_duplicates``) among the
  active, unexpired memories of one scope into the oldest (``createdAt``, then id). Two
  memories whose subjects are both set and differ are never merged. The others become
  ``superseded`` by the keeper; the keeper lists them in ``supersedes`` and keeps their
  provenance in ``merged``, takes the highest importance, the union of tags and paths,
  ``pinned`` if any was, the subject if it had none, and the latest expiry (none if any
  had none);
* report **conflicts**: two or more memories of one scope left active by the plan that
  share a subject (case-insensitive). They are not changed: the person chooses with
  ``supersede``. Duplicates that share a subject are merged, which resolves their conflict.

``pending_review`` memories are never planned for: they are neither active nor retired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memcli.model import Memory, normalise_text

#: Statuses that ``retire`` archives once they are older than the retention.
RETIRED = ("superseded", "rejected")


@dataclass
class Settings:
    """What a consolidation is allowed to do.

    Attributes:
        retention: how long a superseded or rejected memory stays as it is (``[compact] retention``).
        retention_text: the same as written in the configuration (``"90d"``), for messages.
        near_duplicate: rapidfuzz ratio 0-100 at or over which two texts are merged (``[compact] near_duplicate``).
    """

    retention: timedelta
    retention_text: str = "90d"
    near_duplicate: int = 95


@dataclass
class Action:
    """One planned change.

    Attributes:
        action: ``archive``, ``retire`` or ``merge``.
        ids: the memories it changes (for a merge: the ones merged, not the keeper).
        keeper: for a merge, the memory the others are merged into; else None.
        scope: the scope of every memory involved.
        reason: why, in a few words (``expired 2026-10-01``, ``exact duplicate``, ``97% similar``).
        text: the (keeper's) text.
    """

    action: str
    ids: list[str]
    scope: str
    reason: str
    text: str
    keeper: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"action": self.action, "ids": list(self.ids), "keeper": self.keeper, "scope": self.scope,
                "reason": self.reason, "text": self.text}


@dataclass
class Conflict:
    """Memories of one scope that stay active with the same subject; reported, never changed."""

    ids: list[str]
    scope: str
    subject: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ids": list(self.ids), "scope": self.scope, "subject": self.subject}


@dataclass
class Plan:
    """What a consolidation would do.

    Attributes:
        actions: archives, then retirements, then merges, each in id (or keeper) order.
        conflicts: subject conflicts left for the person to resolve.
        changes: memory id -> the front-matter keys to change (``status``, ``updatedAt``,
            ``supersededBy``, ``supersedes``, ``merged`` …), ready for ``frontmatter.update``.
    """

    actions: list[Action] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)


def plan(memories: list[Memory], settings: Settings, now: datetime) -> Plan:
    """Plan the consolidation of ``memories`` at ``now`` (aware UTC).

    Args:
        memories: every memory to consider (the caller has filtered scopes and unreadable
            files); memories of any status may be given, only those named above are changed.
        settings: retention and near-duplicate threshold.
        now: the clock.

    Returns:
        The :class:`Plan`; empty ``actions`` when there is nothing to do.
    """
    result = Plan()
    ordered = sorted(memories, key=_age)
    stamp = {"status": "archived", "updatedAt": now}
    for memory in ordered:
        if memory.status == "active" and memory.is_expired(now):
            result.actions.append(Action("archive", [memory.id], memory.scope,
                                         f"expired {memory.expire_at.date().isoformat()}", memory.text))
            result.changes[memory.id] = dict(stamp)
    for memory in ordered:
        age = now - (memory.updated_at or memory.created_at or now)
        if memory.status in RETIRED and age >= settings.retention:
            reason = f"{memory.status} {age.days} days ago (retention {settings.retention_text})"
            result.actions.append(Action("retire", [memory.id], memory.scope, reason, memory.text))
            result.changes[memory.id] = dict(stamp)
    live = [m for m in ordered if m.served(now)]
    merged: set[str] = set()
    for scope in sorted({m.scope for m in live}):
        for keeper, group in _groups([m for m in live if m.scope == scope], settings.near_duplicate):
            _merge(result, keeper, group, now)
            merged.update(m.id for m, _ in group)
    result.conflicts = _conflicts([m for m in live if m.id not in merged], result.changes)
    return result


def _age(memory: Memory) -> tuple:
    """Sort key: oldest first (``createdAt``, then id)."""
    return (memory.created_at is None, memory.created_at or datetime.min, memory.id)


def _compatible(subjects: list[str | None], other: str | None) -> bool:
    """True when ``other`` does not differ from any subject already in a group (unset subjects match any)."""
    return other is None or all(s is None or s.casefold() == other.casefold() for s in subjects)


def _groups(memories: list[Memory], threshold: int) -> list[tuple[Memory, list[tuple[Memory, str]]]]:
    """Duplicate groups of one scope: ``(keeper, [(memory, reason), …])``, keeper the oldest.

    Each memory, oldest first, that no earlier one claimed takes every later duplicate of
    its own text (exact first, then near by falling ratio) whose subject fits the group.
    """
    from memcli.policy.gates import find_duplicates

    by_id = {m.id: m for m in memories}
    free = {m.id: normalise_text(m.text) for m in memories}
    out = []
    for keeper in memories:
        if keeper.id not in free:
            continue
        del free[keeper.id]
        candidates = dict(free)
        group: list[tuple[Memory, str]] = []
        while candidates:
            found = find_duplicates(keeper.text, candidates, threshold)
            if not found:
                break
            for dup in found:
                del candidates[dup.memory_id]
                other = by_id[dup.memory_id]
                if _compatible([keeper.subject, *(m.subject for m, _ in group)], other.subject):
                    group.append((other, "exact duplicate" if dup.exact else f"{int(dup.ratio)}% similar"))
                    del free[other.id]
        if group:
            out.append((keeper, sorted(group, key=lambda pair: _age(pair[0]))))
    return out


def _merge(result: Plan, keeper: Memory, group: list[tuple[Memory, str]], now: datetime) -> None:
    """Add one merge to ``result``: the others superseded by ``keeper``, the keeper enriched."""
    others = [m for m, _ in group]
    members = [keeper, *others]
    for other in others:
        result.changes[other.id] = {"status": "superseded", "supersededBy": [*other.superseded_by, keeper.id],
                                    "updatedAt": now}
    changes: dict[str, Any] = {"updatedAt": now}
    importance = max(m.importance for m in members)
    if importance != keeper.importance:
        changes["importance"] = importance
    if any(m.pinned for m in others) and not keeper.pinned:
        changes["pinned"] = True
    subject = next((m.subject for m in others if m.subject), None)
    if keeper.subject is None and subject is not None:
        changes["subject"] = subject
    expiry = None if any(m.expire_at is None for m in members) else max(m.expire_at for m in members)
    if expiry != keeper.expire_at:
        changes["expireAt"] = expiry  # None removes the key
    for key, attr in (("tags", "tags"), ("paths", "paths")):
        union = list(dict.fromkeys(v for m in members for v in getattr(m, attr)))
        if union != getattr(keeper, attr):
            changes[key] = union
    changes["supersedes"] = list(dict.fromkeys([*keeper.supersedes, *(m.id for m in others)]))
    changes["merged"] = [*keeper.merged, *(entry for m in others for entry in [*m.merged, _provenance(m)])]
    result.changes[keeper.id] = changes
    reasons = ", ".join(dict.fromkeys(reason for _, reason in group))
    result.actions.append(Action("merge", [m.id for m in others], keeper.scope, reasons, keeper.text,
                                 keeper=keeper.id))


def _provenance(memory: Memory) -> dict[str, Any]:
    """The ``merged`` entry of one memory: its id and provenance."""
    prov = memory.provenance
    return {"id": memory.id, "sourceType": prov.source_type, "actor": prov.actor, "runId": prov.run_id,
            "at": prov.at or memory.created_at}


def _conflicts(memories: list[Memory], changes: dict[str, dict[str, Any]]) -> list[Conflict]:
    """Subjects held by more than one memory of a scope after the plan (keepers may take a subject)."""
    holders: dict[tuple[str, str], list[Memory]] = {}
    for memory in memories:
        subject = changes.get(memory.id, {}).get("subject", memory.subject)
        if subject:
            holders.setdefault((memory.scope, subject.casefold()), []).append(memory)
    return [Conflict([m.id for m in held], scope, held[0].subject or changes[held[0].id]["subject"])
            for (scope, _), held in sorted(holders.items()) if len(held) > 1]
