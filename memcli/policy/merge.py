"""Three-way merge of one memory file, field by field (SPEC.md section 10).

Git calls memcli's merge driver (``memcli merge-file``, registered by ``memcli init``
through ``.gitattributes`` and ``merge.memcli.driver``) when both sides of a merge
changed the same memory file. A textual merge would conflict on the front-matter
whenever two people act on one memory (a supersede racing an approval both rewrite
``status`` and ``updatedAt``); these rules merge such changes and leave only true
conflicts:

* ``status``: a side that kept the base's status gives way to the side that changed
  it; when both changed it, the later stage of a memory's life wins, by
  :data:`STATUS_RANK` (``pending_review`` < ``active`` = ``rejected`` < ``archived`` <
  ``superseded``). ``active`` against ``rejected`` of a memory that was
  ``pending_review`` (one reviewer approved it, another rejected it at the same time):
  **the rejection wins**, the safe side of a review (nothing is served that a reviewer
  refused), and both decisions are recorded: ``review`` is the rejection, with the
  approval kept under ``review.overruled`` (:func:`_review_race`). Any other ``active``
  against ``rejected`` is a true conflict.
* link and label lists (``supersedes``, ``supersededBy``, ``tags``, ``paths``,
  ``merged``): merged as sets against the base, so an item either side added is kept
  and an item either side removed is gone; the order is ours, then theirs' additions.
* ``updatedAt``: the later of the two.
* ``review``: two reviews with the same decision (two people approved it at once) keep
  the earlier one, the approval that made the memory active (in the same second, the one whose
  reviewer's name sorts first, so both sides merge alike); different decisions conflict.
* every other key (``review``, ``provenance``, ``expireAt``, ``importance``, unknown
  keys …): taken from the side that changed it; both changed it differently is a conflict.
* the body (the memory's text): the same rule; two different edits of the text are a
  conflict, named in words.

Pure: bytes in, bytes out; :func:`merge_file` never touches the disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memcli import fileformat
from memcli.errors import InvalidMemoryFile

#: The later stage of a memory's life wins when both sides changed ``status``.
STATUS_RANK = {"pending_review": 0, "active": 1, "rejected": 1, "archived": 2, "superseded": 3}
#: Keys merged as sets against the base.
SET_KEYS = ("supersedes", "supersededBy", "tags", "paths", "merged")
#: Keys where the later timestamp wins.
LATEST_KEYS = ("updatedAt",)


@dataclass
class Merged:
    """The outcome of a field-by-field merge.

    Attributes:
        data: the merged file bytes, or None when a conflict remains.
        conflicts: one sentence per true conflict (empty when ``data`` is set).
        notes: what was decided where the sides differed (for the driver's stderr).
    """

    data: bytes | None
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plain(value: Any) -> Any:
    """A ruamel value as plain Python, for comparisons (comments and styles ignored)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _merge_set(base: Any, ours: Any, theirs: Any) -> list:
    base_items, our_items, their_items = _as_list(base), _as_list(ours), _as_list(theirs)
    removed = {repr(x) for x in base_items if x not in our_items or x not in their_items}
    out: list = []
    for item in our_items + their_items:
        if repr(item) not in removed and item not in out:
            out.append(item)
    return out


def _instant(value: Any) -> datetime | None:
    from memcli.timeutil import parse_instant

    if isinstance(value, datetime):
        return value
    try:
        return parse_instant(str(value))
    except (ValueError, TypeError, OverflowError):
        return None


_MISSING = object()


def _merge_key(key: str, base: Any, ours: Any, theirs: Any, merged: Merged) -> Any:
    """The merged value of one top-level key (``_MISSING``: the key is absent)."""
    if ours == theirs:
        return ours
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    if key == "status":
        if base == "pending_review" and {ours, theirs} == {"active", "rejected"}:
            merged.notes.append("status: approved on one side, rejected on the other -> rejected (a rejection "
                                "beats a concurrent approval; both are recorded in review)")
            return "rejected"
        rank_ours, rank_theirs = STATUS_RANK.get(str(ours), -1), STATUS_RANK.get(str(theirs), -1)
        if rank_ours == rank_theirs:
            merged.conflicts.append(f"one side made it {ours}, the other {theirs}")
            return ours
        winner = ours if rank_ours > rank_theirs else theirs
        merged.notes.append(f"status: {ours} and {theirs} -> {winner} (the later stage wins)")
        return winner
    if key in SET_KEYS:
        return _merge_set(None if base is _MISSING else base, None if ours is _MISSING else ours,
                          None if theirs is _MISSING else theirs)
    if key == "review" and isinstance(ours, dict) and isinstance(theirs, dict) \
            and {ours.get("decision"), theirs.get("decision")} == {"approved", "rejected"} \
            and (base is _MISSING or base is None):
        return _review_race(ours, theirs)
    if key == "review" and isinstance(ours, dict) and isinstance(theirs, dict) \
            and ours.get("decision") == theirs.get("decision"):
        a, b = _instant(ours.get("at")), _instant(theirs.get("at"))
        if a is not None and b is not None:
            merged.notes.append("review: both sides approved; the earlier review is kept"
                                if ours.get("decision") == "approved" else "review: the earlier review is kept")
            # a tie (reviews carry whole seconds) goes to the reviewer named first: the same on both sides
            return ours if (a, str(ours.get("by"))) <= (b, str(theirs.get("by"))) else theirs
    if key in LATEST_KEYS:
        a, b = _instant(ours), _instant(theirs)
        if a is not None and b is not None:
            return ours if a >= b else theirs
    merged.conflicts.append(f"both sides changed {key!r} differently")
    return ours


def _review_race(ours: dict, theirs: dict) -> dict:
    """The ``review`` of a memory one side approved and the other rejected at once: the
    rejection, with the approval under ``overruled`` (a list, so a later race can add to it)."""
    rejection, approval = (ours, theirs) if ours.get("decision") == "rejected" else (theirs, ours)
    overruled = [r for r in _as_list(rejection.get("overruled")) if isinstance(r, dict)]
    kept = {k: v for k, v in approval.items() if k != "overruled"}
    return {**rejection, "overruled": [*overruled, kept] if kept not in overruled else overruled}


def merge_file(base: bytes | None, ours: bytes, theirs: bytes, path: str) -> Merged:
    """Merge two versions of one memory file against their common ancestor.

    Args:
        base: the ancestor's bytes (None or empty when both sides added the file).
        ours, theirs: the two versions' bytes.
        path: the file's path, for messages only.

    Returns:
        A :class:`Merged`: ``data`` keeps our file's layout (key order, comments, line
        endings) with the merged values; ``conflicts`` names each true conflict in words.

    Raises:
        InvalidMemoryFile: a version does not parse; the caller falls back to a textual merge.
    """
    doc_ours = fileformat.parse(ours, path)
    doc_theirs = fileformat.parse(theirs, path)
    doc_base = fileformat.parse(base, path) if base else None
    if not (doc_ours.has_front_matter and doc_theirs.has_front_matter):
        raise InvalidMemoryFile(path, "a version has no front-matter")
    merged = Merged(None)
    meta_base = _plain(dict(doc_base.meta)) if doc_base else {}
    meta_ours, meta_theirs = _plain(dict(doc_ours.meta)), _plain(dict(doc_theirs.meta))
    changes: dict[str, Any] = {}
    for key in [*meta_ours, *(k for k in meta_theirs if k not in meta_ours)]:
        value = _merge_key(key, meta_base.get(key, _MISSING), meta_ours.get(key, _MISSING),
                           meta_theirs.get(key, _MISSING), merged)
        if value is _MISSING:
            changes[key] = None
        elif value != meta_ours.get(key, _MISSING):
            changes[key] = value
    body_base = doc_base.body if doc_base else None
    body = doc_ours.body
    if doc_ours.body != doc_theirs.body:
        if body_base == doc_ours.body:
            body = doc_theirs.body
        elif body_base != doc_theirs.body:
            merged.conflicts.insert(0, "both sides changed the text differently")
    if merged.conflicts:
        return merged
    if not changes and body == doc_ours.body:
        merged.data = ours
        return merged
    rewritten = fileformat.update(doc_ours, changes) if changes else ours
    if body != doc_ours.body:
        head = rewritten.decode("utf-8")
        head = head[: len(head) - len(doc_ours.body)] if doc_ours.body else head
        rewritten = (head + body).encode("utf-8")
    merged.data = rewritten
    return merged
