"""`memcli compact` (workspace consolidation) and per-category default TTLs (issue 5).

Real subprocesses, real git, the real sample workspace copied into a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from rapidfuzz import fuzz

from conftest import git
from memcli import fileformat
from memcli.model import Memory, normalise_text

if TYPE_CHECKING:
    import pytest

    from cli_runner import Runner

SAMPLE = Path(__file__).parent.parent / "sample_workspace"
NOW = "2026-12-15T12:00:00Z"
AT_NOW = {"MEMCLI_NOW": NOW}
KEYS = {"actions", "conflicts", "skipped", "applied", "commit", "waiting", "retireCandidates"}  # issue 24: decay by use
BOB_EXPIRED = "01m8kkndr8ve53ct0cs7r19xee"  # user:bob, expired: alice may not compact it
PENDING_DUPLICATE = "01m7vzgc00rgkycg4ecyfcvw4n"  # pending_review, same text as an active memory
CONFLICT = {"01m1e5q4b0z58dz1kdt6f138ja", "01m6p70g00cqg6aj478swzjvgx"}


def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of sample_workspace in its own git repository, with one commit; the current workspace."""
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "sample")
    monkeypatch.setenv("MEMCLI_WORKSPACE", str(copy))
    return copy


def front(path: Path) -> dict:
    """The front-matter of a memory file, read directly."""
    return dict(fileformat.parse(path.read_bytes(), str(path)).meta)


def files(ws: Path) -> dict[str, Path]:
    """id -> file, for every parseable memory file."""
    out = {}
    for path in (ws / "memories").rglob("*.md"):
        try:
            out[front(path)["id"]] = path
        except Exception:  # noqa: BLE001 - an unparseable file has no id
            continue
    return out


def commit_config(ws: Path, text: str) -> None:
    """Replace memcli.toml (every key is optional) and commit it."""
    (ws / "memcli.toml").write_text(text, encoding="utf-8")
    git(ws, "commit", "-q", "-m", "config", "--", "memcli.toml")


# --- 1. plan, apply, diff ---------------------------------------------------------------


@pytest.mark.slow
def test_plan_changes_nothing_and_apply_makes_one_commit_matching_the_plan(tmp_path, monkeypatch, run):
    ws = sample(tmp_path, monkeypatch)
    head = git(ws, "rev-parse", "HEAD").strip()

    text = run("compact", env=AT_NOW)
    assert text.code == 0, text
    lines = text.out.splitlines()
    assert any(line.startswith("archive 01m8kknct4sgy9gwa4xbn8bt49 (project): expired 2026-10-01 — ") for line in lines)
    assert "retire 01m0f6c3m0md6nfjp4s43njmdr (task:fts5-index): superseded 105 days ago (retention 90d) — " \
           "Use the unicode61 tokenizer for every language in the FTS5 index." in lines
    assert any(line.startswith("retire 01m1ha4mc0y0vwqmyexjyy099d (task:fts5-index): rejected 102 days ago")
               for line in lines)
    assert any(line.startswith("merge 01m5css8r0jfr4kjqp65dhpch5 into 01m1k7y5m0m0xhgspbq3n6jrzr (task:fts5-index): "
                               "exact duplicate — ") for line in lines)
    assert any(line.startswith("merge 01m6bahc205grtaysveb3xckvx into 01m25fjxw0y2g3mtvhsabqnszk (task:fts5-index): "
                               "97% similar — ") for line in lines)
    assert lines[-1].startswith("plan: 3 to archive, 2 to retire, 2 to merge, 1 conflict left, 0 files skipped")
    plan = run("--json", "compact", env=AT_NOW).json()["data"]
    assert plan["applied"] is False and plan["commit"] is None
    assert git(ws, "rev-parse", "HEAD").strip() == head and git(ws, "status", "--porcelain") == ""

    applied = run("--json", "compact", "--apply", env=AT_NOW).json()["data"]
    assert applied["applied"] is True and applied["actions"] == plan["actions"]
    assert git(ws, "rev-parse", "HEAD").strip() == applied["commit"]
    assert git(ws, "rev-parse", "HEAD~1").strip() == head  # exactly one commit
    assert git(ws, "status", "--porcelain") == ""

    # The diff holds exactly the plan's files, and each status change is the plan's.
    expected: dict[str, tuple[set, str]] = {}  # id -> (status before, status after)
    for action in plan["actions"]:
        for memory_id in action["ids"]:
            expected[memory_id] = {"archive": ({"active"}, "archived"),
                                   "retire": ({"superseded", "rejected"}, "archived"),
                                   "merge": ({"active"}, "superseded")}[action["action"]]
        if action["keeper"]:
            expected[action["keeper"]] = ({"active"}, "active")
    by_id = files(ws)
    changed = git(ws, "diff", "HEAD~1", "--name-status").splitlines()
    assert sorted(changed) == sorted(f"M\t{by_id[i].relative_to(ws).as_posix()}" for i in expected)
    for memory_id, (before_status, after_status) in expected.items():
        rel = by_id[memory_id].relative_to(ws).as_posix()
        before = fileformat.parse(git(ws, "show", f"HEAD~1:{rel}").encode(), rel).meta
        after = front(by_id[memory_id])
        assert before["status"] in before_status and after["status"] == after_status, memory_id
        assert after["updatedAt"] == datetime(2026, 12, 15, 12, tzinfo=timezone.utc)
    for action in plan["actions"]:
        if action["action"] == "merge":
            keeper = front(by_id[action["keeper"]])
            assert set(action["ids"]) <= set(keeper["supersedes"])
            for memory_id in action["ids"]:
                assert front(by_id[memory_id])["supersededBy"][-1] == action["keeper"]

    # The commit: op compact, every id touched in the trailers.
    message = git(ws, "log", "-1", "--format=%B")
    assert message.startswith("memcli: compact ") and "Memcli-Op: compact" in message
    trailer = next(line for line in message.splitlines() if line.startswith("Memcli-Id: "))
    assert set(trailer.split()[1:]) == set(expected)
    assert len(expected) == 9

    # Afterwards, read from the files: nothing alice may see is expired and active, no duplicates stay active.
    after = files(ws)  # read once: a walk and a parse of every file
    metas = {i: front(p) for i, p in after.items()}
    active = [(i, meta) for i, meta in metas.items() if meta.get("status", "active") == "active"]
    for memory_id, meta in active:
        if meta["scope"] != "user:bob":
            assert not meta.get("expireAt") or meta["expireAt"] > datetime(2026, 12, 15, 12, tzinfo=timezone.utc)
    assert BOB_EXPIRED in dict(active)  # another user's personal scope is never compacted
    texts = {i: (meta["scope"], normalise_text(after[i].read_text(encoding="utf-8").split("---\n", 2)[2]))
             for i, meta in active}
    for a, (scope_a, text_a) in texts.items():
        for b, (scope_b, text_b) in texts.items():
            if a < b and scope_a == scope_b:
                assert text_a != text_b and fuzz.ratio(text_a, text_b) < 95, (a, b)

    # `memcli diff` reads as the plan said: each action named in words, with the text.
    said = run("--json", "diff", "HEAD~1..HEAD", env=AT_NOW).json()["data"]["changes"]
    named = {(c["id"], c["change"]) for c in said}
    for action in plan["actions"]:
        word = {"archive": "archived", "retire": "archived", "merge": "superseded"}[action["action"]]
        assert {(i, word) for i in action["ids"]} <= named, action
        if action["keeper"]:
            assert (action["keeper"], "merged") in named
    assert len(said) == len(expected)

    again = run("compact", "--apply", env=AT_NOW)
    assert again.code == 0 and "nothing to compact" in again.out
    assert git(ws, "rev-parse", "HEAD").strip() == applied["commit"]


# --- 2. what compact never touches, and what it keeps -----------------------------------


def test_pending_unparseable_and_conflicting_memories_are_left_alone(tmp_path, monkeypatch, run):
    ws = sample(tmp_path, monkeypatch)
    broken = ws / "memories" / "task" / "fts5-index" / "2026-11" / "01m7zzzzzzbroken.md"
    broken.write_text("---\nid: 01m7zzzzzzbroken\nstatus: [active\n---\nThe FTS5 index lives in .cache.\n",
                      encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a broken file")
    by_id = files(ws)
    pending = {i: p.read_bytes() for i, p in by_id.items() if front(p).get("status") == "pending_review"}
    assert PENDING_DUPLICATE in pending and len(pending) >= 6
    kept = {p: p.read_bytes() for p in [broken, *(by_id[i] for i in CONFLICT)]}

    plan = run("--json", "compact", env=AT_NOW)
    assert plan.code == 0, plan
    data = plan.json()["data"]
    assert set(data) == KEYS
    assert data["skipped"] == [{"path": "memories/task/fts5-index/2026-11/01m7zzzzzzbroken.md",
                                "reason": data["skipped"][0]["reason"]}]
    assert "line 3" in data["skipped"][0]["reason"]
    assert data["conflicts"] == [{"kind": "subject", "ids": sorted(CONFLICT), "scope": "task:fts5-index",
                                  "subject": "fts5.tokenizer", "reason": 'both active with subject "fts5.tokenizer"'}]
    touched = {i for a in data["actions"] for i in [*a["ids"], a["keeper"]] if i}
    assert not touched & (set(pending) | CONFLICT)
    for action in data["actions"]:
        assert set(action) == {"action", "ids", "keeper", "scope", "reason", "text"}
    text = run("compact", env=AT_NOW).out
    assert "skip memories/task/fts5-index/2026-11/01m7zzzzzzbroken.md: line 3: " in text
    assert ('conflict 01m1e5q4b0z58dz1kdt6f138ja 01m6p70g00cqg6aj478swzjvgx (task:fts5-index): both active with '
            'subject "fts5.tokenizer"; left as they are — supersede one') in text

    assert run("compact", "--apply", env=AT_NOW).code == 0
    for path, data_before in kept.items():
        assert path.read_bytes() == data_before, path
    for memory_id, data_before in pending.items():
        assert by_id[memory_id].read_bytes() == data_before, memory_id


def test_the_keeper_keeps_every_merged_provenance(tmp_path, monkeypatch, run):
    ws = sample(tmp_path, monkeypatch)
    run("compact", "--apply", env=AT_NOW)
    keeper = front(files(ws)["01m25fjxw0y2g3mtvhsabqnszk"])
    assert keeper["provenance"]["actor"] == "bob" and keeper["provenance"]["sourceType"] == "user_said"
    assert [dict(m) for m in keeper["merged"]] == [
        {"id": "01m6bahc205grtaysveb3xckvx", "sourceType": "model_derived", "actor": "claude-agent",
         "runId": "session-2026-11-01-b", "at": keeper["merged"][0]["at"]}]
    assert keeper["merged"][0]["at"].isoformat().startswith("2026-11-01T10:30:00")
    # the extras: pinned if any was, union of tags; the subject they share
    assert keeper["pinned"] is True and list(keeper["tags"]) == ["cjk", "search"]
    assert keeper["subject"] == "fts5.cjk-short-words"
    exact = front(files(ws)["01m1k7y5m0m0xhgspbq3n6jrzr"])
    assert exact["importance"] == 4 and list(exact["supersedes"]) == ["01m5css8r0jfr4kjqp65dhpch5"]
    # the record round-trips through the index and JSON
    shown = run("--json", "show", "01m25fjxw0y2g3mtvhsabqnszk").json()["data"]
    assert shown["merged"] == [{"id": "01m6bahc205grtaysveb3xckvx", "sourceType": "model_derived",
                                "actor": "claude-agent", "runId": "session-2026-11-01-b",
                                "at": "2026-11-01T10:30:00Z"}]
    # a second merge into the same keeper carries the earlier entries along
    later = {"MEMCLI_NOW": "2026-12-16T09:00:00Z"}
    made = run("--json", "remember", "Two-character Chinese words are found with instr() over the stored text, "
               "as trigram MATCH misses them!", "--scope", "task:fts5-index", "--run-id", "s-2", env=later)
    assert made.code == 0 and "near duplicate of 01m25fjxw0y2g3mtvhsabqnszk" in made.out, made
    new = made.json()["data"]["id"]
    # without the keeper's subject it is not merged, only reported
    plan = run("compact", env=later).out.splitlines()
    assert f"possible conflict 01m25fjxw0y2g3mtvhsabqnszk {new} (task:fts5-index): 97% similar but only one has " \
           "a subject; left as they are — supersede one" in plan
    assert not any(line.startswith("merge ") for line in plan)
    path = files(ws)[new]
    path.write_text(path.read_text(encoding="utf-8").replace("\ncategory: fact\n",
                                                             "\ncategory: fact\nsubject: fts5.cjk-short-words\n"),
                    encoding="utf-8")
    git(ws, "commit", "-q", "-am", "the subject, by hand")
    assert run("compact", "--apply", env=later).code == 0
    keeper = front(files(ws)["01m25fjxw0y2g3mtvhsabqnszk"])
    assert [(m["id"], m["actor"], m["runId"]) for m in keeper["merged"]] == [
        ("01m6bahc205grtaysveb3xckvx", "claude-agent", "session-2026-11-01-b"), (new, "alice", "s-2")]
    assert list(keeper["supersedes"]) == ["01m6bahc205grtaysveb3xckvx", new]


def test_scope_option_and_other_users_scopes(tmp_path, monkeypatch, run):
    ws = sample(tmp_path, monkeypatch)
    only = run("--json", "compact", "--scope", "project", env=AT_NOW).json()["data"]
    assert {a["scope"] for a in only["actions"]} == {"project"} and only["conflicts"] == []
    assert len(only["actions"]) == 2
    refused = run("compact", "--scope", "user:bob", env=AT_NOW)
    assert refused.code == 5 and refused.err.startswith("memcli: error: scope user:bob is personal to bob")
    assert len(refused.err.splitlines()) == 1
    as_bob = run("--json", "--actor", "bob", "compact", "--scope", "user:bob", env=AT_NOW).json()["data"]
    assert [a["ids"] for a in as_bob["actions"]] == [[BOB_EXPIRED]]
    assert git(ws, "status", "--porcelain") == ""


def test_a_file_holding_a_secret_is_skipped_not_committed(ws, run):
    run("remember", "The staging database is called ledger_stage.", "--ttl", "1d",
        env={"MEMCLI_NOW": "2027-01-01T00:00:00Z"})
    made = run("--json", "remember", "Deploy keys rotate monthly.", "--ttl", "1d",
               env={"MEMCLI_NOW": "2027-01-01T00:00:00Z"}).json()["data"]
    path = ws / made["memory"]["path"]
    path.write_text(path.read_text(encoding="utf-8") + "AWS key AKIAIOSFODNN7EXAMPLE\n", encoding="utf-8")
    git(ws, "commit", "-q", "-am", "hand edit")
    head = git(ws, "rev-parse", "HEAD").strip()
    later = {"MEMCLI_NOW": "2027-01-05T00:00:00Z"}
    result = run("--json", "compact", "--apply", env=later).json()["data"]
    assert [s["path"] for s in result["skipped"]] == [made["memory"]["path"]]
    assert result["skipped"][0]["reason"].startswith("not rewritten: the text holds an AWS access key")
    assert "AKIA" not in json.dumps(result)
    assert len(result["actions"]) == 1 and result["actions"][0]["ids"] != [made["id"]]
    assert git(ws, "rev-parse", "HEAD~1").strip() == head
    assert front(path)["status"] == "active"


def test_a_secret_in_a_hand_edited_run_id_is_skipped_too(ws, run):
    """The whole record is checked (gates.check_memory), not only the text and labels."""
    made = run("--json", "remember", "Deploy keys rotate monthly.", "--ttl", "1d", "--run-id", "r-1",
               env={"MEMCLI_NOW": "2027-01-01T00:00:00Z"}).json()["data"]
    path = ws / made["memory"]["path"]
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    path.write_text(path.read_text(encoding="utf-8").replace("runId: r-1", f"runId: {token}"), encoding="utf-8")
    git(ws, "commit", "-q", "-am", "hand edit")
    result = run("--json", "compact", "--apply", env={"MEMCLI_NOW": "2027-01-05T00:00:00Z"}).json()["data"]
    assert [s["path"] for s in result["skipped"]] == [made["memory"]["path"]]
    assert result["skipped"][0]["reason"].startswith("not rewritten: the run id holds a GitHub")
    assert token not in json.dumps(result) and result["actions"] == []
    assert front(path)["status"] == "active"


def test_autocommit_false_writes_the_files_without_a_commit(ws, run):
    made = run("--json", "remember", "The demo server is up until Friday.", "--ttl", "2d",
               env={"MEMCLI_NOW": "2027-01-01T00:00:00Z"}).json()["data"]
    text = (ws / "memcli.toml").read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false")
    (ws / "memcli.toml").write_text(text, encoding="utf-8")
    git(ws, "commit", "-q", "-m", "no autocommit", "--", "memcli.toml")
    head = git(ws, "rev-parse", "HEAD").strip()
    # written while autocommit is off: uncommitted by design, so compacted rather than skipped
    later = run("--json", "remember", "The demo laptop is on loan this week.", "--ttl", "2d",
                env={"MEMCLI_NOW": "2027-01-02T00:00:00Z"}).json()["data"]
    result = run("compact", "--apply", env={"MEMCLI_NOW": "2027-01-10T00:00:00Z"})
    assert result.code == 0, result
    assert "files written, not committed" in result.out.splitlines()[-1] and "0 files skipped" in result.out
    assert git(ws, "rev-parse", "HEAD").strip() == head
    assert sorted(git(ws, "status", "--porcelain").splitlines()) == sorted(
        [f" M {made['memory']['path']}", f"?? {later['memory']['path']}"])
    assert front(ws / made["memory"]["path"])["status"] == "archived"
    assert front(ws / later["memory"]["path"])["status"] == "archived"


# --- 3. near duplicates that say different things (newcomer report, problem 2) ------------

NOT_RETRY = "Do not retry the nightly export job when it fails with a timeout."
RETRY = "Do retry the nightly export job when it fails with a timeout."
PORT_2 = "The staging database listens on port 5432 on the internal network."
PORT_3 = "The staging database listens on port 5433 on the internal network."
WIKI = "The release checklist lives in the wiki under the operations section."
WIKI_TOO = "The release checklist lives in the wiki, under the operations section."


def remembered(run: Runner, text: str, *args: str, when: str = "2026-11-01T09:00:00Z") -> str:
    made = run("--json", "remember", text, *args, env={"MEMCLI_NOW": when})
    assert made.code == 0, made
    return made.json()["data"]["id"]


def test_near_duplicates_that_differ_in_numbers_or_negation_are_reported_not_merged(ws, run):
    not_retry = remembered(run, NOT_RETRY, when="2026-11-01T09:00:00Z")
    retry = remembered(run, RETRY, when="2026-11-02T09:00:00Z")
    port_2 = remembered(run, PORT_2, when="2026-11-01T09:00:00Z")
    port_3 = remembered(run, PORT_3, when="2026-11-02T09:00:00Z")
    wiki = remembered(run, WIKI, when="2026-11-01T09:00:00Z")
    wiki_too = remembered(run, WIKI_TOO, when="2026-11-02T09:00:00Z")
    head = git(ws, "rev-parse", "HEAD").strip()

    text = run("compact", env=AT_NOW)
    assert text.code == 0, text
    lines = text.out.splitlines()
    assert (f"possible conflict {not_retry} {retry} (project): 96% similar but one negates the other; "
            "left as they are — supersede one") in lines
    assert (f"possible conflict {port_2} {port_3} (project): 98% similar but the numbers differ; "
            "left as they are — supersede one") in lines
    assert any(line.startswith(f"merge {wiki_too} into {wiki} (project): 99% similar — ") for line in lines)
    assert lines[-1].startswith("plan: 1 to merge, 2 conflicts left, 0 files skipped")
    data = run("--json", "compact", env=AT_NOW).json()["data"]
    assert [a["ids"] for a in data["actions"]] == [[wiki_too]]
    assert sorted(data["conflicts"], key=lambda c: c["reason"]) == [
        {"kind": "possible", "ids": [not_retry, retry], "scope": "project", "subject": None,
         "reason": "96% similar but one negates the other"},
        {"kind": "possible", "ids": [port_2, port_3], "scope": "project", "subject": None,
         "reason": "98% similar but the numbers differ"}]

    applied = run("--json", "compact", "--apply", env=AT_NOW).json()["data"]
    assert applied["conflicts"] == data["conflicts"]
    assert git(ws, "rev-parse", "HEAD~1").strip() == head
    assert git(ws, "show", "--format=", "--name-only", "HEAD").split() == sorted(
        str(files(ws)[i].relative_to(ws)) for i in (wiki, wiki_too))
    by_id = files(ws)
    for memory_id, said in ((not_retry, NOT_RETRY), (retry, RETRY), (port_2, PORT_2), (port_3, PORT_3)):
        meta = front(by_id[memory_id])
        assert meta.get("status", "active") == "active" and said in by_id[memory_id].read_text(encoding="utf-8")
    assert front(by_id[wiki_too])["status"] == "superseded"


def test_subjects_one_set_one_unset_merge_only_as_exact_duplicates(ws, run):
    pinned = remembered(run, WIKI, "--subject", "release.checklist", "--pinned", when="2026-11-02T09:00:00Z")
    plain = remembered(run, WIKI_TOO, when="2026-11-01T09:00:00Z")
    data = run("--json", "compact", env=AT_NOW).json()["data"]
    assert data["actions"] == []
    assert data["conflicts"] == [{"kind": "possible", "ids": [plain, pinned], "scope": "project", "subject": None,
                                  "reason": "99% similar but only one has a subject"}]
    # an exact duplicate (same normalised text) merges, and the keeper takes the subject
    other = ws / "memories" / "project" / "2026-11" / "01m6baaaaaaaaaaaaaaaaaaaaa-exact.md"
    other.write_text("---\nid: 01m6baaaaaaaaaaaaaaaaaaaaa\nscope: project\ncategory: fact\nsubject: ops.wiki\n"
                     "createdAt: 2026-11-03T09:00:00Z\nupdatedAt: 2026-11-03T09:00:00Z\n---\n"
                     + WIKI_TOO.upper() + "\n", encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "an exact duplicate, by hand")
    data = run("--json", "compact", "--apply", env=AT_NOW).json()["data"]
    assert [(a["ids"], a["keeper"], a["reason"]) for a in data["actions"]] == [
        (["01m6baaaaaaaaaaaaaaaaaaaaa"], plain, "exact duplicate")]
    keeper = front(files(ws)[plain])
    assert keeper["subject"] == "ops.wiki" and list(keeper["supersedes"]) == ["01m6baaaaaaaaaaaaaaaaaaaaa"]
    assert front(files(ws)[pinned]).get("status", "active") == "active"  # a different subject now: never merged


def test_the_keeper_is_the_oldest_then_the_smallest_id(ws, run):
    same_time = "2026-11-01T09:00:00Z"
    first = remembered(run, WIKI, when=same_time)
    second = remembered(run, WIKI_TOO, when=same_time)
    assert front(files(ws)[first])["createdAt"] == front(files(ws)[second])["createdAt"]
    data = run("--json", "compact", env=AT_NOW).json()["data"]
    assert [(a["keeper"], a["ids"]) for a in data["actions"]] == [(min(first, second), [max(first, second)])]
    older = remembered(run, WIKI.replace("operations", "operation"), when="2026-10-01T09:00:00Z")
    data = run("--json", "compact", env=AT_NOW).json()["data"]
    assert [a["keeper"] for a in data["actions"]] == [older]


# --- 4. uncommitted hand edits are never committed by compact (newcomer report, problem 3) --

EXPIRING = {"MEMCLI_NOW": "2026-01-01T00:00:00Z"}
LATER = {"MEMCLI_NOW": "2026-06-01T00:00:00Z"}
DIRTY = "uncommitted edits; commit or discard them first"


def goal(run: Runner, text: str, cwd: Path | None = None) -> str:
    """An expiring goal (default TTL 30 days); its workspace-relative path."""
    made = run("--json", "remember", text, "--category", "goal", env=EXPIRING, cwd=cwd)
    assert made.code == 0, made
    return made.json()["data"]["memory"]["path"]


def test_files_with_uncommitted_edits_are_skipped_staged_unstaged_or_new(ws, run):
    staged, unstaged, clean = goal(run, "expiring goal"), goal(run, "another goal"), goal(run, "a third goal")
    for rel in (staged, unstaged):
        with (ws / rel).open("a", encoding="utf-8") as out:
            out.write("USER LINE\n")
    git(ws, "add", staged)
    untracked = ws / "memories" / "project" / "2026-01" / "01kdwx0000aaaaaaaaaaaaaaaa-by-hand.md"
    untracked.write_text("---\nid: 01kdwx0000aaaaaaaaaaaaaaaa\nscope: project\ncategory: goal\n"
                         "createdAt: 2026-01-01T00:00:00Z\nexpireAt: 2026-01-31T00:00:00Z\n---\nWritten by hand.\n",
                         encoding="utf-8")
    new = untracked.relative_to(ws).as_posix()
    head = git(ws, "rev-parse", "HEAD").strip()
    before = {rel: (ws / rel).read_bytes() for rel in (staged, unstaged, new)}

    plan = run("compact", env=LATER)
    assert plan.code == 0, plan
    for rel in sorted((staged, unstaged, new)):
        assert f"skip {rel}: {DIRTY}" in plan.out.splitlines()
    assert plan.out.splitlines()[-1].startswith("plan: 1 to archive, 0 conflicts left, 3 files skipped")

    applied = run("--json", "compact", "--apply", env=LATER).json()["data"]
    assert sorted(applied["skipped"], key=lambda s: s["path"]) == [
        {"path": rel, "reason": DIRTY} for rel in sorted((staged, unstaged, new))]
    assert [a["action"] for a in applied["actions"]] == ["archive"]
    assert git(ws, "rev-parse", "HEAD~1").strip() == head
    assert git(ws, "show", "--format=", "--name-only", "HEAD").split() == [clean]
    assert "USER LINE" not in git(ws, "show", "HEAD")
    for rel, data in before.items():  # left exactly as the person left them, staged or not
        assert (ws / rel).read_bytes() == data
    status = git(ws, "status", "--porcelain").splitlines()
    assert sorted(status) == sorted([f"M  {staged}", f" M {unstaged}", f"?? {new}"])
    assert "edited" not in run("diff", "HEAD~1..HEAD").out

    # committed by the person, the files are compacted as usual
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "my edits")
    done = run("--json", "compact", "--apply", env=LATER).json()["data"]
    assert done["skipped"] == [] and sorted(i for a in done["actions"] for i in a["ids"]) == sorted(
        front(ws / rel)["id"] for rel in (staged, unstaged, new))
    assert git(ws, "status", "--porcelain") == ""


def test_uncommitted_files_of_other_users_are_not_named(shared_tree_ws, ws, run):
    mine = goal(run, "expiring goal")
    made = run("--json", "--actor", "bob", "remember", "Bob private plan", "--scope", "user:bob", "--ttl", "1d",
               env=EXPIRING).json()["data"]
    bobs = made["memory"]["path"]
    for rel in (mine, bobs):
        with (ws / rel).open("a", encoding="utf-8") as out:
            out.write("USER LINE\n")
    data = run("--json", "compact", env=LATER).json()["data"]
    assert data["skipped"] == [{"path": mine, "reason": DIRTY}] and data["actions"] == []
    assert "bob" not in json.dumps(data)
    as_bob = run("--json", "--actor", "bob", "compact", env=LATER).json()["data"]
    assert as_bob["skipped"] == [{"path": mine, "reason": DIRTY}, {"path": bobs, "reason": DIRTY}]


def test_uncommitted_edits_are_found_when_the_workspace_is_a_sub_folder(project, run):
    assert run("init", str(project / "agent-memory")).code == 0
    where = project / "agent-memory"
    edited, clean = goal(run, "expiring goal", cwd=where), goal(run, "another goal", cwd=where)
    with (where / edited).open("a", encoding="utf-8") as out:
        out.write("USER LINE\n")
    data = run("--json", "compact", "--apply", env=LATER, cwd=where).json()["data"]
    assert data["skipped"] == [{"path": edited, "reason": DIRTY}]
    assert [a["ids"] for a in data["actions"]] == [[front(where / clean)["id"]]]
    assert git(project, "show", "--format=", "--name-only", "HEAD").split() == [f"agent-memory/{clean}"]


# --- per-category default TTLs -----------------------------------------------------------

JAN = {"MEMCLI_NOW": "2027-01-01T00:00:00Z"}


def expiry(run: Runner, *args: str, env: dict[str, str] = JAN) -> str | None:
    result = run("--json", "remember", *args, env=env)
    assert result.code == 0, result
    return result.json()["data"]["memory"]["expireAt"]


def test_ttl_defaults_per_category(ws, run):
    assert expiry(run, "Ship the FTS5 index.", "--category", "goal") == "2027-01-31T00:00:00Z"
    assert expiry(run, "Paired with bob on the lock bug.", "--category", "episode") == "2027-04-01T00:00:00Z"
    assert expiry(run, "The CI runs on two cores.", "--category", "fact") is None
    assert expiry(run, "Ship the doctor command.", "--category", "goal", "--ttl", "7d") == "2027-01-08T00:00:00Z"
    assert expiry(run, "Ship undo.", "--category", "goal", "--expire-at", "2027-06-01") == "2027-06-01T00:00:00Z"
    old = run("--json", "remember", "Ship import.", "--category", "goal", "--ttl", "1y", env=JAN).json()["data"]["id"]
    later = {"MEMCLI_NOW": "2027-02-01T00:00:00Z"}
    replaced = run("--json", "supersede", old, "Ship import and export.", env=later).json()["data"]
    assert replaced["memory"]["category"] == "goal" and replaced["memory"]["expireAt"] == "2027-03-03T00:00:00Z"
    assert "[ttl]" in (ws / "memcli.toml").read_text(encoding="utf-8")  # init writes the defaults with a comment


def test_ttl_table_overrides_and_never(ws, run):
    commit_config(ws, '[ttl]\ngoal = "7d"\nfact = "1y"\nepisode = "never"\n')
    assert expiry(run, "Ship the FTS5 index.", "--category", "goal") == "2027-01-08T00:00:00Z"
    assert expiry(run, "The CI runs on two cores.", "--category", "fact") == "2028-01-01T00:00:00Z"
    assert expiry(run, "Paired with bob on the lock bug.", "--category", "episode") is None
    assert expiry(run, "Prefer small commits.", "--category", "preference") is None


def test_bad_ttl_and_compact_settings_are_one_line_errors(ws, run):
    for table, needle in (('[ttl]\ngoal = "soon"\n', "[ttl] goal: not a duration"),
                          ('[ttl]\nmood = "1d"\n', "[ttl] 'mood' is not a category"),
                          ("[ttl]\ngoal = 30\n", "[ttl] goal has the wrong type"),
                          ('[compact]\nretention = "forever"\n', "[compact] retention: not a duration"),
                          ("[compact]\nnear_duplicate = 101\n", "[compact] near_duplicate must be from 50 to 100"),
                          ("[compact]\nnear_duplicate = 0\n", "[compact] near_duplicate must be from 50 to 100"),
                          ("[compact]\nnear_duplicate = 49\n", "[compact] near_duplicate must be from 50 to 100"),
                          ("[gates]\nnear_duplicate = -1\n", "[gates] near_duplicate must be from 0 to 100")):
        (ws / "memcli.toml").write_text(table, encoding="utf-8")
        result = run("remember", "Anything at all.", "--category", "goal")
        assert result.code == 3 and needle in result.err, (table, result)
        assert len(result.err.splitlines()) == 1 and result.err.startswith("memcli: error: ")
        assert run("compact").code == 3
    assert len(git(ws, "log", "--format=%H").split()) == 1  # nothing was written


def test_restored_json_lines_records_get_no_default_ttl(ws, run, tmp_path):
    record = {"id": "01m8kkrj8zmesxb4r4v0aaaaaa", "scope": "user:alice", "category": "goal", "subject": None,
              "status": "active", "importance": 3, "pinned": False, "createdAt": "2026-11-02T09:00:00Z",
              "updatedAt": "2026-11-02T09:00:00Z", "expireAt": None,
              "provenance": {"sourceType": "user_said", "actor": "alice", "runId": None, "at": "2026-11-02T09:00:00Z"},
              "tags": [], "paths": [], "supersedes": [], "supersededBy": [], "review": None,
              "text": "Replace the scanning retriever with the FTS5 index."}
    source = tmp_path / "export.jsonl"
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = run("import", str(source), env=JAN)
    assert result.code == 0, result
    shown = run("--json", "show", "01m8kkrj8zmesxb4r4v0aaaaaa").json()["data"]
    assert shown["category"] == "goal" and shown["expireAt"] is None


# --- the pure planner ----------------------------------------------------------------------


def memory(memory_id: str, text: str, day: int, **fields) -> Memory:
    from memcli.model import Provenance

    at = datetime(2026, 11, day, tzinfo=timezone.utc)
    return Memory(id=memory_id, scope=fields.pop("scope", "project"), body=text + "\n", created_at=at, updated_at=at,
                  provenance=Provenance("user_said", "alice", f"run-{memory_id}", at), **fields)


def test_planner_subjects_decide_merges_and_conflicts():
    from datetime import timedelta

    from memcli.policy.consolidate import Settings, plan

    now = datetime(2026, 12, 15, tzinfo=timezone.utc)
    settings = Settings(timedelta(days=90), "90d", 95)
    same = "Deploys go out on Tuesdays after the standup."
    got = plan([memory("aaa1", same, 1, subject="deploy.day"), memory("aaa2", same, 2, subject="release.day"),
                memory("aaa3", same, 3, subject="Deploy.Day", expire_at=now + timedelta(days=3)),
                memory("aaa4", same, 4, scope="global"), memory("aaa5", same, 5, status="pending_review")],
               settings, now)
    # aaa2's subject differs from the keeper's: never merged; aaa3 shares it (case aside): merged, no conflict
    assert [(a.action, a.ids, a.keeper) for a in got.actions] == [("merge", ["aaa3"], "aaa1")]
    assert got.conflicts == [] and "expireAt" not in got.changes["aaa1"]  # the keeper had none: it keeps none
    assert set(got.changes) == {"aaa1", "aaa3"}  # other scopes and pending memories are not compared
    apart = plan([memory("bbb1", "Use pnpm.", 1, subject="js.pm"), memory("bbb2", "Use npm.", 2, subject="JS.pm")],
                 settings, now)
    assert apart.actions == [] and [(c.ids, c.subject) for c in apart.conflicts] == [(["bbb1", "bbb2"], "js.pm")]
    limited = plan([memory("ccc1", same, 1, expire_at=now + timedelta(days=1)),
                    memory("ccc2", same.upper(), 2, expire_at=now + timedelta(days=9), importance=5)], settings, now)
    assert limited.changes["ccc1"]["expireAt"] == now + timedelta(days=9) and limited.changes["ccc1"]["importance"] == 5


def test_transcript_options_and_workspace_options_do_not_mix(ws, run):
    alone = run("compact", "--summarizer", "cat")
    assert alone.code == 2 and "need --transcript" in alone.err and alone.out == ""
    scoped = run("compact", "--transcript", "session.jsonl", "--scope", "project")
    assert scoped.code == 2 and "--scope does not apply to --transcript" in scoped.err


def test_planner_merges_only_near_duplicates_that_say_the_same_thing():
    from datetime import timedelta

    from memcli.policy.consolidate import Settings, differences, plan

    assert differences("不要在周五发布大版本，非常危险", "要在周五发布大版本，非常危险") == ["one negates the other"]
    assert differences("这个发布非常慢", "发布非常慢") == []  # 非常 ("very") does not negate; 这 个 are particles
    assert differences("Don't push with --force.", "Do not push with --force.") == []
    assert differences("Never push with --force.", "Never push with --force-with-lease.") == [
        "the names, paths or flags differ"]
    assert differences("Run `make test` first.", "Run `make lint` first.") == ["the names, paths or flags differ"]
    assert differences("Logs live in /var/log/app.", "Logs live in /var/log/api.") == [
        "the names, paths or flags differ"]
    assert differences("Pin Python 3.11 in CI.", "Pin python 3.11 in CI") == []  # case and final stop aside
    assert differences("Pin Python 3.11 in CI.", "Pin Python 3.12 in CI.") == ["the numbers differ"]
    assert differences("Use os.path here.", "Use os.walk here.") == ["the names, paths or flags differ"]

    now = datetime(2026, 12, 15, tzinfo=timezone.utc)
    settings = Settings(timedelta(days=90), "90d", 90)
    got = plan([memory("ddd1", "Timeouts are 30 seconds on the staging API gateway.", 1),
                memory("ddd2", "Timeouts are 60 seconds on the staging API gateway.", 2),
                memory("ddd3", "Timeouts are 30 seconds on the staging API gateway!", 3),
                memory("ddd4", "Timeouts are 30 seconds on the staging API gateways.", 4)], settings, now)
    assert [(a.ids, a.keeper, a.reason) for a in got.actions] == [(["ddd3", "ddd4"], "ddd1",
                                                                    "exact duplicate, 99% similar")]
    assert [(c.kind, c.ids, c.reason) for c in got.conflicts] == [
        ("possible", ["ddd1", "ddd2"], "98% similar but the numbers differ")]
    # same subject and different numbers: one subject conflict, not reported twice
    twice = plan([memory("eee1", "The API listens on 8080.", 1, subject="api.port"),
                  memory("eee2", "The API listens on 8081.", 2, subject="api.port")], settings, now)
    assert [(c.kind, c.ids, c.reason) for c in twice.conflicts] == [
        ("subject", ["eee1", "eee2"], 'both active with subject "api.port"')]


# --- 4. near duplicates differ in any content word (newcomer report 2, problem 2) -----------

CACHE_ON = "Enable the response cache in production builds of the web application."
CACHE_OFF = "Disable the response cache in production builds of the web application."
OPPOSITES = [  # each pair: near duplicates (ratio >= 80) whose one content word differs
    ("The feature flag for the new billing page is true in staging.",
     "The feature flag for the new billing page is false in staging.", "true / false"),
    ("Run the database migrations before deploying the new release.",
     "Run the database migrations after deploying the new release.", "before / after"),
    ("The search cluster keeps three replicas of every shard.",
     "The search cluster keeps four replicas of every shard.", "three / four"),
    ("Application logs are kept for thirty days in the archive bucket.",
     "Application logs are kept for ninety days in the archive bucket.", "thirty / ninety"),
    ("Set the minimum connection pool size for the worker processes.",
     "Set the maximum connection pool size for the worker processes.", "minimum / maximum"),
    ("Increase the request timeout of the payment gateway client.",
     "Decrease the request timeout of the payment gateway client.", "increase / decrease"),
    ("Ask Alice before changing the deployment pipeline configuration.",
     "Ask Alina before changing the deployment pipeline configuration.", "alice / alina"),
    ("Copy the nightly backup archive to the storage server.",
     "Copy the nightly backup archive from the storage server.", "— / from"),
    ("缓存在生产环境中启用", "缓存在生产环境中禁用", "启 / 禁"),
]
SAME = [  # near duplicates that say the same thing: merged
    ("The metrics dashboard lives in Grafana under the Platform folder.",
     "The metrics dashboards live in Grafana under the Platform folder."),  # plural, verb form
    ("The search index is rebuilt nightly by the cron worker.",
     "The search index is rebuilt by the cron worker nightly."),  # word order
    ("The release checklist lives in a wiki page of the operations team.",
     "The release checklist lives in the wiki page of an operations team."),  # articles
    ("Don't push with --force to the shared branches.", "Do not push with --force to the shared branches."),
    ("We cannot push to main directly.", "We can't push to main directly."),
    ("发布流程在周二的站会之后", "发布流程在周二站会之后"),  # a particle
]


def test_near_duplicates_with_a_different_word_are_possible_conflicts(ws, run):
    on = remembered(run, CACHE_ON, when="2026-11-01T09:00:00Z")
    off = remembered(run, CACHE_OFF, when="2026-11-02T09:00:00Z")
    head = git(ws, "rev-parse", "HEAD").strip()
    text = run("compact", "--apply", env=AT_NOW)
    assert text.code == 0, text
    assert (f"possible conflict {on} {off} (project): 96% similar but the words differ (enable / disable); "
            "left as they are — supersede one") in text.out.splitlines()
    assert git(ws, "rev-parse", "HEAD").strip() == head  # nothing merged: no commit
    assert {front(p).get("status", "active") for p in files(ws).values()} == {"active"}


def test_planner_merges_near_duplicates_only_when_their_content_words_agree():
    from datetime import timedelta

    from memcli.policy.consolidate import Settings, differences, plan

    now = datetime(2026, 12, 15, tzinfo=timezone.utc)
    settings = Settings(timedelta(days=90), "90d", 80)
    for first, second, words in OPPOSITES:
        assert fuzz.ratio(normalise_text(first), normalise_text(second)) >= 80, (first, second)
        got = plan([memory("fff1", first, 1), memory("fff2", second, 2)], settings, now)
        assert got.actions == [], first
        [conflict] = got.conflicts
        assert conflict.kind == "possible" and conflict.reason.endswith(f"but the words differ ({words})"), conflict
    for first, second in SAME:
        assert fuzz.ratio(normalise_text(first), normalise_text(second)) >= 80, (first, second)
        assert differences(first, second) == [], (first, second)
        got = plan([memory("ggg1", first, 1), memory("ggg2", second, 2)], settings, now)
        assert [(a.action, a.ids, a.keeper) for a in got.actions] == [("merge", ["ggg2"], "ggg1")], first
    # the other reasons still come first, and the word list is capped at three per side
    assert differences("Keep 3 replicas of the shard.", "Keep 4 replicas of the shard.") == ["the numbers differ"]
    assert differences("Use red green blue cyan paint.", "Use paint.") == [
        "the words differ (red, green, blue, … / —)"]
