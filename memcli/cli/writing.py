"""The bodies of the write commands' common parts and of ``remember``, free of typer.

``write_cmds`` (typer) and the fast parser (``fast``) both call :func:`remember`, so the two
paths cannot drift apart; a ``remember`` through the fast path imports no CLI framework
(typer's import and its command tree cost about 0.1-0.3 s of every write on a loaded machine,
issue 21 point 3).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from memcli.cli.output import emit, warn
from memcli.cli.state import ctx, flush_warnings

if TYPE_CHECKING:
    from memcli.service import Ctx
    from memcli.service.semantic import EarlyClose
    from memcli.service.write import WriteOptions, WriteResult


def read_text(text: str) -> str:
    """The memory text of a command line: ``-`` reads it from stdin (saying so on a terminal),
    without the one line break that ends what ``echo`` or a file gives (it was counted against
    the length limit, and the text is stored without it all the same)."""
    if text == "-":
        if sys.stdin.isatty():
            warn("reading the memory text from stdin; end with Ctrl-D")
        read = sys.stdin.read()
        return read[:-2] if read.endswith("\r\n") else read[:-1] if read.endswith("\n") else read
    return text


def options(scope: str | None, category: str | None, subject: str | None, importance: int | None,
            tags: list[str] | None, paths: list[str] | None, ttl: str | None, expire_at: str | None,
            source_type: str | None, run_id: str | None, idempotency_key: str | None, pinned: bool | None,
            on_conflict: str | None, deny: list[str] | None = None, ask: list[str] | None = None,
            warn_guard: list[str] | None = None) -> WriteOptions:
    """The ``WriteOptions`` of ``remember`` and ``supersede`` from their command-line values.

    Raises:
        UsageProblem: ``--on-conflict`` is neither supersede nor fail.
        PersonOnly: an agent's shell tool claims a person's source type.
    """
    from memcli.errors import UsageProblem
    from memcli.service.write import WriteOptions

    if on_conflict not in (None, "supersede", "fail"):
        from memcli.text.secrets import shown

        raise UsageProblem(f"invalid --on-conflict {shown(on_conflict)}", hint="use supersede or fail")
    import os

    if source_type is None:  # an agent's shell tool runs memcli: its write is the agent's (issue 22)
        from memcli.agents.callers import default_source_type

        source_type, note = default_source_type(os.environ)
        if note:
            warn(note)
    elif source_type in ("user_said", "admin_edit"):  # an agent cannot say that a person said or edited it
        from memcli.agents.callers import person_only

        person_only(os.environ, f"write --source-type {source_type}")
    return WriteOptions(scope=scope, category=category, subject=subject, importance=importance, pinned=pinned,
                        tags=tags or [], paths=paths or [], ttl=ttl, expire_at=expire_at, source_type=source_type,
                        run_id=run_id, idempotency_key=idempotency_key, on_conflict=on_conflict,
                        deny=list(deny or []), ask=list(ask or []), warn=list(warn_guard or []))


def report(context: Ctx, result: WriteResult, close: list[dict[str, Any]] | None = None) -> None:
    """Print a write's result (its warnings on stderr; with ``close``, the live memories close in meaning)."""
    flush_warnings(context)
    data = result.to_dict(context.now)
    if close is not None:  # remember and supersede: live memories close in meaning (issue 18 point 5)
        from memcli.service.semantic import close_warnings

        data["close_to"] = close
        result.warnings = [*result.warnings, *close_warnings(close)]
    for message in result.warnings:
        warn(message)
    emit(data, result.message)


def early(context: Ctx, text: str | None, opts: WriteOptions) -> EarlyClose:
    """The question "which live memories are close to this one?" asked of a warm process now,
    before the write (``service.semantic.EarlyClose``); its ``result(context, result)`` is
    [] when none runs."""
    from memcli.service.semantic import EarlyClose

    return EarlyClose(context, text, opts.subject, opts.scope)


def suggest_guards(result: WriteResult, opts: WriteOptions) -> None:
    """One line when the text forbids a command and no guard enforces it yet (``policy.suggest``),
    or when a repeated text came with guards the existing memory does not hold."""
    import shlex

    memory = result.memory
    given = [*(f"--deny {shlex.quote(p)}" for p in opts.deny), *(f"--ask {shlex.quote(p)}" for p in opts.ask),
             *(f"--warn {shlex.quote(p)}" for p in opts.warn)]
    if result.outcome == "noop" and given and result.gate != "duplicate":  # a duplicate's message says it
        warn(f"{memory.id} already holds this text and its guards were left as they are; to change them: "
             f"memcli supersede {memory.id} {' '.join(given)}")
        return
    if memory.guards or result.outcome == "noop":
        return
    from memcli.policy.suggest import suggest

    found = suggest(memory.text)
    if found:
        flags = " ".join(f"--deny '{rule}'" for rule in found)
        warn(f"this memory forbids a command that no guard enforces; to have the agents' hooks deny it: "
             f"memcli supersede {memory.id} {flags}")


def remember(text: str, scope: str | None = None, category: str | None = None, subject: str | None = None,
             importance: int | None = None, tag: list[str] | None = None, path: list[str] | None = None,
             ttl: str | None = None, expire_at: str | None = None, source_type: str | None = None,
             run_id: str | None = None, idempotency_key: str | None = None, pinned: bool | None = None,
             on_conflict: str | None = None, deny: list[str] | None = None, ask: list[str] | None = None,
             warn_guard: list[str] | None = None, allow_secret: list[str] | None = None,
             all_projects: bool = False, **_: Any) -> None:
    """``memcli remember``: write a memory through the gates and print the result (see the
    command's help for each option; ``tag``, ``path``, ``deny``, ``ask``, ``warn_guard`` and
    ``allow_secret`` are the repeatable options' lists).

    Raises:
        MemcliError: as the write service raises it (one line and a documented status).
    """
    from memcli.service.write import remember as do_remember

    context = ctx()
    opts = options(scope, category, subject, importance, tag, path, ttl, expire_at, source_type, run_id,
                   idempotency_key, pinned, on_conflict, deny, ask, warn_guard)
    opts.allow_secret = list(allow_secret or [])
    opts.cross_project = all_projects
    said = read_text(text)
    asked = early(context, said, opts)  # a warm model embeds the text while the write commits
    result = do_remember(context, said, opts)
    suggest_guards(result, opts)
    report(context, result, asked.result(context, result))
