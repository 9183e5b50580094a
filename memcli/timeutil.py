"""The clock and the timestamp rules of SPEC.md section 2.

Rules (documented in the README, tested by CASES.md F5 and F6):

* Timestamps are stored as RFC 3339 in UTC with a ``Z`` suffix, to the second.
* A date alone (``2025-06-02``) means 00:00 UTC of that date, whatever the local zone.
* A date-time without an offset (``2025-03-01T12:00:00``) is read as UTC.
* ``$MEMCLI_NOW`` (an RFC 3339 instant, or a date) sets the clock, so tests and
  reviews can ask "what would be served at that moment".
* Arithmetic on instants goes through :func:`shift` (exact: an expiry past 9999-12-31T23:59:59Z
  is refused with a line that says so) or :func:`shift_clamped` (a window's edge, held at the
  calendar's ends), never ``datetime + timedelta``, which raises ``OverflowError`` there.
"""

from __future__ import annotations

import os
import re
from datetime import date, datetime, timedelta, timezone

_DURATION = re.compile(r"^\s*([-+]?\d+)\s*([smhdwy])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def now() -> datetime:
    """The current instant in UTC, truncated to the second; ``$MEMCLI_NOW`` overrides it.

    Raises:
        ValueError: ``$MEMCLI_NOW`` is set but is not a date or RFC 3339 instant.
    """
    forced = os.environ.get("MEMCLI_NOW")
    if forced:
        return parse_instant(forced)
    return datetime.now(timezone.utc).replace(microsecond=0)


class OutOfCalendar(ValueError):
    """An instant whose UTC form falls outside Python's calendar (years 1 to 9999):
    ``9999-12-31T23:59:59-05:00`` or ``0001-01-01T00:00:00+14:00``."""


def to_utc(value: datetime | date) -> datetime:
    """Normalise a date or date-time to an aware UTC datetime by the rules above.

    Raises:
        OutOfCalendar: its UTC form is before year 1 or after year 9999.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        try:
            return value.astimezone(timezone.utc)
        except OverflowError:
            raise OutOfCalendar(f"{value.isoformat()} is outside the calendar in UTC (years 1 to 9999)") from None
    return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)


def parse_instant(text: str) -> datetime:
    """Parse an RFC 3339 instant, an ISO date-time without offset, or a bare date.

    Args:
        text: e.g. ``2026-11-02T09:14:05Z``, ``2025-03-01T12:00:00``, ``2025-06-02``.

    Returns:
        An aware UTC datetime.

    Raises:
        ValueError: the text is not one of those forms (``OutOfCalendar``: past year 9999
            or before year 1 once in UTC).
    """
    text = text.strip()
    if not text or len(text) > 40:
        raise ValueError(_not_a("date or time", text, "use YYYY-MM-DD or an RFC 3339 time"))
    if len(text) == 10:
        return to_utc(date.fromisoformat(text))
    try:
        return to_utc(datetime.fromisoformat(text))
    except OutOfCalendar:
        raise
    except ValueError:
        raise ValueError(_not_a("date or time", text, "use YYYY-MM-DD or an RFC 3339 time")) from None


def _not_a(what: str, text: str, hint: str) -> str:
    """``not a duration (7 characters; use …)``: what was wrong, never the rejected value itself.

    A value given where a date or duration belongs can be anything a person pasted, a
    secret included, so the message gives its length only.
    """
    return f"not a {what} ({len(text)} character{'s' if len(text) != 1 else ''}; {hint})"


def format_instant(value: datetime) -> str:
    """RFC 3339 in UTC with ``Z``, to the second: ``2026-11-02T09:14:05Z``.

    The year has four digits at every year (``0001-01-01T00:00:00Z``): ``strftime("%Y")``
    drops the leading zeros on glibc, which RFC 3339's ``date-fullyear`` does not allow.
    """
    v = to_utc(value)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}Z"


class NotPositive(ValueError):
    """A duration of zero or less (``0d``, ``-1w``): well formed, but no time at all."""


def parse_duration(text: str) -> timedelta:
    """Parse a TTL such as ``30d``, ``12h``, ``2w``, ``1y`` (a year is 365 days).

    Raises:
        ValueError: not a whole number followed by one of s, m, h, d, w, y
            (``NotPositive``: a number that is zero or negative, ``0d``; ``OutOfCalendar``: a
            duration longer than the calendar itself, which ends past :data:`MAX_INSTANT`
            from any instant).
    """
    match = _DURATION.match(text or "")
    if not match:
        raise ValueError(_not_a("duration", text, "use e.g. 30d, 12h, 2w, 1y"))
    if int(match.group(1)) <= 0:
        raise NotPositive("a duration must be positive (use e.g. 30d, 12h, 2w, 1y)")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds > _CALENDAR_SECONDS:
        raise OutOfCalendar(_PAST_END)
    return timedelta(seconds=seconds)


#: The first and the last instant memcli can hold (Python's calendar, years 1 to 9999, in
#: UTC, to the second).
MIN_INSTANT = datetime(1, 1, 1, tzinfo=timezone.utc)
MAX_INSTANT = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
_CALENDAR_SECONDS = int((MAX_INSTANT - MIN_INSTANT).total_seconds())
_PAST_END = "it ends past 9999-12-31T23:59:59Z, the latest time memcli can store"
_BEFORE_START = "it falls before 0001-01-01T00:00:00Z, the earliest time memcli can store"


def shift(at: datetime, by: timedelta) -> datetime:
    """``at + by`` (``by`` may be negative), for an instant that must be exact: an expiry.

    Args:
        at: an aware datetime.
        by: any duration (``timedelta``), however long.

    Returns:
        The aware datetime ``by`` after ``at``.

    Raises:
        OutOfCalendar: the result falls outside :data:`MIN_INSTANT`..:data:`MAX_INSTANT`;
            the message says which end (it never holds ``at`` or ``by``).
    """
    try:
        out = to_utc(at) + by
    except OverflowError:
        raise OutOfCalendar(_PAST_END if by > timedelta(0) else _BEFORE_START) from None
    if out > MAX_INSTANT:
        raise OutOfCalendar(_PAST_END)
    return out


def shift_clamped(at: datetime, by: timedelta) -> datetime:
    """``at + by``, held within :data:`MIN_INSTANT`..:data:`MAX_INSTANT`: for a window's
    edge (``stats --days N``: "expiring within N days" near the year 9999 reaches to the
    calendar's end, not past it). Never raises."""
    try:
        return shift(at, by)
    except OutOfCalendar:
        return MAX_INSTANT if by > timedelta(0) else MIN_INSTANT
