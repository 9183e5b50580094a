"""A git pre-commit hook that runs ``memcli check --staged`` for a store's own commits only
(issue 22 point 5): ``memcli check --install-hook`` and ``--uninstall-hook``.

Where the hook goes depends on where the store lives (docs/teams.md, "pre-commit"):

* **the memory branch** (``.memcli/``, a linked worktree of the code's repository): git keeps
  one ``hooks/`` folder for every worktree of a repository, so a hook installed there (as
  ``pre-commit install`` inside ``.memcli/`` does) runs on the code's commits too. memcli
  scopes it to the store's worktree instead: ``extensions.worktreeConfig`` on, then
  ``core.hooksPath`` in that worktree's own ``config.worktree`` names a ``hooks/`` folder in
  that worktree's private git folder (``.git/worktrees/NAME/hooks``). The code's commits keep
  the code's hooks, untouched;
* **a standalone store** (its own repository): its ``hooks/`` folder; an existing hook that
  is not memcli's is never overwritten;
* **a store that is a folder of the code's tree** (``init --in-tree``, ``--hidden``, ``FOLDER``):
  memory commits are code commits, so memcli installs nothing; the code's
  ``.pre-commit-config.yaml`` takes memcli's entry of ``.pre-commit-hooks.yaml``, which runs
  only when memory files are staged.

The hook runs this memcli by its absolute interpreter path (as the merge driver does).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from memcli.errors import UsageProblem
from memcli.service import Ctx

#: The line that marks a hook as memcli's (install replaces it, uninstall removes it).
MARK = "# memcli check --install-hook"
#: What the code's .pre-commit-config.yaml holds for an in-tree store (docs/teams.md).
IN_TREE_HINT = ("add memcli's entry to the code's .pre-commit-config.yaml instead (`- repo: "
                "https://github.com/OWNER/memcli`, `hooks: [{id: memcli-check}]`; docs/teams.md): it runs only "
                "when memory files are staged")


@dataclass
class HookResult:
    """Where the hook is (``path``), how it is scoped (``layout``: ``memory-branch`` or
    ``standalone``), and whether anything changed."""

    path: str
    layout: str
    changed: bool

    def to_dict(self) -> dict:
        return {"path": self.path, "layout": self.layout, "changed": self.changed}


def hook_text() -> str:
    """The hook script: ``memcli check --staged`` in the worktree being committed."""
    python = shlex.quote(str(Path(sys.executable).absolute()))
    return (f"#!/bin/sh\n{MARK}: checks this store's staged memory files before each commit\n"
            f'exec {python} -m memcli -w "$(git rev-parse --show-toplevel)" check --staged\n')


def _layout(ctx: Ctx) -> tuple[str, Path]:
    """``(layout, hooks folder)`` of the store, or UsageProblem for a folder of the code's tree."""
    repo = ctx.git()
    top, git_dir, common = repo.run("rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir",
                                    "--git-common-dir").split("\n")[:3]
    if Path(top).resolve() != ctx.ws.root.resolve():
        raise UsageProblem(f"this store is a folder of the code's tree ({ctx.ws.root}): its commits are the code's, "
                           "so memcli installs no git hook of its own", hint=IN_TREE_HINT)
    return ("memory-branch" if Path(git_dir).resolve() != Path(common).resolve() else "standalone"), \
        Path(git_dir) / "hooks"


def install(ctx: Ctx) -> HookResult:
    """Install the pre-commit hook for this store's commits only (module docstring).

    Raises:
        UsageProblem: the store is a folder of the code's tree, or a pre-commit hook that is
            not memcli's is already there (exit 2; nothing changed).
        GitFailed: git config cannot be written.
    """
    from memcli.store.files import atomic_write

    layout, hooks = _layout(ctx)
    repo = ctx.git()
    hook = hooks / "pre-commit"
    current = hook.read_text(encoding="utf-8", errors="replace") if hook.exists() else None
    if current is not None and MARK not in current:
        raise UsageProblem(f"{hook} already holds a pre-commit hook that is not memcli's; nothing changed",
                           hint="run `memcli check --staged` from it, or add memcli's entry to your pre-commit "
                                "configuration (docs/teams.md)")
    changed = current != hook_text()
    if changed:
        hooks.mkdir(parents=True, exist_ok=True)
        atomic_write(hook, hook_text().encode("utf-8"))
        hook.chmod(0o755)
    if layout == "memory-branch":
        if repo.raw("config", "--bool", "--get", "extensions.worktreeConfig")[1].decode().strip() != "true":
            repo.run("config", "extensions.worktreeConfig", "true")
            changed = True
        if repo.raw("config", "--worktree", "--get", "core.hooksPath")[1].decode().strip() != str(hooks):
            repo.run("config", "--worktree", "core.hooksPath", str(hooks))
            changed = True
    return HookResult(str(hook), layout, changed)


def uninstall(ctx: Ctx) -> HookResult:
    """Remove memcli's pre-commit hook of this store (and the worktree's ``core.hooksPath`` that
    named its folder); a hook that is not memcli's is left alone.

    Raises:
        UsageProblem: the store is a folder of the code's tree (exit 2).
    """
    layout, hooks = _layout(ctx)
    repo = ctx.git()
    hook = hooks / "pre-commit"
    changed = False
    if hook.exists() and MARK in hook.read_text(encoding="utf-8", errors="replace"):
        hook.unlink()
        changed = True
    if layout == "memory-branch" and \
            repo.raw("config", "--worktree", "--get", "core.hooksPath")[1].decode().strip() == str(hooks):
        repo.run("config", "--worktree", "--unset", "core.hooksPath")
        changed = True
    return HookResult(str(hook), layout, changed)


def stores_of(files: list[str]) -> tuple[list[Path], list[str]]:
    """The workspaces holding ``files`` (paths relative to the current folder, as pre-commit
    passes them), each once, and the files in no workspace: a file's workspace is the nearest
    folder above it with a ``memcli.toml`` whose ``memories/`` folder holds the file."""
    from memcli.config import CONFIG_NAME

    roots: dict[Path, None] = {}
    outside = []
    for name in files:
        path = Path.cwd() / name
        root = next((folder for folder in path.parents if (folder / CONFIG_NAME).is_file()
                     and (folder / "memories") in path.parents), None)
        if root is None:
            outside.append(name)
        else:
            roots[root] = None
    return list(roots), outside
