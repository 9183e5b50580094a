"""The note a session-end harvest leaves for the next session start (``[agents] harvest``).

Kept apart from ``service.agent_memory`` so that the session-start hook, which reads it,
loads no store reader. The note is ``.cache/harvest-note.json`` in the workspace: per actor,
the new memories per store and the changes left as offers; :func:`take_note` says it once.
"""

from __future__ import annotations

import json
from pathlib import Path

from memcli.service import Ctx


def _note_path(ctx: Ctx) -> Path:
    from memcli.service.hooks import HARVEST_NOTE

    return ctx.ws.cache / HARVEST_NOTE


def add_note(ctx: Ctx, counts: dict[str, list], offered: int, agent: str) -> None:
    """Add to the caller's note what a harvest brought in: ``counts`` is store title ->
    ``[new memories, of them waiting for review, the agent's tag]``, ``offered`` the changes
    left as offers. Never raises (a note that cannot be written is lost)."""
    from memcli.store.files import atomic_write

    path = _note_path(ctx)
    try:
        held = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        held = {}
    if not isinstance(held, dict):
        held = {}
    mine = held.setdefault(ctx.actor, {"new": {}, "offered": {}})
    for title, (count, pending, tag) in counts.items():
        was = mine["new"].get(title) or [0, 0, tag]
        mine["new"][title] = [was[0] + count, was[1] + pending, tag]
    if offered:
        mine["offered"][agent] = mine["offered"].get(agent, 0) + offered
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(held, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def take_note(ctx: Ctx) -> str:
    """The harvest note for the caller, once (it is removed): one line per store, e.g.
    "3 new memories from Claude Code's auto memory: review with `memcli review`"; '' when none."""
    from memcli.store.files import atomic_write

    path = _note_path(ctx)
    if not path.is_file():
        return ""
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    mine = held.pop(ctx.actor, None) if isinstance(held, dict) else None
    if not isinstance(mine, dict):
        return ""
    try:
        if held:
            atomic_write(path, json.dumps(held, sort_keys=True).encode("utf-8"))
        else:
            path.unlink(missing_ok=True)
    except OSError:
        return ""
    lines = []
    for title, held in sorted(dict(mine.get("new") or {}).items()):
        try:
            count, pending, tag = int(held[0]), int(held[1]), str(held[2])
        except (TypeError, ValueError, IndexError, KeyError):
            continue
        how = "review with `memcli review`" if pending else \
            f"review with `memcli list --tag {tag}` (`memcli forget ID` drops one)"
        lines.append(f"{count} new {'memory' if count == 1 else 'memories'} from {title}: {how}")
    for agent, count in sorted(dict(mine.get("offered") or {}).items()):
        lines.append(f"{count} memories the agent deleted from its own store: `memcli import --agent {agent}` "
                     "lists them, `--apply-changes` forgets them")
    return "\n".join(lines)
