"""CASES.md table G: paths, git and concurrency (G1 unsafe ids and scopes, G2 parallel
writers, G3 git's index.lock). Real git repositories, the real CLI in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MEMCLI, git

#: CASES.md G1. A NUL byte cannot travel in argv (the OS ends the string there), so the
#: NUL case is covered by stdin and by hand-written files below.
BAD = ["../escape", "/etc/x", "..\\x", "a/../../b", "%2e%2e%2fx", ".git/config", "con", ""]
ETC_X = Path("/etc/x").exists()
IDENT = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid")


def snapshot(root: Path) -> dict[str, str | None]:
    """Every path under ``root``: file content for files outside ``.git``, presence for the rest.

    The workspace's ``.cache`` (derived data: index, locks; git-ignored) and the person's
    ``~/.cache`` (memcli keeps compiled regular expressions there for every process) are left out.
    """
    out: dict[str, str | None] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if "/ws/.cache/" in f"/{rel}/" or f"/{rel}/".startswith("/home/.cache/"):
                continue
            inside_git = "/.git/" in f"/{rel}/"
            if path.is_file() and not inside_git:
                out[rel] = path.read_bytes().hex()
            else:
                out[rel] = None
    return out


def commits(ws: Path) -> int:
    return int(git(ws, "rev-list", "--count", "HEAD").strip())


def memory_files(ws: Path) -> list[Path]:
    return sorted((ws / "memories").rglob("*.md"))


def set_config(ws: Path, old: str, new: str) -> None:
    """Edit memcli.toml and commit it, so the work tree is clean again."""
    toml = ws / "memcli.toml"
    text = toml.read_text(encoding="utf-8")
    assert old in text
    toml.write_text(text.replace(old, new), encoding="utf-8")
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", "config", "--", "memcli.toml"],
                   check=True, capture_output=True)


@pytest.fixture
def seeded(ws, run):
    """A workspace with one good memory (so ids resolve and the lock file exists)."""
    result = run("--json", "remember", "The staging database is called orca.")
    assert result.code == 0, result
    return result.json()["data"]["id"]


def assert_refused(result, exits: tuple[int, ...]) -> None:
    assert result.code in exits, result
    envelope = result.json()
    assert envelope["ok"] is False
    assert envelope["error"]["exit"] == result.code
    assert envelope["error"]["code"] != "internal"


def assert_nothing_written(tmp_path: Path, ws: Path, before: dict, head_count: int) -> None:
    assert snapshot(tmp_path) == before
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    assert commits(ws) == head_count
    assert Path("/etc/x").exists() == ETC_X


# --- G1 ------------------------------------------------------------------------------


def test_g1_bad_scope_refused_on_remember_and_supersede(ws, run, seeded, tmp_path):
    before, head = snapshot(tmp_path), commits(ws)
    for bad in BAD:
        for scope in (bad, f"agent:{bad}"):
            result = run("--json", "remember", f"scope probe {bad!r}", "--scope", scope)
            assert_refused(result, (5,))
            assert result.json()["error"]["code"] == "validation_failed", result
        assert_refused(run("--json", "supersede", seeded, f"supersede probe {bad!r}", "--scope", bad), (5,))
    assert_nothing_written(tmp_path, ws, before, head)


@pytest.mark.parametrize("command", [
    ("show",), ("approve",), ("forget",), ("supersede", "{id}", "replacement text for a bad id"),
])
def test_g1_bad_id_argument_refused(ws, run, seeded, tmp_path, command):
    """An unsafe or empty id is never used as a path: a validation error (5); so is one too short to be a
    prefix (it was "unknown", 4; the exit table's 5 covers an id memcli does not accept)."""
    before, head = snapshot(tmp_path), commits(ws)
    for bad in BAD:
        args = [a.replace("{id}", bad) for a in command] if "{id}" in command else [command[0], bad, *command[1:]]
        result = run("--json", *args)
        assert_refused(result, (5,))
    assert_nothing_written(tmp_path, ws, before, head)
    assert run("--json", "show", seeded).json()["data"]["status"] == "active"


def test_g1_unsafe_id_in_a_hand_written_file_is_reported_and_skipped(ws, run, seeded, tmp_path):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "escape.md").write_text("---\nid: ../../x\n---\nI try to escape.\n", encoding="utf-8")
    (folder / "nulid.md").write_text('---\nid: "ab\\0cd"\n---\nNUL in my id.\n', encoding="utf-8")
    (folder / "nulscope.md").write_text('---\nscope: "project\\0"\n---\nNUL in my scope.\n', encoding="utf-8")
    (folder / "dotscope.md").write_text("---\nscope: user:../bob\n---\nA dotted scope.\n", encoding="utf-8")
    git(ws, "add", "memories")
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", "hand"], check=True)
    before, head = snapshot(tmp_path), commits(ws)

    listed = run("list")
    assert listed.code == 0, listed
    assert seeded in listed.out
    for name in ("escape.md", "nulid.md", "nulscope.md", "dotscope.md"):
        assert listed.err.count(f"memories/project/{name}") == 1, listed.err
    assert "I try to escape" not in listed.out and "../../x" not in listed.out
    as_json = run("--json", "list")
    assert [m["id"] for m in as_json.json()["data"]["memories"]] == [seeded]
    assert any("escape.md" in w for w in as_json.json()["warnings"])

    for args in (("show", "../../x"), ("forget", "../../x"), ("approve", "../../x")):
        assert_refused(run("--json", *args), (4, 5))
    assert_refused(run("--json", "show", "escape"), (11,))  # the file is named, with why it cannot be read
    context = run("context")
    assert context.code == 0 and "escape" not in context.out and seeded in context.out
    assert_nothing_written(tmp_path, ws, before, head)
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.md").exists()


def test_g1_nul_byte_in_text_from_stdin_refused(ws, run, seeded, tmp_path):
    before, head = snapshot(tmp_path), commits(ws)
    result = run("--json", "remember", "-", input="half a memory\x00and the rest")
    assert_refused(result, (5,))
    assert "NUL" in result.json()["error"]["message"]
    assert_nothing_written(tmp_path, ws, before, head)


# --- G2 ------------------------------------------------------------------------------


@pytest.mark.slow
def test_g2_eight_writers_at_once(ws):
    env = dict(os.environ)
    procs = [subprocess.Popen([*MEMCLI, "--json", "remember", f"parallel writer {i} owns shard {i * 7919}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, (out, err)
    ids = {json.loads(out)["data"]["id"] for out, _ in outs}
    assert len(ids) == 8
    assert len(memory_files(ws)) == 8
    assert commits(ws) == 1 + 8
    for rev in range(8):  # each commit holds exactly one memory file
        names = git(ws, "show", "--name-only", "--format=", f"HEAD~{rev}").split()
        assert len(names) == 1 and names[0].startswith("memories/project/"), names
    fsck = subprocess.run(["git", "-C", str(ws), "fsck", "--strict", "--no-dangling"],
                          capture_output=True, text=True)
    assert fsck.returncode == 0, fsck
    assert not fsck.stdout.strip() and "error" not in fsck.stderr.lower(), fsck
    assert git(ws, "status", "--porcelain") == ""
    listed = json.loads(subprocess.run([*MEMCLI, "--json", "list"], capture_output=True, text=True,
                                       env=env).stdout)
    assert {m["id"] for m in listed["data"]["memories"]} == ids


# --- G3 ------------------------------------------------------------------------------


@pytest.mark.slow
def test_g3_index_lock_fresh_then_stale(ws, run, tmp_path):
    set_config(ws, "lock_timeout = 10", "lock_timeout = 1")
    head = commits(ws)
    lock = ws / ".git" / "index.lock"
    lock.write_bytes(b"")

    fresh = run("--json", "remember", "A memory that must wait for the index lock.", timeout=60)
    assert fresh.code == 9, fresh
    error = fresh.json()["error"]
    assert error["code"] == "git_locked" and "index.lock" in error["message"], error
    assert "stale" not in error["message"]
    assert memory_files(ws) == [] and commits(ws) == head
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    plain = run("remember", "A memory that must wait for the index lock.", timeout=60)
    assert plain.code == 9 and "index.lock" in plain.err and plain.out == "", plain

    hour_ago = time.time() - 3600
    os.utime(lock, (hour_ago, hour_ago))
    stale = run("--json", "remember", "A memory that meets a stale lock.", timeout=60)
    assert stale.code == 9, stale
    assert "stale" in stale.json()["error"]["message"] and "index.lock" in stale.json()["error"]["message"]
    assert stale.json()["ok"] is False
    assert memory_files(ws) == [] and commits(ws) == head
    assert lock.exists(), "a lock is reclaimed only with proof that it is stale"
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""

    lock.unlink()  # the person removes it, as the hint says: the next write works
    after = run("--json", "remember", "A memory after the lock is gone.")
    assert after.code == 0, after
    assert len(memory_files(ws)) == 1 and commits(ws) == head + 1
