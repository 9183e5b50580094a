"""Regular expressions compiled once per machine (``memcli.text.recache``): a pattern built from
the cache is the one ``re.compile`` gives, and a later process compiles none of memcli's
large patterns again (issue 21 points 3-4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcli.text import recache

PATTERNS = [(r"(?P<key>[A-Za-z_]+)\s*=\s*(?P<value>\S+)", 0), (r"hello|wörld|(?i:shout)", re.IGNORECASE),
            (r"^\s*# (\w+) $", re.MULTILINE | re.VERBOSE), (r"(?<![A-Za-z0-9_])ghp_[A-Za-z0-9]{36}", 0)]


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(recache, "_STORE", None)
    monkeypatch.setattr(recache, "_NEW", {})
    return tmp_path / "cache"


def test_a_pattern_from_the_cache_is_the_one_re_compile_gives(fresh_cache: Path) -> None:
    first = [recache.compiled(p, f) for p, f in PATTERNS]
    recache.save()
    assert list((fresh_cache / "memcli").glob("re-*.marshal"))
    recache._STORE = None  # as a new process: from the file
    again = [recache.compiled(p, f) for p, f in PATTERNS]
    assert not recache._NEW  # every one came from the file
    for (pattern, flags), one, other in zip(PATTERNS, first, again):
        plain = re.compile(pattern, flags)
        for made in (one, other):
            assert (made.pattern, made.flags, made.groups, made.groupindex) == \
                (plain.pattern, plain.flags, plain.groups, plain.groupindex)
    text = "key = value\n# title \nHELLO wörld SHOUT ghp_" + "a" * 36
    for (pattern, flags), made in zip(PATTERNS, again):
        plain = re.compile(pattern, flags)
        assert [m.span() for m in made.finditer(text)] == [m.span() for m in plain.finditer(text)]
        assert [m.groupdict() for m in made.finditer(text)] == [m.groupdict() for m in plain.finditer(text)]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_memcli_secret_and_instruction_patterns_match_as_re_compile(text: str) -> None:
    from memcli.agents.injection import _pattern
    from memcli.text.secrets import prefilter

    for made in (_pattern(), prefilter._any(), prefilter._own()):
        plain = re.compile(made.pattern, made.flags)
        assert [m.span() for m in made.finditer(text)] == [m.span() for m in plain.finditer(text)]


def test_an_invalid_pattern_raises_as_re_compile_does(fresh_cache: Path) -> None:
    with pytest.raises(re.error):
        recache.compiled("(unclosed")


def test_a_damaged_cache_or_one_of_another_user_is_not_used(fresh_cache: Path) -> None:
    recache.compiled(*PATTERNS[0])
    recache.save()
    (path,) = (fresh_cache / "memcli").glob("re-*.marshal")
    path.write_bytes(b"not marshal")
    recache._STORE = None
    assert recache.compiled(*PATTERNS[0]).pattern == PATTERNS[0][0]
    os.chmod(fresh_cache / "memcli", 0o755)  # open to others: not trusted
    recache._STORE, recache._NEW = None, {}
    recache.compiled(*PATTERNS[1])
    recache.save()  # nothing written into a folder others can reach
    assert path.read_bytes() == b"not marshal"


def test_a_later_recall_compiles_none_of_the_large_patterns(ws: Path, run) -> None:
    assert run("remember", "Deploy with make deploy; token rotation happens monthly",
               "--tag", "ops", "--subject", "deploy").code == 0
    code = ("import sys\nfrom memcli.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "from memcli.text import recache\nprint('NEW', len(recache._NEW), file=sys.stderr)")
    for n in range(2):
        proc = subprocess.run([sys.executable, "-c", code, "--json", "recall", "deploy", "token"],
                              capture_output=True, text=True, env={**os.environ, "MEMCLI_WORKSPACE": str(ws)})
        assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "NEW 0"  # the second process found every pattern cached
