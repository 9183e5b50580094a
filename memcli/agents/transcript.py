"""Session transcripts of coding agents: the person's own words and the assistant's replies. Pure.

Each agent of ``agents.registry`` names its reader (``Agent.transcript``; INTEGRATIONS.md:
none of the formats is officially documented, each reader says which source it follows):
Claude Code session files (``agents.transcript_claude``), Codex rollout files
(``agents.transcript_codex``) and Gemini CLI chat logs, JSON Lines or the older single JSON
document (``agents.transcript_gemini``). The format is recognised from the first record
that one of them claims (:func:`detect`); records before it count as
unknown. A file in which no record is claimed has no format (``Transcript.format`` is
None): the caller says so (``service.extract``), it does not report "0 candidates".

What counts as the person's words, for every format: the text they typed, with the
blocks a client wrote around or into it cut out (:data:`INJECTED_TAGS`: slash-command
echoes, local command output and its caveat, system reminders, hook output, subagent
results in ``<task-notification>``, memcli's own ``<memcli-context>`` block, Codex's
``<environment_context>`` and AGENTS.md instructions, Gemini's ``<session_context>`` and
``<hook_context>``), also when they come HTML-escaped (``&lt;memcli-context&gt;…``, as
Gemini CLI writes a hook's context); what is left is the person's, wherever the blocks sat
in the message (a hook's context and the prompt often share one message). A message that
then holds nothing, or only a client notice (:data:`CLIENT_TEXT`), is not a turn at all.

Reading never fails on bad input. Blank lines are ignored; a line that is not a JSON
object is counted in ``skipped_lines``; a line nested too deeply for the JSON reader, or
longer than :data:`MAX_LINE_CHARS`, is skipped with one warning; a record of a type the
format's reader does not know is counted in ``unknown_lines``, quietly (formats grow new
record types every release). A ``deadline`` (a ``time.monotonic()`` instant) makes
:func:`parse` raise :class:`DeadlineReached` once it has passed, so that a hook can stop
reading a huge transcript in time and write nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memcli.agents.injected import CLIENT_TEXT as CLIENT_TEXT
from memcli.agents.injected import INJECTED_TAGS as INJECTED_TAGS
from memcli.agents.injected import strip_injected as strip_injected

if TYPE_CHECKING:
    from types import ModuleType
    from typing import Protocol

    class _Reader(Protocol):
        """What an agent's transcript module's ``Reader`` does with the records it is fed."""

        def feed(self, number: int, entry: dict) -> None: ...
        def finish(self) -> None: ...

#: A line longer than this (characters) is skipped with a warning: no one types 16 MiB, and
#: reading such a line (a pasted binary, a runaway tool result) costs memory for nothing.
MAX_LINE_CHARS = 16 * 1024 * 1024


class DeadlineReached(Exception):  # not named *Error: not an error a user caused, the caller's budget ran out
    """Raised by :func:`parse` (and the write gates, ``service.write.write_batch``) when a
    ``deadline`` has passed; nothing has been written.

    Attributes:
        done: how much was done when it stopped; what: of what (``lines of the transcript``).
    """

    def __init__(self, done: int, what: str = "lines of the transcript") -> None:
        self.done = done
        self.what = what
        super().__init__(f"stopped after {done} {what}")


@dataclass(frozen=True)
class Turn:
    """One message of the conversation: what the person typed (``role == "user"``) or the
    assistant's reply (``role == "assistant"``).

    Attributes:
        session_id: the session it belongs to (None when the format does not say).
        uuid: the record's id (Claude ``uuid``, Codex item id, Gemini message id), or None.
        timestamp: the record's timestamp as written (RFC 3339), or None.
        text: the words, injected blocks removed, stripped; never empty.
        line: 1-based line number in the transcript.
        role: ``user`` or ``assistant``.
        message_id: the model message it is part of (Claude ``message.id``), or None.
    """

    session_id: str | None
    uuid: str | None
    timestamp: str | None
    text: str
    line: int
    role: str = "user"
    message_id: str | None = None


@dataclass(frozen=True)
class ToolUse:
    """One tool call the assistant made, as the agent recorded it (for guard violations,
    ``service.violations``).

    Attributes:
        name: the agent's own tool name (``Bash``, ``exec_command``, ``run_shell_command``).
        input: its arguments as the agent recorded them (a JSON object; a freeform tool's text,
            Codex's ``apply_patch``, is ``{"input": TEXT}``).
        line: 1-based line number of the call in the transcript.
        timestamp: the record's timestamp as written (RFC 3339), or None.
        ran: True when the transcript shows the tool ran (a result that is not a refusal: a
            hook's block, a permission denial, the person's rejection, a cancellation); False
            when it shows it did not, or holds no result for it.
    """

    name: str
    input: dict
    line: int
    timestamp: str | None
    ran: bool


@dataclass
class Transcript:
    """What :func:`parse` found.

    Attributes:
        format: ``claude``, ``codex``, ``gemini``, or None when no record was recognised.
        messages: the conversation (live branch only), in order.
        tool_uses: the assistant's tool calls (live branch only), in order.
        session_id: the session's id, or None.
        lines: non-blank lines read.
        objects: lines that held a JSON object.
        skipped_lines: lines that are not a JSON object (broken, truncated, too deep, too long).
        unknown_lines: records of a type the format's reader does not know (counted quietly).
        dropped: messages left out because they sit on an abandoned (rewound) branch.
        warnings: one line per problem worth telling (a line too deep or too long).
    """

    format: str | None = None
    messages: list[Turn] = field(default_factory=list)
    tool_uses: list[ToolUse] = field(default_factory=list)
    session_id: str | None = None
    lines: int = 0
    objects: int = 0
    skipped_lines: int = 0
    unknown_lines: int = 0
    dropped: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        """What the person typed, in order."""
        return [m for m in self.messages if m.role == "user"]


def string(value: object) -> str | None:
    """``value`` when it is a non-blank string, else None."""
    return value if isinstance(value, str) and value.strip() else None


def entries(lines: Iterable[str], tally: Transcript, deadline: float | None = None) -> Iterator[tuple[int, dict]]:
    """The JSON objects of transcript lines, each with its 1-based line number.

    Blank lines are ignored; ``tally`` counts the others (``lines``, ``objects``,
    ``skipped_lines``) and gets a warning for a line too deep or too long.

    Raises:
        DeadlineReached: ``deadline`` (``time.monotonic()`` seconds) passed; checked every 256 lines.
    """
    for number, raw in enumerate(lines, start=1):
        if deadline is not None and not number % 256 and time.monotonic() > deadline:
            raise DeadlineReached(tally.lines)
        if not raw.strip():
            continue
        tally.lines += 1
        if len(raw) > MAX_LINE_CHARS:
            tally.skipped_lines += 1
            tally.warnings.append(f"line {number} of the transcript is {len(raw) / 2**20:.0f} MiB long, more than "
                                  f"the {MAX_LINE_CHARS // 2**20} MiB memcli reads in one line; it was skipped")
            continue
        try:
            entry = json.loads(raw)
        except RecursionError:
            entry = None
            tally.warnings.append(f"line {number} of the transcript is nested too deeply to read; it was skipped")
        except ValueError:  # json.JSONDecodeError, and UnicodeDecodeError from stray bytes
            entry = None
        if not isinstance(entry, dict):
            tally.skipped_lines += 1
            continue
        tally.objects += 1
        yield number, entry


def _readers() -> list[tuple[str, ModuleType]]:
    """``(agent name, transcript module)`` of every agent with a reader, in claiming order
    (``Agent.transcript_rank``: Codex's and Gemini CLI's before Claude Code's looser claim)."""
    from memcli.agents.registry import agents

    ranked = sorted((a for a in agents() if a.transcript is not None), key=lambda a: a.transcript_rank)
    return [(a.name, module) for a in ranked if (module := a.transcript_module()) is not None]


def detect(entry: dict) -> str | None:
    """The format that claims one record: an agent's name (``codex``, ``gemini``, ``claude``), or None."""
    for name, reader in _readers():
        if reader.claims(entry):
            return name
    return None


def _reader(name: str) -> Callable[[Transcript], _Reader]:
    """The ``Reader`` class of the transcript module of agent ``name`` (one :func:`detect` named)."""
    from memcli.agents.registry import get

    module = get(name).transcript_module()
    assert module is not None, name  # detect() names only agents that have a transcript module
    return module.Reader


def parse(lines: Iterable[str], deadline: float | None = None) -> Transcript:
    """Read a transcript's lines: recognise the format, keep the conversation (module docstring).

    Args:
        lines: the file's lines, as read (trailing newlines are fine).
        deadline: a ``time.monotonic()`` instant after which reading stops; None: no limit.

    Returns:
        The messages and the counts. Never raises on bad input.

    Raises:
        DeadlineReached: ``deadline`` passed before the end.
    """
    out = Transcript()
    reader = None
    for number, entry in entries(lines, out, deadline):
        if reader is None:
            name = detect(entry)
            if name is None:
                out.unknown_lines += 1
                continue
            out.format = name
            reader = _reader(name)(out)
        reader.feed(number, entry)
    if reader is not None:
        reader.finish()
    return out


def parse_text(text: str, deadline: float | None = None) -> Transcript:
    """:func:`parse` over a whole file's text; also reads a transcript that is one JSON
    document spread over many lines (Gemini CLI's older ``session-*.json``), taken as one
    record on line 1."""
    head = text.lstrip()[:1]
    if head == "{":
        first = text.lstrip().split("\n", 1)[0]
        try:
            json.loads(first)
        except (ValueError, RecursionError):
            try:
                whole = json.loads(text)
            except (ValueError, RecursionError):
                whole = None
            if isinstance(whole, dict):
                return parse([json.dumps(whole)], deadline)
    import io

    return parse(io.StringIO(text, newline=None), deadline)  # universal newlines only, never U+2028
