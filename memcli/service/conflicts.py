"""What a sync left for a person to finish (issue 22 point 4): the record in ``.cache/conflicts.json``.

* ``blocked``: the last ``memcli sync`` stopped on a true conflict (or on two stores started
  apart): the remote ref, the files and what conflicts. Written by ``service.sync`` when it
  stops, removed by the next sync that gets through and by ``memcli resolve``. Until then every
  context block (each session start) carries one line saying so and what to run, where.
* ``duplicates``: pairs of memories a merge left active for one subject (the same ``subject``
  in one scope, or two replacements of one memory); each is said in the context block while
  both are still active, with the ``memcli resolve --keep`` that retires one.

This module is on the read path (the context block): one ``stat`` when there is no record,
standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.service import Ctx

#: The record beside the index.
RECORD_NAME = "conflicts.json"


def _path(ctx: Ctx) -> Path:
    return ctx.ws.root / ".cache" / RECORD_NAME


def load(ctx: Ctx) -> dict:
    """The record (``{}`` when there is none or it cannot be read)."""
    try:
        data = json.loads(_path(ctx).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(ctx: Ctx, data: dict) -> None:
    """Write the record atomically (removed when empty); a cache folder that is a link or
    read-only is left alone."""
    from memcli.store.files import atomic_write

    path = _path(ctx)
    if os.path.islink(path.parent):
        return
    try:
        if not any(data.values()):
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def set_blocked(ctx: Ctx, blocked: dict | None) -> None:
    """Record (or, with None, clear) a blocked sync."""
    data = load(ctx)
    if blocked is None and "blocked" not in data:
        return
    data["blocked"] = blocked
    save(ctx, data)


def blocked_line(blocked: dict, where: bool = True) -> str:
    """One line for a blocked sync: since when, with what, which files, and what to run where.

    Args:
        where: name the store's folder (its absolute path, for the person at the terminal); the
            context block leaves it out (the agent runs memcli in the project, which finds it,
            and a local path is not the model's to see).
    """
    files = ", ".join(str(f) for f in blocked.get("files", [])[:3]) or "its files"
    more = f" and {len(blocked['files']) - 3} more" if len(blocked.get("files", [])) > 3 else ""
    what = blocked.get("said") or "a true conflict"
    folder = f" in {blocked.get('root', '.')}" if where else ""
    return (f"sync is blocked since {blocked.get('at', '?')}: {what} with {blocked.get('ref', 'the remote')} "
            f"({files}{more}); nothing syncs until it is resolved: run `memcli resolve`{folder}")


def notes(ctx: Ctx) -> list[str]:
    """The lines the context block carries: a blocked sync, and each pair still both active
    (one ``stat`` when there is no record)."""
    if not _path(ctx).is_file():
        return []
    data = load(ctx)
    out = [blocked_line(data["blocked"], where=False)] if isinstance(data.get("blocked"), dict) else []
    pairs = [p for p in data.get("duplicates", []) if isinstance(p, list) and len(p) >= 2]
    if pairs:
        active = {m.id for m in ctx.catalog().with_status("active")}
        for pair in pairs:
            first, second = str(pair[0]), str(pair[1])
            if first in active and second in active:
                out.append(f"two active memories for one subject after a sync: {first} and {second}; keep one: "
                           f"`memcli resolve --keep {first} {second}` (or --keep {second} {first})")
    return out
