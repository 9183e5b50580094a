"""Conflicts a person can finish (issue 22 point 4), over a real bare remote and clones.

A rejection beats a concurrent approval (both recorded, what the approval retired back); a
true conflict blocks sync, is said at every session start until ``memcli resolve`` takes a
side; two replacements of one memory are reported and ``resolve --keep`` keeps one; two stores
started apart are joined by ``resolve`` with every personal memory still served.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import Result, personal_store, run_memcli


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def team(tmp_path: Path):
    """A bare remote holding a store, and ``clone(name)`` making a fresh clone of it."""
    bare = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    seed = tmp_path / "seed"
    assert run_memcli("init", str(seed)).code == 0
    git("remote", "add", "origin", str(bare), cwd=seed)
    assert run_memcli("-w", str(seed), "sync").code == 0

    def clone(name: str) -> Path:
        path = tmp_path / name
        git("clone", "-q", str(bare), str(path), cwd=tmp_path)
        assert run_memcli("init", str(path)).code == 0
        return path

    return bare, clone


def mem(ws: Path, *args: str, **kwargs: Any) -> Result:
    return run_memcli("-w", str(ws), *args, **kwargs)


def remember(ws: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = mem(ws, "--json", *args, env=env)
    assert out.code == 0, out
    return out.json()["data"]["id"]


def shown(ws: Path, memory_id: str) -> dict:
    out = mem(ws, "--json", "show", memory_id)
    assert out.code == 0, out
    return out.json()["data"]


@pytest.mark.slow
def test_a_rejection_beats_a_concurrent_approval_both_recorded_and_what_it_replaced_is_back(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    old = remember(one, "remember", "Deploys go out on Tuesdays", "--scope", "project")
    new = remember(one, "--actor", "bot", "supersede", old, "Deploys go out on Fridays",
                   "--source-type", "model_derived")
    assert shown(one, new)["status"] == "pending_review" and shown(one, old)["status"] == "active"
    assert mem(one, "sync").code == 0 and mem(two, "sync").code == 0
    assert mem(one, "--actor", "bob", "approve", new).code == 0  # bob approves: the old one is retired
    assert shown(one, old)["status"] == "superseded"
    assert mem(two, "--actor", "carol", "reject", new, "--reason", "we deploy on Tuesdays").code == 0
    assert mem(one, "sync").code == 0
    merged = mem(two, "sync")
    assert merged.code == 0, merged  # no conflict: the documented rule settles it
    assert "the rejection wins" in merged.out and f"{old} active again" in merged.out, merged.out
    assert mem(one, "sync").code == 0
    for ws in (one, two):
        record = shown(ws, new)
        assert record["status"] == "rejected", record
        assert record["review"]["by"] == "carol" and record["review"]["decision"] == "rejected"
        assert [(r["by"], r["decision"]) for r in record["review"]["overruled"]] == [("bob", "approved")]
        assert shown(ws, old)["status"] == "active" and new not in shown(ws, old)["supersededBy"]
        assert "Tuesdays" in mem(ws, "recall", "deploys").out and "Fridays" not in mem(ws, "recall", "deploys").out
    assert mem(two, "check").code == 0


def edit_text(ws: Path, memory_id: str, old: str, new: str) -> None:
    path = next((ws / "memories").rglob(f"{memory_id}*.md"))
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    git("commit", "-qam", f"say {new}", cwd=ws)


@pytest.mark.slow
def test_a_true_conflict_is_said_at_every_session_start_until_resolve_takes_a_side(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    mid = remember(one, "remember", "The staging database listens on port 5432")
    assert mem(one, "sync").code == 0 and mem(two, "sync").code == 0
    edit_text(one, mid, "5432", "5433")
    edit_text(two, mid, "5432", "5434")
    assert mem(one, "sync").code == 0
    head = git("rev-parse", "HEAD", cwd=two)
    for _ in range(2):  # every later sync stops on the same file, and says what to run, where
        stopped = mem(two, "sync")
        assert stopped.code == 16 and f"run `memcli resolve` in {two}" in stopped.err, stopped
    for _ in range(2):  # every session start says so, until it is fixed
        start = mem(two, "hook", "claude", "session-start", input='{"source": "startup"}')
        assert start.code == 0 and "sync is blocked since" in start.out and "memcli resolve" in start.out, start
    assert "sync is blocked" not in mem(one, "context").out
    agent = mem(two, "resolve", "--take", "theirs", env={"CLAUDECODE": "1"})
    assert agent.code == 8, agent
    wrong = mem(two, "resolve", input="x\n")
    assert wrong.code == 2 and "neither ours nor theirs" in wrong.err, wrong
    unanswered = mem(two, "resolve", input="")
    assert unanswered.code == 130, unanswered
    assert git("rev-parse", "HEAD", cwd=two) == head and git("status", "--porcelain", cwd=two) == ""
    done = mem(two, "resolve", input="t\n")
    assert done.code == 0, done
    assert "both sides changed the text differently" in done.err and "ours (this store)" in done.err
    assert "resolved: merged" in done.out and "run `memcli sync`" in done.out
    assert "sync is blocked" not in mem(two, "context").out
    assert "5433" in shown(two, mid)["text"]
    assert mem(two, "sync").code == 0 and mem(one, "sync").code == 0
    assert "5433" in shown(one, mid)["text"] and mem(one, "check").code == 0
    nothing = mem(two, "resolve")
    assert nothing.code == 4 and "no blocked sync" in nothing.err


@pytest.mark.slow
def test_two_replacements_of_one_memory_are_reported_and_resolve_keeps_one(team) -> None:
    _, clone = team
    one, two = clone("one"), clone("two")
    old = remember(one, "remember", "CI runs on Jenkins", "--scope", "project")
    assert mem(one, "sync").code == 0 and mem(two, "sync").code == 0
    first = remember(one, "supersede", old, "CI runs on GitHub Actions")
    second = remember(two, "supersede", old, "CI runs on Buildkite")
    assert mem(one, "sync").code == 0
    merged = mem(two, "sync")
    assert merged.code == 0, merged
    pair = sorted((first, second))
    assert f"two active memories for one subject after the merge: {pair[0]} and {pair[1]}" in merged.out, merged.out
    assert f"memcli resolve --keep {pair[0]} {pair[1]}" in merged.out
    assert "two active memories for one subject" in mem(two, "context").out
    kept = mem(two, "resolve", "--keep", second, first)
    assert kept.code == 0 and f"kept {second}; {first} is superseded by it" in kept.out, kept
    assert "two active memories" not in mem(two, "context").out
    assert shown(two, first)["status"] == "superseded" and second in shown(two, first)["supersededBy"]
    assert first in shown(two, second)["supersedes"]
    again = mem(two, "resolve", "--keep", second, first)
    assert again.code == 8 and "resolve --keep takes two active memories" in again.err
    assert mem(two, "sync").code == 0 and mem(two, "check").code == 0


def test_two_stores_started_apart_are_joined_and_every_personal_memory_stays(team, tmp_path: Path) -> None:
    bare, _ = team
    apart = tmp_path / "apart"
    assert run_memcli("init", str(apart)).code == 0  # a second `memcli init`: its own history and id
    mine = remember(apart, "remember", "My editor is helix", "--scope", "user:alice")
    shared = remember(apart, "remember", "Builds use make", "--scope", "project")
    former = personal_store(apart)
    assert (former / "memcli.toml").is_file()
    git("remote", "add", "origin", str(bare), cwd=apart)
    stopped = mem(apart, "sync")
    assert stopped.code == 16 and "started apart" in stopped.err and "memcli resolve" in stopped.err, stopped
    assert "started apart" in mem(apart, "context").out
    done = mem(apart, "resolve")
    assert done.code == 0, done
    assert "your personal store moved with it" in done.out, done.out
    joined = personal_store(apart)
    assert joined != former and (joined / "memcli.toml").is_file()
    assert mem(apart, "--json", "show", mine).json()["data"]["scope"] == "user:alice"
    assert "helix" in mem(apart, "recall", "editor").out and "make" in mem(apart, "recall", "builds").out
    assert shared and mem(apart, "sync").code == 0


@pytest.mark.parametrize("old_branch", [None, "master"])
@pytest.mark.slow
def test_two_machines_of_one_person_share_their_personal_store_on_one_branch(team, tmp_path: Path,
                                                                             old_branch: str | None) -> None:
    """The documented two-machine setup (docs/teams.md): each machine's own store gets the same
    remote; the second machine's first sync joins the first's (two first commits, one person),
    and nothing is pushed beside it (a store begun on ``master`` by an older memcli included)."""
    _, clone = team
    personal = tmp_path / "personal.git"
    git("init", "--bare", "-q", str(personal), cwd=tmp_path)
    machines = {}
    for name in ("laptop", "desktop"):
        env = {"MEMCLI_HOME": str(tmp_path / f"{name}-data")}
        ws = clone(name)
        memory = remember(ws, "remember", f"On the {name} my editor is helix", "--scope", "user:alice", env=env)
        import tomllib

        workspace_id = tomllib.loads((ws / "memcli.toml").read_text(encoding="utf-8"))["workspace"]["id"]
        store = tmp_path / f"{name}-data" / "projects" / workspace_id
        assert (store / "memcli.toml").is_file()
        if old_branch and name == "desktop":
            git("branch", "-m", old_branch, cwd=store)
        git("remote", "add", "origin", str(personal), cwd=store)  # the documented step, on each machine
        machines[name] = (ws, env, memory)
        synced = mem(ws, "sync", env=env)
        assert synced.code == 0 and "your personal store" in synced.out, synced
    laptop, desktop = machines["laptop"], machines["desktop"]
    assert mem(laptop[0], "sync", env=laptop[1]).code == 0
    assert git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=personal) == "refs/heads/main"
    for ws, env, _ in (laptop, desktop):
        listed = mem(ws, "--json", "list", "--scope", "user:alice", env=env)
        assert {m["id"] for m in listed.json()["data"]["memories"]} == {laptop[2], desktop[2]}, listed.out


@pytest.mark.slow
def test_an_approval_merged_beside_the_proposers_edit_is_no_forgery(team) -> None:
    """alice approves bob's agent memory while bob edits its importance: the driver merges both,
    and the merge commit (by bob) is not taken for an approval by its proposer: check passes and
    neither clone quarantines it (it did before: the merge was judged as the activation)."""
    _, clone = team
    bob, alice = clone("bob"), clone("alice")
    for ws, name in ((bob, "bob"), (alice, "alice")):
        git("config", "user.email", f"{name}@example.com", cwd=ws)
        git("config", "user.name", name, cwd=ws)
    mid = remember(bob, "--actor", "bob@example.com", "remember", "Run the linter before pushing",
                   "--source-type", "model_derived")
    assert mem(bob, "sync").code == 0 and mem(alice, "sync").code == 0
    base = git("rev-parse", "HEAD", cwd=alice)
    assert mem(alice, "--actor", "alice@example.com", "approve", mid).code == 0
    edit_text(bob, mid, "importance: 3", "importance: 4")
    assert mem(alice, "sync").code == 0
    merged = mem(bob, "sync")
    assert merged.code == 0 and "quarantined" not in merged.out, merged
    assert mem(alice, "sync").code == 0
    for ws in (bob, alice):
        assert mem(ws, "check", f"{base}..HEAD").code == 0
        assert mem(ws, "--json", "quarantine", "list").json()["data"]["quarantined"] == []
        assert shown(ws, mid)["status"] == "active" and shown(ws, mid)["importance"] == 4


def test_the_context_blocks_notes_are_one_a_line_with_no_local_path_and_each_warning_once(ws, run):
    """A blocked sync and two active memories for one subject ran together on one line, the
    blocked-sync note named the store's absolute path, and a bad file's warning came 3 times."""
    import json

    first = run("--json", "remember", "CI runs on GitHub Actions").json()["data"]["id"]
    second = run("--json", "remember", "CI runs on Buildkite").json()["data"]["id"]
    record = {"blocked": {"ref": "origin/main", "branch": "main", "root": str(ws), "at": "2026-05-01T00:00:00Z",
                          "files": ["memories/project/x.md"]},
              "duplicates": [[first, second]]}
    (ws / ".cache" / "conflicts.json").write_text(json.dumps(record), encoding="utf-8")
    (ws / "memories" / "project" / "bad.md").write_text("---\nid: 01m95ebbbbbbbbbbbbbbbbbbbb\ntext: [open\n---\nx\n",
                                                        encoding="utf-8")
    for fmt in ("text", "markdown"):
        block = run("context", "--format", fmt)
        assert block.code == 0, block
        lines = block.out.splitlines()
        blocked = [line for line in lines if "sync is blocked since" in line]
        pair = [line for line in lines if "two active memories for one subject" in line]
        assert len(blocked) == 1 and len(pair) == 1 and "two active" not in blocked[0], block.out
        assert str(ws) not in block.out and str(ws.parent) not in block.out, block.out
        assert "run `memcli resolve`" in blocked[0]
        warned = [line for line in block.err.splitlines() if "bad.md" in line]
        assert len(warned) == 1, block.err


def test_a_warning_found_by_several_passes_is_given_once_per_command(capsys) -> None:
    """The newcomer's `memcli context` printed one bad file's warning 3 times (each pass over
    the files that met it warned): ``output.warn`` gives each message once per command."""
    from memcli.cli import output

    output.STATE.reset()
    try:
        for _ in range(3):
            output.warn("skipped memories/project/bad.md:3: invalid YAML front-matter")
        output.warn("another problem")
        assert capsys.readouterr().err.splitlines() == [
            "memcli: warning: skipped memories/project/bad.md:3: invalid YAML front-matter",
            "memcli: warning: another problem"]
        output.STATE.reset()  # a new command says it again
        output.warn("another problem")
        assert capsys.readouterr().err == "memcli: warning: another problem\n"
    finally:
        output.STATE.reset()
