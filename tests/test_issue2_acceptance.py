"""Acceptance tests for issue 2: supersede diffs (2), the review gate (3), personal
scopes (4), expiry by TTL (5), and living inside a project's own repository (8).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git

IDENT = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid")


def user_git(path: Path, *args: str) -> str:
    """git as the person would run it (with an identity)."""
    return subprocess.run(["git", *IDENT, "-C", str(path), *args], check=True, capture_output=True,
                          text=True).stdout


def ids_of(result) -> list[str]:
    assert result.code == 0, result
    data = result.json()["data"]
    return [m["id"] for m in data.get("memories", data.get("hits", []))]


def commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD").strip())


# --- (2) supersede: the diff shows only what changed ------------------------------------


def _changed_keys(diff: str, path: str) -> tuple[set[str], set[str]]:
    """Front-matter keys on removed and added lines of ``path`` in a unified diff."""
    section = diff.split(f"diff --git a/{path} b/{path}\n", 1)[1].split("\ndiff --git ", 1)[0]
    removed, added = set(), set()
    for line in section.splitlines():
        if line.startswith(("---", "+++")) or line[:1] not in "+-":
            continue
        key = line[1:].split(":", 1)[0].strip()
        (removed if line[0] == "-" else added).add(key)
    return removed, added


@pytest.mark.parametrize("origin", ["remember", "hand-written"])
def test_2_supersede_diff_shows_only_the_changed_lines(ws, run, origin):
    if origin == "remember":
        made = run("--json", "remember", "Use pnpm for JavaScript packages.", "--tag", "tooling",
                   env={"MEMCLI_NOW": "2026-01-05T10:00:00Z"})
        old, old_path = made.json()["data"]["id"], made.json()["data"]["memory"]["path"]
    else:
        old, old_path = "js-pm", "memories/project/js-pm.md"
        (ws / old_path).parent.mkdir(parents=True, exist_ok=True)
        (ws / old_path).write_text(
            "---\n# kept by hand\nscope: project\nowner: web-team   # unknown key\nstatus: active\n"
            "tags: [tooling, javascript]\nupdatedAt: 2026-01-05T10:00:00Z\n---\n\nUse pnpm for JavaScript packages.\n",
            encoding="utf-8")
        git(ws, "add", old_path)
        user_git(ws, "commit", "-q", "-m", "hand-written memory")
    before = (ws / old_path).read_bytes()
    result = run("--json", "supersede", old, "Use bun for JavaScript packages.",
                 env={"MEMCLI_NOW": "2026-02-01T09:00:00Z"})
    assert result.code == 0, result
    new, new_path = result.json()["data"]["id"], result.json()["data"]["memory"]["path"]

    assert set(git(ws, "diff", "--name-status", "HEAD~1", "HEAD").splitlines()) == {
        f"M\t{old_path}", f"A\t{new_path}"}
    diff = git(ws, "diff", "HEAD~1", "HEAD")
    removed, added = _changed_keys(diff, old_path)
    assert removed == {"status", "updatedAt"}, diff
    assert added == {"status", "updatedAt", "supersededBy"}, diff
    after = (ws / old_path).read_text(encoding="utf-8")
    assert "status: superseded" in after and new in after and "2026-02-01T09:00:00Z" in after
    kept = [line for line in before.decode().splitlines()
            if not line.startswith(("status:", "updatedAt:"))]
    assert all(line in after.splitlines() for line in kept)  # comments, unknown keys, body
    assert after.endswith("\nUse pnpm for JavaScript packages.\n")
    shown = run("--json", "show", new).json()["data"]
    assert shown["supersedes"] == [old] and shown["status"] == "active"


# --- (3) the review gate ------------------------------------------------------------


def test_3_agent_write_to_project_waits_for_another_reviewer(ws, run):
    made = run("--json", "remember", "The payments service retries webhooks five times.",
               "--source-type", "model_derived", "--run-id", "session-42")
    assert made.code == 0, made
    data = made.json()["data"]
    memory_id = data["id"]
    assert data["outcome"] == "pending_review" and data["memory"]["status"] == "pending_review"
    assert data["gate"] == "review"

    assert ids_of(run("--json", "recall", "webhooks")) == []
    assert memory_id not in run("context").out and memory_id not in run("context", "--query", "webhooks").out
    assert memory_id not in run("--json", "list").out
    queue = run("--json", "review").json()["data"]["pending"]
    assert [m["id"] for m in queue] == [memory_id]
    assert queue[0]["provenance"]["sourceType"] == "model_derived"
    assert queue[0]["provenance"]["actor"] == "alice" and queue[0]["provenance"]["runId"] == "session-42"
    assert memory_id in run("review").out

    head = commits(ws)
    own = run("--json", "approve", memory_id)
    assert own.code == 8 and own.json()["error"]["code"] == "review_refused", own
    assert commits(ws) == head
    assert run("--json", "show", memory_id).json()["data"]["status"] == "pending_review"

    approved = run("--json", "approve", memory_id, "--reason", "checked the code", env={"MEMCLI_ACTOR": "bob"})
    assert approved.code == 0, approved
    assert commits(ws) == head + 1
    shown = run("--json", "show", memory_id).json()["data"]
    assert shown["status"] == "active"
    assert shown["review"]["by"] == "bob" and shown["review"]["decision"] == "approved"
    assert shown["provenance"]["actor"] == "alice"  # provenance is not rewritten by the reviewer
    assert ids_of(run("--json", "recall", "webhooks")) == [memory_id]
    assert memory_id in run("context").out
    assert run("--json", "review").json()["data"]["pending"] == []
    again = run("--json", "approve", memory_id, env={"MEMCLI_ACTOR": "carol"})
    assert again.code == 8, again


def test_3_agent_write_to_a_personal_scope_is_active_at_once(ws, run):
    made = run("--json", "remember", "Alice's editor is Helix.", "--scope", "user:alice",
               "--source-type", "model_derived")
    assert made.code == 0 and made.json()["data"]["memory"]["status"] == "active", made
    assert ids_of(run("--json", "recall", "Helix")) == [made.json()["data"]["id"]]


# --- (4) two personal scopes ----------------------------------------------------------


def test_4_two_personal_scopes_are_isolated(ws, run):
    shared = run("--json", "remember", "The falcon cluster runs in eu-west.").json()["data"]["id"]
    mine = {}
    for actor in ("alice", "bob"):
        made = run("--json", "remember", f"{actor.title()} prefers falcon alerts by {actor}-mail.",
                   "--scope", f"user:{actor}", env={"MEMCLI_ACTOR": actor})
        assert made.code == 0, made
        mine[actor] = made.json()["data"]["id"]
    for actor, other in (("alice", "bob"), ("bob", "alice")):
        env = {"MEMCLI_ACTOR": actor}
        assert set(ids_of(run("--json", "recall", "falcon", env=env))) == {shared, mine[actor]}
        assert set(ids_of(run("--json", "list", env=env))) == {shared, mine[actor]}
        context = run("context", env=env)
        assert mine[actor] in context.out and shared in context.out
        assert mine[other] not in context.out and f"{other}-mail" not in context.out
        assert run("--json", "show", mine[actor], env=env).code == 0
        hidden = run("--json", "show", mine[other], env=env)
        assert hidden.code == 4 and hidden.json()["error"]["code"] == "memory_not_found", hidden
        refused = run("--json", "recall", "falcon", "--scope", f"user:{other}", env=env)
        assert refused.code == 5 and f"{other}-mail" not in refused.out


# --- (5) expiry by TTL, with the clock moved forward ----------------------------------


def test_5_ttl_expires_when_the_clock_moves(ws, run):
    start = {"MEMCLI_NOW": "2025-03-01T00:00:00Z"}
    made = run("--json", "remember", "The staging certificate is being rotated.", "--ttl", "7d", env=start)
    assert made.code == 0, made
    memory_id = made.json()["data"]["id"]
    assert made.json()["data"]["memory"]["expireAt"] == "2025-03-08T00:00:00Z"
    keep = run("--json", "remember", "The staging certificate lives in the vault.", env=start).json()["data"]["id"]
    file_text = (ws / made.json()["data"]["memory"]["path"]).read_text(encoding="utf-8")
    assert "expireAt: 2025-03-08T00:00:00Z" in file_text

    just_before = {"MEMCLI_NOW": "2025-03-07T23:59:59Z"}
    assert memory_id in ids_of(run("--json", "list", env=just_before))
    assert memory_id in ids_of(run("--json", "recall", "certificate", env=just_before))
    assert memory_id in run("context", env=just_before).out

    env = {"MEMCLI_NOW": "2025-03-08T00:00:00Z"}  # from that instant on it is expired
    assert ids_of(run("--json", "list", env=env)) == [keep]
    assert ids_of(run("--json", "recall", "certificate", env=env)) == [keep]
    context = run("context", env=env)
    assert context.code == 0 and memory_id not in context.out and keep in context.out
    shown = run("--json", "show", memory_id, env=env).json()["data"]
    assert shown["expired"] is True and shown["status"] == "active"
    listed = {m["id"]: m["expired"] for m in run("--json", "list", "--include-expired", env=env)
              .json()["data"]["memories"]}
    assert listed == {memory_id: True, keep: False}
    hits = {m["id"]: m["expired"] for m in run("--json", "recall", "certificate", "--include-expired", env=env)
            .json()["data"]["hits"]}
    assert hits == {memory_id: True, keep: False}
    later = {"MEMCLI_NOW": "2025-04-01"}
    assert ids_of(run("--json", "list", env=later)) == [keep]
    assert memory_id not in run("context", env=later).out
    for bad in ("0d", "soon"):
        refused = run("--json", "remember", "A memory with a bad TTL.", f"--ttl={bad}", env=start)
        assert refused.code == 5, refused


# --- (8) a workspace inside the project's own repository ------------------------------



def test_8_user_staged_changes_stay_staged(project, run, tmp_path):
    (project / "other.txt").write_text("unrelated work in progress\n", encoding="utf-8")
    (project / "README.md").write_text("# project\n\nstaged edit\n", encoding="utf-8")
    git(project, "add", "other.txt", "README.md")
    staged = {"other.txt", "README.md"}

    init = run("--json", "init", str(project / "mem"))
    assert init.code == 0, init
    assert init.json()["data"]["created"] is True
    assert not (project / "mem" / ".git").exists()  # the project's repository is used
    assert set(git(project, "diff", "--cached", "--name-only").split()) == staged
    assert "mem/memcli.toml" in git(project, "ls-tree", "-r", "--name-only", "HEAD").split()

    env = {"MEMCLI_WORKSPACE": str(project / "mem")}
    made = run("--json", "remember", "The project uses trunk-based development.", env=env)
    assert made.code == 0, made
    path = "mem/" + made.json()["data"]["memory"]["path"]
    assert set(git(project, "diff", "--cached", "--name-only").split()) == staged
    head_files = git(project, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert "other.txt" not in head_files and path in head_files
    assert git(project, "show", "HEAD:README.md") == "# project\n"
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == [path]
    assert git(project, "show", ":README.md") == "# project\n\nstaged edit\n"  # the index keeps the edit
    status = git(project, "status", "--porcelain").splitlines()
    assert sorted(status) == ["A  other.txt", "M  README.md"], status  # .cache is ignored
    assert commits(project) == 3

    subdir = project / "src"
    subdir.mkdir()
    found = run("--json", "list", cwd=subdir, env={"MEMCLI_WORKSPACE": ""})
    assert found.code == 3  # mem/ is not above src/: walking up finds nothing, clearly


def test_8_hidden_workspace_found_by_walking_up(project, run):
    (project / "other.txt").write_text("unrelated\n", encoding="utf-8")
    git(project, "add", "other.txt")
    assert run("init", str(project), "--hidden").code == 0
    assert (project / ".memcli" / "memcli.toml").is_file()
    subdir = project / "src" / "deep"
    subdir.mkdir(parents=True)
    made = run("--json", "remember", "Deep folders find the hidden workspace.", cwd=subdir)
    assert made.code == 0, made
    assert git(project, "diff", "--cached", "--name-only").split() == ["other.txt"]
    assert "other.txt" not in git(project, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert ids_of(run("--json", "list", cwd=subdir)) == [made.json()["data"]["id"]]


def test_8_autocommit_false_writes_files_without_committing(ws, run):
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false"),
                    encoding="utf-8")
    user_git(ws, "commit", "-q", "-m", "no autocommit", "--", "memcli.toml")
    head = commits(ws)
    made = run("--json", "remember", "Review memory changes with git diff before committing.")
    assert made.code == 0, made
    data = made.json()["data"]
    assert data["commit"] is None
    assert (ws / data["memory"]["path"]).is_file()
    assert commits(ws) == head
    assert git(ws, "status", "--porcelain", "--untracked-files=all").splitlines() == [f"?? {data['memory']['path']}"]
    assert git(ws, "diff", "--cached", "--name-only") == ""  # nothing staged on the person's behalf
    assert ids_of(run("--json", "list")) == [data["id"]]
    forgot = run("--json", "forget", data["id"])
    assert forgot.code == 0 and forgot.json()["data"]["commit"] is None
    assert commits(ws) == head
