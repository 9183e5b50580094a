"""Per-process CLI state without typer: the global options and opening the service context."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.service import Ctx


class Globals:
    """Options given before the command, shared by every command."""

    workspace: str | None = None
    actor: str | None = None


GLOBALS = Globals()


def ctx(tolerant: bool = False) -> Ctx:
    """Open the workspace named by the global options (imports the service layer lazily);
    ``tolerant``: see ``Ctx.open`` (a ``memcli.toml`` that does not load)."""
    from memcli.service import Ctx

    return Ctx.open(GLOBALS.workspace, GLOBALS.actor, tolerant)


def flush_warnings(context: Ctx) -> None:
    """Send the warnings a service gathered to stderr (or the JSON envelope)."""
    from memcli.cli.output import warn

    for message in context.warnings:
        warn(message)
