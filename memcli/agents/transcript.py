"""Claude Code session transcripts (JSON Lines): the person's own words, turn by turn. Pure.

The format is not officially documented; this follows what parsers in the wild agree on
(INTEGRATIONS.md, "Claude Code transcripts"). Each line is a JSON object with ``type``,
``uuid``, ``sessionId``, ``timestamp``, ``isSidechain``, optional ``isMeta``, and a
``message`` whose ``content`` is a string or a list of blocks.

A line is a human turn when ``type == "user"`` and it is not ``isMeta``, not
``isCompactSummary`` (a compaction summary) and not ``isSidechain`` (a subagent's
conversation), and its content is not made only of ``tool_result`` blocks. Of such a
line only string content and ``text`` blocks count; inside them, blocks wrapped in the
tags of :data:`INJECTED_TAGS` (slash-command echoes, local command output, system
reminders, hook output) are cut out and the rest is kept. Client notices such as
``[Request interrupted by user]`` are dropped too.

Everything else is tolerated: blank lines are ignored, a line that is not a JSON object
is counted in ``skipped_lines``, a ``type`` not in :data:`KNOWN_TYPES` in ``unknown_lines``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

#: Entry types seen in Claude Code transcripts; any other type is counted as unknown.
KNOWN_TYPES = frozenset({"user", "assistant", "summary", "system", "attachment", "file-history-snapshot",
                         "queue-operation", "progress"})

#: Tags whose content the client wrote, not the person: slash commands and their output,
#: ``!`` shell mode, reminders and hook output injected into the prompt.
INJECTED_TAGS = ("command-name", "command-message", "command-args", "local-command-stdout",
                 "local-command-stderr", "local-command-caveat", "system-reminder", "user-prompt-submit-hook",
                 "bash-input", "bash-stdout", "bash-stderr")

_TAGS = "|".join(re.escape(t) for t in INJECTED_TAGS)
#: A closed tag block, or an opening tag never closed (then everything after it goes).
_INJECTED = re.compile(rf"<({_TAGS})(?:\s[^>]*)?>.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_NOTICE = re.compile(r"^\s*\[Request interrupted by user[^\]]*\]\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Turn:
    """One thing the person typed.

    Attributes:
        session_id: the line's ``sessionId`` (None when absent).
        uuid: the line's ``uuid`` (None when absent).
        timestamp: the line's ``timestamp`` as written (RFC 3339), or None.
        text: the person's words, injected blocks removed, stripped; never empty.
        line: 1-based line number in the transcript.
    """

    session_id: str | None
    uuid: str | None
    timestamp: str | None
    text: str
    line: int


@dataclass
class Transcript:
    """What :func:`parse` found.

    Attributes:
        turns: the human turns, in file order.
        session_id: the first ``sessionId`` seen, or None.
        lines: non-blank lines read.
        skipped_lines: lines that are not a JSON object (broken or truncated).
        unknown_lines: JSON objects whose ``type`` is missing or not in :data:`KNOWN_TYPES`.
    """

    turns: list[Turn] = field(default_factory=list)
    session_id: str | None = None
    lines: int = 0
    skipped_lines: int = 0
    unknown_lines: int = 0


def strip_injected(text: str) -> str:
    """``text`` without the tag blocks of :data:`INJECTED_TAGS` and client notices, stripped."""
    return _NOTICE.sub("", _INJECTED.sub("", text)).strip()


def turn_text(entry: dict) -> str | None:
    """The person's words in one transcript entry, or None when it is not a human turn.

    Args:
        entry: one parsed line (any shape; anything unexpected gives None).
    """
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary") \
            or entry.get("isSidechain"):
        return None
    return entry_text(entry)


def entry_text(entry: dict) -> str | None:
    """The words of one entry's ``message``: string content and ``text`` blocks, injected
    blocks cut out; None when there are none or the content is only ``tool_result`` blocks.

    Whose words they are (a person's turn, the assistant's reply) is for the caller to
    check first (see :func:`turn_text`).
    """
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        if blocks and all(b.get("type") == "tool_result" for b in blocks):
            return None
        parts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    else:
        return None
    text = strip_injected("\n".join(parts))
    return text or None


def entries(lines: Iterable[str], tally: Transcript) -> Iterator[tuple[int, dict]]:
    """The JSON objects of transcript lines, each with its 1-based line number.

    Blank lines are ignored; ``tally.lines`` counts the others and ``tally.skipped_lines``
    those that are not a JSON object (``tally``: anything with these two attributes).
    """
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        tally.lines += 1
        try:
            entry = json.loads(raw)
        except ValueError:  # json.JSONDecodeError, and UnicodeDecodeError from stray bytes
            entry = None
        if not isinstance(entry, dict):
            tally.skipped_lines += 1
            continue
        yield number, entry


def parse(lines: Iterable[str]) -> Transcript:
    """Read transcript lines and keep the human turns (see the module docstring for the rules).

    Args:
        lines: the file's lines, as read (a trailing newline is fine).

    Returns:
        The turns and the counts of lines read, skipped and of unknown type. Never raises
        on bad input.
    """
    out = Transcript()
    for number, entry in entries(lines, out):
        kind = entry.get("type")
        if not isinstance(kind, str) or kind not in KNOWN_TYPES:
            out.unknown_lines += 1
            continue
        session = _string(entry.get("sessionId"))
        if out.session_id is None and session:
            out.session_id = session
        text = turn_text(entry)
        if text:
            out.turns.append(Turn(session, _string(entry.get("uuid")), _string(entry.get("timestamp")), text, number))
    return out


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
