"""The write journal: a write killed at any instant is completed or rolled back by the next one.

Before a committing write touches a file, ``begin`` records (in the git-ignored cache
folder, atomically) the writer's process id, the operation and every file's bytes before
the write (``null`` for a file that did not exist). Just before the branch moves, ``mark``
adds the new commit and the checksum of the next index the writer left in git's
``index.lock`` (see ``memcli.git.commit``). ``clear`` removes the record when the write
is over, whether it committed or restored its files.

A record whose writer is gone means the writer died mid-way. :func:`recover`, run under
the workspace lock by the next write (``Ctx.catalog(refresh=True)``, before it reads the
files) and by ``doctor``, then either completes it (the
commit is on the branch: the shared index is brought in step) or rolls it back (the
files get their old bytes again; the lock file the writer held is removed), and says
which. Nothing is ever left staged in the person's index.
"""

from __future__ import annotations

import base64
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.service import Ctx

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo

NAME = "unfinished-write.json"


def _path(ctx: Ctx) -> Path:
    return ctx.ws.cache / NAME


def begin(ctx: Ctx, op: str, backups: dict[Path, bytes | None]) -> None:
    """Record a write about to start: ``backups`` maps each absolute path to its old bytes (or None).

    Raises:
        StorageFailed: the record cannot be written (nothing has been written yet).
    """
    from memcli.store.files import atomic_write

    record = {"pid": os.getpid(), "op": op, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "new": None, "checksum": None,
              "files": {ctx.ws.files.rel(p): None if data is None else base64.b64encode(data).decode("ascii")
                        for p, data in backups.items()}}
    atomic_write(_path(ctx), json.dumps(record).encode("utf-8"))


def mark(ctx: Ctx, commit: str, checksum: bytes) -> None:
    """Add the commit about to go on the branch and the next index's checksum to the record."""
    from memcli.store.files import atomic_write

    path = _path(ctx)
    record = json.loads(path.read_bytes())
    record.update(new=commit, checksum=checksum.hex())
    atomic_write(path, json.dumps(record).encode("utf-8"))


def clear(ctx: Ctx) -> None:
    """Remove the record: the write is over (committed, or its files restored)."""
    try:
        _path(ctx).unlink(missing_ok=True)
    except OSError:
        pass


def pending(ctx: Ctx) -> bool:
    """Whether a record is there (one ``stat``; its writer may still be running)."""
    return (ctx.ws.root / ".cache" / NAME).exists()


def recover(ctx: Ctx, repo: GitRepo | None = None) -> str | None:
    """Complete or roll back a write whose writer died; the caller holds the workspace lock.

    Args:
        repo: the workspace's ``GitRepo``, if already open.

    Returns:
        One line saying what was found and done, or None when there was nothing to do.

    Raises:
        GitFailed: git cannot be run (the record stays for the next try).
    """
    from memcli.git import commit as gitcommit
    from memcli.store.files import atomic_write

    path = _path(ctx)
    try:
        record = json.loads(path.read_bytes())
        pid, op, files = int(record["pid"]), str(record["op"]), dict(record["files"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        clear(ctx)
        return "removed an unreadable record of an unfinished write (.cache/unfinished-write.json)"
    # The writer held this workspace lock while the record existed; holding it now proves it is gone.
    repo = repo or ctx.git()
    checksum = bytes.fromhex(record["checksum"]) if record.get("checksum") else None
    when = f"{op} of {record.get('at', 'an unknown time')} (process {pid}, which stopped before it finished)"
    # a git the writer ran and the kill took with it (``update-ref``) may have left its ref
    # lock: every later write would fail on it ("cannot lock ref 'HEAD'")
    ref = _branch_ref(repo)
    drop_stale_locks(repo, started_at(record), ("HEAD.lock", *([f"{ref}.lock"] if ref else [])), f"the {when}")
    if gitcommit.recover(repo, pid, record.get("new"), checksum, list(files)):
        clear(ctx)
        _drop_temp_files(ctx, files)
        return f"completed an unfinished {when}: commit {record['new'][:12]} is on the branch"
    restored = 0
    for rel, data in files.items():
        target = ctx.ws.root / rel
        old = None if data is None else base64.b64decode(data)
        now = target.read_bytes() if target.is_file() and not target.is_symlink() else None
        if now == old:
            continue
        if old is None:
            target.unlink(missing_ok=True)
        else:
            atomic_write(target, old)
        restored += 1
    _drop_temp_files(ctx, files)
    clear(ctx)
    return f"rolled back an unfinished {when}: {restored} of {len(files)} files restored, nothing committed"


def started_at(record: dict) -> float:
    """The POSIX time an operation's record says it started (its ``at``), less 2 seconds for
    the file system's timestamp grain; now when the record holds none (then no file is older)."""
    try:
        return datetime.fromisoformat(str(record.get("at"))).timestamp() - 2
    except ValueError:
        return time.time()


def _branch_ref(repo: GitRepo) -> str | None:
    """The full name of the branch ``HEAD`` points to (``refs/heads/main``), or None."""
    status, out, _ = repo.raw("symbolic-ref", "-q", "HEAD")
    return (out.decode().strip() or None) if status == 0 else None


def drop_stale_locks(repo: GitRepo, since: float, names: tuple[str, ...], when: str) -> None:
    """Remove the git lock files ``names`` (``repo.git_path`` names: ``HEAD.lock``,
    ``refs/heads/main.lock``…) changed at or after ``since`` (POSIX seconds): those a git
    process killed with an interrupted operation left. Only when no git process runs in the
    repository (``git.commit.git_processes``); an older lock is not this operation's and stays.

    Raises:
        GitFailed: such a lock is there and a git process is running (or processes cannot
            be listed), naming the lock and how to remove it.
    """
    from memcli.errors import GitFailed
    from memcli.git.commit import git_processes

    locks = []
    for name in names:
        path = repo.git_path(name)
        try:
            if path.stat().st_mtime >= since:
                locks.append(path)
        except OSError:
            continue
    if not locks:
        return
    running = git_processes(repo)
    if running:
        raise GitFailed(f"cannot recover {when} yet: {locks[0]} is held"
                        + (f" by running git process {running[0]}" if running != [-1] else ""),
                        hint=f"when no git runs in the store, remove it (`rm {locks[0]}`) and retry")
    for path in locks:
        path.unlink(missing_ok=True)


# --- records of longer operations (purge --history, a sync's merge) ------------------

#: The record of a ``purge --history`` between its first step and its last (``service.purge``).
PURGE = "unfinished-purge.json"
#: The record of a ``sync`` merge in progress, with the branch's commit before it (``service.sync_recover``).
SYNC = "unfinished-sync.json"


def save(ctx: Ctx, name: str, record: dict) -> None:
    """Write the record ``name`` (:data:`PURGE`, :data:`SYNC`) atomically in the cache folder, with
    this process's id and the time added, before the operation's first step.

    Raises:
        StorageFailed: it cannot be written (the operation has not started).
    """
    from memcli.store.files import atomic_write

    record = {**record, "pid": os.getpid(), "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    atomic_write(ctx.ws.cache / name, json.dumps(record).encode("utf-8"))


def load(ctx: Ctx, name: str) -> dict | None:
    """The record ``name``, or None when there is none (an unreadable one is removed and None returned)."""
    path = ctx.ws.root / ".cache" / name
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        drop(ctx, name)
        return None
    if not isinstance(record, dict):
        drop(ctx, name)
        return None
    return record


def drop(ctx: Ctx, name: str) -> None:
    """Remove the record ``name``: its operation finished, or was rolled back."""
    try:
        (ctx.ws.root / ".cache" / name).unlink(missing_ok=True)
    except OSError:
        pass


def _drop_temp_files(ctx: Ctx, files: dict) -> None:
    """Remove the temporary files (``.NAME.*.tmp``) an interrupted ``atomic_write`` left beside ``files``."""
    for rel in files:
        target = ctx.ws.root / rel
        try:
            for leftover in target.parent.glob(f".{target.name}.*.tmp"):
                leftover.unlink(missing_ok=True)
        except OSError:
            continue
