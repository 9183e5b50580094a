"""Commands that write from history: rollback, undo, purge."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings, memory_ref
from memcli.cli.output import emit, warn
from memcli.cli.write_cmds import _report


@app.command()
def rollback(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix of the memory.")],
    to: Annotated[Optional[str], typer.Option(
        "--to", help="Revision to restore (hash, branch, tag); default: the version before its latest change.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Restore a memory as it was at a revision, as a new commit; links on both sides follow."""
    from memcli.service.rollback import rollback as do_rollback

    context = ctx()
    _report(context, do_rollback(context, memory_id, to))


@app.command()
def undo(json_: JsonOpt = False) -> None:
    """Reverse the most recent memcli commit as a new commit (repeat to go further back)."""
    from memcli.service.rollback import undo as do_undo

    context = ctx(tolerant=True)
    result = do_undo(context)
    flush_warnings(context)
    emit(result.to_dict(), result.message)


@app.command()
def purge(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix of the memory.")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: the file is deleted for good.")] = False,
    history: Annotated[bool, typer.Option(
        "--history", help="Also remove it from every commit and commit message (rewrites git history).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Delete a memory's file for good (hard delete); --history also strips it from git history."""
    from memcli.errors import UsageProblem
    from memcli.service.purge import purge as do_purge

    if not yes:
        raise UsageProblem(f"purge deletes {memory_id[:40]}'s file for good and needs --yes",
                           hint=f"or archive it instead (soft, reversible) with `memcli forget {memory_id[:40]}`")
    context = ctx()
    result = do_purge(context, memory_id, history)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    emit(result.to_dict(), result.message)
