"""The C-loader read path (memcli.yamlfast) agrees with ruamel's YAML 1.2 reading, or refuses.

The contract: whenever ``yamlfast.load`` returns, ruamel's safe loader (duplicate keys
refused) returns an equal value; whenever ruamel refuses a text, ``yamlfast`` refuses it
too, so ``fileformat.parse`` reports it with ruamel's message and line.
"""

from __future__ import annotations

import datetime
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli import fileformat, yamlfast

TRICKY = ["no", "No", "NO", "yes", "on", "off", "y", "n", "true", "False", "TRUE", "null", "Null", "~", "",
          "017", "0o17", "0o9", "09", "0x1F", "0xg", "0b101", "-0x1", "+12", "-0", "1_000", "1__", "_1", "-_",
          "1:20", "1:20.5", "1e3", "1E3", "1.0e+3", "1e", ".5", "1.", "-.inf", ".NaN", ".nan", "+.INF", "1.5e-3",
          "2026-11-02", "2026-1-2", "2026-11-02T09:14:05Z", "2026-11-02 09:14:05.5 +01:00",
          "2026-11-02T09:14:05.1234567Z", "2026-11-02t09:14:05-0530", "2026-13-45", "2026-11-02T24:00:00Z",
          "=", "<<", "a: b", "#x", "x #y", "'q'", '"q"', "[a, b]", "{a: 1}", "!!str 12", "!!int 3", "!!binary aGVsbG8=",
          "!!set {a, b}", "!!omap [a: 1]", "&a x", "*a", "|", ">", "- a", "@x", "`x", "%x", "%YAML 1.1", "ü", "身份"]

scalar = st.one_of(st.sampled_from(TRICKY), st.text(alphabet="ab01:-_.#'\" eE+x[]{},!&*|>~%\\", max_size=8))
key = st.one_of(st.sampled_from(["id", "scope", "tags", "status", "k", "k", "<<", "1", "no", "? a"]),
                st.text(alphabet="abk01-_ ", min_size=1, max_size=4))


@st.composite
def documents(draw) -> str:
    """Front-matter-like YAML: top-level keys with plain, flow-list or nested-mapping values."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        k, form = draw(key), draw(st.sampled_from(["plain", "plain", "list", "nested", "blocklist"]))
        if form == "plain":
            lines.append(f"{k}: {draw(scalar)}")
        elif form == "list":
            lines.append(f"{k}: [{', '.join(draw(st.lists(scalar, max_size=3)))}]")
        elif form == "nested":
            lines.append(f"{k}:")
            lines += [f"  {draw(key)}: {draw(scalar)}" for _ in range(draw(st.integers(1, 3)))]
        else:
            lines.append(f"{k}:")
            lines += [f"  - {draw(scalar)}" for _ in range(draw(st.integers(1, 3)))]
    return "\n".join(lines) + "\n"


def ruamel_load(source: str):
    """What memcli read before the fast path: ruamel's libyaml safe loader, else its round-trip loader."""
    from ruamel.yaml import YAML

    if "\t" not in source:
        safe = YAML(typ="safe", pure=False)
        safe.allow_duplicate_keys = False
        try:
            meta = safe.load(source)
            if isinstance(meta, dict):
                return meta
        except Exception:  # noqa: BLE001 - as frontmatter did: read again in round-trip mode
            pass
    rt = YAML(typ="rt")
    rt.allow_duplicate_keys = False
    return rt.load(source)


KINDS = (bool, int, float, str, datetime.datetime, datetime.date, bytes, type(None), dict, list)


def same(a, b) -> bool:
    """Equal values of the same kind (ruamel's ScalarInt, CommentedMap, ... count as int, dict, ...)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    kind = next((k for k in KINDS if isinstance(a, k)), None)
    if kind is None or not isinstance(b, kind) or next(k for k in KINDS if isinstance(b, k)) is not kind:
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check(source: str) -> None:
    try:
        expected = ruamel_load(source)
    except Exception:  # noqa: BLE001 - ruamel refuses: the fast loader must refuse too
        try:
            got = yamlfast.load(source)
        except yamlfast.Refused:
            return
        raise AssertionError(f"yamlfast accepted {source!r} as {got!r}; ruamel refuses it") from None
    try:
        got = yamlfast.load(source)
    except yamlfast.Refused:
        return  # allowed: the caller then reads it with ruamel
    assert same(got, expected), (source, got, expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_fast_loader_agrees_with_ruamel_or_refuses(source):
    check(source)


def test_yaml12_rules_hold_on_the_fast_path():
    meta = yamlfast.load("a: no\nb: on\nc: 017\nd: 0o17\ne: 1:20\nf: 1e3\ng: True\nh: ~\ni: 2026-11-02\n")
    assert meta == {"a": "no", "b": "on", "c": 17, "d": 15, "e": "1:20", "f": 1000.0, "g": True, "h": None,
                    "i": datetime.date(2026, 11, 2)}


def test_every_tricky_scalar_agrees():
    for value in TRICKY:
        check(f"k: {value}\n")
        check(f"k: [{value}]\n")


def test_refusals_are_explained_by_the_round_trip_reading():
    for source in ("a: 1\na: 2\n", "a: 1\nb:\n  c: 1\n  c: 2\n", "<<: {a: 1}\n", "a: [1\n", "%YAML 1.1\n---\na: no\n",
                   "a: 1\t# tab\n", "k: 2026-11-02T09:14:05.1234567Z\n"):
        try:
            yamlfast.load(source)
        except yamlfast.Refused:
            continue
        raise AssertionError(f"accepted {source!r}")


def test_parse_reads_alike_in_both_modes():
    text = (b"---\nid: abc1\nscope: project\nstatus: active\ncreatedAt: 2026-11-02T09:14:05Z\nflag: off\n"
            b"tags: [a, 'b']\nprovenance:\n  sourceType: user_said\n  runId: null\n---\nbody\n")
    fast = fileformat.parse(text, "x.md", round_trip=False)
    slow = fileformat.parse(text, "x.md", round_trip=True)
    assert type(fast.meta) is dict
    assert fast.meta == dict(slow.meta) and fast.body == slow.body
    bad = b"---\nid: a\nid: b\n---\nbody\n"
    errors = []
    for mode in (False, True):
        try:
            fileformat.parse(bad, "x.md", round_trip=mode)
        except Exception as err:  # noqa: BLE001
            errors.append(str(err))
    assert len(errors) == 2 and errors[0] == errors[1] and "x.md:3" in errors[0]


# --- front-matter the plain writer writes, read without a YAML parser (fileformat.read_plain) ---


def check_plain(source: str) -> None:
    """``read_plain`` either leaves ``source`` to the YAML readers or reads what ruamel reads."""
    got = fileformat.read_plain(source)
    if got is None:
        return
    expected = ruamel_load(source)
    assert same(got, expected), (source, got, expected)
    assert same(got, yamlfast.load(source)), source


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_the_plain_reader_agrees_with_ruamel_or_leaves_it(source):
    check_plain(source)


def test_every_tricky_scalar_is_read_as_ruamel_reads_it_or_left():
    for value in TRICKY:
        for source in (f"k: {value}\n", f"k: [{value}]\n", f"k: [a, {value}]\n", f"p:\n  k: {value}\n"):
            check_plain(source)


def test_the_plain_reader_reads_a_memorys_usual_front_matter():
    source = ("id: 01kx5n2mtr29mq1nfzsjvpxs0v\nscope: user:alice\ncategory: procedure\nsubject: api.secrets\n"
              "status: active\nimportance: -2\npinned: false\ncreatedAt: 2026-07-10T09:17:28Z\n"
              "provenance:\n  sourceType: user_said\n  runId: null\n  at: 2026-07-10T09:17:28Z\n"
              "tags: [build, ci tools, 12]\npaths: []\nreview: {}\n")
    got = fileformat.read_plain(source)
    assert got is not None and same(got, ruamel_load(source))
    assert got["provenance"]["at"] == datetime.datetime(2026, 7, 10, 9, 17, 28, tzinfo=datetime.timezone.utc)


def test_the_plain_reader_reads_globs_and_single_quoted_strings_as_ruamel_does():
    for source in ("paths: ['**/*.py', src/hooks/*.ts, tests/**, .github/workflows/*.yml]\n",
                   "paths: ['*.md']\nsubject: 'yes'\nnote: ' #not a comment: \"x\" & *y '\n", "k: a*\n",
                   "k: [x*, /*, ./*]\n", "k: '1'\n", "k: 'null'\n", "k: '~'\n"):
        got = fileformat.read_plain(source)
        assert got is not None, source
        check_plain(source)
    for source in ("k: *a\n", "k: [*a]\n", "k: -*\n", "k: 'it''s'\n", "k: ''\n", "k: ['a, b']\n", "k: ['a' ]\n",
                   "k: 'a' # c\n", "k: 'a\\b'\n", "k: '[x]'\n", "k: 'é'\n", "k: a *b\n", "k: a*: b\n"):
        assert fileformat.read_plain(source) is None, source


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(alphabet="*/.-_a1 '#:,&!", min_size=1, max_size=6),
                          st.text(alphabet="*/.-_a1 '#:,&!", min_size=1, max_size=6).map(lambda t: f"'{t}'")),
                min_size=1, max_size=3))
def test_globs_and_quoted_tokens_are_read_as_ruamel_reads_them_or_left(tokens):
    check_plain(f"k: {tokens[0]}\n")
    check_plain(f"k: [{', '.join(tokens)}]\n")
    check_plain(f"p:\n  k: {tokens[-1]}\n")


def test_the_plain_reader_leaves_what_it_would_not_write_to_the_yaml_readers():
    for source in ("a: 1\na: 2\n",  # a duplicate key: ruamel refuses it
                   "a:\nb: 1\n",  # null in YAML, {} in the writer
                   "a: 1\nb:\n", "a: -0\n", "a: 007\n", "a: 1_000\n", "a: yes\n", "a: [true]\n", "a: [null]\n",
                   "a: 2026-02-30T00:00:00Z\n", "a: 2026-02-03\n", "a: x # note\n", "# note\na: 1\n",
                   "a:\n  b:\n    c: 1\n", "a:\n   b: 1\n", "  a: 1\n", "a: 1\n\nb: 2\n", "a: 1", "a: [x\n",
                   "a: [x,y]\n", "a: [ x]\n", "a: b: c\n", "a: x:\n", "a:  x\n", "a: \n", ": x\n",
                   "1: x\n", "no: x\n", "a b:: x\n", "a: é\n", "a: " + "x" * 201 + "\n",
                   "k: [" + ", ".join(["x"] * 2000) + "]\n"):  # past PLAIN_READ_MAX
        assert fileformat.read_plain(source) is None, source
