"""History look-ups tell "no such thing" from a git failure (issue 20): a damaged repository never reads as empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from memcli.errors import GitFailed
from memcli.git.history import History
from memcli.git.run import GitTimedOut, run


def _repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    return folder


def _commit(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text, encoding="utf-8")
    git(folder, "add", name)
    git(folder, "commit", "-q", "-m", f"add {name}")
    return git(folder, "rev-parse", "HEAD").strip()


def _delete_object(folder: Path, sha: str) -> None:
    (folder / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_an_unborn_head_and_a_path_never_committed_are_none(tmp_path: Path):
    folder = _repo(tmp_path)
    repo = History(folder)
    assert repo.unborn()
    assert repo.last_change(folder / "a.md") is None
    assert repo.blobs([("HEAD", "a.md")]) == [None]
    assert repo.commits(["a.md"]) == []
    first = _commit(folder, "a.md", "one\n")
    assert not repo.unborn()
    assert repo.parent(first) is None  # a root commit
    assert repo.last_change(folder / "never.md") is None
    assert repo.blob(first, folder / "never.md") is None
    assert repo.blob(first, folder / "a.md") == b"one\n"
    second = _commit(folder, "b.md", "two\n")
    assert repo.parent(second) == first
    assert repo.last_change(folder / "a.md") == first


def test_a_missing_commit_object_raises_instead_of_reading_as_empty(tmp_path: Path):
    folder = _repo(tmp_path)
    first = _commit(folder, "a.md", "one\n")
    second = _commit(folder, "a.md", "two\n")
    third = _commit(folder, "b.md", "three\n")
    _delete_object(folder, second)
    repo = History(folder)
    assert not repo.unborn()
    with pytest.raises(GitFailed, match="git fsck"):
        repo.parent(second)
    with pytest.raises(GitFailed):
        repo.last_change(folder / "a.md")
    with pytest.raises(GitFailed, match="missing or damaged"):
        repo.blob(second, folder / "a.md")
    with pytest.raises(GitFailed, match="missing or damaged"):
        repo.blobs([(first, "a.md"), (second, "a.md")])
    with pytest.raises(GitFailed):
        repo.commits(["a.md"])
    assert repo.parent(third) == second  # the parent's hash is in the commit that is there
    assert repo.blobs([(first, "a.md"), (third, "gone.md")]) == [b"one\n", None]


def test_the_runner_maps_failures_to_exit_10(tmp_path: Path):
    with pytest.raises(GitFailed) as caught:
        run(("status",), tmp_path / "no-such-folder")
    assert caught.value.exit_code == 10 and "no-such-folder" in caught.value.message
    with pytest.raises(GitTimedOut) as timed:
        run(("status",), tmp_path, deadline=0.0)
    assert timed.value.exit_code == 10 and isinstance(timed.value, TimeoutError)
