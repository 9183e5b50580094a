"""A ``sync`` merge a kill interrupted: found from its record and rolled back to the commit before it.

``sync`` writes ``.cache/unfinished-sync.json`` (the branch, the commit ``HEAD`` was on,
the commit being merged in) just before ``git merge`` and removes it when the merge has
ended, committed or aborted. A kill in between can leave git's merge half-way: the
incoming files written to the working tree and staged but no merge commit and no
``MERGE_HEAD`` (git writes that only when it stops on a conflict), or a conflict that
memcli had not yet aborted. The branch itself never moves half-way (``update-ref`` is
atomic), so the local commits are always intact.

:func:`roll_back`, run under the workspace lock by the next ``sync`` (which then merges
again from the start), the next memcli write, and ``doctor --fix``, puts the merge's
files back as ``HEAD`` has them:

* a conflict still in progress (``MERGE_HEAD`` names the incoming commit): ``git merge --abort``;
* ``HEAD`` moved since the record was written (the merge had committed): nothing to undo;
* otherwise, for each path the merge changes (the incoming side changed it since the merge
  base, and ``HEAD`` does not hold that version):
  a working-tree file that holds what the merge would write there (the incoming version,
  the merged version ``git merge-tree`` computes, or conflict markers)
  or ``HEAD``'s version gets ``HEAD``'s version in the working tree and in the index; any
  other content was written by a person after the kill and is kept (only its index entry
  goes back to ``HEAD``), and the line says so. The merge could not have overwritten a
  person's earlier edit: ``sync`` starts only with clean memory files, and git refuses to
  merge over a changed file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.service import Ctx, journal

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo

def _read(path: Path) -> str:
    """The first line of a small file of git's (``MERGE_HEAD``), or "" when there is none."""
    try:
        return path.read_text(encoding="ascii", errors="replace").split("\n", 1)[0].strip()
    except OSError:
        return ""


#: Conflict markers git (and memcli's merge driver, through ``git merge-file``) writes.
_MARKERS = (b"<<<<<<< ", b">>>>>>> ")


def pending_line(ctx: Ctx, record: dict) -> str:
    """One line naming the interrupted merge (``doctor``), with what :func:`roll_back` would do."""
    from memcli.git.commit import alive as _alive

    what = f"`sync` merge of {record.get('incomingRef', 'the remote branch')} into {record.get('branch', 'HEAD')}"
    if _alive(int(record.get("pid", 0))):
        return f"a {what} is in progress (process {record.get('pid')})"
    restore, keep = _plan(ctx, record)
    count = len(restore) + len(keep)
    left = (f"{count} file{'' if count == 1 else 's'} of it left in the working tree or staged" if count
            else "nothing of it is left in the working tree")
    return (f"a {what} was interrupted (started {record.get('at', 'at an unknown time')}, process "
            f"{record.get('pid')} stopped before it finished): {left}; `memcli sync` rolls it back and merges "
            "again, `memcli doctor --fix` rolls it back")


def roll_back(ctx: Ctx) -> str | None:
    """Undo the merge of an interrupted ``sync`` (module docstring); the caller holds the workspace lock.

    Returns:
        One line saying what was found and done, or None when there was no record (or the merge
        had committed before the kill).

    Raises:
        GitFailed: git cannot be run (the record stays for the next try).
    """
    record = journal.load(ctx, journal.SYNC)
    if record is None:
        return None
    repo = ctx.git()
    before, incoming = str(record.get("head", "")), str(record.get("incoming", ""))
    head = _rev(repo, "HEAD")
    when = f"a `sync` merge interrupted on {record.get('at', 'an unknown date')} (process {record.get('pid')})"
    _drop_stale_locks(repo, record, when)
    merge_head = repo.git_path("MERGE_HEAD")
    if merge_head.exists() and head == before:
        if repo.raw("merge", "--abort")[0] == 0:
            journal.drop(ctx, journal.SYNC)
            return f"aborted {when} (`git merge --abort`); nothing of it is left, local commits kept"
        for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):  # git refused: the paths below
            repo.git_path(name).unlink(missing_ok=True)
    if head != before or not before:
        journal.drop(ctx, journal.SYNC)
        if head and incoming and repo.raw("merge-base", "--is-ancestor", incoming, head)[0] == 0:
            if _read(merge_head) == incoming:  # the kill came between the merge commit and git removing its
                # state (CI, stop 35: the next sync then refused "a git operation is in progress")
                for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):
                    repo.git_path(name).unlink(missing_ok=True)
            return None  # the merge had committed: the kill came after it
        return f"{when} is no longer pending: HEAD moved since (nothing was changed)"
    restore, keep = _plan(ctx, record)
    in_head = set(_tree(repo, before))
    listed = lambda paths: b"".join(os.fsencode(p) + b"\0" for p in paths)  # noqa: E731
    back = [p for p in restore if p in in_head]
    if back:
        repo.raw("--literal-pathspecs", "checkout", before, "--pathspec-from-file=-", "--pathspec-file-nul",
                  input=listed(back))
    new = [p for p in restore if p not in in_head]
    if new:
        repo.raw("--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-",
                  "--pathspec-file-nul", input=listed(new))
        for rel in new:
            (ctx.ws.root / rel).unlink(missing_ok=True)
    if keep:
        repo.raw("--literal-pathspecs", "reset", "-q", before, "--pathspec-from-file=-", "--pathspec-file-nul",
                  input=listed(keep))
    journal.drop(ctx, journal.SYNC)
    line = f"rolled back {when}: {len(restore)} files back as HEAD {before[:12]} has them, local commits kept"
    if keep:
        line += (f"; kept your later edits to {', '.join(keep[:3])}{' …' if len(keep) > 3 else ''} "
                 "(unstaged, not committed)")
    return line


def _drop_stale_locks(repo: GitRepo, record: dict, when: str) -> None:
    """Remove the lock files the killed ``git merge`` left (the index's, ``HEAD``'s, the branch's):
    those made since the sync started, when no git process runs in the repository
    (``journal.drop_stale_locks``).

    Raises:
        GitFailed: such a lock is there and a git process is running (or processes cannot be listed).
    """
    from memcli.service.journal import drop_stale_locks, started_at

    names = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", f"refs/heads/{record.get('branch', '')}.lock")
    drop_stale_locks(repo, started_at(record), names, when)


def _plan(ctx: Ctx, record: dict) -> tuple[list[str], list[str]]:
    """The merge's paths to put back as ``HEAD`` has them, and those whose working-tree file a person changed."""
    repo = ctx.git()
    before, incoming = str(record.get("head", "")), str(record.get("incoming", ""))
    if not before or not incoming or _rev(repo, "HEAD") != before:
        return [], []
    status, out, _ = repo.raw("merge-base", before, incoming)
    base = out.decode().strip() if status == 0 else ""
    # the paths the merge changes: those the incoming side changed and HEAD does not already hold
    paths = sorted(_changed(repo, before, incoming) & (_changed(repo, base, incoming) if base else
                                                        set(_tree(repo, incoming)) | set(_tree(repo, before))))
    if not paths:
        return [], []
    head_tree, incoming_tree = _tree(repo, before), _tree(repo, incoming)
    status, out, _ = repo.raw("merge-tree", "--write-tree", "--no-messages", before, incoming)
    merged_tree = _tree(repo, out.decode().split("\n", 1)[0].strip()) if status in (0, 1) and out.strip() else {}
    staged: dict[str, set[str]] = {}
    status, out, _ = repo.raw("ls-files", "-s", "-z", "--", *paths)
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            staged.setdefault(path, set()).add(meta.split()[1] + ("" if meta.split()[2] == "0" else ":conflict"))
    restore, keep = [], []
    for path in paths:
        head_blob = head_tree.get(path)
        index = staged.get(path, set())
        unmerged = any(b.endswith(":conflict") for b in index)
        target = ctx.ws.root / path
        work = _hash(repo, target)
        index_same = index == ({head_blob} if head_blob else set())
        if index_same and work == head_blob:
            continue
        written = {head_blob, incoming_tree.get(path), merged_tree.get(path)}
        if work in written or (unmerged and work is not None and _has_markers(target)):
            restore.append(path)
        else:
            keep.append(path)
    return restore, keep


def _changed(repo: GitRepo, old: str, new: str) -> set[str]:
    """Paths that differ between the commits ``old`` and ``new`` (no rename detection)."""
    status, out, _ = repo.raw("diff", "--name-only", "-z", "--no-renames", old, new)
    return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p} if status == 0 else set()


def _rev(repo: GitRepo, name: str) -> str:
    status, out, _ = repo.raw("rev-parse", "-q", "--verify", f"{name}^{{commit}}")
    return out.decode().strip() if status == 0 else ""


def _tree(repo: GitRepo, rev: str) -> dict[str, str]:
    """``path -> blob`` of every file of ``rev`` (empty when it names nothing)."""
    if not rev:
        return {}
    status, out, _ = repo.raw("ls-tree", "-r", "-z", "--full-tree", rev)
    found = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0") if status == 0 else []:
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            found[path] = meta.split()[2]
    return found


def _hash(repo: GitRepo, path: Path) -> str | None:
    """The blob hash git would give the working-tree file, or None when there is none."""
    if not path.is_file() or path.is_symlink():
        return None
    status, out, _ = repo.raw("hash-object", "--", str(path))
    return out.decode().strip() if status == 0 else None


def _has_markers(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return all(marker in data for marker in _MARKERS)
