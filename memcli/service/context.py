"""Choosing what goes into an agent's context (SPEC.md section 6).

Only ``active``, unexpired memories in the caller's scopes. The order, best first:

1. pinned memories;
2. memories relevant to the query (``--query``, or the prompt of a hook), by recall rank;
3. memories about the files under the current folder: their ``paths`` globs match a
   file git tracks there;
4. the rest, by importance, then by recency of ``updatedAt``.

The rendering (fence, budget, neutralising) is ``memcli.agents.context``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from memcli.agents.context import Block, render
from memcli.errors import ValidationFailed
from memcli.index import Query
from memcli.model import Memory, check_choice
from memcli.service import Ctx
from memcli.service.read import retriever

#: Memories considered for the block at most; 8,000 characters hold far fewer.
POOL = 400
#: Smallest budget accepted (characters): the fence and its header take about 200.
MIN_BUDGET = 200
#: Tracked files looked at when matching ``paths`` globs against the current folder.
MAX_FILES = 20_000


def tracked_files(folder: Path, workspace: Path) -> list[str]:
    """Files git tracks under ``folder``, relative to the repository root, leaving out the
    workspace's own files (memories are not what memories are about); empty outside git."""
    try:
        proc = subprocess.run(["git", "ls-files", "--full-name", "-z", "--", ".", f":(exclude){workspace}"],
                              cwd=folder, capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return [f for f in proc.stdout.decode("utf-8", "replace").split("\0") if f][:MAX_FILES]


def about_files(memories: list[Memory], files: list[str]) -> list[Memory]:
    """The memories whose ``paths`` globs match at least one of ``files`` (each glob set compiled once)."""
    if not files:
        return []
    from wcmatch import glob

    matchers: dict[tuple[str, ...], object] = {}
    found = []
    for memory in memories:
        key = tuple(memory.paths)
        if key not in matchers:
            matcher = glob.compile(list(key), flags=glob.GLOBSTAR | glob.DOTGLOB)
            matchers[key] = any(matcher.match(f) for f in files)
        if matchers[key]:
            found.append(memory)
    return found


def candidates(ctx: Ctx, query: str | None = None, folder: Path | None = None,
               exclude: set[str] | None = None) -> tuple[list[Memory], int]:
    """Memories for the block, best first, and how many are eligible in all.

    Args:
        query: words that pull relevant memories forward.
        folder: the agent's working folder; memories whose ``paths`` match files there come forward.
        exclude: ids already given to this session (left out, not counted).
    """
    search = retriever(ctx)
    base = Query(text="", scopes=ctx.scopes(), now=ctx.now, limit=POOL, actor=ctx.actor)
    pool = [h.memory for h in search.search(base)]
    first: list[Memory] = [m for m in pool if m.pinned]
    if query and query.strip():
        base.text = query
        first += [h.memory for h in search.search(base)]
    if folder is not None and any(m.paths for m in pool):
        first += about_files([m for m in pool if m.paths], tracked_files(folder, ctx.ws.root))
    seen = set(exclude or ())
    ordered = []
    for memory in [*first, *pool]:
        if memory.id not in seen:
            seen.add(memory.id)
            ordered.append(memory)
    return ordered, max(len(ordered), search.count(base) - len(exclude or ()))


def context(ctx: Ctx, query: str | None, budget: int | None, fmt: str, folder: Path | None = None,
            exclude: set[str] | None = None) -> Block:
    """The context block for an agent session.

    Args:
        query: optional words that pull relevant memories forward.
        budget: characters the block may take; default ``[context] budget``.
        fmt: ``text``, ``markdown`` or ``json``.
        folder: the working folder (for ``paths`` relevance); default: none.
        exclude: ids to leave out (already in this session's context).

    Raises:
        ValidationFailed: budget below ``MIN_BUDGET`` characters or format unknown.
    """
    size = ctx.ws.config.context_budget if budget is None else budget
    if size < MIN_BUDGET:
        raise ValidationFailed(f"budget {size} is too small: use at least {MIN_BUDGET} characters")
    check_choice("format", fmt, ("text", "markdown", "json"))
    from memcli.service.redact import for_reader

    pool, total = candidates(ctx, query, folder, exclude)
    return render(for_reader(ctx, pool), size, fmt, total)  # secrets of hand-written files cut out first
