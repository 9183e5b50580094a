"""The index stores each memory's text once (issue 21 point 6; ``memcli.index.db``).

The text is kept as it is in ``texts.body`` (a narrow table beside the records); the
forms derived from it (the substring search's, the duplicate gate's) are computed in SQL from
it, and stored only where SQLite's ``lower`` cannot give them. A Hypothesis property checks
the SQL forms against the Python ones for any text; the real CLI's index file is read for how
many copies of a text it holds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memcli.index.db import _SCHEMA, NORM_SQL, SEARCH_SQL, TEXT_JOIN, IndexDB, decode
from memcli.index.tokenize import normalise
from memcli.model import Memory, normalise_text

TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=80) | st.sampled_from([
    "Run the tests with make test.", "Deploys  go out\nwith the blue-green script!", "Café au lait.", "İstanbul",
    "ＡＢＣ full width", "数据库端口是 5433。", "tab\there", "ends with a NUL\0", "ǅ title-case digraph", "ß and ﬁ"])


def _memory(text: str) -> Memory:
    return Memory(id="01jdxq5k7m2vaaaaaaaaaaaaaa", scope="project", body=text + "\n")


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_sql_forms_of_any_text_equal_the_python_ones(text: str) -> None:
    """What SQL computes from the stored columns is what the substring search and the
    duplicate gate were given before (the stored forms), for any text: capitals outside
    ASCII, accents, line breaks, runs of blanks, NUL, full-width letters, CJK."""
    memory = _memory(text)
    *columns, (chars, memory_id, body, search_text, norm) = IndexDB._columns(memory)
    db = sqlite3.connect(":memory:")
    for statement in _SCHEMA.split(";"):
        if statement.strip() and "fts" not in statement:
            db.execute(statement)
    db.execute("INSERT INTO docs (path, changed_ns, size, hash, id, scope, status, category, subject, importance,"
               " pinned, created, updated, expire, idem, tags, search_more, record)"
               " VALUES ('memories/x.md', 0, 0, '', ?,?,?,?,?,?,?,?,?,?,?,?,?,?)", columns)
    db.execute("INSERT INTO texts (scope, status, chars, doc, id, body, search_text, norm) VALUES (?,?,?,1,?,?,?,?)",
               (memory.scope, memory.status, chars, memory_id, body, search_text, norm))
    search, form, stored_chars, stored, record = db.execute(
        f"SELECT {SEARCH_SQL}, {NORM_SQL}, t.chars, t.body, d.record FROM docs d {TEXT_JOIN}").fetchone()
    assert search == " ".join(normalise(memory.text).split())
    assert form == normalise_text(memory.text) and stored_chars == len(form)
    assert stored == memory.text and decode(record, stored).text == memory.text
    assert '"text"' not in record  # the record holds everything but the text


def test_the_index_file_holds_each_text_once(ws: Path, run) -> None:
    """After a rebuild, the index file holds a memory's text exactly once, and neither its
    lower-case form nor its normalised one (SQLite computes those from it)."""
    texts = ["The Staging Postgres listens on port 5433, Alice said.",
             "Café orders are rounded to whole CENTS before the ledger sees them."]
    for text in texts:
        assert run("remember", text).code == 0
    assert run("index", "rebuild").code == 0
    index = ws / ".cache" / "index.sqlite3"
    with sqlite3.connect(index) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file, none in the log
    data = index.read_bytes()
    for text in texts:
        assert data.count(text.encode()) == 1, text
        assert data.count(text.lower().encode()) == 0, text
    assert data.count(" ".join(normalise(texts[1]).split()).encode()) == 1  # stored: lower() cannot fold 'é'
