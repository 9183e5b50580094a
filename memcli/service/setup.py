"""Creating a workspace: ``memcli init`` (SPEC.md section 1)."""

from __future__ import annotations

from pathlib import Path

from memcli import gitlog
from memcli.config import CONFIG_NAME
from memcli.errors import MemcliError, WorkspaceInvalid
from memcli.store.workspace import create_files, find_root


def init(path: Path, hidden: bool = False, branch: str | None = None) -> tuple[Path, bool, str | None]:
    """Create a workspace at ``path`` and, when it is outside any work tree, a git repository.

    Returns:
        ``(root, created, commit)``: ``created`` False when one was already there.

    Raises:
        WorkspaceInvalid: the folder cannot be written.
        GitFailed, GitLocked: the first commit failed.

    Every call (a new workspace or an existing one, e.g. in a fresh clone) registers
    memcli's merge driver for memory files (``service.sync.ensure_merge_driver``).
    """
    if branch is not None:
        return _init_branch(path, branch)
    try:
        outer = find_root(cwd=path.absolute().parent)
    except MemcliError:
        outer = None
    if outer is not None and outer in path.absolute().parents and (outer / "memories") in [
            path.absolute(), *path.absolute().parents]:
        raise WorkspaceInvalid(f"{path} is inside the memories of the workspace {outer}",
                               hint="choose a folder outside it")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WorkspaceInvalid(f"cannot create {path}: {err.strerror}", hint="choose a folder you can write to") \
            from None
    gitlog.GitRepo.init(path)
    root, created = create_files(path, hidden)
    from memcli.service.sync import ensure_merge_driver

    attributes = ensure_merge_driver(root)  # per clone: a fresh clone's `memcli init` registers it too
    if not created and not attributes:
        return root, False, None
    repo = gitlog.GitRepo(root)
    msg = gitlog.message("init", "workspace" if created else "register the memory merge driver", {"Op": "init"})
    commit = repo.commit([root / CONFIG_NAME, *attributes] if created else attributes, msg, actor="memcli")
    return root, created, commit



def _init_branch(path: Path, name: str) -> tuple[Path, bool, str | None]:
    """``init --branch``: the project store on the orphan branch ``name`` (``service.branch``)."""
    from memcli.service.branch import attach, _toplevel

    top = _toplevel(path.absolute()) if path.exists() else None
    if top is None:
        raise WorkspaceInvalid(f"{path} is not inside a git repository, so there is no code branch to keep memory "
                               "apart from", hint="run a plain `memcli init` for a standalone store")
    folder, done = attach(top, name, create=True)
    return folder, done != "already checked out", None
