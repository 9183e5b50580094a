"""Issue 5: ``purge ID --yes`` (hard delete) and ``purge ID --history --yes`` (history rewrite).

Real git repositories in temporary folders, the real CLI in subprocesses, the real
git-filter-repo.
"""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest

from conftest import git, run_memcli
from memcli.git.rewrite import PURGED, scrub
from test_rollback import hand_commit, head, remember
from test_session_compact import GITHUB_TOKEN, transcript, write_transcript

SECRET_TEXT = "The staging bastion answers on port 2222 behind the zebra-quartz gateway"
WORD = "zebra-quartz"


def path_of(ws: Path, memory_id: str) -> str:
    (found,) = (ws / "memories").rglob(f"{memory_id}*.md")
    return found.relative_to(ws).as_posix()


def field(text: str, key: str) -> str | None:
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(f"{key}:")), None)


def test_purge_without_yes_is_a_usage_error_and_changes_nothing(ws, run):
    a = remember(run, SECRET_TEXT)
    start = head(ws)
    result = run("purge", a["id"], input="y\n", timeout=20)  # stdin is not a terminal: never a prompt
    assert result.code == 2, result
    assert result.err.count("\n") == 1 and "--yes" in result.err and f"memcli forget {a['id']}" in result.err
    assert result.out == ""
    assert (ws / a["path"]).exists() and head(ws) == start
    assert run("--json", "purge", a["id"], "--history").json()["error"]["code"] == "usage"
    assert (ws / a["path"]).exists() and head(ws) == start


def test_plain_purge_deletes_the_file_and_prunes_links_but_old_commits_keep_the_text(ws, run):
    a = remember(run, SECRET_TEXT, "--subject", "staging.bastion")
    b = run("--json", "supersede", a["id"], "The staging bastion moved to the new network").json()["data"]["memory"]
    result = run("--json", "purge", a["id"], "--yes")
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["history"] is False and data["changed"] == [b["id"]] and data["commit"] == head(ws)
    assert not (ws / a["path"]).exists()
    b_text = (ws / b["path"]).read_text()
    assert field(b_text, "supersedes") is None and field(b_text, "status") == "active"
    assert sorted(git(ws, "show", "--name-only", "--format=", "HEAD").split()) == sorted([a["path"], b["path"]])
    message = git(ws, "log", "-1", "--format=%B")
    assert "Memcli-Op: purge" in message and WORD not in message
    # its documented meaning: the text stays in the commits before
    assert WORD in git(ws, "log", "--all", "-p")
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.slow
def test_purge_history_leaves_no_trace_and_keeps_the_rest(ws, run, tmp_path):
    (tmp_path / "CLAUDE.md").write_text(f"# Notes\n\n- {SECRET_TEXT}\n- Keep commit messages in the imperative mood\n")
    imported = run("--json", "import", str(tmp_path / "CLAUDE.md"))
    assert imported.code == 0, imported
    ids = {item["text"]: {"id": item["id"], "path": path_of(ws, item["id"])}
           for item in imported.json()["data"]["items"]}
    target, kept = ids[SECRET_TEXT], ids["Keep commit messages in the imperative mood"]
    assert f"{target['id']}: {SECRET_TEXT[:20]}" in git(ws, "log", "-1", "--format=%B")  # a batch commit lists it
    other = remember(run, "Deploys go out on Tuesdays only", "--subject", "deploy.day")
    assert run("forget", target["id"]).code == 0  # one more version, one more message with the text
    old_commit = git(ws, "log", "-1", "--format=%H", "--", target["path"]).strip()
    git(ws, "remote", "add", "origin", "https://example.invalid/memories.git")
    git(ws, "tag", "-a", "v1", "-m", f"release notes: {SECRET_TEXT}")
    assert WORD in git(ws, "log", "--all", "-p")

    result = run("purge", target["id"], "--history", "--yes")
    assert result.code == 0, result
    assert "history was rewritten" in result.err and "forced push" in result.err and "origin" in result.err
    assert "clones" in result.err
    assert WORD not in git(ws, "log", "--all", "-p")
    assert WORD not in git(ws, "log", "--all", "--format=%B")
    assert WORD not in git(ws, "for-each-ref", "--format=%(contents)", "refs/tags")
    assert PURGED in git(ws, "log", "--all", "--format=%B")
    assert not (ws / target["path"]).exists()
    subprocess.run(["git", "-C", str(ws), "fsck", "--full", "--strict", "--no-dangling"], check=True,
                   capture_output=True)
    gone = subprocess.run(["git", "-C", str(ws), "cat-file", "-e", old_commit], capture_output=True)
    assert gone.returncode != 0, "the old commit is still in the object store"
    assert git(ws, "reflog", "--all") == "" or WORD not in git(ws, "reflog", "--all", "-p")
    # the rest is still there, with its history
    for memory in (kept, other):
        assert (ws / memory["path"]).exists()
        assert git(ws, "log", "--format=%H", "--", memory["path"]).split()
    assert "Keep commit messages in the imperative mood" in git(ws, "log", "--all", "-p")
    assert git(ws, "remote").split() == ["origin"]
    assert git(ws, "status", "--porcelain") == ""
    listed = run("list")
    assert listed.code == 0 and other["id"] in listed.out and target["id"] not in listed.out
    cache = b"".join(f.read_bytes() for f in (ws / ".cache").rglob("*") if f.is_file())
    assert WORD.encode() not in cache  # the index was rebuilt, not left with the text in free pages
    assert run("recall", "Tuesdays").out.count(other["id"]) == 1


def test_purge_history_refused_with_uncommitted_changes(ws, run):
    a = remember(run, SECRET_TEXT)
    with open(ws / "memcli.toml", "a", encoding="utf-8") as handle:
        handle.write("# a local edit\n")
    start = head(ws)
    result = run("purge", a["id"], "--history", "--yes")
    assert result.code == 13, result
    assert result.err.count("\n") == 1 and "uncommitted" in result.err and "memcli.toml" in result.err
    assert (ws / a["path"]).exists() and head(ws) == start
    assert WORD in git(ws, "log", "-p")


def test_purge_history_in_a_project_repository_warns_about_the_whole_project(tmp_path, run, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "app.py").write_text("print('hello')\n")
    git(project, "add", "app.py")
    git(project, "commit", "-q", "-m", "app")
    assert run_memcli("init", "--hidden", str(project)).code == 0
    monkeypatch.setenv("MEMCLI_WORKSPACE", str(project / ".memcli"))
    a = remember(run, SECRET_TEXT)
    result = run("purge", a["id"], "--history", "--yes")
    assert result.code == 0, result
    assert "whole project's history" in result.err
    assert WORD not in git(project, "log", "--all", "-p")
    assert git(project, "log", "--format=%s", "--", "app.py").strip() == "app"
    assert (project / "app.py").read_text() == "print('hello')\n"
    logged = run("--json", "log", a["id"])
    assert logged.code == 0 and [e["trailers"]["op"] for e in logged.json()["data"]["entries"]] == ["purge", "remember"]


@pytest.mark.slow
def test_purge_history_keeps_the_audit_trail_without_the_text(ws, run):
    """Newcomer report 1, problem 5: the purge commit survives the rewrite and `log ID` finds it."""
    a = remember(run, SECRET_TEXT)
    assert run("forget", a["id"]).code == 0
    result = run("purge", a["id"], "--history", "--yes")
    assert result.code == 0, result
    assert WORD not in git(ws, "log", "--all", "-p") and WORD not in git(ws, "log", "--all", "--format=%B")
    subjects = git(ws, "log", "--format=%s").splitlines()
    assert subjects[0] == f"memcli: purge {a['id']} (project) by alice"
    assert f"memcli: remember {a['id']} (project) by alice" in subjects  # emptied, kept: the trail stays whole
    logged = run("--json", "log", a["id"])
    assert logged.code == 0, logged
    entries = logged.json()["data"]["entries"]
    assert [e["trailers"]["op"] for e in entries] == ["purge", "forget", "remember"]
    assert entries[0]["commit"] == head(ws) and WORD not in logged.out
    text = run("log", a["id"][:8])
    assert text.code == 0 and text.out.splitlines()[0].split("\t")[1:3] == ["purge", a["id"]]
    everything = run("log")
    assert everything.code == 0 and f"purge\t{a['id']}" in everything.out
    history = run("history", a["id"])
    assert history.code == 4 and f"memcli log {a['id']}" in history.err and history.err.count("\n") == 1


def test_another_users_purged_memory_stays_unknown(shared_tree_ws, ws, run):
    mine = run("--json", "--actor", "bob", "remember", SECRET_TEXT, "--scope", "user:bob").json()["data"]["id"]
    assert run("--actor", "bob", "purge", mine, "--history", "--yes").code == 0
    assert run("--actor", "bob", "log", mine).code == 0
    hidden = run("log", mine)
    assert hidden.code == 4 and hidden.out == "" and "user:bob" not in hidden.err


def test_scrub_takes_the_text_out_of_single_and_batch_messages():
    single = (f"memcli: forget 01abcd (project) by alice\n\n{SECRET_TEXT}\n\n"
              "Memcli-Op: forget\nMemcli-Id: 01abcd\nMemcli-Scope: project\n").encode()
    out = scrub(single, "01abcd", [SECRET_TEXT]).decode()
    assert WORD not in out and out.startswith("memcli: forget 01abcd") and "Memcli-Id: 01abcd" in out
    batch = ("memcli: import 2 memories (project) by alice\n\n"
             f"- 01abcd: {SECRET_TEXT[:100]}\n- 01efgh: Keep it\n\n"
             "Memcli-Op: import\nMemcli-Id: 01abcd 01efgh\n").encode()
    out = scrub(batch, "01abcd", [SECRET_TEXT]).decode()
    assert WORD not in out and "- 01efgh: Keep it" in out and f"- 01abcd: {PURGED}" in out
    other = f"Fix the build\n\nAs noted: {SECRET_TEXT}\n".encode()
    assert WORD not in scrub(other, "01abcd", [SECRET_TEXT]).decode()
    short = b"Use pnpm\n\nUse pnpm everywhere\n"
    assert scrub(short, "01abcd", ["Use pnpm"]) == short  # too short to search for outside its own commits


# --- a session summary's raw transcript (archive/transcripts/<sha256>.jsonl.gz) ----------------


def summarise_with_a_secret(run, tmp_path: Path, name: str = "session.jsonl",
                            session: str = "7a1b2c3d-0000-4000-8000-00000000abcd") -> tuple[dict, str]:
    text = transcript(session).replace("We decided to keep the CSV format.",
                                       f"We decided to keep the CSV format. The bot token is {GITHUB_TOKEN} today.")
    result = run("--json", "compact", "--transcript", str(write_transcript(tmp_path, name, text)))
    assert result.code == 0, result
    data = result.json()["data"]
    return data, data["archive"]


def test_plain_purge_of_a_session_summary_keeps_its_raw_transcript_and_says_where(shared_tree_ws, ws, run, tmp_path):
    data, archive = summarise_with_a_secret(run, tmp_path)
    assert (ws / archive).is_file() and GITHUB_TOKEN.encode() in gzip.decompress((ws / archive).read_bytes())
    result = run("purge", data["id"], "--yes")
    assert result.code == 0, result
    assert result.err == (f"memcli: warning: the raw session transcript this summary was made from stays at {archive} "
                          "(secrets included, if it held any): `purge --history` deletes it with the memory, "
                          "or delete it by hand\n")
    assert "raw session transcript" not in result.out
    assert (ws / archive).is_file()  # undo may bring the summary back, and its source with it
    assert run("undo").code == 0
    as_json = run("--json", "purge", data["id"], "--yes").json()
    assert (as_json["data"]["transcript"], as_json["data"]["transcriptDeleted"]) == (archive, False)
    assert as_json["warnings"] and archive in as_json["warnings"][-1]


@pytest.mark.slow
def test_purge_history_of_a_session_summary_deletes_its_raw_transcript(shared_tree_ws, ws, run, tmp_path):
    data, archive = summarise_with_a_secret(run, tmp_path)
    other, other_archive = summarise_with_a_secret(run, tmp_path, "other.jsonl", "8b2c3d4e-0000-4000-8000-00000000abcd")
    result = run("purge", data["id"], "--history", "--yes")
    assert result.code == 0, result
    assert result.out.strip().endswith(f"; its raw session transcript {archive} is deleted")
    assert "stays at" not in result.err
    assert not (ws / archive).exists()
    assert (ws / other_archive).is_file()  # another session's transcript is not touched
    assert "Speed up the export" not in git(ws, "log", "--all", "-p")  # nothing of the session left in git
    for path in ws.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            raw = path.read_bytes()
            assert GITHUB_TOKEN.encode() not in (gzip.decompress(raw) if path.suffix == ".gz" else raw) \
                or path == ws / other_archive, path
    as_json = run("--json", "purge", other["id"], "--history", "--yes").json()["data"]
    assert (as_json["transcript"], as_json["transcriptDeleted"]) == (other_archive, True)
    assert not (ws / other_archive).exists()
    assert [p.name for p in (ws / "archive").rglob("*") if p.is_file()] == [".gitignore"]


@pytest.mark.slow
def test_purge_history_deletes_only_an_archive_the_provenance_names_exactly(shared_tree_ws, ws, run, tmp_path):
    data, archive = summarise_with_a_secret(run, tmp_path)
    other, other_archive = summarise_with_a_secret(run, tmp_path, "other.jsonl", "8b2c3d4e-0000-4000-8000-00000000abcd")
    path = path_of(ws, data["id"])
    text = (ws / path).read_text(encoding="utf-8")
    (ws / path).write_text(text.replace(f"source: {archive}", f"source: {other_archive}"), encoding="utf-8")
    hand_commit(ws, path)  # source now names another transcript, whose digest is not this memory's sha256
    result = run("--json", "purge", data["id"], "--history", "--yes")
    assert result.code == 0, result
    assert (result.json()["data"]["transcript"], result.json()["data"]["transcriptDeleted"]) == (None, False)
    assert (ws / archive).is_file() and (ws / other_archive).is_file()


@pytest.mark.slow
def test_purge_history_keeps_a_transcript_another_memory_still_names(shared_tree_ws, ws, run, tmp_path):
    data, archive = summarise_with_a_secret(run, tmp_path)
    other, other_archive = summarise_with_a_secret(run, tmp_path, "other.jsonl", "8b2c3d4e-0000-4000-8000-00000000abcd")
    path = path_of(ws, other["id"])
    text = (ws / path).read_text(encoding="utf-8")
    digest, other_digest = archive.split("/")[-1].split(".")[0], other_archive.split("/")[-1].split(".")[0]
    (ws / path).write_text(text.replace(other_digest, digest), encoding="utf-8")  # a hand copy of the provenance
    hand_commit(ws, path)
    result = run("purge", data["id"], "--history", "--yes")
    assert result.code == 0, result
    assert f"memcli: warning: the raw session transcript {archive} is kept: {other['id']} also names it as its " \
           "source\n" in result.err
    assert (ws / archive).is_file() and "raw session transcript" not in result.out
