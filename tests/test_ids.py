"""Ids carry the time to the millisecond; prefixes and ordering (issue 14, point 3)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import MEMCLI


def test_two_memories_a_few_milliseconds_apart_differ_in_time_and_list_newest_first(ws: Path) -> None:
    procs = [subprocess.Popen([*MEMCLI, "-w", str(ws), "--json", "remember", f"Parallel fact {n} about caching"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in ("one", "two")]
    ids = [json.loads(p.communicate(timeout=120)[0])["data"]["id"] for p in procs]
    assert ids[0][:10] != ids[1][:10]  # same second, different milliseconds
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


def test_an_id_prefix_too_short_is_a_validation_error_and_a_short_hand_written_id_is_found(ws, run):
    """`memcli show 0` exited 4 (not found) where the exit table says a value memcli does not
    accept is 5 (README: a prefix of 4 or more characters; shorter only a whole id)."""
    run("remember", "Deploy with make deploy.")
    for args in (["show", "0"], ["show", "01m"], ["forget", "0"]):
        result = run(*args)
        assert result.code == 5 and "too short" in result.err and result.err.count("\n") == 1, (args, result)
    assert run("show", "zzzz").code == 4  # a prefix long enough that names nothing: not found
