"""The `hook` command group: agent hook entry points, and installing them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memcli.agents.registry import agents, names, require
from memcli.cli import hot
from memcli.cli.app import JsonOpt, app
from memcli.cli.output import emit, warn

hook_app = typer.Typer(help="Agent hooks: entry points that read the agent's JSON on stdin, and their setup.",
                       no_args_is_help=True)
app.add_typer(hook_app, name="hook")


def _either(words: list[str]) -> str:
    """``a, b or c``."""
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else "".join(words)


_LOCAL = [a for a in agents() if "local" in a.settings]
Event = Annotated[str, typer.Argument(
    help="session-start, user-prompt-submit, pre-tool-use, post-tool-use (Gemini CLI only), pre-compact or "
         "session-end.")]
Agent = Annotated[str, typer.Argument(help=f"{_either(list(names()))}.")]
User = Annotated[bool, typer.Option("--user", help="Edit your user settings ("
                                    + ", ".join(dict.fromkeys(f"~/{a.settings['user']}" for a in agents()))
                                    + ") instead of the project's.")]
Local = Annotated[bool, typer.Option("--local", help=f"{_either([a.title for a in _LOCAL])} only: edit "
                                     + _either([a.settings["local"] for a in _LOCAL])
                                     + " (yours, git-ignored) instead of the shared "
                                     + _either([a.settings["project"] for a in _LOCAL]) + ".")]


def _hook_command(name: str, doc: str) -> None:
    """Add ``memcli hook NAME EVENT``: the agent's hook entry point (the fast path takes it first)."""
    def command(event: Event) -> None:
        hot.hook(name, event)
    command.__name__ = command.__qualname__ = name.replace("-", "_")
    command.__doc__ = doc
    hook_app.command(name)(command)


for _agent_ in agents():
    _hook_command(_agent_.name, _agent_.hook_help)


def _project() -> Path:
    from memcli.git import run as runner

    proc = runner.run(("rev-parse", "--show-toplevel"), text=True)
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else Path.cwd()


def _agent(agent: str) -> str:
    """``agent`` when the registry knows it.

    Raises:
        UsageProblem: an unknown agent (exit 2).
    """
    return require(agent).name


def _install(agent: str, user: bool, local: bool, remove: bool) -> None:
    import os

    from memcli.cli.state import GLOBALS
    from memcli.errors import UsageProblem
    from memcli.service.hook_install import install as do_install

    _agent(agent)
    if user and local:
        raise UsageProblem("--user and --local name different files", hint="give one of them")
    workspace = GLOBALS.workspace or os.environ.get("MEMCLI_WORKSPACE")
    where = "user" if user else "local" if local else "project"
    result = do_install(agent, where, _project(), workspace, remove=remove)
    for message in result.pop("warnings"):
        warn(message)
    lines = [f"{result['path']} ({result['kind']})"]
    lines += [f"  {c}" for c in result["changes"]] or ["  nothing to change"]
    lines += [f"launcher: {line}" for line in result["personal"]]
    lines += [f"next: {step}" for step in result["next"]]
    emit(result, "\n".join(lines))


@hook_app.command("install")
def install(agent: Agent, user: User = False, local: Local = False, json_: JsonOpt = False) -> None:
    """Add memcli's hooks to the agent's settings, keeping everything already there (idempotent).

    The project's file is shared (teams commit it), so its commands name no path of this
    machine: a short sh launcher finds memcli (~/.local/share/memcli/bin/memcli, which this
    command writes on each machine, then PATH, then ~/.local/bin). --local and --user files
    are yours and name this memcli by its absolute path. Installing again after an upgrade
    or a move replaces memcli's earlier entries. A settings file memcli cannot merge into
    safely is refused (exit 5) and left as it is."""
    _install(agent, user, local, remove=False)


@hook_app.command("uninstall")
def uninstall(agent: Agent, user: User = False, local: Local = False, json_: JsonOpt = False) -> None:
    """Remove memcli's hooks (only its own entries) from the agent's settings."""
    _install(agent, user, local, remove=True)


@hook_app.command("check")
def check(agent: Annotated[str | None, typer.Argument(help=f"{_either(list(names()))} (default: all).")] = None,
          json_: JsonOpt = False) -> None:
    """Run every installed memcli hook as the agent would, and print pass or fail per event.

    Each runs with its event's stdin JSON, PATH=/usr/bin:/bin and the installed timeout.
    Exit 18 if any fails or none is installed."""
    from memcli.errors import HookCheckFailed
    from memcli.service.hook_check import check as do_check

    checks = do_check(_agent(agent) if agent else None, _project())
    failed = [c for c in checks if not c.ok]
    lines = [f"{'pass' if c.ok else 'FAIL'}\t{c.agent}\t{c.event}\t{c.reason}\t{c.file}"
             + (f"\n\t{c.note}" if c.note and c.ok else "") for c in checks]
    emit({"checks": [c.to_dict() for c in checks], "passed": not failed}, "\n".join(lines))
    if failed:
        raise typer.Exit(HookCheckFailed.exit_code)
