"""Commands about memories whose code moved: stale and confirm (SPEC.md section 11)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit, one_line

#: How many memories of the weaker list (files changed since) the text output shows; --json has all.
CHANGED_SHOWN = 20


@app.command()
def stale(
    memory_ids: Annotated[Optional[list[str]], typer.Argument(
        metavar="[ID]...", help="Ids or unique prefixes; default: every active memory.")] = None,
    refresh: Annotated[bool, typer.Option(
        "--refresh", help="Judge every memory again, not only those changed since the last run.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Print nothing; only update the verdicts the reads show.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Memories whose code moved since they were written: files renamed or deleted, paths that
    match nothing, identifiers and make/just/npm targets that are gone (with the commit); apart,
    the weaker news: files they name changed in N commits since."""
    from memcli.service.stale import verdicts

    context = ctx()
    report = verdicts(context, memory_ids or None, refresh=refresh)
    flush_warnings(context)
    if quiet:
        return
    found = report.stale()
    lines = []
    if report.head is None:
        lines.append("no code commit to compare with: memories are anchored to the code repository's HEAD "
                     "(a store with no code has nothing to go stale)")
    for verdict in found:
        memory = context.resolve(verdict.id).memory
        lines.append(f"{verdict.id}  {one_line(memory.text)}")
        lines += [f"  {reason.line()}" for reason in verdict.reasons]
    changed = report.changed()
    if changed:
        lines.append(f"changed since written (weaker: the files they name were edited; they may still hold)"
                     f"{f', the {CHANGED_SHOWN} most touched' if len(changed) > CHANGED_SHOWN else ''}:")
        for verdict in changed[:CHANGED_SHOWN]:
            lines.append(f"{verdict.id}  " + "; ".join(c.line() for c in verdict.changes[:3])
                         + (f" (+{len(verdict.changes) - 3} more)" if len(verdict.changes) > 3 else ""))
    checked = len(report.verdicts)
    noun = "memory" if checked == 1 else "memories"
    lines.append(f"{len(found)} of {checked} active {noun} may be outdated"
                 + (f", {len(changed)} more name files changed since" if changed else "")
                 + (f" (code at {report.head[:10]})" if report.head else "")
                 + ("; after checking one, `memcli confirm ID` re-anchors it, `memcli supersede ID TEXT` "
                    "replaces it" if found else ""))
    emit(report.to_dict(), "\n".join(lines))


@app.command()
def confirm(
    memory_ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="Ids or unique prefixes of the memories you checked.")],
    json_: JsonOpt = False,
) -> None:
    """Re-anchor memories you checked against today's code (one commit), so `stale` drops them."""
    from memcli.cli.write_cmds import _report
    from memcli.service.write import confirm as do_confirm

    context = ctx()
    _report(context, do_confirm(context, memory_ids))
