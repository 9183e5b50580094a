"""`memcli doctor --fix`: hand-written files get the documented defaults written in (SPEC.md section 2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from memcli import fileformat

ADDED = "2025-01-02T03:04:05Z"
BODY_ONLY = b"Deploys go out on Tuesdays.\r\nNever on Fridays.\r\n"  # CRLF, no front-matter
PARTIAL_HEAD = b"---\n# written by hand\ncategory: decision   # agreed in review\ntags: [ops]\n---\n"
PARTIAL_BODY = b"\nUse blue-green deploys for the API.\n\n"
BROKEN = b"---\nstatus: [\n---\nThis file cannot be parsed.\n"
KEYS = ["id", "scope", "category", "status", "importance", "createdAt", "updatedAt", "provenance"]


def commits(ws: Path) -> list[str]:
    return git(ws, "rev-list", "HEAD").split()


def seen(run, ref: str) -> dict:
    """What a reader sees of one memory: through `show` and through `recall`."""
    shown = run("--json", "show", ref)
    assert shown.code == 0, shown
    data = shown.json()["data"]
    return {k: data[k] for k in ("id", "scope", "status", "category", "importance", "text", "provenance")}


def recalled(run, words: str) -> list[tuple]:
    hits = run("--json", "recall", words).json()["data"]["hits"]
    return [(h["id"], h["scope"], h["status"]) for h in hits]


@pytest.fixture
def hand(ws, run):
    """A workspace with a body-only file, a partial one, a broken one (all committed by hand on
    ADDED), and one memory written by memcli."""
    written = run("--json", "remember", "Run the tests with pytest -n 2.").json()["data"]["id"]
    project, mine = ws / "memories" / "project", ws / "memories" / "user" / "alice"
    mine.mkdir(parents=True)
    (project / "handnote.md").write_bytes(BODY_ONLY)
    (project / "Blue-Green.md").write_bytes(PARTIAL_HEAD + PARTIAL_BODY)  # a personal one would move (service.move)
    (project / "broken.md").write_bytes(BROKEN)
    git(ws, "add", "memories")
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "notes written by hand"], check=True,
                   env={**os.environ, "GIT_AUTHOR_DATE": ADDED, "GIT_COMMITTER_DATE": ADDED})
    return {"written": written, "body": project / "handnote.md", "partial": project / "Blue-Green.md",
            "broken": project / "broken.md"}


def test_fix_writes_the_defaults_in_one_commit(hand, ws, run):
    before = {ref: seen(run, ref) for ref in ("handnote", "blue-green", hand["written"])}
    found_before = recalled(run, "deploys")
    written_bytes = next((ws / "memories").rglob(f"{hand['written']}*.md")).read_bytes()
    head = commits(ws)

    result = run("--json", "doctor", "--fix")
    assert result.code == 11, result  # the broken file is still there
    data = result.json()["data"]
    assert {f["path"]: f["added"] for f in data["fixed"]} == {
        "memories/project/handnote.md": KEYS,
        "memories/project/Blue-Green.md": [k for k in KEYS if k != "category"]}
    assert [p["path"] for p in data["problems"]] == ["memories/project/broken.md"]

    assert commits(ws)[1:] == head and data["commit"] == commits(ws)[0]  # exactly one new commit
    assert git(ws, "show", "--name-only", "--format=", "HEAD").split() == [
        "memories/project/Blue-Green.md", "memories/project/handnote.md"]
    message = git(ws, "log", "-1", "--format=%B")
    assert message.startswith("memcli: doctor 2 memories") and "Memcli-Op: doctor" in message

    body = hand["body"].read_bytes()  # a front-matter block before the untouched body, in its line endings
    assert body.endswith(b"\r\n---\r\n" + BODY_ONLY) and body.startswith(b"---\r\nid: handnote\r\n")
    partial = hand["partial"].read_bytes()
    assert partial.startswith(PARTIAL_HEAD[:-4]) and partial.endswith(b"---\n" + PARTIAL_BODY)
    assert hand["broken"].read_bytes() == BROKEN
    assert next((ws / "memories").rglob(f"{hand['written']}*.md")).read_bytes() == written_bytes

    meta = fileformat.parse(body, "handnote.md").meta
    assert meta["id"] == "handnote" and meta["scope"] == "project" and meta["status"] == "active"
    assert meta["category"] == "fact" and meta["importance"] == 3
    assert b"\r\ncreatedAt: 2025-01-02T03:04:05Z\r\nupdatedAt: 2025-01-02T03:04:05Z\r\n" in body
    assert dict(meta["provenance"]) == {"sourceType": "admin_edit", "actor": "unknown", "runId": None}
    partial_meta = fileformat.parse(partial, "Blue-Green.md").meta
    assert partial_meta["category"] == "decision" and partial_meta["scope"] == "project"

    after = {ref: seen(run, ref) for ref in ("handnote", "blue-green", hand["written"])}
    assert after == before
    assert recalled(run, "deploys") == found_before
    assert run("--json", "show", "handnote").json()["data"]["createdAt"] == ADDED


def test_a_second_fix_is_a_no_op(hand, ws, run):
    assert run("doctor", "--fix").code == 11
    head = commits(ws)
    files = {p: p.read_bytes() for p in (ws / "memories").rglob("*.md")}
    again = run("--json", "doctor", "--fix")
    assert again.code == 11 and again.json()["data"]["fixed"] == [] and again.json()["data"]["commit"] is None
    assert commits(ws) == head
    assert {p: p.read_bytes() for p in (ws / "memories").rglob("*.md")} == files
    text = run("doctor", "--fix")
    assert "nothing to fix" in text.err and text.out == "memories/project/broken.md:2: " \
        "invalid YAML front-matter: expected the node content, but found '<stream end>'\n"


def test_fix_without_broken_files_exits_0_and_says_what_it_did(ws, run):
    (ws / "memories" / "project").mkdir(parents=True)
    (ws / "memories" / "project" / "note.md").write_text("Lint before pushing.\n", encoding="utf-8")
    result = run("doctor", "--fix")
    assert result.code == 0, result
    assert result.out == "fixed memories/project/note.md: wrote " + ", ".join(KEYS) + "\n"
    assert "wrote defaults into 1 file (commit" in result.err and "all memory files are readable" in result.err
    assert git(ws, "status", "--porcelain") == ""  # the new file was committed with its defaults


def test_a_file_git_never_saw_takes_its_modification_time(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    note = folder / "untracked.md"
    note.write_text("---\nimportance: 5\n---\nThe VPN moved to vpn2.\n", encoding="utf-8")
    os.utime(note, (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z
    assert run("--json", "show", "untracked").json()["data"]["createdAt"] == "2023-11-14T22:13:20Z"
    assert run("doctor", "--fix").code == 0
    shown = run("--json", "show", "untracked").json()["data"]
    assert shown["createdAt"] == shown["updatedAt"] == "2023-11-14T22:13:20Z" and shown["importance"] == 5
    assert "importance: 5\n" in note.read_text(encoding="utf-8")


def test_fix_leaves_other_users_personal_files_alone(ws, run):
    bob = ws / "memories" / "user" / "bob"
    bob.mkdir(parents=True)
    (bob / "editor.md").write_bytes(b"Bob uses vim.\n")
    head = commits(ws)
    result = run("--json", "doctor", "--fix")
    assert result.code == 0 and result.json()["data"]["fixed"] == [] and commits(ws) == head
    assert (bob / "editor.md").read_bytes() == b"Bob uses vim.\n"
    # a workspace with an id: a personal file in its tree may be a teammate's plant, so it is neither
    # served to bob nor moved into his store (issue 22); doctor names it
    moved = run("--json", "--actor", "bob", "doctor", "--fix")
    assert not any("moved" in line for line in moved.json()["data"]["personal"])
    assert "a personal scope (user:bob) in the shared tree: never served" in moved.out
    assert (bob / "editor.md").exists()


def test_fix_without_autocommit_writes_and_leaves_the_commit_to_you(ws, run):
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("autocommit = true", "autocommit = false"),
                      encoding="utf-8")
    git(ws, "commit", "-qam", "no autocommit")
    (ws / "memories" / "project").mkdir(parents=True)
    (ws / "memories" / "project" / "note.md").write_text("Lint before pushing.\n", encoding="utf-8")
    head = commits(ws)
    result = run("--json", "doctor", "--fix")
    assert result.code == 0 and result.json()["data"]["commit"] is None and commits(ws) == head
    assert (ws / "memories" / "project" / "note.md").read_text(encoding="utf-8").startswith("---\nid: note\n")


def test_plain_doctor_is_unchanged_and_writes_nothing(hand, ws, run):
    head = commits(ws)
    result = run("--json", "doctor")
    data = result.json()["data"]
    # repository: what doctor found in git; semantic: SPEC.md section 5; stale: issue 23
    assert result.code == 11 and set(data) <= {"problems", "repository", "personal", "semantic", "stale", "staleBehind",
                                                   "secrets"}
    assert not data.get("repository"), data
    assert hand["body"].read_bytes() == BODY_ONLY and commits(ws) == head


def test_fix_never_commits_a_file_holding_a_secret(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    token = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
    (folder / "leaky.md").write_text(f"The CI token is {token}\n", encoding="utf-8")
    (folder / "clean.md").write_text("CI runs on every push.\n", encoding="utf-8")
    result = run("--json", "doctor", "--fix")
    assert result.code == 6, result
    data = result.json()["data"]
    assert [f["path"] for f in data["fixed"]] == ["memories/project/clean.md"]
    assert [r["path"] for r in data["refused"]] == ["memories/project/leaky.md"]
    assert data["refused"][0]["reason"] == "refused: the text holds a GitHub token at line 1, column 17"
    assert token not in result.out
    assert (folder / "leaky.md").read_text(encoding="utf-8") == f"The CI token is {token}\n"
    assert "leaky.md" not in git(ws, "log", "--all", "--name-only", "--format=")
    text = run("doctor", "--fix")
    assert text.code == 6 and text.out.startswith("not fixed memories/project/leaky.md: refused:")


# --- second newcomer report: uncommitted edits are skipped; an id is the ULID of <ulid>-<slug>.md --


@pytest.mark.parametrize("stage", [False, True], ids=["unstaged", "staged"])
def test_fix_skips_a_committed_file_with_uncommitted_edits(ws, run, stage):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text("Deploy on Tuesdays.\n", encoding="utf-8")
    git(ws, "add", "memories")
    git(ws, "commit", "-qm", "by hand")
    with (folder / "deploy.md").open("a", encoding="utf-8") as out:
        out.write("DRAFT: maybe Wednesdays\n")
    if stage:
        git(ws, "add", "memories/project/deploy.md")
    draft = (folder / "deploy.md").read_bytes()
    (folder / "new-note.md").write_text("Lint before pushing.\n", encoding="utf-8")  # never committed: adopted
    result = run("--json", "doctor", "--fix")
    assert result.code == 0, result
    data = result.json()["data"]
    assert [f["path"] for f in data["fixed"]] == ["memories/project/new-note.md"]
    assert data["skipped"] == [{"path": "memories/project/deploy.md", "reason": "uncommitted edits; commit or "
                                "discard them first (see `git diff -- memories/project/deploy.md`)"}]
    assert (folder / "deploy.md").read_bytes() == draft
    assert "DRAFT" not in git(ws, "log", "-p", "--all")
    assert git(ws, "show", "--name-only", "--format=", "HEAD").split() == ["memories/project/new-note.md"]
    text = run("doctor", "--fix")
    assert text.code == 0 and text.out.startswith("skipped memories/project/deploy.md: uncommitted edits")
    assert "nothing to fix; 1 file with uncommitted edits skipped" in text.err


def test_the_id_of_a_ulid_named_file_is_the_ulid(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "01m3aaaaaaaaaaaaaaaaaaaaaa-build.md").write_text("Build with make -j4.\n", encoding="utf-8")
    (folder / "01m3aaaaaaaaaaaaaaaaaaaaaa.md").parent.joinpath("notes-build.md").write_text(
        "Build notes live in the wiki.\n", encoding="utf-8")
    (folder / "01m3aaaaaaaaaaaaaaaaaaaaai-x.md").write_text("Not a ULID (i).\n", encoding="utf-8")
    ulid = "01m3aaaaaaaaaaaaaaaaaaaaaa"
    assert run("--json", "show", ulid).json()["data"]["id"] == ulid
    ids = {m["id"] for m in run("--json", "list").json()["data"]["memories"]}
    assert ids == {ulid, "notes-build", "01m3aaaaaaaaaaaaaaaaaaaaai-x"}
    result = run("--json", "doctor", "--fix")
    assert result.code == 0, result
    assert {f["id"] for f in result.json()["data"]["fixed"]} == ids
    meta = fileformat.parse((folder / "01m3aaaaaaaaaaaaaaaaaaaaaa-build.md").read_bytes(), "x.md").meta
    assert meta["id"] == ulid
    assert run("--json", "show", ulid).json()["data"]["path"] == "memories/project/01m3aaaaaaaaaaaaaaaaaaaaaa-build.md"


def test_doctor_names_hand_written_files_that_hold_a_secret(ws, run):
    """`doctor` said "all memory files are readable" (exit 0) while two uncommitted hand-written
    files held a GitHub token and an AWS key; only `doctor --fix` and `check` named them."""
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (folder / "deploy-token.md").write_text(f"The deploy token is {token} for the CI.\n", encoding="utf-8")
    (folder / "aws.md").write_text("The AWS key is AKIAIOSFODNN7EXAMPLQ for uploads.\n", encoding="utf-8")
    (folder / "plain.md").write_text("Deploys go out on Tuesdays.\n", encoding="utf-8")
    result = run("doctor")
    assert result.code == 6, result
    named = [line for line in result.out.splitlines() if "holds a secret" in line]
    assert [line.split(":")[0] for line in named] == ["memories/project/aws.md", "memories/project/deploy-token.md"]
    assert "GitHub token" in result.out and "AWS access key" in result.out and token not in result.out + result.err
    assert "2 hold a secret" in result.err, result.err
    data = run("--json", "doctor").json()["data"]
    assert sorted(r["path"] for r in data["secrets"]) == ["memories/project/aws.md", "memories/project/deploy-token.md"]
    assert git(ws, "status", "--porcelain", "--", "memories").count("??") == 1  # nothing written or committed
