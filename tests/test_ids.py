"""Ids carry the time to the millisecond; prefixes and ordering (issue 14, point 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import MEMCLI


def test_two_memories_a_few_milliseconds_apart_differ_in_time_and_list_newest_first(ws: Path) -> None:
    # one after the other: two processes started together may make their ids in the same
    # millisecond (CI, stops 35 and 36), which the random part then tells apart (the id-only
    # guarantee is test_ids' property tests'); a few milliseconds apart, the time parts differ
    ids = []
    for n in ("one", "two"):
        out = subprocess.run([*MEMCLI, "-w", str(ws), "--json", "remember", f"Sequential fact {n} about caching"],
                             capture_output=True, text=True, timeout=120)
        ids.append(json.loads(out.stdout)["data"]["id"])
    assert ids[0][:10] < ids[1][:10]  # later, to the millisecond
    listed = subprocess.run([*MEMCLI, "-w", str(ws), "--json", "list"], capture_output=True, text=True, timeout=60)
    order = [m["id"] for m in json.loads(listed.stdout)["data"]["memories"]]
    assert order == sorted(ids, reverse=True)


def test_an_ambiguous_prefix_names_the_candidates(ws: Path) -> None:
    ids = []
    for n in range(2):
        out = subprocess.run([*MEMCLI, "-w", str(ws), "--json", "remember", f"Prefix test memory {n} of two"],
                             capture_output=True, text=True, timeout=60)
        ids.append(json.loads(out.stdout)["data"]["id"])
    common = 0
    while ids[0][common] == ids[1][common]:
        common += 1
    prefix = ids[0][:max(common, 4)]
    shown = subprocess.run([*MEMCLI, "-w", str(ws), "show", prefix], capture_output=True, text=True, timeout=60)
    if common >= 4:
        assert shown.returncode == 7, shown
        assert ids[0] in shown.stderr and ids[1] in shown.stderr


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_an_id_is_the_text_python_ulid_gives_the_same_128_bits(value: int) -> None:
    from ulid import ULID

    from memcli.model import crockford

    assert crockford(value) == str(ULID.from_bytes(value.to_bytes(16, "big"))).lower()


def test_a_new_id_is_a_ulid_of_its_millisecond_and_making_one_imports_no_ulid_library() -> None:
    code = ("import sys; from datetime import datetime, timezone; from memcli.model import new_id; "
            "i = new_id(datetime(2026, 12, 6, 9, 30, 0, 123000, tzinfo=timezone.utc)); "
            "print(i, 'ulid' in sys.modules)")
    made, imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout.split()
    from ulid import ULID

    assert imported == "False"
    assert ULID.from_str(made.upper()).milliseconds == 1796549400123


def test_an_id_prefix_too_short_is_a_validation_error_and_a_short_hand_written_id_is_found(ws, run):
    """`memcli show 0` exited 4 (not found) where the exit table says a value memcli does not
    accept is 5 (README: a prefix of 4 or more characters; shorter only a whole id)."""
    run("remember", "Deploy with make deploy.")
    for args in (["show", "0"], ["show", "01m"], ["forget", "0"]):
        result = run(*args)
        assert result.code == 5 and "too short" in result.err and result.err.count("\n") == 1, (args, result)
    assert run("show", "zzzz").code == 4  # a prefix long enough that names nothing: not found
