"""The typer app: global options, and the registration of every command group."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memcli import __version__

app = typer.Typer(
    name="memcli",
    help="Long-term memory for coding agents: Markdown files with YAML front-matter, under git.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class Globals:
    """Options given before the command, shared by every command."""

    workspace: str | None = None
    actor: str | None = None


GLOBALS = Globals()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON envelope (schema memcli/v1).")]


def _version(value: bool) -> None:
    if value:
        print(f"memcli {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    workspace: Annotated[Optional[str], typer.Option(
        "--workspace", "-w", help="Workspace folder (else $MEMCLI_WORKSPACE, else the nearest memcli.toml above).")] = None,
    actor: Annotated[Optional[str], typer.Option(
        "--actor", help="Who is acting (else $MEMCLI_ACTOR, else your login name).")] = None,
    json_: JsonOpt = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    GLOBALS.workspace = workspace
    GLOBALS.actor = actor


def ctx():  # noqa: ANN201 - returns memcli.service.Ctx; imported lazily
    """Open the workspace named by the global options (imports the service layer lazily)."""
    from memcli.service import Ctx

    return Ctx.open(GLOBALS.workspace, GLOBALS.actor)


def flush_warnings(context) -> None:  # noqa: ANN001
    """Send the warnings a service gathered to stderr (or the JSON envelope)."""
    from memcli.cli.output import warn

    for message in context.warnings:
        warn(message)


from memcli.cli import write_cmds, read_cmds, index_cmds  # noqa: E402,F401,I001 - registers the commands, in help order
