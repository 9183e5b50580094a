"""Rollback and undo from git history (SPEC.md sections 3 and 4: "any -> its previous state").

Both write new commits and never move a branch: ``rollback`` restores one memory's file as
it was at a revision, ``undo`` reverses the most recent memcli commit by writing each of its
files back. Neither runs ``git revert`` or ``git reset``: the commit is path-limited like
every memcli write (``GitRepo.commit``), so what the user has staged elsewhere stays staged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memcli import model
from memcli.errors import HistoryConflict, InvalidMemoryFile, MemoryNotFound
from memcli.git.history import History
from memcli.git.log import Entry
from memcli.model import Memory
from memcli.policy import gates
from memcli.policy.owner import scope_in_commit_is_mine
from memcli.service import Ctx
from memcli.service.audit import file_at
from memcli.service.relink import relink
from memcli.service.write import WriteResult, apply, rewrite
from memcli.store.files import MEMORIES, Loaded

#: Operations ``undo`` never reverses: the workspace's creation, and undos themselves (no redo).
NOT_UNDONE = ("init", "undo")


def rollback(ctx: Ctx, ref: str, to: str | None = None) -> WriteResult:
    """Restore a memory's file as it was at ``to``, as a new commit (op ``rollback``).

    The restored file keeps the old bytes (key order, comments, body) except ``updatedAt``
    (now) and the supersede links, which ``service.relink.relink`` makes agree with the
    memories around it, in the same commit. When the restored version is ``active``, it
    retires, as ``supersede`` would, every active memory that replaced it or holds its
    subject in its scope (each becomes ``superseded`` by it and stops listing it in
    ``supersedes``); a memory ``compact`` merged it into stays active and gives it back
    (un-merge); other memories stop listing it in ``supersedes``. A restored version that
    is not active changes other files only to drop a link that would run both ways, and
    a keeper restored to before a merge hands back what it took in (the merged memory is
    active again).

    Args:
        ref: id or unique prefix of a memory the caller may see.
        to: a git revision (hash, branch, tag, ``HEAD~2``); default: the parent of the
            last commit that changed the memory's content (the version before its latest
            change; a commit that only renamed its file does not count). The version at
            ``to`` is found as ``show --at`` finds it (``service.audit.file_at``): at the
            current path, else by id in that revision's tree (a file renamed since); it is
            restored at the current path.

    Returns:
        A :class:`WriteResult`; outcome ``noop`` (no commit) when the content at ``to``
        equals the current content apart from ``updatedAt``.

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` names no visible memory, or it did not exist at ``to``.
        RevisionNotFound: ``to`` names no commit.
        HistoryConflict: the memory's file has uncommitted edits.
        InvalidMemoryFile: the version at ``to`` cannot be parsed.
        SecretDetected: the restored text holds a secret.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
        ReviewRefused: an agent's tool runs memcli: rolling back is a person's act (exit 8).
    """
    _person_only("roll back a memory")
    ctx = ctx.owner(ref)  # a personal memory is rolled back in the person's own store
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        item = ctx.resolve(ref)
        current = item.memory
        repo = ctx.history()
        if repo.uncommitted([item.file]):
            raise HistoryConflict(f"{current.path} has uncommitted edits; rollback refused",
                                  hint=f"commit or discard them first (see `git diff -- {current.path}`)")
        rev, label = _revision(ctx, repo, current, to)
        data = file_at(ctx, repo, current.id, current.path, rev)[1] if rev else None
        old = _parse(ctx, item.file, data, label) if data is not None else None
        if old is None or old.memory.id != current.id or not ctx.may_see(old.memory):
            raise MemoryNotFound(f"{current.id} did not exist at {label}",
                                 hint=f"to retire it, archive it with `memcli forget {current.id}`")
        if data == item.file.read_bytes() or _same(old.memory, current):
            return WriteResult("rollback", current, "noop", f"{current.id} is already as at {label}; nothing to do")
        restored = old.memory
        assert rev is not None, "a version was read at rev"
        gates.check_memory(restored)
        writes: dict[Path, bytes | None] = {}
        links = relink(ctx, restored, current,
                       lambda m: _memory_of(ctx, ctx.ws.root / m.path, file_at(ctx, repo, m.id, m.path, rev)[1]),
                       writes)
        changes: dict[str, Any] = {"updatedAt": ctx.now}
        if links.supersedes != restored.supersedes:
            changes["supersedes"] = links.supersedes or None
        if links.superseded_by != restored.superseded_by:
            changes["supersededBy"] = links.superseded_by or None
        writes[item.file] = rewrite(old, changes)
        restored = restored.with_(updated_at=ctx.now, supersedes=links.supersedes,
                                  superseded_by=links.superseded_by, path=current.path)
        commit = apply(ctx, writes, "rollback", [restored], links.changed)
    return WriteResult("rollback", restored, "updated",
                       f"rolled back {restored.id} to {label}: now {restored.status}{links.words()}",
                       changed=links.changed, commit=commit)


def _revision(ctx: Ctx, repo: History, current: Memory, to: str | None) -> tuple[str | None, str]:
    """``(commit, label)`` to restore from; commit None when there is no version before.

    Default: the parent of the newest commit that changed the memory's content; a commit
    that only moved its file (a hand ``git mv``) changed nothing to roll back.
    """
    if to is not None:
        return repo.resolve(to), to
    for entry in reversed(repo.commits([f"{MEMORIES}/*{current.id}*", current.path])):
        parent = repo.parent(entry.commit)
        if parent is None:
            break
        after = file_at(ctx, repo, current.id, current.path, entry.commit)[1]
        if after != file_at(ctx, repo, current.id, current.path, parent)[1]:
            return parent, f"{entry.commit[:12]}^"
    return None, "any earlier commit"


def _parse(ctx: Ctx, path: Path, data: bytes, label: str) -> Loaded:
    try:
        return ctx.ws.files.load(path, data=data, mtime=0)
    except InvalidMemoryFile as err:
        raise InvalidMemoryFile(f"{err.path} at {label}", err.reason, err.lineno) from None


def _same(old: Memory, current: Memory) -> bool:
    """True when two versions differ at most in ``updatedAt`` (and where the file lies)."""
    def key(m: Memory) -> tuple:
        return model.to_mapping(m.with_(updated_at=None, path="")), m.body
    return key(old) == key(current)


# --- undo -----------------------------------------------------------------------------


@dataclass
class UndoResult:
    """What ``undo`` did.

    Attributes:
        outcome: ``updated``, or ``noop`` when no memcli commit is left to undo.
        undone: the hash of the commit reversed, or None.
        undone_op: its operation (``remember``, ``supersede`` …), or None.
        files: the files written back or deleted, relative to the workspace.
        ids: the memories in those files.
        passed: ``(hash, op)`` of the newer memcli commits passed over because
            ``purge --history`` left nothing in them to reverse, newest first.
        commit: the new commit, or None (no-op, or ``autocommit = false``).
        message: one line for a person.
    """

    outcome: str
    message: str
    undone: str | None = None
    undone_op: str | None = None
    files: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    passed: list[tuple[str, str]] = field(default_factory=list)
    commit: str | None = None

    def to_dict(self, now: datetime | None = None) -> dict[str, Any]:
        """JSON-ready form."""
        return {"op": "undo", "outcome": self.outcome, "message": self.message, "undone": self.undone,
                "undoneOp": self.undone_op, "files": self.files, "ids": self.ids,
                "passedOver": [{"commit": c, "op": op} for c, op in self.passed], "commit": self.commit}


def last_undoable(repo: History, actor: str, passed: list[Entry] | None = None) -> Entry | None:
    """The newest memcli commit that ``undo`` may reverse for ``actor``, or None.

    That is the newest commit touching the workspace that carries a ``Memcli-Op``
    trailer, is not ``init`` or an ``undo``, is not named by a newer undo's
    ``Memcli-Undoes`` trailer, touches no other user's personal scope (its
    ``Memcli-Scope`` trailer): Bob's latest change is not Alice's to undo, and changes
    at least one file. A commit that changes no file (``purge --history`` empties the
    commits of the memory it removes and keeps them for their trailers), or a purge whose
    memory's file is no longer in it (it is left pruning other memories' links to a
    memory now gone from history), cannot be reversed: it is passed over and, given
    ``passed``, appended to it (newest first).
    """
    undone: set[str] = set()

    def keep(entry: Entry) -> bool:
        op = entry.trailers.get("op")
        if op == "undo":
            undone.update(entry.trailers.get("undoes", "").split())
        by = entry.trailers.get("actor") or entry.author
        others = [s for s in entry.trailers.get("scope", "").split() if not scope_in_commit_is_mine(s, by, actor)]
        if op is None or op in NOT_UNDONE or entry.commit in undone or others:
            return False
        files = repo.changed_files(entry.commit)
        ids = entry.trailers.get("id", "").split()
        if not files or (op == "purge" and not any(i in p.name for p in files for i in ids)):
            if passed is not None:
                passed.append(entry)
            return False
        return True

    found = repo.log(limit=1, keep=keep)
    return found[0] if found else None


def undo(ctx: Ctx) -> UndoResult:
    """Reverse the most recent memcli commit as a new commit (op ``undo``, trailer ``Memcli-Undoes``).

    Commits that touch another user's personal scope are passed over, and so are those a
    ``purge --history`` left with nothing to reverse (see :func:`last_undoable`: the
    memory they named is gone from history and cannot be brought back); the message and
    ``UndoResult.passed`` name the latter. Each file the commit touched is written back
    to its content at the commit's parent (or deleted, when the commit added it) and the
    files are committed path-limited.
    Repeating ``undo`` walks further back: a commit already undone is skipped. With personal
    stores, the store whose last undoable commit is newest is the one undone in.

    Returns:
        An :class:`UndoResult`; outcome ``noop`` (exit 0) when there is nothing to undo.

    Raises:
        HistoryConflict: a file's content now differs from its content at that commit
            (a later commit or an uncommitted edit changed it); nothing is written.
        SecretDetected: a version to restore holds a secret.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
        ReviewRefused: an agent's tool runs memcli (``agents.callers``): undoing is a person's
            act, as approving is (an agent's undo removed a person's guarded memory; newcomer
            HIGH, stop 34); nothing is written.
    """
    _person_only("undo a change")
    return _undo_in(_newest_store(ctx))


def _person_only(action: str) -> None:
    """``agents.callers.person_only`` on this process's environment (ReviewRefused, exit 8)."""
    import os

    from memcli.agents.callers import person_only

    person_only(os.environ, action)


def _newest_store(ctx: Ctx) -> Ctx:
    """The store (the workspace or one of the person's, ``Ctx.personal_stores``) whose last
    undoable commit is the newest: ``undo`` reverses the caller's latest change wherever it went."""
    from memcli.timeutil import parse_instant

    found = []
    for store in (ctx, *ctx.personal_stores()):
        target = last_undoable(store.history(), store.actor)
        if target is not None:
            found.append((parse_instant(target.at), store is ctx, store))
    return max(found, key=lambda f: f[:2])[2] if found else ctx


def _undo_in(ctx: Ctx) -> UndoResult:
    """:func:`undo` in one store."""
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        repo = ctx.history()
        empty: list[Entry] = []
        target = last_undoable(repo, ctx.actor, empty)
        passed = [(e.commit, e.trailers.get("op", "")) for e in empty]
        if target is None:
            return UndoResult("noop", "nothing to undo: no memcli commit is left to reverse" + _passed(passed),
                              passed=passed)
        short = target.commit[:12]
        parent = repo.parent(target.commit)
        writes: dict[Path, bytes | None] = {}
        memories: list[Memory] = []
        files = repo.changed_files(target.commit)
        staged = set(repo.uncommitted(files)) if files else set()  # e.g. staged, then the edit taken back
        for path in files:
            rel = ctx.ws.files.rel(path)
            after = repo.blob(target.commit, path)
            now = path.read_bytes() if path.is_file() else None
            if now != after or repo.top_rel(path) in staged:
                raise HistoryConflict(
                    f"{rel} changed after commit {short} (a later commit or an uncommitted edit); undo refused",
                    hint=f"see why with `git log -p -- {rel}` or `memcli diff {short}..`")
            before = repo.blob(parent, path) if parent else None
            writes[path] = before
            memory = _memory_of(ctx, path, before if before is not None else after)
            if memory is not None:
                memories.append(memory)
                if before is not None:
                    gates.check_memory(memory)
        commit = apply(ctx, writes, "undo", memories, [], trailers={"Undoes": target.commit})
    op = target.trailers.get("op")
    ids = [m.id for m in memories]
    return UndoResult("updated", f"undid {op} {short} ({', '.join(ids) or 'no memory'})" + _passed(passed),
                      undone=target.commit, undone_op=op, files=[ctx.ws.files.rel(p) for p in writes], ids=ids,
                      passed=passed, commit=commit)


def _passed(passed: list[tuple[str, str]]) -> str:
    """``; passed over purge 1a2b…, remember 3c4d… (purge --history left …)``, or ``""``."""
    if not passed:
        return ""
    named = ", ".join(f"{op or 'commit'} {commit[:12]}" for commit, op in passed)
    return (f"; passed over {named} (purge --history left nothing in them to reverse:"
            " the memory they named is gone from history and cannot be brought back)")


def _memory_of(ctx: Ctx, path: Path, data: bytes | None) -> Memory | None:
    """The memory in one version of a file, or None when it is not a readable memory file."""
    if data is None:
        return None
    try:
        return ctx.ws.files.load(path, data=data, mtime=0).memory
    except (InvalidMemoryFile, ValueError):
        return None
