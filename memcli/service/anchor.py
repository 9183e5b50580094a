"""The anchor of a memory written now (SPEC.md section 11): the code repository's ``HEAD``
and what the memory's text points at (``policy.pointers``).

Apart from ``service.stale`` (which judges anchors) so a write imports only this: the
verdicts' module and the ``dataclasses`` it uses cost a write about 10 ms to import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.service.stale_notes import STORE_ENTRIES

if TYPE_CHECKING:
    from memcli.service import Ctx


def code_of(ctx: Ctx) -> tuple[Path, str | None] | None:
    """The code repository of ``ctx``'s store and its ``HEAD`` (``git.code.code_of``), or None
    for a store with no code of its own: the person's own store, a store in a repository that
    holds only memcli's files (one folder listing tells), or outside git."""
    if ctx.ws.config.kind != "project":
        return None
    from memcli.errors import GitFailed
    from memcli.git.code import code_from

    try:
        repo = ctx.history()  # the command's, opened once: its first git call asked for both folders
        found = code_from(repo.common_dir, repo.toplevel())
    except GitFailed:
        return None
    if found is not None:
        try:
            entries = set(os.listdir(found[0]))
        except OSError:
            return None
        if entries <= STORE_ENTRIES:
            return None
    return found


def anchor_for(ctx: Ctx, text: str, paths: list[str]) -> dict[str, Any] | None:
    """The ``anchor`` of a memory written now: the code's ``HEAD`` and what ``text`` and
    ``paths`` point at; None when there is no code commit to anchor to."""
    found = code_of(ctx)
    if found is None or found[1] is None:
        return None
    from memcli.policy.pointers import find as pointers

    return {"commit": found[1], **pointers(text, paths).to_dict()}
