"""Codex CLI: everything memcli knows about it (registered in ``agents.registry``).

Sources (INTEGRATIONS.md; Codex CLI 0.171, its embedded hook schemas, openai/codex
``codex-rs/hooks``; seen with the real CLI, ``scripts/real-agents.py``):

* Hooks: Claude Code's three-level shape in ``.codex/hooks.json`` (project, or
  ``~/.codex/hooks.json``), the same event names, ``timeout`` in seconds; it fires all five
  events. For SessionStart and UserPromptSubmit plain stdout becomes context; stdout whose
  first non-blank character is ``{`` or ``[`` must be valid JSON; PreToolUse takes
  ``hookSpecificOutput.additionalContext``. It clamps a SessionEnd hook's timeout to 3 s (it
  warns "clamping SessionEnd hook timeout to 3s"), so memcli installs 3 s there. Its input
  also carries ``model``, ``permission_mode`` and ``turn_id``.
* Hooks run only in a trusted project and only once the person has reviewed and trusted them
  in ``/hooks`` (untrusted hooks are skipped without a word).
* Transcripts: rollout files ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
  (``agents.transcript_codex``).
* MCP: project ``.codex/config.toml`` ``[mcp_servers.memcli]`` (read in a trusted project
  only); user ``~/.codex/config.toml`` (``$CODEX_HOME`` if set).
* Its sandboxed commands carry ``CODEX_SANDBOX`` or ``CODEX_SANDBOX_NETWORK_DISABLED``.
* PreToolUse decisions: Claude Code's ``hookSpecificOutput.permissionDecision`` ``deny`` with
  ``permissionDecisionReason`` (the embedded ``pre-tool-use.command.output`` schema); it refuses
  ``ask`` and ``allow`` ("PreToolUse hook returned unsupported permissionDecision:ask"), so an
  ``ask`` guard denies there, and the reason tells the agent to ask the person first.
"""

from __future__ import annotations

import os
from pathlib import Path

from memcli.agents.registry import Agent

EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit", "pre-compact": "PreCompact",
          "session-end": "SessionEnd", "pre-tool-use": "PreToolUse"}


def trust_steps(where: str, project: Path) -> list[str]:
    """What the person must do before Codex runs the hooks (module docstring)."""
    folder = f"trust the project {project} when Codex asks (or set trust_level = \"trusted\" for it " \
             f"in ~/.codex/config.toml), then " if where == "project" else ""
    return [f"Codex runs these hooks only once you trust them: start `codex`, {folder}open `/hooks`, "
            "review memcli's hooks and trust them (until then Codex skips them silently)"]


def mcp_config(user: bool, project: Path) -> Path:
    """``~/.codex/config.toml`` (``$CODEX_HOME/config.toml``) with ``user``, else the project's."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml" if user \
        else project / ".codex" / "config.toml"


AGENT = Agent(
    "codex", "Codex", EVENTS,
    hook_help="Codex hook (stdout: the plain context block). Always exits 0.",
    timeouts={"session-end": 3},
    plain_events=("session-start", "user-prompt-submit"),
    check_fields={"*": {"model": "memcli-check", "permission_mode": "default", "turn_id": "memcli-hook-check-turn"}},
    settings={"project": ".codex/hooks.json", "user": ".codex/hooks.json"},
    trust_steps=trust_steps,
    transcript="memcli.agents.transcript_codex",
    transcript_label="Codex rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)",
    transcript_path="~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl",
    transcript_rank=10,
    mcp_config=mcp_config, mcp_format="toml",
    mcp_note="Codex reads .codex/config.toml only in a project you have trusted",
    tool_env=("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"),
    memory="memcli.agents.memstores.codex_store",
    asks=False,
)
