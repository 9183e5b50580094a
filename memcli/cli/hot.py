"""The bodies of the hot-path commands (`recall`, `context`), free of typer.

Both the typer commands in ``read_cmds`` and the fast argument parser in ``fast`` call
these functions, so the two paths cannot drift apart in behaviour or output.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from memcli.cli.output import STATE, emit, is_terminal, one_line, table, warn
from memcli.cli.state import ctx, flush_warnings

if TYPE_CHECKING:
    from datetime import datetime

    from memcli.filters import Filters
    from memcli.index import Hit
    from memcli.model import Memory


def row(memory: Memory, now: datetime, stale: bool = False) -> list[str]:
    """A table row for one memory: id, scope, category, status (expired, and with ``stale``
    "may be outdated", marked), text."""
    status = memory.status + (" (expired)" if memory.is_expired(now) else "") + (" (may be outdated)" if stale else "")
    return [memory.id, memory.scope, memory.category, status, one_line(memory.text)]


#: ``recall``'s ``--limit`` when none is given.
RECALL_LIMIT = 10


def filters(**options: Any) -> Filters:
    """The ``Filters`` of ``recall`` and ``list`` from their command-line options (keywords of
    ``memcli.filters.FILTERS``: ``scope``, ``status``, ``limit`` …; None: the filter's default).

    Raises:
        TypeError: a keyword that names no filter.
    """
    from memcli.filters import Filters

    return Filters.from_options(**options)


def recall(query: str, *, fuzzy: bool = False, grep: bool = False, explain: bool = False, **options: Any) -> None:
    """``memcli recall``: search and print the hits (see the command's help for each option).

    Args:
        options: the read filters by their command-line keywords (``memcli.filters.FILTERS``).
    """
    from memcli.index.hybrid import describe
    from memcli.service.read import check_mode, recall_data, semantic_retriever
    from memcli.service.read import recall as do_recall
    from memcli.service.semantic import COMMAND_BUDGET
    from memcli.text.secrets import shown

    context = ctx()
    context.bound()  # as a hook: answer within [hooks] deadline from what is indexed, build the rest in the background
    mode = check_mode(fuzzy, grep)
    chosen = filters(**{"limit": RECALL_LIMIT, **options})
    using = semantic_retriever(context, COMMAND_BUDGET) if mode == "ranked" else None
    hits = do_recall(context, query, chosen, mode, using=using)
    answered = describe(using)
    flush_warnings(context)
    data = recall_data(context, query, mode, hits, explain, answered)
    emit(data)
    if STATE.json:
        return
    if not hits:
        hint = ""
        if not chosen.include_expired and mode != "grep":
            chosen.include_expired, chosen.limit = True, 1
            if do_recall(context, query, chosen, mode):
                hint = " (an expired memory matches: add --include-expired to see it)"
        print(f"{data['note'] or 'no memories match the query'}{hint}", file=sys.stderr)
    else:
        if data["answer"] == "weak":
            print(f"memcli: note: {data['note']}", file=sys.stderr)
        if explain and not is_terminal():  # the title is not printed then: say on stderr what answered
            print(f"memcli: retriever: {answered}; answer: {data['answer']}", file=sys.stderr)
    if hits and explain:
        title = (f"recall {shown(query, full=False)} (retriever: {answered}; score = bm25 x importance x recency, "
                 "x coverage if partial; by tier)")
        columns = ["id", "match", "score", "bm25", "coverage", "importance", "recency", "text"]
        if answered != "lexical":
            columns.insert(5, "cosine")

        def cells(h: Hit) -> list[str]:
            out = [h.memory.id, h.match, f"{h.score:.3g}", f"{h.parts.get('bm25', 0):.3g}",
                   f"{h.parts.get('coverage', 0):.2f}", f"{h.parts.get('importance', 0):.2f}",
                   f"{h.parts.get('recency', 0):.3f}", one_line(h.memory.text, 60)]
            if answered != "lexical":
                out.insert(5, f"{h.parts['cosine']:.2f}" if "cosine" in h.parts else "-")
            return out
        table(title, columns, [cells(h) for h in hits], header=True)
    elif hits:
        table(f"recall {shown(query, full=False)}", ["id", "scope", "category", "status", "text"],
              [row(h.memory, context.now, bool(d["mayBeOutdated"])) for h, d in zip(hits, data["hits"])])


def context(query: str | None = None, budget: int | None = None, fmt: str = "text") -> None:
    """``memcli context``: print the block; never fails (problems become warnings, exit 0).

    Raises:
        UsageProblem: an unknown ``--format`` (a mistake in the hook's command line, exit 2).
    """
    from memcli.errors import MemcliError, UsageProblem

    if fmt not in ("text", "markdown", "json"):
        from memcli.text.secrets import shown

        raise UsageProblem(f"unknown --format {shown(fmt)}", hint="use text, markdown or json")
    try:
        from pathlib import Path

        from memcli.service.context import context as build

        opened = ctx(tolerant=True)  # never fails: a broken memcli.toml is a line in the block
        opened.bound()  # as a hook: answer within [hooks] deadline, build the rest in the background
        try:
            folder = Path.cwd()
        except OSError:  # the current folder was deleted: no paths relevance, still a block
            folder = None
        block = build(opened, query, budget, fmt, folder=folder)
        flush_warnings(opened)
    except MemcliError as err:
        from memcli.agents.context_block import Block

        warn(f"no context: {err.line()}")
        emit(Block("", [], 0).to_dict())
        return
    if not block.text and block.omitted:
        warn(f"the budget holds none of the {block.omitted} memories; raise --budget")
    emit(block.to_dict(), block.text or None)


def hook(agent: str, event: str) -> None:
    """``memcli hook AGENT EVENT``: answer on stdout in the agent's format, warnings on stderr; exit 0."""
    from memcli.agents.registry import get
    from memcli.cli.state import GLOBALS
    from memcli.cli.watchdog import GUARDED, LATE_NOTE, Watchdog
    from memcli.service.hooks import run_hook

    supported = get(agent).supported  # only this agent's module is imported
    if event not in supported:
        print(f"memcli: warning: {agent} has no {event!r} hook in memcli "
              f"(use {', '.join(supported)})", file=sys.stderr)
        return
    guard = None
    if event in GUARDED:  # the deadline holds even when the work cannot finish in time
        from memcli.config import Config
        from memcli.service import process_started

        late = get(agent).answer(event, LATE_NOTE if event == "session-start" else "")
        guard = Watchdog(late, process_started(), Config().hook_deadline)  # the default: no config read yet
    if guard is not None:
        guard.reading = True
    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    if guard is not None:
        guard.reading = False
    run = run_hook(agent, event, raw, GLOBALS.workspace, GLOBALS.actor, guard.move if guard else None)
    if guard is not None:
        guard.claim()
    for message in run.warnings:
        print(f"memcli: warning: {message}", file=sys.stderr)
    if os.environ.get("MEMCLI_DEBUG"):
        for text in run.tracebacks:
            sys.stderr.write(text)
    sys.stdout.write(run.stdout)
    if guard is not None:  # answered: no interpreter teardown (a tenth of a second under load)
        from memcli.cli.output import STATE

        STATE.fast_exit = True


def index_summary(data: dict) -> str:
    """The one-line text of ``index status``, ``index build`` and ``index rebuild``."""
    if data["backend"] == "background":
        return (f"index build started in the background (log: {data['log']})" if data["started"]
                else "memcli: could not start the background index build")
    if data["backend"] != "fts5":
        return f"index unavailable: serving {data['memories']} memories from the files"
    sync = data["last_sync"]
    state = ("" if data["complete"] else "; another memcli process is building it" if sync["busy"]
             else f"; {sync['pending']} files not indexed yet" if sync["pending"] > 0
             else "; not checked against the files yet")
    semantic = data.get("semantic")
    vectors = (f"; embedded {semantic['embedded']} ({semantic['vectors']['current']} of "
               f"{semantic['vectors']['memories']} memories have vectors of {semantic['model']})") if semantic else ""
    return (f"index {data['path']}: {data['memories']} memories, {data['problems']} unreadable files, "
            f"{data['bytes'] / 1e6:.1f} MB; this sync: {sync['added']} added, {sync['updated']} updated, "
            f"{sync['removed']} removed, {sync['moved']} moved, of {sync['files']} files{state}{vectors}")


def index_status() -> None:
    """``memcli index status``: sync, then print counts, size and freshness."""
    from memcli.service.read import index_status as status

    context = ctx()
    data = status(context)
    flush_warnings(context)
    emit(data, index_summary(data))


def version() -> None:
    """``memcli --version``."""
    from memcli import __version__

    emit({"version": __version__}, f"memcli {__version__}" if not STATE.json else None)
