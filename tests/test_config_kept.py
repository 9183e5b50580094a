"""``memcli.toml`` parsed once per machine (``config._toml``, issue 21 point 4): a later process
reads the parse back instead of importing ``tomllib``, and gets the same settings; what the
cache cannot hold (a TOML date) or a broken file behaves as before; the cache stays small."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from memcli import config
from memcli.config import new_toml, parse_config
from memcli.errors import WorkspaceInvalid
from memcli.text import recache


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(recache, "_STORE", None)
    monkeypatch.setattr(recache, "_NEW", {})
    return tmp_path / "cache"


def _new_process() -> None:
    recache.save()
    recache._STORE = None


def _settings(text: str) -> dict:
    made = parse_config(text)
    return {name: getattr(made, name) for name in made.__slots__}


def test_a_later_process_reads_the_parse_back() -> None:
    text = new_toml().replace("budget = 8000", "budget = 6000")
    first = _settings(text)
    assert any(k.startswith("toml\0") for k in recache._NEW)
    _new_process()
    again = _settings(text)
    assert not recache._NEW  # read from the file, not parsed
    assert again == first
    assert again["context_budget"] == 6000


def test_the_caller_gets_its_own_lists() -> None:
    text = new_toml()
    parse_config(text).read_scopes.append("channel:x")
    _new_process()
    made = parse_config(text)
    made.shared_scopes.append("channel:y")
    assert parse_config(text).read_scopes == ["global", "project", "user:{actor}"]
    assert parse_config(text).shared_scopes == ["project", "global", "channel:*"]


def test_a_date_is_parsed_each_time() -> None:
    text = new_toml() + "\n[extra]\nwhen = 2024-01-01\n"
    for _ in range(2):
        assert parse_config(text).unknown == ["[extra]"]
        _new_process()


def test_broken_toml_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(WorkspaceInvalid, match="cannot read configuration"):
            parse_config("[scopes\nread = 1")
        _new_process()


def test_a_wrong_type_is_refused_from_the_cache_too() -> None:
    text = "[context]\nbudget = \"big\"\n"
    for _ in range(2):
        with pytest.raises(WorkspaceInvalid, match="wrong type"):
            parse_config(text)
        _new_process()


def test_the_cache_keeps_the_newest_texts_only(fresh_cache: Path) -> None:
    for i in range(config.KEPT_TEXTS + 5):
        parse_config(f"[context]\nbudget = {1000 + i}\n")
    recache.save()
    (path,) = (fresh_cache / "memcli").glob("re-*.marshal")
    kept = [k for k in marshal.loads(path.read_bytes()) if k.startswith("toml\0")]
    assert len(kept) == config.KEPT_TEXTS
    assert kept[-1].endswith(f"budget = {1000 + config.KEPT_TEXTS + 4}\n")
