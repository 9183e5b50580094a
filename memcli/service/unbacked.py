"""Provenance no commit backs (newcomer trust fault 4): a memory file that is not committed as it
is (untracked, or changed since the last commit) names an actor nobody vouched for.

``check`` and verify on arrival judge what was committed (rule ``actor``: a person's memory
names the person who committed it). A file dropped by hand into ``memories/`` and never
committed reaches every read before any of that runs, so the reads label it where the agent
sees it: the context block (``actor boss unverified: not committed``) and ``recall``'s hits
(``actorUnverified``). Only a file written after git's index file last changed can be
uncommitted (a commit, ``git add`` and memcli's own writes all rewrite the index after the
file), so a read where every file is older starts no git process; for the others git answers
(one ``git status``), kept in ``.cache/unbacked.json`` under a key of the ``stat`` of the index
file and of each file asked about. Not seen: a file staged with ``git add`` but not committed
(the index moved after it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.model import Memory
    from memcli.service import Ctx

CACHE = "unbacked.json"
#: Actors that name nobody (a hand-written file without provenance reads as ``unknown``).
NOBODY = ("", "unknown")


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def notes(ctx: Ctx, memories: list[Memory]) -> dict[str, str]:
    """``{id: "actor NAME unverified: not committed"}`` for those of ``memories`` of the workspace's
    own tree whose file git does not hold as it is and whose provenance names someone.
    Empty when git cannot tell (no repository): nothing is claimed either way."""
    asked = [m for m in memories if (m.provenance.actor or "").strip().lower() not in NOBODY and m.path
             and not m.scope.startswith(("user:", "session:"))]
    if not asked:
        return {}
    root = ctx.ws.root
    index = _git_index(root)
    held = _stat(str(index)) if index is not None else None
    if held is None:
        return {}  # not in a repository git keeps an index for: nothing is claimed either way
    stats = {m.id: _stat(str(root / m.path)) for m in asked}
    asked = [m for m in asked if (stats[m.id] or [0, 0])[1] > held[1]]  # written after git's index last moved
    if not asked:
        return {}  # every file older than the index: committed or added since (no git process)
    key = [held, sorted([str(m.path), stats[m.id]] for m in asked)]
    try:
        cache = ctx.ws.cache / CACHE
    except Exception:  # noqa: BLE001 - a read-only workspace: no cache, ask git
        cache = None
    loose: set[str] | None = None
    if cache is not None:
        try:
            saved = json.loads(cache.read_text(encoding="utf-8"))
            if saved.get("key") == json.loads(json.dumps(key)):
                loose = set(saved.get("paths", []))
        except (OSError, ValueError, AttributeError):
            loose = None
    if loose is None:
        loose = _uncommitted(ctx)
        if loose is None:
            return {}
        if cache is not None:
            try:
                cache.write_text(json.dumps({"key": key, "paths": sorted(loose)}), encoding="utf-8")
            except OSError:
                pass
    return {m.id: f"actor {m.provenance.actor[:60]} unverified: not committed" for m in asked
            if str(m.path) in loose}


def _git_index(root: Path) -> Path | None:
    """git's index file for the work tree holding ``root`` (``.git/index``, or a linked
    worktree's, read from its ``.git`` file), found without starting git; None outside one."""
    for folder in (root, *root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot / "index"
        if dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            where = Path(line.removeprefix("gitdir:").strip())
            return (where if where.is_absolute() else folder / where) / "index"
    return None


def _uncommitted(ctx: Ctx) -> set[str] | None:
    """Workspace-relative paths under ``memories/`` that are untracked or differ from ``HEAD``;
    None when git cannot answer."""
    from memcli.errors import MemcliError

    try:
        repo = ctx.git()
        status, out, _ = repo.raw("--no-optional-locks", "status", "--porcelain=v1", "-z",  # never rewrites the index
                                  "--untracked-files=all", "--no-renames", "--", "memories")
        prefix = repo.prefix
    except (MemcliError, OSError):
        return None
    if status != 0:
        return None
    found = set()
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) > 3:
            found.add(entry[3:].removeprefix(prefix))
    return found
