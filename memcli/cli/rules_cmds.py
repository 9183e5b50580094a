"""Commands that move memories in and out of agents' rule files: import, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import STATE, emit, table, warn


@app.command("import")
def import_(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH...", help="Rule files, or folders holding them (CLAUDE.md, AGENTS.md, .cursor/rules, .github, "
                                ".claude/rules), or JSON Lines from `memcli export --format jsonl`.")],
    scope: Annotated[Optional[str], typer.Option(
        "--scope", "-s", help="Scope for rule items (default: the write scope; user:YOU for CLAUDE.local.md).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Run every gate and report; write nothing.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Import agents' rule files (or JSON Lines) through the write gates, in one commit; a repeat is a no-op."""
    from memcli.service.rules import import_rules

    context = ctx()
    result = import_rules(context, paths, scope, apply=not dry_run)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    if not STATE.json:
        table("import", ["outcome", "id", "source", "text"], [
            [i.outcome, i.id or "-", f"{i.source}:{i.line}", i.text or "(not shown)"] for i in result.items])
    emit(result.to_dict(), result.message())


@app.command()
def export(
    format_: Annotated[str, typer.Option("--format", "-f", help="claude-md (default), agents-md or jsonl (lossless).")] = "claude-md",
    personal: Annotated[bool, typer.Option("--personal", help="Include your personal scopes (user:*, session:*) "
                                                             "in a Markdown export, marked as such.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Every status, expired memories too.")] = False,
    scope: Annotated[Optional[list[str]], typer.Option("--scope", "-s", help="Only these scopes; repeatable.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE, not stdout.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Export your memories as CLAUDE.md/AGENTS.md bullets by category, or as JSON Lines for import."""
    from memcli.errors import UsageProblem
    from memcli.service.rules import export_rules
    from memcli.store.files import atomic_write

    context = ctx()
    text, left_out = export_rules(context, format_, all_, scope, personal)
    if left_out:
        context.warnings.append(f"left out {left_out} personal memories (user:*, session:*), since {format_} files "
                                "are usually shared; --personal includes them, marked")
    flush_warnings(context)
    if output is None:
        emit({"format": format_, "output": None, "text": text}, text)
        return
    try:
        atomic_write(output.resolve(), text.encode("utf-8"))
    except OSError as err:
        raise UsageProblem(f"cannot write {output}: {err.strerror or err}", hint="give a writable --output path") \
            from None
    emit({"format": format_, "output": str(output)}, f"exported ({format_}) to {output}")
