"""The `hook` command group: agent hook entry points, and installing them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memcli.cli import hot
from memcli.cli.app import JsonOpt, app
from memcli.cli.output import emit, warn

hook_app = typer.Typer(help="Agent hooks: entry points that read the agent's JSON on stdin, and their setup.",
                       no_args_is_help=True)
app.add_typer(hook_app, name="hook")

Event = Annotated[str, typer.Argument(help="session-start, user-prompt-submit, pre-tool-use, pre-compact or session-end.")]
Agent = Annotated[str, typer.Argument(help="claude, codex or gemini.")]
User = Annotated[bool, typer.Option("--user", help="Edit your user settings instead of the project's.")]


@hook_app.command("claude")
def claude(event: Event) -> None:
    """Claude Code hook (stdin: the hook JSON; stdout: hookSpecificOutput). Always exits 0."""
    hot.hook("claude", event)


@hook_app.command("codex")
def codex(event: Event) -> None:
    """Codex hook (stdout: the plain context block). Always exits 0."""
    hot.hook("codex", event)


@hook_app.command("gemini")
def gemini(event: Event) -> None:
    """Gemini CLI hook (stdout: JSON only). Always exits 0."""
    hot.hook("gemini", event)


def _project() -> Path:
    import subprocess

    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else Path.cwd()


def _install(agent: str, user: bool, remove: bool) -> None:
    import os

    from memcli.agents.hooks import AGENTS
    from memcli.cli.state import GLOBALS
    from memcli.errors import UsageProblem
    from memcli.service.hook_install import install as do_install

    if agent not in AGENTS:
        raise UsageProblem(f"unknown agent {agent!r}", hint=f"use one of: {', '.join(AGENTS)}")
    workspace = GLOBALS.workspace or os.environ.get("MEMCLI_WORKSPACE")
    result = do_install(agent, user, _project(), workspace, remove=remove)
    for message in result.pop("warnings"):
        warn(message)
    lines = [f"{result['path']}: {c}" for c in result["changes"]] or [f"{result['path']}: nothing to change"]
    emit(result, "\n".join(lines))


@hook_app.command("install")
def install(agent: Agent, user: User = False, json_: JsonOpt = False) -> None:
    """Add memcli's hooks to the agent's settings, keeping everything already there (idempotent)."""
    _install(agent, user, remove=False)


@hook_app.command("uninstall")
def uninstall(agent: Agent, user: User = False, json_: JsonOpt = False) -> None:
    """Remove memcli's hooks (only its own entries) from the agent's settings."""
    _install(agent, user, remove=True)
