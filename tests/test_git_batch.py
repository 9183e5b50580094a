"""memcli.git.run.batch_objects / batch_blobs: one reader of ``git cat-file --batch``'s output
for every caller (history, commit, check, signing), against the real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memcli.git.run import batch_blobs, batch_objects


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, check=True).stdout


def test_blobs_trees_missing_names_and_a_cut_answer(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "dir").mkdir()
    (repo / "dir" / "a b.md").write_bytes(b"first\nline\n")
    (repo / "empty.md").write_bytes(b"")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "x")
    queries = ["HEAD:dir/a b.md", "HEAD:dir", "HEAD:nothing here.md", "HEAD:empty.md", "HEAD:dir/a b.md"]
    out = _git(repo, "cat-file", "--batch", input="".join(q + "\n" for q in queries).encode())
    objects = batch_objects(out)
    assert [o and o[1] for o in objects] == ["blob", "tree", None, "blob", "blob"]
    assert objects[0] is not None and objects[0][0] == _git(repo, "rev-parse", "HEAD:dir/a b.md").decode().strip()
    assert batch_blobs(out, len(queries)) == [b"first\nline\n", None, None, b"", b"first\nline\n"]
    cut = out[: out.index(b"first") + 3]  # the first answer's content cut short
    assert batch_objects(cut) == []
    assert batch_blobs(cut, 2) == [None, None]
    assert batch_blobs(b"", 1) == [None]
