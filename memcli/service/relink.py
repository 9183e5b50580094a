"""The supersede and merge links around a memory that ``rollback`` restores.

A restored version carries the links it had then, while the memories around it have
moved on. :func:`relink` makes the two ends of every link agree again (SPEC.md section 2:
``supersedes`` and ``supersededBy`` are "the two ends of a supersede link") and keeps
the links acyclic: no memory both supersedes and is superseded by another, and an
active memory is superseded by nothing.

Restoring an active version:

* a memory ``compact`` merged it into (a *keeper*, whose ``merged`` lists it) gives it
  back: the keeper stays active, and loses it from ``supersedes`` and ``merged``, and
  the subject it took from it in the merge;
* every other active memory that replaced it (lists it in ``supersedes``, is named in its
  current ``supersededBy``, or is named in the restored ``supersedes``) or holds its
  subject in its scope is retired, as ``supersede`` would: ``superseded``, with
  ``supersededBy`` naming it, and without the reverse link to it;
* any other memory still listing it in ``supersedes`` loses that link (it no longer
  replaces an active memory), except a ``pending_review`` proposal, whose link says what
  its approval will retire.

Restoring a version that is not active, the others keep their status; a link that would
now run both ways is dropped on their side.

Either way, a memory that the current version lists (in ``supersedes`` or ``merged``)
and the restored one does not, and that is still ``superseded`` by it, is given back
(un-merged: rolling back a ``compact`` keeper to before the merge): it drops the
restored memory from ``supersededBy`` and is ``active`` again, unless something else
supersedes it too (then it only drops the link) or, the restored version being active,
it holds that version's subject in its scope (then it stays superseded by it, and the
restored version lists it in ``supersedes`` again, as it would retire it anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memcli.model import STATUSES, Memory
from memcli.service import Ctx
from memcli.service.write import rewrite


@dataclass
class Links:
    """The restored memory's links, and what changed around it.

    Attributes:
        supersedes, superseded_by: the restored memory's lists.
        retired: active memories it now supersedes.
        unmerged: keepers that gave it back (still active).
        released: memories it gives back, active again (it was a keeper, restored to before the merge).
        pruned: memories whose stale link to it was dropped.
    """

    supersedes: list[str]
    superseded_by: list[str]
    retired: list[str] = field(default_factory=list)
    unmerged: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        """Every other memory whose file changed, each once."""
        return list(dict.fromkeys([*self.retired, *self.unmerged, *self.released, *self.pruned]))

    def words(self) -> str:
        """``; supersedes X; un-merged from K; un-merged M; links pruned in Y`` (empty when nothing else changed)."""
        parts = [(self.retired, "supersedes"), (self.unmerged, "un-merged from"), (self.released, "un-merged"),
                 (self.pruned, "links pruned in")]
        return "".join(f"; {label} {', '.join(ids)}" for ids, label in parts if ids)


@dataclass
class _Edit:
    status: str | None = None
    drop_subject: bool = False
    drop: dict[str, set[str]] = field(default_factory=lambda: {"supersedes": set(), "supersededBy": set()})
    add_by: list[str] = field(default_factory=list)
    drop_merged: set[str] = field(default_factory=set)


def keepers(ctx: Ctx, memory_id: str) -> list[Memory]:
    """Active memories whose ``merged`` list names ``memory_id`` (``compact`` merged it into them)."""
    return [m for m in ctx.catalog().with_status("active") if any(e.get("id") == memory_id for e in m.merged)]


def relink(ctx: Ctx, restored: Memory, current: Memory, earlier: Callable[[Memory], Memory | None],
           writes: dict[Path, bytes | None]) -> Links:
    """Compute the restored memory's links and rewrite the other ends (see the module docstring).

    Args:
        restored: the version being restored, with the links it had then.
        current: the same memory as it is now.
        earlier: ``earlier(keeper)`` is that memory as it was at the restored revision
            (None when absent): a keeper that had no subject then took the restored one's
            in the merge, and gives it back.
        writes: gains the new bytes of every other file that changes.

    Raises:
        InvalidMemoryFile: a file to rewrite no longer parses (memcli never rewrites it).
    """
    rid = restored.id
    others = {m.id: m for status in STATUSES for m in ctx.catalog().with_status(status) if m.id != rid}
    links = Links(list(restored.supersedes), list(restored.superseded_by))
    edits: dict[str, _Edit] = {}
    if restored.status == "active":
        subject = (restored.subject or "").casefold()
        given_back = {rid, *(str(e.get("id")) for e in restored.merged)}
        for keeper in keepers(ctx, rid):
            edit = edits.setdefault(keeper.id, _Edit())
            edit.drop["supersedes"].add(rid)
            edit.drop_merged = given_back
            was = earlier(keeper)
            if subject and (keeper.subject or "").casefold() == subject and (was is None or not was.subject):
                edit.drop_subject = True
            links.unmerged.append(keeper.id)
        for other in others.values():
            planned = edits.get(other.id)
            holds = (subject and other.scope == restored.scope and (other.subject or "").casefold() == subject
                     and not (planned and planned.drop_subject))
            replaced = other.id not in links.unmerged and (
                rid in other.supersedes or other.id in current.superseded_by or other.id in restored.supersedes)
            if other.status == "active" and (holds or replaced):
                edit = edits.setdefault(other.id, _Edit())
                edit.status, edit.add_by = "superseded", [rid]
                edit.drop["supersedes"].add(rid)
                links.retired.append(other.id)
                links.supersedes.append(other.id)
            elif other.status != "pending_review" and rid in other.supersedes and other.id not in links.unmerged:
                edits.setdefault(other.id, _Edit()).drop["supersedes"].add(rid)
                links.pruned.append(other.id)
        links.superseded_by = []  # an active memory is superseded by nothing
    else:
        for ref in links.superseded_by:
            if ref in others and rid in others[ref].superseded_by:
                edits.setdefault(ref, _Edit()).drop["supersededBy"].add(rid)
                links.pruned.append(ref)
        links.supersedes = [s for s in links.supersedes if s not in links.superseded_by]
        for ref in links.supersedes:
            if ref in others and rid in others[ref].supersedes:
                edits.setdefault(ref, _Edit()).drop["supersedes"].add(rid)
                links.pruned.append(ref)
    _release(restored, current, others, links, edits)
    links.supersedes = list(dict.fromkeys(links.supersedes))
    for ref, edit in edits.items():
        item = ctx.load(others[ref])
        writes[item.file] = rewrite(item, {**_changes(item.memory, item.doc.meta.get("merged"), edit),
                                           "updatedAt": ctx.now})
    return links


def _release(restored: Memory, current: Memory, others: dict[str, Memory], links: Links,
             edits: dict[str, _Edit]) -> None:
    """Give back what the current version holds and the restored one does not (see the module docstring)."""
    def held(memory: Memory) -> set[str]:
        return {*memory.supersedes, *(str(e.get("id")) for e in memory.merged)}

    rid, subject = restored.id, (restored.subject or "").casefold()
    for ref in sorted(held(current) - held(restored)):
        other = others.get(ref)
        if other is None or rid not in other.superseded_by or ref in links.supersedes:
            continue
        if (restored.status == "active" and subject and other.scope == restored.scope
                and (other.subject or "").casefold() == subject):
            links.supersedes.append(ref)  # it holds the restored subject: it stays retired by it
            continue
        edit = edits.setdefault(ref, _Edit())
        edit.drop["supersededBy"].add(rid)
        if other.status == "superseded" and not set(other.superseded_by) - {rid}:
            edit.status = "active"
            links.released.append(ref)
        else:
            links.pruned.append(ref)


def _changes(memory: Memory, raw_merged: Any, edit: _Edit) -> dict[str, Any]:
    """The front-matter changes one edit makes to ``memory`` (``None`` removes a key).

    ``raw_merged`` is the ``merged`` list as the file's YAML holds it: the entries kept are
    written back as they were.
    """
    changes: dict[str, Any] = {}
    if edit.status:
        changes["status"] = edit.status
    if edit.drop_subject:
        changes["subject"] = None
    lists = {"supersedes": memory.supersedes, "supersededBy": memory.superseded_by}
    for key, values in lists.items():
        kept = [v for v in values if v not in edit.drop[key]]
        if key == "supersededBy":
            kept += [v for v in edit.add_by if v not in kept]
        if kept != values:
            changes[key] = kept or None
    if edit.drop_merged:
        merged = [e for e in raw_merged or [] if str(e.get("id")) not in edit.drop_merged]
        if len(merged) != len(memory.merged):
            changes["merged"] = merged or None
    return changes
