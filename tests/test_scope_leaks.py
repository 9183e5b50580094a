"""Another user's personal memories never reach the caller: not through problems, not through the trail.

Newcomer report 1, problems 1 and 4. A file in ``memories/user/bob/`` that cannot be
served is absent for alice (not counted, not named, its YAML error never quoted) in every
command's warnings, ``doctor``, ``stats``, ``compact`` and ``index status``; a duplicate id
never names a path the reader may not see, and ``history`` of a duplicated id lists only
the reader's files. ``log`` shows a commit that changed a shared memory and one of bob's,
with only what alice may see; a commit about bob's memories alone stays hidden.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import git, shared_tree

BOB = {"MEMCLI_ACTOR": "bob"}
CAROL = {"MEMCLI_ACTOR": "carol"}
#: Words of bob's private text, slug and YAML value: none may reach alice.
SECRET_TEXT = "I am interviewing with Acme next week, do not tell alice"
BOB_WORDS = ("user/bob", "user:bob", "interviewing", "next-week", "next week", "salary", "250k")


def leaks(result, words=BOB_WORDS) -> list[str]:
    """The words of ``words`` found in a result's stdout or stderr (case ignored)."""
    both = (result.out + result.err).lower()
    return [w for w in words if w.lower() in both]


def commit_by_hand(ws: Path, message: str, author: str = "bob") -> None:
    git(ws, "add", "memories")
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", message], check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": author})


@pytest.fixture
def ws(ws):
    """Alice and bob share one tree: a workspace without an id keeps personal scopes in it
    (with an id, each person's go to their own store and never reach the other)."""
    return shared_tree(ws)


@pytest.fixture
def broken(ws, run):
    """Bob's private memory made unreadable by a duplicate key holding a value (the report's step),
    plus one unreadable project file that alice must still hear about."""
    made = run("--json", "remember", SECRET_TEXT, "--scope", "user:bob", env=BOB)
    assert made.code == 0, made
    path = next((ws / "memories" / "user" / "bob").rglob("*.md"))
    text = path.read_text(encoding="utf-8")
    assert "importance: 3\n" in text
    path.write_text(text.replace("importance: 3\n", 'importance: 3\nimportance: "my salary is 250k"\n'),
                    encoding="utf-8")
    (ws / "memories" / "project").mkdir(exist_ok=True)
    (ws / "memories" / "project" / "broken-shared.md").write_text("---\nstatus: [\n---\nShared note.\n",
                                                                  encoding="utf-8")
    return {"id": made.json()["data"]["id"], "path": path}


COMMANDS = [
    ["list"], ["recall", "acme"], ["recall", "--fuzzy", "acme"], ["context"], ["stats"], ["compact"],
    ["doctor"], ["doctor", "--fix"], ["index", "status"], ["review"], ["log"], ["export", "--format", "jsonl"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
@pytest.mark.slow
def test_another_users_unreadable_file_is_not_named_to_alice(broken, run, args):
    for json_flag in ([], ["--json"]):
        result = run(*json_flag, *args)
        assert result.code in (0, 11), result
        assert not leaks(result), (args, json_flag, result)
        assert broken["id"] not in result.out + result.err
        if args[0] not in ("doctor", "log", "review", "index"):  # the shared unreadable file is still reported
            assert "broken-shared.md" in result.out + result.err, (args, json_flag, result)


def test_a_session_start_hook_names_no_file_of_bob(broken, run, ws):
    hook = json.dumps({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(ws)})
    result = run("hook", "claude", "session-start", input=hook)
    assert result.code == 0 and not leaks(result) and broken["id"] not in result.out + result.err, result
    assert "broken-shared.md" in result.err


def test_alice_counts_and_lists_only_her_problems(broken, run):
    stats = run("--json", "stats")
    assert stats.code == 0, stats
    data = stats.json()
    assert data["data"]["unreadable"] == 1
    assert data["data"]["index"]["problems"] == 1
    assert [w for w in data["warnings"] if "skipped" in w] and not leaks(stats)
    text = run("stats")
    assert re.search(r"unreadable files\s+1\b", text.out), text
    doctor = run("--json", "doctor")
    assert doctor.code == 11
    assert [p["path"] for p in doctor.json()["data"]["problems"]] == ["memories/project/broken-shared.md"]
    plain = run("doctor")
    assert plain.code == 11 and "broken-shared.md" in plain.out and not leaks(plain), plain
    status = run("--json", "index", "status")
    assert status.json()["data"]["problems"] == 1
    compact = run("--json", "compact")
    assert [s["path"] for s in compact.json()["data"]["skipped"]] == ["memories/project/broken-shared.md"]


def test_only_bobs_problem_leaves_alice_a_clean_doctor(broken, run, ws):
    (ws / "memories" / "project" / "broken-shared.md").unlink()
    doctor = run("doctor")
    assert doctor.code == 0, doctor
    lines = doctor.err.strip().splitlines()  # then the semantic retriever's line (SPEC.md section 5)
    assert lines[0] == "all memory files are readable" and lines[1:] == [line for line in lines[1:] if line.startswith(
        "semantic search: ")] and not leaks(doctor), doctor
    assert run("--json", "doctor").json()["data"]["problems"] == []
    assert run("--json", "stats").json()["data"]["unreadable"] == 0
    listed = run("list")
    assert listed.code == 0 and listed.err == "", listed


def test_alice_cannot_reach_bobs_broken_file_by_id(broken, run):
    for args in (["show", broken["id"]], ["show", broken["id"][:8]], ["history", broken["id"]]):
        result = run(*args)
        assert result.code == 4, (args, result)  # not found, exactly as for an id that does not exist
        assert not leaks(result), (args, result)


def test_bob_still_sees_his_own_problem(broken, run):
    doctor = run("--json", "doctor", env=BOB)
    assert doctor.code == 11
    problems = {p["path"]: p["reason"] for p in doctor.json()["data"]["problems"]}
    bob_path = broken["path"].relative_to(broken["path"].parents[4]).as_posix()
    assert set(problems) == {bob_path, "memories/project/broken-shared.md"}
    assert "my salary is 250k" in problems[bob_path]
    assert run("--json", "stats", env=BOB).json()["data"]["unreadable"] == 2
    listed = run("list", env=BOB)
    assert "interviewing" in listed.err  # his warning names his file
    shown = run("show", broken["id"], env=BOB)
    assert shown.code == 11 and "duplicate key" in shown.err, shown
    assert not leaks(run("doctor", env=CAROL))


@pytest.fixture
def namesake(ws, run):
    """Alice's project memory, and a file with the same id in bob's folder, committed by hand."""
    made = run("--json", "remember", "Aardvark release checklist lives in docs")
    assert made.code == 0, made
    memory_id = made.json()["data"]["id"]
    shared = next((ws / "memories" / "project").rglob(f"{memory_id}*.md"))
    folder = ws / "memories" / "user" / "bob" / shared.parent.name
    folder.mkdir(parents=True)
    copy = folder / f"{memory_id}-bob-secret-roadmap.md"
    text = shared.read_text(encoding="utf-8").replace("scope: project", "scope: user:bob")
    copy.write_text(text.replace("Aardvark release checklist lives in docs", "Bob secret roadmap: quit in May"),
                    encoding="utf-8")
    commit_by_hand(ws, "bob keeps a copy")
    copy.write_text(copy.read_text(encoding="utf-8") + "More of the roadmap.\n", encoding="utf-8")
    commit_by_hand(ws, "bob edits his copy")
    return {"id": memory_id, "shared": shared, "copy": copy}


ROADMAP = ("user/bob", "roadmap", "quit in may", "bob keeps", "bob edits")


@pytest.mark.slow
def test_duplicate_id_with_a_personal_file_stays_out_of_alice_view(namesake, run, ws):
    memory_id = namesake["id"]
    for args in (["list"], ["doctor"], ["stats"], ["compact"], ["context"], ["show", memory_id],
                 ["recall", "aardvark"], ["history", memory_id], ["log", memory_id], ["log"],
                 ["diff", "HEAD~3..HEAD"]):
        for json_flag in ([], ["--json"]):
            result = run(*json_flag, *args)
            assert result.code == 0, (args, result)
            assert not leaks(result, ROADMAP), (args, json_flag, result)
    history = run("--json", "history", memory_id).json()["data"]
    assert {v["path"] for v in history["versions"]} == {namesake["shared"].relative_to(ws).as_posix()}
    assert [v["op"] for v in history["versions"]] == ["remember"]
    # bob hears about his own file, and may see the project path it collides with
    doctor = run("doctor", env=BOB)
    assert doctor.code == 11 and "user/bob" in doctor.out and f"duplicate id {memory_id}" in doctor.out, doctor
    assert "memories/project/" in doctor.out


def test_duplicate_id_never_names_another_users_path(ws, run):
    """Bob's file holds the id (its path sorts first); carol's copy loses and is told why, without bob's path."""
    made = run("--json", "remember", "Bob secret roadmap: quit in May", "--scope", "user:bob", env=BOB)
    memory_id = made.json()["data"]["id"]
    bobs = next((ws / "memories" / "user" / "bob").rglob("*.md"))
    folder = ws / "memories" / "user" / "carol" / bobs.parent.name
    folder.mkdir(parents=True)
    text = bobs.read_text(encoding="utf-8").replace("scope: user:bob", "scope: user:carol")
    (folder / f"{memory_id}.md").write_text(text.replace("Bob secret roadmap: quit in May", "Carol note"),
                                            encoding="utf-8")
    for args in (["doctor"], ["--json", "doctor"], ["list"], ["show", memory_id], ["--json", "stats"]):
        result = run(*args, env=CAROL)
        assert not leaks(result, ROADMAP), (args, result)
    doctor = run("doctor", env=CAROL)
    assert doctor.code == 11
    assert f"duplicate id {memory_id} (also in a file of another user's personal scope)" in doctor.out, doctor
    shown = run("show", memory_id, env=CAROL)
    assert shown.code == 11 and "another user's personal scope" in shown.err, shown
    for reader in ({}, BOB):  # alice hears of neither file; bob sees his memory served and no problem
        result = run("--json", "doctor", env=reader)
        assert result.code == 0 and result.json()["data"]["problems"] == [], result
        assert "carol" not in result.out + result.err


# --- problem 4: log ----------------------------------------------------------------------


@pytest.fixture
def mixed(ws, run):
    """The report's reproduction: one compact commit archives a project memory and one of bob's."""
    bob = run("--json", "remember", "Bob private plan", "--scope", "user:bob", "--ttl", "1d",
              env={**BOB, "MEMCLI_NOW": "2026-01-01"})
    alice = run("--json", "remember", "Aardvark team goal", "--category", "goal", env={"MEMCLI_NOW": "2026-01-01"})
    assert bob.code == 0 and alice.code == 0, (bob, alice)
    compact = run("--json", "compact", "--apply", env={**BOB, "MEMCLI_NOW": "2026-06-01"})
    assert compact.code == 0, compact
    commit = compact.json()["data"]["commit"]
    assert "user:bob" in git(ws, "log", "-1", "--format=%B", commit)  # the commit really is mixed
    return {"bob": bob.json()["data"]["id"], "alice": alice.json()["data"]["id"], "commit": commit}


PLAN = ("user:bob", "user/bob", "bob private plan", "private")


@pytest.mark.slow
def test_log_shows_a_mixed_commit_with_only_what_alice_may_see(mixed, run):
    for args in (["log"], ["log", mixed["alice"]]):
        entries = run("--json", *args).json()["data"]["entries"]
        assert [e["trailers"]["op"] for e in entries if e["trailers"].get("op") != "init"] == ["compact", "remember"]
        top = entries[0]
        assert top["commit"] == mixed["commit"]
        assert top["trailers"]["id"] == mixed["alice"]
        assert top["trailers"]["scope"] == "project"
        assert top["trailers"]["actor"] == "bob"
        assert top["text"] == f"- {mixed['alice']}: Aardvark team goal"
        assert top["subject"] == f"memcli: compact {mixed['alice']} (project) by bob"
        for result in (run(*args), run("--json", *args)):
            assert result.code == 0, result
            assert not leaks(result, PLAN) and mixed["bob"] not in result.out + result.err, (args, result)
            assert mixed["commit"][:10] in result.out


def test_log_keeps_hiding_commits_about_bobs_memories_alone(mixed, run, ws):
    bobs_own = git(ws, "log", "--format=%H", "--", "memories/user/bob").split()
    assert len(bobs_own) == 2  # his remember, and the mixed compact
    entries = run("--json", "log").json()["data"]["entries"]
    assert bobs_own[-1] not in {e["commit"] for e in entries}
    assert run("log", mixed["bob"]).code == 4


def test_bob_sees_the_whole_mixed_commit(mixed, run):
    top = run("--json", "log", env=BOB).json()["data"]["entries"][0]
    assert sorted(top["trailers"]["id"].split()) == sorted([mixed["alice"], mixed["bob"]])
    assert set(top["trailers"]["scope"].split()) == {"project", "user:bob"}
    assert "Bob private plan" in top["text"]
    assert len(run("--json", "log", env=BOB).json()["data"]["entries"]) == 4


def test_history_and_diff_agree_with_log(mixed, run, ws):
    history = run("--json", "history", mixed["alice"])
    assert history.code == 0 and not leaks(history, PLAN), history
    assert [v["commit"] for v in history.json()["data"]["versions"]][-1] == mixed["commit"]
    diff = run("--json", "diff", f"{mixed['commit']}~1..{mixed['commit']}")
    assert diff.code == 0 and not leaks(diff, PLAN) and mixed["bob"] not in diff.out, diff
    assert mixed["alice"] in diff.out
    assert mixed["bob"] in run("diff", f"{mixed['commit']}~1..{mixed['commit']}", env=BOB).out


def test_the_count_of_unreadable_files_leaves_out_another_users_folder(ws, run):
    # a read names the first five unreadable files and counts the rest without making each one
    # (issue 21: thousands of problem rows cost 13 MB a read); bob's folder is neither named nor counted
    for folder, count in (("project/2026-11", 8), ("user/bob/2026-11", 4)):
        target = ws / "memories" / folder
        target.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            (target / f"broken{i}.md").write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    result = run("recall", "anything")
    assert result.code == 0, result
    named = re.findall(r"skipped memories/(\S+?):", result.err)
    assert len(named) == 5 and all(n.startswith("project/") for n in named), result.err
    assert "skipped 3 more unreadable files" in result.err and "bob" not in result.err, result.err


#: Path segments for the count below: empty, an actor's name and look-alikes, non-ASCII, GLOB
#: and LIKE characters, a folder named like a file.
SEGMENTS = ["", "user", "users", "alice", "alicex", "ali", "bob", "zoë", "a%b", "a_b", "a*[?", "x.md", "2026-11"]


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(st.lists(st.sampled_from(SEGMENTS), min_size=0, max_size=5), min_size=1, max_size=30),
       actor=st.sampled_from(["alice", "zoë", "a%b", "a_b", "a*[?", "bob"]))
@pytest.mark.slow
def test_the_sql_count_of_unreadable_files_is_the_python_rule(tmp_path_factory, paths, actor) -> None:
    """``IndexDB.problem_count`` (SQL, for speed) counts exactly the rows ``others_folder`` keeps."""
    from memcli.index.db import IndexDB
    from memcli.store.files import MemoryFiles, others_folder

    folder = tmp_path_factory.mktemp("count")
    index = IndexDB(MemoryFiles(folder), folder / "index.sqlite3")
    try:
        rows = sorted({"/".join(["memories", *parts, "f.md"]) for parts in paths})
        index.db.executemany("INSERT INTO docs (path, changed_ns, size, hash, error) VALUES (?, 0, 0, '', 'bad')",
                             [(p,) for p in rows])
        assert index.problem_count(actor) == sum(1 for p in rows if not others_folder(p, actor))
        assert index.problem_count(None) == len(rows)
    finally:
        index.close()
