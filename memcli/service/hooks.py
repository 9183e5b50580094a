"""Hook entry points and hook installation (SPEC.md section 6, INTEGRATIONS.md).

A hook never breaks the agent's session: :func:`run_hook` never raises; whatever goes
wrong becomes a warning for stderr and the answer is still well-formed (possibly with
an empty context).

Per session, the ids already put into context are kept in the cache
(``.cache/sessions/<hash of the session id>.json``) so that ``user-prompt-submit`` and
``pre-tool-use`` only add memories the session has not seen; ``session-start`` with
``source: compact`` starts the list again, since compaction drops the earlier context.

``session-start`` with ``source: compact`` or ``resume`` puts the session's latest
summary (``session:<id>``, written by the pre-compact hook with ``[hooks] summarize``
or by ``compact --transcript``) first in the block, for its owner only
(``policy.owner``). ``pre-tool-use`` (``post-tool-use`` for an agent that takes a tool's
context only after the call) adds, before a tool reads or edits a file
(``agents.tool_calls``), the active memories whose ``paths`` globs match that file relative
to the project's root, at most ``TOOL_LIMIT`` within ``TOOL_BUDGET`` characters, the
narrowest glob first (``index.path_specificity``: the memory written for that file before
those for its folder or the whole tree).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.agents import hook_protocol as formats
from memcli.errors import MemcliError

if TYPE_CHECKING:
    from memcli.agents.context_block import Block
    from memcli.agents.registry import Agent
    from memcli.guards import Call, Guard
    from memcli.index import Hit, Query, Retriever
    from memcli.index.catalog import Catalog
    from memcli.index.query import Word
    from memcli.model import Memory
    from memcli.service import Ctx

#: Characters for the block a prompt adds (the session start has the full budget).
PROMPT_BUDGET = 2_000
#: Memories a prompt may add at most.
PROMPT_LIMIT = 3
#: Hits of a prompt's recall looked at before the floor is applied.
PROMPT_POOL = 10
#: A prompt's memory must hold at least this many of its content words (all of a shorter prompt's).
PROMPT_MIN_HELD = 2
#: A prompt's memory must also score this share of the best hit's score.
PROMPT_MIN_SCORE = 0.5
#: Seconds the prompt hook gives a warm process's model (spent only while one runs): a warm
#: answer takes 10-30 ms, but 200-450 ms on a loaded 2-core machine (CI, a first backfill),
#: and the hook's own deadline (``[hooks] deadline``, 2 s) leaves room for it.
PROMPT_WARM_BUDGET = 0.6
#: With a warm model (hybrid retrieval) the hook looks at the first ``PROMPT_SCORED_POOL``
#: hits, gives each the probability of being relevant by a logistic function of
#: :func:`prompt_features` with ``PROMPT_WEIGHTS`` (bias last), and adds those from
#: ``PROMPT_CUT``, most likely first, at most ``PROMPT_SCORED_LIMIT`` (:func:`select_scored`).
#: Fitted with ``bench/prompt_learn.py`` on the tune, heldout, fresh and fresh2 prompt splits
#: of ``bench/heldout_data.py`` (the cut and the limit chosen on held-out splits, each fitted
#: on the three others); reported on fresh3 (docs/search.md, "Evaluation").
PROMPT_WEIGHTS = (2.402, 0.627, 0.542, 2.078, -0.86, 2.118, 1.632, 0.256, -3.383)
PROMPT_CUT = 0.5
PROMPT_SCORED_LIMIT = 2
PROMPT_SCORED_POOL = 20
#: Seconds the transcript work (extraction, then the summary) of pre-compact and session-end
#: may take in all: well under the timeouts memcli installs (30 s and 10 s). Past it, the step
#: under way stops, writes nothing and says so (``agents.transcript.DeadlineReached``).
EXTRACT_SECONDS = {"pre-compact": 20.0, "session-end": 6.0}
#: What pre-compact and session-end read of a transcript, so that their work stays well inside
#: their deadline whatever the session's length (a 200,000-line transcript kept a hook busy to
#: its 20 s deadline, and then nothing was written): extraction reads the first line and the
#: last ``HOOK_TRANSCRIPT_BYTES`` and sends at most the last ``HOOK_CANDIDATES`` candidates
#: through the gates (earlier turns were read by the hooks of earlier compactions); the
#: session summary, which needs the whole session, is left to ``memcli compact --transcript``
#: for a transcript over ``HOOK_SUMMARY_BYTES``. Each cut is said in a warning.
HOOK_TRANSCRIPT_BYTES = 2 * 1024 * 1024
HOOK_CANDIDATES = 100
HOOK_SUMMARY_BYTES = 8 * 1024 * 1024
#: Characters the memories added before one tool call may take.
TOOL_BUDGET = 1_500
#: Memories added before one tool call at most.
TOOL_LIMIT = 3
#: Memories about one file looked at before the narrowest are chosen (a broad ``**`` glob
#: may match hundreds; the one written for the file must not be cut by them).
TOOL_POOL = 200
#: How a hook's warning starts when it cannot open the workspace (``memcli hook check`` looks for it).
UNSERVED = "no memories for this session:"
#: What a prompt or tool hook that runs out of its ``[hooks] deadline`` puts in the agent's
#: context, once per session (the person otherwise learns of it only on stderr, which the
#: agents do not show): the block is fenced as every block is.
LATE_PROMPT_NOTE = ("<memcli-context>\nmemcli could not search this project's memories in time for this request "
                    "(the machine is busy, or the search index is still being built in the background), so none "
                    "were added; this note comes once per session. Search them with `memcli recall WORDS`."
                    "\n</memcli-context>\n")
#: The workspace cache file where a harvest leaves its note for the next session start.
HARVEST_NOTE = "harvest-note.json"
#: SessionStart sources after which the session's summary comes back.
RESTARTS = ("compact", "resume")


class HookRun:
    """The outcome of one hook call: what to print on stdout, and warnings for stderr.

    ``tracebacks`` holds the tracebacks of unexpected errors (bugs), for ``MEMCLI_DEBUG=1``
    to print on stderr. A list left None is a fresh empty one.
    """

    __slots__ = ("stdout", "warnings", "tracebacks")

    def __init__(self, stdout: str, warnings: list[str] | None = None, tracebacks: list[str] | None = None) -> None:
        self.stdout = stdout
        self.warnings = [] if warnings is None else warnings
        self.tracebacks = [] if tracebacks is None else tracebacks


def _session_file(ctx: Ctx, session_id: str) -> Path:
    from memcli.digests import sha256  # not hashlib: OpenSSL's load costs 3 ms of every hook

    digest = sha256(session_id.encode()).hexdigest()[:24]
    return ctx.ws.cache / "sessions" / f"{digest}.json"


def _late_file(ctx: Ctx, session_id: str) -> Path:
    """The mark that this session has had :data:`LATE_PROMPT_NOTE` (beside its seen-list)."""
    return _session_file(ctx, session_id).with_suffix(".late")


def late_answer(ctx: Ctx, agent: str, event: str, session_id: str) -> tuple[str, Callable[[], None]]:
    """What a read hook answers if its deadline comes first, and what to do then.

    ``session-start`` answers ``cli.watchdog.LATE_NOTE`` (set by the caller); a prompt or tool
    hook answers :data:`LATE_PROMPT_NOTE` the first time in a session and nothing after
    (a mark in the workspace cache, removed at session end), so the person learns why
    memory was missing without a note on every prompt.

    Returns:
        ``(the agent's stdout, a function to call before exiting)``: the function starts the
        background index build and marks the note as given; it never raises.
    """
    try:
        noted = bool(session_id) and _late_file(ctx, session_id).exists()
    except (OSError, MemcliError):  # MemcliError: no usable cache folder
        noted = False
    note = "" if noted else LATE_PROMPT_NOTE

    def before_exit() -> None:
        _background_build(ctx)
        if note and session_id:
            from memcli.store.files import atomic_write

            try:
                atomic_write(_late_file(ctx, session_id), b"")
            except (OSError, MemcliError):
                pass
    return formats.answer(agent, event, note), before_exit


def _seen(ctx: Ctx, session_id: str) -> set[str]:
    if not session_id:
        return set()
    try:
        return set(json.loads(_session_file(ctx, session_id).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, MemcliError):  # MemcliError: no usable cache folder
        return set()


def _remember_seen(ctx: Ctx, session_id: str, ids: set[str]) -> None:
    if not session_id:
        return
    from memcli.store.files import atomic_write

    try:
        atomic_write(_session_file(ctx, session_id), json.dumps(sorted(ids)).encode())
    except (OSError, MemcliError):  # MemcliError: no usable cache folder (a link, say)
        pass


def run_hook(agent: str, event: str, raw: str, workspace: str | None, actor: str | None,
             on_open: Callable[[float, Callable[[], None], str | None], None] | None = None) -> HookRun:
    """Answer one hook call; never raises.

    Args:
        agent: the agent's name (``agents.registry``): how its stdin is read and its answer written.
        event: ``session-start``, ``user-prompt-submit``, ``pre-tool-use``, ``post-tool-use``,
            ``pre-compact`` or ``session-end``. An agent that has ``post-tool-use`` (Gemini CLI,
            whose BeforeTool context never reaches the model) gets only the guards' decision
            before a tool, and the memories about the call after it.
        raw: the hook's stdin (the agent's JSON).
        workspace: ``--workspace``, if given; else ``$MEMCLI_WORKSPACE``, else found from the
            hook's ``cwd``.
        actor: ``--actor``, if given.
        on_open: called once the workspace is open with its ``[hooks] deadline`` (seconds),
            a function that leaves the index to a background build, and for a prompt or
            tool hook the answer to give if the deadline comes first (:func:`late_answer`;
            None for the others): what the CLI's ``Watchdog`` keeps, and uses if it
            answers first.
    """
    from memcli.agents.registry import get
    from memcli.agents.tool_calls import call_of

    own = get(agent)
    payload, problem = own.read_input(raw)
    run = HookRun("", [problem] if problem else [])
    tool_event = event in ("pre-tool-use", "post-tool-use")
    call = call_of(agent, payload.tool_name, payload.tool_input) if tool_event else None
    # a pre-tool input that is there but cannot be read (not JSON, nested past the reader): the
    # call it describes is unknown, so no deny or ask guard may let it through (newcomer, stop 36)
    unreadable = event == "pre-tool-use" and problem is not None and bool(raw.strip())
    if tool_event and call is None and not unreadable:
        return run  # a tool no guard or memory is about (Codex runs it for every tool): nothing to open
    after = "post-tool-use" in own.events  # the agent takes a tool's memories after the call only
    context = ""
    ctx = None
    decision: list[str] = []
    try:
        ctx = _open(workspace, actor, payload.cwd)
        if on_open is not None:
            if event in ("user-prompt-submit", "pre-tool-use", "post-tool-use"):
                late, before_exit = late_answer(ctx, agent, event, payload.session_id)
                on_open(ctx.ws.config.hook_deadline, before_exit, late)
            else:
                on_open(ctx.ws.config.hook_deadline, lambda: _background_build(ctx), None)
        if event not in ("pre-compact", "session-end"):  # those write: their gates need the whole index
            ctx.bound()  # [hooks] deadline: a stale index is served, the build goes on in the background
        if unreadable:
            decision = _unreadable_verdict(ctx, own)
        elif call is not None and event == "pre-tool-use":
            if on_open is not None:
                deadline, keep = ctx.ws.config.hook_deadline, on_open

                def late_decision(answer: str | None) -> None:  # the watchdog's answer while guards are checked
                    keep(deadline, before_exit, answer if answer is not None else late)
                decision = _guard(ctx, agent, payload, call, late_decision, deadline)
                late_decision(None)
            else:
                decision = _guard(ctx, agent, payload, call)
        if not decision and not (event == "pre-tool-use" and after) and not unreadable:
            context = _dispatch(ctx, event, payload, run, agent=agent, call=call)
        run.warnings.extend(ctx.warnings)
    except MemcliError as err:
        run.warnings.append(f"{UNSERVED} {err.line()}")
    except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
        _bug(ctx, run, "memcli hook", err)
    run.stdout = own.decide(decision[0], decision[1]) if decision else formats.answer(agent, event, context)
    return run


def _background_build(ctx: Ctx) -> None:
    """Start the background index build (it finds nothing to do, or waits for the holder of
    the build lock, when the index is in step or being built)."""
    from memcli.index.build import spawn_build

    try:
        spawn_build(ctx.ws.root, ctx.ws.cache)
    except MemcliError:  # no usable cache folder
        pass


def _bug(ctx: Ctx | None, run: HookRun, what: str, err: Exception) -> None:
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


def _open(workspace: str | None, actor: str | None, cwd: str) -> Ctx:
    from memcli.service import Ctx
    from memcli.service.branch import locate

    notes = []
    if workspace is None and not os.environ.get("MEMCLI_WORKSPACE") and cwd and Path(cwd).is_dir():
        workspace, note = locate(None, Path(cwd))  # a memory branch is checked out on the first start
        notes = [note] if note else []
    ctx = Ctx.open(workspace, actor, tolerant=True)  # a broken memcli.toml never switches the guards off
    ctx.warnings.extend(notes)
    return ctx


def _journal(ctx: Ctx, agent: str, payload: formats.HookInput, event: str, ids: list[str],
             pattern: str | None = None, call: str | None = None) -> None:
    """One line of the usage journal (``store.usage``); never raises."""
    from memcli.store import usage

    try:
        cache = ctx.ws.cache
    except MemcliError:
        return
    usage.append(cache, ctx.actor, agent, payload.session_id, event, ids, pattern, call=call)


def guards_in_force(ctx: Ctx, catalog: Catalog | None = None) -> list[tuple[Memory, Guard]]:
    """``(memory, memcli.guards.Guard)`` for every guard of the memories in force that the
    caller reads (active, not expired, in ``ctx.scopes()``, visible to ``ctx.actor``): a
    pending proposal's guard is never enforced; a quarantined memory's verified version's
    guards are (``service.held_guards``). A guard that takes a working tool away
    (``memcli.guards.in_force``: ``deny: Bash``) counts as ``warn`` unless the memory
    is the caller's own (its ``provenance.actor``, which ``check`` and verify on arrival hold
    to the commit's author): a teammate's memory may forbid a command, not the shell."""
    from memcli.guards import check_guards, in_force
    from memcli.service.held_guards import verified_versions  # a quarantined memory's verified guards hold

    scopes = set(ctx.scopes())
    early = catalog is not None  # the index as it stands, before what arrived is verified: no held versions
    catalog = ctx.catalog() if catalog is None else catalog
    active = catalog.guarded()  # not every active memory: those with guards (and anchor commands)

    def served(memory_id: str) -> bool:
        return any(m.id == memory_id and m.status == "active" for m in catalog.by_prefix(memory_id))

    out: list[tuple[Memory, Guard]] = []
    for memory in [*active, *([] if early else verified_versions(ctx, served))]:
        if memory.guards and memory.scope in scopes and memory.served(ctx.now) and ctx.may_see(memory):
            try:
                found = check_guards(memory.guards)
            except MemcliError:  # a hand edit the index took in before the check: not enforced
                continue
            own = memory.provenance.actor == ctx.actor
            out.extend((memory, in_force(g, own)) for g in found)
    return out


def _guard(ctx: Ctx, agent: str, payload: formats.HookInput, call: Call,
           late: Callable[[str | None], None] | None = None, deadline: float = 0.0) -> list[str]:
    """The guards' verdict on a tool call: ``[decision, reason]`` (``deny`` or ``ask``) when a
    guard of a memory in force denies or asks about it, else ``[]``; each verdict and each
    ``warn`` guard's match goes to the usage journal.

    A call memcli cannot check in full (``memcli.guards.unchecked``: a command over the
    limits) while a ``deny`` or ``ask`` guard on its tool is in force is refused (or asked
    about) as too long or complex to check, never let through unchecked. ``late``, when
    given, is told the agent's answer for a watchdog that answers at the hook's ``deadline``
    (seconds) while the guards are being matched: the same refusal, saying the call could
    not be checked in time.
    """
    from memcli.agents.registry import get
    from memcli.agents.tool_calls import call_key
    from memcli.guards import unchecked

    own = get(agent)
    if late is not None:
        def before_arrival(catalog: Catalog) -> None:  # red team, stop 36 (F6): a long verification
            held = _strong(guards_in_force(ctx, catalog), call)  # of an arrival let calls through
            try:
                hit = unchecked(call) or any(g.kind in ("deny", "ask") for _, g in match_call(held, call, payload.cwd))
            except (ValueError, OSError):
                hit = True
            if held and hit:
                why = (f"what arrived in the store is being verified past the hook's deadline, [hooks] deadline = "
                       f"{deadline:g} s")
                late(own.decide(*_unchecked_verdict(own, held, why)))
        ctx.before_arrival = before_arrival
    guards = guards_in_force(ctx)
    ctx.before_arrival = None
    if not guards:
        return []
    held = _strong(guards, call)
    if held and late is not None:
        why = f"it could not be checked within the hook's deadline, [hooks] deadline = {deadline:g} s"
        late(own.decide(*_unchecked_verdict(own, held, why)))
    key = call_key(call)  # before the paths are resolved: as the agent named them, as its transcript does
    if os.environ.get("MEMCLI_TEST_STALL_AT"):  # tests only (memcli.testpoint); no import on the hot path
        from memcli import testpoint

        testpoint.stall("guards:matching")
    try:
        matched = match_call(guards, call, payload.cwd)
    except (ValueError, OSError):  # a NUL byte or an over-long name in the cwd or a path (newcomer, stop 36)
        if not held:
            return []
        verdict = _unchecked_verdict(own, held, "its working folder or a path in it cannot be read", call.malformed)
        _journal(ctx, agent, payload, "denied" if verdict[0] == "deny" else "asked",
                 list(dict.fromkeys(m.id for m, _ in held)), held[0][1].pattern, key)
        return verdict
    for memory, guard in matched:
        if guard.kind == "warn":
            _journal(ctx, agent, payload, "violated", [memory.id], guard.pattern, key)
    strong = [(m, g) for m, g in matched if g.kind in ("deny", "ask")]
    if not strong:
        why = unchecked(call) if held else ""
        if not why:
            return []
        verdict = _unchecked_verdict(own, held, why, call.malformed)
        _journal(ctx, agent, payload, "denied" if verdict[0] == "deny" else "asked",
                 list(dict.fromkeys(m.id for m, _ in held)), held[0][1].pattern, key)
        return verdict
    kind = strong[0][1].kind
    chosen = [(m, g) for m, g in strong if g.kind == kind]
    asks = kind == "ask" and own.asks
    lines = []
    for memory, guard in chosen[:3]:
        text = " ".join(memory.text.split())
        if len(text) > 600:
            text = text[:597] + "..."
        lines.append(f'memory {memory.id} ({memory.scope}) says: "{text}" (guard: {guard.kind} {guard.pattern})')
    if kind == "deny":
        lead = "memcli: this call is denied by a project memory."
        tail = "Follow the memory instead (do not retry the same call another way)."
    elif asks:
        lead = "memcli: a project memory asks the person to confirm this call."
        tail = "Go ahead only if the person agrees."
    else:
        lead = f"memcli: a project memory asks for the person's confirmation before this call, and {own.title} " \
               "hooks cannot ask, so it is denied."
        tail = "Ask the person; if they agree, they can run it themselves or allow it."
    reason = " ".join([lead, *lines, tail])
    _journal(ctx, agent, payload, "denied" if not asks else "asked", [m.id for m, _ in chosen],
             chosen[0][1].pattern, key)
    return ["deny" if not asks else "ask", reason]


def _unreadable_verdict(ctx: Ctx, own: Agent) -> list[str]:
    """``[decision, reason]`` for a pre-tool call whose hook input could not be read: refused
    (or asked about) while any ``deny`` or ``ask`` guard is in force, since its tool is unknown;
    ``[]`` when none is."""
    held = _strong(guards_in_force(ctx))
    return _unchecked_verdict(own, held, "the hook's input could not be read", malformed=True) if held else []


def _strong(guards: list[tuple[Memory, Guard]], call: Call | None = None) -> list[tuple[Memory, Guard]]:
    """The ``deny`` and ``ask`` pairs of ``guards`` on ``call``'s tool (``memcli.guards.covers``);
    with no call, on any tool."""
    from memcli.guards import covers

    return [(m, g) for m, g in guards if g.kind in ("deny", "ask")
            and (call is None or covers(g.rule, call.tool, call.writes))]


def _unchecked_verdict(own: Agent, held: list[tuple[Memory, Guard]], why: str, malformed: bool = False) -> list[str]:
    """``[decision, reason]`` for a call memcli could not check against the ``deny``/``ask``
    guards ``held`` (``(memory, guard)`` pairs on its tool), ``why`` saying which limit it
    passed (``malformed``: its input could not be read at all): ``deny`` when one of them
    denies or the agent cannot ask, else ``ask``."""
    kind = "deny" if any(g.kind == "deny" for _, g in held) else "ask"
    asks = kind == "ask" and own.asks
    lines = [f"memory {m.id} ({m.scope}) holds the guard {g.kind} {g.pattern}." for m, g in held[:3]]
    checked = "too long or complex to check against the guards of this project's memories"
    if malformed:  # agents.tool_calls.MALFORMED: its input could not be read
        checked = "not in the form its agent sends, so it cannot be checked against the guards of this " \
                  "project's memories"
    if kind == "deny":
        lead = f"memcli: this call is denied: it is {checked} ({why})."
    elif asks:
        lead = f"memcli: this call is {checked} ({why}), so the person is asked to confirm it."
    else:
        lead = f"memcli: this call is {checked} ({why}), and {own.title} hooks cannot ask, so it is denied."
    tail = "Split it into shorter calls, each of which memcli can check."
    return ["deny" if not asks else "ask", " ".join([lead, *lines, tail])]


def match_call(guards: list[tuple[Memory, Guard]], call: Call, cwd: str) -> list[tuple[Memory, Guard]]:
    """The ``(memory, guard)`` pairs of ``guards`` that match ``call``, strongest kind first
    (``memcli.guards.decide``), its paths read from the agent's working folder ``cwd`` (made
    absolute and real here: ``call.paths`` is rewritten) and ``/path`` patterns from the
    project's root."""
    from memcli.guards import Where, decide

    where = Where(cwd=os.path.realpath(cwd) if cwd else "", home=os.path.expanduser("~"))
    if call.paths and any(g.rule.spec and g.rule.spec.startswith("/") and not g.rule.spec.startswith("//")
                          for _, g in guards):
        where.root = _project_root(cwd)  # git's top level: asked only for a /path pattern
    call.paths = [os.path.realpath(os.path.join(cwd or "/", p)) for p in call.paths]
    return decide(guards, call, where)


def _project_root(cwd: str) -> str:
    """The project's root for path guards written ``/path`` (git's top level of the hook's
    ``cwd``, else the ``cwd``); "" when neither is known."""
    from memcli.service.context import _toplevel

    folder = Path(cwd) if cwd and Path(cwd).is_dir() else None
    if folder is None:
        return ""
    return str(_toplevel(folder) or os.path.realpath(folder))


def _dispatch(ctx: Ctx, event: str, payload: formats.HookInput, run: HookRun, agent: str = "",
              call: Call | None = None) -> str:
    from memcli.service.context import context

    folder = Path(payload.cwd) if payload.cwd and Path(payload.cwd).is_dir() else None
    if event in ("session-start", "session-end") and getattr(ctx.ws.config, f"sync_{event.replace('-', '_')}"):
        _sync(ctx, run)
    if event == "session-start":
        lead = _session_summary(ctx, payload.session_id) if payload.source in RESTARTS else []
        block = context(ctx, None, None, "text", folder=folder, lead=lead)
        _remember_seen(ctx, payload.session_id, set(block.included))
        _journal(ctx, agent, payload, "injected", list(block.included))
        note = _harvest_note(ctx) if ctx.ws.config.agents_harvest else ""
        if ctx.ws.config.hook_stale:
            from memcli.service.stale_notes import code_moved, spawn_refresh

            if code_moved(ctx):  # the code moved since the last verdicts: judge again, after this answer
                spawn_refresh(ctx)
        return note + block.text
    if event in ("pre-tool-use", "post-tool-use"):
        seen = _seen(ctx, payload.session_id)
        block = _tool_block(ctx, payload, folder, seen, call)
        _remember_seen(ctx, payload.session_id, seen | set(block.included))
        _journal(ctx, agent, payload, "delivered", list(block.included))
        return block.text
    if event == "user-prompt-submit":
        seen = _seen(ctx, payload.session_id)
        block = _prompt_block(ctx, payload.prompt, seen)
        _remember_seen(ctx, payload.session_id, seen | set(block.included))
        _journal(ctx, agent, payload, "injected", list(block.included))
        return block.text
    started = time.monotonic()
    from memcli.store.usage import SELF_TEST_SESSION

    if event == "session-end" and payload.transcript_path and payload.session_id != SELF_TEST_SESSION:
        _violations(ctx, agent, payload, run)  # (`memcli hook check` names a transcript that does not exist)
    _after_session(ctx, event, payload, run)
    if event == "session-end" and ctx.ws.config.agents_harvest:  # within the same deadline as extraction
        _harvest(ctx, agent, folder, run, started + EXTRACT_SECONDS["session-end"])
    if event == "session-end" and payload.session_id:
        _session_file(ctx, payload.session_id).unlink(missing_ok=True)
        _late_file(ctx, payload.session_id).unlink(missing_ok=True)
    return ""


def _violations(ctx: Ctx, agent: str, payload: formats.HookInput, run: HookRun) -> None:
    """session-end: count the guard violations the session's transcript shows
    (``service.violations``); a failure is one warning line, never a failed hook."""
    from memcli.agents.transcript import DeadlineReached
    from memcli.service.violations import SCAN_SECONDS, scan

    try:
        found = scan(ctx, agent, payload.session_id, Path(payload.transcript_path), payload.cwd)
    except DeadlineReached:
        run.warnings.append(f"guard violations not counted: reading the transcript took more than {SCAN_SECONDS:g} s")
        return
    except MemcliError as err:
        run.warnings.append(f"guard violations not counted: {err.line()}")
        return
    except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
        _bug(ctx, run, "counting guard violations", err)
        return
    run.warnings.extend(found.warnings)
    if found.counted:
        run.warnings.append(f"{found.counted} guard violation{'s' if found.counted != 1 else ''} in this session's "
                            "transcript (memcli stats --memories)")


def _harvest(ctx: Ctx, agent: str, folder: Path | None, run: HookRun, deadline: float) -> None:
    """``[agents] harvest``: import what ``agent`` wrote into its own memory store this session
    (``service.agent_memory.harvest``, imported only here) by ``deadline`` (``time.monotonic()``,
    the one extraction had); a failure is one warning line."""
    from memcli.agents.transcript import DeadlineReached

    try:
        from memcli.service.agent_memory import harvest

        result = harvest(ctx, agent, folder, deadline=deadline)
        if result is not None and result.new():
            run.warnings.append(result.message())
        if result is not None:  # text it could not read (a layout memcli does not know) is said, never skipped quietly
            run.warnings.extend(f"harvest: {s.root}/{file}: not read, a layout memcli does not know: {why}"
                                for s in result.stores for file, why in s.unknown)
    except DeadlineReached:
        run.warnings.append(f"harvest stopped at its deadline; nothing was written (run `memcli import --agent "
                            f"{agent}`)")
    except MemcliError as err:
        run.warnings.append(f"harvest failed: {err.line()}")
    except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
        _bug(ctx, run, "harvest", err)


def _harvest_note(ctx: Ctx) -> str:
    """The fenced note of what the last harvest brought in, once; '' when there is none."""
    if not (ctx.ws.cache / HARVEST_NOTE).is_file():  # the usual case costs one stat
        return ""
    from memcli.service.harvest_note import take_note

    note = take_note(ctx)
    return f"<memcli-context>\n{note}\n</memcli-context>\n" if note else ""


def _sync(ctx: Ctx, run: HookRun) -> None:
    """``memcli sync --quiet --deadline [sync] deadline`` for a hook (``[sync] session_start``
    / ``session_end``); a failure is one warning line, never a failed hook."""
    from memcli.service.sync import sync

    try:
        sync(ctx, None, ctx.ws.config.sync_deadline)
    except MemcliError as err:
        run.warnings.append(f"sync skipped: {err.line()}")


def _session_summary(ctx: Ctx, session_id: str) -> list[Memory]:
    """The latest ``summary`` memory of the session ``session_id`` that the caller owns (empty if none).

    The scope is ``session:<name>`` as ``compact --transcript`` names it from the
    transcript's ``sessionId`` (``service.session.session_name``), which is the hook's ``session_id``.
    """
    from memcli.index import Query
    from memcli.service.read import retriever
    from memcli.service.session import session_name

    name = session_name(session_id, "")
    if not session_id or name == "transcript-":
        return []
    query = Query(text="", scopes=[f"session:{name}"], now=ctx.now, category="summary", limit=1, order="newest",
                  actor=ctx.actor)
    return [h.memory for h in retriever(ctx).search(query)]


def _tool_block(ctx: Ctx, payload: formats.HookInput, folder: Path | None, seen: set[str],
                call: Call | None = None) -> Block:
    """Memories about the files a tool call reads or edits, or about the command it runs
    (:func:`command_memories`), that this session has not been given yet."""
    from memcli.agents.context_block import render
    from memcli.agents.tool_calls import files_of
    from memcli.index import Query, path_specificity
    from memcli.service.context import project_path
    from memcli.service.read import retriever
    from memcli.service.stale_notes import notes, old_paths, renamed, verdicts
    from memcli.service.unbacked import notes as unbacked

    stale = verdicts(ctx)  # one read for the marks and the renames
    from memcli.agents.injection import vetted_first

    if call is not None and call.tool == "Bash":
        ordered = vetted_first([m for m in command_memories(ctx, call.command) if m.id not in seen], ctx.actor)
        return render(ordered[:TOOL_LIMIT], TOOL_BUDGET, total=len(ordered), notes=notes(ctx, stale),
                      unverified=unbacked(ctx, ordered[:TOOL_LIMIT]), reader=ctx.actor)
    search = retriever(ctx)
    found: dict[str, tuple] = {}
    names = files_of(payload.tool_name, payload.tool_input) or (list(call.paths) if call is not None else [])
    moves = renamed(ctx, stale)
    for name in names:
        path = project_path(name, folder, ctx.ws.root)
        if path is None:
            continue
        # the file as it is named now, then as it was named before a rename `memcli stale`
        # found (those memories carry its "may be outdated: … was renamed to …" mark)
        for before, then in enumerate([path, *old_paths(moves, path)]):
            query = Query(text="", scopes=ctx.scopes(), now=ctx.now, limit=TOOL_POOL + len(seen), path=then,
                          actor=ctx.actor)
            named = _naming(search, query, then)
            for rank, hit in enumerate(search.search(query)):
                if hit.memory.id not in seen:
                    exact, literal, chars = path_specificity(hit.memory.paths, then)
                    key = (min(before, 1), -exact, named.get(hit.memory.id, (len(_NAMES), 0)), -literal, -chars,
                           rank)
                    if hit.memory.id not in found or key < found[hit.memory.id][0]:
                        found[hit.memory.id] = (key, hit.memory)
    # the memory written for this very file first; then those whose text names the file or its
    # folder; then by how narrow the glob is (its folder's before the whole tree's); among
    # equals, the browse order (pinned, importance, recency); after all of them, the memories
    # about the file's name before a rename; the unvetted instruction-like ones last of all
    ordered = vetted_first([memory for _, memory in sorted(found.values(), key=lambda pair: pair[0])], ctx.actor)
    return render(ordered[:TOOL_LIMIT], TOOL_BUDGET, total=len(found), notes=notes(ctx, stale),
                  unverified=unbacked(ctx, ordered[:TOOL_LIMIT]), reader=ctx.actor)


def command_memories(ctx: Ctx, command: str) -> list[Memory]:
    """The memories in force (in the caller's scopes) that name a command this shell command
    line runs: one of their anchor's ``commands`` (``policy.pointers``: ``make e2e``,
    ``npm run build``) starts one of its simple commands (``memcli.guards.commands_of``) at a
    word boundary, or a guard of theirs matches it; after those, the memories whose text names
    the command (:func:`command_phrases`: ``terraform destroy``, ``docker compose``, a tool such
    as ``pytest``; newcomer fault, stop 33: "Never run terraform destroy …" was not given before
    ``terraform destroy``). Longest named command first (a guard's match counts 1, a phrase
    0.8 or 0.5), then the browse order (pinned, importance, recency).

    Read through the index, never every memory: the memories with guards or anchor commands
    (``Catalog.guarded``), and for each phrase (at most :data:`MAX_PHRASES`) the first
    :data:`PHRASE_POOL` hits of a recall of its words, of which those that hold the phrase
    itself count."""
    from memcli.guards import Call, check_guards, command_matches, commands_of, matches
    from memcli.index import Query, browse_key
    parts = commands_of(command)
    if not parts:
        return []
    phrases = command_phrases(parts)[:MAX_PHRASES]
    scopes = set(ctx.scopes())
    catalog = ctx.catalog()
    found: dict[str, tuple[float, Memory]] = {}

    def keep(memory: Memory, weight: float) -> None:
        if memory.scope not in scopes or not memory.served(ctx.now) or not ctx.may_see(memory):
            return
        held = found.get(memory.id)
        if held is None or weight > held[0]:
            found[memory.id] = (weight, memory)

    for memory in catalog.guarded():  # an anchor's commands, a guard: in the record, not the text
        named = (memory.anchor or {}).get("commands") or []
        longest: float = max((len(n) for n in named for part in parts if command_matches(f"{n}:*", part)),
                             default=0)
        if not longest and memory.guards:
            try:
                guards = check_guards(memory.guards)
            except MemcliError:
                guards = []
            if any(matches(g.rule, Call("Bash", command=command)) for g in guards if g.rule.tool == "Bash"):
                longest = 1
        if longest:
            keep(memory, longest)
    if phrases:  # a text naming the command: its words through the index, then the phrase itself
        retriever = catalog.retriever()
        for weight, phrase in phrases:
            query = Query(text=phrase, scopes=sorted(scopes), now=ctx.now, mode="exact", limit=PHRASE_POOL,
                          actor=ctx.actor)
            for hit in retriever.search(query):
                if _names(" ".join(hit.memory.text.lower().replace("`", " ").split()), phrase):
                    keep(hit.memory, weight)
    key = browse_key(Query(text="", scopes=sorted(scopes), now=ctx.now))
    return [memory for _, memory in sorted(found.values(), key=lambda pair: (-pair[0], key(pair[1])))]


#: Phrases of one shell command looked up at most (a long compound command names many), and
#: the memories the index gives for each, best first, before the phrase itself is checked.
MAX_PHRASES, PHRASE_POOL = 8, 50
#: Programs too common for their name alone to say which memory a call is about: shell
#: utilities, interpreters, package managers and task runners (a two-word phrase of theirs still
#: counts: ``git push``, ``docker compose``; ``make lint`` is not about "run make e2e …", nor
#: ``pnpm install`` about "use pnpm, never npm"; ``python manage.py`` names a path, not a word).
_COMMON = frozenset(("cd", "ls", "cat", "echo", "grep", "rg", "find", "sed", "awk", "head", "tail", "less", "wc",
                     "sort", "cp", "mv", "rm", "mkdir", "touch", "chmod", "pwd", "true", "false", "test", "printf",
                     "python", "python3", "node", "bash", "sh", "git", "env", "xargs", "tee", "diff", "which",
                     "make", "just", "npm", "npx", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "cargo",
                     "go", "docker", "gradle", "mvn",
                     # wrappers (memcli.guards.WRAPPERS): the command they run is a part of its own
                     "sudo", "doas", "command", "builtin", "exec", "eval", "timeout", "nohup", "nice", "time",
                     "stdbuf"))


def command_phrases(parts: list[str]) -> list[tuple[float, str]]:
    """What a memory's text must name to be about these simple commands: each one's program
    with its first word argument (``terraform destroy``, ``docker compose``, ``kubectl apply``;
    weight 0.8, below a command the memory's anchor or guard names, weight its length or 1),
    and the program alone unless it is too common to tell (``pytest``; weight 0.5). A path
    ``/usr/bin/terraform`` is named by its last part. Lower case.

    Args:
        parts: simple commands (``memcli.guards.commands_of``).
    """
    out: list[tuple[float, str]] = []
    for part in parts:
        words = part.lower().split()
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if not program or not program[0].isalnum():
            continue
        arg = next((w for w in words[1:] if not w.startswith("-")), "")
        if arg and arg.replace("-", "").replace("_", "").isalnum() and arg[0].isalpha():
            out.append((0.8, f"{program} {arg}"))
        if program not in _COMMON and len(program) >= 3:
            out.append((0.5, program))
    return out


def _names(text: str, phrase: str) -> bool:
    """Whether ``text`` (lower case, blank runs as one space) holds ``phrase`` as whole words."""
    at = text.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if (at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_-")) and \
                (end == len(text) or not (text[end].isalnum() or text[end] in "_")):
            return True
        at = text.find(phrase, at + 1)
    return False


#: How a memory's text may name a file, strongest first: its whole path
#: (``web/src/locales/zh-CN.json``), its file name (``importer.py``), its folder's path (``api/routes``).
_NAMES = ("path", "file name", "folder")


def _naming(search: Retriever, query: Query, path: str) -> dict[str, tuple[int, int]]:
    """Which memories about ``path`` (those ``query``, with its path filter, finds) name the file
    in their text, and how (``_NAMES``): id -> (level, rank within the level).

    Each form is searched as one phrase (a query word of adjacent tokens, ``index.search``),
    and only memories that hold it whole count. Bare words were tried first: ``web``,
    ``ledger`` and the stem of ``accounts`` are named by most memories of their folder and
    pulled the wrong ones forward (bench/heldout.py, tune split).
    """
    folder, _, name = path.rpartition("/")
    forms = [path, name if folder else "", folder if folder.count("/") >= 1 else ""]
    named: dict[str, tuple[int, int]] = {}
    for level, form in enumerate(forms):
        if not form:
            continue
        query.text = form
        for rank, hit in enumerate(search.search(query)):
            if hit.match == "exact":
                named.setdefault(hit.memory.id, (level, rank))
    query.text = ""
    return named


def _prompt_block(ctx: Ctx, prompt: str, seen: set[str], floor: float | None = None) -> Block:
    """The few memories relevant to the prompt that this session has not been given yet.

    The prompt is searched on its content words less the words that say what to do
    (``index.query.prompt_words``: "add", "fix", "thanks"), and the model of a warm process,
    when one answers, reads the whole prompt; what is added is :func:`prompt_selection`'s. A
    prompt of stop and task words only ("what do you think?", "thanks!") adds nothing.

    Args:
        prompt: the person's prompt (the first 2,000 characters are searched).
        seen: ids already given in this session.
        floor: overrides ``[hooks] prompt_floor`` (0-1), for the evaluations in bench/.
    """
    from memcli.agents.context_block import render
    from memcli.agents.injected import strip_injected  # not agents.transcript: dataclasses, inspect
    from memcli.filters import Filters
    from memcli.service.read import recall, semantic_retriever

    # Gemini CLI's BeforeAgent prompt may carry the session start's <hook_context> (memcli's
    # own block among it); only the person's words are searched
    said = strip_injected(prompt)[:2000]
    words = prompt_words(said)
    if not words:
        return render([], PROMPT_BUDGET)
    floor = ctx.ws.config.prompt_floor if floor is None else floor
    using = semantic_retriever(ctx, PROMPT_WARM_BUDGET)  # a warm process's model, else lexical
    pool = PROMPT_SCORED_POOL if getattr(using, "semantic", None) is not None else PROMPT_POOL
    # the lexical side searches the content words; a model reads the whole prompt, which it
    # was trained on (sentences), not a bag of words
    hits = recall(ctx, " ".join(w.text for w in words), Filters(limit=pool + len(seen)), using=using,
                  meaning=said)
    from memcli.service.stale_notes import notes
    from memcli.service.unbacked import notes as unbacked

    hybrid = str(getattr(using, "answered", "lexical")).startswith("hybrid")
    from memcli.agents.injection import unvetted

    doubt = {h.memory.id for h in hits if unvetted(h.memory, ctx.actor)}
    chosen = [h.memory for h in prompt_selection(hits, words, floor, hybrid, seen, doubt)]
    return render(chosen, PROMPT_BUDGET, notes=notes(ctx), unverified=unbacked(ctx, chosen), reader=ctx.actor)


def prompt_selection(hits: list[Hit], words: list[Word], floor: float, hybrid: bool,
                     seen: set[str] | frozenset[str] = frozenset(),
                     doubt: set[str] | frozenset[str] = frozenset()) -> list[Hit]:
    """What the prompt hook adds of a prompt's recall ``hits`` (its content ``words``), none
    of ``seen``: with a warm model's answer (``hybrid``), :func:`select_scored` over the first
    ``PROMPT_SCORED_POOL`` hits; else the lexical rule (:func:`chosen`, at most
    ``PROMPT_LIMIT`` of the first ``PROMPT_POOL``).

    ``doubt``: ids of unvetted instruction-like hits (``agents.injection.unvetted``). The
    others are chosen as if those were not there (their scores set no bar and take no place);
    a doubtful hit the rule would choose among all of them comes after, in a place left over."""
    if doubt:
        ordinary = prompt_selection([h for h in hits if h.memory.id not in doubt], words, floor, hybrid, seen)
        rest = [h for h in prompt_selection(hits, words, floor, hybrid, seen) if h.memory.id in doubt]
        return (ordinary + rest)[:PROMPT_SCORED_LIMIT if hybrid else PROMPT_LIMIT]
    if hybrid:
        return select_scored(hits[:PROMPT_SCORED_POOL + len(seen)], words, PROMPT_WEIGHTS, PROMPT_CUT,
                             PROMPT_SCORED_LIMIT, seen=seen)
    return [h for h in chosen(hits[:PROMPT_POOL + len(seen)], words, floor) if h.memory.id not in seen][:PROMPT_LIMIT]


def prompt_words(text: str) -> list[Word]:
    """The words of a prompt the prompt hook searches on (``index.query.Word``): its content
    words, less those that say what to do (``index.query.prompt_words``); empty for a prompt
    of stop and task words only."""
    from memcli.index.query import analyse, content
    from memcli.index.query import prompt_words as task

    words, only_stop = content(analyse(text))
    if only_stop:
        return []
    skip = task()
    return [w for w in words if w.cjk or not all(t in skip for t in w.tokens)]


def chosen(hits: list[Hit], words: list[Word], floor: float) -> list[Hit]:
    """The hits of a prompt's lexical recall that clear the relevance floor, best first.

    A hit is kept on its words when it holds enough of the prompt (its IDF-weighted
    ``coverage``, see :func:`_share`, reaches ``floor``), holds at least
    ``PROMPT_MIN_HELD`` of the prompt's content words (all of them for a shorter prompt:
    "good morning!" matching "morning" alone is no reason), and scores at least
    ``PROMPT_MIN_SCORE`` of the best lexical hit's score (a long tail of memories sharing
    one common word stays out). Set on the tune and heldout prompt splits of
    ``bench/heldout_data.py`` (docs/search.md). A warm model's answer is chosen by
    :func:`select_scored` instead.

    Args:
        hits: ranked recall hits (``index.Hit``), best first.
        words: the prompt's content words (``index.query.Word``).
        floor: the least coverage (0-1), ``[hooks] prompt_floor``.
    """
    if not hits:
        return []
    need = min(PROMPT_MIN_HELD, len(words))
    best = max((h.parts.get("lexical", h.score) for h in hits if h.match != "semantic"), default=0.0)

    def kept(hit: Hit) -> bool:
        return (hit.match != "semantic" and _share(hit, words) >= floor and _held(hit, words) >= need
                and hit.parts.get("lexical", hit.score) >= PROMPT_MIN_SCORE * best)
    return [h for h in hits if kept(h)]


#: The features :func:`prompt_features` gives a hit, in this order (``PROMPT_WEIGHTS``).
PROMPT_FEATURES = ("cosine", "below the best cosine", "cosine's standing in the pool", "lexical coverage",
                   "every word held", "1 / (1 + rank)", "coverage x cosine", "every word held x cosine")


def prompt_features(hits: list[Hit], words: list[Word]) -> list[list[float]]:
    """What the prompt hook's scored selection reads of each hit of a hybrid recall
    (``PROMPT_FEATURES``): the model's score (``cosine``), its distance below the pool's best,
    its standing among the pool's scores (standard score), the hit's coverage of the prompt's
    content words (:func:`_share`; 0 for a hit only the meaning found), whether it holds every
    word (``exact`` or ``fuzzy``), and its rank in recall's order."""
    cosines = [float(h.parts.get("cosine", 0.0)) for h in hits]
    if not cosines:
        return []
    best = max(cosines)
    mean = sum(cosines) / len(cosines)
    spread = (sum((c - mean) ** 2 for c in cosines) / len(cosines)) ** 0.5
    out = []
    for rank, (hit, cosine) in enumerate(zip(hits, cosines)):
        share = 0.0 if hit.match == "semantic" else _share(hit, words)
        whole = float(hit.match in ("exact", "fuzzy"))
        out.append([cosine, cosine - best, (cosine - mean) / (spread + 1e-3), share, whole, 1 / (1 + rank),
                    share * cosine, whole * cosine])
    return out


def select_scored(hits: list[Hit], words: list[Word], weights: Sequence[float], cut: float, limit: int,
                  first: float = 1.0, seen: set[str] | frozenset[str] = frozenset(),
                  relative: float = 0.0) -> list[Hit]:
    """The hits of a hybrid recall whose relevance, a logistic function of
    :func:`prompt_features` (over all of ``hits``) with ``weights`` (bias last), is at least
    ``cut`` and at least ``relative`` (0-1) times the most likely hit's, most likely first,
    none of ``seen``, at most ``limit``; when none is, the most likely one if it reaches
    ``first`` (1.0, the default: never). ``first`` and ``relative`` (0, the default: no such
    condition) are measured in ``bench/prompt_learn.py``: a lower ``first`` left fewer prompts
    empty-handed but gave a memory to most prompts that need none; a ``relative`` of 0.7 bought
    precision with recall, about 0.03 for 0.01."""
    import math

    scored = []
    for hit, feats in zip(hits, prompt_features(hits, words)):
        if hit.memory.id in seen:
            continue
        z = weights[-1] + sum(w * f for w, f in zip(weights, feats))
        scored.append((1 / (1 + math.exp(-max(-50.0, min(50.0, z)))), hit))
    scored.sort(key=lambda pair: -pair[0])
    kept = [hit for p, hit in scored if p >= cut and p >= relative * scored[0][0]][:limit]
    if not kept and scored and scored[0][0] >= first:
        kept = [scored[0][1]]
    return kept


def _held(hit: Hit, words: list[Word]) -> int:
    """How many of the prompt's content words a hit holds (the index's ``held``; else estimated)."""
    if "held" in hit.parts:
        return int(hit.parts["held"])
    return round(_share(hit, words) * len(words))


def _share(hit: Hit, words: list[Word]) -> float:
    """A hit's coverage of the prompt: the index's IDF-weighted ``coverage``; from the file scan
    (index unavailable), the unweighted share of content words the memory holds; 0 for a
    substring hit."""
    if "bm25" in hit.parts:
        return hit.parts.get("coverage", 0.0)
    if hit.match == "substring":
        return 0.0
    from memcli.index.tokenize import tokens

    memory = hit.memory
    held = set(tokens(" ".join([memory.text, memory.subject or "", *memory.tags])))
    return sum(set(w.tokens) <= held for w in words) / len(words)


def _after_session(ctx: Ctx, event: str, payload: formats.HookInput, run: HookRun) -> None:
    """pre-compact / session-end: extraction (``[hooks] extract``) and, for pre-compact, the
    session summary (``[hooks] summarize``), each on its own: one failing gives one warning
    line and the other still runs. A transcript memcli must not read (a FIFO, ``/dev/zero``,
    a file past ``MAX_TRANSCRIPT_BYTES``) gives one warning and neither runs. Both share the
    deadline of :data:`EXTRACT_SECONDS`: the step that reaches it writes nothing, and a
    warning names the command that finishes the work."""
    from memcli.agents.transcript import DeadlineReached
    from memcli.service.extract import check_transcript

    deadline = time.monotonic() + EXTRACT_SECONDS.get(event, 6.0)

    config = ctx.ws.config
    steps = [("transcript extraction", _extract)] if config.hook_extract else []
    if event == "pre-compact" and config.hook_summarize:
        steps.append(("session summary", _summarize))
    from memcli.store.usage import SELF_TEST_SESSION

    if not steps or not payload.transcript_path or payload.session_id == SELF_TEST_SESSION:
        return  # `memcli hook check`'s own call names a transcript that does not exist, on purpose
    try:
        check_transcript(Path(payload.transcript_path))
    except MemcliError as err:
        run.warnings.append(f"the session transcript was not read: {err.line()}")
        return
    for what, step in steps:
        try:
            step(ctx, Path(payload.transcript_path), run, deadline)
        except DeadlineReached as stop:
            command = "memcli extract --apply" if step is _extract else "memcli compact --transcript"
            run.warnings.append(f"{what} stopped at its {EXTRACT_SECONDS.get(event, 6.0):g} s deadline after "
                                f"{stop.done} {stop.what}; nothing was written (run `{command} "
                                f"{payload.transcript_path}` to finish)")
        except MemcliError as err:
            run.warnings.append(f"{what} failed: {err.line()}")
        except Exception as err:  # noqa: BLE001 - a hook must not fail the agent's session
            _bug(ctx, run, what, err)


def _extract(ctx: Ctx, transcript: Path, run: HookRun, deadline: float) -> None:
    """Extract from the transcript (``extract --apply``) by ``deadline``; a warning says what was written."""
    from memcli.service.extract import extract

    result = extract(ctx, transcript, apply=True, scope=None, deadline=deadline, tail=HOOK_TRANSCRIPT_BYTES,
                     max_candidates=HOOK_CANDIDATES)
    run.warnings.extend(result.warnings)
    if result.applied and result.accepted:
        run.warnings.append(result.message())


def _summarize(ctx: Ctx, transcript: Path, run: HookRun, deadline: float) -> None:
    """The session's rule-based summary memory (``compact --transcript``).

    No external summarizer runs here: a hook has a time budget (INTEGRATIONS.md), and the
    rules take well under a second.
    """
    from memcli.service.session import compact_session

    size = transcript.stat().st_size
    if size > HOOK_SUMMARY_BYTES:
        run.warnings.append(f"no session summary: the transcript is {size / 2**20:.0f} MB, more than the "
                            f"{HOOK_SUMMARY_BYTES // 2**20} MB a hook summarises (run `memcli compact --transcript "
                            f"{transcript}`)")
        return
    result = compact_session(ctx, transcript, deadline=deadline)
    run.warnings.extend(result.warnings)
    if result.write.outcome != "noop":
        run.warnings.append(result.message())
