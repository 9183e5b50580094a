"""Issue 5, the write side of the audit trail: ``rollback`` and ``undo``.

Real git repositories in temporary folders, the real CLI in subprocesses.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git

IDENT = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid")


def remember(run, text: str, *args: str, env: dict | None = None) -> dict:
    result = run("--json", "remember", text, *args, env=env)
    assert result.code == 0, result
    return result.json()["data"]["memory"]


def head(ws: Path) -> str:
    return git(ws, "rev-parse", "HEAD").strip()


def head_files(ws: Path) -> list[str]:
    return sorted(git(ws, "show", "--name-only", "--format=", "HEAD").split())


def hand_commit(ws: Path, *paths: str, message: str = "hand edit") -> None:
    subprocess.run(["git", *IDENT, "-C", str(ws), "add", "--", *paths], check=True, capture_output=True)
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", message, "--", *paths], check=True,
                   capture_output=True)


def field(data: bytes | str, key: str) -> str:
    text = data.decode() if isinstance(data, bytes) else data
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(f"{key}:"))


def supersede_then_rollback(ws: Path, run) -> tuple[dict, dict, dict[str, bytes]]:
    """remember A; supersede A with B; rollback A. Returns A, B and A's bytes before the supersede."""
    a = remember(run, "Use pnpm for every JavaScript package in this repo", "--subject", "js.package-manager")
    before = {a["path"]: (ws / a["path"]).read_bytes()}
    b = run("--json", "supersede", a["id"],
            "Use yarn for every JavaScript package in this repo").json()["data"]["memory"]
    assert field((ws / a["path"]).read_bytes(), "status") == "superseded"
    result = run("rollback", a["id"], env={"MEMCLI_NOW": "2030-01-01T00:00:00Z"})
    assert result.code == 0, result
    assert "rolled back" in result.out and result.err == ""
    return a, b, before


def test_rollback_after_supersede_restores_both_sides_in_one_commit(ws, run):
    a, b, before = supersede_then_rollback(ws, run)
    a_text, b_text = (ws / a["path"]).read_text(), (ws / b["path"]).read_text()
    assert field(a_text, "status") == "active"
    assert field(a_text, "supersedes") == f"[{b['id']}]"
    assert "supersededBy" not in a_text
    assert field(a_text, "updatedAt") == "2030-01-01T00:00:00Z"
    assert field(b_text, "status") == "superseded"
    assert field(b_text, "supersededBy") == f"[{a['id']}]"
    # one commit, exactly both files, op rollback
    assert head_files(ws) == sorted([a["path"], b["path"]])
    message = git(ws, "log", "-1", "--format=%B")
    assert message.startswith(f"memcli: rollback {a['id']}") and "Memcli-Op: rollback" in message
    assert f"Memcli-Related: {b['id']}" in message
    # byte-preserving: every line of the original file is kept but updatedAt; one line added
    old_lines = before[a["path"]].decode().splitlines()
    new_lines = a_text.splitlines()
    assert [x for x in old_lines if not x.startswith("updatedAt:")] == \
        [x for x in new_lines if not x.startswith(("updatedAt:", "supersedes:"))]
    # three versions of A in history: active, superseded, active again
    versions = git(ws, "log", "--format=%H", "--", a["path"]).split()
    assert [field(git(ws, "show", f"{c}:{a['path']}"), "status") for c in reversed(versions)] == \
        ["active", "superseded", "active"]


def test_undo_twice_returns_the_files_to_where_they_began(ws, run):
    a, b, before = supersede_then_rollback(ws, run)
    rollback_commit = head(ws)
    first = run("--json", "undo")
    assert first.code == 0, first
    assert first.json()["data"]["undone"] == rollback_commit and first.json()["data"]["undoneOp"] == "rollback"
    assert f"Memcli-Undoes: {rollback_commit}" in git(ws, "log", "-1", "--format=%B")
    assert field((ws / a["path"]).read_bytes(), "status") == "superseded"  # as after the supersede
    second = run("undo")
    assert second.code == 0 and "undid supersede" in second.out, second
    assert (ws / a["path"]).read_bytes() == before[a["path"]]
    assert not (ws / b["path"]).exists()
    assert git(ws, "status", "--porcelain") == ""
    assert head_files(ws) == sorted([a["path"], b["path"]])


def test_undo_refused_when_a_later_commit_changed_the_file(ws, run):
    a = remember(run, "Run the linter before every push")
    path = ws / a["path"]
    path.write_text(path.read_text().replace("importance: 3", "importance: 5"))
    hand_commit(ws, a["path"])
    start, content = head(ws), path.read_bytes()
    result = run("undo")
    assert result.code == 13, result
    assert result.err.count("\n") == 1 and a["path"] in result.err and "git log" in result.err
    assert head(ws) == start and path.read_bytes() == content


def test_undo_refused_when_the_file_has_uncommitted_edits(ws, run):
    a = remember(run, "Run the linter before every push")
    path = ws / a["path"]
    path.write_text(path.read_text() + "More.\n")
    start = head(ws)
    result = run("--json", "undo")
    assert result.code == 13 and result.json()["error"]["code"] == "history_conflict"
    assert head(ws) == start and path.read_text().endswith("More.\n")


def test_undo_keeps_the_users_staged_change_elsewhere_staged(ws, run):
    a = remember(run, "Run the linter before every push")
    (ws / "notes.txt").write_text("draft\n")
    git(ws, "add", "notes.txt")
    result = run("undo")
    assert result.code == 0, result
    assert not (ws / a["path"]).exists()
    assert head_files(ws) == [a["path"]]
    assert git(ws, "diff", "--cached", "--name-only").split() == ["notes.txt"]


def test_nothing_to_undo_says_so_and_exits_0(ws, run):
    start = head(ws)
    result = run("undo")
    assert result.code == 0 and "nothing to undo" in result.out
    assert head(ws) == start
    assert run("--json", "undo").json()["data"]["outcome"] == "noop"


def test_undo_walks_back_past_undone_commits_to_the_first_memory(ws, run):
    a = remember(run, "First memory about deployments on Tuesdays")
    b = remember(run, "Second memory about the release checklist")
    assert run("undo").code == 0 and not (ws / b["path"]).exists()
    assert run("undo").code == 0 and not (ws / a["path"]).exists()
    assert "nothing to undo" in run("undo").out


def test_rollback_to_an_unknown_revision_is_exit_12(ws, run):
    a = remember(run, "Run the linter before every push")
    start = head(ws)
    result = run("rollback", a["id"], "--to", "no-such-branch")
    assert result.code == 12, result
    assert result.err.startswith("memcli: error: unknown revision 'no-such-branch'") and result.err.count("\n") == 1
    assert run("--json", "rollback", a["id"], "--to", "deadbeef").json()["error"]["code"] == "revision_not_found"
    assert head(ws) == start


def test_rollback_refused_when_the_file_has_uncommitted_edits(ws, run):
    a = remember(run, "Run the linter before every push")
    run("forget", a["id"])
    path = ws / a["path"]
    path.write_text(path.read_text() + "Edited.\n")
    start = head(ws)
    result = run("rollback", a["id"])
    assert result.code == 13 and a["path"] in result.err, result
    assert head(ws) == start and path.read_text().endswith("Edited.\n")


def test_rollback_to_before_the_memory_existed_suggests_forget(ws, run):
    init_commit = head(ws)
    a = remember(run, "Run the linter before every push")
    result = run("rollback", a["id"], "--to", init_commit)
    assert result.code == 4, result
    assert "did not exist" in result.err and f"memcli forget {a['id']}" in result.err


def test_rollback_to_identical_content_is_a_no_op(ws, run):
    a = remember(run, "Run the linter before every push")
    start = head(ws)
    result = run("--json", "rollback", a["id"], "--to", "HEAD")
    assert result.code == 0 and result.json()["data"]["outcome"] == "noop" and result.json()["data"]["commit"] is None
    assert head(ws) == start


def test_rollback_undoes_a_forget_and_names_the_revision(ws, run):
    a = remember(run, "Run the linter before every push")
    remembered = head(ws)
    assert run("forget", a["id"]).code == 0
    result = run("--json", "rollback", a["id"][:8], "--to", remembered[:10])
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["memory"]["status"] == "active" and data["op"] == "rollback" and data["commit"] == head(ws)
    assert head_files(ws) == [a["path"]]


def test_rollback_refuses_a_secret_in_the_restored_version(ws, run):
    a = remember(run, "Run the linter before every push")
    path = ws / a["path"]
    clean = path.read_text()
    path.write_text(clean + "key AKIAIOSFODNN7EXAMPLE\n")
    hand_commit(ws, a["path"])
    leaked = head(ws)
    path.write_text(clean)
    hand_commit(ws, a["path"], message="remove the key")
    result = run("rollback", a["id"], "--to", leaked)
    assert result.code == 6, result
    assert "AKIA" not in result.err and path.read_text() == clean


def test_rollback_respects_scope_visibility(ws, run):
    bob = run("--json", "--actor", "bob", "remember", "Bob's own editor settings", "--scope", "user:bob")
    assert bob.code == 0, bob
    result = run("rollback", bob.json()["data"]["id"])
    assert result.code == 4, result


def test_undo_passes_over_another_users_personal_change(shared_tree_ws, ws, run):
    mine = remember(run, "Run the linter before every push")
    bob = run("--json", "--actor", "bob", "remember", "Bob's own editor settings", "--scope", "user:bob")
    assert bob.code == 0, bob
    result = run("undo")
    assert result.code == 0 and "undid remember" in result.out, result
    assert not (ws / mine["path"]).exists()
    assert (ws / bob.json()["data"]["memory"]["path"]).exists()


# --- links stay acyclic (newcomer report 1, problem 7) ---------------------------------


def front_matter(ws: Path) -> dict[str, dict]:
    """id -> front-matter of every memory file, read directly from disk."""
    from memcli import fileformat

    out = {}
    for path in (ws / "memories").rglob("*.md"):
        meta = dict(fileformat.parse(path.read_bytes(), str(path)).meta)
        out[meta["id"]] = meta
    return out


def assert_acyclic(ws: Path) -> dict[str, dict]:
    """No memory both supersedes and is superseded by another; the links form no cycle; both ends agree."""
    metas = front_matter(ws)
    edges: dict[str, set[str]] = {i: set() for i in metas}  # newer -> the ones it supersedes
    for i, meta in metas.items():
        sup, by = set(meta.get("supersedes") or []), set(meta.get("supersededBy") or [])
        assert not sup & by, (i, meta)
        if meta["status"] == "active":
            assert not by, (i, meta)
        edges[i] |= sup & metas.keys()
        for newer in by & metas.keys():
            edges[newer].add(i)
    state: dict[str, str] = {}

    def visit(node: str) -> None:
        state[node] = "open"
        for nxt in edges[node]:
            assert state.get(nxt) != "open", f"cycle through {node} and {nxt}"
            if nxt not in state:
                visit(nxt)
        state[node] = "done"

    for node in edges:
        if node not in state:
            visit(node)
    return metas


def two_with_one_subject(run) -> tuple[str, str]:
    """A, then B with the same subject: B supersedes A."""
    a = remember(run, "Use pnpm for every JavaScript package", "--subject", "js.pm")["id"]
    b = remember(run, "Use yarn for every JavaScript package", "--subject", "js.pm")["id"]
    return a, b


def test_rollback_of_the_replaced_memory_leaves_no_two_way_link(ws, run):
    a, b = two_with_one_subject(run)
    assert run("rollback", a).code == 0
    metas = assert_acyclic(ws)
    assert metas[a]["status"] == "active" and list(metas[a]["supersedes"]) == [b] and "supersededBy" not in metas[a]
    assert metas[b]["status"] == "superseded" and list(metas[b]["supersededBy"]) == [a]
    assert "supersedes" not in metas[b]  # B no longer claims to replace the memory that replaced it
    assert head_files(ws) == sorted(str(p.relative_to(ws)) for p in (ws / "memories").rglob("*.md"))


def test_rolling_back_both_reads_newest_last(ws, run):
    a, b = two_with_one_subject(run)
    assert run("rollback", a).code == 0
    result = run("rollback", b)
    assert result.code == 0 and f"supersedes {a}" in result.out, result
    metas = assert_acyclic(ws)
    assert metas[b]["status"] == "active" and list(metas[b]["supersedes"]) == [a]
    assert metas[a]["status"] == "superseded" and list(metas[a]["supersededBy"]) == [b]
    assert "supersedes" not in metas[a] and "supersededBy" not in metas[b]
    text = run("history", b).out
    assert f"  {a} (superseded) → {b} (active)" in text
    shown = run("--json", "show", a).json()["data"]
    assert shown["supersededBy"] == [b] and not shown.get("supersedes")
    # once more: A back on top, still acyclic, and the chain now ends with A
    assert run("rollback", a).code == 0
    assert_acyclic(ws)
    chain = run("--json", "history", a).json()["data"]["chain"]
    assert [(link["id"], link["status"]) for link in chain] == [(b, "superseded"), (a, "active")]


def test_rollback_in_a_chain_of_three_prunes_the_middle_link(ws, run):
    a = remember(run, "The API listens on port 8080", "--subject", "api.port")["id"]
    b = run("--json", "supersede", a, "The API listens on port 8081").json()["data"]["id"]
    c = run("--json", "supersede", b, "The API listens on port 8082").json()["data"]["id"]
    result = run("rollback", a)
    assert result.code == 0, result
    assert f"supersedes {c}" in result.out and f"links pruned in {b}" in result.out
    metas = assert_acyclic(ws)
    assert [metas[i]["status"] for i in (a, b, c)] == ["active", "superseded", "superseded"]
    assert "supersedes" not in metas[b] and list(metas[b]["supersededBy"]) == [c]
    assert list(metas[c]["supersededBy"]) == [a] and b in metas[c]["supersedes"]
    assert head_files(ws) == sorted(str(p.relative_to(ws)) for p in (ws / "memories").rglob("*.md"))
    chain = run("--json", "history", b).json()["data"]["chain"]
    assert [link["id"] for link in chain] == [b, c, a]


def merged_pair(ws: Path, run, *subject: str) -> tuple[str, str]:
    """Two near-duplicates, the second with ``subject`` args; compact merges one into the other.

    Returns ``(keeper, merged)`` as compact chose them.
    """
    first = "Always run the database migrations before starting the API server locally"
    for day, text, more in ((1, first, ()),
                            (2, "Always run the database migration before starting the API server locally", subject)):
        assert run("remember", text, *more, env={"MEMCLI_NOW": f"2026-01-0{day}T00:00:00Z"}).code == 0
    if subject:  # compact merges near duplicates only when their subjects agree: make them exact duplicates
        second = next(p for p in (ws / "memories").rglob("*.md") if "migration-before" in p.name)
        second.write_text(second.read_text(encoding="utf-8").replace("database migration ", "database migrations "),
                          encoding="utf-8")
        hand_commit(ws, str(second.relative_to(ws)))
    result = run("--json", "compact", "--apply", env={"MEMCLI_NOW": "2026-01-03T00:00:00Z"})
    assert result.code == 0, result
    [action] = result.json()["data"]["actions"]
    assert action["action"] == "merge"
    keeper, [merged] = action["keeper"], action["ids"]
    metas = front_matter(ws)
    assert metas[merged]["status"] == "superseded" and [m["id"] for m in metas[keeper]["merged"]] == [merged]
    return keeper, merged


def test_rollback_of_a_merged_memory_unmerges_it(ws, run):
    keeper, merged = merged_pair(ws, run, "--subject", "db.migrate")
    assert front_matter(ws)[keeper]["subject"] == "db.migrate"  # the keeper took the subject it lacked
    result = run("rollback", merged)
    assert result.code == 0, result
    assert f"un-merged from {keeper}" in result.out and "supersedes" not in result.out
    metas = assert_acyclic(ws)
    assert metas[merged]["status"] == "active" and metas[merged]["subject"] == "db.migrate"
    assert not metas[merged].get("supersedes") and not metas[merged].get("supersededBy")
    assert metas[keeper]["status"] == "active"
    assert "supersedes" not in metas[keeper] and "merged" not in metas[keeper] and "subject" not in metas[keeper]
    assert head_files(ws) == sorted(str(p.relative_to(ws)) for p in (ws / "memories").rglob("*.md"))
    assert f"Memcli-Related: {keeper}" in git(ws, "log", "-1", "--format=%B")


@pytest.mark.slow
def test_rollback_of_a_merged_memory_keeps_the_keepers_other_merges(ws, run):
    keeper, first = merged_pair(ws, run)
    holder = remember(run, "Migrations run on deploy; never by hand", "--subject", "db.deploy")["id"]
    later = {"MEMCLI_NOW": "2026-01-04T00:00:00Z"}
    second = run("--json", "remember", "Always run the database migrations before starting the API servers locally",
                 env=later).json()["data"]["memory"]["id"]
    assert run("compact", "--apply", env=later).code == 0
    assert front_matter(ws)[second]["status"] == "superseded"
    assert [m["id"] for m in front_matter(ws)[keeper]["merged"]] == [first, second]
    result = run("rollback", first)
    assert result.code == 0, result
    metas = assert_acyclic(ws)
    assert {i: metas[i]["status"] for i in (keeper, first, holder)} == dict.fromkeys((keeper, first, holder), "active")
    assert [m["id"] for m in metas[keeper]["merged"]] == [second] and list(metas[keeper]["supersedes"]) == [second]
    assert metas[second]["status"] == "superseded" and list(metas[second]["supersededBy"]) == [keeper]
    assert head_files(ws) == sorted([_path(ws, keeper), _path(ws, first)])


def _path(ws: Path, memory_id: str) -> str:
    return str(next((ws / "memories").rglob(f"{memory_id}*.md")).relative_to(ws))


def test_history_chain_survives_a_cycle_in_old_data(ws, run):
    a, b = two_with_one_subject(run)
    path = (ws / _path(ws, a))
    path.write_text(path.read_text().replace("supersededBy:", f"supersedes: [{b}]\nsupersededBy:"))
    hand_commit(ws, _path(ws, a))
    result = run("--json", "history", b)
    assert result.code == 0, result
    assert sorted(link["id"] for link in result.json()["data"]["chain"]) == sorted([a, b])


# --- rolling back a compact keeper gives back what it merged (newcomer report 2, problem 4) --

DASHBOARD = "The metrics dashboard lives in Grafana under the Platform folder."


@pytest.mark.slow
def test_rollback_of_a_keeper_to_before_the_merge_unmerges_the_merged_memory(ws, run):
    keeper = remember(run, DASHBOARD, "--expire-at", "2027-01-01", env={"MEMCLI_NOW": "2026-11-01T00:00:00Z"})["id"]
    merged = remember(run, "The metrics dashboards live in Grafana under the Platform folder.", "--pinned",
                      env={"MEMCLI_NOW": "2026-11-02T00:00:00Z"})["id"]
    at = {"MEMCLI_NOW": "2026-12-15T00:00:00Z"}
    compacted = run("--json", "compact", "--apply", env=at).json()["data"]
    assert [(a["keeper"], a["ids"]) for a in compacted["actions"]] == [(keeper, [merged])]
    assert front_matter(ws)[keeper]["pinned"] is True
    after_compact = {p: p.read_bytes() for p in (ws / "memories").rglob("*.md")}

    result = run("rollback", keeper, env=at)
    assert result.code == 0, result
    assert result.out.strip().endswith(f"now active; un-merged {merged}") and result.err == ""
    metas = assert_acyclic(ws)
    assert metas[merged]["status"] == "active" and metas[merged]["pinned"] is True
    assert "supersededBy" not in metas[merged]
    assert metas[keeper]["status"] == "active" and "pinned" not in metas[keeper]
    assert not {"supersedes", "merged"} & metas[keeper].keys()
    assert head_files(ws) == sorted([_path(ws, keeper), _path(ws, merged)])  # one commit, both files
    assert f"Memcli-Related: {merged}" in git(ws, "log", "-1", "--format=%B")
    listed = run("--json", "list", env=at).json()["data"]
    assert merged in {m["id"] for m in listed["memories"]}  # the pinned fact is served again
    # undo puts both files back as compact left them
    assert run("undo").code == 0
    assert {p: p.read_bytes() for p in (ws / "memories").rglob("*.md")} == after_compact


@pytest.mark.slow
def test_rollback_of_a_keeper_gives_back_only_what_it_took_in_since(ws, run):
    keeper, first = merged_pair(ws, run)
    later = {"MEMCLI_NOW": "2026-01-04T00:00:00Z"}
    second = remember(run, "Always run the database migrations before starting the API servers locally",
                      env=later)["id"]
    assert run("compact", "--apply", env=later).code == 0
    assert [m["id"] for m in front_matter(ws)[keeper]["merged"]] == [first, second]
    result = run("rollback", keeper, env=later)  # to before its latest change: the second merge
    assert result.code == 0 and f"un-merged {second}" in result.out and first not in result.out, result
    metas = assert_acyclic(ws)
    assert metas[second]["status"] == "active" and "supersededBy" not in metas[second]
    assert metas[first]["status"] == "superseded" and list(metas[first]["supersededBy"]) == [keeper]
    assert list(metas[keeper]["supersedes"]) == [first] and [m["id"] for m in metas[keeper]["merged"]] == [first]
    # once more, to before the first merge: both are given back
    result = run("rollback", keeper, "--to", "HEAD~4", env=later)
    assert result.code == 0 and f"un-merged {first}" in result.out, result
    metas = assert_acyclic(ws)
    assert {metas[i]["status"] for i in (keeper, first, second)} == {"active"}
    assert not {"supersedes", "merged", "supersededBy"} & {k for i in (keeper, first, second) for k in metas[i]}


def test_a_merged_memory_holding_the_restored_keepers_subject_stays_retired_by_it(ws, run):
    keeper = remember(run, DASHBOARD, "--subject", "metrics.dashboard", env={"MEMCLI_NOW": "2026-11-01T00:00:00Z"})
    copy = ws / keeper["path"].replace(keeper["id"], "01m6baaaaaaaaaaaaaaaaaaaaa")
    copy.write_text("---\nid: 01m6baaaaaaaaaaaaaaaaaaaaa\nscope: project\ncategory: fact\n"
                    "subject: Metrics.Dashboard\ncreatedAt: 2026-11-03T09:00:00Z\nupdatedAt: 2026-11-03T09:00:00Z\n"
                    "---\n" + DASHBOARD.upper() + "\n", encoding="utf-8")
    hand_commit(ws, str(copy.relative_to(ws)))
    compacted = run("--json", "compact", "--apply").json()["data"]
    assert [(a["keeper"], a["ids"]) for a in compacted["actions"]] == [(keeper["id"], ["01m6baaaaaaaaaaaaaaaaaaaaa"])]
    result = run("rollback", keeper["id"])
    assert result.code == 0 and "un-merged" not in result.out, result
    metas = assert_acyclic(ws)
    assert metas[keeper["id"]]["status"] == "active" and "merged" not in metas[keeper["id"]]
    assert list(metas[keeper["id"]]["supersedes"]) == ["01m6baaaaaaaaaaaaaaaaaaaaa"]
    assert list(metas["01m6baaaaaaaaaaaaaaaaaaaaa"]["supersededBy"]) == [keeper["id"]]
    assert head_files(ws) == [keeper["path"]]


@pytest.mark.slow
def test_undo_after_purge_history_passes_over_the_emptied_commits(ws, run):
    """Newcomer report 2, problem 5: purge --history leaves empty commits; undo goes past them."""
    first = remember(run, "Staging DB host is db-stg-1.")
    second = remember(run, "The VPN gateway is vpn.example.com.")
    assert run("purge", second["id"], "--history", "--yes").code == 0
    purge_commit = head(ws)
    result = run("--json", "undo")
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["undoneOp"] == "remember" and data["ids"] == [first["id"]] and data["outcome"] == "updated"
    assert [p["op"] for p in data["passedOver"]] == ["purge", "remember"]
    assert data["passedOver"][0]["commit"] == purge_commit
    assert "gone from history and cannot be brought back" in data["message"]
    assert not (ws / first["path"]).exists() and not list((ws / "memories").rglob("*.md"))
    again = run("undo")
    assert again.code == 0 and again.out.startswith("nothing to undo") and again.err == ""
    assert head(ws) != purge_commit and git(ws, "status", "--porcelain") == ""


def test_undo_passes_over_a_history_purge_that_only_pruned_links(ws, run):
    """The purge commit of a superseded memory still changes its successor (link pruned):
    undoing it would bring back a link to a memory gone from history, so it is passed over.
    The supersede before it left B in a form the purge changed: refused (exit 13), as ever."""
    a = remember(run, "Use pnpm for every JavaScript package in this repo", "--subject", "js.pm")
    b = run("--json", "supersede", a["id"], "Use yarn for every JavaScript package").json()["data"]["memory"]
    assert run("purge", a["id"], "--history", "--yes").code == 0
    assert a["id"] not in (ws / b["path"]).read_text()
    supersede = git(ws, "log", "-1", "--format=%H", "HEAD~1").strip()
    before = head(ws)
    result = run("undo")
    assert result.code == 13 and f"changed after commit {supersede[:12]}" in result.err, result
    assert result.err.count("\n") == 1 and head(ws) == before and a["id"] not in (ws / b["path"]).read_text()


def renamed_by_hand(ws: Path, run) -> tuple[dict, str]:
    """remember; edit the text by hand (commit); `git mv` to <id>-vpn.md (commit). Returns the memory and new path."""
    memory = remember(run, "The VPN gateway is vpn.example.com.")
    path = ws / memory["path"]
    path.write_text(path.read_text().replace("vpn.example.com", "vpn2.example.com"))
    hand_commit(ws, memory["path"])
    new = str(Path(memory["path"]).with_name(f"{memory['id']}-vpn.md"))
    subprocess.run(["git", "-C", str(ws), "mv", memory["path"], new], check=True, capture_output=True)
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", "rename"], check=True, capture_output=True)
    return memory, new


def test_rollback_finds_the_version_from_before_a_hand_rename(ws, run):
    """Newcomer report 2, problem 7: rollback looks the file up at REV as show --at does."""
    memory, new = renamed_by_hand(ws, run)
    assert run("show", memory["id"], "--at", "HEAD~2").code == 0
    result = run("rollback", memory["id"], "--to", "HEAD~2")
    assert result.code == 0, result
    assert f"rolled back {memory['id']} to HEAD~2" in result.out
    assert "vpn.example.com" in (ws / new).read_text() and not (ws / memory["path"]).exists()
    assert head_files(ws) == [new] and git(ws, "status", "--porcelain") == ""
    same = run("rollback", memory["id"], "--to", "HEAD~3")  # the same version again, at the old path there
    assert same.code == 0 and "already as at HEAD~3" in same.out


def test_rollback_default_passes_over_a_pure_rename(ws, run):
    """The latest commit only renamed the file: the version before is the one before the hand edit."""
    memory, new = renamed_by_hand(ws, run)
    edit = git(ws, "rev-parse", "HEAD~1").strip()
    result = run("--json", "rollback", memory["id"])
    assert result.code == 0, result
    assert result.json()["data"]["message"].endswith(f"to {edit[:12]}^: now active")
    assert "vpn.example.com" in (ws / new).read_text() and head_files(ws) == [new]
