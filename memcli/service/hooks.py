"""Hook entry points and hook installation (SPEC.md section 6, INTEGRATIONS.md).

A hook never breaks the agent's session: :func:`run_hook` never raises; whatever goes
wrong becomes a warning for stderr and the answer is still well-formed (possibly with
an empty context).

Per session, the ids already put into context are kept in the cache
(``.cache/sessions/<hash of the session id>.json``) so that ``user-prompt-submit``
only adds memories the session has not seen; ``session-start`` with ``source:
compact`` starts the list again, since compaction drops the earlier context.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from memcli.agents import hooks as formats
from memcli.errors import MemcliError, ValidationFailed

#: Characters for the block a prompt adds (the session start has the full budget).
PROMPT_BUDGET = 2_000
#: Memories a prompt may add at most.
PROMPT_LIMIT = 5
#: Seconds the transcript extraction of pre-compact and session-end may take.
EXTRACT_SECONDS = 20.0


@dataclass
class HookRun:
    """The outcome of one hook call: what to print on stdout, and warnings for stderr."""

    stdout: str
    warnings: list[str] = field(default_factory=list)
    #: Tracebacks of unexpected errors (bugs), for ``MEMCLI_DEBUG=1`` to print on stderr.
    tracebacks: list[str] = field(default_factory=list)


def _session_file(ctx, session_id: str) -> Path:  # noqa: ANN001
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:24]
    return ctx.ws.cache / "sessions" / f"{digest}.json"


def _seen(ctx, session_id: str) -> set[str]:  # noqa: ANN001
    if not session_id:
        return set()
    try:
        return set(json.loads(_session_file(ctx, session_id).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return set()


def _remember_seen(ctx, session_id: str, ids: set[str]) -> None:  # noqa: ANN001
    if not session_id:
        return
    from memcli.store.files import atomic_write

    try:
        atomic_write(_session_file(ctx, session_id), json.dumps(sorted(ids)).encode())
    except OSError:
        pass


def run_hook(agent: str, event: str, raw: str, workspace: str | None, actor: str | None) -> HookRun:
    """Answer one hook call; never raises.

    Args:
        agent: ``claude``, ``codex`` or ``gemini``.
        event: ``session-start``, ``user-prompt-submit``, ``pre-compact`` or ``session-end``.
        raw: the hook's stdin (the agent's JSON).
        workspace: ``--workspace``, if given; else ``$MEMCLI_WORKSPACE``, else found from the
            hook's ``cwd``.
        actor: ``--actor``, if given.
    """
    payload, problem = formats.HookInput.parse(raw)
    run = HookRun("", [problem] if problem else [])
    context = ""
    ctx = None
    try:
        ctx = _open(workspace, actor, payload.cwd)
        context = _dispatch(ctx, event, payload, run)
        run.warnings.extend(ctx.warnings)
    except MemcliError as err:
        run.warnings.append(f"no memories for this session: {err.line()}")
    except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
        _bug(ctx, run, "memcli hook", err)
    run.stdout = formats.answer(agent, event, context)
    return run


def _bug(ctx, run: HookRun, what: str, err: Exception) -> None:  # noqa: ANN001
    """One warning line for an unexpected error (a bug), its traceback kept in ``run.tracebacks``
    and, unless ``MEMCLI_DEBUG`` is set (the CLI then prints it), written to
    ``.cache/last-error.log`` as the CLI does for commands. Call from an ``except`` block."""
    import traceback

    text = traceback.format_exc()
    run.tracebacks.append(text)
    where = ""
    if ctx is not None and not os.environ.get("MEMCLI_DEBUG"):
        from memcli.store.files import atomic_write

        try:
            atomic_write(ctx.ws.cache / "last-error.log", text.encode("utf-8"))
            where = f" (details in {ctx.ws.cache / 'last-error.log'}; MEMCLI_DEBUG=1 prints them)"
        except OSError:
            pass
    run.warnings.append(f"{what} failed: {type(err).__name__}: {err}{where}")


def _open(workspace: str | None, actor: str | None, cwd: str):  # noqa: ANN202
    from memcli.service import Ctx
    from memcli.store.workspace import find_root

    if workspace is None and not os.environ.get("MEMCLI_WORKSPACE") and cwd and Path(cwd).is_dir():
        workspace = str(find_root(cwd=Path(cwd)))
    return Ctx.open(workspace, actor)


def _dispatch(ctx, event: str, payload: formats.HookInput, run: HookRun) -> str:  # noqa: ANN001
    from memcli.service.context import context

    folder = Path(payload.cwd) if payload.cwd and Path(payload.cwd).is_dir() else None
    if event == "session-start":
        block = context(ctx, None, None, "text", folder=folder)
        _remember_seen(ctx, payload.session_id, set(block.included))
        return block.text
    if event == "user-prompt-submit":
        seen = _seen(ctx, payload.session_id)
        block = _prompt_block(ctx, payload.prompt, seen)
        _remember_seen(ctx, payload.session_id, seen | set(block.included))
        return block.text
    _after_session(ctx, event, payload, run)
    if event == "session-end" and payload.session_id:
        _session_file(ctx, payload.session_id).unlink(missing_ok=True)
    return ""


def _prompt_block(ctx, prompt: str, seen: set[str]):  # noqa: ANN001, ANN202
    """Memories relevant to the prompt that this session has not been given yet."""
    from memcli.agents.context import render
    from memcli.service.read import Filters, recall

    if not prompt.strip():
        return render([], PROMPT_BUDGET)
    hits = recall(ctx, prompt[:2000], Filters(limit=PROMPT_LIMIT + len(seen)))
    fresh = [h.memory for h in hits if h.memory.id not in seen and h.match != "fuzzy"][:PROMPT_LIMIT]
    return render(fresh, PROMPT_BUDGET)


def _after_session(ctx, event: str, payload: formats.HookInput, run: HookRun) -> None:  # noqa: ANN001
    """pre-compact / session-end: extraction (``[hooks] extract``) and, for pre-compact, the
    session summary (``[hooks] summarize``), each on its own: one failing gives one warning
    line and the other still runs. A transcript memcli must not read (a FIFO, ``/dev/zero``,
    a file past ``MAX_TRANSCRIPT_BYTES``) gives one warning and neither runs."""
    from memcli.service.extract import check_transcript

    config = ctx.ws.config
    steps = [("transcript extraction", _extract)] if config.hook_extract else []
    if event == "pre-compact" and config.hook_summarize:
        steps.append(("session summary", _summarize))
    if not steps or not payload.transcript_path:
        return
    try:
        check_transcript(Path(payload.transcript_path))
    except MemcliError as err:
        run.warnings.append(f"the session transcript was not read: {err.line()}")
        return
    for what, step in steps:
        try:
            step(ctx, Path(payload.transcript_path), run)
        except MemcliError as err:
            run.warnings.append(f"{what} failed: {err.line()}")
        except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
            _bug(ctx, run, what, err)


def _extract(ctx, transcript: Path, run: HookRun) -> None:  # noqa: ANN001
    """Extract from the transcript (``extract --apply``); a warning says what was written."""
    from memcli.service.extract import extract

    started = time.monotonic()
    result = extract(ctx, transcript, apply=True, scope=None)
    elapsed = time.monotonic() - started
    if elapsed > EXTRACT_SECONDS:
        run.warnings.append(f"transcript extraction took {elapsed:.1f} s")
    run.warnings.extend(result.warnings)
    if result.applied and result.accepted:
        run.warnings.append(result.message())


def _summarize(ctx, transcript: Path, run: HookRun) -> None:  # noqa: ANN001
    """The session's rule-based summary memory (``compact --transcript``).

    No external summarizer runs here: a hook has a time budget (INTEGRATIONS.md), and the
    rules take well under a second.
    """
    from memcli.service.session import compact_session

    result = compact_session(ctx, transcript)
    run.warnings.extend(result.warnings)
    if result.write.outcome != "noop":
        run.warnings.append(result.message())


# --- installation ---------------------------------------------------------------------


def settings_path(agent: str, user: bool, project: Path) -> Path:
    """The settings file memcli edits for ``agent``: the project's, or the user's with ``user``."""
    base = Path.home() if user else project
    return base / {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
                   "gemini": ".gemini/settings.json"}[agent]


def _command(agent: str, event: str, workspace: str | None) -> str:
    import shlex

    where = f"-w {shlex.quote(str(Path(workspace).absolute()))} " if workspace else ""
    return f"memcli {where}hook {agent} {event}"


def install(agent: str, user: bool, project: Path, workspace: str | None, remove: bool = False) -> dict:
    """Merge memcli's hook entries into the agent's settings file (or remove them).

    Keeps every other key and handler; running it twice changes nothing the second time.

    Args:
        agent: ``claude``, ``codex`` or ``gemini``.
        user: edit the user's settings (``~/.claude/settings.json`` …) instead of the project's.
        project: the project folder (the git top level, or the current folder).
        workspace: a workspace path to pin in the commands (``-w``), or None to let the
            hook find it from the agent's working folder.
        remove: take memcli's entries out instead.

    Returns:
        ``{"path": ..., "changes": [...], "warnings": [...]}``; a warning when the hooks
        will find no workspace (see :func:`unfound_workspace`).

    Raises:
        ValidationFailed: the settings file is not a JSON object (it is left untouched).
    """
    from memcli.store.files import atomic_write

    path = settings_path(agent, user, project)
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as err:
        raise ValidationFailed(f"{path} is not valid JSON ({err}); it was left as it is",
                               hint="fix the file by hand, then run the command again") from None
    if not isinstance(settings, dict):
        raise ValidationFailed(f"{path} does not hold a JSON object; it was left as it is")
    if remove:
        updated, changes = formats.remove(settings)
    else:
        commands = {event: _command(agent, event, workspace) for event in formats.SUPPORTED[agent]}
        updated, changes = formats.merge(settings, agent, commands)
    if changes:
        atomic_write(path, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    problem = None if remove else unfound_workspace(project, workspace)
    return {"path": str(path), "changes": changes, "warnings": [problem] if problem else []}


def unfound_workspace(project: Path, workspace: str | None) -> str | None:
    """Why hooks installed for ``project`` will find no workspace, or None when they will.

    A hook without ``-w`` looks for ``memcli.toml`` (or ``.memcli/memcli.toml``) from the
    agent's working folder up (``store.workspace.find_root``), so a workspace in a
    subfolder of the project, or none at all, is never found.

    Args:
        project: the project folder the agent runs in.
        workspace: the workspace pinned in the hook commands, or None.
    """
    from memcli.store.workspace import find_root

    if workspace:
        return None
    try:
        find_root(cwd=project)
        return None
    except MemcliError:
        return (f"no memcli workspace in {project} or a folder above it, so the hooks will find none: "
                f"run `memcli init` (or `memcli init --hidden`) there, or pin one with "
                f"`memcli -w PATH hook install ...` (or MEMCLI_WORKSPACE=PATH memcli hook install ...)")
