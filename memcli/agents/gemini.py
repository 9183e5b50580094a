"""Gemini CLI: everything memcli knows about it (registered in ``agents.registry``).

Sources (INTEGRATIONS.md; Gemini CLI 0.61, seen with the real CLI, ``scripts/real-agents.py``):

* Hooks: Claude Code's three-level shape in ``.gemini/settings.json`` (project, or
  ``~/.gemini/settings.json``) with ``timeout`` in milliseconds; stdout must be JSON only,
  context in ``hookSpecificOutput.additionalContext``. Its event names differ where
  ``gemini hooks migrate --from-claude`` maps them: BeforeAgent runs once per prompt,
  PreCompress before its compression, BeforeTool before a tool runs and AfterTool after it (their
  stdin carries ``tool_name`` and ``tool_input``, Gemini's own names: ``agents.tool_calls.TOOL_NAMES``).
  SessionEnd's ``reason`` is ``exit``.
* A BeforeTool hook can block a call or rewrite its input, but its ``additionalContext`` never
  reaches the model: Gemini CLI 0.61 reads only the blocking decision, ``stop`` and
  ``tool_input`` of a BeforeTool answer; it takes ``additionalContext`` from AfterTool only, and
  appends it to the tool's result as ``<hook_context>…</hook_context>`` (``executeToolWithHooks``
  in ``packages/core`` ``coreToolHookTriggers``, as bundled in 0.61.0). So memcli enforces guards
  in BeforeTool and gives the memories about a file or a command in AfterTool (``post-tool-use``),
  with the tool's result: after a read, before the edits that follow it. A call BeforeTool blocked
  fires no AfterTool.
* BeforeTool decisions (its ``DefaultHookOutput``): a top-level ``{"decision": "deny", "reason":
  R}`` blocks the call ("Tool execution blocked: R" goes back to the model); ``{"decision": "ask"}``
  asks for confirmation, showing ``systemMessage``.
* It loads a project's hooks only in a trusted folder, and runs none before an auth method is
  configured (exit 41, "Please set an Auth method").
* Transcripts: chat logs ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` or the older
  ``.json`` (``agents.transcript_gemini``).
* MCP: project ``.gemini/settings.json`` ``mcpServers`` (read in a trusted folder only); user
  ``~/.gemini/settings.json``.
* Its shell tool runs commands with ``GEMINI_CLI=1``.
"""

from __future__ import annotations

from pathlib import Path

from memcli.agents.registry import Agent

EVENTS = {"session-start": "SessionStart", "user-prompt-submit": "BeforeAgent", "pre-compact": "PreCompress",
          "session-end": "SessionEnd", "pre-tool-use": "BeforeTool", "post-tool-use": "AfterTool"}
#: BeforeTool's and AfterTool's matcher: the tools guards and path memories are about
#: (``agents.tool_calls.TOOL_NAMES``).
TOOLS = "run_shell_command|read_file|read_many_files|write_file|replace|web_fetch"
MATCHERS = {"pre-tool-use": TOOLS, "post-tool-use": TOOLS}


def decide(decision: str, reason: str, context: str = "") -> str:
    """BeforeTool's answer that denies or asks about a call (module docstring)."""
    import json

    out: dict[str, object] = {"decision": decision, "reason": reason}
    if decision == "ask":
        out["systemMessage"] = reason
    if context:
        out["hookSpecificOutput"] = {"hookEventName": "BeforeTool", "additionalContext": context}
    return json.dumps(out, ensure_ascii=False) + "\n"


def trust_steps(where: str, project: Path) -> list[str]:
    """What the person must do before Gemini CLI runs the hooks (module docstring)."""
    auth = ("Gemini CLI runs no hook before an auth method is set (it exits 41, \"Please set an Auth method\"): "
            "start `gemini` once and sign in, or set GEMINI_API_KEY")
    if where == "project":
        return [f"Gemini CLI loads project hooks only in a trusted folder: start `gemini` in {project} and "
                "trust the folder when asked (or with `/permissions`)", auth]
    return [auth]


def mcp_config(user: bool, project: Path) -> Path:
    """``~/.gemini/settings.json`` with ``user``, else the project's ``.gemini/settings.json``."""
    return (Path.home() if user else project) / ".gemini" / "settings.json"


AGENT = Agent(
    "gemini", "Gemini CLI", EVENTS,
    hook_help="Gemini CLI hook (stdout: JSON only). Always exits 0.",
    timeout_scale=1000,
    check_fields={"session-end": {"reason": "exit"}},
    settings={"project": ".gemini/settings.json", "user": ".gemini/settings.json"},
    trust_steps=trust_steps,
    transcript="memcli.agents.transcript_gemini",
    transcript_label="Gemini CLI chat log (~/.gemini/tmp/<project>/chats/session-*.jsonl or .json)",
    transcript_path="~/.gemini/tmp/<project>/chats/session-*.jsonl",
    transcript_rank=20,
    mcp_config=mcp_config,
    mcp_note="Gemini CLI reads .gemini/settings.json only in a folder you have trusted",
    tool_env=("GEMINI_CLI",),
    memory="memcli.agents.memstores.gemini_store",
    matchers=MATCHERS,
    decide=decide,
)
