"""``memcli compact --transcript``: one summary memory per session, the raw transcript kept recoverable."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, shared_tree
from memcli.agents import summary as sm

SESSION = "7a1b2c3d-0000-4000-8000-00000000abcd"
SCOPE = f"session:{SESSION}"
#: Words that sit only in entries the summary must never take text from.
MARKERS = ("TOOLMARKER", "SIDEMARKER", "REMINDERMARKER", "METAMARKER", "CONTEXTMARKER", "THINKMARKER")
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def ws(ws):
    """The workspace with every scope in its own tree (no ``[workspace] id``), so these tests
    see the summary, its commit and the raw-transcript archive in one repository. In a
    workspace with an id they are in the person's own store instead: see
    ``tests/test_personal_store.py``."""
    return shared_tree(ws)


def _line(kind: str, content, uuid: str, session: str | None = SESSION, mid: str | None = None, **extra) -> str:
    entry = {"parentUuid": None, "isSidechain": False, "cwd": "/home/dev/ledger", "type": kind, "uuid": uuid,
             "timestamp": f"2026-09-01T08:{int(uuid[1:]):02d}:00.000Z", **extra}
    if session:
        entry["sessionId"] = session
    if kind == "user":
        entry["message"] = {"role": "user", "content": content}
    else:
        entry["message"] = {"id": mid or f"msg_{uuid}", "type": "message", "role": "assistant", "content": content}
    return json.dumps(entry, ensure_ascii=False)


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def transcript(session: str | None = SESSION) -> str:
    """A Claude Code session: decisions, conclusions, open questions, some Chinese, and entries
    (a tool result, a sidechain, injected tags, a meta line, thinking) that must not appear."""
    rows = [
        json.dumps({"type": "summary", "summary": "Speed up the export", "leafUuid": "a1"}),
        _line("user", "The nightly export keeps timing out on big tables.", "u1", session),
        _line("assistant", [{"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"command": "make export"}}],
              "a2", session),
        _line("user", [{"type": "tool_result", "tool_use_id": "tu_1",
                        "content": "export: 412 s. TOOLMARKER we decided to drop the database"}], "u3", session),
        _line("assistant", _text("It turns out the export loads every row into memory before writing."), "a4",
              session, mid="m4"),
        _line("assistant", [{"type": "thinking", "thinking": "THINKMARKER the fix was magic"},
                            *_text("The root cause is the ORM's default fetch size.")], "a5", session, mid="m4"),
        _line("user", "Let's go with server-side cursors instead of loading everything. "
                      "We decided to keep the CSV format.", "u6", session),
        _line("assistant", _text("Done: the export uses a server-side cursor, and it works now in 38 s."), "a7",
              session),
        _line("assistant", _text("SIDEMARKER we decided to rewrite everything in Rust."), "a8", session,
              isSidechain=True),
        _line("user", "<system-reminder>REMINDERMARKER we decided nothing</system-reminder>"
                      "Should the export also compress its output files?", "u9", session),
        _line("user", "我们决定改用 zstd 压缩。原因是 gzip 太慢了。还没确定要不要保留旧的导出格式。", "u10", session),
        _line("assistant", _text("TODO: benchmark the cursor size on the staging replica."), "a11", session),
        _line("user", "<local-command-caveat>METAMARKER we decided</local-command-caveat>", "u12", session,
              isMeta=True),
        _line("user", "Is the staging replica running Postgres 16?", "u13", session),
        _line("assistant", _text("Yes, the staging replica is running Postgres 16.2."), "a14", session),
        _line("user", "<memcli-context>CONTEXTMARKER We decided to use npm.</memcli-context>"
                      "Thanks, that is all for today.", "u15", session),
    ]
    return "\n".join(rows) + "\n"


def write_transcript(tmp_path: Path, name: str = "session.jsonl", text: str | None = None) -> Path:
    path = tmp_path / name
    path.write_bytes((transcript() if text is None else text).encode("utf-8"))
    return path


def commits(ws: Path) -> int:
    return int(git(ws, "rev-list", "--count", "HEAD").strip())


def shown(run, memory_id: str) -> dict:
    result = run("show", memory_id, "--json")
    assert result.code == 0, result
    return result.json()["data"]


def assert_recoverable(ws: Path, path: Path, memory: dict) -> None:
    """The archive named in provenance gives back the transcript byte for byte, and is not in git."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    assert memory["provenance"]["sha256"] == digest
    assert memory["provenance"]["source"] == f"archive/transcripts/{digest}.jsonl.gz"
    archive = ws / memory["provenance"]["source"]
    assert gzip.decompress(archive.read_bytes()) == raw
    if shutil.which("gunzip"):  # the documented way back: gunzip -c archive/transcripts/<sha>.jsonl.gz
        assert subprocess.run(["gunzip", "-c", str(archive)], capture_output=True, check=True).stdout == raw
    assert "archive" not in git(ws, "ls-files")
    assert git(ws, "status", "--porcelain") == ""


def assert_summary_memory(run, ws: Path, memory_id: str, source_type: str) -> dict:
    memory = shown(run, memory_id)
    assert (memory["scope"], memory["category"], memory["status"]) == (SCOPE, "summary", "active")
    assert memory["provenance"]["sourceType"] == source_type
    assert memory["provenance"]["runId"] == SESSION
    listed = run("list", "--scope", SCOPE, "--category", "summary", "--json")
    assert listed.code == 0, listed
    assert [m["id"] for m in listed.json()["data"]["memories"]] == [memory_id]
    return memory


# --- the rules, as a library ------------------------------------------------------------


def test_rules_find_decisions_conclusions_and_open_questions_only_in_the_conversation():
    conversation = sm.read_conversation(transcript().splitlines(keepends=True))
    assert conversation.session_id == SESSION
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user", "assistant", "user", "user",
                                                       "assistant", "user", "assistant", "user"]
    found = sm.summarise(conversation)
    assert [t for _, t in found.decisions] == [
        "Let's go with server-side cursors instead of loading everything.",
        "We decided to keep the CSV format.", "我们决定改用 zstd 压缩。"]
    assert [t for _, t in found.conclusions] == [
        "It turns out the export loads every row into memory before writing.",
        "The root cause is the ORM's default fetch size.",
        "Done: the export uses a server-side cursor, and it works now in 38 s.", "原因是 gzip 太慢了。"]
    # The Postgres question was answered by the assistant; the compression one never was.
    assert [t for _, t in found.open_questions] == [
        "Should the export also compress its output files?", "还没确定要不要保留旧的导出格式。",
        "TODO: benchmark the cursor size on the staging replica."]
    body = sm.render(found, conversation, keep_recent=3)
    assert body.index("## Decisions") < body.index("## Conclusions") < body.index("## Open questions") \
        < body.index("## Recent messages")
    assert body.count("> **") == 3 and body.rstrip().endswith("Thanks, that is all for today.")
    assert not any(marker in body or marker in conversation.text() for marker in MARKERS)


def test_empty_sections_are_left_out_and_long_messages_are_cut():
    text = _line("user", "Please look at the logs. " + "word " * 200, "u1") + "\n" + \
        _line("assistant", _text("We decided to rotate the logs daily."), "a2") + "\n"
    conversation = sm.read_conversation(text.splitlines())
    body = sm.render(sm.summarise(conversation), conversation, keep_recent=10)
    assert "## Decisions" in body and "## Conclusions" not in body and "## Open questions" not in body
    quoted = [line for line in body.splitlines() if line.startswith("> **user**")]
    assert len(quoted) == 1 and len(quoted[0]) <= len("> **user**: ") + sm.ITEM_CHARS and quoted[0].endswith("…")


def test_a_private_key_block_and_a_token_are_withheld_with_their_lines():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7yn3bRHQ5FHMQ\nQ5FHMQ7yn3bRHMIIEowIBAA\n" \
          "-----END RSA PRIVATE KEY-----"
    text, found = sm.withhold(f"We decided to rotate it. Here is the key:\n{key}\nThe fix was a new key.")
    assert found == 1 and "MIIE" not in text and "Q5FH" not in text
    assert text.splitlines() == ["We decided to rotate it. Here is the key:", "[withheld: private key (PEM)]",
                                 "The fix was a new key."]
    text, found = sm.withhold(f"We decided to use the bot. Its token is {GITHUB_TOKEN} for now.")
    assert (text, found) == ("We decided to use the bot. [withheld: GitHub token]", 1)


AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_an_aws_key_withholds_only_its_sentence_and_the_marker_takes_its_place():
    text, found = sm.withhold(f"We decided to use AWS. My key is {AWS_KEY_ID}. The fix was rotating.")
    assert (text, found) == ("We decided to use AWS. [withheld: AWS access key id] The fix was rotating.", 1)
    text, found = sm.withhold(f"We decided on S3. The secret is {AWS_SECRET}. It turns out the bucket was wrong.")
    assert (text, found) == (
        "We decided on S3. [withheld: AWS secret access key] It turns out the bucket was wrong.", 1)
    # the secret half is found through the key id on its line, though the two sit in different sentences
    text, found = sm.withhold(f"Key id {AWS_KEY_ID} is old. Then I used {AWS_SECRET} to sign. The fix was a new pair.")
    assert found == 2 and AWS_SECRET not in text and AWS_KEY_ID not in text
    assert text == ("[withheld: AWS access key id] [withheld: AWS secret access key] The fix was a new pair.")
    conversation = sm.read_conversation([_line("user", f"We decided to use AWS. My key is {AWS_KEY_ID}. "
                                                       "The fix was rotating.", "u1")])
    found = sm.summarise(conversation)
    assert (found.decisions, found.conclusions) == ([("user", "We decided to use AWS.")],
                                                    [("user", "The fix was rotating.")])


# --- the command -------------------------------------------------------------------------


def test_a_failing_summarizer_falls_back_to_the_rule_based_summary(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    before = commits(ws)
    result = run("compact", "--transcript", str(path), "--summarizer", "false")
    assert result.code == 0, result
    assert result.err == "memcli: warning: summarizer `false` exited 1; used the rule-based summary\n"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    line = result.out.strip()
    assert line.startswith(f"summarised session {SESSION}: ")
    assert line.endswith(f" (3 decisions, 4 conclusions, 3 open questions); raw transcript kept at "
                         f"archive/transcripts/{digest}.jsonl.gz")
    memory_id = line.split(": ", 1)[1].split(" ", 1)[0]
    memory = assert_summary_memory(run, ws, memory_id, "tool_result")
    assert_recoverable(ws, path, memory)
    assert commits(ws) == before + 1
    assert git(ws, "show", "--stat", "--format=%s", "HEAD").splitlines()[0] == \
        f"memcli: compact {memory_id} ({SCOPE}) by alice"
    body = memory["text"]
    for heading in ("## Decisions", "## Conclusions", "## Open questions", "## Recent messages"):
        assert heading in body
    assert "我们决定改用 zstd 压缩。" in body and "Summarised by: rules" in body
    assert not any(marker in body for marker in MARKERS)


def test_a_summarizer_past_its_timeout_is_killed_with_its_children(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    # A summarizer that would sleep ten minutes: if memcli waited for it, `run` would raise
    # TimeoutExpired after 120 s (a hang guard, not a speed measurement).
    result = run("compact", "--transcript", str(path), "--summarizer", 'sh -c "sleep 600.25; echo late"',
                 "--summarizer-timeout", "1", "--json", timeout=120)
    assert result.code == 0, result
    data = result.json()
    assert data["warnings"] == ["summarizer `sh` took longer than 1 s and was stopped; used the rule-based summary"]
    assert (data["data"]["summarizer"], data["data"]["outcome"]) == ("rules", "created")
    assert data["data"]["fallback_reason"] == "took longer than 1 s and was stopped"
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and "600.25" in _cmdline(p)]
    assert left == []  # the whole process group went: `sh` and its child `sleep` (zombies have no cmdline)
    memory = assert_summary_memory(run, ws, data["data"]["id"], "tool_result")
    assert_recoverable(ws, path, memory)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode("utf-8", "replace").rstrip("\x00")
    except OSError:
        return ""


SUMMARIZER = ("import sys; t = sys.stdin.read(); "
              "print('Export fixed with server-side cursors.', 'lines=%d' % t.count(chr(10)), "
              "'json=%s' % (chr(123) + chr(34) in t), 'tool=%s' % ('TOOLMARKER' in t), 'user=%s' % ('user: ' in t))")


def test_a_working_summarizer_writes_the_summary_and_reads_plain_text(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    command = f"{sys.executable} -c \"{SUMMARIZER}\""
    result = run("compact", "--transcript", str(path), "--summarizer", command, "--json")
    assert result.code == 0, result
    assert result.err == ""
    data = result.json()["data"]
    assert (data["summarizer"], data["fallback_reason"], data["outcome"]) == ("command", None, "created")
    memory = assert_summary_memory(run, ws, data["id"], "model_derived")
    assert "Export fixed with server-side cursors." in memory["text"]
    assert "json=False tool=False user=True" in memory["text"]  # the plain conversation, not JSON or tool output
    assert f"Summarised by: `{Path(sys.executable).name}`" in memory["text"] and SUMMARIZER not in memory["text"]
    assert data["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() == memory["provenance"]["sha256"]
    assert data["archive"] == memory["provenance"]["source"] and data["commit"] == git(ws, "rev-parse", "HEAD").strip()
    assert_recoverable(ws, path, memory)


def test_compacting_the_same_transcript_again_is_a_no_op_naming_the_first(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    first = run("compact", "--transcript", str(path), "--json")
    assert first.code == 0, first
    memory_id = first.json()["data"]["id"]
    head = git(ws, "rev-parse", "HEAD")
    again = run("compact", "--transcript", str(path), "--summarizer", "false")
    assert again.code == 0, again
    assert again.out.startswith(f"session {SESSION} was already summarised: {memory_id}; ")
    assert again.err == ""  # the summarizer is not even run
    as_json = run("compact", "--transcript", str(path), "--json").json()["data"]
    assert (as_json["id"], as_json["outcome"], as_json["commit"]) == (memory_id, "noop", None)
    assert git(ws, "rev-parse", "HEAD") == head
    assert len(list((ws / "memories").rglob("*.md"))) == 1


def test_a_secret_in_the_session_never_reaches_the_summary(ws, run, tmp_path):
    text = transcript().replace("We decided to keep the CSV format.",
                                f"We decided to keep the CSV format. The bot token is {GITHUB_TOKEN} today.")
    text += _line("user", "数据库密码是 Xk9#mq2Lp7，原因是旧密码泄露了。", "u16") + "\n"
    path = write_transcript(tmp_path, text=text)
    result = run("compact", "--transcript", str(path), "--summarizer", "cat", "--keep-recent", "20")
    assert result.code == 0, result
    assert result.err == ("memcli: warning: withheld 2 secrets found in the conversation from the summary "
                          "(the archived raw transcript holds them)\n")
    memory_id = result.out.split(": ", 1)[1].split(" ", 1)[0]
    memory = shown(run, memory_id)
    assert GITHUB_TOKEN not in memory["text"] and "Xk9#mq2Lp7" not in memory["text"]
    assert "[withheld: GitHub token]" in memory["text"] and "We decided to keep the CSV format." in memory["text"]
    history = git(ws, "log", "-p", "--all")
    assert GITHUB_TOKEN not in history and "Xk9#mq2Lp7" not in history
    assert_recoverable(ws, path, memory)  # the raw text, secret included, stays only in the ignored archive


def test_a_summarizer_that_prints_a_secret_is_not_used(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    result = run("compact", "--transcript", str(path), "--summarizer", f"echo the token is {GITHUB_TOKEN}")
    assert result.code == 0, result
    assert result.err == "memcli: warning: summarizer `echo` printed a secret; used the rule-based summary\n"
    memory_id = result.out.split(": ", 1)[1].split(" ", 1)[0]
    assert GITHUB_TOKEN not in shown(run, memory_id)["text"]


def test_a_missing_summarizer_or_one_that_prints_nothing_falls_back(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    result = run("compact", "--transcript", str(path), "--summarizer", "no-such-summarizer-xyz --fast")
    assert result.code == 0, result
    assert result.err == ("memcli: warning: summarizer `no-such-summarizer-xyz` was not found; "
                          "used the rule-based summary\n")
    other = write_transcript(tmp_path, "other.jsonl", transcript("8b2c3d4e-0000-4000-8000-00000000abcd"))
    result = run("compact", "--transcript", str(other), "--summarizer", "true")
    assert result.code == 0, result
    assert "summarizer `true` printed nothing; used the rule-based summary" in result.err


def test_no_rule_matches_gives_the_first_500_characters(ws, run, tmp_path):
    text = _line("user", "Hello there. " * 60, "u1") + "\n" + _line("assistant", _text("Hi."), "a2") + "\n"
    path = write_transcript(tmp_path, text=text)
    result = run("compact", "--transcript", str(path), "--summarizer", "false", "--json")
    assert result.code == 0, result
    data = result.json()
    assert data["data"]["summarizer"] == "first-500"
    assert data["warnings"] == ["summarizer `false` exited 1; used the first 500 characters of the conversation"]
    body = data["data"]["memory"]["text"]
    beginning = body.split("\n\n", 1)[1]
    assert beginning.startswith("user: Hello there. Hello there.") and len(beginning) == 500


def test_without_a_session_id_the_digest_makes_the_scope_and_a_copy_is_a_no_op(ws, run, tmp_path):
    """Report 2, problem 10: the same bytes under another file name find the first summary."""
    path = write_transcript(tmp_path, "my session (2).jsonl", transcript(session=None))
    result = run("compact", "--transcript", str(path), "--json")
    assert result.code == 0, result
    data = result.json()["data"]
    name = f"transcript-{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"
    assert (data["scope"], data["memory"]["provenance"]["runId"]) == (f"session:{name}", name)
    before = commits(ws)
    copy = tmp_path / "renamed.jsonl"
    shutil.copyfile(path, copy)
    again = run("compact", "--transcript", str(copy), "--json")
    assert again.code == 0, again
    assert (again.json()["data"]["outcome"], again.json()["data"]["id"]) == ("noop", data["id"])
    assert commits(ws) == before


def test_a_transcript_past_the_size_cap_is_refused_unread(ws, run, tmp_path):
    from memcli.service.extract import MAX_TRANSCRIPT_BYTES

    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:  # sparse: no disk space used
        handle.truncate(MAX_TRANSCRIPT_BYTES + 1)
    before = commits(ws)
    for args in (("compact", "--transcript", str(big)), ("extract", str(big), "--apply")):
        result = run(*args, timeout=20)
        assert result.code == 5 and result.out == "", result
        assert result.err.count("\n") == 1 and "more than the 200 MB memcli reads" in result.err
    assert commits(ws) == before
    assert [p.name for p in (ws / "archive").rglob("*") if p.is_file()] == [".gitignore"]


def test_user_errors_write_nothing(ws, run, tmp_path):
    (tmp_path / "notjson.jsonl").write_text("hello\nworld\n", encoding="utf-8")
    (tmp_path / "noconv.jsonl").write_text(json.dumps({"type": "summary", "summary": "x"}) + "\n" +
                                           _line("user", [{"type": "tool_result", "content": "ok"}], "u1") + "\n",
                                           encoding="utf-8")
    cases = [("missing.jsonl", 5, "memcli: error: no transcript at "),
             ("notjson.jsonl", 5, "is not JSON Lines: none of its 2 lines is a JSON object"),
             ("noconv.jsonl", 5, "no conversation in "),
             (".", 5, "is a folder, not a transcript file")]
    before = commits(ws)
    for name, code, message in cases:
        result = run("compact", "--transcript", str(tmp_path / name))
        assert result.code == code, result
        assert message in result.err and result.err.count("\n") == 1 and result.out == ""
    bad = run("compact", "--transcript", str(write_transcript(tmp_path)), "--summarizer-timeout", "0")
    assert bad.code == 2 and "--summarizer-timeout must be more than 0" in bad.err
    assert commits(ws) == before
    assert [p.name for p in (ws / "archive").rglob("*") if p.is_file()] == [".gitignore"]
    assert not list((ws / "memories").rglob("*.md"))


def test_init_creates_an_ignored_archive_folder(ws):
    assert (ws / "archive" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""


def test_keep_recent_limits_the_quoted_messages(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    result = run("compact", "--transcript", str(path), "--keep-recent", "2", "--json")
    body = result.json()["data"]["memory"]["text"]
    recent = body.split("## Recent messages", 1)[1]
    assert recent.count("> **") == 2 and "Postgres 16.2" in recent and "nightly export" not in recent


def test_aws_keys_in_the_session_leave_the_sentences_around_them(ws, run, tmp_path):
    text = _line("user", f"We decided to use AWS. My key is {AWS_KEY_ID}. The fix was rotating.", "u1") + "\n" + \
        _line("assistant", _text(f"The secret is {AWS_SECRET}. Let's use a role instead."), "a2") + "\n"
    path = write_transcript(tmp_path, text=text)
    result = run("compact", "--transcript", str(path), "--json")
    assert result.code == 0, result
    data = result.json()
    body = data["data"]["memory"]["text"]
    assert AWS_KEY_ID not in body and AWS_SECRET not in body and data["data"]["withheld"] == 2
    assert "- We decided to use AWS. (user)" in body and "- Let's use a role instead. (assistant)" in body
    assert "- The fix was rotating. (user)" in body
    assert "> **user**: We decided to use AWS. [withheld: AWS access key id] The fix was rotating." in body
    assert "> **assistant**: [withheld: AWS secret access key] Let's use a role instead." in body
    assert AWS_SECRET not in git(ws, "log", "-p", "--all") and AWS_KEY_ID not in git(ws, "log", "-p", "--all")


def test_a_key_in_the_summarizer_command_is_never_written_nor_shown(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    command = f"{sys.executable} -c \"{SUMMARIZER}\" --api-key {GITHUB_TOKEN}"
    result = run("compact", "--transcript", str(path), "--summarizer", command)
    assert result.code == 0, result  # not refused (exit 6) for the key in the command line
    assert result.err == "" and GITHUB_TOKEN not in result.out
    program = Path(sys.executable).name
    memory_id = result.out.split(": ", 1)[1].split(" ", 1)[0]
    assert result.out.strip() == (f"summarised session {SESSION}: {memory_id} (summarised by {program}); raw "
                                  f"transcript kept at archive/transcripts/"
                                  f"{hashlib.sha256(path.read_bytes()).hexdigest()}.jsonl.gz")
    memory = shown(run, memory_id)
    assert f"Summarised by: `{program}`\n" in memory["text"] and "--api-key" not in memory["text"]
    assert GITHUB_TOKEN not in json.dumps(memory) and GITHUB_TOKEN not in git(ws, "log", "-p", "--all")
    # a failing one: the warning names the program, never its arguments
    other = write_transcript(tmp_path, "other.jsonl", transcript("8b2c3d4e-0000-4000-8000-00000000abcd"))
    failed = run("compact", "--transcript", str(other), "--summarizer", f"/bin/false --token={GITHUB_TOKEN}")
    assert failed.code == 0, failed
    assert failed.err == "memcli: warning: summarizer `false` exited 1; used the rule-based summary\n"
    assert GITHUB_TOKEN not in failed.out and "(3 decisions, 4 conclusions, 3 open questions)" in failed.out
    broken = run("compact", "--transcript", str(write_transcript(tmp_path, "third.jsonl",
                                                                 transcript("9c3d4e5f-0000-4000-8000-00000000abcd"))),
                 "--summarizer", f"llm --key '{GITHUB_TOKEN}")
    assert broken.code == 0, broken
    assert broken.err == ("memcli: warning: summarizer `llm` cannot be split into words (no closing quotation); "
                          "used the rule-based summary\n")


def test_a_no_op_reports_the_summarizer_of_the_first_run(ws, run, tmp_path):
    path = write_transcript(tmp_path)
    first = run("compact", "--transcript", str(path), "--summarizer", f"{sys.executable} -c \"{SUMMARIZER}\"",
                "--json")
    assert first.code == 0 and first.json()["data"]["summarizer"] == "command", first
    again = run("compact", "--transcript", str(path), "--json").json()["data"]
    assert (again["outcome"], again["summarizer"], again["fallback_reason"]) == ("noop", "command", None)
    ruled = write_transcript(tmp_path, "other.jsonl", transcript("8b2c3d4e-0000-4000-8000-00000000abcd"))
    assert run("compact", "--transcript", str(ruled)).code == 0
    again = run("compact", "--transcript", str(ruled), "--summarizer", "false", "--json").json()["data"]
    assert (again["outcome"], again["summarizer"]) == ("noop", "rules")
    plain = write_transcript(tmp_path, "plain.jsonl", _line("user", "Hello there.", "u1", "plain-session") + "\n")
    assert run("compact", "--transcript", str(plain)).code == 0
    again = run("compact", "--transcript", str(plain), "--json").json()["data"]
    assert (again["outcome"], again["summarizer"]) == ("noop", "first-500")
