"""Which coding agent, if any, runs this memcli process from its shell tool (issue 22 point 3).

An agent that calls ``memcli remember`` through its shell tool is not a person saying
something: its write must be ``model_derived`` and so pass the review gate of a shared scope.
Each agent marks the environment of the commands its tools run; the markers below were read
from the agents' own code, as installed under ``.cache/agent-clis`` (docs/agents.md):

* Claude Code sets ``CLAUDECODE=1`` in the environment of its Bash tool (``claude.exe``:
  ``env:{…, SHELL:e, GIT_EDITOR:"true", CLAUDECODE:"1"}``);
* Codex sets ``CODEX_THREAD_ID`` for the commands of a thread, and ``CODEX_SANDBOX`` /
  ``CODEX_SANDBOX_NETWORK_DISABLED`` when the command runs sandboxed (strings of the
  ``codex`` binary; Claude Code's own agent detection lists the same two names);
* Gemini CLI sets ``GEMINI_CLI=1`` for its shell tool and its MCP servers
  (``GEMINI_CLI_IDENTIFICATION_ENV_VAR = "GEMINI_CLI"``, value ``"1"``, in its bundle).

Under a marker memcli refuses what only a person may do (:func:`person_only`): claiming
``--source-type user_said``, approving or rejecting, archiving a shared memory, confirming an
anchor, accepting a quarantined change, undoing or rolling back, removing memcli's hooks or
MCP server (each could take a person's guard out of force). An agent cannot tell memcli that a person said
something; a person does these in a terminal of their own (Claude Code's ``!`` mode runs
with the agent's environment, so it counts as the agent). Pure: reads only the mapping it is given.
"""

from __future__ import annotations

from collections.abc import Mapping

#: ``(agent, variable, value or None for "any non-empty value")``, in the order they are tried.
MARKERS: tuple[tuple[str, str, str | None], ...] = (
    ("claude-code", "CLAUDECODE", "1"),
    ("codex", "CODEX_THREAD_ID", None),
    ("codex", "CODEX_SANDBOX", None),
    ("codex", "CODEX_SANDBOX_NETWORK_DISABLED", None),
    ("gemini-cli", "GEMINI_CLI", "1"),
)


def calling_agent(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The agent whose tool runs this process, from its environment marker.

    Args:
        env: the process environment (``os.environ``).

    Returns:
        ``(agent, "NAME=value")``: the agent (``claude-code``, ``codex``, ``gemini-cli``) and the
        marker that named it; None when no marker is set.
    """
    for agent, name, value in MARKERS:
        found = env.get(name, "").strip()
        if found and (value is None or found == value):
            return agent, f"{name}={found[:40]}"
    return None


def default_source_type(env: Mapping[str, str]) -> tuple[str, str | None]:
    """The source type of a CLI write that named none: ``model_derived`` when an agent's tool
    runs memcli (:func:`calling_agent`), else ``user_said``.

    Returns:
        ``(source type, note)``: the note, for a person, says which marker decided and how to
        write as a person; None for ``user_said``.
    """
    found = calling_agent(env)
    if found is None:
        return "user_said", None
    agent, marker = found
    # no word of review here: whether the write waits for one depends on its scope and the settings,
    # and the write's own line says it ("waiting for review: ID")
    return "model_derived", (f"written as model_derived: {agent}'s tool runs memcli ({marker}); a person's own "
                             "write is run from a terminal outside the agent")


def person_only(env: Mapping[str, str], action: str) -> None:
    """Refuse ``action`` when an agent's tool runs this process (:func:`calling_agent`).

    Args:
        env: the process environment (``os.environ``).
        action: what was asked, for the message (``"approve a memory"``).

    Raises:
        ReviewRefused: an agent's marker is set (exit 8); nothing has been written.
    """
    found = calling_agent(env)
    if found is not None:
        from memcli.errors import ReviewRefused

        raise ReviewRefused(f"{found[0]}'s tool runs memcli ({found[1]}): only a person may {action}; "
                            "nothing was written", hint="run the command yourself in a terminal, outside the agent")
