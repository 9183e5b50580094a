"""The verdicts of ``memcli stale`` as the reads use them (the hot path: one small file read).

``service.stale`` judges and writes the cache; this module only reads it (``notes`` for the
context block and the hooks), forgets verdicts a write made obsolete (``drop``), and tells the
session start whether the code moved since (``code_moved``), so it can judge again in the
background (``spawn_refresh``). It imports nothing heavy: the hooks load it on every start.
"""

from __future__ import annotations

import json

from memcli.service import Ctx

STALE_FILE = "stale.json"
CHECKED_FILE = "stale-checked.json"
VERSION = 1
#: How much of the verdicts file ``code_moved`` reads: ``{"version": 1, "head": "<40 hex>"``.
HEAD_BYTES = 128
#: What ``memcli init`` puts in a store of its own (and git's own folder): a repository
#: holding nothing else has no code for its memories to be anchored to.
STORE_ENTRIES = frozenset({".git", ".cache", ".gitattributes", ".gitignore", "archive", "memcli.toml", "memories",
                           ".pre-commit-config.yaml", "README.md"})


def load(ctx: Ctx, name: str, head: str | None) -> dict[str, dict]:
    """The cached ``{id: {...}}`` of the cache file ``name``, when it was written at ``head``
    (any ``head`` when None); empty when missing, damaged or of another ``HEAD``."""
    try:
        data = json.loads((ctx.ws.root / ".cache" / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or (head is not None and data.get("head") != head):
        return {}
    memories = data.get("memories")
    return memories if isinstance(memories, dict) else {}


def load_head(ctx: Ctx, name: str) -> tuple[str | None, dict[str, dict]]:
    """(the ``HEAD`` it was written at, the cached ``{id: {...}}``) of the cache file ``name``;
    ``(None, {})`` when it is missing or damaged."""
    try:
        data = json.loads((ctx.ws.root / ".cache" / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("head"), str):
        return None, {}
    memories = data.get("memories")
    return (data["head"], memories) if isinstance(memories, dict) else (None, {})


def verdicts(ctx: Ctx) -> dict[str, dict]:
    """The stale memories' cached ``{id: {"note", "renamed"?}}`` (one small file read), for a
    caller that wants both :func:`notes` and :func:`renamed` of one read."""
    return load(ctx, STALE_FILE, None)


def notes(ctx: Ctx, read: dict[str, dict] | None = None) -> dict[str, str]:
    """``{id: "may be outdated: …"}`` of the memories the last verdicts found stale (one
    small file read, none when ``read`` is :func:`verdicts`' answer; empty when there are
    none or no verdicts yet). For the context block, the hooks and MCP."""
    found = verdicts(ctx) if read is None else read
    return {i: str(v.get("note", "")) for i, v in found.items() if v.get("note")}


def renamed(ctx: Ctx, read: dict[str, dict] | None = None) -> dict[str, str]:
    """``{new path: old path}`` of the files the last verdicts found renamed (a folder's paths
    end in ``/``), from the same small file as :func:`notes` (``read``: :func:`verdicts`'
    answer, not read again); empty when there are none."""
    moves: dict[str, str] = {}
    for verdict in (verdicts(ctx) if read is None else read).values():
        pairs = verdict.get("renamed") if isinstance(verdict, dict) else None
        for pair in pairs if isinstance(pairs, list) else ():
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair):
                moves.setdefault(pair[1], pair[0])
    return moves


def old_paths(moves: dict[str, str], path: str) -> list[str]:
    """The names ``path`` (project-relative) had before the renames ``moves`` (:func:`renamed`):
    the file's own old name, and its name under each renamed folder that holds it."""
    olds = [moves[path]] if path in moves else []
    for new, old in moves.items():
        if new.endswith("/") and path.startswith(new) and len(path) > len(new):
            olds.append(old.rstrip("/") + "/" + path[len(new):])
    return olds


def code_moved(ctx: Ctx) -> bool:
    """True when the code's ``HEAD`` (read from its files, no process) differs from the one
    the cached verdicts were made at, or there are none (the session start then refreshes
    them in the background). False when it cannot tell cheaply."""
    import os

    root = ctx.ws.root
    top = root.parent if root.name == ".memcli" else root
    try:
        if set(os.listdir(top)) <= STORE_ENTRIES:
            return False  # a store with no code of its own
    except OSError:
        return False
    from memcli.git.code import head_cheap

    head = head_cheap(top)
    if head is None:
        return False
    try:
        with open(root / ".cache" / STALE_FILE, "rb") as cache:
            start = cache.read(HEAD_BYTES)  # the head is written first: no need to parse the verdicts
    except OSError:
        return True
    return f'"head": "{head}"'.encode() not in start


def drop(ctx: Ctx, ids: list[str]) -> None:
    """Forget the verdicts of ``ids`` (a write changed them: confirmed, superseded, edited),
    so no read marks them until ``memcli stale`` judges them again. One small file read
    when there are verdicts; never raises."""
    path = ctx.ws.root / ".cache" / STALE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    memories = data.get("memories") if isinstance(data, dict) else None
    if not isinstance(memories, dict) or not any(i in memories for i in ids):
        return
    from memcli.store.files import atomic_write

    data["memories"] = {k: v for k, v in memories.items() if k not in ids}
    try:
        atomic_write(path, json.dumps(data, ensure_ascii=False).encode())
    except OSError:
        pass


#: The marker of a refresh started (``.cache/``): the code ``HEAD`` it judges, written when it starts.
REFRESH_MARK = "stale-refresh"
#: Seconds a started refresh of the same ``HEAD`` keeps session starts from starting another.
REFRESH_GRACE = 600


def spawn_refresh(ctx: Ctx) -> bool:
    """Start ``memcli stale --quiet`` detached (its output discarded), unless one was started
    for the same code ``HEAD`` less than :data:`REFRESH_GRACE` seconds ago: until the first
    refresh writes its verdicts every session start finds them out of date, and a burst of
    starts (sixteen agents at once, at 100,000 memories) ran one refresh each side by side,
    every one judging every memory. True when started. Never raises."""
    import os
    import subprocess
    import sys
    import time

    from memcli.git.code import head_cheap

    root = ctx.ws.root
    head = head_cheap(root.parent if root.name == ".memcli" else root) or ""
    mark = root / ".cache" / REFRESH_MARK
    try:
        if mark.read_text(encoding="utf-8") == head and time.time() - mark.stat().st_mtime < REFRESH_GRACE:
            return False  # one is on its way for this HEAD
    except (OSError, UnicodeDecodeError):
        pass
    try:
        mark.write_text(head, encoding="utf-8")
    except OSError:
        pass  # no marker: the refresh starts all the same
    try:
        subprocess.Popen([sys.executable, "-m", "memcli", "--workspace", str(ctx.ws.root), "stale", "--quiet"],
                         cwd=ctx.ws.root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                         env={**os.environ, "MEMCLI_ACTOR": ctx.actor})
    except OSError:
        return False
    return True
