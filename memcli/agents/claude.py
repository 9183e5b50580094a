"""Claude Code: everything memcli knows about it (registered in ``agents.registry``).

Sources (INTEGRATIONS.md, from Claude Code's hooks and MCP documentation):

* Hooks: stdin JSON with ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and
  per-event fields; context in ``hookSpecificOutput.additionalContext`` (a top-level
  ``additionalContext`` is ignored); output capped at 10,000 characters; settings in
  ``.claude/settings.json`` (shared), ``.claude/settings.local.json`` (personal, git-ignored)
  or ``~/.claude/settings.json``, three levels, ``timeout`` in seconds; matchers per event.
* Transcripts: ``~/.claude/projects/<project>/<session>.jsonl`` (``agents.transcript_claude``).
* MCP: project ``.mcp.json`` ``mcpServers`` (what ``claude mcp add -s project`` writes); user
  ``~/.claude.json`` (``claude mcp add -s user``; ``$CLAUDE_CONFIG_DIR`` if set); entries of
  ``type: stdio``.
* Its tools' commands run with ``CLAUDECODE=1`` in their environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from memcli.agents.registry import Agent

EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit", "pre-compact": "PreCompact",
          "session-end": "SessionEnd", "pre-tool-use": "PreToolUse"}
#: Claude Code's matchers per event (INTEGRATIONS.md); an event not listed takes no matcher.
MATCHERS = {"session-start": "startup|resume|clear|compact", "pre-compact": "manual|auto",
            "pre-tool-use": "Bash|Read|Edit|MultiEdit|Write|NotebookEdit|WebFetch"}


def mcp_config(user: bool, project: Path) -> Path:
    """``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``) with ``user``, else the project's ``.mcp.json``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json" if user \
        else project / ".mcp.json"


def mcp_entry(program: str, args: list[str]) -> dict[str, object]:
    """A stdio server entry as ``claude mcp add`` writes it."""
    return {"type": "stdio", "command": program, "args": args, "env": {}}


AGENT = Agent(
    "claude", "Claude Code", EVENTS,
    hook_help="Claude Code hook (stdin: the hook JSON; stdout: hookSpecificOutput). Always exits 0.",
    matchers=MATCHERS,
    settings={"project": ".claude/settings.json", "local": ".claude/settings.local.json",
              "user": ".claude/settings.json"},
    transcript="memcli.agents.transcript_claude",
    transcript_label="Claude Code session (~/.claude/projects/<project>/<session>.jsonl)",
    transcript_path="~/.claude/projects/<project>/<session>.jsonl",
    transcript_rank=90,  # its claim is the loosest: asked last
    mcp_config=mcp_config, mcp_entry=mcp_entry,
    mcp_note="Claude Code asks once before it starts a server from a project's .mcp.json",
    tool_env=("CLAUDECODE",),
    memory="memcli.agents.memstores.claude_store",
)
