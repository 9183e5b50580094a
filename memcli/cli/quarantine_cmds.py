"""The ``quarantine`` command group: what arrived by a pull and failed the rules (issue 22 point 1)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit

quarantine_app = typer.Typer(help="Changes a pull brought that failed memcli's rules: kept in git, never served.",
                             no_args_is_help=True)
app.add_typer(quarantine_app, name="quarantine")

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The quarantine id (qXXXXXXXX, or 4+ of its characters).")]


@quarantine_app.command("list")
def list_(json_: JsonOpt = False) -> None:
    """List the quarantined changes with the rule each broke (verifies what arrived first)."""
    from memcli.service import arrival

    context = ctx(tolerant=True)  # a memcli.toml that does not load: mend it from here
    context.catalog()  # a read: verifies what arrived since the last one
    found = arrival.entries(context)
    flush_warnings(context)
    lines = [e.line() for e in found]
    emit({"quarantined": [e.__dict__ for e in found]},
         "\n".join(lines) if lines else None)
    if not found:
        print("nothing is quarantined", file=sys.stderr)


@quarantine_app.command("accept")
def accept(ref: IdArg, json_: JsonOpt = False) -> None:
    """Accept a quarantined change as it is (a person's commit records it); it is served again."""
    from memcli.service import arrival

    context = ctx(tolerant=True)  # a memcli.toml that does not load: mend it from here
    entry, commit = arrival.accept(context, ref)
    flush_warnings(context)
    emit({"accepted": entry.__dict__, "commit": commit},
         f"accepted {entry.id} ({entry.path}) in commit {commit[:12]}; it is served again")


@quarantine_app.command("revert")
def revert(ref: IdArg, json_: JsonOpt = False) -> None:
    """Put the quarantined change's files back as they were before it arrived, in one commit."""
    from memcli.service import arrival

    context = ctx(tolerant=True)  # a memcli.toml that does not load: mend it from here
    entry, commit = arrival.revert(context, ref)
    flush_warnings(context)
    count = len(entry.paths or [entry.path])
    emit({"reverted": entry.__dict__, "commit": commit},
         f"reverted {entry.id}: {count} file{'s' if count != 1 else ''} back as commit {entry.before[:12]} had "
         f"{'them' if count != 1 else 'it'}" + (f", in commit {commit[:12]}" if commit else ""))
