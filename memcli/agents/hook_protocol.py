"""The hook protocol the agents share: reading a hook's stdin, answering, the settings files.

Claude Code defined it and Codex and Gemini CLI follow it (INTEGRATIONS.md): stdin JSON with
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and per-event fields
(``source``, ``prompt``, ``trigger``, ``reason``, ``tool_name``, ``tool_input``); context in
``{"hookSpecificOutput": {"hookEventName": E, "additionalContext": TEXT}}``; settings files
with three levels: event -> matcher group (``matcher``, ``hooks``) -> handler (``type``,
``command``, ``timeout``). Where an agent differs (event names, timeout unit, plain-text
answers, matchers, files) its module says so (``agents.claude``, ``agents.codex``,
``agents.gemini``, found through ``agents.registry``).

Pure: no file or process I/O here; the service reads and writes the files.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from memcli.agents.registry import Agent

#: memcli's event words -> the hook event names of Claude Code and Codex, which most agents
#: share; an agent's own names are its ``Agent.events`` (``agents.registry``).
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    "pre-tool-use": "PreToolUse",
    "post-tool-use": "PostToolUse",
}
#: seconds each hook may take (an agent may differ: ``Agent.timeouts``, ``Agent.timeout_scale``).
TIMEOUTS = {"session-start": 10, "user-prompt-submit": 5, "pre-compact": 30, "session-end": 10, "pre-tool-use": 5,
            "post-tool-use": 5}
#: the words of a memcli hook command after the program: global options, then ``hook AGENT EVENT``.
_GLOBAL_OPTIONS = {"-w": 1, "--workspace": 1, "--actor": 1}


def event_name(agent: str, event: str) -> str:
    """The agent's name for ``event`` (``user-prompt-submit`` is Gemini CLI's ``BeforeAgent``)."""
    from memcli.agents.registry import get

    return get(agent).event_name(event)


def timeout(agent: str, event: str) -> int:
    """The ``timeout`` memcli installs for ``event``, in the agent's unit (milliseconds for Gemini CLI)."""
    from memcli.agents.registry import get

    return get(agent).timeout(event)


class HookCommand:
    """A memcli hook command read back from a settings file.

    Attributes:
        program: how it starts memcli: ``("/venv/bin/memcli",)``, ``("/venv/bin/python", "-m",
            "memcli")`` or the bare ``("memcli",)`` of older installs.
        workspace: the ``-w`` it pins, or None.
        agent: the agent's name (``agents.registry``).
        event: the event word (``session-start`` …).
    """

    __slots__ = ("program", "workspace", "agent", "event")

    def __init__(self, program: tuple[str, ...], workspace: str | None, agent: str, event: str) -> None:
        self.program = program
        self.workspace = workspace
        self.agent = agent
        self.event = event

    @property
    def executable(self) -> str:
        """The file the shell runs first (``memcli``, the Python interpreter, or ``sh``)."""
        return self.program[0]

    @property
    def through_launcher(self) -> bool:
        """True for the launcher of shared files (``sh -c SCRIPT memcli …``)."""
        from memcli.agents.launch_command import is_launcher

        return is_launcher(self.program)

    @property
    def short(self) -> str:
        """The command as a person reads it: ``memcli [-w PATH] hook AGENT EVENT``."""
        import shlex

        words = ["memcli"] if self.through_launcher else list(self.program)
        words += ["-w", self.workspace] if self.workspace else []
        return shlex.join([*words, "hook", self.agent, self.event])


def parse_command(command: object) -> HookCommand | None:
    """Read ``command`` as memcli's hook command, or None when it is something else.

    Recognises what every memcli version wrote: ``memcli [-w PATH] hook AGENT EVENT`` with a
    bare or absolute ``memcli`` (quoted or not), ``PYTHON -m memcli …``, and the launcher of
    shared files, ``sh -c SCRIPT memcli …`` (``agents.launch_command``).
    """
    import shlex

    from memcli.agents.launch_command import is_launcher

    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) >= 4 and is_launcher(words[:4]):
        program, rest = tuple(words[:4]), words[4:]
    elif len(words) >= 3 and words[1:3] == ["-m", "memcli"]:
        program, rest = tuple(words[:3]), words[3:]
    elif words and words[0].rsplit("/", 1)[-1] == "memcli":
        program, rest = (words[0],), words[1:]
    else:
        return None
    workspace = None
    while rest and rest[0] in _GLOBAL_OPTIONS and len(rest) > 1:
        if rest[0] in ("-w", "--workspace"):
            workspace = rest[1]
        rest = rest[2:]
    from memcli.agents.registry import known

    if len(rest) < 3 or rest[0] != "hook" or not known(rest[1]):
        return None
    return HookCommand(program, workspace, rest[1], rest[2])


class HookInput:
    """What a hook was told on stdin (missing fields are empty).

    ``event`` is the agent's ``hook_event_name``; for PreToolUse, ``tool_name`` and
    ``tool_input`` are the tool about to run and its input (any JSON value; ``agents.tool_calls``
    reads it).
    """

    __slots__ = ("session_id", "transcript_path", "cwd", "event", "source", "prompt", "tool_name", "tool_input")

    def __init__(self, session_id: str = "", transcript_path: str = "", cwd: str = "", event: str = "",
                 source: str = "", prompt: str = "", tool_name: str = "", tool_input: object = None) -> None:
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.cwd = cwd
        self.event = event
        self.source = source
        self.prompt = prompt
        self.tool_name = tool_name
        self.tool_input = tool_input

    @classmethod
    def parse(cls, raw: str) -> tuple["HookInput", str | None]:
        """Read the stdin JSON; returns the input and a warning when it was not usable."""
        if not raw.strip():
            return cls(), "no hook input on stdin"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as err:
            return cls(), f"hook input is not JSON ({err.msg.removesuffix(' at')} at character {err.pos})"
        except ValueError as err:  # an integer past Python's digit limit (sys.set_int_max_str_digits)
            return cls(), f"hook input is not usable JSON ({str(err).split(';')[0]})"
        except RecursionError:  # 200,000 nested brackets: json recurses once per level
            return cls(), "hook input is nested too deeply to read as JSON"
        if not isinstance(data, dict):
            return cls(), "hook input is not a JSON object"

        def text(key: str) -> str:
            value = data.get(key)
            return _whole(value) if isinstance(value, str) else ""
        try:
            tool_input = _whole(data.get("tool_input"))
        except RecursionError:  # json read it, but walking it again goes past Python's stack
            return cls(), "hook input is nested too deeply to read as JSON"
        return cls(session_id=text("session_id"), transcript_path=text("transcript_path"), cwd=text("cwd"),
                   event=text("hook_event_name"), source=text("source"), prompt=text("prompt"),
                   tool_name=text("tool_name"), tool_input=tool_input), None


@overload
def _whole(value: str) -> str: ...
@overload
def _whole(value: object) -> object: ...


def _whole(value: object) -> object:
    """``value`` with every lone surrogate in its strings (JSON allows ``"\\udcff"``, and UTF-8
    cannot encode it: a session id or a file path holding one failed the hook) made U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if any(
            "\ud800" <= c <= "\udfff" for c in value) else value
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    return value


def answer(agent: str, event: str, context: str) -> str:
    """The hook's stdout for ``context`` (possibly empty) in ``agent``'s format (``Agent.answer``)."""
    from memcli.agents.registry import get

    return get(agent).answer(event, context)


def standard_answer(agent: Agent, event: str, context: str) -> str:
    """The answer most agents take (Claude Code's format, which Codex and Gemini CLI follow).

    One JSON object naming the event in the agent's words, context in
    ``hookSpecificOutput.additionalContext`` (Gemini CLI wants JSON only and reads it there);
    for the agent's ``plain_events`` the plain block (Codex's SessionStart and
    UserPromptSubmit: it starts with ``<``, never ``{`` or ``[``), or nothing. Events that
    take no context (``pre-compact``, ``session-end``) answer with an empty stdout, which
    every agent accepts (Codex's output schemas for them have no context field).
    ``pre-tool-use`` answers nothing when it adds no context, else
    ``hookSpecificOutput.additionalContext`` for Claude and Codex alike: never a
    ``permissionDecision``, so the tool call is neither blocked nor allowed by memcli.
    ``post-tool-use`` (an agent that takes a tool's context only after the call, Gemini CLI's
    AfterTool) answers the same way.
    """
    if event in ("pre-tool-use", "post-tool-use") and not context:
        return ""
    if event in ("pre-compact", "session-end"):
        return ""
    if event in agent.plain_events:
        return context
    payload = {"hookSpecificOutput": {"hookEventName": agent.event_name(event), "additionalContext": context}}
    return json.dumps(payload, ensure_ascii=False) + "\n"


def standard_decision(agent: Agent, decision: str, reason: str, context: str = "") -> str:
    """The pre-tool answer that denies or asks about a call, in Claude Code's format (hooks
    reference, PreToolUse decision control), which Codex 0.171 follows (its embedded
    ``pre-tool-use.command.output`` schema; it rejects ``ask``):

    ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"|"ask",
    "permissionDecisionReason": REASON}}``, with ``additionalContext`` when ``context`` is given.
    Claude Code shows the reason to the model for ``deny`` and to the person for ``ask``.
    """
    out: dict[str, object] = {"hookEventName": agent.event_name("pre-tool-use"), "permissionDecision": decision,
                              "permissionDecisionReason": reason}
    if context:
        out["additionalContext"] = context
    return json.dumps({"hookSpecificOutput": out}, ensure_ascii=False) + "\n"


def handler(agent: str, event: str, command: str) -> dict:
    """One handler entry for a settings file (``timeout`` in the agent's unit)."""
    return {"type": "command", "command": command, "timeout": timeout(agent, event)}


def is_ours(entry: object) -> bool:
    """True for a handler that memcli installed (its command runs ``memcli … hook``)."""
    return isinstance(entry, dict) and parse_command(entry.get("command")) is not None


def ours(settings: dict) -> list[tuple[str, dict]]:
    """memcli's handlers in a parsed settings file: ``(agent's event name, handler)`` pairs.

    The file must have passed :func:`shape_problem`.
    """
    found: list[tuple[str, dict]] = []
    for name, groups in (settings.get("hooks") or {}).items():
        for group in groups:
            found.extend((name, h) for h in group.get("hooks", []) if is_ours(h))
    return found


def shape_problem(settings: object) -> str | None:
    """Why memcli cannot safely merge into this parsed settings file, or None when it can.

    The three levels every agent uses (INTEGRATIONS.md): an object whose ``hooks`` is an
    object of event name -> list of matcher groups; a group is an object whose ``hooks`` is
    a list of handler objects with a string ``command`` (when present) and an optional
    string ``matcher``. Anything else might be a format memcli does not know, so it is
    never rewritten.
    """
    if not isinstance(settings, dict):
        return f"the file holds a JSON {_kind(settings)}, not an object"
    if "hooks" not in settings:
        return None
    hooks = settings["hooks"]
    if not isinstance(hooks, dict):
        return f'"hooks" is a {_kind(hooks)}, not an object of event names'
    for name, groups in hooks.items():
        if not name:
            return '"hooks" has an empty event name'
        if not isinstance(groups, list):
            return f'"hooks.{name}" is a {_kind(groups)}, not a list of matcher groups'
        for i, group in enumerate(groups):
            where = f"hooks.{name}[{i}]"
            if not isinstance(group, dict):
                return f'"{where}" is a {_kind(group)}, not an object with "hooks"'
            if "matcher" in group and not isinstance(group["matcher"], str):
                return f'"{where}.matcher" is a {_kind(group["matcher"])}, not a string'
            if not isinstance(group.get("hooks"), list):
                what = "missing" if "hooks" not in group else f"a {_kind(group['hooks'])}"
                return f'"{where}.hooks" is {what}, not a list of handlers'
            for j, entry in enumerate(group["hooks"]):
                if not isinstance(entry, dict):
                    return f'"{where}.hooks[{j}]" is a {_kind(entry)}, not a handler object'
                if "command" in entry and not isinstance(entry["command"], str):
                    return f'"{where}.hooks[{j}].command" is a {_kind(entry["command"])}, not a string'
    return None


def _kind(value: object) -> str:
    """JSON's name for the type of a parsed value."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "list",
            dict: "object"}.get(type(value), type(value).__name__)


def merge(settings: dict, agent: str, commands: dict[str, str]) -> tuple[dict, list[str]]:
    """Add memcli's handlers to a parsed settings file, keeping everything else.

    An earlier memcli handler for the same event (bare ``memcli``, another path, another
    ``-w``) is replaced in place of being added to, so an upgrade or a move of memcli is
    fixed by installing again.

    Args:
        settings: the file's JSON object, which passed :func:`shape_problem` (not modified).
        agent: the agent's name (``agents.registry``): its event names, timeouts and matchers.
        commands: event on the command line -> the command to run.

    Returns:
        ``(new settings, changes)``: one line per event added or updated; empty when the
        file already held exactly these handlers (idempotent).
    """
    from memcli.agents.registry import get

    own = get(agent)
    out = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    changes = []
    for event, command in commands.items():
        name = own.event_name(event)
        groups = hooks.setdefault(name, [])
        wanted = handler(agent, event, command)
        current = [h for g in groups for h in g["hooks"] if is_ours(h)]
        if current == [wanted]:
            continue
        _drop_ours(groups)
        group: dict[str, object] = {"hooks": [wanted]}
        if own.matchers.get(event):
            group = {"matcher": own.matchers[event], **group}
        groups.append(group)
        parsed = parse_command(command)
        shown = parsed.short if parsed is not None and parsed.through_launcher else command
        changes.append(f"{'updated' if current else 'added'} {name}: {shown}")
    return out, changes


def remove(settings: dict) -> tuple[dict, list[str]]:
    """Remove memcli's handlers (and the groups and events they leave empty); keep the rest.

    The file must have passed :func:`shape_problem`.
    """
    out = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    changes: list[str] = []
    if not isinstance(hooks, dict):
        return out, changes
    for name in list(hooks):
        groups = hooks[name]
        if _drop_ours(groups):
            changes.append(f"removed {name}")
            if not groups:
                del hooks[name]
    if not hooks and changes:
        del out["hooks"]
    return out, changes


def _drop_ours(groups: list) -> bool:
    """Remove memcli's handlers from a list of matcher groups in place; True if any was removed."""
    removed = False
    for group in list(groups):
        kept = [h for h in group["hooks"] if not is_ours(h)]
        if len(kept) != len(group["hooks"]):
            removed = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
    return removed
