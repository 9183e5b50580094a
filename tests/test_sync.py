"""memcli sync over a real bare remote, and the field-by-field merge driver (issue 12, points 2-3)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import run_memcli

#: remembers per writer in the concurrent test (the issue's figure is 50: MEMCLI_SYNC_WRITES=50)
WRITES = int(os.environ.get("MEMCLI_SYNC_WRITES", "8"))


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def team(tmp_path: Path):
    """A bare remote holding a workspace, and a function that makes a fresh clone of it."""
    bare = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    git("config", "core.logAllRefUpdates", "always", cwd=bare)  # a reflog of every push, checked below
    seed = tmp_path / "seed"
    assert run_memcli("init", str(seed)).code == 0
    git("remote", "add", "origin", str(bare), cwd=seed)
    assert run_memcli("-w", str(seed), "sync").code == 0

    def clone(name: str) -> Path:
        path = tmp_path / name
        git("clone", "-q", str(bare), str(path), cwd=tmp_path)
        assert run_memcli("init", str(path)).code == 0  # registers the merge driver in the clone
        return path

    return bare, clone


def ids(ws: Path) -> set[str]:
    out = run_memcli("-w", str(ws), "--json", "list", "--limit", "1000")
    assert out.code == 0, out
    return {m["id"] for m in out.json()["data"]["memories"]}


def test_sync_pushes_then_the_other_clone_receives(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    assert run_memcli("-w", str(one), "remember", "Deploys go out on Tuesdays").code == 0
    first = run_memcli("-w", str(one), "sync")
    assert first.code == 0, first
    assert "1 commits sent" in first.out or "sent" in first.out
    second = run_memcli("-w", str(two), "sync")
    assert second.code == 0, second
    assert "received" in second.out
    assert run_memcli("-w", str(two), "recall", "Tuesdays").out.count("Tuesdays") == 1
    again = run_memcli("-w", str(two), "sync")
    assert again.code == 0 and "in sync" in again.out


def _writer(ws: Path, name: str) -> list[int]:
    codes = []
    for i in range(WRITES):
        codes.append(run_memcli("-w", str(ws), "--actor", name, "remember",
                                f"Writer {name} notes fact number {i} about the build", timeout=120).code)
        if i % 2 == 1:
            codes.append(run_memcli("-w", str(ws), "sync", timeout=120).code)
    codes.append(run_memcli("-w", str(ws), "sync", timeout=120).code)
    return codes


@pytest.mark.slow
def test_three_writers_with_sync_lose_nothing_and_never_force_push(team) -> None:
    bare, clone = team
    clones = [clone(f"c{i}") for i in range(3)]
    tips: list[str] = []
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(_writer, clones, ["ann", "ben", "cat"]))
    for codes in results:
        assert set(codes) <= {0, 16}, codes  # 16: sync stopped (e.g. the remote kept moving); retried below
    for ws in clones * 2:
        assert run_memcli("-w", str(ws), "sync", timeout=120).code == 0
        tips.append(git("rev-parse", "HEAD", cwd=ws))
    final = git("rev-parse", "main", cwd=bare)
    for ws in clones:
        assert len(ids(ws)) == 3 * WRITES
        assert git("rev-parse", "HEAD", cwd=ws) == final
    # every commit that ever reached the remote is an ancestor of its tip: no force-push
    pushed = git("reflog", "show", "--format=%H", "main", cwd=bare).splitlines()
    assert len(pushed) > 3
    for line in pushed + tips:
        subprocess.run(["git", "merge-base", "--is-ancestor", line, final], cwd=bare, check=True)
    for repo in [bare, *clones]:
        fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr


def _remember_json(ws: Path, *args: str) -> str:
    out = run_memcli("-w", str(ws), "--json", "remember", *args)
    assert out.code == 0, out
    return out.json()["data"]["id"]


def test_supersede_racing_an_approval_merges_field_by_field(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    mid = _remember_json(one, "Run the linter with ruff", "--source-type", "model_derived")
    assert run_memcli("-w", str(one), "sync").code == 0
    assert run_memcli("-w", str(two), "sync").code == 0
    # clone 1: bob approves it and alice supersedes it; clone 2, meanwhile: carol approves it
    assert run_memcli("-w", str(one), "--actor", "bob", "approve", mid).code == 0
    sup = run_memcli("-w", str(one), "supersede", mid, "Run the linter with ruff and mypy")
    assert sup.code == 0, sup
    approve = run_memcli("-w", str(two), "--actor", "carol", "approve", mid)
    assert approve.code == 0, approve
    assert run_memcli("-w", str(one), "sync").code == 0
    merged = run_memcli("-w", str(two), "sync")
    assert merged.code == 0, merged
    shown = run_memcli("-w", str(two), "--json", "show", mid).json()["data"]
    assert shown["status"] == "superseded"          # the later stage wins (policy.merge.STATUS_RANK)
    assert shown["supersededBy"]                    # the supersede's link is kept
    assert shown["review"]["by"] == "bob"           # both approved: the earlier review is kept
    assert "<<<<<<<" not in next((two / "memories").rglob(f"{mid}*.md")).read_text()


def test_two_text_edits_are_a_named_conflict_and_nothing_is_half_merged(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    mid = _remember_json(one, "The staging database listens on port 5432")
    assert run_memcli("-w", str(one), "sync").code == 0
    assert run_memcli("-w", str(two), "sync").code == 0
    for ws, port in ((one, "5433"), (two, "5434")):
        path = next((ws / "memories").rglob(f"{mid}*.md"))
        path.write_text(path.read_text().replace("5432", port))
        git("commit", "-qam", f"port {port}", cwd=ws)
    assert run_memcli("-w", str(one), "sync").code == 0
    before = git("rev-parse", "HEAD", cwd=two)
    stopped = run_memcli("-w", str(two), "sync")
    assert stopped.code == 16, stopped
    assert "both sides changed the text differently" in stopped.err
    assert git("rev-parse", "HEAD", cwd=two) == before
    assert git("status", "--porcelain", cwd=two) == ""
    assert not (two / ".git" / "MERGE_HEAD").exists()


def test_plain_git_pull_uses_the_merge_driver(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    mid = _remember_json(one, "Cache builds with sccache", "--source-type", "model_derived")
    assert run_memcli("-w", str(one), "sync").code == 0
    git("pull", "-q", "--no-rebase", cwd=two)
    assert run_memcli("-w", str(one), "--actor", "bob", "approve", mid).code == 0
    assert run_memcli("-w", str(two), "--actor", "carol", "reject", mid, "--reason", "not ours").code == 0
    assert run_memcli("-w", str(one), "sync").code == 0
    pull = subprocess.run(["git", "pull", "--no-rebase", "--no-edit"], cwd=two, capture_output=True, text=True)
    assert pull.returncode == 0, pull.stdout + pull.stderr  # the driver settles approve against reject
    assert "a rejection beats a concurrent approval" in pull.stdout + pull.stderr
    shown = run_memcli("-w", str(two), "--json", "show", mid).json()["data"]
    assert shown["status"] == "rejected" and shown["review"]["overruled"][0]["by"] == "bob"


def test_sync_refuses_without_a_remote_and_in_a_code_repository(tmp_path: Path, project) -> None:
    alone = tmp_path / "alone"
    assert run_memcli("init", str(alone)).code == 0
    out = run_memcli("-w", str(alone), "sync")
    assert out.code == 16 and "no git remote" in out.err
    assert run_memcli("init", str(project / "mem")).code == 0
    out = run_memcli("-w", str(project / "mem"), "sync")
    assert out.code == 16 and "folder of the repository" in out.err


def test_merge_driver_command_is_absolute(team) -> None:
    _, clone = team
    ws = clone("one")
    driver = git("config", "--get", "merge.memcli.driver", cwd=ws)
    assert driver.startswith(str(Path(sys.executable).absolute())) or driver.startswith("'")
    assert (ws / ".gitattributes").read_text().strip() == "memories/**/*.md merge=memcli"


def test_session_hooks_sync_when_enabled_and_never_fail(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    for ws in (one, two):
        config = ws / "memcli.toml"
        config.write_text(config.read_text().replace("session_start = false", "session_start = true")
                          .replace("session_end = false", "session_end = true"))
        git("commit", "-qam", "sync from the session hooks", cwd=ws)
    assert run_memcli("-w", str(one), "remember", "Releases are cut on Thursdays").code == 0
    end = run_memcli("-w", str(one), "hook", "claude", "session-end", input='{"session_id": "s1"}')
    assert end.code == 0, end  # pushed by the hook
    start = run_memcli("-w", str(two), "hook", "claude", "session-start", input='{"source": "startup"}')
    assert start.code == 0 and "Thursdays" in start.out  # fetched before the context was made
    git("remote", "set-url", "origin", "/nonexistent/remote.git", cwd=two)
    broken = run_memcli("-w", str(two), "hook", "claude", "session-start", input='{"source": "startup"}')
    assert broken.code == 0 and "sync skipped" in broken.err and "Thursdays" in broken.out


def test_an_untracked_new_file_blocks_sync_only_when_the_merge_would_overwrite_it(team) -> None:
    """Newcomer fault 11 (stop 33): sync refused ("11 files have uncommitted changes, which a
    merge could overwrite") when the only changes were new files git did not track yet, which a
    merge cannot overwrite unless the other side adds the same path."""
    _, clone = team
    one, two = clone("one"), clone("two")
    note = two / "memories" / "project" / "draft-note.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("---\nscope: project\n---\nA draft, not committed yet\n", encoding="utf-8")
    assert run_memcli("-w", str(one), "remember", "Deploys go out on Tuesdays").code == 0
    assert run_memcli("-w", str(one), "sync").code == 0
    received = run_memcli("-w", str(two), "sync")
    assert received.code == 0 and "received" in received.out, received
    assert note.is_file()
    clash = one / "memories" / "project" / "draft-note.md"  # the other side adds the same path
    clash.write_text("---\nscope: project\n---\nTheir note\n", encoding="utf-8")
    git("add", "-A", cwd=one)
    git("commit", "-qm", "their note", cwd=one)
    assert run_memcli("-w", str(one), "sync").code == 0
    stopped = run_memcli("-w", str(two), "sync")
    assert stopped.code == 16 and "would be overwritten by the merge: memories/project/draft-note.md" in stopped.err, \
        stopped
    assert note.read_text(encoding="utf-8").endswith("A draft, not committed yet\n")
