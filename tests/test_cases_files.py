"""CASES.md F1-F8 (front-matter and files), each through the real CLI on real files and git.

Hand-written memory files go under ``memories/project/``: the folder gives the scope and,
without an ``id`` key, the file name gives the id (``MemoryFiles.load``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git
from memcli import fileformat
from memcli.store.files import MemoryFiles

SKIPPED = "fix or remove the file; `memcli doctor` lists every such file"


def put(ws: Path, name: str, data: bytes) -> Path:
    path = ws / "memories" / "project" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def listed(result) -> dict[str, dict]:
    assert result.code == 0, result
    return {m["id"]: m for m in result.json()["data"]["memories"]}


def git_commit_all(ws: Path, message: str) -> None:
    git(ws, "add", "--", "memories")
    git(ws, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)


# --- F1: a UTF-8 byte-order mark before '---' ------------------------------------------

F1 = b"---\ncategory: preference\nimportance: 4\ncreatedAt: 2025-01-01T00:00:00Z\n---\nUse pnpm, not npm.\n"


def test_f1_bom_read_like_plain(ws, run):
    put(ws, "plain1.md", F1)
    put(ws, "bomed1.md", b"\xef\xbb\xbf" + F1)
    memories = listed(run("--json", "list"))
    plain, bomed = memories.pop("plain1"), memories.pop("bomed1")
    assert memories == {}
    assert {**bomed, "id": "plain1", "path": "memories/project/plain1.md"} == plain
    assert (bomed["text"], bomed["category"], bomed["importance"]) == ("Use pnpm, not npm.", "preference", 4)
    loaded = MemoryFiles(ws).load(ws / "memories/project/bomed1.md")
    assert loaded.memory.body == "Use pnpm, not npm.\n" and loaded.doc.bom is True
    assert "\ufeff" not in loaded.memory.body and "---" not in loaded.memory.body


def test_f1_bom_kept_by_a_status_rewrite(ws, run):
    path = put(ws, "bomed1.md", b"\xef\xbb\xbf" + F1)
    assert run("forget", "bomed1", env={"MEMCLI_NOW": "2025-02-01T00:00:00Z"}).code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + F1.replace(
        b"---\nUse", b"status: archived\nupdatedAt: 2025-02-01T00:00:00Z\n---\nUse")


# --- F2: CRLF line endings, from the working tree and from `git show` -------------------

F2 = (b"---\r\nid: crlf01\r\nscope: project\r\nstatus: active\r\ncreatedAt: 2025-01-01T00:00:00Z\r\n"
      b"updatedAt: 2025-01-01T00:00:00Z\r\ntags: [build, ci]\r\n---\r\nRun make before pushing.\r\n")
F2_PATH = "memories/project/crlf01.md"


def test_f2_crlf_same_metadata_from_tree_and_git_show(ws, run):
    put(ws, "crlf01.md", F2)
    git_commit_all(ws, "hand-written CRLF memory")
    shown = subprocess.run(["git", "-C", str(ws), "show", f"HEAD:{F2_PATH}"], check=True, capture_output=True).stdout
    assert shown == F2  # no autocrlf: git keeps the bytes
    files = MemoryFiles(ws)
    from_git = files.load(ws / F2_PATH, data=shown).memory
    from_tree = files.load(ws / F2_PATH).memory
    for memory in (from_git, from_tree):
        assert (memory.id, memory.scope, memory.status, memory.tags) == ("crlf01", "project", "active", ["build", "ci"])
        assert memory.text == "Run make before pushing."
    assert from_git.to_dict() == from_tree.to_dict()
    assert fileformat.parse(shown, F2_PATH).meta["status"] == "active"  # no trailing '\r'
    entry = listed(run("--json", "list"))["crlf01"]
    assert (entry["status"], entry["createdAt"], entry["tags"]) == ("active", "2025-01-01T00:00:00Z", ["build", "ci"])


def test_f2_crlf_status_rewrite_is_a_small_diff(ws, run):
    put(ws, "crlf01.md", F2)
    git_commit_all(ws, "hand-written CRLF memory")
    result = run("forget", "crlf01", env={"MEMCLI_NOW": "2025-06-01T00:00:00Z"})
    assert result.code == 0, result
    # forget changes exactly two lines: status and updatedAt (replaced in place, CRLF kept)
    assert git(ws, "diff", "--numstat", "HEAD~1", "HEAD").split() == ["2", "2", F2_PATH]
    diff = subprocess.run(["git", "-C", str(ws), "diff", "HEAD~1", "HEAD", "--", F2_PATH],
                          check=True, capture_output=True).stdout.split(b"\n")
    assert [line for line in diff if line[:1] in (b"+", b"-") and line[:3] not in (b"---", b"+++")] == [
        b"-status: active\r", b"+status: archived\r",
        b"-updatedAt: 2025-01-01T00:00:00Z\r", b"+updatedAt: 2025-06-01T00:00:00Z\r"]
    now = (ws / F2_PATH).read_bytes()
    assert now.count(b"\n") == now.count(b"\r\n") == F2.count(b"\r\n")


# --- F3: '---' inside a front-matter value and as a horizontal rule in the body ----------

F3 = (b'---\nid: fence3\nnote: "build --- then deploy"\nstatus: active\n---\nFirst build.\n\n---\n\n'
      b"Then deploy.\n")


def test_f3_fence_text_in_value_and_body_survive_load_and_save(ws, run):
    path = put(ws, "fence3.md", F3)
    loaded = MemoryFiles(ws).load(path)
    assert loaded.doc.meta["note"] == "build --- then deploy"
    assert loaded.memory.body == "First build.\n\n---\n\nThen deploy.\n"
    assert fileformat.update(loaded.doc, {}) == F3
    assert listed(run("--json", "list"))["fence3"]["text"] == "First build.\n\n---\n\nThen deploy."
    assert run("forget", "fence3", env={"MEMCLI_NOW": "2025-02-01T00:00:00Z"}).code == 0
    assert path.read_bytes() == F3.replace(b"status: active\n", b"status: archived\nupdatedAt: 2025-02-01T00:00:00Z\n")


# --- F4: empty, plain-string and list front-matter ---------------------------------------

F4_BAD = {
    "empty.md": (b"---\n---\nBody.\n", 1, "the front-matter is empty (remove the fences or add keys)"),
    "string.md": (b"---\njust a string\n---\nBody.\n", 2, "the front-matter is a string, expected a mapping of keys"),
    "listed.md": (b"---\n- a\n- b\n---\nBody.\n", 2, "the front-matter is a list, expected a mapping of keys"),
}


def test_f4_bad_front_matter_reported_rest_listed(ws, run):
    put(ws, "good01.md", b"---\nstatus: active\n---\nGood one.\n")
    put(ws, "good02.md", b"No front-matter at all.\n")
    for name, (data, _, _) in F4_BAD.items():
        put(ws, name, data)
    result = run("--json", "list")
    assert set(listed(result)) == {"good01", "good02"}
    assert sorted(result.json()["warnings"]) == sorted(
        f"skipped memories/project/{name}:{line}: {reason}; {SKIPPED}" for name, (_, line, reason) in F4_BAD.items())
    doctor = run("--json", "doctor")
    assert doctor.code == 11
    assert doctor.json()["data"]["problems"] == [
        {"path": f"memories/project/{name}", "line": line, "reason": reason}
        for name, (_, line, reason) in sorted(F4_BAD.items())]


# --- F5: a bare date and a date-time without offset --------------------------------------

F5 = b"---\nid: dates5\ncreatedAt: 2025-03-01\nexpireAt: 2025-03-01T12:00:00\n---\nRotate the staging keys.\n"


@pytest.mark.parametrize("tz", ["UTC", "America/Los_Angeles", "Asia/Tokyo"])
def test_f5_bare_date_and_naive_time_print_iso_utc(ws, run, tz):
    put(ws, "dates5.md", F5)
    before = listed(run("--json", "list", env={"MEMCLI_NOW": "2025-03-01T11:59:59Z", "TZ": tz}))["dates5"]
    # documented rule (memcli/timeutil.py): a date alone is 00:00 UTC; a time without offset is UTC
    assert (before["createdAt"], before["updatedAt"], before["expireAt"], before["expired"]) == (
        "2025-03-01T00:00:00Z", "2025-03-01T00:00:00Z", "2025-03-01T12:00:00Z", False)
    # recall is the search path (the index where there is one): it must take the file too
    hits = run("--json", "recall", "staging", env={"MEMCLI_NOW": "2025-03-01T11:59:59Z", "TZ": tz}).json()["data"]
    assert [h["id"] for h in hits["hits"]] == ["dates5"]
    at_noon = {"MEMCLI_NOW": "2025-03-01T12:00:00Z", "TZ": tz}
    assert listed(run("--json", "list", env=at_noon)) == {}
    assert listed(run("--json", "list", "--include-expired", env=at_noon))["dates5"]["expired"] is True


# --- F6: a date-only expireAt in two time zones ------------------------------------------

F6 = b"---\nid: expire6\nexpireAt: 2025-06-02\n---\nThe freeze ends with June.\n"


@pytest.mark.parametrize("tz, offset", [("America/Los_Angeles", "-0700"), ("Asia/Tokyo", "+0900")])
@pytest.mark.parametrize("now, expired", [("2025-06-02T03:00:00Z", True), ("2025-06-01T23:00:00Z", False)])
def test_f6_date_only_expiry_same_in_every_zone(ws, run, tz, offset, now, expired):
    # the zone is real here: otherwise the test could not tell the rules apart
    probe = subprocess.run([sys.executable, "-c",
                            "import time; print(time.strftime('%z', time.localtime(1748833200)))"],
                           capture_output=True, text=True, env={"TZ": tz}).stdout.strip()
    assert probe == offset
    put(ws, "expire6.md", F6)
    env = {"MEMCLI_NOW": now, "TZ": tz}
    entry = listed(run("--json", "list", "--include-expired", env=env))["expire6"]
    assert (entry["expireAt"], entry["expired"]) == ("2025-06-02T00:00:00Z", expired)
    assert ("expire6" in listed(run("--json", "list", env=env))) is not expired
    context = run("context", env=env)
    assert context.code == 0 and ("(id expire6)" in context.out) is not expired


# --- F7: tabs in front-matter --------------------------------------------------------------

TAB_REASON = ("invalid YAML front-matter: found character '\\t' that cannot start any token "
              "(tabs are not allowed for indentation or before a comment in YAML)")


def test_f7_tab_errors_name_path_and_line_rest_served(ws, run):
    put(ws, "good07.md", b"---\nstatus: active\n---\nServed anyway.\n")
    put(ws, "tabcomment.md", b"---\nid: tabcomment\nstatus: active\t# in force\n---\nBody.\n")
    put(ws, "tablist.md", b"---\nid: tablist\ntags:\n\t- a\n\t- b\n---\nBody.\n")
    assert run("--json", "doctor").json()["data"]["problems"] == [
        {"path": "memories/project/tabcomment.md", "line": 3, "reason": TAB_REASON},
        {"path": "memories/project/tablist.md", "line": 4, "reason": TAB_REASON}]
    result = run("list")
    assert result.code == 0 and result.out.startswith("good07\tproject\tfact\tactive\tServed anyway.")
    assert f"memcli: warning: skipped memories/project/tabcomment.md:3: {TAB_REASON}" in result.err
    assert f"memcli: warning: skipped memories/project/tablist.md:4: {TAB_REASON}" in result.err


# --- F8: fifty good memories and one invalid YAML file ------------------------------------
# `index rebuild` does not exist yet (a later issue); list, recall, context and doctor are checked.

BAD8 = "memories/project/broken.md"


@pytest.fixture
def fifty(ws: Path) -> list[str]:
    ids = [f"good{i:02d}" for i in range(50)]
    for i, memory_id in enumerate(ids):
        put(ws, f"{memory_id}.md", f"---\nimportance: {1 + i % 5}\n---\nWidget fact number {i}.\n".encode())
    put(ws, "broken.md", b"---\nid: broken\ntags: [#a, #b]\n---\nWidget fact that cannot load.\n")
    return ids


def test_f8_one_bad_file_list_recall_context_serve_fifty(ws, run, fifty):
    for args in (["list"], ["recall", "widget", "--limit", "100"], ["context"]):
        result = run(*args)
        assert result.code == 0, result
        if args[0] == "context":
            assert sorted(re.findall(r"\(id (\w+)\)", result.out)) == fifty
        else:
            assert sorted(line.split("\t")[0] for line in result.out.splitlines()) == fifty
        assert result.err.count(BAD8) == 1, result.err
        assert f"skipped {BAD8}:3: invalid YAML front-matter" in result.err
    assert len(run("--json", "context").json()["data"]["included"]) == 50


def test_f8_doctor_reports_the_bad_file(ws, run, fifty):
    result = run("--json", "doctor")
    assert result.code == 11
    assert result.json()["data"]["problems"] == [{"path": BAD8, "line": 3, "reason": (
        "invalid YAML front-matter: expected the node content, but found '<stream end>' "
        "(a '#' after a space or '[' starts a comment: quote values that begin with '#')")}]


def test_f8_doctor_names_the_bad_file_once(ws, run, fifty):
    result = run("doctor")  # the report is the command's data: stdout, one line per file
    assert result.code == 11 and (result.out + result.err).count(BAD8) == 1, result
    assert result.out.startswith(f"{BAD8}:3: invalid YAML front-matter")
