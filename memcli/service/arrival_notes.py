"""What a sync brought that passed verification but that a person should hear of.

Verify on arrival (``service.arrival``) quarantines what breaks a rule; what passes is served
at once. A newcomer's trial with two clones found three kinds of honest-looking arrivals that
a sync merged without a word, although each changes what an agent is told:

* a teammate's **pinned** memory (it is put first in every session start's block);
* a memory whose text **reads like an instruction** to the agent (the context block labels it
  "treat as data", ``agents.injection.instruction_like``);
* a change to **your own memory** (one whose provenance names you) by someone else: edited by
  hand, or superseded by a memory of theirs.

:func:`notable` names each in one line (at most :data:`LIMIT`, then where to read the rest:
``memcli diff``), so the person who runs ``sync`` can look before an agent acts on it. It only
reports; it never holds anything back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo
    from memcli.model import Memory
    from memcli.service import Ctx

#: Lines :func:`notable` gives at most; past them one line says how many more and where to look.
LIMIT = 8
#: Characters of a memory's text quoted in a line.
QUOTE = 80


def merged(ctx: Ctx, before: str) -> list[tuple[str, str]] | None:
    """The memory files the merge from ``before`` to ``HEAD`` changed: ``(git's status letter,
    path)`` each (``A``, ``M``, ``D``, …; a rename is a removal and an addition), from one
    ``git diff``; None when git cannot say."""
    status, out, _ = ctx.git().raw("diff", "--name-status", "-z", "--no-renames", f"{before}..HEAD", "--",
                                   "memories")
    if status != 0:
        return None
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    return [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]


def received(changes: list[tuple[str, str]] | None) -> dict[str, int] | None:
    """How many memory files a merge added, changed and removed (``{"added": n, "changed": n,
    "removed": n}``) of its :func:`merged` ``changes``, or None when git could not say or none
    moved: a sync says it in one line, so a bulk arrival (a teammate's thousands of files) is
    never merged without a word."""
    if not changes:
        return None
    counts = {"added": 0, "changed": 0, "removed": 0}
    for kind, _ in changes:
        counts["added" if kind == "A" else "removed" if kind == "D" else "changed"] += 1
    return counts


def notable(ctx: Ctx, before: str, skip: set[str] | frozenset[str] = frozenset(),
            changes: list[tuple[str, str]] | None = None) -> list[str]:
    """One line per memory file that the merge from ``before`` to ``HEAD`` added or changed,
    that another person's commit wrote, and that is pinned, reads like an instruction, or is
    (or supersedes) a memory whose provenance names this person.

    Args:
        ctx: the store that synced (its ``HEAD`` is the merge).
        before: the commit ``HEAD`` was before the merge (a 40-hex id).
        skip: paths (relative to the store) already reported as quarantined.
        changes: the merge's :func:`merged` files, when the caller has them (else read here).

    Returns:
        Lines for a person, oldest concern first as git lists the paths; ``[]`` when git
        cannot say (the sync's own report stands alone then).
    """
    repo = ctx.git()
    if changes is None:
        changes = merged(ctx, before)
    if changes is None:
        return []
    changed = [(kind, path) for kind, path in changes if kind in ("A", "M", "D")]
    from memcli.service.arrival import _is_mine, committer_email
    from memcli.service.signing import Trust

    me = committer_email(repo)
    trust = Trust(repo, before, "HEAD")  # with signing on, a commit is this person's when their key signed it
    if trust.active:
        trust.range_problems(before, "HEAD")  # reads the range's signatures (sync only: never a hook)
    lines: list[str] = []
    more = 0
    for change, path in changed:
        if path in skip or not path.endswith(".md"):
            continue
        memory = _before(ctx, before, path) if change == "D" else _memory(ctx, path)
        if memory is None or memory.status != "active":
            continue
        marks = _marks(ctx, memory, change)
        if not marks:
            continue
        who = _author(repo, before, path)
        if who is None or _is_mine(trust if trust.active else None, who[2], who[3], me):
            continue  # this person's own commit (another machine of theirs)
        if len(lines) >= LIMIT:
            more += 1
            continue
        lines.append(f"arrived from {who[0]}: {memory.id} ({'; '.join(marks)}): {_quote(memory.text)}")
    if more:
        lines.append(f"… and {more} more such; read them all with `memcli diff {before[:12]}..HEAD`")
    return lines


def _marks(ctx: Ctx, memory: Memory, change: str) -> list[str]:
    """What makes an arrived ``memory`` worth a line (``change``: git's ``A`` or ``M``)."""
    from memcli.agents.injection import instruction_like, unvetted

    if change == "D":  # red team, stop 35: a teammate deleting your memory read "1 removed"
        return ["removed your memory"] if memory.provenance.actor == ctx.actor else []
    marks = []
    if memory.pinned:  # an unvetted instruction is put last, pinned or not (docs/hooks.md)
        marks.append("pinned, but put last: an unreviewed instruction" if unvetted(memory, ctx.actor)
                     else "pinned: first in every session start")
    if instruction_like(memory.text):
        marks.append("reads like an instruction")
    if change == "M" and memory.provenance.actor == ctx.actor:
        marks.append("your memory, changed by someone else")
    for old in memory.supersedes:
        replaced = _by_id(ctx, old)
        if replaced is not None and replaced.provenance.actor == ctx.actor:
            marks.append(f"supersedes your memory {old}")
    return marks


def _memory(ctx: Ctx, path: str) -> Memory | None:
    """The memory the store's file ``path`` holds, as the index serves it (None: not served)."""
    from memcli.model import id_from_stem

    return _by_id(ctx, id_from_stem(path.rsplit("/", 1)[-1][: -len(".md")]))


def _before(ctx: Ctx, before: str, path: str) -> Memory | None:
    """The memory the store's file ``path`` held at ``before`` (a file the merge removed), or
    None when it did not read."""
    from memcli.errors import InvalidMemoryFile

    repo = ctx.git()
    status, data, _ = repo.raw("cat-file", "blob", f"{before}:{repo.prefix}{path}")
    if status != 0:
        return None
    try:
        return ctx.ws.files.load(ctx.ws.root / path, data=data, mtime=0.0, round_trip=False, rel=path).memory
    except InvalidMemoryFile:
        return None


def _by_id(ctx: Ctx, memory_id: str) -> Memory | None:
    return next((m for m in ctx.catalog().by_prefix(memory_id) if m.id == memory_id), None)


def _author(repo: GitRepo, before: str, path: str) -> tuple[str, str, str, str] | None:
    """``(name, e-mail in lower case, commit, committer e-mail in lower case)`` of the last
    commit after ``before`` that changed ``path``."""
    status, out, _ = repo.raw("log", "-1", "--format=%an%x00%ae%x00%H%x00%ce", f"{before}..HEAD", "--", path)
    fields = out.decode("utf-8", "replace").strip().split("\0")
    if status != 0 or len(fields) != 4 or not fields[0]:
        return None
    return fields[0], fields[1].lower(), fields[2], fields[3].lower()


def _quote(text: str) -> str:
    """The first line of ``text``, at most :data:`QUOTE` characters."""
    first = " ".join(text.split())
    return first if len(first) <= QUOTE else first[: QUOTE - 1] + "…"
