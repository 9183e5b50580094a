"""`memcli stats` and the local event log (.cache/events.jsonl): real workspaces, real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import git
from memcli import fileformat

NOW = {"MEMCLI_NOW": "2027-01-01T00:00:00Z"}
BROKEN = "---\nstatus: [\n---\nA broken file.\n"


def events(ws: Path) -> list[dict]:
    path = ws / ".cache" / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def remember(run, *args: str, actor: str = "alice") -> str:
    result = run("--json", "--actor", actor, "remember", *args, env=NOW)
    assert result.code == 0, result
    return result.json()["data"]["id"]


def visible_files(ws: Path, actor: str) -> list[dict]:
    """The front-matter of every readable memory file the actor may see, read straight from disk."""
    out = []
    for path in sorted((ws / "memories").rglob("*.md")):
        parts = path.relative_to(ws / "memories").parts
        if parts[0] == "user" and parts[1] != actor:
            continue
        try:
            out.append(dict(fileformat.parse(path.read_bytes(), str(path)).meta))
        except Exception:  # noqa: BLE001 - the broken file: counted apart
            continue
    return out


@pytest.fixture
def busy(shared_tree_ws, ws, run):
    """A workspace after a few commands: memories in several scopes, statuses and categories."""
    ids = {
        "soon": remember(run, "Freeze deploys during the audit.", "--ttl", "3d", "--category", "decision"),
        "later": remember(run, "The staging cluster is shared with QA.", "--ttl", "30d"),
        "pref": remember(run, "I like short commit messages.", "--scope", "user:alice", "--category", "preference"),
        "bob": remember(run, "Bob keeps his notes in vim.", "--scope", "user:bob", actor="bob"),
        "proposal": remember(run, "Run the linter before pushing.", "--source-type", "model_derived",
                             "--category", "procedure"),
        "gone": remember(run, "The old VPN is at vpn1.example.com.", "--ttl", "2d"),
    }
    assert run("forget", ids["later"], env=NOW).code == 0  # archived: still counted, by status
    (ws / "memories" / "project" / "broken.md").write_text(BROKEN, encoding="utf-8")
    assert run("recall", "deploys audit", env=NOW).code == 0
    assert run("recall", "nothing-matches-this", env=NOW).code == 0
    assert run("context", env=NOW).code == 0
    assert run("show", "zzzzzz", env=NOW).code == 4  # a failed command is recorded too
    return ids


@pytest.mark.slow
def test_stats_json_counts_what_the_files_hold(busy, ws, run):
    data = run("--json", "stats", env=NOW).json()["data"]
    files = visible_files(ws, "alice")
    assert data["memories"] == len(files) == 5  # bob's personal memory is not counted
    assert data["byScope"] == dict(Counter(m["scope"] for m in files))
    assert "user:bob" not in data["byScope"]
    assert data["byStatus"] == dict(Counter(m["status"] for m in files))
    assert data["byCategory"] == dict(Counter(m["category"] for m in files))
    assert data["pendingReview"] == sum(m["status"] == "pending_review" for m in files) == 1
    assert data["unreadable"] == 1
    assert data["index"]["backend"] == "fts5" and data["index"]["memories"] == 6


@pytest.mark.slow
def test_stats_lists_what_expires_within_the_window(busy, ws, run):
    data = run("--json", "stats", env=NOW).json()["data"]
    assert [e["id"] for e in data["expiring"]] == [busy["gone"], busy["soon"]]  # soonest first
    assert data["expiring"][1]["expireAt"] == "2027-01-04T00:00:00Z"
    assert busy["later"] not in json.dumps(data["expiring"])  # 30 days away (and archived)
    week_later = run("--json", "stats", env={"MEMCLI_NOW": "2027-01-03T12:00:00Z"}).json()["data"]
    assert [e["id"] for e in week_later["expiring"]] == [busy["soon"]] and week_later["expired"] == 1
    wide = run("--json", "stats", "--days", "40", env=NOW).json()["data"]
    assert wide["expiringWithinDays"] == 40 and busy["soon"] in [e["id"] for e in wide["expiring"]]


@pytest.mark.slow
def test_stats_reports_latencies_of_the_commands_run(busy, ws, run):
    data = run("--json", "stats", env=NOW).json()["data"]
    latencies = data["latencies"]
    assert latencies["remember"]["count"] == 6
    assert latencies["recall"]["count"] == 2
    assert latencies["forget"]["count"] == 1 and latencies["context"]["count"] == 1
    assert latencies["show"]["count"] == 1
    assert "stats" not in latencies  # recorded once it has finished
    for row in latencies.values():
        assert 0 < row["median_ms"] <= row["p95_ms"] <= row["max_ms"] < 60_000
    assert data["events"] == 11
    again = run("--json", "stats", env=NOW).json()["data"]
    assert again["latencies"]["stats"]["count"] == 1


def test_event_log_holds_only_names_times_and_status(busy, ws, run):
    log = events(ws)
    assert [e["command"] for e in log] == ["remember"] * 6 + ["forget", "recall", "recall", "context", "show"]
    assert all(set(e) == {"at", "command", "ms", "exit"} for e in log)
    assert [e["exit"] for e in log][-1] == 4
    assert all(e["at"].endswith("Z") and len(e["at"]) == 20 for e in log)
    raw = (ws / ".cache" / "events.jsonl").read_text(encoding="utf-8")
    for secret in ("Freeze", "audit", "deploys", "nothing-matches-this", "vim", "zzzzzz", "alice", "bob"):
        assert secret not in raw


def test_event_log_is_never_committed(busy, ws, run):
    assert (ws / ".cache" / "events.jsonl").exists()
    assert git(ws, "ls-files", ".cache") == ""
    assert ".cache" not in git(ws, "status", "--porcelain", "--untracked-files=all")
    git(ws, "add", "-A")
    assert "events.jsonl" not in git(ws, "diff", "--cached", "--name-only")
    assert "events.jsonl" not in git(ws, "log", "--all", "--name-only", "--format=")


def test_group_commands_are_named_by_their_words_and_free_text_never(ws, run):
    remember(run, "Tabs for Go files.")
    assert run("index", "status").code == 0
    assert run("hook", "claude", "session-start", input="{}").code == 0
    assert run("--json", "recall", "--scope", "project", "tabs", "go").code == 0
    assert [e["command"] for e in events(ws)] == ["remember", "index status", "hook claude session-start", "recall"]


def test_commands_without_a_workspace_are_not_recorded(ws, run, tmp_path):
    assert run("--help").code == 0
    assert run("recall").code == 2  # usage error: the workspace is never opened
    assert run("-w", str(tmp_path / "nowhere"), "list").code == 3
    assert events(ws) == []
    assert run("list").code == 0
    assert [e["command"] for e in events(ws)] == ["list"]


def test_event_log_is_kept_under_a_megabyte(ws, run):
    path = ws / ".cache" / "events.jsonl"
    line = json.dumps({"at": "2026-01-01T00:00:00Z", "command": "old", "ms": 1.0, "exit": 0}) + "\n"
    path.write_text(line * (1_000_000 // len(line) + 10), encoding="utf-8")
    assert run("list").code == 0
    size = path.stat().st_size
    assert 400_000 < size <= 500_000
    log = events(ws)  # every line whole
    assert log[-1]["command"] == "list" and log[0]["command"] == "old"
    assert run("--json", "stats").json()["data"]["latencies"]["old"]["count"] == 999


def test_stats_skips_malformed_event_lines(ws, run):
    path = ws / ".cache" / "events.jsonl"
    path.write_text('{"at": "x", "command": "list", "ms": 5, "exit": 0}\nnot json\n{"command": 3}\n'
                    '{"at": "x", "command": "list", "ms": 7, "exit": 0', encoding="utf-8")  # cut by a crash
    data = run("--json", "stats").json()["data"]
    assert data["latencies"] == {"list": {"count": 1, "median_ms": 5.0, "p95_ms": 5.0, "max_ms": 5.0}}


def test_stats_text_has_small_sections(busy, ws, run):
    result = run("stats", env=NOW)
    assert result.code == 0, result
    titles = [line for line in result.out.splitlines() if line.startswith("# ")]
    assert titles == ["# totals", "# by scope: scope, memories", "# by status: status, memories",
                      "# by category: category, memories", "# expiring within 7 days: id, scope, expireAt",
                      "# index", "# hooks (your sessions)",
                      "# latencies (last 11 commands): command, runs, median ms, p95 ms, max ms"]
    assert f"{busy['soon']}\tproject\t2027-01-04T00:00:00Z" in result.out
    assert "memories you may see\t5\npending review\t1\n" in result.out and "broken.md" in result.err


def test_stats_days_must_be_sensible(ws, run):
    result = run("stats", "--days", "-1")
    assert result.code == 5 and result.err.startswith("memcli: error: invalid --days -1")


def test_index_freshness_names_the_last_change(ws, run):
    memory = remember(run, "Release notes live in docs/releases.")
    path = next((ws / "memories").rglob(f"{memory}*.md"))
    path.write_bytes(path.read_bytes().replace(b"docs/releases", b"docs/changes"))
    index = run("--json", "stats").json()["data"]["index"]
    assert index["last_change"]["kind"] == "sync" and index["last_change"]["files"] == 1
    assert index["last_sync"]["updated"] == 1 and index["memories"] == 1
    assert run("--json", "stats").json()["data"]["index"]["last_change"] == index["last_change"]


# --- a read-only cache ------------------------------------------------------------------


def _freeze(folder: Path) -> bool:
    """Make ``folder`` and its files unwritable (chmod; ``chattr +i`` as root). False if impossible."""
    paths = [folder, *folder.iterdir()]
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    if os.geteuid() == 0 and shutil.which("chattr"):
        for path in paths:
            subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return True
    (folder / "probe").unlink()
    return False


def _thaw(folder: Path) -> None:
    paths = [folder, *folder.iterdir()]
    if os.geteuid() == 0 and shutil.which("chattr"):
        for path in paths:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    for path in paths:
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_cache_breaks_no_command(ws, run):
    memory = remember(run, "Use pnpm, not npm.")
    cache = ws / ".cache"
    assert run("list").code == 0
    before = (cache / "events.jsonl").read_bytes()
    if not _freeze(cache):
        _thaw(cache)
        pytest.skip("cannot make a folder read-only here")
    try:
        context = run("context")
        assert context.code == 0 and "Use pnpm, not npm." in context.out, context
        for args in (["recall", "pnpm"], ["list"], ["show", memory], ["stats"], ["doctor"], ["index", "status"],
                     ["--json", "stats"]):
            result = run(*args)
            assert result.code == 0, (args, result)
            assert "Traceback" not in result.err and "internal error" not in result.err
        assert run("--json", "stats").json()["data"]["index"]["backend"] == "scan"
        write = run("remember", "Another fact.")
        assert write.code == 15 and write.err.count("\n") == 1, write  # the disk refused: exit 15 (stop 33)
        assert "cannot take the workspace lock" in write.err and "nothing was written" in write.err
        assert (cache / "events.jsonl").read_bytes() == before
    finally:
        _thaw(cache)
    assert git(ws, "status", "--porcelain") == ""
