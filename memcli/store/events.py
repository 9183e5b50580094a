"""The local event log: one JSON line per memcli command, for `memcli stats` (SPEC.md section 4).

``<workspace>/.cache/events.jsonl`` holds, per command run against the workspace::

    {"at": "2027-01-01T09:00:00Z", "command": "recall", "ms": 84.2, "exit": 0}

``at`` is the wall-clock time (UTC) when the command finished, ``ms`` its wall time in
milliseconds from the start of ``memcli.cli.main``, ``exit`` its exit status. Nothing
else is recorded: never a query, a memory's text or an argument (only the command's name,
checked to be plain words). The file lives in the git-ignored cache folder, so it is
never committed and may be deleted at any time.

Recording must never fail or slow a command: :func:`append` imports nothing beyond
``json``, ``os`` and ``time``, makes one ``O_APPEND`` write, and swallows every error (a
read-only cache, a full disk). The file is kept under ``MAX_BYTES``: past it, the newest
half of the lines is kept (an atomic rewrite).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

EVENTS_NAME = "events.jsonl"
#: Past this size (bytes) the log is cut to its newest half.
MAX_BYTES = 1_000_000
#: A command name: at most this many words of ``a-z``, digits and ``-`` (``index status``).
MAX_WORDS = 3


def path_of(root: Path) -> Path:
    """The event log of the workspace at ``root``."""
    from memcli.store.workspace import CACHE

    return root / CACHE / EVENTS_NAME


def safe_name(words: list[str]) -> str:
    """The command name to record: the leading plain words (``a-z``, ``0-9``, ``-``), at most
    ``MAX_WORDS``; ``"other"`` when the first is not such a word (privacy: no free text)."""
    kept = []
    for word in words[:MAX_WORDS]:
        if not (0 < len(word) <= 30 and word[0].isalpha() and word.isascii()
                and all(c.islower() or c.isdigit() or c == "-" for c in word)):
            break
        kept.append(word)
    return " ".join(kept) or "other"


def append(root: Path, command: str, ms: float, status: int, at: float | None = None) -> None:
    """Append one event to the log of the workspace at ``root``; never raises.

    Args:
        root: the workspace folder.
        command: the command's name (passed through :func:`safe_name`'s rule by the caller).
        ms: wall time of the command in milliseconds.
        status: its exit status.
        at: seconds since the epoch (default now).
    """
    try:
        from memcli.store.workspace import cache_folder

        path = cache_folder(root) / EVENTS_NAME
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if at is None else at))
        line = json.dumps({"at": stamp, "command": command, "ms": round(ms, 1), "exit": status}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            trim(path)
    except Exception:  # noqa: BLE001 - the log is best effort: a command never fails because of it
        pass


def trim(path: Path, keep_bytes: int = MAX_BYTES // 2) -> None:
    """Keep only the newest whole lines of ``path`` that fit in ``keep_bytes`` (atomic rewrite).

    Raises:
        OSError: the file cannot be read or replaced (``append`` ignores it).
    """
    from memcli.store.files import atomic_write

    data = path.read_bytes()
    if len(data) <= keep_bytes:
        return
    tail = data[-keep_bytes:]
    cut = tail.find(b"\n")
    atomic_write(path, tail[cut + 1:] if cut >= 0 else b"")


def read(root: Path, limit: int = 1000) -> list[dict]:
    """The newest ``limit`` well-formed events of the workspace at ``root``, oldest first.

    Lines that are not JSON objects with a string ``command`` and a number ``ms`` (a line
    cut by a crash, a hand edit) are skipped. A missing or unreadable log reads as empty.
    """
    try:
        lines = path_of(root).read_bytes().splitlines()
    except OSError:
        return []
    events: list[dict] = []
    for raw in reversed(lines):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("command"), str) \
                and isinstance(event.get("ms"), (int, float)) and not isinstance(event.get("ms"), bool):
            events.append(event)
            if len(events) >= limit:
                break
    events.reverse()
    return events
