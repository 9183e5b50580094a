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
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Run every gate and report, with the ids the real run "
                                                           "writes; write nothing.")] = False,
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
        table("import", ["outcome", "id", "read as", "source", "text"], [
            [i.outcome, i.id or "-", f"{i.category}/{i.importance}" if i.category else (i.gate or "-"),
             f"{i.source}:{i.line}", i.text or "(not shown)"] for i in result.items])
    emit(result.to_dict(), result.message())


@app.command()
def export(
    format_: Annotated[str, typer.Option(
        "--format", "-f", help="claude-md (default), agents-md, cursor (.cursor/rules/*.mdc, needs --dir) "
                               "or jsonl (lossless).")] = "claude-md",
    personal: Annotated[bool, typer.Option("--personal", help="Include your personal scopes (user:*, session:*) "
                                                             "in a Markdown export, marked as such.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Every status, expired memories too.")] = False,
    scope: Annotated[Optional[list[str]], typer.Option("--scope", "-s", help="Only these scopes; repeatable.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the main file to FILE, and memories "
                                                                         "with paths beside it (.claude/rules, nested "
                                                                         "AGENTS.md), not to stdout.")] = None,
    folder: Annotated[Optional[Path], typer.Option("--dir", "-d", help="Write the files into the project folder DIR "
                                                                      "(CLAUDE.md or AGENTS.md at its top); never "
                                                                      "over a file memcli did not write.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Export your memories as agents' rule files (paths kept) or JSON Lines.

    JSON Lines is lossless, for `memcli import`.

    Markdown bullets by category; with --dir or --output, memories with paths go to
    .claude/rules/*.md (paths:), the AGENTS.md of their folder, or .cursor/rules/*.mdc (globs:).
    """
    from memcli.errors import UsageProblem
    from memcli.service.rules import export_rules, write_export

    if output is not None and folder is not None:
        raise UsageProblem("--output and --dir cannot be used together", hint="give one of them")
    if folder is not None and format_ == "jsonl":
        raise UsageProblem("--format jsonl writes one file", hint="give it with --output FILE")
    context = ctx()
    result = export_rules(context, format_, all_, scope, personal, project=(output or folder) is not None)
    if result.left_out:
        context.warnings.append(f"left out {result.left_out} personal memories (user:*, session:*), since {format_} "
                                "files are usually shared; --personal includes them, marked")
    if result.unscoped and output is None and folder is None:
        context.warnings.append(f"{result.unscoped} memories with paths are written without them on stdout; --dir DIR "
                                "or --output FILE keeps their paths (claude-md in .claude/rules/*.md, agents-md in "
                                "the AGENTS.md of their folder, cursor in .cursor/rules/*.mdc)")
    elif result.unscoped:
        context.warnings.append(f"{result.unscoped} memories with paths are in the main file without them: {format_} "
                                "can only scope a folder (a nested AGENTS.md), and their globs name none")
    flush_warnings(context)
    if output is None and folder is None:
        emit({"format": format_, "output": None, "text": result.text}, result.text)
        return
    if folder:
        base = folder.resolve()
    elif output:
        base = output.parent.resolve()
    else:
        base = Path.cwd()
    written = write_export(result, base, output)
    files = [{"path": str(path), "memories": out.memories, "paths": out.paths} for path, out in written]
    emit({"format": format_, "output": str(output or folder), "files": files},
         "\n".join(f"exported ({format_}) {out.memories} memories to {path}"
                    + (f" for {', '.join(out.paths)}" if out.paths else "") for path, out in written))
