"""Creating a person's own store (SPEC.md section 1, Stores; ``store.personal``)."""

from __future__ import annotations

from pathlib import Path

from memcli.config import CONFIG_NAME

#: The branch of every personal store, whatever git's ``init.defaultBranch`` on the machine
#: (two machines of one person sync one branch; docs/teams.md, "Two machines").
PERSONAL_BRANCH = "main"


def create_store(root: Path) -> bool:
    """Make the personal store at ``root`` unless it exists: a workspace of kind ``personal``
    in a git repository of its own, with its first commit.

    Returns:
        True when it was created now.

    Raises:
        WorkspaceInvalid: the folder cannot be created or written.
        GitFailed, GitLocked: the first commit failed.
    """
    from memcli.git.log import message as commit_message
    from memcli.git.repo import GitRepo
    from memcli.store.workspace import create_files

    if (root / CONFIG_NAME).is_file():
        return False
    from memcli.errors import WorkspaceInvalid

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WorkspaceInvalid(f"cannot create your personal store {root}: {err.strerror}",
                               hint="make the folder writable, or point $MEMCLI_HOME somewhere you can write") from None
    GitRepo.init(root, own=True, branch=PERSONAL_BRANCH)  # one name on every machine of the person
    # git's own rule for the repository, whatever umask a later git run has: files 0600, folders 0700
    GitRepo(root).raw("config", "core.sharedRepository", "0600")
    created_root, _ = create_files(root, kind="personal")
    message = commit_message("init", "personal store", {"Op": "init"})
    GitRepo(created_root).commit([created_root / CONFIG_NAME], message, actor="memcli")
    return True
