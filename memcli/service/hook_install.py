"""Hook installation: merging memcli's handlers into each agent's settings file.

The settings shapes come from INTEGRATIONS.md (three levels: event -> matcher group ->
handler); the pure shape check, merge and removal live in ``memcli.agents.hook_protocol``.

A shared file (the project's, meant to be committed) never names this machine's memcli: its
commands run the launcher of ``agents.launch_command`` (``sh -c SCRIPT memcli hook AGENT EVENT``),
which finds memcli on every teammate's machine, and the install writes this machine's
personal launcher (``service.launcher.record``) so the hooks run whatever the agent's ``PATH``
(CASES.md R9 and T11: after the README's set-up memcli may live only in a virtual
environment, where a bare ``memcli`` fails with ``/bin/sh: 1: memcli: not found``). A
personal file (``--local``, ``--user``) names the installing memcli by its absolute path.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from memcli.agents import hook_protocol as formats
from memcli.agents import launch_command
from memcli.agents.registry import agents, get
from memcli.errors import MemcliError, SettingsUnmergeable, StorageFailed, UsageProblem, refused_write
from memcli.service.launcher import memcli_program, record, where_label


def settings_path(agent: str, where: str, project: Path) -> Path:
    """The settings file memcli edits for ``agent`` (its ``Agent.settings``).

    Args:
        agent: the agent's name (``agents.registry``).
        where: ``project`` (shared with the team), ``local`` (yours, in the project: Claude
            Code's ``settings.local.json``) or ``user`` (yours, under the home folder).
        project: the project folder (the git top level, or the current folder).

    Raises:
        UsageProblem: ``local`` for an agent without a local settings file (exit 2).
    """
    files = get(agent).settings
    if where not in files:
        having = [f"{a.title} ({a.settings['local']})" for a in agents() if "local" in a.settings]
        raise UsageProblem(f"--local is for {', '.join(having)}; {agent} has no "
                           "local settings file", hint=f"use `memcli hook install {agent}` or add --user")
    return (Path.home() if where == "user" else project) / files[where]


def command(agent: str, event: str, workspace: str | None, shared: bool = False,
            project: Path | None = None) -> str:
    """The shell command of one hook, quoted for sh.

    Personal files: ``/abs/memcli [-w /abs/ws] hook AGENT EVENT``. Shared files (``shared``):
    ``sh -c SCRIPT memcli [-w REL] hook AGENT EVENT``, the workspace relative to ``project``
    (see :func:`shared_workspace`).

    Raises:
        UsageProblem: a shared file and a workspace outside ``project`` (exit 2).
    """
    pin = []
    if workspace:
        pin = ["-w", shared_workspace(workspace, project or Path.cwd()) if shared else str(Path(workspace).absolute())]
    tail = [*pin, "hook", agent, event]
    return shlex.join(launch_command.words(tail) if shared else [*memcli_program(), *tail])


def shared_workspace(workspace: str, project: Path) -> str:
    """``workspace`` as a shared file may pin it: relative to the project folder (``.`` for the
    project itself), since the agents run hooks and MCP servers in the project folder.

    Raises:
        UsageProblem: the workspace is outside the project: no path names it on every
            teammate's machine (exit 2).
    """
    folder = Path(workspace).expanduser().absolute()
    top = project.absolute()
    try:
        relative = folder.relative_to(top)
    except ValueError:
        try:
            relative = Path(os.path.realpath(folder)).relative_to(os.path.realpath(top))
        except ValueError:
            raise UsageProblem(f"the workspace {folder} is outside the project {top}, so a shared settings file "
                               "cannot name it on a teammate's machine",
                               hint="add --user (or --local for Claude Code) to pin it in your own settings, or "
                                    "drop -w/MEMCLI_WORKSPACE to let the hooks find memcli.toml from the project up") \
                from None
    return relative.as_posix() or "."


def read_settings(path: Path) -> dict:
    """The parsed settings file at ``path`` ({} when it does not exist or holds only blanks).

    Raises:
        SettingsUnmergeable: not UTF-8 JSON, a duplicate key (a rewrite would lose one of
            the values), or a shape memcli cannot merge into (``formats.shape_problem``);
            exit 5. The file is left as it is.
    """
    def refuse(problem: str) -> SettingsUnmergeable:
        return SettingsUnmergeable(f"{path}: {problem}; it was left as it is",
                                   hint="fix the file by hand (or move it aside), then run the command again")

    def no_duplicates(pairs: list) -> dict:
        keys = [key for key, _ in pairs]
        for key in keys:
            if keys.count(key) > 1:
                raise refuse(f"the key {key!r} appears twice in one object")
        return dict(pairs)

    try:
        raw = path.read_bytes() if path.exists() else b""
    except OSError as err:
        raise refuse(f"cannot be read ({err.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise refuse("is not UTF-8 text") from None
    if not text.strip():
        return {}
    try:
        settings = json.loads(text, object_pairs_hook=no_duplicates)
    except ValueError as err:
        if isinstance(err, json.JSONDecodeError):
            raise refuse(f"is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
        raise refuse(f"is not valid JSON ({err})") from None
    problem = formats.shape_problem(settings)
    if problem:
        raise refuse(f"cannot merge memcli's hooks: {problem}")
    return settings


def install(agent: str, where: str, project: Path, workspace: str | None, remove: bool = False) -> dict:
    """Merge memcli's hook entries into the agent's settings file (or remove them).

    Keeps every other key and handler; replaces memcli's earlier handlers (a bare
    ``memcli``, a path that moved); running it twice changes nothing the second time. A
    symbolic link to the settings file is written through: the link stays a link. The
    project's file is shared, so it gets the launcher (no path of this machine), and this
    machine's personal launcher is written or refreshed (:func:`service.launcher.record`).

    Args:
        agent: the agent's name (``agents.registry``).
        where: ``project``, ``local`` or ``user`` (see :func:`settings_path`).
        project: the project folder (the git top level, or the current folder).
        workspace: a workspace path to pin in the commands (``-w``), or None to let the
            hook find it from the agent's working folder.
        remove: take memcli's entries out instead.

    Returns:
        ``{"path", "shared", "kind", "changes": [...], "personal": [...], "warnings": [...],
        "next": [...]}``: ``shared`` is True for the project's file (meant to be committed),
        ``kind`` says so in words, ``personal`` the personal launcher written; warnings when the
        hooks will find no workspace (see :func:`unfound_workspace`) or when a program an
        earlier install wrote no longer exists; ``next``, what the person must still do for
        the agent to run the hooks (Codex and Gemini CLI trust).

    Raises:
        SettingsUnmergeable: the file cannot be merged into safely, or cannot be written
            (exit 5; untouched).
        StorageFailed: the disk refused the write (read-only, no permission, full; exit 15;
            untouched).
        ReviewRefused: ``remove`` when an agent's tool runs memcli (``agents.callers``; exit 8).
        UsageProblem: ``local`` for an agent without a local file, or a pinned workspace outside the
            project for the shared file (exit 2).
    """
    from memcli.store.files import atomic_write

    if remove:  # an agent's shell must not switch off the hooks that hold its guards (newcomer HIGH, stop 34)
        from memcli.agents.callers import person_only

        person_only(os.environ, "remove memcli's hooks")
    path = settings_path(agent, where, project)
    shared = where == "project"
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    settings = read_settings(target)
    warnings = [f"{path}: the {name} hook ran {cmd.executable}, which no longer exists; "
                + ("removed" if remove else "replaced with this memcli")
                for name, cmd in _earlier(settings) if os.path.isabs(cmd.executable)
                and not os.path.exists(cmd.executable)]
    if remove:
        updated, changes = formats.remove(settings)
    else:
        commands = {event: command(agent, event, workspace, shared, project) for event in get(agent).supported}
        updated, changes = formats.merge(settings, agent, commands)
    personal = []
    if shared and not remove:
        try:
            written = record()
        except OSError as err:
            failure = StorageFailed if refused_write(err) else SettingsUnmergeable
            raise failure(f"the personal launcher cannot be written ({err.strerror}); the hooks in {path} "
                          "were left as they are",
                          hint="check the permissions of ~/.local/share/memcli, then run the command again") from None
        personal = [written] if written else []
    if changes:
        mode = target.stat().st_mode & 0o7777 if target.exists() else None
        try:
            atomic_write(target, (json.dumps(updated, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
            if mode is not None:
                os.chmod(target, mode)
        except OSError as err:
            failure = StorageFailed if refused_write(err) else SettingsUnmergeable
            raise failure(f"{target}: cannot be written ({err.strerror}); it was left as it is",
                          hint="check the folder's permissions, then run the command again") from None
    problem = None if remove else unfound_workspace(project, workspace)
    if not remove:
        warnings.extend(_also_installed(agent, where, project))
    return {"path": str(path), "shared": shared, "kind": where_label("shared" if shared else "personal"),
            "changes": changes, "personal": personal, "warnings": warnings + ([problem] if problem else []),
            "next": [] if remove else trust_steps(agent, where, project)}


def _also_installed(agent: str, where: str, project: Path) -> list[str]:
    """A warning for each other settings file of ``agent`` that holds memcli's hooks too: the
    agent merges its settings levels and runs both, so every session gets each block twice
    (stop 34: Codex's project and --user hooks)."""
    out = []
    for other in get(agent).settings:
        if other == where:
            continue
        path = settings_path(agent, other, project)
        try:
            held = path.exists() and any(True for _ in formats.ours(read_settings(Path(os.path.realpath(path)))))
        except (MemcliError, OSError):
            continue
        if held:
            flag = {"user": " --user", "local": " --local"}.get(other, "")
            out.append(f"{path} holds memcli's {get(agent).title} hooks too: the agent runs both, so each session "
                       f"gets every block twice; remove one with `memcli hook uninstall {agent}{flag}`")
    return out


def _earlier(settings: dict) -> list[tuple[str, formats.HookCommand]]:
    """memcli's handlers already in the file, parsed: ``(agent's event name, command)``."""
    found = []
    for name, entry in formats.ours(settings):
        parsed = formats.parse_command(entry.get("command"))
        if parsed is not None:
            found.append((name, parsed))
    return found


def trust_steps(agent: str, where: str, project: Path) -> list[str]:
    """What the person must do before the agent runs the hooks just installed (``Agent.trust_steps``:
    Codex's review in ``/hooks``, Gemini CLI's trusted folder and auth method)."""
    steps = get(agent).trust_steps
    return steps(where, project) if steps is not None else []


def unfound_workspace(project: Path, workspace: str | None) -> str | None:
    """Why hooks installed for ``project`` will find no workspace, or None when they will.

    A hook without ``-w`` looks for ``memcli.toml`` (or ``.memcli/memcli.toml``) from the
    agent's working folder up (``store.workspace.find_root``), so a workspace in a
    subfolder of the project, or none at all, is never found; in a clone whose repository
    holds the memory branch (local or from the remote) the first hook checks it out.

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
        pass
    from memcli.service.branch import DEFAULT_BRANCH, _has_ref, _remote_ref, _toplevel

    try:  # a teammate's clone: the first hook checks out the project's memory branch (branch.attach_from)
        top = _toplevel(project)
        if top is not None and (_has_ref(top, f"refs/heads/{DEFAULT_BRANCH}") or _remote_ref(top, DEFAULT_BRANCH)):
            return None
    except MemcliError:
        pass
    return (f"no memcli workspace in {project} or a folder above it, so the hooks will find none: "
            f"run `memcli init` (or `memcli init --hidden`) there, or pin one with "
            f"`memcli -w PATH hook install ...` (or MEMCLI_WORKSPACE=PATH memcli hook install ...)")
