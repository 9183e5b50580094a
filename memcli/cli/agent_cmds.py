"""Commands for agents' sessions: extract."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from memcli.agents.registry import transcript_formats
from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit, one_line, warn

#: What each agent's transcript is called (``Agent.transcript_label`` without its place).
_LABELS = [label.split(" (")[0] for label in transcript_formats().values()]
_KINDS = ", ".join(_LABELS[:-1]) + f" or {_LABELS[-1]}" if len(_LABELS) > 1 else "".join(_LABELS)


@app.command()
def extract(
    transcript: Annotated[Path, typer.Argument(
        metavar="TRANSCRIPT", help=f"A session file: {_KINDS}.")],
    apply: Annotated[bool, typer.Option("--apply", help="Write the accepted candidates, in one commit.")] = False,
    scope: Annotated[Optional[str], typer.Option(
        "--scope", "-s", help="Where they go (default: [scopes] write).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Find memories in what the user typed in a session, through the write gates; a dry run unless --apply."""
    from memcli.service.extract import extract as do_extract

    context = ctx()
    result = do_extract(context, transcript, apply=apply, scope=scope)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    lines = [f"{c.message}\t{c.category}/{c.importance}\t{one_line(c.text)}" for c in result.candidates]
    emit(result.to_dict(), "\n".join([*lines, result.message()]))
