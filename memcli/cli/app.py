"""The typer app: global options, and the registration of every command group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memcli import __version__
from memcli.cli.state import GLOBALS
from memcli.cli.state import ctx as ctx  # `x as x`: re-exported for the command modules
from memcli.cli.state import flush_warnings as flush_warnings  # likewise

if TYPE_CHECKING:
    from typer import _click as click  # typer 0.28 vendors click

app = typer.Typer(
    name="memcli",
    help="Long-term memory for coding agents: Markdown files with YAML front-matter, under git.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _metavar(self: typer.core.TyperArgument, ctx: object, *, usage: bool = False) -> str:
    """Arguments as click and most command-line tools show them: ``QUERY...``, ``[PATH]``.

    typer 0.28 writes a required argument as ``{query}...``; this replaces its
    ``TyperArgument.make_metavar`` (the one place typer decides it).
    """
    name = self.metavar or (self.name or "").upper()
    if self.metavar is None and self.nargs != 1:
        name += "..."
    return f"[{name}]" if usage and not self.required and not name.startswith("[") else name


typer.core.TyperArgument.make_metavar = _metavar  # type: ignore[method-assign]  # typer offers no hook for it


def _summary(self: click.Command, limit: int = 45) -> str:
    """A command's one-line summary in ``--help``: its docstring's first clause, whole.

    click cuts the first sentence at ``limit`` characters and ends it in "..."; this takes
    the first sentence up to a ``:`` or ``;`` outside parentheses, drops parentheses and
    then trailing ", …" clauses, then trailing words while it is longer than ``limit``,
    so a summary is one line without an ellipsis.
    """
    import re

    text = self.short_help or " ".join((self.help or "").split("\n\n", 1)[0].split())
    text = re.split(r"\.\s|\.$", text, maxsplit=1)[0]
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ":;" and depth == 0:
            text = text[:i]
            break
    if len(text) > limit:
        text = re.sub(r"\s*\([^()]*\)", "", text)
    while len(text) > limit and ", " in text:
        text = text.rsplit(", ", 1)[0]
    while len(text) > limit and " " in text:
        text = text.rsplit(" ", 1)[0]
    return text.strip()


typer.core.TyperCommand.get_short_help_str = _summary  # type: ignore[method-assign]  # likewise
typer.core.TyperGroup.get_short_help_str = _summary  # type: ignore[method-assign]  # likewise


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
        "--workspace", "-w",
        help="Workspace folder (else $MEMCLI_WORKSPACE, else the nearest memcli.toml above).")] = None,
    actor: Annotated[Optional[str], typer.Option(
        "--actor", help="Who is acting, a label (else $MEMCLI_ACTOR, else git's user.email).")] = None,
    json_: JsonOpt = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    GLOBALS.workspace = workspace
    GLOBALS.actor = actor


# Registers the commands, in help order (hence not sorted, and after `app`):
from memcli.cli import (  # noqa: E402,F401,I001
    write_cmds, read_cmds, audit_cmds, history_cmds, compact_cmds, index_cmds, stats_cmds, rules_cmds, agent_cmds,
    stale_cmds, hook_cmds, team_cmds, quarantine_cmds, mcp_cmds, completion_cmds)
