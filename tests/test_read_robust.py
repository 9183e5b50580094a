"""The read path under hostile input (issue 19 point 5 and the read-path faults beside it).

- a ``--grep`` pattern that cannot be run is a usage error (exit 2, one line), never
  ``internal error: MemoryError``;
- a row of the index edited by hand (a NULL, a wrong type, bad JSON, a path that does not
  exist) is rebuilt from its file: ``recall`` and ``list`` answer, with one warning;
- long queries are capped before any work (``recall``, ``context``), a long hook prompt is
  trimmed, and a hook reads only the end of a long transcript.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import git
from memcli.errors import UsageProblem
from memcli.index.scan import Grep

if TYPE_CHECKING:
    from cli_runner import Runner

TEXT = "Deploys go out with the blue-green script"


# --- regular expressions ---------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["(?R)", "(?0)", "((?R)|x)", "(?1)(a)", "(?&n)(?P<n>a)", "(a", "a{2,1}", "\\p{L}"])
def test_a_pattern_that_cannot_be_run_is_refused_before_it_runs(pattern: str) -> None:
    with pytest.raises(UsageProblem) as refused:
        Grep(pattern)
    assert refused.value.line().startswith("invalid regular expression ")


def test_grep_recursion_is_a_usage_error_on_the_command_line(ws: Path, run: Runner) -> None:
    assert run("remember", TEXT).code == 0
    result = run("recall", "--grep", "(?R)")
    assert result.code == 2 and result.out == "", result
    assert result.err == ("memcli: error: invalid regular expression '(?R)': unknown extension ?R at position 1; "
                          "check the pattern (Python re syntax)\n")
    long = run("recall", "--grep", "a" * 2001)
    assert long.code == 2 and "regular expression is 2,001 characters long" in long.err
    assert run("recall", "--grep", "blue-(green|red)").out.count("blue-green") == 1


# --- a hand-edited index -------------------------------------------------------------------

#: Edits of the row a sync wrote; all but the last three made `recall` or `list` exit 1 (those
#: three are repaired by the sync itself, or harmless: SQLite reads 'x' as 0 in the score).
TAMPERED = [
    "UPDATE docs SET record = NULL",
    "UPDATE docs SET record = '{bad'",
    "UPDATE docs SET record = '[]'",
    "UPDATE docs SET record = '{}'",
    "UPDATE docs SET record = '{\"id\": 5}'",
    "UPDATE docs SET importance = NULL",
    "UPDATE docs SET record = replace(record, '\"createdAt\": \"', '\"createdAt\": 7, \"x\": \"')",
    "UPDATE docs SET record = replace(record, '\"tags\": []', '\"tags\": 5')",
    "UPDATE texts SET body = x'ff'",
    "UPDATE texts SET body = NULL",
    "DELETE FROM texts",
    "UPDATE docs SET record = '{\"text\": \"a second text\", ' || substr(record, 2)",
    "UPDATE docs SET record = replace(record, '\"provenance\": {', '\"provenance\": 3, \"p\": {')",
    "UPDATE docs SET record = replace(record, '\"importance\": 3', '\"importance\": \"high\"')",
    "UPDATE docs SET record = replace(record, '\"scope\": \"', '\"scope\": null, \"x\": \"')",
    "UPDATE docs SET importance = 'x'",
    "UPDATE docs SET path = 'memories/gone/01aaaaaaaaaaaaaaaaaaaaaaaa-gone.md'",
    "UPDATE docs SET path = '../../../../etc/passwd'",
]
REPAIRED = "the search index held 1 damaged row (changed outside memcli); it was rebuilt from the files"


def _indexes(root: Path) -> list[Path]:
    found = []
    for path in root.rglob("index.sqlite3"):
        with sqlite3.connect(path) as db:
            if db.execute("SELECT count(*) FROM docs WHERE record IS NOT NULL").fetchone()[0]:
                found.append(path)
    return found


@pytest.mark.slow
def test_a_hand_edited_row_is_rebuilt_and_recall_and_list_answer(ws: Path, tmp_path: Path, run: Runner) -> None:
    import time

    from memcli.index.db import RACY_NS
    from memcli.service import Ctx
    from memcli.service.read import Filters, list_memories, recall

    assert run("remember", TEXT).code == 0
    time.sleep(RACY_NS / 1e9 + 0.2)  # a file this recent is read again by every sync (racy mtime): let it settle
    assert run("list").code == 0
    (index,) = _indexes(tmp_path)
    good = tmp_path / "good.sqlite3"
    with sqlite3.connect(index) as db, sqlite3.connect(good) as copy:
        db.backup(copy)
    for n, edit in enumerate(TAMPERED):
        with sqlite3.connect(good) as source, sqlite3.connect(index) as db:
            source.backup(db)
            db.execute(edit)
        ctx = Ctx.open(str(ws), "alice")
        hits = recall(ctx, "blue-green deploys", Filters())
        listed = list_memories(ctx, Filters())
        assert [h.memory.text for h in hits] == [TEXT] and [m.text for m in listed] == [TEXT], edit
        assert ctx.warnings == ([REPAIRED] if n < len(TAMPERED) - 3 else []), (edit, ctx.warnings)
        again = Ctx.open(str(ws), "alice")
        assert [m.text for m in list_memories(again, Filters())] == [TEXT] and again.warnings == [], edit

    with sqlite3.connect(index) as db:  # the command line: exit 0, one warning line
        db.execute(TAMPERED[1])
    result = run("recall", "blue-green")
    assert result.code == 0 and TEXT in result.out and result.err.count("\n") == 1, result
    assert "damaged row" in result.err and "Traceback" not in result.err


def test_a_read_that_trips_on_a_sound_index_is_a_bug_not_a_repair(ws: Path, run: Runner) -> None:
    from memcli.index.catalog import open_catalog
    from memcli.service import Ctx

    assert run("remember", TEXT, "--scope", "project").code == 0
    ctx = Ctx.open(str(ws), "alice")
    catalog = open_catalog(ctx.ws.files, ctx.ws.cache, [])
    assert catalog.index.damaged() == []

    def bug() -> None:
        raise TypeError("a bug")
    with pytest.raises(TypeError, match="a bug"):
        catalog._read(bug, lambda scan: [])


# --- long queries and prompts --------------------------------------------------------------


def test_context_caps_its_query_as_recall_does(ws: Path, run: Runner) -> None:
    assert run("remember", TEXT).code == 0
    result = run("context", "--query", "deploy " * 15_000)
    assert result.code == 0 and "context takes at most 2,000" in result.err and result.out == "", result


def test_a_long_hook_prompt_is_trimmed_not_refused(ws: Path, run: Runner) -> None:
    config = ws / "memcli.toml"  # a loaded test machine may need more than the 2 s a hook has by default
    config.write_text(config.read_text(encoding="utf-8").replace("deadline = 2.0", "deadline = 30"), encoding="utf-8")
    assert run("remember", TEXT, "--scope", "user:alice").code == 0
    # its first 2,000 characters are searched; the rest (each "<memcli-context " a tag that never ends) is not
    prompt = "How do deploys go out, with the blue-green script?" + " " * 2_000 + "<memcli-context " * 6_500
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(ws),
                          "transcript_path": str(ws / "t.jsonl"), "prompt": prompt})
    assert len(prompt) > 100_000
    result = run("hook", "claude", "user-prompt-submit", input=payload, timeout=30)
    assert result.code == 0 and TEXT in json.loads(result.out)["hookSpecificOutput"]["additionalContext"], result


def test_stripping_injected_blocks_is_linear() -> None:
    # each unclosed "<memcli-context " was scanned to the end of the text: 100 KB took 2.5 s, 1 MB would take minutes
    code = ("from memcli.agents.transcript import strip_injected\n"
            "for text in ('<memcli-context ' * 65_000, '&lt;hook_context ' * 55_000):\n"
            "    assert strip_injected(text + 'keep this').endswith('keep this')")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


# --- long transcripts in hooks -----------------------------------------------------------


def _claude(path: Path, turns: int, filler: int = 0) -> Path:
    """A Claude Code session: ``turns`` person's turns ("Always run check number N first."),
    each followed by ``filler`` assistant records."""
    session = "3e1f0a2b-0000-4000-8000-00000000c0de"
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "summary", "summary": "a long session", "leafUuid": "x"}) + "\n")
        parent = None
        for n in range(turns):
            for kind, text in [("user", f"Always run check number {n} first."),
                               *[("assistant", "ok")] * filler]:
                uuid = f"u{n}-{kind}-{parent}"[:40] if kind == "assistant" else f"u{n}"
                message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
                out.write(json.dumps({"parentUuid": parent, "type": kind, "uuid": uuid, "sessionId": session,
                                      "timestamp": "2026-11-30T10:00:00.000Z", "message": message}) + "\n")
                parent = uuid
    return path


def _pre_compact(ws: Path, transcript: Path) -> str:
    return json.dumps({"session_id": "3e1f0a2b-0000-4000-8000-00000000c0de", "transcript_path": str(transcript),
                       "cwd": str(ws), "hook_event_name": "PreCompact", "trigger": "auto"})


def _enable(ws: Path) -> None:
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("extract = false", "extract = true")
                      .replace("summarize = false", "summarize = true"), encoding="utf-8")


def test_the_tail_keeps_line_numbers_and_the_first_line(tmp_path: Path) -> None:
    from memcli.service.extract import parse_transcript, read_transcript, read_transcript_tail

    path = _claude(tmp_path / "s.jsonl", 300, filler=2)
    whole = read_transcript(path)
    raw, left, size = read_transcript_tail(path, 20_000)
    tail = parse_transcript(path, raw)
    assert size == path.stat().st_size and 0 < left < size
    assert tail.format == "claude" and tail.session_id == whole.session_id
    assert 0 < len(tail.turns) < len(whole.turns)
    by_line = {t.line: t.text for t in whole.turns}
    assert all(by_line[t.line] == t.text for t in tail.turns) and tail.turns[-1] == whole.turns[-1]
    small = read_transcript_tail(path, size)
    assert small == (path.read_bytes(), 0, size)


def test_a_hook_reads_only_the_end_of_a_long_transcript(ws: Path, tmp_path: Path, run: Runner,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from memcli.service import hooks

    _enable(ws)
    path = _claude(tmp_path / "long.jsonl", 400, filler=1)
    monkeypatch.setattr(hooks, "HOOK_TRANSCRIPT_BYTES", 20_000)
    monkeypatch.setattr(hooks, "HOOK_CANDIDATES", 5)
    monkeypatch.setattr(hooks, "HOOK_SUMMARY_BYTES", 10_000)
    hooked = hooks.run_hook("claude", "pre-compact", _pre_compact(ws, path), str(ws), None)
    assert not hooked.tracebacks, hooked.tracebacks
    said = "\n".join(hooked.warnings)
    assert "read the first line and the last" in said and f"memcli extract --apply {path}" in said
    assert "looked at the last 5 of" in said and "no session summary: the transcript is" in said
    written = sorted(m["text"] for m in run("--json", "list").json()["data"]["memories"])
    assert written == sorted(f"Always run check number {n} first." for n in range(395, 400)), written
    assert git(ws, "rev-list", "--count", "HEAD") == "2\n"


@pytest.mark.slow
def test_a_200000_line_transcript_is_handled_well_inside_the_deadline(ws: Path, tmp_path: Path, run: Runner) -> None:
    # the hostile tester's input: it kept the hook busy 19.8 s, to its 20 s deadline, and nothing was written
    _enable(ws)
    path = _claude(tmp_path / "huge.jsonl", 2_000, filler=99)
    assert sum(1 for _ in path.open("rb")) == 200_001
    result = run("hook", "claude", "pre-compact", input=_pre_compact(ws, path), timeout=60)
    assert result.code == 0 and "deadline" not in result.err, result
    assert "read the first line and the last 2.0 MB" in result.err and "no session summary" in result.err
    texts = {m["text"] for m in run("--json", "list").json()["data"]["memories"]}
    assert "Always run check number 1999 first." in texts and "Always run check number 0 first." not in texts
