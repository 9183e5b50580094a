"""``compact``: consolidate the workspace (a plan, or one commit with --apply), or a session transcript."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit

if TYPE_CHECKING:
    from memcli.service import Ctx


@app.command()
def compact(
    apply: Annotated[bool, typer.Option("--apply", help="Make the changes, in one commit (default: print the plan).")]
    = False,
    scope: Annotated[Optional[list[str]], typer.Option("--scope", "-s", help="Only these scopes; repeatable.")] = None,
    transcript: Annotated[Optional[Path], typer.Option(
        "--transcript", help="Compact this session transcript (.jsonl) into one summary memory.")] = None,
    keep_recent: Annotated[int, typer.Option(
        "--keep-recent", help="With --transcript: the last N messages the summary quotes as they are.")] = 10,
    summarizer: Annotated[Optional[str], typer.Option(
        "--summarizer", help="With --transcript: a command that reads the text on stdin and prints the summary.")]
    = None,
    summarizer_timeout: Annotated[float, typer.Option(
        "--summarizer-timeout", help="Seconds the --summarizer command may take.")] = 60.0,
    json_: JsonOpt = False,
) -> None:
    """Consolidate memories: archive the expired, retire old superseded/rejected ones, merge duplicates.

    With --transcript, summarise one session into a summary memory instead (written at once).
    """
    from memcli.errors import UsageProblem

    if transcript is not None and scope:
        raise UsageProblem("--scope does not apply to --transcript: the summary goes to session:<id>",
                           hint="drop --scope")
    if transcript is None and (summarizer is not None or keep_recent != 10 or summarizer_timeout != 60.0):
        raise UsageProblem("--keep-recent, --summarizer and --summarizer-timeout need --transcript",
                           hint="add --transcript SESSION.jsonl")
    context = ctx()
    if transcript is not None:
        _session(context, transcript, keep_recent, summarizer, summarizer_timeout)
    else:
        _workspace(context, scope, apply)


def _workspace(context: Ctx, scope: list[str] | None, apply: bool) -> None:
    """Plan (or apply) the consolidation of the workspace's memories; see ``memcli.service.compact``."""
    from memcli.service.compact import compact as do_compact

    result = do_compact(context, scope, apply)
    flush_warnings(context)
    emit(result.to_dict(), "\n".join(result.lines()))


def _session(context: Ctx, transcript: Path, keep_recent: int, summarizer: str | None, timeout: float) -> None:
    """Summarise one session transcript into a ``summary`` memory; see ``memcli.service.session``."""
    from memcli.cli.output import warn
    from memcli.service.session import compact_session

    result = compact_session(context, transcript, keep_recent=keep_recent, summarizer=summarizer, timeout=timeout)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    emit(result.to_dict(context.now), result.message())
