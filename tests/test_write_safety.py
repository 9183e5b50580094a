"""Writes never commit a person's uncommitted edits, and no secret reaches git through any field
(second newcomer report, problems 3 and 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import git

if TYPE_CHECKING:
    from cli_runner import Result, Runner

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
DRAFT = "DRAFT: maybe db-stg-2\n"


def made(run: Runner, *args: str, cwd: Path | None = None, env: dict | None = None) -> dict:
    result = run("--json", "remember", *args, cwd=cwd, env=env)
    assert result.code == 0, result
    return result.json()["data"]["memory"]


def edit(where: Path, rel: str, stage: bool = False) -> bytes:
    path = where / rel
    with path.open("a", encoding="utf-8") as out:
        out.write(DRAFT)
    if stage:
        git(where, "add", rel)
    return path.read_bytes()


def assert_refused(result: Result, rel: str, op: str, where: Path, head: str, data: bytes) -> None:
    assert result.code == 13, result
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"memcli: error: {rel} has uncommitted edits; {op} refused")
    assert f"`git diff -- {rel}`" in lines[0] and "git stash" in lines[0] and "Traceback" not in result.err
    assert git(where, "rev-parse", "HEAD").strip() == head  # no commit
    assert (where / rel).read_bytes() == data  # the person's file exactly as they left it
    assert "DRAFT" not in git(where, "log", "-p", "--all")


# --- problem 3: uncommitted hand edits ------------------------------------------------------


@pytest.mark.parametrize("stage", [False, True], ids=["unstaged", "staged"])
def test_forget_refuses_a_file_with_uncommitted_edits(ws, run, stage):
    memory = made(run, "Staging DB host is db-stg-1.")
    data = edit(ws, memory["path"], stage)
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_refused(run("forget", memory["id"][:26]), memory["path"], "forget", ws, head, data)
    assert run("--json", "show", memory["id"]).json()["data"]["status"] == "active"
    # committed by the person, the file is forgotten as usual, their edit kept in their commit
    git(ws, "commit", "-qam", "my draft")
    assert run("forget", memory["id"]).code == 0
    assert "+DRAFT" not in git(ws, "show", "--format=", "HEAD") and git(ws, "status", "--porcelain") == ""


@pytest.mark.parametrize("stage", [False, True], ids=["unstaged", "staged"])
def test_purge_refuses_to_delete_a_file_with_uncommitted_edits(ws, run, stage):
    memory = made(run, "Staging DB host is db-stg-1.")
    data = edit(ws, memory["path"], stage)
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_refused(run("purge", memory["id"], "--yes"), memory["path"], "purge", ws, head, data)


def test_the_json_error_envelope_says_history_conflict(ws, run):
    memory = made(run, "Staging DB host is db-stg-1.")
    edit(ws, memory["path"])
    error = run("--json", "forget", memory["id"]).json()["error"]
    assert (error["code"], error["exit"]) == ("history_conflict", 13)


@pytest.mark.parametrize("stage", [False, True], ids=["unstaged", "staged"])
def test_approve_refuses_a_pending_file_with_uncommitted_edits(ws, run, stage):
    memory = made(run, "Use ruff for linting.", "--source-type", "model_derived")
    assert memory["status"] == "pending_review"
    data = edit(ws, memory["path"], stage)
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("--actor", "bob", "approve", memory["id"])
    assert_refused(result, memory["path"], "approve", ws, head, data)
    assert run("--actor", "bob", "reject", memory["id"], "--reason", "no").code == 13


@pytest.mark.parametrize("stage", [False, True], ids=["unstaged", "staged"])
def test_supersede_refuses_when_the_old_file_has_uncommitted_edits(ws, run, stage):
    old = made(run, "Staging DB host is db-stg-1.")
    data = edit(ws, old["path"], stage)
    head = git(ws, "rev-parse", "HEAD").strip()
    before = sorted(p.name for p in (ws / "memories").rglob("*.md"))
    result = run("supersede", old["id"], "Staging DB host is db-stg-3.")
    assert_refused(result, old["path"], "supersede", ws, head, data)
    assert sorted(p.name for p in (ws / "memories").rglob("*.md")) == before  # the new file was not left


def test_a_subject_conflict_rewrite_is_refused_too(ws, run):
    old = made(run, "Staging DB host is db-stg-1.", "--subject", "db.staging")
    data = edit(ws, old["path"])
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("remember", "Staging DB host is db-stg-9.", "--subject", "db.staging")
    assert_refused(result, old["path"], "remember", ws, head, data)


def test_a_hand_written_file_git_never_saw_is_adopted(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "vpn-notes.md").write_text("The VPN moved to vpn2.\n", encoding="utf-8")
    result = run("forget", "vpn-notes")
    assert result.code == 0, result
    assert git(ws, "show", "--name-only", "--format=", "HEAD").split() == ["memories/project/vpn-notes.md"]
    assert git(ws, "status", "--porcelain") == ""


def test_a_file_only_added_to_the_index_is_adopted(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "vpn-notes.md").write_text("The VPN moved to vpn2.\n", encoding="utf-8")
    git(ws, "add", "memories/project/vpn-notes.md")
    assert run("forget", "vpn-notes").code == 0
    assert git(ws, "status", "--porcelain") == ""


def test_workspace_in_a_sub_folder_of_a_project(project, run):
    where = project / "agent-memory"
    assert run("init", str(where)).code == 0
    edited = made(run, "Staging DB host is db-stg-1.", cwd=where)
    clean = made(run, "Production DB host is db-prd-1.", cwd=where)
    data = edit(where, edited["path"])
    head = git(project, "rev-parse", "HEAD").strip()
    assert_refused(run("forget", edited["id"], cwd=where), edited["path"], "forget", where, head, data)
    assert run("forget", clean["id"], cwd=where).code == 0
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == [f"agent-memory/{clean['path']}"]


def test_autocommit_false_checks_nothing(ws, run):
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false"),
                      encoding="utf-8")
    git(ws, "commit", "-qam", "no autocommit")
    memory = made(run, "Staging DB host is db-stg-1.")
    edit(ws, memory["path"])
    assert run("forget", memory["id"]).code == 0
    assert "status: archived" in (ws / memory["path"]).read_text(encoding="utf-8")


def git_statuses(run: Runner, tmp_path: Path, *args: str) -> int:
    """How many `git status` one command runs (GIT_TRACE)."""
    trace = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*')))}.txt"
    result = run(*args, env={"GIT_TRACE": str(trace)})
    assert result.code == 0, result
    return sum(" status " in line for line in trace.read_text(encoding="utf-8").splitlines()
               if "built-in: git" in line)


def test_remember_asks_git_nothing_more_and_a_rewrite_asks_once(ws, run, tmp_path):
    assert git_statuses(run, tmp_path, "remember", "Staging DB host is db-stg-1.") == 0
    memory = made(run, "Production DB host is db-prd-1.")
    assert git_statuses(run, tmp_path, "supersede", memory["id"], "Production DB host is db-prd-2.") == 1
    other = made(run, "Lint before pushing.")
    assert git_statuses(run, tmp_path, "forget", other["id"]) == 1


# --- problem 6: secrets in every written field ----------------------------------------------


def assert_no_secret_written(ws: Path, result: Result, field: str, head: str) -> None:
    assert result.code == 6, result
    error = result.json()["error"]
    assert error["code"] == "secret_detected" and error["message"].startswith(f"refused: {field} holds a GitHub token")
    assert TOKEN not in result.out + result.err
    assert git(ws, "rev-parse", "HEAD").strip() == head
    assert TOKEN not in git(ws, "log", "-p", "--all")
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize(("args", "field"), [
    (["--run-id", TOKEN], "the run id"),
    (["--idempotency-key", f"key {TOKEN}"], "the idempotency key"),
    (["--scope", f"agent:{TOKEN}"], "the scope"),
    (["--subject", f"ci.{TOKEN}"], "the subject"),
    (["--tag", TOKEN], "a tag"),
    (["--path", f"src/{TOKEN}/**"], "a path"),
], ids=["run-id", "idempotency-key", "scope", "subject", "tag", "path"])
def test_remember_refuses_a_secret_in_any_option(ws, run, args, field):
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_no_secret_written(ws, run("--json", "remember", "The deploy notes live in the wiki.", *args), field, head)


@pytest.mark.parametrize(("args", "field"), [
    (["--run-id", TOKEN], "the run id"),
    (["--idempotency-key", TOKEN], "the idempotency key"),
    (["--scope", f"agent:{TOKEN}"], "the scope"),
], ids=["run-id", "idempotency-key", "scope"])
def test_supersede_refuses_a_secret_in_any_option(ws, run, args, field):
    old = made(run, "Staging DB host is db-stg-1.")
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_no_secret_written(ws, run("--json", "supersede", old["id"], "Staging DB host is db-stg-3.", *args),
                             field, head)


def test_an_actor_name_holding_a_secret_is_refused(ws, run):
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_no_secret_written(ws, run("--json", "--actor", TOKEN, "remember", "Lint before pushing.",
                                     "--scope", "project"), "the actor", head)


def test_reject_refuses_a_secret_in_the_reason(ws, run):
    memory = made(run, "Use ruff for linting.", "--source-type", "model_derived")
    head = git(ws, "rev-parse", "HEAD").strip()
    assert_no_secret_written(ws, run("--json", "--actor", "bob", "reject", memory["id"], "--reason", TOKEN),
                             "the reason", head)


def session_file(tmp_path: Path, session: str) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps({"type": "user", "sessionId": session, "message": {
        "role": "user", "content": "From now on always use uv to install python packages."}}) + "\n",
        encoding="utf-8")
    return path


def test_extract_refuses_a_session_id_holding_a_secret_as_the_run_id(ws, run, tmp_path):
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("--json", "extract", str(session_file(tmp_path, TOKEN)), "--apply")
    assert result.code == 0, result  # extract reports each candidate; a refused one is not written
    [candidate] = result.json()["data"]["candidates"]
    assert candidate["decision"] == "refused_secret"
    assert candidate["message"].startswith("refused: the run id holds a GitHub token")
    assert git(ws, "rev-parse", "HEAD").strip() == head and TOKEN not in git(ws, "log", "-p", "--all")


def test_compact_transcript_refuses_a_session_id_holding_a_secret(ws, run, tmp_path):
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("--json", "compact", "--transcript", str(session_file(tmp_path, TOKEN)))
    assert_no_secret_written(ws, result, "the scope", head)  # the session id names the scope and the run
    assert not list((ws / "archive").rglob("*.gz")) if (ws / "archive").exists() else True


def test_import_refuses_a_rule_file_whose_name_holds_a_secret(ws, run, tmp_path):
    rules = tmp_path / "proj" / ".claude" / "rules"
    rules.mkdir(parents=True)
    (rules / f"{TOKEN}.md").write_text("- Always run ruff before committing files.\n", encoding="utf-8")
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("--json", "import", str(tmp_path / "proj"))
    [item] = result.json()["data"]["items"]
    assert item["outcome"] == "refused" and item["message"].startswith("refused: the source holds a GitHub token")
    assert git(ws, "rev-parse", "HEAD").strip() == head and TOKEN not in git(ws, "log", "-p", "--all")


@pytest.mark.parametrize(("key", "field"), [("runId", "the run id"), ("idempotencyKey", "the idempotency key"),
                                            ("actor", "the actor")])
def test_import_of_json_lines_refuses_a_secret_in_the_provenance(ws, run, tmp_path, key, field):
    memory = made(run, "Lint before pushing.")
    record = run("export", "--format", "jsonl").out.splitlines()[0]
    data = json.loads(record)
    data.update(id="01m9vfze00aaaaaaaaaaaaaaaa", body="Format with ruff before pushing.\n",
                text="Format with ruff before pushing.")
    data["provenance"][key] = TOKEN
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps(data) + "\n", encoding="utf-8")
    head = git(ws, "rev-parse", "HEAD").strip()
    result = run("--json", "import", str(lines))
    [item] = result.json()["data"]["items"]
    assert item["outcome"] == "refused" and item["message"].startswith(f"refused: {field} holds a GitHub token"), item
    assert git(ws, "rev-parse", "HEAD").strip() == head and TOKEN not in git(ws, "log", "-p", "--all")
    assert memory["id"]


@pytest.mark.parametrize("kind", ["in-tree", "branch", "personal"])
def test_git_status_is_clean_after_every_write_in_each_kind_of_store(kind: str, ws: Path, project: Path, run) -> None:
    """Issue 21, must-show 3: after each write (remember, a subject's supersede, supersede,
    forget) the store's working tree and index equal ``HEAD`` (``git status`` prints nothing),
    on the memory branch, in-tree and in a personal store."""
    from conftest import personal_store

    if kind == "branch":
        assert run("init", cwd=project).code == 0
        store, where, scope = project / ".memcli", ["-w", str(project / ".memcli")], []
    elif kind == "personal":
        store, where, scope = None, [], ["--scope", "user:alice"]
    else:
        store, where, scope = ws, [], []

    def written(*args: str) -> dict:
        result = run(*where, "--json", *args)
        assert result.code == 0, (args, result)
        root = store or personal_store(ws)
        assert git(root, "status", "--porcelain", "--untracked-files=all") == "", (args, kind)
        return result.json()["data"]

    first = written("remember", "The build cache lives in /var/cache/build", *scope)
    written("remember", "Releases are cut on Tuesdays", "--subject", "release", *scope)
    written("remember", "Releases are cut on Thursdays", "--subject", "release", *scope)
    replaced = written("supersede", first["id"], "The build cache lives in /srv/cache/build")
    written("forget", replaced["id"])
