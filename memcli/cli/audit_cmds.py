"""Commands that read the audit trail: history and diff (``log`` and ``show --at`` live with the reads)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings, memory_ref
from memcli.cli.output import emit, one_line

#: Lines of a memory's text that ``diff`` prints under each change.
TEXT_LINES = 6


@app.command()
def history(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix (4+ characters).")],
    json_: JsonOpt = False,
) -> None:
    """Every version of one memory, oldest first (commit, time, actor, operation, status, what changed),
    and its supersede chain."""
    from memcli.service.audit import history as do_history
    from memcli.timeutil import format_instant

    context = ctx()
    result = do_history(context, memory_id)
    flush_warnings(context)
    lines = [f"history of {result.id}" + (f" ({result.current.scope}, {result.current.path})" if result.current
                                          else " (its file no longer exists)")]
    for v in result.versions:
        who = v.shown_actor() or "-"
        how = f"{v.op}" if v.op else ("edited by hand" if v.commit else "uncommitted")
        where = v.commit[:10] if v.commit else "uncommitted"
        lines.append(f"{where}  {format_instant(v.at)}  {who}  {how}  "
                     f"status {v.status}: {'; '.join(v.changes) or 'no change'}")
    if result.chain:
        lines.append("supersede chain (oldest first):")
        lines.append("  " + " → ".join(f"{link['id']} ({link['status']})" for link in result.chain))
        lines += [f"  {link['id']}: {one_line(link['text'])}" for link in result.chain if link["text"]]
    emit(result.to_dict(), "\n".join(lines))


@app.command()
def diff(
    revisions: Annotated[Optional[str], typer.Argument(
        metavar="[REV..REV]", help="FROM..TO, or REV (to the working tree); none: uncommitted changes.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Explain memory changes between two revisions in words: added, proposed, approved, rejected,
    superseded, archived, merged, restored, rolled back, undone, expired, edited by hand, deleted, moved."""
    from memcli.service.diff import diff as do_diff
    from memcli.timeutil import format_instant

    context = ctx()
    result = do_diff(context, revisions)
    flush_warnings(context)
    to = result.to_commit[:10] if result.to_commit else "the working tree"
    lines = [f"memory changes from {result.from_commit[:10]} ({format_instant(result.from_at)}) "
             f"to {to} ({format_instant(result.to_at)})"]
    if not result.changes:
        lines.append("no memory changed")
    for change in result.changes:
        lines.append(change.line())
        if change.old_text is not None and change.old_text != change.text:
            lines += [f"    - {line}" for line in change.old_text.splitlines()[:TEXT_LINES]]
            lines += [f"    + {line}" for line in change.text.splitlines()[:TEXT_LINES]]
        else:
            lines += [f"    {line}" for line in change.text.splitlines()[:TEXT_LINES]]
    if result.other_files:
        lines.append(f"other files changed: {', '.join(result.other_files)}")
    emit(result.to_dict(), "\n".join(lines))
