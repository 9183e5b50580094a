"""The actor git knows is cached (issue 21, scope 3): a read starts no git process when nothing changed.

``PATH`` starts with a folder whose ``git`` is a real executable: a shell script that appends
its arguments to a log file and then runs the real git. The log shows every git process
memcli started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git

REAL_GIT = shutil.which("git")


@pytest.fixture
def logged_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """``(env, log)``: an environment whose ``git`` logs each call to ``log``, and no ``$MEMCLI_ACTOR``."""
    folder = tmp_path / "logged-bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    script = folder / "git"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{REAL_GIT}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "MEMCLI_ACTOR": ""}, log


def _actor(run, env: dict[str, str], text: str) -> str:
    result = run("--json", "remember", text, env=env)
    assert result.code == 0, result
    return result.json()["data"]["memory"]["provenance"]["actor"]


def test_a_read_after_the_actor_is_cached_starts_no_git(ws: Path, run, logged_git):
    env, log = logged_git
    assert run("recall", "anything", env=env).code == 0  # asks git once, caches the answer
    assert "config --list" in log.read_text(encoding="utf-8")
    log.unlink()
    for args in (("recall", "anything"), ("list",), ("context",)):
        result = run(*args, env=env)
        assert result.code == 0, (args, result)
    assert not log.exists(), log.read_text(encoding="utf-8")


def test_a_changed_email_is_seen_by_the_next_command(ws: Path, run, logged_git):
    env, log = logged_git
    assert _actor(run, env, "First fact about the build.") == "test@example.invalid"
    git(ws, "config", "user.email", "repo@example.invalid")  # the repository's own config
    assert _actor(run, env, "Second fact about the build.") == "repo@example.invalid"
    subprocess.run(["git", "config", "--global", "user.email", "global@example.invalid"], check=True)
    git(ws, "config", "--unset", "user.email")
    assert _actor(run, env, "Third fact about the build.") == "global@example.invalid"


def test_an_included_file_and_the_environment_are_part_of_the_key(ws: Path, run, logged_git, tmp_path: Path):
    env, log = logged_git
    home = Path(os.environ["HOME"])
    included = tmp_path / "identity.gitconfig"
    with (home / ".gitconfig").open("a", encoding="utf-8") as handle:
        handle.write(f"[include]\n\tpath = {included}\n")
    assert _actor(run, env, "First fact about includes.") == "test@example.invalid"
    included.write_text("[user]\n\temail = included@example.invalid\n", encoding="utf-8")  # created after caching
    assert _actor(run, env, "Second fact about includes.") == "included@example.invalid"
    other = tmp_path / "other.gitconfig"
    other.write_text("[user]\n\temail = env@example.invalid\n", encoding="utf-8")
    assert _actor(run, {**env, "GIT_CONFIG_GLOBAL": str(other)}, "Third fact about includes.") == "env@example.invalid"


def test_memcli_actor_still_wins_and_starts_no_git(ws: Path, run, logged_git):
    env, log = logged_git
    assert _actor(run, {**env, "MEMCLI_ACTOR": "carol"}, "A fact by carol.") == "carol"
    log.unlink()  # the first commit asked for its settings (one `git config --list`, cached with the actor)
    assert _actor(run, {**env, "MEMCLI_ACTOR": "carol"}, "Another fact by carol.") == "carol"
    assert " config " not in log.read_text(encoding="utf-8")


def test_the_commit_settings_are_cached_and_a_changed_one_is_seen(ws: Path, run, logged_git):
    """A commit reads ``core.fileMode`` and ``commit.gpgsign`` from the same cache as the actor:
    no ``git config`` while git's config files are unchanged, and a changed setting is seen by
    the next write (``memcli.git.identity``)."""
    env, log = logged_git
    made = run("--json", "remember", "Mode fact one.", env=env)
    assert made.code == 0, made
    path = ws / made.json()["data"]["memory"]["path"]
    log.unlink()
    assert run("remember", "Mode fact two.", env=env).code == 0
    assert " config " not in log.read_text(encoding="utf-8")  # settings and actor from the cache
    git(ws, "config", "core.fileMode", "false")
    path.chmod(0o755)  # an executable bit git must not record with core.fileMode false
    assert run("forget", made.json()["data"]["id"], env=env).code == 0
    mode = subprocess.run(["git", "ls-tree", "HEAD", "--", path.relative_to(ws).as_posix()], cwd=ws,
                          capture_output=True, text=True, check=True).stdout.split()[0]
    assert mode == "100644"
