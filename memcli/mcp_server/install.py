"""``memcli mcp install|uninstall AGENT``: register the server where each agent looks for MCP servers.

Where each agent reads its MCP servers is its module's ``mcp_config`` (``agents.registry``;
checked against the agents' documentation and, for Claude Code 2.1.332, by ``claude mcp
list`` in ``scripts/mcp-inspector-check.sh``): Claude Code's ``.mcp.json`` or ``~/.claude.json``,
Codex's ``.codex/config.toml`` (TOML), Gemini CLI's ``.gemini/settings.json``.

A project's file is shared (teams commit it), so its entry names no path of this machine:
it runs ``sh -c SCRIPT memcli …`` (``agents.launch_command``), which finds memcli on each
teammate's machine, and the install writes this machine's personal launcher
(``service.launcher.record``); a pinned workspace is written relative to the project (the
agents start servers in the project folder). A user's file names the installing memcli
by its absolute path. Either way the agent's ``PATH`` does not matter. The merge keeps
every other key and server; TOML is edited with ``tomlkit``, which keeps comments and
layout, so ``uninstall`` gives back the file as it was (and deletes a file that held
nothing else). A file that cannot be merged safely (not valid JSON or TOML, not an object,
``mcpServers`` not an object) is refused with one line and left untouched. A symbolic
link is written through: its target is updated, the link stays.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from memcli.errors import UsageProblem, ValidationFailed

#: The server's name in every agent's configuration.
NAME = "memcli"


def config_path(agent: str, user: bool, project: Path) -> Path:
    """The file memcli edits for ``agent`` (``Agent.mcp_config``): the project's, or the user's with ``user``.

    Raises:
        UsageProblem: ``agent`` is not an agent of the registry, or one without MCP support (exit 2).
    """
    from memcli.agents.registry import agents, require

    own = require(agent)
    if own.mcp_config is None:
        having = ", ".join(a.name for a in agents() if a.mcp_config is not None)
        raise UsageProblem(f"{own.title} takes no MCP server from memcli", hint=f"use one of: {having}")
    return own.mcp_config(user, project)


def server_command() -> tuple[str, list[str]]:
    """The absolute command that starts this memcli: ``(program, leading arguments)``.

    The console script that is running (``…/bin/memcli``), else the one installed beside
    this Python, else ``sys.executable -m memcli``.
    """
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if running is not None and running.name == "memcli" and running.is_file():
        return str(running.absolute()), []
    beside = Path(sys.executable).parent / "memcli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside), []
    return str(Path(sys.executable).absolute()), ["-m", "memcli"]


def server_args(workspace: str | None, actor: str | None, scopes: list[str], agent: str | None,
                read_only: bool, shared_in: Path | None = None) -> list[str]:
    """The arguments after the program: global options, ``mcp``, and the server's own options.

    Args:
        shared_in: the project folder when the entry goes into its shared file: the workspace
            is then written relative to it.

    Raises:
        UsageProblem: a shared file and a workspace outside the project, or an actor (exit 2).
    """
    from memcli.service.hook_install import shared_workspace

    if actor and shared_in is not None:
        raise UsageProblem(f"--actor {actor} in the project's shared file would make every teammate act as {actor}",
                           hint="add --user to pin it in your own configuration")
    if workspace and shared_in is not None:
        args = ["-w", shared_workspace(workspace, shared_in)]
    else:
        args = ["-w", str(Path(workspace).absolute())] if workspace else []
    args += ["--actor", actor] if actor else []
    args.append("mcp")
    for scope in scopes:
        args += ["--scope", scope]
    args += ["--agent", agent] if agent else []
    args += ["--read-only"] if read_only else []
    return args


def _refuse(path: Path, why: str) -> ValidationFailed:
    return ValidationFailed(f"{path} {why}; memcli left it as it is",
                            hint="fix the file by hand, or add the memcli server to it yourself")


def _read(path: Path) -> str | None:
    """The file's text (through a symbolic link), or None when it does not exist."""
    if not path.exists():
        return None
    if not path.is_file():
        raise _refuse(path, "is not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _refuse(path, f"cannot be read as UTF-8 text ({type(err).__name__})") from None


def _write(path: Path, text: str | None) -> None:
    """Write (or, with None, delete) the file; through a symbolic link; keeping its permissions."""
    from memcli.store.files import atomic_write

    target = Path(os.path.realpath(path))
    if text is None:
        target.unlink(missing_ok=True)
        return
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    atomic_write(target, text.encode("utf-8"))
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(target, mode)


def _json_edit(path: Path, text: str | None, entry: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(new text, change) for a JSON file whose ``mcpServers`` gets ``entry`` (None: loses memcli's)."""
    data: Any = {}

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        twice = next((key for key in keys if keys.count(key) > 1), None)
        if twice is not None:  # json keeps the last silently: the rewrite would lose the other (stop 34)
            raise _refuse(path, f"has the key {twice!r} twice in one object")
        return dict(pairs)

    if text is not None and text.strip():
        try:
            data = json.loads(text, object_pairs_hook=no_duplicates)
        except ValueError as err:
            raise _refuse(path, f"is not valid JSON ({getattr(err, 'msg', err)}, line {getattr(err, 'lineno', '?')})") \
                from None
    if not isinstance(data, dict):
        raise _refuse(path, "does not hold a JSON object")
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise _refuse(path, "has an mcpServers value that is not an object")
    servers = dict(servers or {})
    if entry is None:
        if NAME not in servers:
            return text, None
        del servers[NAME]
        change = f"removed mcpServers.{NAME}"
    else:
        if servers.get(NAME) == entry:
            return text, None
        change = f"{'updated' if NAME in servers else 'added'} mcpServers.{NAME}"
        servers[NAME] = entry
    if servers:
        data["mcpServers"] = servers
    else:
        data.pop("mcpServers", None)
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n" if data else None), change


def _toml_edit(path: Path, text: str | None, entry: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(new text, change) for a TOML file whose ``[mcp_servers.memcli]`` becomes ``entry`` (None: goes)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text or "")
    except TOMLKitError as err:
        raise _refuse(path, f"is not valid TOML ({err})") from None
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise _refuse(path, "has an mcp_servers value that is not a table")
    if entry is None:
        if servers is None or NAME not in servers:
            return text, None
        del servers[NAME]
        if not servers:
            del doc["mcp_servers"]
        rendered = doc.as_string()
        return (rendered if rendered.strip() else None), f"removed mcp_servers.{NAME}"
    if servers is not None and NAME in servers and _plain(servers[NAME]) == entry:
        return text, None
    change = f"{'updated' if servers is not None and NAME in servers else 'added'} mcp_servers.{NAME}"
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = value
    if servers is None:
        doc["mcp_servers"] = tomlkit.table(is_super_table=True)
        servers = doc["mcp_servers"]
    servers[NAME] = table
    return doc.as_string(), change


def _plain(item: Any) -> Any:
    """A tomlkit item as plain Python values."""
    return item.unwrap() if hasattr(item, "unwrap") else item


def entry_for(agent: str, program: str, args: list[str]) -> dict[str, Any]:
    """memcli's server entry in ``agent``'s format (a stdio server: command and arguments)."""
    from memcli.agents.registry import get

    make = get(agent).mcp_entry
    return make(program, args) if make is not None else {"command": program, "args": args}


def install(agent: str, user: bool, project: Path, args: list[str], remove: bool = False) -> dict[str, Any]:
    """Add memcli's server entry to the agent's configuration file (or, with ``remove``, take it out).

    Running it twice changes nothing the second time (no write).

    Args:
        agent: the agent's name (``agents.registry``).
        user: edit the user's file instead of the project's.
        project: the project folder (the git top level, or the current folder).
        args: the server's arguments after the program (see :func:`server_args`).
        remove: take memcli's entry out; a file left with nothing else is deleted.

    Returns:
        ``{"agent", "path", "shared", "kind", "changes", "entry", "notes", "personal"}``:
        ``shared`` is True for the project's file (meant to be committed; its entry runs the
        launcher), ``personal`` the personal launcher written.

    Raises:
        UsageProblem: unknown agent (exit 2).
        ValidationFailed: the file cannot be merged safely (bad JSON or TOML, a key twice in
            one object); it is left untouched (exit 5).
        ReviewRefused: ``remove`` when an agent's tool runs memcli (``agents.callers``; exit 8).
    """
    from memcli.agents import launch_command
    from memcli.agents.registry import get
    from memcli.service.launcher import record, where_label

    if remove:  # an agent's shell must not take memcli's server out of its own configuration
        from memcli.agents.callers import person_only

        person_only(os.environ, "remove memcli's MCP server")

    path = config_path(agent, user, project)
    text = _read(path)
    if user:
        program, lead = server_command()
    else:
        program, *lead = launch_command.words([])
    entry = None if remove else entry_for(agent, program, [*lead, *args])
    own = get(agent)
    edit = _toml_edit if own.mcp_format == "toml" else _json_edit
    new_text, change = edit(path, text, entry)
    personal = []
    if not user and not remove:
        try:
            written = record()
        except OSError as err:
            raise ValidationFailed(f"the personal launcher cannot be written ({err.strerror}); {path} was left "
                                   "as it is",
                                   hint="check the permissions of ~/.local/share/memcli, then run the command again") \
                from None
        personal = [written] if written else []
    if change is not None:
        _write(path, new_text)
    notes = [] if remove or change is None or user or not own.mcp_note else [own.mcp_note]
    kind = where_label("personal" if user else "shared")
    return {"agent": agent, "path": str(path), "shared": not user, "kind": kind,
            "changes": [change] if change else [], "entry": entry, "notes": notes, "personal": personal}


def project_folder() -> Path:
    """The git top level of the current folder, else the current folder."""
    from memcli.errors import GitFailed
    from memcli.git import run as runner

    try:
        proc = runner.run(("rev-parse", "--show-toplevel"), text=True, timeout=10)
    except GitFailed:  # no git, or past the deadline
        return Path.cwd()
    top = proc.stdout.strip()
    return Path(top) if proc.returncode == 0 and top else Path.cwd()
