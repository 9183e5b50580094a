"""``memcli stats``: counts, what expires soon, index freshness and command latencies.

Counts cover every memory the caller may see (``Ctx.may_see``: other users' ``user:*``
scopes are left out), whatever its status. Latencies come from the workspace's event log
(``memcli.store.events``), over its newest ``EVENTS_WINDOW`` events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memcli.errors import ValidationFailed
from memcli.model import STATUSES, Memory
from memcli.service import Ctx
from memcli.timeutil import format_instant, shift_clamped

#: Latencies are computed over this many of the newest events.
EVENTS_WINDOW = 1000
#: ``--days`` accepts 0 to this many days.
MAX_DAYS = 36_500


@dataclass
class Stats:
    """What ``memcli stats`` reports; :meth:`to_dict` is the ``--json`` data.

    Attributes:
        days: the look-ahead window of ``expiring``, in days.
        total: memories the caller may see, all statuses.
        by_scope, by_status, by_category: counts of those memories.
        expiring: active memories whose ``expireAt`` falls within ``days`` from now, soonest first.
        expired: active memories already past their ``expireAt`` (no longer served).
        pending_review: memories waiting in ``pending_review``.
        unreadable: memory files that cannot be served, outside other users' personal folders
            (``memcli doctor`` lists them).
        stale: active memories the last ``memcli stale`` found outdated (their code moved).
        index: the index's status (see ``service.read.index_status``).
        latencies: per command: ``count``, ``median_ms``, ``p95_ms``, ``max_ms``.
        events: how many events the latencies were computed from.
    """

    days: int
    total: int = 0
    by_scope: dict[str, int] = field(default_factory=dict)
    by_status: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, int] = field(default_factory=dict)
    expiring: list[dict[str, str]] = field(default_factory=list)
    expired: int = 0
    pending_review: int = 0
    unreadable: int = 0
    stale: int = 0
    index: dict[str, Any] = field(default_factory=dict)
    latencies: dict[str, dict[str, float]] = field(default_factory=dict)
    events: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    per_memory: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase keys, like the memory records)."""
        return {"memories": self.total, "byScope": self.by_scope, "byStatus": self.by_status,
                "byCategory": self.by_category, "expiringWithinDays": self.days, "expiring": self.expiring,
                "expired": self.expired, "pendingReview": self.pending_review, "unreadable": self.unreadable,
                "stale": self.stale, "index": self.index, "latencies": self.latencies, "events": self.events,
                "usage": self.usage, "perMemory": self.per_memory}


def _counts(values: list[str]) -> dict[str, int]:
    """``value -> count``, most frequent first, ties by name."""
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def latencies(events: list[dict]) -> dict[str, dict[str, float]]:
    """Per command: how many runs and their median, 95th percentile and largest wall time (ms).

    The 95th percentile is ``statistics.quantiles(n=20, method="inclusive")``'s last cut
    point (the sample itself for a single run). Commands are ordered by name.
    """
    from statistics import median, quantiles

    runs: dict[str, list[float]] = {}
    for event in events:
        runs.setdefault(event["command"], []).append(float(event["ms"]))
    out = {}
    for command in sorted(runs):
        times = runs[command]
        p95 = quantiles(times, n=20, method="inclusive")[-1] if len(times) > 1 else times[0]
        out[command] = {"count": len(times), "median_ms": round(median(times), 1), "p95_ms": round(p95, 1),
                        "max_ms": round(max(times), 1)}
    return out


#: The usage counts per memory (``store.usage``): journal event -> the column it is counted in.
USAGE_COLUMNS = {"injected": "injected", "delivered": "delivered", "denied": "denied", "asked": "asked",
                 "violated": "violated"}


def usage(ctx: Ctx, memories: list[Memory]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The caller's own usage counts (``store.usage``; another person's sessions are never read):
    totals per event, and per memory: ``sessions`` it was injected into (distinct sessions),
    ``injected``, ``delivered``, ``denied``, ``asked``, ``violated`` and ``lastUsed`` (the last
    event's time), for each of ``memories`` that has any, most used first."""
    from memcli.store import usage as journal

    known = {m.id: m for m in memories}
    totals = dict.fromkeys(USAGE_COLUMNS.values(), 0)
    rows: dict[str, dict[str, Any]] = {}
    sessions: dict[str, set[str]] = {}
    for event in journal.read(ctx.ws.cache, ctx.actor):
        column = USAGE_COLUMNS[event["event"]]
        for memory_id in event["ids"]:
            if memory_id not in known:
                continue
            totals[column] += 1
            row = rows.setdefault(memory_id, {"id": memory_id, "scope": known[memory_id].scope, "sessions": 0,
                                              **dict.fromkeys(USAGE_COLUMNS.values(), 0), "lastUsed": None})
            row[column] += 1
            row["lastUsed"] = event["at"]
            if column == "injected" and event.get("session"):
                sessions.setdefault(memory_id, set()).add(event["session"])
    for memory_id, seen in sessions.items():
        rows[memory_id]["sessions"] = len(seen)
    ordered = sorted(rows.values(), key=lambda r: (-(r["injected"] + r["delivered"] + r["denied"] + r["asked"]),
                                                    r["id"]))
    return totals, ordered


def unused(ctx: Ctx, days: int = 90) -> list[Memory]:
    """Active memories of the caller's scopes created more than ``days`` ago that the caller's
    journal never shows delivered (injected, given at tool time, or deciding a call) within the
    last ``days``: candidates to retire (``compact``).

    Only a journal that covers the whole window can say so: while the caller's first journal
    event is younger than ``days`` (no sessions with memcli's hooks yet, a new clone, a journal
    cut to its newest half), there are no candidates."""
    from memcli.store import usage as journal

    horizon = format_instant(shift_clamped(ctx.now, timedelta(days=-days)))
    events = journal.read(ctx.ws.cache, ctx.actor)
    if not events or min(e["at"] for e in events) > horizon:
        return []
    used = {i for e in events if e["at"] >= horizon and e["event"] != "violated" for i in e["ids"]}
    cutoff = shift_clamped(ctx.now, timedelta(days=-days))
    return [m for m in ctx.catalog().with_status("active") if ctx.may_see(m) and m.id not in used
            and not m.pinned and m.created_at is not None and m.created_at < cutoff]


def stats(ctx: Ctx, days: int = 7) -> Stats:
    """Gather the statistics of the workspace as the caller may see it.

    Args:
        days: report active memories expiring within this many days from ``ctx.now``.

    Raises:
        ValidationFailed: ``days`` is negative or absurdly large.
    """
    from memcli.service.read import index_status
    from memcli.service.stale_notes import notes
    from memcli.store import events

    if not 0 <= days <= MAX_DAYS:
        raise ValidationFailed(f"invalid --days {days}: use 0 to {MAX_DAYS}")
    catalog = ctx.catalog()
    memories: list[Memory] = [m for status in STATUSES for m in catalog.with_status(status) if ctx.may_see(m)]
    horizon = shift_clamped(ctx.now, timedelta(days=days))
    active = [m for m in memories if m.status == "active" and m.expire_at is not None]
    soon = sorted(((m, m.expire_at) for m in active if m.expire_at is not None and ctx.now < m.expire_at <= horizon),
                  key=lambda pair: (pair[1], pair[0].id))
    log = events.read(ctx.ws.root, EVENTS_WINDOW)
    outdated = notes(ctx)
    totals, per_memory = usage(ctx, memories)
    return Stats(
        days=days, total=len(memories),
        by_scope=_counts([m.scope for m in memories]),
        by_status=_counts([m.status for m in memories]),
        by_category=_counts([m.category for m in memories]),
        expiring=[{"id": m.id, "scope": m.scope, "expireAt": format_instant(at)} for m, at in soon],
        expired=sum(1 for m in active if m.is_expired(ctx.now)),
        pending_review=sum(1 for m in memories if m.status == "pending_review"),
        unreadable=len(catalog.problems(actor=ctx.actor)),
        stale=sum(1 for m in memories if m.status == "active" and m.id in outdated),
        index=index_status(ctx), latencies=latencies(log), events=len(log),
        usage=totals, per_memory=per_memory)
