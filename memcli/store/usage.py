"""The usage journal: what the hooks did with each memory, for ``memcli stats --memories``.

``<workspace>/.cache/usage.jsonl`` holds one JSON line per hook event that touched memories::

    {"at": "2027-01-01T09:00:00Z", "actor": "alice", "agent": "claude", "session": "3f9c…",
     "event": "denied", "ids": ["01m…"], "pattern": "Bash(npm install:*)"}

``event`` is one of :data:`EVENTS`: ``injected`` (put in the context block at session start
or for a prompt), ``delivered`` (given before a tool call: a path or command memory),
``denied`` and ``asked`` (a guard decided a tool call), ``violated`` (a call matched a guard
that let it through: a ``warn`` guard, or a call the session's transcript shows although no
hook stopped it). ``session`` is a hash of the agent's session id (never the id itself);
``pattern`` is the guard's pattern, for guard events; ``call`` a fingerprint of the tool call a
guard event is about (``agents.tool_calls.call_key``: a hash, so that a call the hook saw is not
counted again from the transcript); ``source`` is ``transcript`` for a violation found in the
session's transcript at its end (``service.violations``). No text, query, command or path is
recorded.

The journal is per person: it lives in the git-ignored cache (never committed, never
synced), each line names its ``actor``, and :func:`read` returns only the lines of the actor
asking. Appending never fails a hook (one ``O_APPEND`` write; errors swallowed); past
``MAX_BYTES`` the newest half is kept, as ``store.events`` does.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

NAME = "usage.jsonl"
EVENTS = ("injected", "delivered", "denied", "asked", "violated")
#: Past this size (bytes) the journal is cut to its newest half.
MAX_BYTES = 4_000_000
#: Ids recorded for one event at most.
MAX_IDS = 50


#: The session id of ``memcli hook check``'s runs (the install's self-test, ``service.hook_check``):
#: no one's session, so nothing of it is journaled (``stats`` counted its runs as hooks injected).
SELF_TEST_SESSION = "memcli-hook-check"
#: Its :func:`session_key`, for the events a journal already holds from before.
SELF_TEST_KEY = "fb633b000bd4b9ac"


def session_key(session_id: str) -> str:
    """The journal's name for a session: 16 hex digits of the SHA-256 of its id ("" for none)."""
    if not session_id:
        return ""
    from memcli.digests import sha256

    return str(sha256(session_id.encode("utf-8", "replace")).hexdigest())[:16]


def append(cache: Path, actor: str, agent: str, session_id: str, event: str, ids: list[str],
           pattern: str | None = None, at: float | None = None, call: str | None = None,
           source: str | None = None) -> None:
    """Add one event to the journal in the cache folder ``cache``; never raises.

    Args:
        cache: the workspace's cache folder (``Workspace.cache``).
        actor: whose session it is (``Ctx.actor``).
        agent: the agent's name (``claude``, ``codex``, ``gemini``).
        session_id: the agent's session id (hashed here, :func:`session_key`).
        event: one of :data:`EVENTS`.
        ids: the memories concerned (at most :data:`MAX_IDS` kept); nothing is written when empty.
        pattern: the guard's pattern, for ``denied``, ``asked`` and ``violated``.
        at: seconds since the epoch (default now).
        call: the fingerprint of the tool call (``agents.tool_calls.call_key``), for guard events.
        source: ``transcript`` for a violation found in the transcript (else the hook's own event).
    """
    if not ids or event not in EVENTS or session_id == SELF_TEST_SESSION:
        return
    try:
        record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if at is None else at)),
                  "actor": actor, "agent": agent, "session": session_key(session_id), "event": event,
                  "ids": list(dict.fromkeys(ids))[:MAX_IDS]}
        if pattern:
            record["pattern"] = pattern
        if call:
            record["call"] = call
        if source:
            record["source"] = source
        path = cache / NAME
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            from memcli.store.events import trim

            trim(path, MAX_BYTES // 2)
    except Exception:  # noqa: BLE001 - the journal is best effort: a hook never fails because of it
        pass


def read(cache: Path, actor: str) -> list[dict]:
    """The journal's well-formed events of ``actor``, oldest first (another person's are never returned).

    A missing or unreadable journal reads as empty; malformed lines are skipped, and so are
    the events of ``hook check``'s self-test an older memcli journaled.
    """
    try:
        lines = (cache / NAME).read_bytes().splitlines()
    except OSError:
        return []
    out = []
    for raw in lines:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("actor") == actor and event.get("event") in EVENTS \
                and isinstance(event.get("ids"), list) and isinstance(event.get("at"), str) \
                and event.get("session") != SELF_TEST_KEY:
            out.append(event)
    return out
