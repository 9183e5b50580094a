"""memcli.fileformat at the library level: parse, update and render_new round trips.

SPEC.md section 2: rewriting a file keeps everything it does not change (key order,
comments, unknown keys, line endings, BOM, the body byte for byte); YAML 1.2 semantics;
duplicate keys refused; problems reported with the file's own line number.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli import fileformat as fm
from memcli.errors import InvalidMemoryFile

FILE = b"""---
# hand-written, keep this comment
id: abc123
status: active
provenance:
  sourceType: user_said
  actor: alice
x-custom: keep me

note: "build --- then deploy"
---
Use pnpm.

---

Never npm.
"""


def variants(data: bytes) -> dict[str, bytes]:
    crlf = data.replace(b"\n", b"\r\n")
    return {"lf": data, "crlf": crlf, "bom-lf": fm.BOM.encode() + data, "bom-crlf": fm.BOM.encode() + crlf}


def changed_lines(old: bytes, new: bytes) -> list[tuple[str, str]]:
    a, b = old.decode().split("\n"), new.decode().split("\n")
    assert len(a) == len(b), (old, new)
    return [(x, y) for x, y in zip(a, b) if x != y]


@pytest.mark.parametrize("kind", ["lf", "crlf", "bom-lf", "bom-crlf"])
def test_parse_reads_lf_crlf_and_bom_alike(kind):
    data = variants(FILE)[kind]
    doc = fm.parse(data, "memories/project/abc123.md")
    assert dict(doc.meta) == {"id": "abc123", "status": "active", "provenance": {"sourceType": "user_said",
                              "actor": "alice"}, "x-custom": "keep me", "note": "build --- then deploy"}
    nl = "\r\n" if "crlf" in kind else "\n"
    assert doc.newline == nl and doc.bom == kind.startswith("bom")
    assert doc.body == "Use pnpm.\n\n---\n\nNever npm.\n".replace("\n", nl)
    assert fm.update(doc, {}) == data


@pytest.mark.parametrize("kind", ["lf", "crlf", "bom-lf", "bom-crlf"])
def test_status_update_changes_one_line_and_keeps_the_rest(kind):
    data = variants(FILE)[kind]
    out = fm.update(fm.parse(data, "f.md"), {"status": "archived"})
    cr = "\r" if "crlf" in kind else ""
    assert changed_lines(data, out) == [(f"status: active{cr}", f"status: archived{cr}")]
    assert out.startswith(fm.BOM.encode()) == kind.startswith("bom")


def test_update_replaces_a_block_removes_and_appends_keys():
    doc = fm.parse(FILE, "f.md")
    out = fm.update(doc, {"provenance": {"sourceType": "admin_edit", "actor": "bob", "runId": None},
                          "x-custom": None, "updatedAt": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
                          "tags": ["a", "b c"]})
    assert out == FILE.replace(
        b"provenance:\n  sourceType: user_said\n  actor: alice\nx-custom: keep me\n",
        b"provenance:\n  sourceType: admin_edit\n  actor: bob\n  runId: null\n",
    ).replace(b'deploy"\n---', b'deploy"\nupdatedAt: 2026-01-02T03:04:05Z\ntags: [a, b c]\n---')


def test_update_keeps_the_end_of_line_comment_of_a_replaced_key():
    data = b"---\nid: abc\nstatus: active   # in force since review\nimportance: 3 # default\n---\nb\n"
    out = fm.update(fm.parse(data, "f.md"), {"status": "archived"})
    assert changed_lines(data, out) == [("status: active   # in force since review",
                                         "status: archived   # in force since review")]


def test_update_keeps_a_file_without_final_newline():
    data = b"---\nid: abc\nstatus: active\n---"
    assert fm.update(fm.parse(data, "f.md"), {}) == data
    assert fm.update(fm.parse(data, "f.md"), {"status": "archived"}) == b"---\nid: abc\nstatus: archived\n---"


def test_update_of_a_flow_mapping_keeps_every_key():
    data = b"---\n{id: abc, status: active, tags: [a, b]}\n---\nbody\n"
    assert fm.update(fm.parse(data, "f.md"), {}) == data
    out = fm.update(fm.parse(data, "f.md"), {"status": "archived"})
    assert out == b"---\nid: abc\nstatus: archived\ntags: [a, b]\n---\nbody\n"


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_unicode_line_separators_in_a_value_do_not_shift_lines(sep):
    data = f"---\nid: abc\nnote: 'a{sep}b'\nstatus: active\n---\nbody{sep}more\n".encode()
    out = fm.update(fm.parse(data, "f.md"), {"status": "archived"})
    assert changed_lines(data, out) == [("status: active", "status: archived")]


def test_no_front_matter_is_all_body_and_gains_fences_on_update():
    data = fm.BOM.encode() + b"Just a note.\r\n"
    doc = fm.parse(data, "f.md")
    assert (doc.has_front_matter, doc.meta, doc.body, doc.newline) == (False, {}, "Just a note.\r\n", "\r\n")
    assert fm.update(doc, {}) == data
    assert fm.update(doc, {"status": "active"}) == fm.BOM.encode() + b"---\r\nstatus: active\r\n---\r\nJust a note.\r\n"


def test_yaml_1_2_keeps_no_on_off_as_strings():
    meta = fm.parse(b"---\na: no\nb: on\nc: off\nd: yes\ne: true\n---\n", "f.md").meta
    assert dict(meta) == {"a": "no", "b": "on", "c": "off", "d": "yes", "e": True}


@pytest.mark.parametrize("data, line, reason", [
    (b"---\nid: a\nid: b\n---\n", 3, 'invalid YAML front-matter: found duplicate key "id" with value "b"'),
    (b"---\nid: abc\n", 1, "the front-matter fence '---' is never closed"),
    (b"---\n---\nbody\n", 1, "the front-matter is empty (remove the fences or add keys)"),
    (b"---\n- a\n---\n", 2, "the front-matter is a list, expected a mapping of keys"),
    (b"---\nplain text\n---\n", 2, "the front-matter is a string, expected a mapping of keys"),
    (b"---\nid: abc\ntags: [#a, #b]\n---\n", 3, "invalid YAML front-matter: expected the node content, but found "
                                               "'<stream end>' (a '#' after a space or '[' starts a comment"),
    (b"---\nid: 'abc\nstatus: x\n---\n", 2, "invalid YAML front-matter: found unexpected end of stream"),
    (b"---\nid: \xff\n---\n", None, "not UTF-8 text (byte 8)"),
])
def test_parse_errors_name_path_line_and_reason(data, line, reason):
    with pytest.raises(InvalidMemoryFile) as info:
        fm.parse(data, "memories/project/bad.md")
    assert (info.value.path, info.value.lineno) == ("memories/project/bad.md", line)
    assert info.value.reason.startswith(reason), info.value.reason


def test_render_new_then_parse_round_trips():
    at = datetime(2026, 11, 2, 9, 14, 5, tzinfo=timezone.utc)
    meta = {"id": "01jdxq5k7m2v", "scope": "project", "status": "active", "importance": 4, "createdAt": at,
            "updatedAt": at, "provenance": {"sourceType": "user_said", "actor": "alice", "runId": None, "at": at},
            "tags": ["tooling", "javascript"], "paths": ["web/**"]}
    data = fm.render_new(meta, "Use pnpm, not npm.")
    assert data == (b"---\nid: 01jdxq5k7m2v\nscope: project\nstatus: active\nimportance: 4\n"
                    b"createdAt: 2026-11-02T09:14:05Z\nupdatedAt: 2026-11-02T09:14:05Z\nprovenance:\n"
                    b"  sourceType: user_said\n  actor: alice\n  runId: null\n  at: 2026-11-02T09:14:05Z\n"
                    b"tags: [tooling, javascript]\npaths: [web/**]\n---\nUse pnpm, not npm.\n")
    doc = fm.parse(data, "f.md")
    assert doc.meta["createdAt"] == at and doc.meta["provenance"]["runId"] is None
    assert fm.update(doc, {}) == data


# --- properties ------------------------------------------------------------------------

_TEXT = st.characters(exclude_categories=("Cs", "Cc", "Cn"), include_characters="\t\x85")
_COMMENT = st.text(st.characters(exclude_categories=("Cs", "Cc", "Cn", "Zl", "Zp")), max_size=20)
_PLAIN = st.from_regex(r"[a-z][a-z0-9._-]{0,12}", fullmatch=True)
_QUOTED = st.text(_TEXT, max_size=30).map(lambda s: json.dumps(s, ensure_ascii=False))
_KEYS = ["id", "scope", "category", "subject", "note", "importance", "createdAt", "x-custom", "tags", "provenance"]


@st.composite
def key_block(draw, key: str) -> list[str]:
    """The YAML lines of one top-level key (not ``status``), with optional comments around."""
    kind = draw(st.sampled_from(["plain", "quoted", "int", "time", "flow", "block-list", "mapping"]))
    if kind == "plain":
        lines = [f"{key}: {draw(_PLAIN)}"]
    elif kind == "quoted":
        lines = [f"{key}: {draw(_QUOTED)}"]
    elif kind == "int":
        lines = [f"{key}: {draw(st.integers(-5, 99))}"]
    elif kind == "time":
        lines = [f"{key}: {draw(st.sampled_from(['2025-03-01', '2025-03-01T12:00:00', '2026-11-02T09:14:05Z']))}"]
    elif kind == "flow":
        lines = [f"{key}: [{', '.join(draw(st.lists(_QUOTED, max_size=3)))}]"]
    elif kind == "block-list":
        lines = [f"{key}:", *(f"  - {v}" for v in draw(st.lists(_QUOTED, min_size=1, max_size=3)))]
    else:
        lines = [f"{key}:", *(f"  k{i}: {v}" for i, v in enumerate(draw(st.lists(_QUOTED, min_size=1, max_size=3))))]
    if draw(st.booleans()):
        lines[0] += "  # " + draw(_COMMENT)
    return lines + draw(st.lists(st.one_of(st.just(""), _COMMENT.map(lambda c: "# " + c)), max_size=2))


@st.composite
def memory_file(draw) -> tuple[bytes, str, str, str]:
    """``(bytes, newline, old status line, new status line)`` of a valid memory file."""
    keys = draw(st.lists(st.sampled_from(_KEYS), unique=True, max_size=6))
    blocks = [draw(key_block(k)) for k in keys]
    status = "status: " + draw(st.sampled_from(["active", "pending_review", "'active'", '"superseded"']))
    comment = draw(st.one_of(st.just(""), _COMMENT.map(lambda c: " # " + c)))
    blocks.insert(draw(st.integers(0, len(blocks))), [status + comment])
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    # a NUL byte makes a file no text (stop 35): every other character a body may hold
    body = draw(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=80))
    text = nl.join(["---", *(line for block in blocks for line in block), "---", ""]) + body
    bom = fm.BOM if draw(st.booleans()) else ""
    return (bom + text).encode("utf-8"), nl, status + comment, "status: archived" + comment


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory_file())
@pytest.mark.slow
def test_property_update_without_changes_is_byte_identical(case):
    data = case[0]
    assert fm.update(fm.parse(data, "f.md"), {}) == data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory_file())
@pytest.mark.slow
def test_property_status_only_update_changes_exactly_one_line(case):
    data, nl, old_line, new_line = case
    doc = fm.parse(data, "f.md")
    out = fm.update(doc, {"status": "archived"})
    cr = nl[:-1]
    assert changed_lines(data, out) == [(old_line + cr, new_line + cr)]
    again = fm.parse(out, "f.md")
    assert again.meta["status"] == "archived" and again.body == doc.body and again.bom == doc.bom
    assert {k: v for k, v in again.meta.items() if k != "status"} == {k: v for k, v in doc.meta.items()
                                                                     if k != "status"}


# --- the writer without ruamel (fileformat._emit_plain) writes what ruamel writes -------------

#: Characters that make YAML special (indicators, quotes, spaces, digits, case), so the strings
#: drawn often sit on the edge of what may be written plain.
_PW_EDGY = st.text(alphabet="aZy0189eExob_.-+/:@ #,[]{}'\"!&*?|>%=~<\t\\é中", max_size=14)
_PW_WORDS = st.sampled_from(["yes", "No", "ON", "null", "Null", "~", "true", "1e5", "0x1f", "0o17", "1_0", "12:30",
                          "2026-12-06", "2026-12-06T11:53:47Z", ".inf", ".5", "<<", "=", "a: b", "a #b", "ab:",
                          "user:alice", "799ef26e99f5613d50c5bf275359e99e34aec7ab", "01m95kft12y16xexft5thssxsd",
                          "make build", "src/app.py", "x" * 250])
#: Strings close to the plain writer's own alphabet, so that many examples take it.
_PW_NEAR = st.from_regex(r"[A-Za-z0-9_ :-][A-Za-z0-9_./:@+ #,-]{0,12}", fullmatch=True)
_PW_SCALARS = st.one_of(_PW_EDGY, _PW_NEAR, _PW_NEAR, _PW_WORDS, st.integers(-10**6, 10**6), st.booleans(), st.none(),
                     st.datetimes(timezones=st.just(timezone.utc)))
_PW_KEYS = st.one_of(st.sampled_from(["id", "scope", "createdAt", "runId", "x-custom", "a b", "1", "yes", "k:"]),
                  _PW_NEAR, _PW_EDGY)
_PW_VALUES = st.recursive(st.one_of(_PW_SCALARS, st.lists(_PW_SCALARS, max_size=4)),
                       lambda inner: st.dictionaries(_PW_KEYS, inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_PW_KEYS, _PW_VALUES, min_size=1, max_size=6))
@pytest.mark.slow
def test_the_plain_writer_writes_what_ruamel_writes_or_leaves_it_to_ruamel(values) -> None:
    plain = fm._emit_plain(values)
    if plain is not None:
        assert [line + "\n" for line in plain] == fm._emit_ruamel(values, "\n")


def test_a_new_memorys_record_is_written_without_ruamel() -> None:
    """The usual record of ``remember`` (plain words, an id, times, provenance, tags, an anchor)
    takes the plain writer, and reads back as the values given."""
    from memcli import yamlfast

    at = datetime(2026, 12, 6, 11, 53, 47, tzinfo=timezone.utc)
    values = {"id": "01m95kft12y16xexft5thssxsd", "scope": "user:alice", "category": "fact", "subject": "db port",
              "status": "active", "importance": 3, "pinned": True, "createdAt": at, "updatedAt": at,
              "provenance": {"sourceType": "user_said", "actor": "alice", "runId": None, "at": at},
              "tags": ["build", "ci tools"], "paths": ["src/app.py"],
              "anchor": {"commit": "799ef26e99f5613d50c5bf275359e99e34aec7ab", "files": ["src/app.py"]}}
    plain = fm._emit_plain(values)
    assert plain is not None
    assert yamlfast.load("\n".join(plain) + "\n") == values


def _same(a, b) -> bool:
    """Equal, with the same types all the way down (True is not 1; a time's offset counts)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, datetime):
        return a == b and a.utcoffset() == b.utcoffset() and a.tzinfo == b.tzinfo
    return a == b


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_PW_KEYS, _PW_VALUES, min_size=1, max_size=6), _PW_NEAR)
@pytest.mark.slow
def test_a_file_memcli_just_wrote_reads_back_from_memory_as_yaml_reads_it(values, body) -> None:
    """``render_new`` keeps what its plain front-matter reads back as (``fileformat._WRITTEN``):
    the parse of the file just written answers from it exactly what the YAML reader gives."""
    from memcli import yamlfast

    if fm._emit_plain(values) is None:
        return  # written by ruamel: nothing kept
    data = fm.render_new(values, body)
    source = data.decode("utf-8").split("---\n")[1]
    assert _same(fm._WRITTEN[source], yamlfast.load(source))
    assert _same(fm.parse(data, "m.md", round_trip=False).meta, yamlfast.load(source))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PW_SCALARS, st.lists(_PW_SCALARS, max_size=3))
@pytest.mark.slow
def test_one_plain_value_or_list_is_written_as_ruamel_writes_it(value, items) -> None:
    for values in ({"key": value}, {"key": items}, {"outer": {"key": value}}):
        plain = fm._emit_plain(values)
        if plain is not None:
            assert [line + "\n" for line in plain] == fm._emit_ruamel(values, "\n")


def _depth(value) -> int:
    return 1 + max((_depth(v) for v in value.values()), default=0) if type(value) is dict else 0


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_PW_KEYS, _PW_VALUES, min_size=1, max_size=6))
@pytest.mark.slow
def test_the_plain_reader_reads_what_the_plain_writer_writes_as_yaml_reads_it(values) -> None:
    """``read_plain`` (the index build's reader) takes every front-matter the plain writer
    writes at two levels or fewer, and gives what the YAML reader gives, types and all."""
    from memcli import yamlfast

    plain = fm._emit_plain(values)
    if plain is None:
        return
    source = "".join(line + "\n" for line in plain)
    got = fm.read_plain(source)
    if _depth(values) <= 2 or got is not None:
        assert got is not None and _same(got, yamlfast.load(source)), source
