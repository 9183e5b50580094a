"""Creating a workspace: ``memcli init`` (SPEC.md section 1)."""

from __future__ import annotations

from pathlib import Path

from memcli import gitlog
from memcli.config import CONFIG_NAME
from memcli.errors import MemcliError, WorkspaceInvalid
from memcli.store.workspace import create_files, find_root


def init(path: Path, hidden: bool = False) -> tuple[Path, bool, str | None]:
    """Create a workspace at ``path`` and, when it is outside any work tree, a git repository.

    Returns:
        ``(root, created, commit)``: ``created`` False when one was already there.

    Raises:
        WorkspaceInvalid: the folder cannot be written.
        GitFailed, GitLocked: the first commit failed.
    """
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
    if not created:
        return root, False, None
    repo = gitlog.GitRepo(root)
    msg = gitlog.message("init", "workspace", {"Op": "init"})
    commit = repo.commit([root / CONFIG_NAME], msg, actor="memcli")
    return root, True, commit

