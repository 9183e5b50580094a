"""``git.run.start``: a sealed git process started now and collected later (the context block's
files in play run git beside the index search), cancelled unasked, or refused as ``run`` refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memcli.errors import GitFailed
from memcli.git import run as runner


def test_a_started_git_gives_what_run_gives(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    started = runner.start(("status", "--porcelain=v1", "-z"), tmp_path, timeout=30)
    done = started.result()
    assert done.returncode == 0
    assert done.stdout == runner.run(("status", "--porcelain=v1", "-z"), tmp_path, timeout=30).stdout
    assert b"a.txt" in done.stdout


def test_a_started_git_cancelled_is_reaped(tmp_path: Path) -> None:
    started = runner.start(("--version",), tmp_path, timeout=30)
    started.cancel()
    assert started.proc.returncode is not None  # waited for: no zombie left behind
    started.cancel()  # a second time: nothing to do, no error


def test_git_in_a_missing_folder_is_refused_as_run_refuses(tmp_path: Path) -> None:
    with pytest.raises(GitFailed, match="cannot run git in"):
        runner.start(("status",), tmp_path / "gone", timeout=30)
