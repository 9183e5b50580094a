"""The read side of the audit trail (issue 5): log, history, show --at, diff.

Real git repositories and the real CLI in subprocesses; the clock is frozen with
MEMCLI_NOW and moved between steps, so every commit has a known time.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import git
from memcli.changes import Step, Version, classify
from memcli.model import Memory

if TYPE_CHECKING:
    from cli_runner import Runner

T = "2027-01-0{}T00:00:00Z"


def at(day: int) -> dict[str, str]:
    return {"MEMCLI_NOW": T.format(day)}


def remember(run, *args: str, day: int, actor: str = "alice") -> str:
    result = run("--json", "--actor", actor, "remember", *args, env=at(day))
    assert result.code == 0, result
    return result.json()["data"]["id"]


def file_of(ws: Path, memory_id: str) -> Path:
    (path,) = (ws / "memories").rglob(f"{memory_id}*.md")
    return path


def hand_commit(ws: Path, message: str, day: int) -> None:
    """Commit every change with plain git, as a person would (no Memcli-* trailers)."""
    stamp = T.format(day)
    subprocess.run(["git", "-C", str(ws), "commit", "-qam", message], check=True, capture_output=True,
                   env={**__import__("os").environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})


@pytest.fixture
def scripted(ws, run):
    """remember A; remember C with a 2-day TTL; remember B as model_derived (pending);
    bob approves B; A superseded by A2; B's body edited by hand and committed with git.

    Days: A 1, C 2 (expires on day 4), B 3, approve 5, supersede 6, hand edit 7.
    HEAD~3..HEAD is then: approve, supersede, hand edit; C expires inside it.
    """
    ids = {"A": remember(run, "Use pnpm, not npm, in this repo", day=1)}
    ids["C"] = remember(run, "Feature freeze until the 2.0 release ships", "--ttl", "2d", day=2)
    ids["B"] = remember(run, "Deploys go through the staging cluster first", "--source-type", "model_derived",
                        day=3)
    result = run("--actor", "bob", "approve", ids["B"], "--reason", "matches the runbook", env=at(5))
    assert result.code == 0, result
    result = run("--json", "supersede", ids["A"], "Use pnpm 9, not npm or yarn", "--run-id", "run-42", env=at(6))
    assert result.code == 0, result
    ids["A2"] = result.json()["data"]["id"]
    path = file_of(ws, ids["B"])
    path.write_text(path.read_text(encoding="utf-8").replace("staging cluster", "canary cluster"), encoding="utf-8")
    hand_commit(ws, "Reword the deploy rule", day=7)
    return ids


def test_diff_range_names_each_change_in_words_with_the_text(ws, run, scripted):
    ids = scripted
    result = run("diff", "HEAD~3..HEAD", env=at(8))
    assert result.code == 0, result
    out = result.out
    assert f"approved {ids['B']} (project) by bob" in out and "(reason: matches the runbook)" in out
    assert f"superseded {ids['A']} (project) by alice: by {ids['A2']}" in out
    assert f"added {ids['A2']} (project) by alice" in out
    assert f"edited by hand {ids['B']} (project) by Test User: text edited" in out
    assert "    - Deploys go through the staging cluster first" in out
    assert "    + Deploys go through the canary cluster first" in out
    assert f"expired {ids['C']} (project): expireAt 2027-01-04T00:00:00Z passed" in out
    # each change is followed by the memory's text, indented
    lines = out.splitlines()
    assert lines[lines.index(next(line for line in lines if line.startswith(f"superseded {ids['A']}"))) + 1] \
        == "    Use pnpm, not npm, in this repo"
    assert lines[lines.index(next(line for line in lines if line.startswith(f"expired {ids['C']}"))) + 1] \
        == "    Feature freeze until the 2.0 release ships"
    # A was added before the range: not named as added here
    assert f"added {ids['A']}" not in out and f"proposed {ids['B']}" not in out
    # grouped by memory: B's two changes are next to each other
    b_lines = [i for i, line in enumerate(lines) if ids["B"] in line and not line.startswith(" ")]
    assert b_lines == [b_lines[0], b_lines[0] + 2]


def test_diff_json_lists_every_change_from_the_start(ws, run, scripted):
    ids = scripted
    base = git(ws, "rev-list", "--max-parents=0", "HEAD").strip()
    result = run("--json", "diff", f"{base}..HEAD", env=at(8))
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["from"] == base and data["to"] == git(ws, "rev-parse", "HEAD").strip()
    kinds = [(c["id"], c["change"]) for c in data["changes"]]
    assert kinds == [
        (ids["A"], "added"), (ids["A"], "superseded"),
        (ids["C"], "added"), (ids["C"], "expired"),
        (ids["B"], "proposed"), (ids["B"], "approved"), (ids["B"], "edited by hand"),
        (ids["A2"], "added"),
    ]
    approved = next(c for c in data["changes"] if c["change"] == "approved")
    assert (approved["by"], approved["reason"], approved["from_status"], approved["to_status"]) == \
        ("bob", "matches the runbook", "pending_review", "active")
    superseded = next(c for c in data["changes"] if c["change"] == "superseded")
    assert ids["A2"] in superseded["details"][0] and superseded["text"] == "Use pnpm, not npm, in this repo"
    edited = next(c for c in data["changes"] if c["change"] == "edited by hand")
    assert edited["old_text"] == "Deploys go through the staging cluster first"
    assert edited["text"] == "Deploys go through the canary cluster first"
    assert edited["commit"] == git(ws, "rev-parse", "HEAD").strip()
    assert set(edited) >= {"id", "scope", "change", "from_status", "to_status", "by", "reason", "text",
                           "old_text", "path", "commit"}


def test_diff_without_argument_explains_uncommitted_hand_edits(ws, run, scripted):
    ids = scripted
    path = file_of(ws, ids["A2"])
    path.write_text(path.read_text(encoding="utf-8").replace("pnpm 9", "pnpm 10"), encoding="utf-8")
    before = git(ws, "status", "--porcelain")
    result = run("diff", env=at(8))
    assert result.code == 0, result
    assert f"edited by hand {ids['A2']} (project): text edited [uncommitted]" in result.out
    assert "    - Use pnpm 9, not npm or yarn" in result.out and "    + Use pnpm 10, not npm or yarn" in result.out
    assert ids["B"] not in result.out  # committed changes are not repeated
    result = run("diff", "HEAD~1", env=at(8))  # REV: from REV to the working tree
    assert result.code == 0, result
    assert f"edited by hand {ids['B']} (project) by Test User" in result.out
    assert f"edited by hand {ids['A2']} (project): text edited [uncommitted]" in result.out
    assert f"approved {ids['B']}" not in result.out
    assert git(ws, "status", "--porcelain") == before  # diff writes nothing


def test_diff_with_autocommit_off_names_memcli_writes_not_hand_edits(ws, run):
    memory_id = remember(run, "Review every migration before merge", "--source-type", "model_derived", day=1)
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false"),
                    encoding="utf-8")
    hand_commit(ws, "config", day=2)
    assert run("--actor", "bob", "approve", memory_id, env=at(3)).code == 0
    result = run("--json", "diff", env=at(3))
    assert result.code == 0, result
    (change,) = result.json()["data"]["changes"]
    assert (change["change"], change["by"], change["commit"]) == ("approved", "bob", None)


def test_diff_hides_other_users_personal_memories_and_reports_unreadable_versions(shared_tree_ws, ws, run):
    base = git(ws, "rev-parse", "HEAD").strip()
    remember(run, "Bob likes tabs", "--scope", "user:bob", day=1, actor="bob")
    mine = remember(run, "Alice likes spaces", "--scope", "user:alice", day=1)
    path = file_of(ws, mine)
    path.write_text(path.read_text(encoding="utf-8").replace("scope: user:alice", "scope: [broken"),
                    encoding="utf-8")
    hand_commit(ws, "oops", day=2)
    result = run("--json", "diff", f"{base}..HEAD", env=at(3))
    assert result.code == 0, result
    changes = result.json()["data"]["changes"]
    assert "bob" not in result.out.lower()
    assert [(c["id"], c["change"]) for c in changes] == [(mine, "added"), (mine, "unreadable")]
    assert "cannot be parsed" in changes[1]["details"][0]


def test_diff_expiry_while_active_then_archived_and_expireat_edited_to_the_past(ws, run):
    base = git(ws, "rev-parse", "HEAD").strip()
    short = remember(run, "The demo server is up this week", "--ttl", "1d", day=1)
    edited = remember(run, "Use the old VPN profile", day=1)
    assert run("forget", short, env=at(3)).code == 0
    path = file_of(ws, edited)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("status: active\n", "status: active\nexpireAt: 2027-01-02\n"), encoding="utf-8")
    hand_commit(ws, "that profile is gone", day=4)
    data = run("--json", "diff", f"{base}..HEAD", env=at(5)).json()["data"]
    kinds = [(c["id"], c["change"]) for c in data["changes"]]
    assert kinds == [(short, "added"), (short, "expired"), (short, "archived"), (edited, "added"), (edited, "expired")]
    past = data["changes"][-1]
    assert past["by"] == "Test User" and past["details"] == ["expireAt edited to 2027-01-02T00:00:00Z, already past"]
    assert data["changes"][2]["details"] == ["forgotten"]
    # a range after the expiry names only what happened in it
    result = run("diff", "HEAD~1..HEAD", env=at(5))
    assert f"expired {edited}" in result.out and short not in result.out


def test_diff_bad_revisions(ws, run):
    result = run("diff", "nope..HEAD")
    assert (result.code, result.out) == (12, "")
    assert result.err.startswith("memcli: error: unknown revision 'nope'") and result.err.count("\n") == 1
    result = run("diff", "HEAD~1...HEAD")
    assert result.code == 2 and result.err.count("\n") == 1


def test_history_show_at_and_log_after_remember_then_supersede(ws, run):
    old = remember(run, "Tests run with pytest -n 2", "--run-id", "run-1", day=1)
    result = run("--json", "supersede", old, "Tests run with pytest -n auto", "--run-id", "run-2", env=at(2))
    assert result.code == 0, result
    new = result.json()["data"]["id"]

    result = run("history", old[:8], env=at(3))
    assert result.code == 0, result
    rows = [line for line in result.out.splitlines() if line[:10].isalnum() and " status " in line]
    assert len(rows) == 2
    # the actor is the MEMCLI_ACTOR label; git's author (the tests' identity) says otherwise: a claim
    claim = "alice (unverified: committed by Test User <test@example.invalid>)"
    assert f"{claim}  remember  status active: added" in rows[0]
    assert f"{claim}  supersede  status superseded: superseded: by " + new in rows[1]
    assert "status active → superseded" not in rows[1]  # the change already names the transition
    assert f"{old} (superseded) → {new} (active)" in result.out
    assert f"{old}: Tests run with pytest -n 2" in result.out and f"{new}: Tests run with pytest -n auto" in result.out
    data = run("--json", "history", new).json()["data"]
    assert [link["id"] for link in data["chain"]] == [old, new]

    result = run("show", old, "--at", "HEAD~1", env=at(3))
    assert result.code == 0, result
    assert result.out.startswith("# as of HEAD~1 (commit ")
    assert "# status: active\n" in result.out and "status: active\n" in result.out
    assert "supersededBy" not in result.out
    assert "# status: superseded" in run("show", old).out
    data = run("--json", "show", old, "--at", "HEAD~1").json()["data"]
    assert data["status"] == "active" and data["revision"]["commit"] == git(ws, "rev-parse", "HEAD~1").strip()

    result = run("show", old, "--at", "no-such-rev")
    assert (result.code, result.out) == (12, "")
    assert result.err.startswith("memcli: error: unknown revision 'no-such-rev'") and result.err.count("\n") == 1
    result = run("show", new, "--at", "HEAD~1")
    assert result.code == 4 and f"memory {new} did not exist at HEAD~1" in result.err

    result = run("log", old)
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert len(lines) == 2
    assert lines[0].split("\t")[1:6] == ["supersede", new, "project", claim, "run-2"]
    assert lines[0].endswith("Tests run with pytest -n auto")
    assert lines[1].split("\t")[1:6] == ["remember", old, "project", claim, "run-1"]
    assert lines[1].split("\t")[6] == git(ws, "rev-parse", "HEAD~1").strip()[:10]
    entry = run("--json", "log", old).json()["data"]["entries"][0]
    assert entry["trailers"]["run"] == "run-2" and entry["text"] == "Tests run with pytest -n auto"


def test_history_of_a_memory_written_with_autocommit_off(ws, run):
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false"),
                    encoding="utf-8")
    hand_commit(ws, "config", day=1)
    memory_id = remember(run, "Cache keys include the locale", day=2)
    result = run("--json", "history", memory_id, env=at(3))
    assert result.code == 0, result
    (version,) = result.json()["data"]["versions"]
    assert (version["commit"], version["status"], version["changes"]) == (None, "active", ["added: uncommitted"])


def test_history_marks_hand_edits_and_finds_a_deleted_memory(ws, run):
    memory_id = remember(run, "The API lives at api.internal", day=1)
    path = file_of(ws, memory_id)
    path.write_text(path.read_text(encoding="utf-8").replace("api.internal", "api2.internal"), encoding="utf-8")
    hand_commit(ws, "move the API", day=2)
    git(ws, "rm", "-q", str(path.relative_to(ws)))
    hand_commit(ws, "drop it", day=3)
    result = run("history", memory_id[:10], env=at(4))
    assert result.code == 0, result
    assert "its file no longer exists" in result.out
    assert "Test User  edited by hand  status active: edited by hand: text edited" in result.out
    assert "status deleted: deleted" in result.out
    assert run("log", memory_id[:10]).out.count("\tremember\t") == 1
    result = run("history", "zzzz0000")
    assert result.code == 4 and result.err.startswith("memcli: error: no memory 'zzzz0000'")


# --- diff names hand moves, hand deletions and undos by what they were (newcomer report 1, problem 9) ---


def _diff(run, spec: str | None, day: int) -> list[dict]:
    result = run("--json", "diff", *([spec] if spec else []), env=at(day))
    assert result.code == 0, result
    return result.json()["data"]["changes"]


def test_diff_calls_a_hand_git_mv_moved_with_both_paths(ws, run):
    memory_id = remember(run, "Deploys go out on Tuesdays only", day=1)
    old = file_of(ws, memory_id).relative_to(ws).as_posix()
    new = f"memories/project/deploys/{Path(old).name}"
    (ws / new).parent.mkdir()
    git(ws, "mv", old, new)
    staged = _diff(run, None, 2)  # staged, not committed yet
    assert [(c["change"], c["details"]) for c in staged] == [("moved", [f"{old} → {new}", "uncommitted"])]
    hand_commit(ws, "tidy the folders", day=2)
    [change] = _diff(run, "HEAD~1..HEAD", 3)
    assert (change["change"], change["id"], change["path"]) == ("moved", memory_id, new)
    assert change["details"] == [f"{old} → {new}", "by hand"]
    text = run("diff", "HEAD~1..HEAD", env=at(3)).out
    assert f"moved {memory_id} (project) by Test User: {old} → {new}; by hand" in text and "added" not in text


def test_diff_says_deleted_by_hand_unless_purged(ws, run):
    by_hand = remember(run, "Ruff lints every Python file", day=1)
    purged = remember(run, "Black formats every Python file", day=1)
    git(ws, "rm", "-q", file_of(ws, by_hand).relative_to(ws).as_posix())
    hand_commit(ws, "drop the ruff note", day=2)
    assert run("purge", purged, "--yes", env=at(3)).code == 0
    changes = {c["id"]: c for c in _diff(run, "HEAD~2..HEAD", 4)}
    assert changes[by_hand]["change"] == "deleted" and changes[by_hand]["details"] == ["the file was deleted by hand"]
    assert changes[purged]["change"] == "deleted" and changes[purged]["details"] == ["the file was removed (purged)"]
    assert "purged" not in run("diff", "HEAD~2..HEAD~1", env=at(4)).out


def test_diff_names_an_undo_by_what_it_undid_and_a_rollback_rolled_back(ws, run):
    a = remember(run, "Use pnpm for JavaScript packages", "--subject", "js.pm", day=1)
    result = run("--json", "supersede", a, "Use yarn for JavaScript packages", env=at(2))
    b = result.json()["data"]["id"]
    supersede = git(ws, "rev-parse", "HEAD").strip()
    assert run("undo", env=at(3)).code == 0
    changes = {c["id"]: c for c in _diff(run, "HEAD~1..HEAD", 4)}
    assert changes[a]["change"] == "undone"
    assert changes[a]["details"] == ["superseded → active", f"undo of supersede {supersede[:10]}"]
    assert changes[b]["change"] == "deleted"
    assert changes[b]["details"] == [f"the file was deleted by undo of supersede {supersede[:10]}"]
    text = run("diff", "HEAD~1..HEAD", env=at(4)).out
    assert "restored" not in text and "rolled back" not in text and "purged" not in text
    older = remember(run, "Node 20 is the runtime for scripts", "--subject", "node.version", day=5)
    newer = remember(run, "Node 22 is the runtime for scripts", "--subject", "node.version", day=6)
    assert run("rollback", older, env=at(7)).code == 0
    changes = {ch["id"]: ch for ch in _diff(run, "HEAD~1..HEAD", 8)}
    assert (changes[older]["change"], changes[older]["details"]) == ("rolled back", ["superseded → active"])
    assert changes[newer]["change"] == "superseded" and changes[newer]["details"] == [f"by {older}"]


# --- the classifier alone ----------------------------------------------------------------


def _memory(**values) -> Memory:
    return Memory(id="01abcd", scope="project", body="Some rule\n", path="memories/project/01abcd.md", **values)


def _kinds(before, after, op="approve", actor="bob"):
    step = Step("c0ffee", op, actor, datetime(2027, 1, 2, tzinfo=timezone.utc))
    wrap = lambda m: None if m is None else Version(m.path, m)  # noqa: E731
    return [(c.change, c.by, c.reason, c.details) for c in classify(wrap(before), wrap(after), step)]


def test_classify_transitions():
    pending = _memory(status="pending_review")
    rejected = _memory(status="rejected", review={"by": "carol", "decision": "rejected", "reason": "stale"})
    assert _kinds(pending, rejected, "reject") == [("rejected", "carol", "stale", [])]
    active = _memory()
    assert _kinds(active, _memory(status="archived"), "forget")[0][3] == ["forgotten"]
    assert _kinds(active, _memory(status="archived"), "compact")[0][3] == ["compacted"]
    restored = _kinds(_memory(status="superseded"), active, "rollback")
    assert restored == [("rolled back", "bob", None, ["superseded → active"])]
    assert _kinds(_memory(status="archived"), active, None)[0][:2] == ("restored", "bob")
    assert _kinds(active, None, None)[0][0] == "deleted"
    expired = _kinds(active, _memory(expire_at=datetime(2027, 1, 1, tzinfo=timezone.utc)), None)
    assert [k[0] for k in expired] == ["expired"]
    assert _kinds(active, _memory(), None) == []
    moved = _memory()
    moved.path = "memories/project/2027-01/01abcd.md"
    assert [k[0] for k in _kinds(active, moved, None)] == ["moved"]


# --- link-only changes (newcomer report 2, problem 9) -----------------------------------


def test_diff_and_history_name_an_unmerge_and_its_undo(ws, run):
    from test_rollback import merged_pair

    keeper, merged = merged_pair(ws, run)
    assert run("rollback", merged, env=at(5)).code == 0
    rollback = git(ws, "rev-parse", "HEAD").strip()
    changes = {c["id"]: c for c in _diff(run, "HEAD~1..HEAD", 6)}
    assert changes[keeper]["change"] == "un-merged"
    assert changes[keeper]["details"] == [f"gave back {merged}", "by rollback"]
    assert changes[merged]["change"] == "rolled back"
    assert run("undo", env=at(6)).code == 0
    changes = {c["id"]: c for c in _diff(run, "HEAD~1..HEAD", 7)}
    assert changes[keeper]["change"] == "undone"
    assert changes[keeper]["details"] == [f"took in {merged}", f"undo of rollback {rollback[:10]}"]
    assert changes[merged]["change"] == "undone"
    text = run("diff", "HEAD~2..HEAD", env=at(7)).out
    assert "merged changed" not in text and f"\nmerged {keeper}" not in text
    lines = run("history", keeper, env=at(7)).out.splitlines()
    assert lines[3].endswith(f"rollback  status active: un-merged: gave back {merged}; by rollback")
    assert lines[4].endswith(f"undo  status active: undone: took in {merged}; undo of rollback {rollback[:10]}")
    assert not any(line.endswith("merged changed") for line in lines)


def test_history_names_a_link_a_purge_removed(ws, run):
    a = remember(run, "Use pnpm for JavaScript packages", "--subject", "js.pm", day=1)
    b = run("--json", "supersede", a, "Use yarn for JavaScript packages", env=at(2)).json()["data"]["id"]
    assert run("purge", a, "--yes", env=at(3)).code == 0
    versions = run("--json", "history", b, env=at(4)).json()["data"]["versions"]
    assert [v["op"] for v in versions] == ["supersede", "purge"]
    assert versions[1]["changes"] == [f"unlinked: link to {a} removed (purged)"]
    changes = {c["id"]: c for c in _diff(run, "HEAD~1..HEAD", 4)}
    assert changes[b]["change"] == "unlinked" and changes[b]["details"] == [f"link to {a} removed (purged)"]
    assert changes[a]["change"] == "deleted"


def test_diff_names_a_purge_that_history_rewrite_emptied(ws, run):
    keep = remember(run, "Staging DB host is db-stg-1.", day=1)
    gone = remember(run, "The VPN gateway is vpn.example.com.", day=2)
    assert run("purge", gone, "--history", "--yes", env=at(3)).code == 0
    assert git(ws, "show", "--name-only", "--format=", "HEAD").strip() == ""  # emptied, kept for its trailers
    result = run("diff", "HEAD~1..HEAD", env=at(4))
    assert result.code == 0, result
    assert f"purged {gone} (project) by alice: its file and text were removed from every commit" in result.out
    assert "no memory changed" not in result.out and keep not in result.out
    [change] = _diff(run, "HEAD~2..HEAD", 4)
    assert (change["id"], change["change"]) == (gone, "purged")
    assert run("diff", "HEAD~2..HEAD~1", env=at(4)).out.count("purged") == 0


def test_classify_link_changes():
    a = _memory(supersedes=["01old"])
    assert _kinds(a, _memory(), "purge") == [("unlinked", "bob", None, ["link to 01old removed (purged)"])]
    assert _kinds(_memory(), a, "rollback") == [("relinked", "bob", None, ["link to 01old added", "by rollback"])]
    assert _kinds(a, _memory(), None)[0][0] == "edited by hand"


def test_log_with_a_missing_commit_object_says_so(ws: Path, run: Runner) -> None:
    # GitPython's error was turned into [] and `memcli log` exited 0 with no entries: an
    # audit trail that reads as empty when the repository is damaged
    for text in ("Deploys go out on Tuesdays.", "Use pnpm for the web packages."):
        assert run("remember", text).code == 0
    commit = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=ws, capture_output=True, text=True).stdout.strip()
    (ws / ".git" / "objects" / commit[:2] / commit[2:]).unlink()
    result = run("log")
    assert result.code == 10 and result.out == "", result
    assert f"git log failed: Could not read {commit}" in result.err and "git fsck" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_show_says_when_its_last_change_was_made_by_hand(ws, run):
    """Newcomer fault 4 (stop 32): after a teammate's hand edit, `show` (and the MCP tool) gave the
    memory as the original author's, with nothing to say someone else changed it since."""
    from memcli.mcp_server.tools import Settings, Tools

    memory_id = remember(run, "The API lives at api.internal", day=1)
    shown = run("--json", "show", memory_id, env=at(2))
    assert shown.json()["data"]["changedByHand"] is None  # memcli's own write: nothing to say
    assert "by hand" not in run("show", memory_id, env=at(2)).out
    path = file_of(ws, memory_id)
    path.write_text(path.read_text(encoding="utf-8").replace("api.internal", "api2.internal"), encoding="utf-8")
    text = run("show", memory_id, env=at(2)).out
    assert "# changed by hand since memcli wrote it, not committed yet" in text, text
    hand_commit(ws, "move the API", day=2)
    data = run("--json", "show", memory_id, env=at(3)).json()["data"]
    assert data["provenance"]["actor"] == "alice"
    assert data["changedByHand"]["author"] == "Test User <test@example.invalid>"
    assert data["changedByHand"]["at"].startswith("2027-01-02"), data
    text = run("show", memory_id, env=at(3)).out
    assert f"# changed by hand since memcli wrote it: commit {data['changedByHand']['commit'][:10]} by Test User" \
        in text and f"memcli history {memory_id}" in text, text
    mcp = Tools(Settings(workspace=str(ws))).show(memory_id)["memory"]
    assert mcp["changedByHand"] == data["changedByHand"]
    assert run("supersede", memory_id, "The API lives at api3.internal", env=at(4)).code == 0
    assert run("--json", "show", memory_id, env=at(5)).json()["data"]["changedByHand"] is None  # memcli's again
