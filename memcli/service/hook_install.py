"""Hook installation: merging memcli's handlers into each agent's settings file.

The settings shapes come from INTEGRATIONS.md (three levels: event -> matcher group ->
handler); the pure merge and removal live in ``memcli.agents.hooks``.
"""

from __future__ import annotations

import json
from pathlib import Path

from memcli.agents import hooks as formats
from memcli.errors import MemcliError, ValidationFailed


def settings_path(agent: str, user: bool, project: Path) -> Path:
    """The settings file memcli edits for ``agent``: the project's, or the user's with ``user``."""
    base = Path.home() if user else project
    return base / {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
                   "gemini": ".gemini/settings.json"}[agent]


def _command(agent: str, event: str, workspace: str | None) -> str:
    import shlex

    where = f"-w {shlex.quote(str(Path(workspace).absolute()))} " if workspace else ""
    return f"memcli {where}hook {agent} {event}"


def install(agent: str, user: bool, project: Path, workspace: str | None, remove: bool = False) -> dict:
    """Merge memcli's hook entries into the agent's settings file (or remove them).

    Keeps every other key and handler; running it twice changes nothing the second time.

    Args:
        agent: ``claude``, ``codex`` or ``gemini``.
        user: edit the user's settings (``~/.claude/settings.json`` …) instead of the project's.
        project: the project folder (the git top level, or the current folder).
        workspace: a workspace path to pin in the commands (``-w``), or None to let the
            hook find it from the agent's working folder.
        remove: take memcli's entries out instead.

    Returns:
        ``{"path": ..., "changes": [...], "warnings": [...]}``; a warning when the hooks
        will find no workspace (see :func:`unfound_workspace`).

    Raises:
        ValidationFailed: the settings file is not a JSON object (it is left untouched).
    """
    from memcli.store.files import atomic_write

    path = settings_path(agent, user, project)
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError) as err:
        raise ValidationFailed(f"{path} is not valid JSON ({err}); it was left as it is",
                               hint="fix the file by hand, then run the command again") from None
    if not isinstance(settings, dict):
        raise ValidationFailed(f"{path} does not hold a JSON object; it was left as it is")
    if remove:
        updated, changes = formats.remove(settings)
    else:
        commands = {event: _command(agent, event, workspace) for event in formats.SUPPORTED[agent]}
        updated, changes = formats.merge(settings, agent, commands)
    if changes:
        atomic_write(path, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    problem = None if remove else unfound_workspace(project, workspace)
    return {"path": str(path), "changes": changes, "warnings": [problem] if problem else []}


def unfound_workspace(project: Path, workspace: str | None) -> str | None:
    """Why hooks installed for ``project`` will find no workspace, or None when they will.

    A hook without ``-w`` looks for ``memcli.toml`` (or ``.memcli/memcli.toml``) from the
    agent's working folder up (``store.workspace.find_root``), so a workspace in a
    subfolder of the project, or none at all, is never found.

    Args:
        project: the project folder the agent runs in.
        workspace: the workspace pinned in the hook commands, or None.
    """
    from memcli.store.workspace import find_root

    if workspace:
        return None
    try:
        find_root(cwd=project)
        return None
    except MemcliError:
        return (f"no memcli workspace in {project} or a folder above it, so the hooks will find none: "
                f"run `memcli init` (or `memcli init --hidden`) there, or pin one with "
                f"`memcli -w PATH hook install ...` (or MEMCLI_WORKSPACE=PATH memcli hook install ...)")
