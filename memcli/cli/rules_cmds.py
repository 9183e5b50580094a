"""Commands that move memories in and out of agents' rule files: import, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import STATE, emit, table, warn


@app.command("import")
def import_(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        metavar="PATH...", help="Rule files, or folders holding them (CLAUDE.md, AGENTS.md, .cursor/rules, .github, "
                                ".claude/rules), JSON Lines from `memcli export --format jsonl`, or an agent's own "
                                "memory store (~/.claude/projects/<project>/memory, ~/.codex/memories_v2, "
                                "~/.gemini/GEMINI.md, ~/.gemini/tmp/<project>/memory).")] = None,
    agent: Annotated[Optional[str], typer.Option(
        "--agent", "-a", help="Import the memory store this agent keeps for the current project: claude, codex or "
                              "gemini.")] = None,
    scope: Annotated[Optional[str], typer.Option(
        "--scope", "-s", help="Scope for rule items (default: the write scope; user:YOU for CLAUDE.local.md); for an "
                              "agent's store: default user:YOU (active), a shared scope waits for review.")] = None,
    apply_changes: Annotated[bool, typer.Option(
        "--apply-changes", help="Agent stores: apply the edits (as supersedes) and deletions (as forgets) the agent "
                                "made since the last import; without it they are listed as offers.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Run every gate and report, with the ids the real run "
                                                           "writes; write nothing.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Import agents' rule files, JSON Lines or an agent's own memories through the write gates; a repeat is a no-op."""
    from memcli.agents import memstores
    from memcli.errors import UsageProblem

    given = list(paths or [])
    if agent is None and not given:
        raise UsageProblem("give the files or folders to import, or --agent claude|codex|gemini",
                           hint="e.g. `memcli import CLAUDE.md` or `memcli import --agent claude`")
    if agent is not None and given:
        raise UsageProblem("give PATH... or --agent, not both", hint="--agent finds the store of the current project")
    stores = [p for p in given if memstores.looks_like_store(p)]
    for path in given:
        if path not in stores and memstores.in_agent_home(path):
            memstores.recognise(path)  # raises UnknownStore: one line, exit 2, nothing written
    if agent is not None or stores:
        if stores and len(stores) != len(given):
            raise UsageProblem("agent memory stores and rule files are imported in separate runs",
                               hint="import the stores first, then the rule files")
        _import_stores(agent, given, scope, apply_changes, dry_run)
        return
    if apply_changes:
        raise UsageProblem("--apply-changes is for an agent's memory store", hint="a rule file's import is a no-op "
                                                                                 "when repeated")
    from memcli.service.import_export import import_rules

    context = ctx()
    result = import_rules(context, given, scope, apply=not dry_run)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    if not STATE.json:
        table("import", ["outcome", "id", "read as", "source", "text"], [
            [i.outcome, i.id or "-", f"{i.category}/{i.importance}" if i.category else (i.gate or "-"),
             f"{i.source}:{i.line}", i.text or "(not shown)"] for i in result.items])
    emit(result.to_dict(), result.message())


def _import_stores(agent: str | None, given: list[Path], scope: str | None, apply_changes: bool,
                   dry_run: bool) -> None:
    """``import`` of agents' own memory stores (``service.agent_memory``)."""
    import shlex

    from memcli.agents import memstores
    from memcli.service.agent_memory import import_stores, stores_for

    stores = stores_for(agent) if agent is not None else [memstores.recognise(p) for p in given]
    command = f"memcli import --agent {agent}" if agent else "memcli import " + " ".join(shlex.quote(str(p))
                                                                                        for p in given)
    if scope:
        command += f" --scope {shlex.quote(scope)}"
    context = ctx()
    result = import_stores(context, stores, scope, apply=not dry_run, apply_changes=apply_changes, command=command)
    flush_warnings(context)
    for message in result.warnings:
        warn(message)
    if not STATE.json:
        for store in result.stores:
            for file, why in store.skipped:
                warn(f"{store.root}/{file}: {why}")
        table("import", ["outcome", "id", "read as", "sourceRef", "text"], [
            [i.outcome + (f" ({i.change})" if i.change else ""), i.id or "-", i.category or "-",
             f"{i.source}:{i.line}", i.text or "(not shown)"] for i in result.items])
    emit(result.to_dict(), result.message())


@app.command()
def share(
    ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Your personal memories (user:YOU) to propose.")],
    scope: Annotated[str, typer.Option("--scope", "-s", help="The shared scope to propose them to.")] = "project",
    json_: JsonOpt = False,
) -> None:
    """Propose personal memories to a shared scope, waiting for review (provenance kept, linked to the original)."""
    from memcli.service.agent_memory import share as share_memories

    context = ctx()
    result = share_memories(context, ids, scope)
    flush_warnings(context)
    failed = [done for _, done in result.results if not hasattr(done, "outcome")]
    if failed and len(failed) == len(result.results):
        raise failed[0]  # nothing was shared: the first reason, and its exit status
    emit({"scope": scope, "results": [
        {"ref": ref, "error": done.line()} if not hasattr(done, "outcome") else
        {"ref": ref, "outcome": done.outcome, "id": done.memory.id, "status": done.memory.status,
         "message": done.message} for ref, done in result.results]}, result.message())


@app.command()
def export(
    format_: Annotated[str, typer.Option(
        "--format", "-f", help="claude-md (default), agents-md, cursor (.cursor/rules/*.mdc, needs --dir), "
                               "jsonl (lossless), or into an agent's own memory: claude-memory (the project's "
                               "auto-memory folder), gemini-memory (the project's ~/.gemini/tmp/<id>/memory/MEMORY.md; "
                               "--all-projects memories in ~/.gemini/GEMINI.md).")] = "claude-md",
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
    from memcli.service.import_export import export_rules, write_export

    if output is not None and folder is not None:
        raise UsageProblem("--output and --dir cannot be used together", hint="give one of them")
    from memcli.service.agent_memory import NATIVE_FORMATS

    if format_ in NATIVE_FORMATS:
        if output is not None or personal or all_:
            raise UsageProblem(f"--format {format_} writes into the agent's own memory: --output, --personal and "
                               "--all do not apply", hint="give --scope to choose the scopes, --dir the project")
        from memcli.service.agent_memory import export_native

        context = ctx()
        done = export_native(context, format_, scope, folder)
        flush_warnings(context)
        emit(done.to_dict(), done.message())
        return
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
