"""Guard violations found in a session's transcript at its end (docs/guards.md, "Measured").

A pre-tool hook counts a violation when a ``warn`` guard matches a call it lets through. A
call can also match a guard and run without that hook deciding it: in a session without the
pre-tool hook (installed before it existed, removed, not trusted), when the hook ran out of its
deadline, or when the guard's memory was approved in the middle of the session. The agents
record their tool calls, so at session end memcli reads the session's transcript
(``agents.transcript``: ``Transcript.tool_uses``) and counts, for each memory in force:

    a call that ran (the transcript shows its result, not a refusal), after the memory was in
    force (the call's timestamp, when it has one, is not earlier than the memory's approval,
    else its creation), and that matches one of its guards (``deny``, ``ask`` or ``warn``),

as one ``violated`` event in the usage journal (``store.usage``, ``source: transcript``),
less the calls the hook already decided: a call's fingerprint (``agents.tool_calls.call_key``) is
on every guard event the hook writes, and the calls of the same fingerprint already counted
as ``violated`` or ``asked`` for that memory in this session are not counted again (a ``warn``
match the hook let through, a call the person allowed when asked, a violation an earlier
scan of the same session found). A scan therefore never counts a call twice, however often
the session ends (a resumed session ends again).
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from memcli.model import Memory
from memcli.service import Ctx

#: The end of a long transcript read by the scan, in bytes (``service.extract.read_transcript_tail``;
#: calls before it are not looked at, and a warning says so).
SCAN_BYTES = 16 * 1024 * 1024
#: Seconds the scan may take at most (Codex clamps its SessionEnd hooks to 3 s).
SCAN_SECONDS = 2.0


class Scan:
    """What :func:`scan` found: ``calls`` (tool calls read), ``matched`` (calls that ran and
    match a guard of a memory in force), ``counted`` (violations added to the journal) and
    ``warnings``."""

    __slots__ = ("calls", "matched", "counted", "warnings")

    def __init__(self) -> None:
        self.calls = 0
        self.matched = 0
        self.counted = 0
        self.warnings: list[str] = []


def _instant(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, or None when absent or unreadable."""
    if not text:
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def in_force_since(memory: Memory) -> datetime | None:
    """When ``memory``'s guards started to be enforced: its approval (``review.at`` of an
    approved memory), else its creation; None when unknown."""
    from memcli.timeutil import parse_instant, to_utc

    review = memory.review or {}
    at = review.get("at") if review.get("decision") == "approved" else None
    if isinstance(at, str):
        try:
            at = parse_instant(at)
        except Exception:  # noqa: BLE001 - a hand-edited review time: fall back on the creation
            at = None
    if isinstance(at, datetime):
        return to_utc(at)
    return to_utc(memory.created_at) if memory.created_at is not None else None


def scan(ctx: Ctx, agent: str, session_id: str, transcript: Path, cwd: str,
         deadline: float | None = None) -> Scan:
    """Count the guard violations of one session from its transcript (module docstring).

    Args:
        agent: the agent whose session it is (its transcript format is recognised anyway).
        session_id: the agent's session id, as its hooks were told it (the journal's key).
        transcript: the session's transcript file.
        cwd: the agent's working folder (relative paths of file tools are read from it).
        deadline: a ``time.monotonic()`` instant; default now + :data:`SCAN_SECONDS`.

    Raises:
        ValidationFailed: the transcript cannot be read.
        TranscriptFormatUnknown: it is in none of the formats memcli reads.
        DeadlineReached: the deadline passed; nothing was written.
    """
    from memcli.agents.tool_calls import call_key, call_of
    from memcli.service.extract import parse_transcript, read_transcript_tail
    from memcli.service.hooks import guards_in_force, match_call
    from memcli.store import usage

    found = Scan()
    guards = guards_in_force(ctx)
    if not guards or not session_id:
        return found
    deadline = time.monotonic() + SCAN_SECONDS if deadline is None else deadline
    raw, left, size = read_transcript_tail(transcript, SCAN_BYTES)
    if left:
        found.warnings.append(f"guard violations: read the last {SCAN_BYTES // 2**20} MB of the "
                              f"{size / 2**20:.0f} MB transcript; calls before them were not looked at")
    record = parse_transcript(transcript, raw, deadline)
    form = record.format or agent
    since = {m.id: in_force_since(m) for m, _ in guards}
    ran: Counter[tuple[str, str]] = Counter()  # (memory id, call key) -> calls that ran
    patterns: dict[tuple[str, str], str] = {}
    for use in record.tool_uses:
        found.calls += 1
        if not use.ran:
            continue
        call = call_of(form, use.name, use.input)
        if call is None:
            continue
        key = call_key(call)
        at = _instant(use.timestamp)
        here: set[str] = set()  # one count per memory and call, under its strongest guard
        for memory, guard in match_call(guards, call, cwd):
            start = since.get(memory.id)
            if memory.id in here or (at is not None and start is not None and at < start):
                continue  # counted under a stronger guard, or run before the memory was in force
            here.add(memory.id)
            patterns.setdefault((memory.id, key), guard.pattern)
            ran[(memory.id, key)] += 1
        found.matched += bool(here)
        if time.monotonic() > deadline:
            from memcli.agents.transcript import DeadlineReached

            raise DeadlineReached(found.calls, "tool calls")
    if not ran:
        return found
    mine = usage.session_key(session_id)
    seen: Counter[tuple[str, str]] = Counter()
    for event in usage.read(ctx.ws.cache, ctx.actor):
        if event.get("session") == mine and event["event"] in ("violated", "asked") and event.get("call"):
            for memory_id in event["ids"]:
                seen[(memory_id, event["call"])] += 1
    for (memory_id, key), count in sorted(ran.items()):
        for _ in range(count - seen[(memory_id, key)]):
            usage.append(ctx.ws.cache, ctx.actor, agent, session_id, "violated", [memory_id],
                         patterns[(memory_id, key)], call=key, source="transcript")
            found.counted += 1
    return found
