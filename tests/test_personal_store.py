"""Issue 12, point 1: personal scopes live in the person's own store, outside the project repository.

Real git repositories and the real CLI in a subprocess; the person's stores are under this
test's ``$HOME`` (``~/.local/share/memcli``) unless ``$MEMCLI_HOME`` moves them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git, personal_store, shared_tree

TEXT = "Alice keeps her scratch notes in ~/notes/zebrafish"


def all_objects(repo: Path) -> bytes:
    """Every object of a repository (loose and packed, reachable or not), contents included."""
    return subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def test_a_personal_memory_never_reaches_the_project_repository(project: Path, run):
    assert run("init", cwd=project).code == 0  # a code repository: the memory branch in .memcli/
    workspace = project / ".memcli"
    made = run("--json", "remember", TEXT, "--scope", "user:alice", cwd=project)
    assert made.code == 0, made
    memory_id = made.json()["data"]["id"]
    assert run("remember", "The team deploys with make ship", cwd=project).code == 0
    assert b"zebrafish" not in all_objects(project)  # the code repository and its memory branch
    store = personal_store(workspace)
    assert b"zebrafish" in all_objects(store) and (store / ".git").is_dir()
    assert "(user:alice)" in git(store, "log", "-1", "--format=%s")
    # reads merge the stores
    recall = run("--json", "recall", "zebrafish", cwd=project).json()["data"]["hits"]
    assert [h["id"] for h in recall] == [memory_id] and recall[0]["path"].startswith(str(store))
    context = run("context", cwd=project)
    assert "zebrafish" in context.out and "make ship" in context.out
    assert "zebrafish" in run("show", memory_id, cwd=project).out
    listed = run("list", cwd=project).out
    assert memory_id in listed and "make ship" in listed
    log = run("--json", "log", cwd=project).json()["data"]["entries"]
    assert any(memory_id in e["trailers"].get("id", "") for e in log)  # the personal store's trail
    assert any("(project)" in e["subject"] for e in log)  # and the project's, merged
    assert run("history", memory_id, cwd=project).code == 0
    start = run("hook", "claude", "session-start", cwd=project,
                input='{"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1"}')
    assert "zebrafish" in start.out
    # writes by id go to the store that holds the memory
    assert run("supersede", memory_id, "Alice keeps scratch notes in ~/notes/zebrafish2", cwd=project).code == 0
    assert run("--json", "show", memory_id, cwd=project).json()["data"]["status"] == "superseded"
    assert b"zebrafish" not in all_objects(project)


def test_sessions_go_to_the_personal_store_and_shared_scopes_stay(ws: Path, run):
    session = run("--json", "remember", "Session note about the flaky parser", "--scope", "session:s-42")
    assert session.code == 0, session
    assert not (ws / "memories" / "session").exists()
    assert list((personal_store(ws) / "memories" / "session").rglob("*.md"))
    shared = run("--json", "remember", "Shared fact about parsers")
    assert (ws / "memories" / "project").is_dir() and shared.code == 0
    assert b"flaky parser" not in all_objects(ws)


def test_all_projects_memories_are_read_in_every_workspace(tmp_path: Path, run):
    first, second = tmp_path / "one", tmp_path / "two"
    assert run("init", str(first)).code == 0 and run("init", str(second)).code == 0
    made = run("-w", str(first), "--json", "remember", "I prefer British spelling in docs", "--scope",
               "user:alice", "--all-projects")
    assert made.code == 0, made
    assert "British" in run("-w", str(second), "recall", "spelling").out
    refused = run("-w", str(first), "remember", "Team note", "--all-projects")
    assert refused.code == 5 and "--scope user:alice" in refused.err and refused.err.count("\n") == 1


def test_memcli_home_moves_the_stores_and_a_home_kept_in_git_does_not_swallow_them(tmp_path: Path, ws: Path, run):
    home = tmp_path / "dotfiles"
    home.mkdir()
    git(home, "init", "-q")  # a home folder kept in git: the store must still be a repository of its own
    made = run("remember", "My shell is fish", "--scope", "user:alice", env={"MEMCLI_HOME": str(home / "memcli")})
    assert made.code == 0, made
    stores = list((home / "memcli" / "projects").iterdir())
    assert len(stores) == 1 and (stores[0] / ".git").is_dir()
    assert git(home, "status", "--porcelain", "--ignored").count("memcli") <= 1  # one untracked folder, no commit
    assert subprocess.run(["git", "-C", str(home), "rev-parse", "HEAD"], capture_output=True).returncode != 0
    assert "fish" in run("recall", "shell", env={"MEMCLI_HOME": str(home / "memcli")}).out
    assert "fish" not in run("recall", "shell").out  # another $MEMCLI_HOME: another person's stores


def test_doctor_fix_moves_an_old_personal_memory_out_of_the_workspace(ws: Path, run):
    shared_tree(ws)  # a workspace from before the personal store: personal scopes in its tree
    old = run("--json", "remember", TEXT, "--scope", "user:alice").json()["data"]["id"]
    bobs = run("--json", "remember", "Bob's own note", "--scope", "user:bob", env={"MEMCLI_ACTOR": "bob"})
    assert bobs.code == 0
    assert list((ws / "memories" / "user" / "alice").rglob(f"{old}*.md"))
    seen = run("doctor")
    assert seen.code == 0 and "doctor --fix" in seen.out
    fixed = run("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert "gave this workspace the id" in fixed.out and "moved 1 personal memory" in fixed.out
    assert "purge --history" in fixed.out and "1 personal memory of other people" in fixed.out
    assert not list((ws / "memories" / "user" / "alice").rglob("*.md"))  # gone from the project's tree
    assert list((ws / "memories" / "user" / "bob").rglob("*.md"))  # bob's is his to move
    store = personal_store(ws)
    assert list((store / "memories" / "user" / "alice").rglob(f"{old}*.md"))
    assert "zebrafish" not in git(ws, "log", "-1", "--format=%B")  # the project's commit names no text
    assert old in git(ws, "log", "-1", "--format=%B") and old in git(store, "log", "-1", "--format=%B")
    assert git(ws, "status", "--porcelain") == "" and git(store, "status", "--porcelain") == ""
    hits = run("--json", "recall", "zebrafish").json()["data"]["hits"]
    assert [h["id"] for h in hits] == [old]
    again = run("doctor", "--fix")
    assert again.code == 0 and "moved" not in again.out
    # the project's history still held the text: purge --history removes it from both
    purged = run("purge", old, "--history", "--yes")
    assert purged.code == 0, purged
    assert b"zebrafish" not in all_objects(ws) and b"zebrafish" not in all_objects(store)


def test_a_session_summary_and_its_raw_transcript_stay_in_the_personal_store(ws: Path, run, tmp_path: Path):
    from test_session_compact import write_transcript

    path = write_transcript(tmp_path)
    made = run("--json", "compact", "--transcript", str(path))
    assert made.code == 0, made
    memory = run("--json", "show", made.json()["data"]["id"]).json()["data"]
    store = personal_store(ws)
    assert memory["path"].startswith(str(store)) and memory["scope"].startswith("session:")
    assert (store / memory["provenance"]["source"]).is_file()  # the raw transcript, git-ignored there
    assert not (ws / "archive" / "transcripts").exists() or not list((ws / "archive" / "transcripts").iterdir())
    assert git(ws, "log", "--all", "--format=%s").count("compact") == 0
    assert "compact" in git(store, "log", "-1", "--format=%s")
    assert run("undo").code == 0  # the newest change was in the personal store: undone there
    assert run("--json", "show", memory["id"]).code == 4


def test_compact_consolidates_each_store_on_its_own(ws: Path, run):
    assert run("remember", "Old goal about the migration", "--scope", "user:alice", "--category", "goal",
               "--ttl", "1d", env={"MEMCLI_NOW": "2026-01-01"}).code == 0
    assert run("remember", "Old team goal", "--category", "goal", "--ttl", "1d",
               env={"MEMCLI_NOW": "2026-01-01"}).code == 0
    plan = run("--json", "compact", "--apply", env={"MEMCLI_NOW": "2026-09-01"})
    assert plan.code == 0, plan
    assert {a["scope"] for a in plan.json()["data"]["actions"]} == {"user:alice", "project"}
    assert "compact" in git(personal_store(ws), "log", "-1", "--format=%s")
    assert "compact" in git(ws, "log", "-1", "--format=%s")
    assert git(ws, "status", "--porcelain") == "" and git(personal_store(ws), "status", "--porcelain") == ""


def test_sync_also_syncs_a_personal_store_that_has_a_remote(tmp_path: Path, run):
    team, mine = tmp_path / "team.git", tmp_path / "mine.git"
    for bare in (team, mine):
        git(tmp_path, "init", "-q", "--bare", str(bare))
    one, two = tmp_path / "one", tmp_path / "two"
    assert run("init", str(one)).code == 0
    git(one, "remote", "add", "origin", str(team))
    assert run("-w", str(one), "remember", "Personal: my editor is helix", "--scope", "user:alice").code == 0
    git(personal_store(one), "remote", "add", "origin", str(mine))
    synced = run("-w", str(one), "sync")
    assert synced.code == 0, synced
    assert "your personal store" in synced.out
    assert b"helix" not in all_objects(team) and b"helix" in all_objects(mine)
    # another machine of alice's: a clone of the team store, and her personal store from her remote
    git(tmp_path, "clone", "-q", str(team), str(two))
    assert run("-w", str(two), "recall", "helix", env={"MEMCLI_HOME": str(tmp_path / "elsewhere")}).out == ""


def test_what_the_hostile_tester_found(tmp_path: Path, ws: Path, run):
    """Each finding of the review of the personal store, as a check."""
    home = tmp_path / "dotfiles"
    home.mkdir()
    git(home, "init", "-q")
    env = {"MEMCLI_HOME": str(home / "memcli")}
    first = run("--json", "remember", "Personal: first note", "--scope", "user:alice", env=env)
    assert first.code == 0, first
    store = next((home / "memcli" / "projects").iterdir())
    subprocess.run(["rm", "-rf", str(store / ".git")], check=True)  # the store's own repository is lost
    again = run("remember", "Personal: second note", "--scope", "user:alice", env=env)
    assert again.code == 0 and "had lost its git repository" in again.err, again
    assert (store / ".git").is_dir()
    assert subprocess.run(["git", "-C", str(home), "rev-parse", "HEAD"], capture_output=True).returncode != 0
    # a supersede never moves a memory across stores
    crossed = run("supersede", first.json()["data"]["id"], "Now shared", "--scope", "project", env=env)
    assert crossed.code == 5 and "another store" in crossed.err and crossed.err.count("\n") == 1
    # a relative $MEMCLI_HOME would be another store in every folder
    relative = run("remember", "x note", "--scope", "user:alice", env={"MEMCLI_HOME": "relhome"})
    assert relative.code == 3 and "absolute path" in relative.err and relative.err.count("\n") == 1
    assert not (tmp_path / "relhome").exists()
    # a write the gates refuse makes no store
    fresh = {"MEMCLI_HOME": str(tmp_path / "fresh")}
    for args in (("key AKIAIOSFODNN7EXAMPLF",), ("x note", "--category", "notacategory"),
                 ("x note", "--all-projects", "--importance", "9")):
        refused = run("remember", *args, "--scope", "user:alice", env=fresh)
        assert refused.code in (5, 6), refused
    assert not (tmp_path / "fresh").exists()


def test_doctor_fix_never_overwrites_the_stores_own_copy(ws: Path, run):
    shared_tree(ws)
    memory_id = run("--json", "remember", "LOSE-ME v1", "--scope", "user:alice").json()["data"]["id"]
    assert run("doctor", "--fix").code == 0
    assert run("undo").code == 0  # reverses the project side of the move: the file is back in the tree
    store = personal_store(ws)
    kept = next((store / "memories").rglob(f"{memory_id}*.md"))
    kept.write_text(kept.read_text(encoding="utf-8").replace("LOSE-ME v1", "LOSE-ME v2 important edit"),
                    encoding="utf-8")
    fixed = run("doctor", "--fix")
    # the workspace has an id now: a personal file in its tree is never moved, nor served (issue 22)
    assert fixed.code == 11 and "a personal scope (user:alice) in the shared tree: never served" in fixed.out, fixed
    assert "moved" not in fixed.out
    assert "v2 important edit" in kept.read_text(encoding="utf-8")
    undone = run("undo")  # the next undoable change is not the workspace id (an init commit)
    assert "workspace id" not in undone.out
