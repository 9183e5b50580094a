"""memcli's commits build only the trees on the paths they change (``memcli.git.commit``, issue 21).

Whatever the paths, the commit must hold exactly what ``git add`` of those paths and
``git commit --only`` would: the same tree as git's own ``write-tree`` of an index with the
same changes, the shared index in step (``git status`` clean), the person's staged work kept
and not committed. Checked against git itself on real repositories, for paths Hypothesis
makes up (nested folders, names that sort around ``/``, spaces, non-ASCII, deletions that
empty a folder), with and without the split index, in a store at the repository's top and in
a folder of it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import git
from memcli.git.repo import GitRepo

NAMES = st.sampled_from(["a", "a.b", "a-b", "a0", "b", "é", "z z", "memories", "2025-01", "x.md", "a b.md"])
PATHS = st.lists(NAMES, min_size=1, max_size=4).map("/".join)


def _write(root: Path, rel: str, text: str) -> bool:
    """Write ``rel`` under ``root``; False when a file or folder of the path is in the way."""
    path = root / rel
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            return False
        path.write_text(text, encoding="utf-8")
    except (NotADirectoryError, FileExistsError):
        return False
    return True


def _expected_tree(top: Path, rels: list[str], sub: str) -> str:
    """git's own answer: HEAD's tree with ``rels`` changed (``read-tree``, ``update-index``, ``write-tree``)."""
    index = top / ".git" / "expected-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    head = subprocess.run(["git", "-C", str(top), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    subprocess.run(["git", "-C", str(top), "read-tree", *([head] if head else ["--empty"])], env=env, check=True)
    listed = "".join(f"{sub}{rel}\0" for rel in rels)
    subprocess.run(["git", "-C", str(top), "update-index", "-z", "--add", "--remove", "--stdin"], env=env,
                   input=listed.encode(), check=True)
    tree = subprocess.run(["git", "-C", str(top), "write-tree"], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()
    index.unlink()
    return tree


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(PATHS, min_size=1, max_size=6), second=st.lists(PATHS, min_size=1, max_size=6),
       delete=st.lists(st.integers(0, 5), max_size=3), split=st.booleans(), in_folder=st.booleans())
@pytest.mark.slow
def test_a_commit_holds_what_git_would_commit(tmp_path_factory, first, second, delete, split, in_folder):
    top = tmp_path_factory.mktemp("repo")
    git(top, "init", "-q")
    (top / "staged.txt").write_text("the person's staged work\n", encoding="utf-8")
    sub = "store/" if in_folder else ""
    root = top / sub
    root.mkdir(exist_ok=True)
    repo = GitRepo(root)
    rounds = [[p for p in first if _write(root, p, f"one {p}\n")]]
    written = sorted({p for p in rounds[0]})
    second_round = [p for p in second if _write(root, p, f"two {p}\n")]
    removed = [written[i] for i in delete if i < len(written)]
    for rel in removed:
        (root / rel).unlink(missing_ok=True)
    rounds.append(sorted(set(second_round) | set(removed)))
    for number, rels in enumerate(rounds):
        rels = sorted(set(rels))
        if number == 0:
            expected = _expected_tree(top, rels, sub)
        else:
            git(top, "add", "staged.txt")  # staged by the person: stays staged, not committed
            expected = _expected_tree(top, rels, sub)
        commit = repo.commit([root / rel for rel in rels], f"round {number}", actor="test", split_index=split)
        assert git(top, "rev-parse", f"{commit}^{{tree}}").strip() == expected
        if rels:
            assert git(top, "status", "--porcelain", "--untracked-files=no", "--", *rels) == ""
    assert git(top, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    assert git(top, "fsck", "--no-dangling").strip() == ""
    if split:
        assert list((top / ".git").glob("sharedindex.*"))


def test_a_commit_of_the_files_as_they_are_is_no_commit(tmp_path: Path):
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    (top / "a.md").write_text("a\n", encoding="utf-8")
    repo = GitRepo(top)
    first = repo.commit([top / "a.md"], "first", actor="test", split_index=True)
    assert repo.commit([top / "a.md"], "again", actor="test", split_index=True) == first
    assert git(top, "rev-list", "--count", "HEAD").strip() == "1"


def test_deleting_the_last_file_commits_an_empty_tree(tmp_path: Path):
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    (top / "only" / "deep").mkdir(parents=True)
    (top / "only" / "deep" / "a.md").write_text("a\n", encoding="utf-8")
    repo = GitRepo(top)
    repo.commit([top / "only" / "deep" / "a.md"], "first", actor="test")
    (top / "only" / "deep" / "a.md").unlink()
    second = repo.commit([top / "only" / "deep" / "a.md"], "second", actor="test")
    assert git(top, "ls-tree", "-r", second).strip() == ""
    assert git(top, "status", "--porcelain").strip() == ""


def test_an_executable_file_keeps_its_mode(tmp_path: Path):
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    script = top / "run.sh"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    repo = GitRepo(top)
    commit = repo.commit([script], "first", actor="test", split_index=True)
    assert git(top, "ls-tree", commit, "run.sh").split()[0] == "100755"
    assert git(top, "status", "--porcelain").strip() == ""


def test_no_paths_in_a_repository_without_commits(tmp_path: Path):
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    commit = GitRepo(top).commit([], "nothing", actor="test")
    assert git(top, "ls-tree", "-r", commit).strip() == ""
    assert git(top, "status", "--porcelain").strip() == ""


def _repo_with_a_commit(top: Path) -> GitRepo:
    top.mkdir()
    git(top, "init", "-q", "--initial-branch", "main")
    (top / "code.txt").write_text("code\n", encoding="utf-8")
    git(top, "add", "code.txt")
    git(top, "commit", "-q", "-m", "code")
    return GitRepo(top)


def test_the_branch_is_read_from_the_head_file_as_git_names_it(tmp_path: Path) -> None:
    """``check_state`` takes the branch from the worktree's ``HEAD`` file, no process; a detached
    HEAD (the file holds a hash) is asked of git and refused."""
    from memcli.errors import UnsafeGitState
    from memcli.git.commit import _head_file_branch, check_state

    repo = _repo_with_a_commit(tmp_path / "top")
    git(repo.workspace, "switch", "-q", "-c", "feature/x-1")
    assert _head_file_branch(repo) == check_state(repo) == "refs/heads/feature/x-1"
    git(repo.workspace, "switch", "-q", "--detach")
    assert _head_file_branch(repo) is None
    with pytest.raises(UnsafeGitState):
        check_state(repo)


@pytest.mark.parametrize("change", [("branch", "-m", "main", "trunk"), ("switch", "-q", "-c", "other")])
def test_a_branch_renamed_or_switched_after_the_state_check_refuses_the_commit(tmp_path: Path, change) -> None:
    """The caller checked the state (``check_state``) before writing its files; if the branch is
    renamed or another checked out before the commit, nothing is committed: no branch of the old
    name is made anew with a root commit, ``HEAD`` and the index stay as they were; the next
    write, checking again, commits."""
    from memcli.errors import GitFailed
    from memcli.git.commit import check_state, commit

    repo = _repo_with_a_commit(tmp_path / "top")
    top = repo.workspace

    def out(*args: str) -> str:
        return subprocess.run(["git", "-C", str(top), *args], capture_output=True, text=True).stdout

    checked = check_state(repo)
    main = out("rev-parse", "main")
    (top / "memory.md").write_text("a memory\n", encoding="utf-8")
    git(top, *change)
    head = out("rev-parse", "HEAD")
    with pytest.raises(GitFailed, match="branch changed"):
        commit(repo, ["memory.md"], "memcli: remember x\n", env={}, fallback_env={}, timeout=5, branch=checked)
    assert out("rev-parse", "HEAD") == head
    assert out("status", "--porcelain") == "?? memory.md\n"
    assert out("for-each-ref", "--format=%(refname)") == ("refs/heads/trunk\n" if change[0] == "branch"
                                                          else "refs/heads/main\nrefs/heads/other\n")
    assert out("rev-parse", "-q", "--verify", "main") == ("" if change[0] == "branch" else main)
    made = commit(repo, ["memory.md"], "memcli: remember x\n", env={}, fallback_env={}, timeout=5,
                  branch=check_state(repo))
    assert out("rev-parse", "HEAD").strip() == made and out("status", "--porcelain") == ""


@pytest.mark.parametrize("split", [False, True])
def test_a_same_size_edit_in_the_index_s_second_stays_seen_after_a_commit(tmp_path: Path, split: bool) -> None:
    """git's racy-git rule: an entry whose mtime is not older than the index file's own may hide
    a same-size edit, so git compares its content (``read-cache.c``, ``is_racy_timestamp``,
    Documentation/technical/racy-git.txt). The commit's next index starts as a copy of the
    shared one: a copy carrying the time of the copy instead made such an entry look settled,
    and a person's same-second edit of a file memcli does not commit (memcli.toml) vanished
    from ``git status`` (``git checkout REV -- FILE`` then did not restore it)."""
    repo = _repo_with_a_commit(tmp_path / "top")
    top = repo.workspace
    config, index = top / "code.txt", top / ".git" / "index"
    second = int(time.time()) - 100  # the edit and the index's last write, in one second
    os.utime(config, (second, second))
    git(top, "update-index", "--refresh")  # the entry now records that second
    os.utime(index, (second, second))  # and the index was written in it: the entry is racy
    config.write_text("edit\n", encoding="utf-8")  # same size as "code\n", same second
    os.utime(config, (second, second))
    assert git(top, "diff-files", "--name-only") == "code.txt\n"  # git sees it (and writes no index)
    (top / "memory.md").write_text("a memory\n", encoding="utf-8")
    repo.commit([top / "memory.md"], "memcli: remember", actor="test", split_index=split)
    assert git(top, "status", "--porcelain", "--untracked-files=no") == " M code.txt\n"
    git(top, "checkout", "HEAD", "--", "code.txt")
    assert config.read_text(encoding="utf-8") == "code\n"
