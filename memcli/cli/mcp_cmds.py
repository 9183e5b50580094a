"""The `mcp` command group: run the MCP server (`memcli mcp`), and register it with an agent."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from memcli.agents.registry import names
from memcli.cli.app import JsonOpt, app
from memcli.cli.output import emit, warn

mcp_app = typer.Typer(help="The MCP server: `memcli mcp` serves memory tools over stdio to an agent; "
                           "`memcli mcp install AGENT` registers it.", invoke_without_command=True)
app.add_typer(mcp_app, name="mcp")

ScopeO = Annotated[Optional[list[str]], typer.Option(
    "--scope", "-s", help="A scope the server may read and write; repeatable (else $MEMCLI_MCP_SCOPES, "
                          "else the workspace's [scopes] read). Tools cannot widen them.")]
AgentO = Annotated[Optional[str], typer.Option(
    "--agent", help="Provenance actor of its writes (else $MEMCLI_MCP_AGENT, else mcp-client; never the "
                    "client's self-reported name).")]
ReadOnlyO = Annotated[bool, typer.Option("--read-only", help="Offer only the tools that read.")]
AgentA = Annotated[str, typer.Argument(help=", ".join(names()[:-1]) + f" or {names()[-1]}.")]
UserO = Annotated[bool, typer.Option("--user", help="Edit your user configuration instead of the project's.")]


@mcp_app.callback()
def serve(
    ctx: typer.Context,
    scope: ScopeO = None, agent: AgentO = None, read_only: ReadOnlyO = False,
    transport: Annotated[str, typer.Option("--transport", help="stdio (default), or streamable-http on 127.0.0.1.")]
    = "stdio",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port for --transport streamable-http.")]
    = 8765,
) -> None:
    """Run the MCP server over stdio until the client closes it (tools: recall, context, show, history,
    review, remember, supersede, forget; no tool approves)."""
    if ctx.invoked_subcommand is not None:
        return
    from memcli.cli.state import GLOBALS
    from memcli.errors import UsageProblem
    from memcli.mcp_server.tools import Settings

    if transport not in ("stdio", "streamable-http"):
        raise UsageProblem(f"unknown --transport {transport!r}", hint="use stdio or streamable-http")
    settings = Settings.start(GLOBALS.workspace, GLOBALS.actor, scope, agent, read_only)
    from memcli.mcp_server.server import serve as run_server

    if sys.stdin is not None and sys.stdin.isatty() and transport == "stdio":
        warn("the MCP server reads JSON-RPC on stdin: an agent starts it (see `memcli mcp install`)")
    run_server(settings, transport, port)


def _install(agent: str, user: bool, remove: bool, scope: list[str] | None = None, as_agent: str | None = None,
             read_only: bool = False) -> None:
    import os

    from memcli.cli.state import GLOBALS
    from memcli.mcp_server import install as service
    from memcli.mcp_server.tools import Settings

    project = service.project_folder()
    service.config_path(agent, user, project)  # an unknown agent fails before anything else
    if not remove:
        Settings.start(GLOBALS.workspace, GLOBALS.actor, scope, as_agent, read_only)  # refuse bad options now
    workspace = GLOBALS.workspace or os.environ.get("MEMCLI_WORKSPACE")
    args = service.server_args(workspace, GLOBALS.actor, scope or [], as_agent, read_only,
                               shared_in=None if user or remove else project)
    result = service.install(agent, user, project, args, remove=remove)
    for note in result["notes"]:
        warn(note)
    verb = "removed from" if remove else "registered in"
    text = f"memcli MCP server {verb} {result['path']}" if result["changes"] else \
        f"nothing to change in {result['path']}"
    text += f" ({result['kind']})" + "".join(f"\nlauncher: {line}" for line in result["personal"])
    emit(result, text)


@mcp_app.command("install")
def install(agent: AgentA, user: UserO = False, scope: ScopeO = None, as_agent: AgentO = None,
            read_only: ReadOnlyO = False, json_: JsonOpt = False) -> None:
    """Register `memcli mcp` with an agent, keeping its other servers and keys.

    The project's file (.mcp.json, .codex/config.toml, .gemini/settings.json) is shared, so
    its entry names no path of this machine: `sh -c` runs a short launcher that finds memcli
    (~/.local/share/memcli/bin/memcli, which this command writes, then PATH, then
    ~/.local/bin). With --user the entry goes into your own file with this memcli's
    absolute path."""
    _install(agent, user, False, scope, as_agent, read_only)


@mcp_app.command("uninstall")
def uninstall(agent: AgentA, user: UserO = False, json_: JsonOpt = False) -> None:
    """Remove memcli's server entry from the agent's configuration (nothing else is touched)."""
    _install(agent, user, True)
