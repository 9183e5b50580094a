"""Tests that hunt (issue 10 point 9): Hypothesis over memory-file bytes, front-matter values,
hook stdin and CLI arguments. Whatever comes in: never exit 1, never a traceback, never past a
time bound (a subprocess timeout). In-process strategies run many examples; the ones that
start the real CLI run few, to keep the suite fast.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MEMCLI

if TYPE_CHECKING:
    from memcli.store.files import MemoryFiles

FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
#: Seconds one CLI run may take on a loaded machine before it counts as a hang.
HANG = 60

KEYS = ["id", "scope", "category", "subject", "status", "importance", "pinned", "createdAt", "updatedAt",
        "expireAt", "provenance", "review", "tags", "paths", "supersedes", "supersededBy", "merged"]
YAML_SCALARS = st.one_of(
    st.sampled_from(["~", "null", "yes", "no", "0x1f", "1e999", ".nan", "-.inf", "!!binary aGk=", "!foo bar",
                     "!!set {a, b}", "&a x", "*a", "'quoted'", "\"esc\\u0000\"", "9999-12-31T23:59:59-05:00",
                     "0001-01-01T00:00:00+14:00", "2025-13-45", "2025-06-02", "T24:00", "[", "{", "}", "- a",
                     "|", ">", "@x", "`x", "%TAG", "? a", ": b", "#c", "\t", "a: b: c"]),
    st.text(max_size=30).map(json.dumps),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
)


def _yaml_value(depth: int = 3) -> st.SearchStrategy[Any]:
    if depth == 0:
        return YAML_SCALARS
    inner = _yaml_value(depth - 1)
    return st.one_of(
        YAML_SCALARS,
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.dictionaries(st.sampled_from(KEYS + ["by", "at", "x"]), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"),
    )


FRONT_MATTER = st.dictionaries(st.sampled_from(KEYS), _yaml_value(), max_size=6)


def _workspace_files(tmp_path: Path) -> tuple[MemoryFiles, Path]:
    from memcli.store.files import MemoryFiles

    folder = tmp_path / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    return MemoryFiles(tmp_path), folder


@FAST
@given(data=st.binary(max_size=600) | st.text(max_size=400).map(lambda t: ("---\n" + t).encode("utf-8", "replace")))
@pytest.mark.slow
def test_any_file_bytes_load_or_are_one_problem(tmp_path_factory, data):
    from memcli.errors import InvalidMemoryFile

    files, folder = _workspace_files(tmp_path_factory.mktemp("bytes"))
    path = folder / "hunted.md"
    path.write_bytes(data)
    for round_trip in (False, True):
        try:
            item = files.load(path, round_trip=round_trip)
        except InvalidMemoryFile as err:
            assert err.path == "memories/project/hunted.md" and err.reason
            continue
        json.dumps(item.memory.to_dict(datetime.now(timezone.utc)))  # what every command prints


@FAST
@given(meta=FRONT_MATTER, body=st.text(max_size=80))
@pytest.mark.slow
def test_any_front_matter_values_load_or_are_one_problem(tmp_path_factory, meta, body):
    from memcli.errors import InvalidMemoryFile
    from memcli.index.db import IndexDB

    files, folder = _workspace_files(tmp_path_factory.mktemp("meta"))
    text = "---\n" + "".join(f"{k}: {v}\n" for k, v in meta.items()) + "---\n" + body
    path = folder / "hunted.md"
    path.write_text(text, encoding="utf-8", errors="replace")
    try:
        item = files.load(path)
    except InvalidMemoryFile as err:
        assert err.reason
        return
    json.dumps(item.memory.to_dict(datetime.now(timezone.utc)))
    IndexDB._columns(item.memory)  # what the index stores


@FAST
@given(raw=st.text(max_size=300) | st.integers(1, 50_000).map(lambda n: "[" * n)
       | st.recursive(st.none() | st.booleans() | st.text(max_size=10) | st.integers(),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                      max_leaves=20).map(json.dumps))
@pytest.mark.slow
def test_any_hook_stdin_is_read_or_warned_about(raw):
    from memcli.agents.hook_protocol import HookInput

    parsed, warning = HookInput.parse(raw)
    assert isinstance(parsed.session_id, str) and (warning is None or isinstance(warning, str))


def _run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    proc = subprocess.run([*MEMCLI, *args], input=stdin, capture_output=True, text=True, env=env, timeout=HANG)
    assert proc.returncode != 1, (args, proc.stderr[-400:])
    assert "Traceback" not in proc.stderr, (args, proc.stderr[-400:])
    return proc


def _hunt_env(ws: Path) -> dict[str, str]:
    return {**os.environ, "MEMCLI_WORKSPACE": str(ws)}


@SLOW
@given(stdin=st.one_of(st.text(max_size=200), st.sampled_from(["[" * 200_000, "{\"session_id\": " * 50_000,
                                                                 "\ud800".encode("utf-8", "surrogatepass").decode(
                                                                     "utf-8", "replace"), "\x00" * 100]),
                       st.dictionaries(st.sampled_from(["session_id", "transcript_path", "cwd", "prompt", "source",
                                                        "hook_event_name", "tool_input"]),
                                       st.text(max_size=40) | st.integers() | st.none(), max_size=5).map(json.dumps)),
       event=st.sampled_from(["session-start", "user-prompt-submit"]))
@pytest.mark.slow
def test_hooks_exit_0_with_valid_output_whatever_stdin_holds(ws, stdin, event):
    proc = _run(["hook", "claude", event], _hunt_env(ws), stdin)
    assert proc.returncode == 0, proc.stderr[-400:]
    if proc.stdout.strip():
        json.loads(proc.stdout)


DATES = st.one_of(st.sampled_from(["0001-01-01", "9999-12-31", "0001-01-01T00:00:00+14:00",
                                   "9999-12-31T23:59:59-05:00", "2025-02-30", "", "now", "-1"]),
                  st.datetimes(timezones=st.timezones() | st.none()).map(lambda d: d.isoformat()))
ARGS = st.one_of(
    st.tuples(st.just("recall"), st.text(max_size=20)),
    st.tuples(st.just("recall"), st.just("--grep"), st.sampled_from(["(?R)", "(a|aa)+$", "[", "\\", "(?P<x>", "*"])),
    st.tuples(st.sampled_from(["list", "recall"]), st.sampled_from(["--created-after", "--created-before"]), DATES),
    st.tuples(st.just("remember"), st.text(max_size=40), st.sampled_from(["--ttl", "--expire-at"]),
              st.sampled_from(["0d", "99999999999y", "1s", "9999-12-31", "0001-01-01", "x"])),
    st.tuples(st.just("show"), st.text(max_size=20)),
)


@SLOW
@given(args=ARGS, now=st.none() | DATES)
@pytest.mark.slow
def test_cli_arguments_never_exit_1(ws, args, now):
    env = _hunt_env(ws)
    if now is not None:
        env["MEMCLI_NOW"] = now
    arguments = [a for a in args if "\x00" not in a]
    _run(["--json", *arguments], env)
