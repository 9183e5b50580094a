"""``hook check``: run every installed memcli hook command as its agent would.

Each handler memcli installed (in the project's, the local and the user's settings file)
is run through ``/bin/sh -c`` as Claude Code, Codex and Gemini CLI run hook commands, in
the project folder, with that event's JSON on stdin (the fields the agent sends,
INTEGRATIONS.md and Codex's embedded input schemas), a minimal environment
(``PATH=/usr/bin:/bin`` and ``HOME``: a hook that needs memcli on ``PATH`` fails here as it
would in an agent started from a desktop launcher) and the installed timeout. Its answer
must be what the agent accepts: exit 0, and for Claude Code and Gemini CLI an empty stdout
or one JSON object naming the event; for Codex plain text (never starting with ``{`` or
``[`` unless it is JSON) or nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from memcli.agents import hook_protocol as formats
from memcli.agents.registry import get, names
from memcli.errors import HookCheckFailed, MemcliError
from memcli.service.hook_install import read_settings, settings_path
from memcli.store.usage import SELF_TEST_SESSION

#: The environment a hook runs with here: nothing from the caller's shell but HOME.
MINIMAL_PATH = "/usr/bin:/bin"
#: The session id the check's stdin names (its seen-list in the cache is removed at session-end).
SESSION_ID = SELF_TEST_SESSION  # never journaled (store.usage)


@dataclass
class Check:
    """One hook run: which, where from, and the verdict.

    Attributes:
        agent: the agent's name (``agents.registry``).
        event: the agent's event name (``SessionStart``, ``BeforeAgent`` …).
        file: the settings file that holds the handler.
        command: the handler's command, as installed.
        ok: True when the agent would take the answer.
        reason: why it failed, or what it answered (``exit 0, 298 characters of context``).
        exit: the exit status, or None when it timed out or could not start.
        note: the hook's first stderr line (a memcli warning), or "".
    """

    agent: str
    event: str
    file: str
    command: str
    ok: bool
    reason: str
    exit: int | None
    note: str = ""

    def to_dict(self) -> dict:
        """The check as JSON data (``--json``)."""
        return asdict(self)


def check(agent: str | None, project: Path) -> list[Check]:
    """Run every memcli hook installed for ``agent`` (or every agent) as the agent would.

    Args:
        agent: an agent's name (``agents.registry``), or None for every agent.
        project: the project folder: the hooks' working folder and ``cwd``.

    Returns:
        One :class:`Check` per installed memcli handler, in file and event order; a settings
        file that cannot be read gives one failing check naming the problem.

    Raises:
        HookCheckFailed: no memcli hook is installed for the agent(s) (exit 18).
    """
    agents = [agent] if agent else list(names())
    checks: list[Check] = []
    looked: list[str] = []
    for name in agents:
        for where in get(name).settings:
            path = settings_path(name, where, project)
            looked.append(str(path))
            if not path.exists():
                continue
            try:
                settings = read_settings(Path(os.path.realpath(path)))
            except MemcliError as err:
                checks.append(Check(name, "-", str(path), "", False, err.message, None))
                continue
            for event_name, entry in formats.ours(settings):
                checks.append(run_one(name, event_name, entry, path, project))
    if not checks:
        who = agent or "any agent"
        raise HookCheckFailed(f"no memcli hooks installed for {who} (looked in {', '.join(looked)})",
                              hint=f"run `memcli hook install {agent or names()[0]}` in the project")
    return checks


#: The per-event fields of ``hook check``'s stdin, by memcli's event word (an agent adds or
#: changes some: ``Agent.check_fields``).
FIELDS: dict[str, dict[str, object]] = {
    "session-start": {"source": "startup"}, "user-prompt-submit": {"prompt": "memcli hook check"},
    "pre-compact": {"trigger": "manual"}, "session-end": {"reason": "other"},
    "pre-tool-use": {"tool_name": "Read", "tool_input": {"file_path": "README.md"},
                     "tool_use_id": "memcli-hook-check-tool"},
    "post-tool-use": {"tool_name": "Read", "tool_input": {"file_path": "README.md"},
                      "tool_response": {"llmContent": "# project", "returnDisplay": ""}}}


def stdin_for(agent: str, event_name: str, project: Path) -> dict:
    """The JSON the agent sends a hook for ``event_name`` (fields from INTEGRATIONS.md and
    Codex's embedded input schemas; the transcript path names a file that does not exist)."""
    own = get(agent)
    payload: dict[str, object] = {
        "session_id": SESSION_ID, "transcript_path": str(project / ".memcli-hook-check.jsonl"),
        "cwd": str(project), "hook_event_name": event_name}
    word = own.event_word(event_name)
    if word is not None:
        payload.update(FIELDS.get(word, {}))
        if word in ("pre-tool-use", "post-tool-use"):
            payload["tool_input"] = {"file_path": str(project / "README.md")}
        payload.update(own.check_fields.get(word, {}))
    payload.update(own.check_fields.get("*", {}))
    return payload


def run_one(agent: str, event_name: str, entry: dict, path: Path, project: Path) -> Check:
    """Run one handler as the agent would and judge its answer."""
    command = str(entry.get("command", ""))
    seconds = _timeout_seconds(agent, entry)
    env = {"PATH": MINIMAL_PATH, "HOME": os.environ.get("HOME", "/")}
    stdin = json.dumps(stdin_for(agent, event_name, project))

    def verdict(ok: bool, reason: str, status: int | None, note: str = "") -> Check:
        return Check(agent, event_name, str(path), command, ok, reason, status, note)

    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=project, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as failed:
        return verdict(False, f"could not start /bin/sh ({failed.strerror})", None)
    try:
        out, err = proc.communicate(stdin, timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
        except ProcessLookupError:
            pass
        proc.communicate()
        return verdict(False, f"timed out after its installed timeout of {seconds:g} s", None)
    note = next((line for line in err.splitlines() if line.strip()), "")
    if proc.returncode != 0:
        return verdict(False, f"exit {proc.returncode}: {note or 'no message on stderr'}", proc.returncode)
    problem, chars = judge(agent, event_name, out)
    if problem:
        return verdict(False, problem, 0, note)
    from memcli.service.hooks import UNSERVED

    broken = next((line for line in err.splitlines() if UNSERVED in line), None)
    if broken:  # the hook answers, but the workspace cannot be opened: every session would go without memory
        return verdict(False, "exit 0, but it serves no memories: " + broken.split(UNSERVED, 1)[1].strip(), 0, note)
    from memcli.service.settings import BROKEN

    fallback = next((line for line in err.splitlines() if BROKEN in line), None)
    if fallback:  # the hook answers by the last memcli.toml that loads (its guards in force), but the file is broken
        return verdict(False, "exit 0, but by fallback settings: " + fallback.removeprefix("memcli: warning: "), 0,
                       note)
    answered = f"{chars} characters of context" if chars else "no context"
    return verdict(True, f"exit 0, {answered}", 0, note)


def judge(agent: str, event_name: str, stdout: str) -> tuple[str | None, int]:
    """Whether the agent takes ``stdout`` as a hook's answer: ``(problem or None, context chars)``."""
    text = stdout.strip()
    if not text:
        return None, 0
    plain = bool(get(agent).plain_events)  # an agent that takes plain context (Codex) takes any plain text
    if plain and text[0] not in "{[":
        return None, len(stdout)
    try:
        body = json.loads(text)
    except ValueError:
        if plain:
            return f"stdout starts like JSON but is not valid JSON ({get(agent).title} fails such a hook)", 0
        return f"stdout is not JSON ({text[:60]!r}); the agent wants one JSON object", 0
    if not isinstance(body, dict):
        return "stdout is JSON but not an object", 0
    specific = body.get("hookSpecificOutput")
    if specific is None:
        return None, 0
    if not isinstance(specific, dict) or specific.get("hookEventName") != event_name:
        got = specific.get("hookEventName") if isinstance(specific, dict) else specific
        return f"hookSpecificOutput.hookEventName is {got!r}, not {event_name!r}", 0
    context = specific.get("additionalContext", "")
    return None, len(context) if isinstance(context, str) else 0


def _timeout_seconds(agent: str, entry: dict) -> float:
    """The handler's installed timeout in seconds (``Agent.timeout_scale``: Gemini CLI's are in
    milliseconds); the agents' default of 60 s when there is none."""
    value = entry.get("timeout")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return 60.0
    scale = get(agent).timeout_scale
    return value / scale if scale != 1 else float(value)
