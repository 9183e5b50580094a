"""Time at the ends of the calendar (issue 19 item 3): arithmetic on instants never raises
past a clear message (``timeutil.shift``, ``timeutil.shift_clamped``), and ids stay unique
under any clock (``model.new_id``).

The inputs that failed: ``MEMCLI_NOW=9999-12-31T23:00:00Z memcli stats`` ended in "internal
error: OverflowError" (exit 1); under ``MEMCLI_NOW=1970-01-01`` every id was
``00000000000000000000000001``, so a second write's file was skipped as a duplicate.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli import model, timeutil
from memcli.timeutil import MAX_INSTANT, MIN_INSTANT, OutOfCalendar, shift, shift_clamped

format_instant, parse_duration, parse_instant = timeutil.format_instant, timeutil.parse_duration, timeutil.parse_instant

UTC = timezone.utc
#: Instants near both ends of the calendar, and at the Unix epoch (the ids' own start).
ENDS = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 3)),
    st.datetimes(min_value=datetime(1969, 12, 31, 23), max_value=datetime(1970, 1, 1, 1)),
    st.datetimes(min_value=datetime(9999, 12, 29), max_value=datetime(9999, 12, 31, 23, 59, 59)),
).map(lambda d: d.replace(microsecond=0, tzinfo=UTC))
DURATIONS = st.one_of(
    st.timedeltas(min_value=timedelta(days=-4000), max_value=timedelta(days=4000)),
    st.sampled_from([timedelta.max, timedelta.min, timedelta(days=3_650_000), timedelta(seconds=1)]),
)
TTLS = st.sampled_from(["1s", "30d", "2w", "1y", "5000y", "9999y", "99999y", "99999999999y", "999999999999999999999d"])
NOWS = st.sampled_from(["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "1970-01-01", "1970-01-01T00:00:00Z",
                        "9999-12-31T23:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-05:00"])
IN_PROCESS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@given(at=ENDS, by=DURATIONS)
def test_shift_is_exact_or_says_which_end_it_passed(at: datetime, by: timedelta) -> None:
    try:
        out = shift(at, by)
    except OutOfCalendar as err:
        assert str(err) in ("it ends past 9999-12-31T23:59:59Z, the latest time memcli can store",
                            "it falls before 0001-01-01T00:00:00Z, the earliest time memcli can store")
        return
    assert MIN_INSTANT <= out <= MAX_INSTANT and out - at == by


@given(at=ENDS, by=DURATIONS)
def test_shift_clamped_never_raises_and_stays_in_the_calendar(at: datetime, by: timedelta) -> None:
    out = shift_clamped(at, by)
    assert MIN_INSTANT <= out <= MAX_INSTANT
    assert (out >= at) if by >= timedelta(0) else (out <= at)
    format_instant(out)  # every instant it returns can be written


@given(at=ENDS)
def test_every_instant_is_written_with_a_four_digit_year_and_read_back(at: datetime) -> None:
    text = format_instant(at)
    assert len(text) == 20 and parse_instant(text) == at


@given(text=TTLS, at=ENDS)
def test_a_ttl_ends_in_the_calendar_or_is_out_of_calendar(text: str, at: datetime) -> None:
    try:
        shift(at, parse_duration(text))
    except OutOfCalendar:
        pass


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from memcli.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.fixture
def far_ends(ws: Path) -> Path:
    """A workspace holding memories whose expireAt sits at both ends of the calendar."""
    from conftest import git

    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    for name, expire in (("first", "0001-01-01T00:00:00Z"), ("last", "9999-12-31T23:59:59Z"),
                         ("epoch", "1970-01-01T00:00:01Z")):
        (folder / f"{name}.md").write_text(f"---\nexpireAt: {expire}\n---\nExpires at the {name} instant.\n",
                                           encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "far ends")
    return ws


@IN_PROCESS
@given(now=NOWS, days=st.sampled_from([0, 1, 30, 36500]))
def test_stats_answers_at_both_ends_of_the_calendar(far_ends: Path, capsys, monkeypatch, now: str, days: int) -> None:
    monkeypatch.setenv("MEMCLI_NOW", now)
    code, out, err = _cli(capsys, "--json", "stats", "--days", str(days))
    if now.endswith(("+14:00", "-05:00")):  # outside the calendar once in UTC: the clock itself is refused
        assert code == 5 and "outside the calendar" in json.loads(out)["error"]["message"], (out, err)
        return
    assert code == 0, (out, err)
    data = json.loads(out)["data"]
    assert data["memories"] == 3
    if now == "9999-12-31T23:00:00Z" and days:
        assert [m["id"] for m in data["expiring"]] == ["last"]


def test_stats_at_the_end_of_the_calendar_in_a_real_process(far_ends: Path, run) -> None:
    result = run("stats", env={"MEMCLI_NOW": "9999-12-31T23:00:00Z"})
    assert result.code == 0 and "internal error" not in result.err, result
    assert "last" in result.out  # expiring within 30 days: the window is clamped at the calendar's end


@IN_PROCESS
@given(now=NOWS, ttl=TTLS, option=st.sampled_from(["--ttl", "--expire-at"]))
def test_ttl_and_expire_at_at_both_ends_are_written_or_refused_in_one_line(ws: Path, capsys, monkeypatch, now: str,
                                                                          ttl: str, option: str) -> None:
    monkeypatch.setenv("MEMCLI_NOW", now)
    value = ttl if option == "--ttl" else {"1s": "9999-12-31T23:59:59Z", "30d": "0001-01-01"}.get(ttl, "2100-01-01")
    code, out, err = _cli(capsys, "remember", "A memory written at the edge of time.", option, value)
    assert code in (0, 5), (out, err)
    if code == 5:
        assert err.startswith("memcli: error: ") and err.count("\n") == 1 and "internal error" not in err


def test_a_ttl_past_the_year_9999_says_how_to_never_expire(ws: Path, run) -> None:
    result = run("remember", "Keep this for ever.", "--ttl", "99999y")
    assert result.code == 5 and result.err.count("\n") == 1, result
    assert "past 9999-12-31T23:59:59Z" in result.err and "never expires" in result.err
    assert not list((ws / "memories").rglob("*.md"))


@pytest.mark.parametrize("now", ["1970-01-01", "2026-06-01T12:00:00Z"])
def test_two_writes_under_a_frozen_clock_make_two_files_in_separate_processes(ws: Path, run, now: str) -> None:
    ids = []
    for text in ("The first memory under a frozen clock.", "A second, different memory at that instant."):
        result = run("--json", "remember", text, env={"MEMCLI_NOW": now})
        assert result.code == 0, result
        ids.append(result.json()["data"]["id"])
    assert ids[0] != ids[1] and ids[0][:10] == ids[1][:10]  # same millisecond, different random part
    assert "00000000000000000000000001" not in ids
    assert len(list((ws / "memories").rglob("*.md"))) == 2
    listed = run("--json", "list", env={"MEMCLI_NOW": now})
    assert listed.code == 0 and "duplicate id" not in listed.err, listed
    assert {m["id"] for m in listed.json()["data"]["memories"]} == set(ids)


@given(at=st.sampled_from([datetime(1970, 1, 1, tzinfo=UTC), MAX_INSTANT]) | ENDS.filter(lambda d: d.year >= 1970))
def test_ids_made_in_one_millisecond_are_distinct_and_in_order(at: datetime) -> None:
    made = [model.new_id(at) for _ in range(5)]
    assert len(set(made)) == 5 and made == sorted(made)
    assert all(len(i) == 26 and model.id_from_stem(f"{i}-x") == i for i in made)
    assert made[0] != "00000000000000000000000001"


@given(at=ENDS.filter(lambda d: d.year < 1970))
def test_an_instant_before_1970_has_no_id(at: datetime) -> None:
    with pytest.raises(ValueError, match="1970-10889"):
        model.new_id(at)
