"""Session compaction: one ``summary`` memory from a session transcript, the raw text kept (SPEC.md section 4).

``compact --transcript`` reads a session transcript — Claude Code, Codex rollout or Gemini
CLI chat log (``service.extract.read_transcript_bytes`` for the checks; ``agents.summary``
for the conversation), keeps its raw bytes gzipped in
the git-ignored ``archive/transcripts/<sha256>.jsonl.gz`` (content-addressed: the SHA-256
of the raw bytes; ``gunzip -c`` gives them back byte for byte), and writes one memory of
category ``summary`` in scope ``session:<session id>`` through the write gates
(``service.write``), with ``runId`` = the session id, ``provenance.source`` = the
archive's path and ``provenance.sha256`` = the digest, and an idempotency key made of the
digest: compacting the same transcript again is a no-op that names the first memory.

The summary is the rule-based one of ``agents.summary`` (``sourceType: tool_result``),
or what a ``--summarizer`` command printed (``model_derived``). A summarizer that fails
(exits non-zero, times out, prints nothing, cannot be found, prints a secret) never fails
the run: the rule-based summary is used and ``fallback_reason`` says why. When no rule
matches, the summary is the first 500 characters of the conversation.

The summarizer's command line may hold a key (``llm --key sk-…``): only its program
name (:func:`program_name`) goes into the summary's body, the messages and the warnings,
so the command never makes the write gates refuse the summary nor reaches the terminal.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.agents import summary as rules
from memcli.errors import UsageProblem, ValidationFailed
from memcli.model import FORBIDDEN_CHARS, MAX_BODY_CHARS, Provenance, check_scope
from memcli.service import Ctx
from memcli.service.extract import read_transcript_bytes, transcript_hint, unknown_format
from memcli.service.write import WriteOptions, WriteResult, _gate, check_session_owner

OP = "compact"
#: The archive of raw transcripts, under the workspace's git-ignored ``archive/`` folder.
ARCHIVE_DIR = "transcripts"
_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]+")


@dataclass
class SessionResult:
    """What ``compact --transcript`` did.

    Attributes:
        session: the session id (``sessionId``) made into a valid scope name, else
            ``transcript-<first 12 of sha256>`` (see :func:`session_name`).
        write: the gates' result: ``created``, or ``noop`` when this transcript was compacted before.
        archive: the raw transcript's path relative to the workspace (``archive/transcripts/<sha>.jsonl.gz``).
        sha256: hex SHA-256 of the transcript's raw bytes.
        summarizer: ``rules``, ``command`` or ``first-500``; for a no-op, the first run's (read from
            the memory's "Summarised by:" line), or None when that line is gone.
        program: the ``--summarizer`` command's program name when it wrote the summary, else None.
        fallback_reason: why the ``--summarizer`` command was not used, or None.
        counts: decisions, conclusions and open questions the rules found.
        withheld: secrets found in the conversation and kept out of the summary.
        warnings: lines for stderr (the fallback, the secrets withheld, near duplicates).
    """

    session: str
    write: WriteResult
    archive: str
    sha256: str
    summarizer: str | None
    fallback_reason: str | None = None
    program: str | None = None
    counts: tuple[int, int, int] = (0, 0, 0)
    withheld: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, now: Any) -> dict[str, Any]:
        """JSON-ready form (the ``--json`` envelope's ``data``); ``now`` marks expiry."""
        decisions, conclusions, questions = self.counts
        return {"id": self.write.memory.id, "memory": self.write.memory.to_dict(now), "session": self.session,
                "scope": self.write.memory.scope, "archive": self.archive, "sha256": self.sha256,
                "summarizer": self.summarizer, "fallback_reason": self.fallback_reason,
                "commit": self.write.commit, "outcome": self.write.outcome, "decisions": decisions,
                "conclusions": conclusions, "open_questions": questions, "withheld": self.withheld}

    def message(self) -> str:
        """One line for a person."""
        memory_id = self.write.memory.id
        kept = f"raw transcript kept at {self.archive}"
        if self.write.outcome == "noop":
            return f"session {self.session} was already summarised: {memory_id}; {kept}"
        if self.summarizer == "command":
            return f"summarised session {self.session}: {memory_id} (summarised by {self.program}); {kept}"
        decisions, conclusions, questions = self.counts
        return (f"summarised session {self.session}: {memory_id} ({decisions} decision{'s' * (decisions != 1)}, "
                f"{conclusions} conclusion{'s' * (conclusions != 1)}, {questions} open question"
                f"{'s' * (questions != 1)}); {kept}")


def session_name(session_id: str | None, digest: str) -> str:
    """The ``NAME`` of the ``session:NAME`` scope: the session id, with runs of characters a
    scope may not hold replaced by ``-`` and cut to 64; ``transcript-<first 12 of the digest>``
    when there is none or it makes no valid scope.

    Never the file name: the same bytes copied under another name must find the first
    summary (its idempotency key is looked up in this scope).
    """
    name = _UNSAFE.sub("-", session_id or "").replace("..", "-").strip(".-_@")[:64].rstrip(".-_@")
    try:
        check_scope(f"session:{name}")
        return name
    except ValidationFailed:
        return f"transcript-{digest[:12]}"


def program_name(command: str) -> str:
    """The program a summarizer command runs, as shown to people: the base name of its first
    word (``shlex``-split; split on white space when it cannot be), never its arguments.

    ``"/usr/bin/llm -m gpt --key sk-…"`` gives ``"llm"``. A name that itself holds a secret
    (``text.secrets``) gives ``"[withheld]"``; an empty command gives ``""``.
    """
    import shlex

    from memcli.text.secrets import find_secrets

    try:
        words = shlex.split(command)
    except ValueError:
        words = [w.strip("\"'") for w in command.split()]
    name = words[0].replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] if words else ""
    name = FORBIDDEN_CHARS.sub("", name).replace("`", "'")
    return "[withheld]" if find_secrets(name) else name


def run_summarizer(command: str, text: str, timeout: float) -> tuple[str | None, str | None]:
    """Run a summarizer command: ``text`` (UTF-8) on its stdin, its stdout the summary.

    The command is split with ``shlex`` and run without a shell, in a new session (its own
    process group), which is killed whole when it outlives ``timeout``.

    Args:
        command: the command line, e.g. ``llm -s "Summarise this session"``.
        text: the plain conversation.
        timeout: seconds it may take.

    Returns:
        ``(summary, None)``, or ``(None, reason)`` when it failed (the reason completes
        "summarizer `PROGRAM` ...": "exited 1", "was not found", "took longer than 5 s" …;
        it never repeats the command's arguments).
    """
    import os
    import shlex
    import signal
    import subprocess

    try:
        argv = shlex.split(command)
    except ValueError as err:
        return None, f"cannot be split into words ({str(err).lower()})"
    if not argv:
        return None, "is empty"
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    except FileNotFoundError:
        return None, "was not found"
    except PermissionError:
        return None, "cannot be run (permission denied)"
    except OSError as err:
        return None, f"cannot be run ({err.strerror or err})"
    try:
        out, _ = proc.communicate(text.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: `sh -c "sleep 100"` leaves no sleep behind
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe: stop waiting
            proc.kill()
        return None, f"took longer than {timeout:g} s and was stopped"
    if proc.returncode < 0:
        return None, f"was killed by signal {-proc.returncode}"
    if proc.returncode:
        return None, f"exited {proc.returncode}"
    summary = FORBIDDEN_CHARS.sub("", out.decode("utf-8", "replace")).strip()
    if not summary:
        return None, "printed nothing"
    return summary, None


def compact_session(ctx: Ctx, path: Path | str, keep_recent: int = 10, summarizer: str | None = None,
                    timeout: float = 60.0, deadline: float | None = None) -> SessionResult:
    """Summarise a session transcript into one ``summary`` memory and archive its raw bytes.

    Args:
        path: a Claude Code session, Codex rollout or Gemini CLI chat log.
        keep_recent: messages the rule-based summary quotes at its end (0 or more).
        summarizer: a command that reads the plain conversation on stdin and prints a summary.
        timeout: seconds the summarizer may take (more than 0).
        deadline: a ``time.monotonic()`` instant after which reading the transcript stops
            (``agents.transcript.DeadlineReached``, nothing written); None: no limit.

    Raises:
        UsageProblem: ``keep_recent`` below 0 or ``timeout`` not above 0.
        ValidationFailed: the transcript is missing or unreadable, not a regular file (a FIFO,
            ``/dev/zero``), larger than ``MAX_TRANSCRIPT_BYTES``, not JSON Lines, or holds no
            conversation; nothing is written.
        TranscriptFormatUnknown: the transcript is in none of the formats memcli reads.
        WorkspaceInvalid: the archive folder cannot be created.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written (the archive file too is removed).
    """
    if keep_recent < 0:
        raise UsageProblem(f"--keep-recent must be 0 or more, not {keep_recent}")
    if not timeout > 0:
        raise UsageProblem(f"--summarizer-timeout must be more than 0 seconds, not {timeout:g}")
    path = Path(path)
    raw = read_transcript_bytes(path)  # checked and capped as for `extract`
    conversation = rules.read_conversation(raw.decode("utf-8-sig", errors="replace"), deadline)
    hint = transcript_hint()
    if conversation.lines and conversation.skipped_lines == conversation.lines:
        which = "its only line is not" if conversation.lines == 1 else f"none of its {conversation.lines} lines is"
        raise ValidationFailed(f"{path} is not JSON Lines: {which} a JSON object", hint=hint)
    if conversation.format is None and conversation.objects:
        raise unknown_format(path)
    if not conversation.messages:
        raise ValidationFailed(f"no conversation in {path}: it holds no user or assistant messages", hint=hint)
    digest = hashlib.sha256(raw).hexdigest()
    session = session_name(conversation.session_id, digest)
    scope = f"session:{session}"
    ctx = ctx.store_for(scope)  # a summary, and its raw transcript, stay in the person's own store
    check_session_owner(ctx, scope)  # another person's session: refused before anything is kept
    archive = f"archive/{ARCHIVE_DIR}/{digest}.jsonl.gz"
    key = f"compact:sha256:{digest}"
    sid = conversation.session_id or ""
    run = sid if 0 < len(sid) <= 200 and not FORBIDDEN_CHARS.search(sid) and "\n" not in sid and "\r" not in sid \
        else session  # the runId gate takes one line of at most 200 characters
    found = rules.summarise(conversation)
    counts = (len(found.decisions), len(found.conclusions), len(found.open_questions))
    first = ctx.catalog().by_idempotency_key(key, scope)
    if first is not None and not ctx.may_see(first):  # another person's session: the write gate refuses
        first = None
    if first is not None:  # compacted before: say so, without running the summarizer again
        kept = _keep(ctx, raw, digest)
        result = SessionResult(session, WriteResult(OP, first, "noop", f"already written with this idempotency key: "
                                                    f"{first.id}", gate="idempotency"), archive, digest,
                               _summarised_by(first.text), counts=counts, withheld=conversation.withheld)
        if kept:
            result.warnings.append(f"the raw transcript was missing from {archive}; it is back")
        return result
    header = FORBIDDEN_CHARS.sub("", f"Summary of session {run} ({len(conversation.messages)} messages"
                                      f"{_span(conversation)}), from {path.name}.\nRaw transcript: {archive}")
    text, used, reason = _summary(conversation, found, keep_recent, header, summarizer, timeout)
    created = _keep(ctx, raw, digest)
    opts = WriteOptions(scope=scope, category="summary", source_type="model_derived" if used == "command"
                        else "tool_result", run_id=run, idempotency_key=key, source=archive, sha256=digest)
    try:
        write = _gate(ctx, OP, text, opts)
    except BaseException:
        if created:  # nothing written: the archive file goes too
            (ctx.ws.archive / ARCHIVE_DIR / f"{digest}.jsonl.gz").unlink(missing_ok=True)
        raise
    if write.outcome == "noop" and created and write.memory.provenance.sha256 != digest:
        (ctx.ws.archive / ARCHIVE_DIR / f"{digest}.jsonl.gz").unlink(missing_ok=True)
    program = program_name(summarizer) if summarizer is not None else None
    result = SessionResult(session, write, archive, digest, used, reason, program if used == "command" else None,
                           counts, conversation.withheld, warnings=[*conversation.warnings, *write.warnings])
    if reason:
        fallback = "the rule-based summary" if used == "rules" else "the first 500 characters of the conversation"
        result.warnings.insert(0, f"summarizer `{program}` {reason}; used {fallback}")
    if conversation.withheld:
        result.warnings.append(f"withheld {conversation.withheld} secret{'s' * (conversation.withheld != 1)} "
                               f"found in the conversation from the summary (the archived raw transcript holds "
                               f"{'them' if conversation.withheld != 1 else 'it'})")
    return result


def _span(conversation: rules.Conversation) -> str:
    stamps = [m.timestamp for m in conversation.messages if m.timestamp]
    return f", {stamps[0]} to {stamps[-1]}" if stamps else ""


def _summary(conversation: rules.Conversation, found: rules.RuleSummary, keep_recent: int, header: str,
             summarizer: str | None, timeout: float) -> tuple[str, str, str | None]:
    """``(body, summarizer used, why the command was not used)``; see the module docstring."""
    from memcli.text.secrets import find_secrets

    reason = None
    if summarizer is not None:
        output, reason = run_summarizer(summarizer, conversation.text(), timeout)
        if output is not None and find_secrets(output):
            output, reason = None, "printed a secret"
        if output is not None:
            head = f"{header}\nSummarised by: `{program_name(summarizer)}`"
            room = MAX_BODY_CHARS - len(head) - 2
            body = output if len(output) <= room else output[: room - 1].rstrip() + "…"
            return f"{head}\n\n{body}", "command", None
    if found.empty:
        body = rules.scrub(f"{header}\nSummarised by: the first {rules.BEGINNING_CHARS} characters (no rule matched)"
                           f"\n\n{rules.beginning(conversation)}")[0]
        return body, "first-500", reason
    return rules.render(found, conversation, keep_recent, f"{header}\nSummarised by: rules"), "rules", reason


_SUMMARISED_BY = re.compile(r"^Summarised by: (?:(rules)$|(the first \d+ characters)|`[^`\n]*`$)", re.MULTILINE)


def _summarised_by(body: str) -> str | None:
    """Which summarizer wrote a summary body (``rules``, ``first-500``, ``command``), from its
    "Summarised by:" line (see :func:`_summary`); None when the line is not there."""
    found = _SUMMARISED_BY.search(body)
    if found is None:
        return None
    return "rules" if found.group(1) else "first-500" if found.group(2) else "command"


_ARCHIVE_SOURCE = re.compile(rf"archive/{ARCHIVE_DIR}/([0-9a-f]{{64}})\.jsonl\.gz")


def transcript_archive(root: Path, provenance: Provenance) -> tuple[str, Path] | None:
    """The raw transcript a session summary was made from, if it is still in the archive.

    Args:
        root: the workspace's top folder.
        provenance: the memory's provenance; only a ``source`` of the exact form
            ``archive/transcripts/<sha256>.jsonl.gz`` whose digest is ``sha256`` counts, so a
            hand-edited ``source`` can never name another file.

    Returns:
        ``(path relative to the workspace, absolute path)``, or None when the memory names no
        archived transcript or the file is gone.
    """
    source = provenance.source or ""
    found = _ARCHIVE_SOURCE.fullmatch(source)
    if found is None or found.group(1) != provenance.sha256:
        return None
    target = root / source
    return (source, target) if target.is_file() else None


def _keep(ctx: Ctx, raw: bytes, digest: str) -> bool:
    """Write the gzipped raw transcript unless it is there already; True when it was written."""
    import gzip

    from memcli.store.files import atomic_write

    target = ctx.ws.archive / ARCHIVE_DIR / f"{digest}.jsonl.gz"
    if target.is_file():
        return False
    atomic_write(target, gzip.compress(raw, mtime=0))  # mtime 0: the same bytes give the same file
    return True
