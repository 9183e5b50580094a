"""Team commands: ``sync`` with a git remote, ``check`` for CI, and git's merge driver."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit


@app.command()
def sync(
    remote: Annotated[Optional[str], typer.Argument(help="The git remote (default: the branch's upstream, "
                                                         "else the only remote, else origin).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing when it succeeds (for hooks).")] = False,
    deadline: Annotated[Optional[float], typer.Option(
        "--deadline", min=0.1, help="Seconds the whole sync may take; past it, stop cleanly (for hooks).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Fetch, merge (memory files field by field) and push the store; never force-pushes."""
    from memcli.service.sync import sync as do_sync

    context = ctx()
    result = do_sync(context, remote, deadline)
    flush_warnings(context)
    emit(result.to_dict(), None if quiet else result.message())


@app.command()
def check(
    range_: Annotated[Optional[str], typer.Argument(
        metavar="[REV..REV]", help="Commits to check (default: every memory file at HEAD).")] = None,
    staged: Annotated[bool, typer.Option("--staged", help="Check the staged changes (for pre-commit).")] = False,
    stale: Annotated[bool, typer.Option(
        "--stale", help="Also fail on active memories the range's code commits made outdated (files renamed "
                        "or deleted, identifiers or targets removed); without a range, on any outdated at HEAD.")]
    = False,
    json_: JsonOpt = False,
) -> None:
    """Check changed memory files for CI: valid, secret-free, safely named, approved by another author."""
    from memcli.service.check import check as do_check
    from memcli.service.check import raise_if_failed

    context = ctx()
    result = do_check(context, range_, staged, stale)
    flush_warnings(context)
    if result.problems and not json_:
        for problem in result.problems:
            print(f"memcli: {problem.line()}", file=sys.stderr)
    if result.problems and json_:
        from memcli.cli.output import STATE

        STATE.warnings.extend(p.line() for p in result.problems)
    if not result.problems:
        emit(result.to_dict(), f"ok: {result.files} memory files checked ({result.range})")
    raise_if_failed(result)


@app.command("merge-file", hidden=True)
def merge_file(
    base: Annotated[Path, typer.Argument()], ours: Annotated[Path, typer.Argument()],
    theirs: Annotated[Path, typer.Argument()], path: Annotated[str, typer.Argument()] = "",
) -> None:
    """git's merge driver for memory files (%O %A %B %P); registered by `memcli init`."""
    from memcli.service.sync import merge_driver

    result = merge_driver(base, ours, theirs, path or str(ours))
    for line in result.lines:
        print(line, file=sys.stderr)
    raise typer.Exit(0 if result.merged else 16)
