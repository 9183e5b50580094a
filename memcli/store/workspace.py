"""Finding, creating and locking a workspace (SPEC.md section 1).

A workspace is the folder that holds ``memcli.toml`` and ``memories/``; it may also be
kept as ``.memcli/`` inside a project. Derived data lives in ``.cache/`` inside it, and
raw session transcripts kept by ``compact --transcript`` in ``archive/``; each ignores
itself (its own ``.gitignore`` holds ``*``), so nothing there is ever committed (SPEC.md:
memcli never stores raw chat logs in git) and the user's ignore files are never edited.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from memcli.config import CONFIG_NAME, Config, load_config
from memcli.errors import WorkspaceInvalid, WorkspaceLocked, WorkspaceNotFound
from memcli.store.files import MemoryFiles

HIDDEN = ".memcli"
CACHE = ".cache"
ARCHIVE = "archive"
#: The root of the last workspace this process opened (``open_workspace``), or None.
#: ``memcli.cli.main`` reads it to append the command to the event log.
OPENED: Path | None = None


class Workspace:
    """An opened workspace.

    Attributes:
        root: the folder holding ``memcli.toml`` (absolute).
        config: its parsed configuration.
    """

    __slots__ = ("root", "config")

    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config

    @property
    def files(self) -> MemoryFiles:
        """The ``memories/`` tree; a project's with an id is shared (``MemoryFiles(shared=True)``:
        a personal scope's file in it is never served)."""
        return MemoryFiles(self.root, shared=self.config.kind == "project" and bool(self.config.workspace_id))

    @property
    def cache(self) -> Path:
        """The git-ignored cache folder (index, statistics, locks), created on demand."""
        return cache_folder(self.root)

    @property
    def archive(self) -> Path:
        """The git-ignored archive folder (raw session transcripts, gzipped), created on demand.

        Raises:
            WorkspaceInvalid: it cannot be created (a file in its place, no permission).
        """
        return _ignored_folder(self.root / ARCHIVE, "memcli archive of raw session transcripts: never committed",
                               "cannot use the archive folder", "memcli keeps raw transcripts there")

    @contextmanager
    def lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the workspace write lock (an OS file lock: released if the process dies).

        Args:
            timeout: seconds to wait; defaults to ``[git] lock_timeout``.

        Raises:
            WorkspaceLocked: another process held it for the whole wait.
            StorageFailed: the disk refuses the lock file (a read-only or unwritable cache folder, a full disk).
            WorkspaceInvalid: the lock file cannot be created or opened for another reason.
        """
        from memcli.store.oslock import FileLock, Timeout

        wait = self.config.lock_timeout if timeout is None else timeout
        lock = FileLock(str(self.cache / "write.lock"), timeout=wait)
        try:
            lock.acquire()
        except Timeout:
            raise WorkspaceLocked(
                f"another memcli process has held the workspace lock for {wait:g} s",
                hint="retry when it finishes, or raise [git] lock_timeout in memcli.toml") from None
        except OSError as err:
            import errno

            from memcli.errors import StorageFailed

            # the disk refusing the write (read-only, no permission, full) is exit 15, as any write it refuses
            refused = err.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)
            raise (StorageFailed if refused else WorkspaceInvalid)(
                f"cannot take the workspace lock {self.root / CACHE / 'write.lock'}: {err.strerror}; "
                "nothing was written",
                hint=f"make {self.root / CACHE} writable (it holds only derived data)") from None
        try:
            yield
        finally:
            lock.release()


def cache_folder(root: Path) -> Path:
    """The git-ignored cache folder of the workspace at ``root`` (index, statistics, locks), created on demand.

    Raises:
        WorkspaceInvalid: the folder cannot be created (a file in its place, no permission),
            or it is a symbolic link, leads out of the workspace, or holds a link (a cloned
            repository may commit one: memcli would write its index, locks and logs where
            it points); reads then scan the files, writes stop before writing anything.
    """
    path = root / CACHE
    _refuse_links(root, path)
    return _ignored_folder(path, "memcli derived data: never committed",
                           "cannot use the cache folder", "it holds only derived data")


def _refuse_links(root: Path, path: Path) -> None:
    """Raise WorkspaceInvalid when the cache folder ``path`` is, or holds, a symbolic link."""
    hint = f"remove it (rm {path}; it holds only derived data) and memcli makes a real one"
    if os.path.islink(path):
        raise WorkspaceInvalid(f"the cache folder {path} is a symbolic link (to {os.readlink(path)}); "
                               "memcli does not write its index where a link points", hint=hint)
    if not os.path.lexists(path):
        return
    if os.path.realpath(path) != os.path.join(os.path.realpath(root), CACHE):
        raise WorkspaceInvalid(f"the cache folder {path} leads out of the workspace ({os.path.realpath(path)})",
                               hint=hint)
    try:
        with os.scandir(path) as entries:
            link = next((e.name for e in entries if e.is_symlink()), None)
    except OSError:
        return  # not a folder or not readable: _ignored_folder reports it
    if link is not None:
        raise WorkspaceInvalid(f"the cache folder {path} holds a symbolic link ({link}); memcli does not "
                               "write through links", hint=hint)


def _ignored_folder(path: Path, note: str, problem: str, why: str) -> Path:
    """``path``, created with a ``.gitignore`` holding ``*`` so that git ignores the folder.

    Raises:
        WorkspaceInvalid: ``problem``, with the OS's reason; the hint says ``why`` the folder matters.
    """
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        what = "a symbolic link" if os.path.islink(path) else "not a folder"
        raise WorkspaceInvalid(f"{problem} {path}: it is {what}, and memcli never writes through one",
                               hint=f"remove it (a clone may have brought it); memcli recreates the folder ({why})")
    if not (path / ".gitignore").exists():
        try:
            path.mkdir(parents=True, exist_ok=True)
            (path / ".gitignore").write_text(f"# {note}\n*\n", encoding="utf-8")
        except OSError as err:
            raise WorkspaceInvalid(f"{problem} {path}: {err.strerror}",
                                   hint=f"remove what is in its place ({why})") from None
    return path


#: The record verify on arrival keeps in a store's cache (``service.arrived.STATE_NAME``): a
#: folder that holds it and ``memories/`` was opened by memcli before, whatever became of its
#: ``memcli.toml``.
ARRIVAL_RECORD = "arrival.json"


def _holder(folder: Path) -> Path | None:
    """The workspace folder at ``folder`` (itself or its ``.memcli/``), or None.

    A folder whose ``memcli.toml`` is gone but that memcli has read before (its cache holds
    :data:`ARRIVAL_RECORD` beside ``memories/``) is still the workspace: a commit that deleted
    the file, pulled by a teammate, must not switch memcli off (the hooks would stop bringing
    memories and stop holding guards without a word). Its settings are then the last committed
    ones that load (``service.settings.settle``), with a note that says so.
    """
    for candidate in (folder, folder / HIDDEN):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    for candidate in (folder, folder / HIDDEN):
        if lost_settings(candidate):
            return candidate
    return None


def lost_settings(folder: Path) -> bool:
    """Whether ``folder`` is a store memcli has read before (its cache holds
    :data:`ARRIVAL_RECORD` beside ``memories/``) whose ``memcli.toml`` is gone."""
    return (folder / CACHE / ARRIVAL_RECORD).is_file() and (folder / "memories").is_dir() \
        and not (folder / CONFIG_NAME).exists()


def find_root(explicit: str | None = None, cwd: Path | None = None) -> Path:
    """Locate the workspace folder: ``explicit`` > ``$MEMCLI_WORKSPACE`` > walk up from ``cwd``.

    Raises:
        WorkspaceNotFound: no ``memcli.toml`` (or ``.memcli/memcli.toml``) there.
    """
    given = explicit or os.environ.get("MEMCLI_WORKSPACE")
    if given:
        folder = Path(given).expanduser().absolute()
        root = _holder(folder)
        if root is None:
            if folder.exists() and not folder.is_dir():  # -w names a file: no init makes that a workspace
                raise WorkspaceNotFound(f"{folder} is a file, not a memcli workspace folder",
                                        hint="give -w (or MEMCLI_WORKSPACE) the folder that holds memcli.toml")
            raise WorkspaceNotFound(f"no memcli workspace at {folder} (no {CONFIG_NAME})",
                                    hint=f"create one with `memcli init {given}`")
        return root
    try:
        start = (cwd or Path.cwd()).absolute()
    except FileNotFoundError:  # the current folder was deleted under us
        raise WorkspaceNotFound("the current folder no longer exists, so no workspace can be found from it",
                                hint="cd to an existing folder, or pass --workspace PATH") from None
    for folder in (start, *start.parents):
        root = _holder(folder)
        if root is not None:
            return root
    raise WorkspaceNotFound(f"no memcli workspace in {start} or any parent folder",
                            hint="create one with `memcli init`, or pass --workspace PATH")


def open_workspace(explicit: str | None = None, settle: Callable[[Path], Config] | None = None) -> Workspace:
    """Find and open the workspace; see :func:`find_root`.

    Args:
        settle: what gives the settings of the workspace folder it is given (``service.settings.settle``:
            a held-back or broken ``memcli.toml``); default: the file as it is (``load_config``).

    Raises:
        WorkspaceNotFound, WorkspaceInvalid: as the message says.
    """
    global OPENED
    root = find_root(explicit)
    workspace = Workspace(root=root, config=settle(root) if settle else load_config(root / CONFIG_NAME))
    OPENED = root
    return workspace


def create_files(path: Path, hidden: bool = False, kind: str = "project") -> tuple[Path, bool]:
    """Create the workspace files under ``path`` (``path/.memcli`` when ``hidden``).

    ``kind``: ``project`` (``memcli.toml`` gets a fresh ``[workspace] id``) or ``personal``
    (a person's own store, ``store.personal``); see ``config.new_toml``.

    Returns:
        ``(root, created)``: ``created`` is False when a workspace was already there.

    Raises:
        WorkspaceInvalid: the folder cannot be created or written.
    """
    from memcli.config import new_toml

    root = path.absolute() / HIDDEN if hidden else path.absolute()
    existing = _holder(path.absolute())
    if existing is not None:
        return existing, False
    try:
        (root / "memories").mkdir(parents=True, exist_ok=True)
        (root / CONFIG_NAME).write_text(new_toml(kind), encoding="utf-8")
    except OSError as err:
        raise WorkspaceInvalid(f"cannot create a workspace in {root}: {err.strerror}",
                               hint="choose a folder you can write to") from None
    created = Workspace(root=root, config=load_config(root / CONFIG_NAME))
    created.cache  # the property creates .cache/
    created.archive  # the property creates archive/
    return root, True
