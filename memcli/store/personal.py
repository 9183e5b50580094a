"""Where a person's own stores live (SPEC.md section 1, Stores; issue 12).

Personal scopes (``user:<name>`` and ``session:*``) are kept out of the project
repository, in stores of the person's own: git repositories under the user's data
directory (``$MEMCLI_HOME``, else ``platformdirs.user_data_path("memcli")``: on Linux
``$XDG_DATA_HOME/memcli``, by default ``~/.local/share/memcli``):

- ``projects/<workspace id>/``: the personal memories of one project workspace (keyed by
  ``[workspace] id`` in its ``memcli.toml``, so every clone of it finds the same store);
- ``user/``: the person's cross-project memories (``remember --all-projects``), read in
  every workspace, the role ``~/.claude/CLAUDE.md`` plays for Claude Code.

Each is an ordinary memcli workspace (``[workspace] kind = "personal"``) with its own git
history, index and lock.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

#: The variable that moves every personal store (a folder; created on demand).
HOME_VARIABLE = "MEMCLI_HOME"
PROJECTS = "projects"
CROSS_PROJECT = "user"


def is_personal(scope: str) -> bool:
    """True for the scopes a person's own store holds: ``user:<name>`` and ``session:<id>``."""
    return scope.startswith(("user:", "session:"))


def data_home() -> Path:
    """The folder of the person's stores: ``$MEMCLI_HOME`` (an absolute path, ``~`` expanded), else the
    platform's user data folder for memcli: on Linux ``$XDG_DATA_HOME/memcli`` when that variable is an absolute
    path, else ``~/.local/share/memcli`` (the XDG Base Directory Specification, the rule
    ``platformdirs`` applies); elsewhere ``platformdirs.user_data_path`` (macOS
    ``~/Library/Application Support/memcli``, Windows ``%LOCALAPPDATA%\\memcli``).

    Raises:
        WorkspaceInvalid: ``$MEMCLI_HOME`` is a relative path.
    """
    given = os.environ.get(HOME_VARIABLE)
    if given:
        path = Path(given).expanduser()
        if not path.is_absolute():  # relative to whatever folder a command runs in: never the same store
            from memcli.errors import WorkspaceInvalid

            raise WorkspaceInvalid(f"${HOME_VARIABLE} must be an absolute path, not {given[:80]!r}",
                                   hint=f"set it to a full path, e.g. {Path.home() / '.local' / 'share' / 'memcli'}")
        return path
    if sys.platform.startswith("linux"):  # the XDG Base Directory rule, without platformdirs' 10 ms import
        xdg = os.environ.get("XDG_DATA_HOME", "")
        return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share") / "memcli"
    from platformdirs import user_data_path

    return user_data_path("memcli", appauthor=False)


def project_store(workspace_id: str) -> Path:
    """The root of the person's store for the workspace whose ``[workspace] id`` this is."""
    return data_home() / PROJECTS / workspace_id


def cross_project_store() -> Path:
    """The root of the person's cross-project store (read in every workspace)."""
    return data_home() / CROSS_PROJECT


#: Modes of what is private to the person (issue 22 point 6): folders and files of a personal store
#: (its memories, its index, its git objects) and of a project's ``.cache/``.
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
#: The process umask memcli runs under (``cli.main``): whatever the person's umask, nothing memcli or
#: its git children create is readable by others.
PRIVATE_UMASK = 0o077


def private_umask() -> None:
    """Add :data:`PRIVATE_UMASK` to the process umask (it only ever narrows what the person set)."""
    old = os.umask(PRIVATE_UMASK)
    os.umask(old | PRIVATE_UMASK)


def too_open(root: Path) -> list[Path]:
    """Folders and files under ``root`` (``root`` included) that others may read, write or enter:
    any group or other permission bit. Links are not followed and never listed.

    Args:
        root: a personal store, or a project's cache folder; missing: nothing.
    """
    out: list[Path] = []
    if not root.is_dir() or root.is_symlink():
        return out
    for folder, dirs, names in os.walk(root):
        for path in (Path(folder), *(Path(folder, n) for n in names)):
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
                out.append(path)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return out


def make_private(paths: list[Path]) -> int:
    """Give each of ``paths`` (from :func:`too_open`) :data:`PRIVATE_DIR` or :data:`PRIVATE_FILE`,
    keeping the owner's own bits (an executable git hook stays executable). Returns how many changed."""
    done = 0
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
            own = stat.S_IMODE(mode) & 0o700
            os.chmod(path, (own | 0o700) if stat.S_ISDIR(mode) else (own | 0o600))
            done += 1
        except OSError:
            continue
    return done
