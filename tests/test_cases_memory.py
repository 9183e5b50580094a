"""CASES.md table M: memory semantics and safety (M1 duplicates, M2 expiry, M3 personal
scopes, M4 secrets). Real git repositories, the real CLI in subprocesses.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git

IDENT = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid")


def ids_of(result) -> list[str]:
    data = result.json()["data"]
    items = data.get("memories", data.get("hits", []))
    return [m["id"] for m in items]


def commits(ws: Path) -> int:
    return int(git(ws, "rev-list", "--count", "HEAD").strip())


# --- M1 ------------------------------------------------------------------------------


def test_m1_case_and_space_variants_are_one_memory(ws, run):
    first = run("--json", "remember", "pgbouncer needs prepared statements off")
    assert first.code == 0, first
    memory_id = first.json()["data"]["id"]
    head = commits(ws)
    for variant in ("PgBouncer needs Prepared Statements OFF", "  pgbouncer   needs prepared\tstatements  off "):
        again = run("remember", variant)
        assert again.code == 0, again
        assert again.out.strip() == f"already exists: {memory_id}", again
        as_json = run("--json", "remember", variant)
        assert as_json.code == 0 and as_json.json()["data"]["outcome"] == "noop"
        assert as_json.json()["data"]["id"] == memory_id and as_json.json()["data"]["gate"] == "duplicate"
    assert len(list((ws / "memories").rglob("*.md"))) == 1
    assert commits(ws) == head
    assert git(ws, "status", "--porcelain") == ""
    assert ids_of(run("--json", "list")) == [memory_id]
    assert run("--json", "show", memory_id).json()["data"]["status"] == "active"  # nothing deleted
    context = run("context")
    assert context.code == 0
    assert context.out.count(memory_id) == 1 and context.out.lower().count("pgbouncer") == 1


# --- M2 ------------------------------------------------------------------------------


def _expired_by_flag(ws, run) -> str:
    made = run("--json", "remember", "The winter freeze blocks deploys until new year.",
               "--expire-at", "2025-01-01T00:00:00Z", env={"MEMCLI_NOW": "2024-12-20T00:00:00Z"})
    assert made.code == 0, made
    assert made.json()["data"]["memory"]["expireAt"] == "2025-01-01T00:00:00Z"
    return made.json()["data"]["id"]


def _expired_by_hand(ws, run) -> str:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "winterfreeze.md").write_text(
        "---\nscope: project\nexpireAt: 2025-01-01T00:00:00Z\n---\n"
        "The winter freeze blocks deploys until new year.\n", encoding="utf-8")
    git(ws, "add", "memories")
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", "hand"], check=True)
    return "winterfreeze"


@pytest.mark.parametrize("make", [_expired_by_flag, _expired_by_hand], ids=["expire-at", "hand-written"])
def test_m2_expired_memory_is_not_served(ws, run, make):
    expired = make(ws, run)
    live = run("--json", "remember", "The winter deploy window is Tuesday.",
               env={"MEMCLI_NOW": "2024-12-20T00:00:00Z"}).json()["data"]["id"]
    env = {"MEMCLI_NOW": "2025-01-02"}

    assert ids_of(run("--json", "list", env=env)) == [live]
    assert ids_of(run("--json", "recall", "winter", env=env)) == [live]
    context = run("context", env=env)
    assert context.code == 0 and live in context.out
    assert expired not in context.out and "freeze" not in context.out

    shown = run("--json", "show", expired, env=env)
    assert shown.code == 0 and shown.json()["data"]["expired"] is True
    assert shown.json()["data"]["status"] == "active"  # expiry is computed, not a status
    assert "(expired)" in run("show", expired, env=env).out

    for args in (("list", "--include-expired"), ("recall", "winter", "--include-expired")):
        found = {m["id"]: m for m in (run("--json", *args, env=env).json()["data"].get("memories")
                                      or run("--json", *args, env=env).json()["data"].get("hits"))}
        assert set(found) == {expired, live}, args
        assert found[expired]["expired"] is True and found[live]["expired"] is False
    assert "(expired)" in run("list", "--include-expired", env=env).out

    before = {"MEMCLI_NOW": "2024-12-31T23:59:59Z"}  # one second earlier it is still served
    assert expired in ids_of(run("--json", "list", env=before))
    assert expired in run("context", env=before).out


# --- M3 ------------------------------------------------------------------------------


@pytest.fixture
def three_scopes(ws, run):
    project = run("--json", "remember", "The quokka service runs on port 8443.").json()["data"]["id"]
    alice = run("--json", "remember", "Alice likes the quokka dashboards dark.", "--scope", "user:alice")
    bob = run("--json", "remember", "Bob keeps quokka notes in his private journal.", "--scope", "user:bob",
              env={"MEMCLI_ACTOR": "bob"})
    assert alice.code == 0 and bob.code == 0, (alice, bob)
    return project, alice.json()["data"]["id"], bob.json()["data"]["id"]


def test_m3_other_users_memories_never_appear(run, three_scopes):
    project, alice, bob = three_scopes
    everything = [
        run("--json", "list", "--include-expired", "--status", "active", "--status", "archived"),
        run("--json", "recall", "notes"), run("--json", "recall", "--grep", "."),
        run("--json", "recall", "privte", "--fuzzy"), run("--json", "review"),
        run("context"), run("context", "--query", "notes"), run("recall", "quokka"),
    ]
    for result in everything:
        assert result.code == 0, result
        assert bob not in result.out and "Bob keeps" not in result.out and "private" not in result.out, result
    assert set(ids_of(run("--json", "list"))) == {project, alice}
    assert set(ids_of(run("--json", "recall", "quokka"))) == {project, alice}
    as_bob = run("--json", "list", env={"MEMCLI_ACTOR": "bob"})
    assert set(ids_of(as_bob)) == {project, bob}


def test_m3_log_leaves_out_another_users_personal_memories(run, three_scopes):
    project, alice, bob = three_scopes
    ids = [e["trailers"]["id"] for e in run("--json", "log").json()["data"]["entries"] if "id" in e["trailers"]]
    assert project in ids and alice in ids and bob not in ids
    assert run("--json", "log", bob).code == 4
    entries = run("--json", "log", env={"MEMCLI_ACTOR": "bob"}).json()["data"]["entries"]
    as_bob = [e["trailers"].get("id") for e in entries]
    assert bob in as_bob and alice not in as_bob


def test_m3_show_of_another_users_memory_answers_as_unknown(run, three_scopes):
    _, _, bob = three_scopes
    fake = "zz" + bob[2:]  # same length and shape; ULIDs never start with "z"
    # ULIDs made in one millisecond share their first 10 characters: a 20-character prefix is bob's alone
    for mine, theirs in ((bob, fake), (bob[:20], fake[:20])):
        hidden, unknown = run("--json", "show", mine), run("--json", "show", theirs)
        assert hidden.code == unknown.code == 4, (hidden, unknown)
        h, u = hidden.json()["error"], unknown.json()["error"]
        assert h["code"] == u["code"] == "memory_not_found"
        assert h["message"].replace(mine, "ID") == u["message"].replace(theirs, "ID")
        assert h["hint"] == u["hint"]
        text_hidden, text_unknown = run("show", mine), run("show", theirs)
        assert text_hidden.code == 4 and text_hidden.out == ""
        assert text_hidden.err.replace(mine, "ID") == text_unknown.err.replace(theirs, "ID")
    for args in (("forget", bob), ("approve", bob), ("supersede", bob, "Alice overwrites Bob."), ("log", bob)):
        result = run("--json", *args)
        assert result.code == 4, result
    assert run("--json", "show", bob, env={"MEMCLI_ACTOR": "bob"}).json()["data"]["status"] == "active"


def test_m3_a_prefix_shared_with_a_hidden_memory_is_not_ambiguous(shared_tree_ws, run):
    """An ambiguity error would reveal that a hidden memory exists: hidden ones are not counted.
    (A tree that keeps personal scopes: in a workspace with an id they live in each person's
    own store, and a ``user:*`` file in the shared tree is never served, issue 22.)"""
    ws = shared_tree_ws
    for owner in ("alice", "bob"):
        folder = ws / "memories" / "user" / owner
        folder.mkdir(parents=True)
        (folder / f"shared-{owner}.md").write_text(f"Note of {owner}.\n", encoding="utf-8")
    shown = run("--json", "show", "shared")
    assert shown.code == 0, shown
    assert shown.json()["data"]["id"] == "shared-alice"
    assert "bob" not in shown.out


def test_m3_reading_another_users_scope_is_refused(run, three_scopes):
    for args in (("recall", "quokka", "--scope", "user:bob"), ("list", "--scope", "user:bob"),
                 ("recall", "quokka", "--scope", "project", "--scope", "user:bob")):
        result = run("--json", *args)
        assert result.code == 5, result
        assert result.json()["error"]["code"] == "scope_violation"
        assert "Bob keeps" not in result.out
    refused = run("--json", "remember", "Alice writes into Bob's scope.", "--scope", "user:bob")
    assert refused.code == 5 and refused.json()["error"]["code"] == "scope_violation"


# --- M4 ------------------------------------------------------------------------------

# Assembled at run time so this file does not itself look like a leaked credential.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GH_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----"

SECRETS = [
    ("AWS secret access key", f"The CI user has aws_secret_access_key = {AWS_SECRET} for uploads.", AWS_SECRET),
    ("GitHub token", f"Use the token {GH_TOKEN} to push release tags.", GH_TOKEN),
    ("private key (PEM)", f"The deploy key is:\n{PEM}\n", PEM_BODY),
]


def _everything(tmp_path: Path) -> bytes:
    blob = b""
    for path in tmp_path.rglob("*"):
        if path.is_file():
            blob += path.read_bytes()
    return blob


@pytest.mark.parametrize("kind,text,secret", SECRETS, ids=["aws", "github", "pem"])
def test_m4_secret_refused_and_never_echoed(ws, run, tmp_path, kind, text, secret):
    keep = run("--json", "remember", "The release bot pushes tags.").json()["data"]["id"]
    head = commits(ws)
    attempts = [
        run("remember", text), run("--json", "remember", text), run("--json", "remember", "-", input=text),
        run("--json", "supersede", keep, text),
        run("--json", "remember", "The CI user is documented.", "--tag", text.strip().replace("\n", " ")),
    ]
    for result in attempts:
        assert result.code == 6, result
        assert secret not in result.out and secret not in result.err, result
        assert secret[:12] not in result.out + result.err
    text_mode = attempts[0]
    assert text_mode.out == "" and kind in text_mode.err
    for result in attempts[1:]:
        error = result.json()["error"]
        assert error["code"] == "secret_detected" and error["exit"] == 6
        assert kind in error["message"], error
        assert secret not in str(result.json())

    assert commits(ws) == head
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    assert run("--json", "show", keep).json()["data"]["status"] == "active"
    assert secret.encode() not in _everything(tmp_path)  # files, cache, and .git (loose objects are
    history = git(ws, "log", "-p", "--all")              # compressed, so also ask git itself)
    objects = subprocess.run(["git", "-C", str(ws), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True).stdout
    assert secret not in history and secret.encode() not in objects
    context = run("context")
    assert context.code == 0 and secret not in context.out and keep in context.out
    assert secret not in run("--json", "recall", "--grep", ".", "--include-expired").out
