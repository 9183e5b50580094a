"""The typer app: global options, and the registration of every command group."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memcli import __version__
from memcli.cli.state import GLOBALS, ctx, flush_warnings  # noqa: F401 - re-exported for the command modules

app = typer.Typer(
    name="memcli",
    help="Long-term memory for coding agents: Markdown files with YAML front-matter, under git.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON envelope (schema memcli/v1).")]


def _version(value: bool) -> None:
    if value:
        from memcli.cli.output import STATE, emit

        emit({"version": __version__}, f"memcli {__version__}" if not STATE.json else None)
        raise typer.Exit()


def memory_ref(value: Optional[str]) -> Optional[str]:
    """Check an ID argument before the command runs (see ``memcli.service.check_ref``).

    Raises:
        ValidationFailed: empty, or not made of id characters (exit 5).
    """
    if value is None:
        return value
    from memcli.service import check_ref

    check_ref(value)
    return value


@app.callback()
def _options(
    workspace: Annotated[Optional[str], typer.Option(
        "--workspace", "-w", help="Workspace folder (else $MEMCLI_WORKSPACE, else the nearest memcli.toml above).")] = None,
    actor: Annotated[Optional[str], typer.Option(
        "--actor", help="Who is acting, a label (else $MEMCLI_ACTOR, else git's user.email).")] = None,
    json_: JsonOpt = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    GLOBALS.workspace = workspace
    GLOBALS.actor = actor


from memcli.cli import write_cmds, read_cmds, audit_cmds, history_cmds, compact_cmds, index_cmds, stats_cmds, rules_cmds, agent_cmds, hook_cmds, team_cmds, mcp_cmds  # noqa: E402,F401,I001 - registers the commands, in help order
