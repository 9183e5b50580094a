"""Commands that read: recall, list, show, review, log, context, doctor."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional, TypeVar

import typer

from memcli.cli import hot
from memcli.cli.app import JsonOpt, app, ctx, flush_warnings, memory_ref
from memcli.cli.output import emit, one_line, table

if TYPE_CHECKING:
    from memcli.model import Memory
    from memcli.service import Ctx
    from memcli.service.audit import ShownAt
    from memcli.service.read import Shown

F = TypeVar("F", bound=Callable[..., Any])

LimitF = Annotated[int, typer.Option("--limit", "-n", help="At most this many results (top-k).")]


def with_filters(**defaults: Any) -> Callable[[F], F]:
    """Give a command the read filters of ``memcli.filters.FILTERS`` as options, after its own
    and before ``--json``; the command takes them as keyword arguments (``**filters``).

    Args:
        defaults: a default per filter keyword where the command's differs (``limit=100``).
    """
    import inspect

    from memcli.filters import FILTERS

    hints: dict[str, Any] = {"list": Optional[list[str]], "str": Optional[str], "int": int, "flag": bool}
    added = [inspect.Parameter(f.keyword, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                               default=defaults.get(f.keyword, f.default),
                               annotation=Annotated[hints[f.kind], typer.Option(*f.options, help=f.help)])
             for f in FILTERS]

    def wrap(func: F) -> F:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
        last = [p for p in own if p.name == "json_"]
        setattr(func, "__signature__", inspect.Signature([*(p for p in own if p.name != "json_"), *added, *last]))
        return func
    return wrap


@app.command()
@with_filters(limit=hot.RECALL_LIMIT)
def recall(
    query: Annotated[list[str], typer.Argument(
        help="Words to search for, quoted or not (a regular expression with --grep).")],
    fuzzy: Annotated[bool, typer.Option("--fuzzy", help="Approximate matching (typos).")] = False,
    grep: Annotated[bool, typer.Option("--grep", help="Treat QUERY as a regular expression.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show each part of every score.")] = False,
    json_: JsonOpt = False, **filters: Any,
) -> None:
    """Search memories in your scopes: ranked (BM25, importance, recency) by default, --fuzzy or --grep."""
    hot.recall(" ".join(query), fuzzy=fuzzy, grep=grep, explain=explain, **filters)


@app.command("list")
@with_filters(limit=100)
def list_(json_: JsonOpt = False, **filters: Any) -> None:
    """List memories in your scopes, newest first (active and unexpired unless told otherwise)."""
    from memcli.service.read import list_memories

    context = ctx()
    memories = list_memories(context, hot.filters(**filters))
    flush_warnings(context)
    emit({"memories": [m.to_dict(context.now) for m in memories]})
    if not _json():
        table("memories", ["id", "scope", "category", "status", "text"], [hot.row(m, context.now) for m in memories])


@app.command()
def show(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix (4+ characters).")],
    at: Annotated[Optional[str], typer.Option("--at", metavar="REV",
                                              help="Show the memory as it was at this git revision.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Show one memory, whatever its status; expired and superseded ones are marked. --at REV: a past version."""
    context = ctx()
    shown: ShownAt | Shown
    if at is not None:
        from memcli.service.audit import show_at

        shown = show_at(context, memory_id, at)
        revision = [f"# as of {at} (commit {shown.commit[:10]}, {shown.to_dict()['revision']['at']})"]
    else:
        from memcli.service.read import show as do_show

        shown = do_show(context, memory_id)
        revision = []
    flush_warnings(context)
    memory = shown.memory
    notes = [*revision, f"# status: {memory.status}" + (" (expired)" if shown.expired else "")]
    if memory.superseded_by:
        notes.append(f"# superseded by: {', '.join(memory.superseded_by)}")
    if memory.supersedes:
        notes.append(f"# supersedes: {', '.join(memory.supersedes)}")
    notes.append(f"# file: {memory.path}")
    by_hand = getattr(shown, "by_hand", None)
    if by_hand is not None:  # the provenance names who wrote it through memcli, not who edited it since
        notes.append(f"# changed by hand since memcli wrote it: commit {by_hand['commit'][:10]} by "
                     f"{by_hand['author']} ({by_hand['at']}); `memcli history {memory.id}` shows each version"
                     if by_hand["commit"] else
                     f"# changed by hand since memcli wrote it, not committed yet: `git diff -- {memory.path}`")
    emit(shown.to_dict(), "\n".join(notes) + "\n" + shown.raw)


@app.command()
def review(
    stale: Annotated[bool, typer.Option(
        "--stale", help="List the active memories whose code moved (what `memcli stale` finds) instead: "
                        "each needs a person to confirm or supersede it.")] = False,
    json_: JsonOpt = False,
) -> None:
    """List memories waiting for review, with their provenance (--stale: memories whose code moved)."""
    from memcli.service import arrival
    from memcli.service.read import review_queue

    context = ctx()
    if stale:
        _review_stale(context)
        return
    pending = review_queue(context)
    held = arrival.entries(context)  # review_queue's read has verified what arrived
    flush_warnings(context)
    emit({"pending": [m.to_dict(context.now) for m in pending], "quarantined": [e.__dict__ for e in held]})
    if not _json():
        for entry in held:
            print(f"memcli: quarantined on arrival (not served): {entry.line()}", file=sys.stderr)
        if held:
            print("memcli: `memcli quarantine accept ID` serves it as it is (your commit records that), "
                  "`memcli quarantine revert ID` puts it back as it was", file=sys.stderr)
        if not pending:
            print("nothing waits for review", file=sys.stderr)
            return
        table("pending review", ["id", "scope", "source", "actor", "run", "guards", "text"], [
            [m.id, m.scope, m.provenance.source_type, m.provenance.actor, m.provenance.run_id or "",
             # what approving it would enforce (newcomer fault, stop 33: a `deny Bash(git:*)` read as harmless)
             "; ".join(f"{k} {p}" for g in m.guards for k, p in g.items()), one_line(m.text)] for m in pending])
        print("memcli: approve with `memcli approve ID`, reject with `memcli reject ID --reason ...`; "
              "`memcli check` in CI enforces that a second person (by git author) approves", file=sys.stderr)


def _review_stale(context: Ctx) -> None:
    """``review --stale``: the verdicts of ``memcli stale`` (judged again where the code or the
    memory changed) as a review list, with the replacements proposed for each."""
    from memcli.service.redact import for_reader
    from memcli.service.stale import to_review

    report, found = to_review(context)
    flush_warnings(context)
    shown = {m.id: m for m in for_reader(context, [m for _, m, _ in found])}  # secrets cut out, as every read

    def proposal(m: Memory) -> dict:
        return {"id": m.id, "actor": m.provenance.actor, "source": m.provenance.source_type}

    emit({"stale": [{**v.to_dict(), "scope": m.scope, "text": shown[m.id].text,
                     "proposed": [proposal(p) for p in proposed]} for v, m, proposed in found],
          "head": report.head})
    if _json():
        return
    if not found:
        print("no active memory is outdated by the code" + (f" at {report.head[:10]}" if report.head else ""),
              file=sys.stderr)
        return
    table("may be outdated", ["id", "scope", "why", "proposed", "text"],
          [[v.id, m.scope, "; ".join(r.line() for r in v.reasons),
            ", ".join(f"{p.id} ({p.provenance.actor})" for p in proposed), one_line(shown[m.id].text)]
           for v, m, proposed in found])
    print("memcli: after checking one against the code, `memcli confirm ID` re-anchors it and "
          "`memcli supersede ID TEXT` replaces it; a proposed replacement is read with `memcli show ID` "
          "and approved with `memcli approve ID` (or rejected with `memcli reject ID --reason ...`)", file=sys.stderr)


@app.command()
def log(
    memory_id: Annotated[Optional[str], typer.Argument(
        metavar="[ID]", callback=memory_ref, help="Only commits about this memory.")] = None,
    limit: LimitF = 50, json_: JsonOpt = False,
) -> None:
    """The audit trail: memcli's commits, newest first (time, operation, memory, scope, actor, run, commit, text)."""
    from memcli.service.read import log as do_log

    context = ctx()
    entries = do_log(context, memory_id, limit)
    flush_warnings(context)
    emit({"entries": [e.to_dict() for e in entries]})
    if not _json():
        table("memcli log", ["time", "op", "id", "scope", "actor", "run", "commit", "text"], [
            [e.at, e.trailers.get("op", ""), e.trailers.get("id", ""), e.trailers.get("scope", ""),
             e.shown_actor(), e.trailers.get("run", ""), e.commit[:10],
             one_line(e.text.splitlines()[0] if e.text else "", 80)] for e in entries])


@app.command()
def context(
    query: Annotated[Optional[str], typer.Option("--query", "-q", help="Pull memories about this forward.")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Characters at most (default 8000).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text, markdown or json.")] = "text",
    json_: JsonOpt = False,
) -> None:
    """Print the context block for an agent's session. Never fails: problems go to stderr, exit 0."""
    hot.context(query, budget, fmt)


@app.command()
def doctor(
    fix: Annotated[bool, typer.Option("--fix", help="Write the documented defaults into hand-written files "
                                      "that lack them, in one commit.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Report memory files that cannot be served (path, line, reason); --fix writes missing defaults in.

    Exit 11 if any file cannot be served (such files are never rewritten); exit 6 if a file holds
    a secret (with --fix, such a file is left unfixed); else exit 3 if memcli.toml does not load
    (memcli then works by its last committed version that loads, and the report says so). With
    --fix, files with uncommitted edits are skipped and listed (exit 0): commit or discard the
    edits, then run it again."""
    from memcli.service import doctor as service

    context = ctx(tolerant=True)
    report = service.fix(context) if fix else service.check(context)
    problems = report.problems
    fixed_lines = [f"fixed {f.path}: wrote {', '.join(f.added)}" for f in report.fixed]
    fixed_lines += [f"not fixed {path}: {reason}" if fix else
                    f"{path}: holds a secret ({reason}); agents see it redacted: remove it from the file"
                    for path, reason in report.refused]
    fixed_lines += [f"skipped {path}: {reason}" for path, reason in report.skipped]
    problem_lines = [f"{p.path}:{p.lineno}: {p.reason}" if p.lineno else f"{p.path}: {p.reason}" for p in problems]
    data: dict[str, Any] = {"problems": [{"path": p.path, "line": p.lineno, "reason": p.reason} for p in problems],
            "repository": report.repository}
    fixed_lines = [f"repository: {line}" for line in report.repository] + report.moved + fixed_lines
    data["personal"] = report.moved
    data["semantic"] = service.semantic(context)
    data["stale"] = service.stale_ids(context)
    data["staleBehind"] = service.stale_behind(context)
    if not fix:  # files holding a secret (refused by --fix below)
        data["secrets"] = [{"path": path, "reason": reason} for path, reason in report.refused]
    if fix:
        data.update(fixed=[f.to_dict() for f in report.fixed],
                    refused=[{"path": path, "reason": reason} for path, reason in report.refused],
                    skipped=[{"path": path, "reason": reason} for path, reason in report.skipped],
                    commit=report.commit)
    emit(data, "\n".join(fixed_lines + problem_lines) or None)
    if not _json():
        if fix:
            count = len(report.fixed)
            done = f"wrote defaults into {count} file{'' if count == 1 else 's'}" + (
                f" (commit {report.commit[:10]})" if report.commit else "") if report.fixed else (
                "no defaults to write" if report.moved else "nothing to fix")
            if report.skipped:
                count = len(report.skipped)
                done += f"; {count} file{'' if count == 1 else 's'} with uncommitted edits skipped"
            print(f"memcli: {done}", file=sys.stderr)
        if not problems:
            print("all memory files are readable" + (
                f"; {len(report.refused)} hold{'s' if len(report.refused) == 1 else ''} a secret"
                if report.refused else ""), file=sys.stderr)
        print(service.semantic_line(data["semantic"]), file=sys.stderr)
        if data["stale"]:
            count = len(data["stale"])
            print(f"memcli: {count} active memor{'y' if count == 1 else 'ies'} may be outdated (the code "
                  f"{'it names' if count == 1 else 'they name'} moved): `memcli stale` lists the evidence, "
                  "`memcli confirm ID` or `memcli supersede ID TEXT` mends each", file=sys.stderr)
        if data["staleBehind"]:
            print("memcli: the code moved since memories were last judged against it (or they never were): "
                  "`memcli stale` judges them now", file=sys.stderr)
    if problems or report.refused:
        raise typer.Exit(11 if problems else 6)
    if context.ws.config.broken:
        from memcli.errors import WorkspaceInvalid

        raise typer.Exit(WorkspaceInvalid.exit_code)


def _json() -> bool:
    from memcli.cli.output import STATE

    return STATE.json
