"""Creating a workspace: ``memcli init`` (SPEC.md section 1)."""

from __future__ import annotations

from pathlib import Path

from memcli import testpoint
from memcli.config import CONFIG_NAME
from memcli.errors import MemcliError, WorkspaceInvalid
from memcli.git import log as gitlog
from memcli.git.repo import GitRepo
from memcli.store.workspace import create_files, find_root


def _refuse_a_store_without_settings(path: Path) -> None:
    """A folder memcli has used as a store whose ``memcli.toml`` is gone
    (``store.workspace.lost_settings``) is that store, not a place for a new one: a
    new workspace made there (or in its ``.memcli/``) would leave its memories behind.

    Raises:
        WorkspaceInvalid: so, with how to restore the file.
    """
    from memcli.store.workspace import HIDDEN, lost_settings

    for folder in (path.absolute(), path.absolute() / HIDDEN):
        if lost_settings(folder):
            raise WorkspaceInvalid(f"{folder} is a memcli store whose {CONFIG_NAME} is missing",
                                   hint=f"restore it: `git -C {folder} checkout HEAD -- {CONFIG_NAME}` "
                                        f"(or an older commit: `git -C {folder} log -- {CONFIG_NAME}`)")


def init(path: Path, hidden: bool = False, branch: str | None = None,
         in_tree: bool = False) -> tuple[Path, bool, str | None, str | None, str | None]:
    """Create a workspace at ``path`` and, when it is outside any work tree, a git repository.

    At the root of a code repository (``path`` is the top of a git work tree that holds no
    workspace), plain ``init`` is ``init --branch``: memory on its own orphan branch
    (``service.branch.DEFAULT_BRANCH``), checked out in ``.memcli/``, so it never follows
    code branches (issue 12). ``in_tree`` (``--in-tree``) or ``hidden`` keep it as a folder of the code repository.

    Returns:
        ``(root, created, commit, branch, taken)``: ``created`` False when one was already
        there (a memory branch checked out from the clone's remote included); ``branch`` the
        memory branch the store is on, None for a folder; ``taken`` a sentence naming the
        existing memory branch this call checked out and how many memory files it holds
        (a teammate's clone), else None.

    Raises:
        WorkspaceInvalid: the folder cannot be written.
        GitFailed, GitLocked: the first commit failed.

    Every call (a new workspace or an existing one, e.g. in a fresh clone) registers
    memcli's merge driver for memory files (``service.sync.ensure_merge_driver``).
    """
    _refuse_a_store_without_settings(path)
    if branch is None and not (in_tree or hidden) and _code_root(path):
        from memcli.service.branch import DEFAULT_BRANCH

        branch = DEFAULT_BRANCH
    if branch is not None:
        root, created, commit, taken = _init_branch(path, branch)
        return root, created, commit, branch, taken
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
    GitRepo.init(path)
    root, created = create_files(path, hidden)
    from memcli.service.sync import ensure_merge_driver

    attributes = ensure_merge_driver(root)  # per clone: a fresh clone's `memcli init` registers it too
    first = created or not attributes and unfinished_init(root)  # a kill came between the files and the commit
    if not first and not attributes:
        return root, False, None, None, None
    testpoint.reached("init:written")
    repo = GitRepo(root)
    msg = gitlog.message("init", "workspace" if first else "register the memory merge driver", {"Op": "init"})
    files = [root / CONFIG_NAME, *attributes] if created else (
        [root / CONFIG_NAME, *([root / ".gitattributes"] if (root / ".gitattributes").exists() else [])] if first
        else attributes)
    commit = repo.commit(files, msg, actor="memcli")
    return root, created, commit, None, None


def unfinished_init(root: Path) -> bool:
    """True when ``root``'s ``memcli.toml`` is on disk but was never committed (git's ``HEAD`` does not
    hold it): the ``init`` that wrote it was stopped before its first commit, which the next ``init``
    (or the creation of a personal store) then makes."""
    repo = GitRepo(root)
    status, _, _ = repo.raw("cat-file", "-e", f"HEAD:{repo.top_rel(root / CONFIG_NAME)}")
    return (root / CONFIG_NAME).is_file() and status != 0


def empty_repository(path: Path) -> bool:
    """True when ``path`` is the top of a git repository with no commit and no file yet (a fresh
    ``git init``): plain ``init`` makes the store right there, a repository of its own whose
    first commit is memcli's, not a memory branch beside code (:func:`_code_root`), and says so."""
    from memcli.service.branch import _has_ref, _toplevel

    try:
        top = _toplevel(path.absolute()) if path.is_dir() else None
        return top is not None and top.resolve() == path.resolve() and not _has_ref(top, "HEAD") and not any(
            entry.name != ".git" for entry in path.iterdir())
    except OSError:
        return False


def _code_root(path: Path) -> bool:
    """True when ``path`` is the top of a code repository with no memcli workspace in it yet:
    a git work tree that has a commit or a file (an empty ``git init`` folder is where a
    standalone store is being made)."""
    from memcli.service.branch import FOLDER, _has_ref, _toplevel

    if not path.is_dir() or (path / CONFIG_NAME).exists() or (path / FOLDER / CONFIG_NAME).exists():
        return False
    top = _toplevel(path.absolute())
    try:
        if top is None or top.resolve() != path.resolve():
            return False
        return _has_ref(top, "HEAD") or any(entry.name != ".git" for entry in path.iterdir())
    except OSError:
        return False


def _init_branch(path: Path, name: str) -> tuple[Path, bool, str | None, str | None]:
    """``init --branch``: the project store on the orphan branch ``name`` (``service.branch``):
    ``(root, created, commit, taken)``, ``taken`` saying which existing branch was checked out."""
    from memcli.service.branch import _toplevel, attach

    top = _toplevel(path.absolute()) if path.exists() else None
    if top is None:
        raise WorkspaceInvalid(f"{path} is not inside a git repository, so there is no code branch to keep memory "
                               "apart from", hint="run a plain `memcli init` for a standalone store")
    attached = attach(top, name, create=True)
    assert attached is not None, "attach(create=True) finds or makes the branch"
    folder, done = attached
    if done.startswith("checked out"):  # the branch was there (a teammate's, from the remote): nothing made
        count = sum(1 for _ in (folder / "memories").rglob("*.md")) if (folder / "memories").is_dir() else 0
        return folder, False, None, f"{done}: {count} memory file{'' if count == 1 else 's'}"
    return folder, done != "already checked out", None, None
