"""Agent hook formats: reading a hook's stdin, answering in the agent's format, settings files.

Sources (INTEGRATIONS.md, from each tool's public documentation):

* Claude Code: stdin JSON with ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name`` and per-event fields (``source``, ``prompt``, ``trigger``,
  ``reason``); context goes in ``{"hookSpecificOutput": {"hookEventName": E,
  "additionalContext": TEXT}}`` (a top-level ``additionalContext`` is ignored); output
  is capped at 10,000 characters; settings in ``.claude/settings.json`` with three
  levels: event -> matcher group (``matcher``, ``hooks``) -> handler (``type``,
  ``command``, ``timeout`` in seconds).
* Codex: the same three-level shape in ``.codex/hooks.json``; for SessionStart plain
  stdout becomes context, and stdout whose first non-blank character is ``{`` or ``[``
  must be valid JSON.
* Gemini CLI: hooks in ``.gemini/settings.json`` with ``timeout`` in milliseconds;
  stdout must be JSON only, context in ``hookSpecificOutput.additionalContext``.

Pure: no file or process I/O here; the service reads and writes the files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

AGENTS = ("claude", "codex", "gemini")
#: event name on the command line -> the agent's hook event name.
EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
#: which events each agent's hooks get from memcli.
SUPPORTED = {
    "claude": ("session-start", "user-prompt-submit", "pre-compact", "session-end"),
    "codex": ("session-start",),
    "gemini": ("session-start",),
}
#: Claude Code's matchers per event (INTEGRATIONS.md); None: the event takes no matcher.
MATCHERS = {"session-start": "startup|resume|clear|compact", "pre-compact": "manual|auto"}
#: seconds each hook may take (Gemini's settings want milliseconds).
TIMEOUTS = {"session-start": 10, "user-prompt-submit": 5, "pre-compact": 30, "session-end": 10}
#: memcli's own handlers in a settings file (only these are updated or removed) run
#: ``memcli [-w PATH] hook AGENT EVENT``.
_OURS = re.compile(r"(^|[\s/])memcli(\s+-w\s+\S+)?\s+hook\s+(claude|codex|gemini)\s")


@dataclass
class HookInput:
    """What a hook was told on stdin (missing fields are empty)."""

    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    event: str = ""
    source: str = ""
    prompt: str = ""

    @classmethod
    def parse(cls, raw: str) -> tuple["HookInput", str | None]:
        """Read the stdin JSON; returns the input and a warning when it was not usable."""
        if not raw.strip():
            return cls(), "no hook input on stdin"
        try:
            data = json.loads(raw)
        except ValueError as err:
            return cls(), f"hook input is not JSON ({err.msg} at character {err.pos})"
        except RecursionError:  # 200,000 nested brackets: json recurses once per level
            return cls(), "hook input is nested too deeply to read as JSON"
        if not isinstance(data, dict):
            return cls(), "hook input is not a JSON object"

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""
        return cls(session_id=text("session_id"), transcript_path=text("transcript_path"), cwd=text("cwd"),
                   event=text("hook_event_name"), source=text("source"), prompt=text("prompt")), None


def answer(agent: str, event: str, context: str) -> str:
    """The hook's stdout for ``context`` (possibly empty) in the agent's format.

    Claude and Gemini get one JSON object; Codex gets the plain block (which starts with
    ``<``, never ``{`` or ``[``), or nothing.
    """
    if agent == "codex":
        return context
    if event in ("pre-compact", "session-end"):
        return ""  # these events take no context; an empty stdout is a clean answer
    payload = {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": context}}
    return json.dumps(payload, ensure_ascii=False) + "\n"


def handler(agent: str, event: str, command: str) -> dict:
    """One handler entry for a settings file."""
    timeout = TIMEOUTS[event] * (1000 if agent == "gemini" else 1)
    return {"type": "command", "command": command, "timeout": timeout}


def is_ours(entry: object) -> bool:
    """True for a handler that memcli installed (its command runs ``memcli hook``)."""
    return isinstance(entry, dict) and bool(_OURS.search(str(entry.get("command", "")) + " "))


def merge(settings: dict, agent: str, commands: dict[str, str]) -> tuple[dict, list[str]]:
    """Add memcli's handlers to a parsed settings file, keeping everything else.

    Args:
        settings: the file's JSON object (not modified).
        agent: ``claude``, ``codex`` or ``gemini``.
        commands: event on the command line -> the command to run.

    Returns:
        ``(new settings, changes)``: one line per event added or updated; empty when the
        file already held exactly these handlers (idempotent).
    """
    out = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    changes = []
    for event, command in commands.items():
        name = EVENTS[event]
        groups = hooks.setdefault(name, [])
        wanted = handler(agent, event, command)
        current = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if is_ours(h)]
        if current == [wanted]:
            continue
        _drop_ours(groups)
        group = {"hooks": [wanted]}
        if agent == "claude" and MATCHERS.get(event):
            group = {"matcher": MATCHERS[event], **group}
        groups.append(group)
        changes.append(f"{'updated' if current else 'added'} {name}: {command}")
    return out, changes


def remove(settings: dict) -> tuple[dict, list[str]]:
    """Remove memcli's handlers (and the groups and events they leave empty); keep the rest."""
    out = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    changes: list[str] = []
    if not isinstance(hooks, dict):
        return out, changes
    for name in list(hooks):
        groups = hooks[name]
        if not isinstance(groups, list):
            continue
        if _drop_ours(groups):
            changes.append(f"removed {name}")
        if not groups:
            del hooks[name]
    if not hooks:
        del out["hooks"]
    return out, changes


def _drop_ours(groups: list) -> bool:
    """Remove memcli's handlers from a list of matcher groups in place; True if any was removed."""
    removed = False
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = [h for h in group["hooks"] if not is_ours(h)]
        if len(kept) != len(group["hooks"]):
            removed = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
    return removed
