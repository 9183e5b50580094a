"""Extraction: candidate memories from a session transcript, through the write gates (SPEC.md section 7).

The transcript (a Claude Code session, a Codex rollout or a Gemini CLI chat log; the
format is recognised from its records) is read with ``agents.transcript`` (only what
the person typed, on the live branch of the conversation), the
candidates found with ``agents.extraction_rules`` (rules, English and Chinese), and every
candidate goes through the same six gates as ``remember`` (``service.write.write_batch``)
with ``sourceType: user_said``, ``runId`` = the session id and an idempotency key made of
the session id, the turn's uuid and the candidate's place in the turn, so running
``extract`` again on the same transcript writes nothing. A dry run (the default) runs
every gate and writes nothing; ``apply`` writes the accepted candidates in one commit.

A file in none of these formats is refused (``TranscriptFormatUnknown``, exit 5), never
read as "0 candidates". With a ``deadline`` (what a hook passes), reading and the gates
stop once it has passed and nothing is written (``agents.transcript.DeadlineReached``
reaches the caller); the check runs while the transcript is read and once more before the
write; a write that has started is finished.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.agents.extraction_rules import Candidate, find_candidates
from memcli.agents.transcript import DeadlineReached, Transcript, Turn, parse_text
from memcli.errors import MemcliError, SecretDetected, SubjectConflict, TranscriptFormatUnknown, ValidationFailed
from memcli.policy import gates
from memcli.service import Ctx
from memcli.service.write import WriteOptions, WriteResult, write_batch

OP = "extract"
#: The gate named for an error a gate raised.
_ERROR_GATES = ((SecretDetected, "sensitive_data", "refused_secret"), (ValidationFailed, "validation", "invalid"),
                (SubjectConflict, "conflict", "conflict"))


@dataclass
class Decided:
    """One candidate and what the gates decided for it.

    Attributes:
        text: the candidate's text; for one refused as a secret, only what precedes the
            secret (never the secret itself).
        category, importance: the rules' guesses (``agents.extraction_rules``).
        decision: ``would_write`` or ``written``; ``would_wait_for_review`` or
            ``pending_review``; ``duplicate``; ``already_written`` (repeated idempotency
            key); ``refused_secret``; ``invalid``; ``conflict``.
        gate: the gate that decided: ``review`` for a memory that passed them all (it set
            the status), else ``duplicate``, ``idempotency``, ``sensitive_data``,
            ``validation`` or ``conflict``.
        id: the memory written, or the existing one a no-op names; None in a dry run for
            a memory not yet written.
        message: the decision in words, for a person.
        line, uuid: where the turn is in the transcript.
        rules: names of the rules that matched.
    """

    text: str
    category: str
    importance: int
    decision: str
    gate: str
    id: str | None
    message: str
    line: int
    uuid: str | None
    rules: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"text": self.text, "category": self.category, "importance": self.importance,
                "decision": self.decision, "gate": self.gate, "id": self.id, "message": self.message,
                "line": self.line, "uuid": self.uuid, "rules": list(self.rules)}


@dataclass
class ExtractResult:
    """What ``extract`` found and did.

    Attributes:
        path: the transcript read.
        format: the agent's name (``claude``, ``codex``, ``gemini``: ``agents.registry``); None for a
            file that holds no record at all (empty, or only broken lines).
        session: its session id (the first ``sessionId``; the file name without ``.jsonl`` if none).
        applied: True with ``apply`` (writes allowed), False for a dry run.
        turns: human turns read.
        lines: non-blank lines read.
        skipped_lines: broken lines (not a JSON object), skipped.
        unknown_lines: records of a type the format's reader does not know, skipped quietly.
        dropped: messages on a rewound (abandoned) branch of the conversation, left out.
        candidates: each candidate and its decision, in transcript order.
        commit: the commit that wrote them, or None (dry run, nothing to write, ``autocommit = false``).
        warnings: lines the transcript reader could not read, and near duplicates reported by the
            duplicate gate.
    """

    path: str
    format: str | None
    session: str
    applied: bool
    turns: int
    lines: int
    skipped_lines: int
    unknown_lines: int
    candidates: list[Decided] = field(default_factory=list)
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    dropped: int = 0

    @property
    def accepted(self) -> list[Decided]:
        """The candidates that passed every gate (written, or would be)."""
        return [c for c in self.candidates if c.gate == "review"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``--json`` envelope's ``data``)."""
        return {"session": self.session, "path": self.path, "format": self.format, "applied": self.applied,
                "turns": self.turns, "lines": self.lines, "skipped_lines": self.skipped_lines,
                "unknown_lines": self.unknown_lines, "dropped": self.dropped,
                "candidates": [c.to_dict() for c in self.candidates], "commit": self.commit}

    def message(self) -> str:
        """One summary line for a person."""
        found = (f"{len(self.candidates)} candidate{'s' * (len(self.candidates) != 1)} in {self.turns} "
                 f"turn{'s' * (self.turns != 1)} of session {self.session}")
        skipped = f"; skipped {self.skipped_lines} broken lines" if self.skipped_lines else ""
        if self.dropped:
            skipped += f"; left out {self.dropped} message{'s' * (self.dropped != 1)} of a rewound branch"
        count = len(self.accepted)
        if not self.applied:
            done = (f"; dry run: {count} would be written, nothing written (run again with --apply to write)"
                    if count else "; nothing to write")
        elif count:
            done = f"; wrote {count}" + (f" in commit {self.commit[:12]}" if self.commit else " (not committed)")
        else:
            done = "; nothing to write"
        return found + skipped + done


#: The largest transcript memcli reads, in bytes (200 MB; a long Claude Code session is a few MB).
#: A bigger file is refused before it is read, so that no command or hook fills the memory.
MAX_TRANSCRIPT_BYTES = 200 * 1024 * 1024


def transcript_hint() -> str:
    """The hint of every error about the transcript file itself (``agents.registry.transcript_hint``)."""
    from memcli.agents.registry import transcript_hint as hint

    return hint()


def _refuse(path: Path, info: os.stat_result) -> None:
    """Raise unless ``info`` (``os.stat`` of ``path``) is a regular file of at most :data:`MAX_TRANSCRIPT_BYTES`."""
    import stat

    if stat.S_ISDIR(info.st_mode):
        raise ValidationFailed(f"{path} is a folder, not a transcript file", hint=transcript_hint())
    if not stat.S_ISREG(info.st_mode):
        raise ValidationFailed(f"{path} is not a regular file (a FIFO, device or socket); it was not read",
                               hint=transcript_hint())
    if info.st_size > MAX_TRANSCRIPT_BYTES:
        raise _too_large(path, info.st_size)


def _too_large(path: Path, size: int) -> ValidationFailed:
    return ValidationFailed(f"the transcript {path} is {size / 2**20:.0f} MB, more than the "
                            f"{MAX_TRANSCRIPT_BYTES // 2**20} MB memcli reads; it was not read",
                            hint="split the session file, or summarise it with another tool")


def _os_error(path: Path, err: OSError) -> ValidationFailed:
    if isinstance(err, FileNotFoundError):
        return ValidationFailed(f"no transcript at {path}: the file does not exist", hint=transcript_hint())
    if isinstance(err, PermissionError):
        return ValidationFailed(f"cannot read the transcript {path}: permission denied",
                                hint="check the file's permissions")
    return ValidationFailed(f"cannot read the transcript {path}: {err.strerror or err}", hint=transcript_hint())


def check_transcript(path: Path) -> None:
    """Check, without opening it, that ``path`` is a transcript memcli may read: a regular file
    (a symbolic link to one is fine) of at most :data:`MAX_TRANSCRIPT_BYTES`.

    Raises:
        ValidationFailed: the file is missing, a folder, a FIFO, device or socket (``/dev/zero``),
            too large, or cannot be looked at.
    """
    import os

    try:
        info = os.stat(path)
    except OSError as err:
        raise _os_error(path, err) from None
    _refuse(path, info)


def read_transcript_bytes(path: Path) -> bytes:
    """The raw bytes of a transcript file, after :func:`check_transcript`.

    The file is checked before it is opened (opening a FIFO would block), opened without
    blocking, checked again (it may have been swapped) and read to at most
    :data:`MAX_TRANSCRIPT_BYTES`, so no path makes this hang or fill the memory.

    Raises:
        ValidationFailed: as :func:`check_transcript`, or the file cannot be read.
    """
    # a file past MAX_TRANSCRIPT_BYTES is refused before it is read: a "tail" of that size is all of it
    return read_transcript_tail(path, MAX_TRANSCRIPT_BYTES)[0]


#: The most of a transcript's first line kept with its tail (its session record: Codex's
#: ``session_meta``, Gemini's header), in bytes.
FIRST_LINE_BYTES = 64 * 1024


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB" if size < 10 * 2**20 else f"{size / 2**20:.0f} MB"


def read_transcript_tail(path: Path, budget: int) -> tuple[bytes, int, int]:
    """A transcript's first line and its last ``budget`` bytes (from the first line that
    starts in them), for a hook that must not read a whole long session.

    Each line in between is replaced by an empty line (a newline), so that the lines read
    keep their numbers (and candidates their idempotency keys, which may hold a line
    number); blank lines are skipped by every reader. A file of at most ``budget`` bytes
    is read whole, as by :func:`read_transcript_bytes`.

    Args:
        budget: bytes of the end of the file to read (more than 0).

    Returns:
        The bytes to parse, the bytes left out, and the file's size in bytes.

    Raises:
        ValidationFailed: as :func:`read_transcript_bytes`.
    """
    import os

    check_transcript(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise _os_error(path, err) from None
    try:
        info = os.fstat(fd)
        _refuse(path, info)
        with os.fdopen(os.dup(fd), "rb") as handle:
            if info.st_size <= budget:
                raw = handle.read(MAX_TRANSCRIPT_BYTES + 1)
                if len(raw) > MAX_TRANSCRIPT_BYTES:
                    raise _too_large(path, len(raw))
                return raw, 0, len(raw)
            first = handle.read(FIRST_LINE_BYTES)
            end = first.find(b"\n")
            head = first[:end] if end >= 0 else b""
            start = info.st_size - budget
            handle.seek(start)
            tail = handle.read(budget)
            cut = tail.find(b"\n")
            tail = tail[cut + 1:] if cut >= 0 else b""
            handle.seek(len(head) + 1)
            skipped, left = 0, start + cut + 1 - (len(head) + 1)
            while left > 0:  # the lines left out, counted so that the ones read keep their numbers
                chunk = handle.read(min(left, 1 << 20))
                if not chunk:
                    break
                skipped += chunk.count(b"\n")
                left -= len(chunk)
    except OSError as err:
        raise _os_error(path, err) from None
    finally:
        os.close(fd)
    return head + b"\n" * (skipped + 1) + tail, info.st_size - len(head) - len(tail), info.st_size


def parse_transcript(path: Path, raw: bytes, deadline: float | None = None) -> Transcript:
    """Parse a transcript's raw bytes (UTF-8 with or without BOM; undecodable bytes replaced).

    Args:
        path: where they came from, for the error message.
        deadline: a ``time.monotonic()`` instant after which reading stops; None: no limit.

    Raises:
        TranscriptFormatUnknown: the file holds JSON objects but none that a known format writes.
        DeadlineReached: ``deadline`` passed.
    """
    transcript = parse_text(raw.decode("utf-8-sig", errors="replace"), deadline)
    if transcript.format is None and transcript.objects:
        raise unknown_format(path)
    return transcript


def unknown_format(path: Path) -> TranscriptFormatUnknown:
    """The error for a file whose JSON records no known format writes; it names the formats read."""
    from memcli.agents.registry import transcript_formats

    return TranscriptFormatUnknown(f"{path} is not a transcript format memcli reads (it reads: "
                                   f"{'; '.join(transcript_formats().values())})",
                                   hint="give the session file the agent wrote")


def read_transcript(path: Path, deadline: float | None = None) -> Transcript:
    """Read and parse a transcript file (see :func:`read_transcript_bytes` for what is refused).

    Raises:
        ValidationFailed: the file is missing, a folder, not a regular file, too large, or cannot be read.
        TranscriptFormatUnknown: see :func:`parse_transcript`.
        DeadlineReached: ``deadline`` passed.
    """
    return parse_transcript(path, read_transcript_bytes(path), deadline)


def idempotency_key(session: str, turn: Turn, index: int) -> str:
    """The key of a candidate: session id, turn uuid (else its line) and its place in the turn.

    A key longer than the gate allows (200 characters) or holding a line break is hashed.
    """
    key = f"extract:{session}:{turn.uuid or f'line-{turn.line}'}:{index}"
    if len(key) <= 200 and "\n" not in key and "\r" not in key:
        return key
    return "extract:sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def extract(ctx: Ctx, path: Path | str, apply: bool = False, scope: str | None = None,
            deadline: float | None = None, tail: int | None = None,
            max_candidates: int | None = None) -> ExtractResult:
    """Find candidate memories in a transcript and send them through the write gates.

    Args:
        path: a Claude Code session, Codex rollout or Gemini CLI chat log.
        apply: write the accepted candidates (one commit); else a dry run that writes nothing.
        scope: where the memories go; default ``[scopes] write`` from the configuration.
        deadline: a ``time.monotonic()`` instant; reading and the gates stop once it has passed,
            and nothing is written (a hook's budget). None: no limit.
        tail: read only the transcript's first line and its last ``tail`` bytes
            (:func:`read_transcript_tail`; a hook's budget); None: the whole file.
        max_candidates: send only the last this many candidates through the gates (a hook's
            budget; a warning counts the others); None: all of them.

    Raises:
        ValidationFailed: the transcript cannot be read, or ``scope`` is malformed.
        TranscriptFormatUnknown: the transcript is in none of the formats memcli reads.
        DeadlineReached: ``deadline`` passed before the write; nothing was written.
        ScopeViolation: ``scope`` is another user's personal scope.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
    """
    import time

    path = Path(path)
    target = gates.check_write_scope(scope if scope is not None else ctx.ws.config.write_scope, ctx.actor)
    notes: list[str] = []
    if tail is None:
        transcript = read_transcript(path, deadline)
    else:
        raw, left, size = read_transcript_tail(path, tail)
        transcript = parse_transcript(path, raw, deadline)
        if left:
            notes.append(f"read the first line and the last {_mb(tail)} of the {_mb(size)} transcript (what a hook "
                         f"reads); run `memcli extract --apply {path}` to read all of it")
    session = transcript.session_id or path.name.removesuffix(".jsonl").removesuffix(".json")
    found: list[tuple[Turn, Candidate]] = []
    items: list[tuple[str, WriteOptions]] = []
    for turn in transcript.turns:
        run = turn.session_id or session
        for index, candidate in enumerate(find_candidates(turn.text)):
            found.append((turn, candidate))
            items.append((candidate.text, WriteOptions(
                scope=target, category=candidate.category, importance=candidate.importance,
                source_type="user_said", run_id=run, idempotency_key=idempotency_key(run, turn, index))))
    if max_candidates is not None and len(found) > max_candidates:
        notes.append(f"looked at the last {max_candidates} of {len(found)} candidates (what a hook sends through "
                     f"the gates); run `memcli extract --apply {path}` for the others")
        found, items = found[-max_candidates:], items[-max_candidates:]
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlineReached(transcript.lines)
    results, commit = write_batch(ctx, OP, items, dry_run=not apply, deadline=deadline) if items else ([], None)
    result = ExtractResult(str(path), transcript.format, session, apply, len(transcript.turns),
                           transcript.lines, transcript.skipped_lines, transcript.unknown_lines, commit=commit,
                           warnings=[*notes, *transcript.warnings], dropped=transcript.dropped)
    planned = {r.memory.id: n for n, r in enumerate(results, 1) if isinstance(r, WriteResult) and r.outcome != "noop"}
    for (turn, candidate), outcome in zip(found, results):
        result.candidates.append(_decided(turn, candidate, outcome, apply, planned))
        if isinstance(outcome, WriteResult):
            result.warnings.extend(f"candidate {len(result.candidates)}: {w}" for w in outcome.warnings)
    return result


def _decided(turn: Turn, candidate: Candidate, outcome: WriteResult | MemcliError, applied: bool,
             planned: dict[str, int]) -> Decided:
    """Put one gate outcome in the words of a candidate's decision."""
    def decided(decision: str, gate: str, memory_id: str | None, message: str, text: str = candidate.text) -> Decided:
        return Decided(text, candidate.category, candidate.importance, decision, gate, memory_id, message,
                       turn.line, turn.uuid, candidate.rules)

    if isinstance(outcome, MemcliError):
        gate, decision = next(((g, d) for cls, g, d in _ERROR_GATES if isinstance(outcome, cls)), ("error", "error"))
        text = _withheld(candidate.text) if isinstance(outcome, SecretDetected) else candidate.text
        return decided(decision, gate, None, outcome.message, text)
    memory_id = outcome.memory.id
    if outcome.outcome == "noop" and outcome.gate == "idempotency":
        return decided("already_written", "idempotency", memory_id, f"already written: {memory_id}")
    if outcome.outcome == "noop":
        if memory_id in planned:  # a repeat of an earlier candidate of this transcript
            if not applied:
                return decided("duplicate", "duplicate", None, f"duplicate of candidate {planned[memory_id]}")
            return decided("duplicate", "duplicate", memory_id,
                           f"duplicate of {memory_id} (candidate {planned[memory_id]})")
        return decided("duplicate", "duplicate", memory_id, f"duplicate of {memory_id}")
    pending = outcome.outcome == "pending_review"
    if not applied:
        return decided("would_wait_for_review" if pending else "would_write", "review", None,
                       "would wait for review" if pending else "would write")
    return decided("pending_review" if pending else "written", "review", memory_id,
                   f"{'waiting for review' if pending else 'written'}: {memory_id}")


def _withheld(text: str) -> str:
    """``text`` cut where its first secret starts, so that showing it never echoes the secret."""
    from memcli.text.secrets import find_secrets

    findings = find_secrets(text)
    if not findings:
        return "[withheld]"
    first = min(findings, key=lambda f: (f.line, f.column))
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: first.line - 1]) + first.column - 1
    return f"{text[:offset].rstrip()} [withheld: {first.kind}]".strip()
