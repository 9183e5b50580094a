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
    """Check an ID argument before the command runs: a whole id, or a prefix of one.

    An id is 3-64 characters ``a-z 0-9 - _`` (``model.check_id``); a prefix needs 4 or
    more (``service.MIN_PREFIX``), and a shorter one is left for the service to refuse
    with a hint (exit 4). An empty id, or one with other characters, is a validation
    error (exit 5) whose message fits both.

    Raises:
        ValidationFailed: empty, or not made of id characters.
    """
    if value is None:
        return value
    from memcli.errors import ValidationFailed
    from memcli.model import check_id
    from memcli.service import MIN_PREFIX

    ref = value.strip().lower()
    if ref and len(ref) < MIN_PREFIX:
        return value
    try:
        check_id(ref)
    except ValidationFailed:
        raise ValidationFailed(
            f"invalid id {value[:70]!r}: give a whole id (3-64 characters a-z, 0-9, '-' or '_') "
            f"or its first {MIN_PREFIX} or more characters",
            hint="list ids with `memcli list`; ids are file names, so no dots, slashes or spaces") from None
    return value


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


from memcli.cli import write_cmds, read_cmds, audit_cmds, history_cmds, compact_cmds, index_cmds, stats_cmds, rules_cmds, agent_cmds, hook_cmds  # noqa: E402,F401,I001 - registers the commands, in help order
