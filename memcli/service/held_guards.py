"""Guards that hold while their memory is quarantined (newcomer trust fault, stop 32).

Verify on arrival (``service.arrival``) keeps a quarantined memory file from every read until
a person accepts or reverts it. A teammate's push that breaks a guarded memory (a stray byte,
a removed ``guards:`` key, a mass deletion) would then switch its guard off: the pre-tool hook
no longer saw the memory, so the call it denied went through. As ``memcli.toml``'s verified
settings stay in force while a change of it is held back, a quarantined memory's **verified**
version (the file as the commit the arrival started from held it) keeps its ``deny``, ``ask``
and ``warn`` guards in force until the quarantine ends: accepted (the arrived version rules,
guards and all) or reverted (the verified version is back on disk).

The same holds for a memory file that does not read at all now (a stray edit, a merge mistake):
its committed version's guards stay in force until the file reads again; when the committed
version does not read either (the broken edit committed with plain git), the newest of its
last committed versions that reads.

Cost: nothing while no quarantine entry names a memory file and every file reads; else one
``git cat-file --batch`` per pre-tool hook for those files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from memcli.model import Memory
    from memcli.service import Ctx
    from memcli.store.files import MemoryFiles

#: Memory files of the quarantine read at most (a mass change lists many).
MAX_FILES = 500
#: Unreadable memory files whose committed version is read at most.
MAX_BROKEN = 100


def verified_versions(ctx: Ctx, served: Callable[[str], bool]) -> list[Memory]:
    """The verified version of each quarantined memory file that is ``active`` and has guards,
    and the committed version (``HEAD``) of each memory file that does not read now (a stray
    edit, a bad merge: its guard must not fail open; newcomer MEDIUM, stop 34), none whose id is
    ``served`` (an active memory the caller reads now); the caller filters them as it filters
    those (scope, expiry, who may see them).

    Args:
        ctx: the store.
        served: whether an id is an active memory served now (asked only for those versions).

    Returns:
        The memories; ``[]`` when nothing is quarantined or unreadable, git cannot answer, or a
        version does not read.
    """
    from memcli.service.arrived import load

    wanted: list[tuple[str, str]] = []
    for raw in load(ctx).get("entries", []):
        if not isinstance(raw, dict) or raw.get("kind") not in ("file", "mass") or not raw.get("before"):
            continue
        for path in [raw.get("path"), *(raw.get("paths") or [])]:
            if isinstance(path, str) and path.endswith(".md") and (str(raw["before"]), path) not in wanted:
                wanted.append((str(raw["before"]), path))
    for problem in ctx.catalog().problems(actor=ctx.actor, limit=MAX_BROKEN):
        path = str(problem.path)
        if path.startswith("memories/") and path.endswith(".md") and ("HEAD", path) not in wanted:
            wanted.append(("HEAD", path))
    if not wanted:
        return []
    from memcli.errors import MemcliError
    from memcli.git.run import batch_blobs, run
    from memcli.store.files import MemoryFiles

    wanted = wanted[:MAX_FILES]
    try:
        done = run(("cat-file", "--batch"), ctx.ws.root, timeout=5,
                   input="".join(f"{commit}:./{path}\n" for commit, path in wanted).encode())
    except MemcliError:
        return []
    blobs = batch_blobs(done.stdout if done.returncode == 0 else b"", len(wanted))
    files = MemoryFiles(ctx.ws.root)
    found: list[Memory] = []
    unread: list[str] = []  # broken in HEAD too: its history is read below
    for (commit, path), data in zip(wanted, blobs):
        memory = _read(files, ctx, path, data)
        if memory is not None:
            found.append(memory)
        elif commit == "HEAD":
            unread.append(path)
    found += _last_readable(ctx, files, unread[:MAX_COMMITTED_BROKEN])
    seen: set[str] = set()
    out: list[Memory] = []
    for memory in found:
        if memory.id not in seen and memory.status == "active" and memory.guards and not served(memory.id):
            seen.add(memory.id)
            out.append(memory)
    return out


#: Files broken in ``HEAD`` too (a broken edit committed) whose history is read, at most; and the
#: versions of each read back.
MAX_COMMITTED_BROKEN, MAX_BACK = 20, 8


def _read(files: MemoryFiles, ctx: Ctx, path: str, data: bytes | None) -> Memory | None:
    """The memory a version's bytes hold, or None when there are none or they do not read."""
    from memcli.errors import MemcliError

    if data is None:
        return None
    try:
        return files.load(ctx.ws.root / path, data=data, round_trip=False, rel=path).memory
    except MemcliError:
        return None


def _last_readable(ctx: Ctx, files: MemoryFiles, paths: list[str]) -> list[Memory]:
    """For each memory file of ``paths`` that reads neither now nor in ``HEAD`` (a broken edit
    committed with plain git: newcomer, stop 36, its guard went out of force), the newest of
    its last :data:`MAX_BACK` committed versions that reads. One ``git log`` per file and one
    ``git cat-file --batch`` in all."""
    from memcli.errors import MemcliError
    from memcli.git.run import batch_blobs, run

    wanted: list[tuple[str, str]] = []
    for path in paths:
        try:
            log = run(("log", f"-{MAX_BACK}", "--format=%H", "--", path), ctx.ws.root, timeout=5)
        except MemcliError:
            continue
        wanted += [(commit, path) for commit in log.stdout.decode().split()[1:] if log.returncode == 0]
    if not wanted:
        return []
    try:
        done = run(("cat-file", "--batch"), ctx.ws.root, timeout=5,
                   input="".join(f"{commit}:./{path}\n" for commit, path in wanted).encode())
    except MemcliError:
        return []
    out: dict[str, Memory] = {}
    for (_, path), data in zip(wanted, batch_blobs(done.stdout if done.returncode == 0 else b"", len(wanted))):
        if path not in out:
            memory = _read(files, ctx, path, data)
            if memory is not None:
                out[path] = memory
    return list(out.values())
