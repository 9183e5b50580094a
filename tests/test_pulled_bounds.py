"""Bounded work on pulled input (issue 22 point 9): the reader's size, alias, depth and value
limits, the merge driver's conflict on a file over them, and no git child outliving a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_memcli
from memcli import fileformat
from memcli.errors import FileOverLimit, InvalidMemoryFile

HEAD = "---\nid: 01m8aaaaaaaaaaaaaaaaaaaab1\nscope: project\n"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs: ``width ** levels`` strings from a few hundred bytes."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return HEAD + "\n".join(lines) + "\n---\nbody\n"


@pytest.mark.parametrize("round_trip", [False, True])
def test_an_alias_bomb_is_refused_before_it_expands(round_trip: bool) -> None:
    with pytest.raises(FileOverLimit, match="YAML aliases"):
        fileformat.parse(alias_bomb().encode(), "bomb.md", round_trip)


def test_a_few_aliases_still_read() -> None:
    doc = fileformat.parse((HEAD + "a: &x [p, q]\nb: *x\n---\nbody\n").encode(), "ok.md", False)
    assert doc.meta["b"] == ["p", "q"]


@pytest.mark.parametrize("text", [
    "k:\n" + "- " * 5000 + "x\n",                       # compact block sequences
    "k:\n" + "".join(" " * i + "a:\n" for i in range(1, 400)) + "  " * 400 + "b: 1\n",  # indentation
    "k: " + "[" * 3000 + "]" * 3000 + "\n",              # flow (the older check)
])
@pytest.mark.parametrize("round_trip", [False, True])
def test_deep_nesting_is_refused_not_a_recursion_error(text: str, round_trip: bool) -> None:
    with pytest.raises(InvalidMemoryFile, match="nested more than"):
        fileformat.parse((HEAD + text + "---\nbody\n").encode(), "deep.md", round_trip)


def test_too_many_values_are_refused() -> None:
    text = "k:\n" + "".join(f"  - v{i}\n" for i in range(fileformat.MAX_VALUES + 5))
    with pytest.raises(FileOverLimit, match="values"):
        fileformat.parse((HEAD + text + "---\nbody\n").encode(), "many.md", False)


yaml_chars = st.text(alphabet="&*ab:-[]{}, \n'\"|>?!#", max_size=300)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_chars, st.integers(0, 40), st.integers(0, 40))
@pytest.mark.slow
def test_any_front_matter_parses_or_is_refused_in_bounded_time(junk: str, nest: int, aliases: int) -> None:
    """Whatever the bytes (random YAML punctuation, nesting, anchors and aliases), parse returns
    or raises InvalidMemoryFile: never another exception, never a runaway expansion."""
    text = HEAD + "a: &a [x, y]\n" + "".join(f"b{i}: *a\n" for i in range(aliases)) + "n: " + "[" * nest + \
        "]" * nest + "\n" + junk + "\n---\nbody\n"
    for round_trip in (False, True):
        try:
            fileformat.parse(text.encode(), "any.md", round_trip)
        except InvalidMemoryFile:
            pass


# --- the merge driver -----------------------------------------------------------------------

def _driver(tmp_path: Path, base: str, ours: str, theirs: str) -> subprocess.CompletedProcess:
    files = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        files.append(str(tmp_path / name))
    return subprocess.run([sys.executable, "-m", "memcli", "merge-file", *files, "memories/project/x.md"],
                          capture_output=True, text=True, timeout=60)


def test_the_merge_driver_calls_an_alias_bomb_a_conflict(tmp_path: Path) -> None:
    plain = HEAD + "status: active\n---\nbody\n"
    out = _driver(tmp_path, plain, plain.replace("body", "ours"), alias_bomb())
    assert out.returncode == 16, out
    assert "conflict in memories/project/x.md" in out.stderr and "YAML aliases" in out.stderr


def test_the_merge_driver_calls_an_oversized_version_a_conflict(tmp_path: Path) -> None:
    plain = HEAD + "status: active\n---\nbody\n"
    out = _driver(tmp_path, plain, plain, plain.replace("body", "x" * 300_000))
    assert out.returncode == 16, out
    assert "over the 256 KiB" in out.stderr


# --- no child outlives its command -------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for init to reap it has ended too
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _wait_gone(pid: int) -> bool:
    for _ in range(100):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_git_deadline_kills_the_children_git_started(tmp_path: Path) -> None:
    from memcli.git.run import GitTimedOut, run

    pidfile = tmp_path / "child.pid"
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    alias = f"alias.hang=!sh -c 'echo $$ > {pidfile}; exec sleep 60'"
    with pytest.raises(GitTimedOut):
        run(("-c", alias, "hang"), tmp_path / "r", deadline=time.monotonic() + 1.0)
    pid = int(pidfile.read_text().strip())
    assert _wait_gone(pid), f"git's child {pid} outlived the deadline"


def test_sync_deadline_stops_cleanly_and_kills_ssh(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert run_memcli("init", str(ws)).code == 0
    subprocess.run(["git", "-C", str(ws), "remote", "add", "origin", "ssh://example.invalid/team.git"], check=True)
    pidfile = tmp_path / "ssh.pid"
    fake_ssh = tmp_path / "slow-ssh"
    fake_ssh.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n", encoding="utf-8")
    fake_ssh.chmod(0o755)
    out = run_memcli("-w", str(ws), "sync", "--deadline", "1.5", env={"GIT_SSH_COMMAND": str(fake_ssh)})
    assert out.code == 16, out
    assert "deadline" in out.err and "Traceback" not in out.err
    assert _wait_gone(int(pidfile.read_text().strip())), "the ssh child outlived sync --deadline"
    assert not list((ws / ".git").glob("*.lock"))


@pytest.mark.slow
def test_an_alias_bomb_the_driver_must_merge_is_a_named_conflict_at_sync(tmp_path: Path) -> None:
    def git(*args: str, cwd: Path) -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()

    bare = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    seed = tmp_path / "seed"
    assert run_memcli("init", str(seed)).code == 0
    git("remote", "add", "origin", str(bare), cwd=seed)
    assert run_memcli("-w", str(seed), "sync").code == 0
    clones = []
    for name in ("alice", "mallory"):
        git("clone", "-q", str(bare), str(tmp_path / name), cwd=tmp_path)
        assert run_memcli("init", str(tmp_path / name)).code == 0
        clones.append(tmp_path / name)
    alice, mallory = clones
    made = run_memcli("-w", str(alice), "--json", "remember", "Deploys go out on Tuesdays")
    memory_id = made.json()["data"]["id"]
    assert run_memcli("-w", str(alice), "sync").code == 0
    assert run_memcli("-w", str(mallory), "sync").code == 0
    target = next((mallory / "memories").rglob(f"{memory_id}*.md"))
    text = target.read_text(encoding="utf-8")
    bomb = alias_bomb().split("\n", 2)[2].split("\n---\n")[0]  # the anchors and aliases only
    target.write_text(text.replace("\n---\n", "\n" + bomb + "\n---\n", 1), encoding="utf-8")
    git("commit", "-qam", "bomb", cwd=mallory)
    git("push", "-q", "origin", "HEAD:main", cwd=mallory)
    mine = next((alice / "memories").rglob(f"{memory_id}*.md"))
    mine.write_text(mine.read_text(encoding="utf-8").replace("on Tuesdays", "on Tuesdays at ten"), encoding="utf-8")
    git("commit", "-qam", "a hand edit", cwd=alice)
    out = run_memcli("-w", str(alice), "sync", "--deadline", "60", timeout=120)
    assert out.code == 16, out
    assert "YAML aliases" in out.err and "nothing changed" in out.err, out
    assert not (alice / ".git" / "MERGE_HEAD").exists()
