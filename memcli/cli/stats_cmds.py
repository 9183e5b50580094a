"""``memcli stats``: counts, expiring memories, index freshness, command latencies."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import STATE, emit, is_terminal, table


def _section(title: str, columns: list[str], rows: list[list[str]]) -> None:
    """One section: a rich table on a terminal; else a ``# title: columns`` line and tab-separated rows."""
    if not is_terminal():
        named = [c for c in columns if c]
        sys.stdout.write(f"# {title}" + (f": {', '.join(named)}" if named else "") + "\n")
    table(title, columns, rows)


@app.command()
def stats(
    days: Annotated[int, typer.Option("--days", help="List active memories expiring within this many days.")] = 7,
    memories: Annotated[bool, typer.Option(
        "--memories", help="Per memory: sessions injected into, deliveries at tool time, guard denials, asks and "
                           "violations (from your own hook events only).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Counts by scope, status and category; what expires soon; index freshness; command latencies;
    how the hooks used the memories (your sessions only)."""
    from memcli.service.stats import stats as gather

    context = ctx()
    result = gather(context, days)
    flush_warnings(context)
    emit(result.to_dict())
    if STATE.json:
        return
    if memories:
        _section("memories (your sessions)", ["id", "scope", "sessions", "injected", "delivered", "denied", "asked",
                                              "violated", "last used"],
                 [[r["id"], r["scope"], *(str(r[k]) for k in ("sessions", "injected", "delivered", "denied", "asked",
                                                               "violated")), r["lastUsed"] or ""]
                  for r in result.per_memory])
        return
    _section("totals", ["", ""], [["memories you may see", str(result.total)],
                                  ["pending review", str(result.pending_review)],
                                  ["active but expired", str(result.expired)],
                                  ["unreadable files", str(result.unreadable)],
                                  ["may be outdated (memcli stale)", str(result.stale)]])
    for title, counts in (("by scope", result.by_scope), ("by status", result.by_status),
                          ("by category", result.by_category)):
        _section(title, [title.split()[-1], "memories"], [[k, str(v)] for k, v in counts.items()])
    _section(f"expiring within {result.days} days", ["id", "scope", "expireAt"],
             [[e["id"], e["scope"], e["expireAt"]] for e in result.expiring])
    index = result.index
    if index.get("backend") == "fts5":
        change = index.get("last_change") or {}
        rows = [["backend", "fts5"], ["documents", str(index["memories"])], ["files", str(index["files"])],
                ["last change", change.get("at", "never")],
                ["files changed then", str(change.get("files", 0))]]
    else:
        rows = [["backend", "scan (index unavailable)"], ["documents", str(index.get("memories", 0))]]
    _section("index", ["", ""], rows)
    _section("hooks (your sessions)", ["", ""], [[k, str(v)] for k, v in result.usage.items()])
    _section(f"latencies (last {result.events} commands)", ["command", "runs", "median ms", "p95 ms", "max ms"],
             [[name, str(v["count"]), f"{v['median_ms']:.0f}", f"{v['p95_ms']:.0f}", f"{v['max_ms']:.0f}"]
              for name, v in result.latencies.items()])
