"""``doctor --fix``: personal memories found in a project workspace move to their owner's store.

SPEC.md section 1 (Stores): nothing personal is committed to the project repository. A
workspace made before it had an id (or a file someone wrote by hand) may still hold
``user:<name>`` or ``session:*`` memories in its tree. :func:`move_personal` gives such a
workspace its ``[workspace] id`` and moves the caller's own personal memories, byte for
byte and at the same relative path, into the caller's store of this workspace
(``store.personal``): one commit there, then one commit in the project that deletes them
(its message names ids and scopes, never the text). Other people's personal memories
cannot be moved from here (their stores are on their machines): they are counted.

Only a workspace from before the store split (no ``[workspace] id`` when ``doctor --fix``
starts) has its personal memories moved. Once a workspace has an id, a personal scope's file
in its tree is one someone committed there (a teammate can plant ``memories/user/alice/…``):
it is never served (``store.files.PLANTED``) and never moved into a person's store; the one
exception is a move a kill interrupted, whose file the store already holds byte for byte.
"""

from __future__ import annotations

import re
from pathlib import Path

from memcli import testpoint
from memcli.config import CONFIG_NAME, load_config, new_workspace_id
from memcli.git import log as gitlog
from memcli.policy.owner import owner_of
from memcli.service import Ctx
from memcli.store.personal import is_personal

OP = "doctor"


def move_personal(ctx: Ctx) -> list[str]:
    """Move the caller's personal memories out of the project workspace (module docstring).

    Returns:
        Lines for a person: the id given to the workspace, what moved where, what is left.

    Raises:
        WorkspaceLocked, GitLocked, GitFailed, HistoryConflict: as ``service.write.apply``
            (a file with uncommitted edits is not moved); nothing of that store is written.
    """
    from memcli.service.write import apply

    if ctx.ws.config.kind != "project":
        return []
    personal = in_tree(ctx)
    if not personal:
        return []
    notes = []
    legacy = not ctx.ws.config.workspace_id
    if legacy:
        notes.append(_give_id(ctx))
    mine = [m for m in personal if owner_of(m) == ctx.actor]
    if not legacy:  # only the rest of an interrupted move: the store holds the same bytes
        mine = unfinished(ctx, mine)
        personal = mine
    others = len(personal) - len(mine)
    workspace_id = ctx.ws.config.workspace_id
    assert workspace_id is not None, "given above when missing"
    if mine:
        store = ctx.store_for(mine[0].scope)
        with store.ws.lock():
            writes: dict[Path, bytes | None] = {}
            differ = []
            for memory in mine:
                target = store.ws.root / memory.path
                data = (ctx.ws.root / memory.path).read_bytes()
                if target.exists() and target.read_bytes() != data:  # never overwrite the store's own copy
                    differ.append(memory)
                elif not target.exists():
                    writes[target] = data
            if differ:
                notes.append(f"not moved, your store already holds another version: "
                             f"{', '.join(m.path for m in differ[:5])} (compare it with {store.ws.root}/… and "
                             "remove the one you do not want)")
                mine = [m for m in mine if m not in differ]
            if writes:
                apply(store, writes, OP, mine, [], trailers={"Moved-From": workspace_id})
            store.catalog(refresh=True)
    testpoint.reached("move:stored")  # a kill here: the next `doctor --fix` finds them stored and removes them
    if mine:
        with ctx.ws.lock():
            apply(ctx, {ctx.ws.root / m.path: None for m in mine}, OP, mine, [], with_text=False)
            ctx._catalog = None
        ids = ", ".join(m.id for m in mine[:5]) + (f" and {len(mine) - 5} more" if len(mine) > 5 else "")
        notes.append(f"moved {_count(len(mine), 'personal memory', 'personal memories')} of yours ({ids}) to "
                     f"your own store {store.ws.root}, with a commit on each side; the project's git history "
                     "still holds their text: "
                     "`memcli purge --history ID` removes one from it too (a history rewrite: the remote "
                     "then needs a forced push)")
    if others:
        stay = "stays" if others == 1 else "stay"
        notes.append(f"{_count(others, 'personal memory', 'personal memories')} of other people {stay} in this "
                     "workspace: each owner's `memcli doctor --fix` moves theirs to their own store")
    return notes


def in_tree(ctx: Ctx) -> list:
    """The personal-scope memories (``user:*``, ``session:*``) whose files are in the project tree,
    read as written (``MemoryFiles`` not shared: the served tree refuses them)."""
    from memcli.store.files import MemoryFiles

    return [m for m in MemoryFiles(ctx.ws.root).scan().memories if is_personal(m.scope)]


def unfinished(ctx: Ctx, mine: list) -> list:
    """Those of ``mine`` (the caller's in-tree personal memories) that the caller's store already
    holds byte for byte at the same path: a move a kill stopped between its two commits."""
    store = ctx.store_for(mine[0].scope, create=False) if mine else None
    if store is None:
        return []
    out = []
    for memory in mine:
        target = store.ws.root / memory.path
        try:
            if target.read_bytes() == (ctx.ws.root / memory.path).read_bytes():
                out.append(memory)
        except OSError:
            continue
    return out


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _give_id(ctx: Ctx) -> str:
    """Write a fresh ``[workspace] id`` into ``memcli.toml`` and commit it; reload the configuration."""
    path = ctx.ws.root / CONFIG_NAME
    text = path.read_text(encoding="utf-8-sig")
    new_id = new_workspace_id()
    line = f'id = "{new_id}"\n'
    header = re.search(r"(?m)^\[workspace\][ \t]*(#.*)?\n", text)
    text = (text[:header.end()] + line + text[header.end():] if header
            else f"[workspace]\n# The workspace's stable id: it names each person's own store of their personal "
                 f"scopes.\n{line}\n{text}")
    from memcli.service.write import apply

    with ctx.ws.lock():  # journaled as every write: a kill between the file and its commit is undone or completed
        apply(ctx, {path: text.encode("utf-8")}, "init", [], [], edits_checked=True,
              message=gitlog.message("init", "workspace id", {"Op": "init"}))
    ctx.ws.config = load_config(path)
    ctx._stores = None
    return f"gave this workspace the id {new_id} ([workspace] id in {CONFIG_NAME}): it names your personal store"
