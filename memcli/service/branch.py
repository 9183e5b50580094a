"""The memory branch: a project store on its own orphan branch (SPEC.md section 1).

Inside a code repository, ``memcli init --branch [NAME]`` keeps the project store on an
orphan branch (default :data:`DEFAULT_BRANCH`) checked out as a git worktree in the
folder :data:`FOLDER` at the project root, git-ignored through ``.git/info/exclude`` (a
local file, so memcli never commits to a code branch, not even a ``.gitignore`` line).
Memories then do not change with ``git checkout``, and memory commits never land in code
pull requests. The branch travels with the repository: ``git push origin memcli/memory``
or ``memcli sync`` (run in the worktree) shares it, and in a fresh clone the first memcli
command (or ``memcli init --branch``) checks it out again, with a one-line note.

The orphan branch's first commit is made with git's plumbing (``hash-object``,
``mktree``, ``commit-tree``, ``update-ref`` with an empty old value, so an existing branch
is never overwritten), because ``git worktree add --orphan`` needs git 2.42.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.errors import GitFailed, WorkspaceInvalid, WorkspaceNotFound

if TYPE_CHECKING:
    import subprocess

DEFAULT_BRANCH = "memcli/memory"
#: The worktree folder at the project root; ``store.workspace.find_root`` finds
#: ``.memcli/memcli.toml`` from anywhere in the project.
FOLDER = ".memcli"


def unshared_index(root: Path, kind: str) -> bool:
    """Whether only memcli stages in the repository holding the workspace at ``root``: a
    personal store (``kind``), or the memory branch's worktree (``.memcli/`` holding git's
    ``.git`` file of a linked worktree; a hidden in-tree store has no such file). Its
    commits may then keep git's index split (``memcli.git.commit.commit``)."""
    return kind == "personal" or (root.name == FOLDER and (root / ".git").is_file())


def _git(cwd: Path, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    from memcli.git import run as runner

    runner.seal_environment()
    return runner.run(args, cwd, input=input)


def _out(cwd: Path, *args: str, input: bytes | None = None) -> str:
    from memcli.git import run as runner

    proc = _git(cwd, *args, input=input)
    runner.check(proc, args)
    return proc.stdout.decode("utf-8", "replace").strip()


def _toplevel(folder: Path) -> Path | None:
    proc = _git(folder, "rev-parse", "--show-toplevel")
    return Path(proc.stdout.decode().strip()) if proc.returncode == 0 else None


def _has_ref(top: Path, ref: str) -> bool:
    return _git(top, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}").returncode == 0


def _remote_ref(top: Path, name: str) -> str | None:
    refs = _out(top, "for-each-ref", "--format=%(refname)", f"refs/remotes/*/{name}").splitlines()
    return refs[0] if refs else None


def _exclude(top: Path) -> None:
    """Add ``/.memcli/`` to the repository's local ignore file (``.git/info/exclude``)."""
    exclude = Path(_out(top, "rev-parse", "--git-path", "info/exclude"))
    exclude = exclude if exclude.is_absolute() else top / exclude
    line = f"/{FOLDER}/"
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if line not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")


def _orphan(top: Path, name: str) -> None:
    """Create branch ``name`` holding only memcli.toml and .gitattributes, without touching HEAD or the index."""
    from memcli.config import new_toml
    from memcli.service.sync import ATTRIBUTES_LINE

    entries = []
    for file_name, text in (("memcli.toml", new_toml()), (".gitattributes", ATTRIBUTES_LINE + "\n")):
        blob = _out(top, "hash-object", "-w", "--stdin", input=text.encode("utf-8"))
        entries.append(f"100644 blob {blob}\t{file_name}\n")
    from memcli.git import log as gitlog
    from memcli.git.run import first_line

    tree = _out(top, "mktree", input="".join(entries).encode("utf-8"))
    message = gitlog.message("init", "memory branch", {"Op": "init"})
    commit = _out(top, "commit-tree", tree, "-F", "-", input=message.encode("utf-8"))
    proc = _git(top, "update-ref", f"refs/heads/{name}", commit, "")
    if proc.returncode != 0:
        raise GitFailed(f"cannot create the branch {name}: {first_line(proc.stderr)}",
                        hint="choose another name with `memcli init --branch NAME`")


def attach(top: Path, name: str = DEFAULT_BRANCH, create: bool = False) -> tuple[Path, str] | None:
    """Check out the memory branch as the worktree ``top/.memcli``.

    Args:
        top: the code repository's top folder.
        name: the branch.
        create: make an orphan branch when neither a local nor a remote-tracking one exists.

    Returns:
        ``(worktree folder, what was done)``, or None when there is no such branch and
        ``create`` is False.

    Raises:
        GitFailed: git refused (for instance the branch is checked out elsewhere).
        WorkspaceInvalid: ``top/.memcli`` exists and is not that worktree.
    """
    folder = top / FOLDER
    if (folder / "memcli.toml").is_file():
        return folder, "already checked out"
    if folder.exists() and any(folder.iterdir()):
        raise WorkspaceInvalid(f"{folder} exists and is not the memory branch's worktree",
                               hint="move it away, or keep memory in the code tree with `memcli init --in-tree`")
    _git(top, "worktree", "prune")  # a deleted .memcli/ (git clean -ffdx) leaves its registration behind
    if _has_ref(top, f"refs/heads/{name}"):
        _out(top, "worktree", "add", "--quiet", str(folder), name)
        done = f"checked out the memory branch {name} into {FOLDER}/"
    elif (remote := _remote_ref(top, name)) is not None:
        _out(top, "worktree", "add", "--quiet", "--track", "-b", name, str(folder), remote)
        done = f"checked out the memory branch {name} (from {remote.removeprefix('refs/remotes/')}) into {FOLDER}/"
    elif create:
        _orphan(top, name)
        _out(top, "worktree", "add", "--quiet", str(folder), name)
        done = f"created the memory branch {name}, checked out into {FOLDER}/"
    else:
        return None
    _exclude(top)
    from memcli.service.sync import ensure_merge_driver

    ensure_merge_driver(folder)  # .gitattributes is on the branch; the driver's git config is per clone
    return folder, done


def attach_from(cwd: Path | None) -> tuple[Path, str | None] | None:
    """In a fresh clone of a project with a memory branch: check it out (see :func:`attach`).
    In a linked worktree of the code, the main worktree's ``.memcli/`` (no note).

    Called only when no workspace was found from ``cwd``; returns None (never raises) when
    ``cwd`` (default: the current folder, which may have been deleted) is not in a
    repository with a :data:`DEFAULT_BRANCH` branch.
    """
    try:
        top = _toplevel(cwd or Path.cwd())
        if top is None or (top / FOLDER).exists():
            return None
        main = _main_worktree(top)
        if main is not None and (main / FOLDER / "memcli.toml").is_file():
            return main / FOLDER, None  # a linked worktree of the code: the project's memory is the main one's
        return attach(top)
    except (GitFailed, WorkspaceInvalid, OSError):
        return None


def _main_worktree(top: Path) -> Path | None:
    """The main worktree's folder when ``top`` is a linked worktree (``git worktree add``), else None."""
    proc = _git(top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if proc.returncode != 0:
        return None
    common = Path(proc.stdout.decode().strip())
    main = common.parent if common.name == ".git" else None
    return main if main is not None and main.resolve() != top.resolve() else None


def locate(explicit: str | None, cwd: Path | None = None) -> tuple[str | None, str | None]:
    """The workspace to open: ``explicit`` as given, else the one found from ``cwd``, else the
    memory branch of the repository around ``cwd``, checked out on the spot.

    Returns:
        ``(workspace or None to let the store find it, a note for stderr or None)``.

    Raises:
        WorkspaceNotFound: none of them.
    """
    from memcli.store.workspace import find_root

    try:
        return str(find_root(explicit, cwd)), None
    except WorkspaceNotFound:
        if explicit or os.environ.get("MEMCLI_WORKSPACE"):
            raise
        found = attach_from(cwd)
        if found is None:
            raise
        return str(found[0]), found[1]
