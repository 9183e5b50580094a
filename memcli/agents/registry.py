"""The agents memcli works with: one module per agent, found here by name.

Each agent (Claude Code, Codex, Gemini CLI) is one module of ``memcli.agents`` that defines
``AGENT``, an :class:`Agent`: its hook events and their names, how its hook input is read and
its answer written, its transcript reader, the settings files ``hook install`` edits, where
``mcp install`` registers the server, and the environment variables its tool subprocesses
carry. Everything else asks this registry, so adding an agent is one new module and one line
in :data:`MODULES` (or, for a plugin or a test, one :func:`register` call).

The registry is lazy: listing the names imports no agent module, and :func:`get` imports only
the one asked for, so a Claude Code hook loads ``memcli.agents.claude`` and no other agent.
Pure: no file or process I/O here (an agent's functions may read the environment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pathlib import Path
    from types import ModuleType

    from memcli.agents.hook_protocol import HookInput

#: name -> the module that defines its ``AGENT``, in the order memcli lists agents.
MODULES: dict[str, str] = {
    "claude": "memcli.agents.claude",
    "codex": "memcli.agents.codex",
    "gemini": "memcli.agents.gemini",
}
#: Agents already imported (or registered as objects), by name.
_LOADED: dict[str, "Agent"] = {}


class Agent:
    """Everything memcli knows about one agent. A plain class (no ``dataclasses``: a hook must
    not import it, ``tests/test_imports.py``).

    Attributes:
        name: the word on memcli's command line (``claude``), lower case.
        title: the agent's name in messages (``Claude Code``).
        events: memcli's event word (``session-start``, ``user-prompt-submit``, ``pre-compact``,
            ``session-end``, ``pre-tool-use``, ``post-tool-use``) -> the agent's hook event name,
            for the events memcli installs for it, in install order. An agent with
            ``post-tool-use`` gets the memories about a tool call there, after the call (its
            pre-tool hook's context does not reach the model), and only guards before it.
        hook_help: the help line of ``memcli hook NAME``.
        matchers: event word -> the matcher of its group in the settings file (none: no matcher).
        timeouts: event word -> seconds, where the agent needs other than memcli's
            (``agents.hook_protocol.TIMEOUTS``).
        timeout_scale: the settings file's timeout unit per second (1 for seconds, 1000 for
            milliseconds).
        plain_events: event words whose context the agent takes as plain stdout rather than
            as ``hookSpecificOutput`` JSON (and whose stdout need not be JSON).
        parse_input: reads the hook's stdin into ``(HookInput, warning or None)``; None: the
            common JSON of ``agents.hook_protocol.HookInput.parse``.
        answer: ``(event word, context) -> stdout``; None: ``agents.hook_protocol.standard_answer``.
        check_fields: extra fields of ``hook check``'s stdin: event word (or ``*`` for every
            event) -> fields.
        settings: where the hooks are installed: ``project``, ``user`` and optionally
            ``local`` -> the settings file relative to the project (or the home folder for
            ``user``). The file holds the three-level JSON of ``agents.hook_protocol.merge``.
        trust_steps: ``(where, project folder) -> lines``: what the person must still do before
            the agent runs the installed hooks; None: nothing.
        transcript: the module that reads the agent's session files (a ``claims(entry)`` function
            and a ``Reader`` class, as ``agents.transcript_claude``), imported only when a
            transcript is read; None: memcli reads none.
        transcript_label: the transcript's name and place, for messages.
        transcript_path: where the agent writes them, for hints (``~/.codex/sessions/…``).
        transcript_rank: the order in which the formats are asked to claim a record (lower first;
            the loosest claim, Claude Code's, goes last).
        mcp_config: ``(user, project folder) -> Path``: the file where the agent reads its MCP
            servers; None: ``mcp install`` does not support the agent.
        mcp_format: ``json`` (an ``mcpServers`` object) or ``toml`` (``[mcp_servers.NAME]``).
        mcp_entry: ``(program, args) -> entry``: memcli's server entry; None: ``{"command", "args"}``.
        mcp_note: said after installing in the project's file, or None.
        tool_env: environment variables the agent sets for the commands its tools run (any of
            them set marks such a subprocess); empty when none is known.
        memory: the module that reads the memory the agent keeps on its own (``recognise(path)``,
            ``find(folder, project)`` and ``read(store, project)``, as ``agents.memstores.claude``),
            imported only when a store is read; None: the agent keeps none memcli reads.
        decide: ``(decision, reason, context) -> stdout``: the pre-tool hook's answer that denies
            (``deny``) or asks about (``ask``) the call, with ``reason`` for the model and the
            person; None: Claude Code's ``hookSpecificOutput.permissionDecision``
            (``agents.hook_protocol.standard_decision``).
        asks: False when the agent has no "ask" decision (memcli then denies, saying why).
    """

    __slots__ = ("name", "title", "events", "hook_help", "matchers", "timeouts", "timeout_scale", "plain_events",
                 "parse_input", "answer_with", "check_fields", "settings", "trust_steps", "transcript",
                 "transcript_label", "transcript_path", "transcript_rank", "mcp_config", "mcp_format", "mcp_entry",
                 "mcp_note", "tool_env", "memory", "decide_with", "asks")

    def __init__(self, name: str, title: str, events: dict[str, str], *, hook_help: str = "",
                 matchers: dict[str, str] | None = None, timeouts: dict[str, int] | None = None,
                 timeout_scale: int = 1, plain_events: tuple[str, ...] = (),
                 parse_input: Callable[[str], tuple[HookInput, str | None]] | None = None,
                 answer: Callable[[str, str], str] | None = None,
                 check_fields: dict[str, dict[str, object]] | None = None,
                 settings: dict[str, str] | None = None,
                 trust_steps: Callable[[str, Path], list[str]] | None = None,
                 transcript: str | None = None, transcript_label: str = "", transcript_path: str = "",
                 transcript_rank: int = 50,
                 mcp_config: Callable[[bool, Path], Path] | None = None, mcp_format: str = "json",
                 mcp_entry: Callable[[str, list[str]], dict[str, object]] | None = None,
                 mcp_note: str | None = None, tool_env: tuple[str, ...] = (), memory: str | None = None,
                 decide: Callable[[str, str, str], str] | None = None, asks: bool = True) -> None:
        self.name = name
        self.title = title
        self.events = dict(events)
        self.hook_help = hook_help or f"{title} hook. Always exits 0."
        self.matchers = dict(matchers or {})
        self.timeouts = dict(timeouts or {})
        self.timeout_scale = timeout_scale
        self.plain_events = plain_events
        self.parse_input = parse_input
        self.answer_with = answer
        self.check_fields = dict(check_fields or {})
        self.settings = dict(settings or {})
        self.trust_steps = trust_steps
        self.transcript = transcript
        self.transcript_label = transcript_label or f"{title} session file"
        self.transcript_path = transcript_path
        self.transcript_rank = transcript_rank
        self.mcp_config = mcp_config
        self.mcp_format = mcp_format
        self.mcp_entry = mcp_entry
        self.mcp_note = mcp_note
        self.tool_env = tool_env
        self.memory = memory
        self.decide_with = decide
        self.asks = asks

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"

    @property
    def supported(self) -> tuple[str, ...]:
        """memcli's event words this agent's hooks get, in install order."""
        return tuple(self.events)

    def event_name(self, event: str) -> str:
        """The agent's name for memcli's ``event`` word (``user-prompt-submit`` is Gemini CLI's
        ``BeforeAgent``); memcli's common name for an event the agent does not list."""
        from memcli.agents.hook_protocol import EVENTS

        return self.events.get(event) or EVENTS[event]

    def event_word(self, name: str) -> str | None:
        """memcli's event word for the agent's hook event ``name``, or None for one it does not list."""
        return next((word for word, own in self.events.items() if own == name), None)

    def timeout(self, event: str) -> int:
        """The ``timeout`` memcli installs for ``event``, in the settings file's unit."""
        from memcli.agents.hook_protocol import TIMEOUTS

        return self.timeouts.get(event, TIMEOUTS[event]) * self.timeout_scale

    def read_input(self, raw: str) -> tuple[HookInput, str | None]:
        """The hook's stdin read: ``(input, a warning when it was not usable)``; never raises."""
        if self.parse_input is not None:
            return self.parse_input(raw)
        from memcli.agents.hook_protocol import HookInput

        return HookInput.parse(raw)

    def answer(self, event: str, context: str) -> str:
        """The hook's stdout for ``context`` (possibly empty) in the agent's format."""
        if self.answer_with is not None:
            return self.answer_with(event, context)
        from memcli.agents.hook_protocol import standard_answer

        return standard_answer(self, event, context)

    def decide(self, decision: str, reason: str, context: str = "") -> str:
        """The pre-tool hook's stdout that denies (``deny``) or asks about (``ask``) a tool call."""
        if self.decide_with is not None:
            return self.decide_with(decision, reason, context)
        from memcli.agents.hook_protocol import standard_decision

        return standard_decision(self, decision, reason, context)

    def transcript_module(self) -> ModuleType | None:
        """The module that reads this agent's transcripts (``claims(entry)`` and a ``Reader``
        class; imported now), or None."""
        if self.transcript is None:
            return None
        import importlib

        return importlib.import_module(self.transcript)


    def memory_module(self) -> ModuleType | None:
        """The module that reads this agent's own memory store (``recognise()``, ``find()`` and
        ``read()``; imported now), or None."""
        if self.memory is None:
            return None
        import importlib

        return importlib.import_module(self.memory)


def names() -> tuple[str, ...]:
    """Every agent's name, in memcli's order (imports no agent module)."""
    return tuple(MODULES)


def known(name: str) -> bool:
    """True when ``name`` is an agent of the registry (imports no agent module)."""
    return name in MODULES


def get(name: str) -> Agent:
    """The agent called ``name``, importing its module (and only its module) the first time.

    Raises:
        KeyError: no agent has that name (callers check :func:`known` or use :func:`require`).
    """
    found = _LOADED.get(name)
    if found is not None:
        return found
    import importlib

    module = importlib.import_module(MODULES[name])
    agent: Agent = module.AGENT
    _LOADED[name] = agent
    return agent


def require(name: str) -> Agent:
    """The agent called ``name``, for a name a person typed.

    Raises:
        UsageProblem: no agent has that name; the message lists them (exit 2).
    """
    if not known(name):
        from memcli.errors import UsageProblem

        raise UsageProblem(f"unknown agent {name!r}", hint=f"use one of: {', '.join(names())}")
    return get(name)


def agents() -> list[Agent]:
    """Every agent, in memcli's order (imports every agent module)."""
    return [get(name) for name in MODULES]


def register(name: str, module: str) -> None:
    """Add an agent: ``module`` (a dotted module name, importable) defines its ``AGENT``.

    For an agent that lives outside memcli (a plugin, a test); memcli's own agents are the
    lines of :data:`MODULES`. Registering a name again replaces the earlier agent.

    Raises:
        ValueError: ``name`` is not a lower-case word (it becomes a command: ``memcli hook NAME``).
    """
    if not name or not name.replace("-", "").isalnum() or name != name.lower():
        raise ValueError(f"an agent's name is a lower-case word, not {name!r}")
    MODULES[name] = module
    _LOADED.pop(name, None)


def unregister(name: str) -> None:
    """Remove an agent added by :func:`register` (nothing happens for an unknown name)."""
    MODULES.pop(name, None)
    _LOADED.pop(name, None)


def running_under(env: dict[str, str]) -> Agent | None:
    """The agent whose tool subprocess has environment ``env``, or None when none is recognised
    (``Agent.tool_env``; imports every agent module)."""
    for agent in agents():
        if any(env.get(var) for var in agent.tool_env):
            return agent
    return None


def transcript_formats() -> dict[str, str]:
    """Agent name -> the label of its transcripts, for every agent that has a reader."""
    return {a.name: a.transcript_label for a in agents() if a.transcript is not None}


def transcript_hint() -> str:
    """The hint of an error about a transcript file: where each agent writes its sessions."""
    places = [f"{a.title} {a.transcript_path}" for a in agents() if a.transcript is not None and a.transcript_path]
    listed = ", ".join(places[:-1]) + f" or {places[-1]}" if len(places) > 1 else "".join(places)
    return f"give the path of a session file: {listed}"
