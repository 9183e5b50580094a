"""Counts kept beside the index, so that a read does not count thousands of rows again.

A read at 100,000 memories counted every eligible row for the context block's "N more
memories" (0.04-0.1 s) and every unreadable file for its warning (5,966 rows in the generated
store: about 10 ms), on every call: time that grows with the store. Each count is kept in
``index.sqlite3.counts`` (JSON, beside the index file) under:

- the index's ``generation`` (a rebuilt index is another one) and the ``changes`` counter,
  which triggers move on every insert, update and delete of a ``docs`` row by any process
  (``db.CHANGE_TRIGGERS``): a count of another state of the rows is never answered;
- the count's own key (its SQL and parameters);
- for a count that depends on the clock (memories past their ``expireAt`` drop out), the
  instant ``since`` it was taken at and ``until``, the first expiry among the rows it
  counted: it answers for a clock in ``[since, until)`` only.

The file is a cache written without ``fsync`` (``store.files.atomic_write``): missing,
unreadable or of another state means "count again"; a count is kept for at most
``KEPT`` keys per state of the rows (scopes, actors).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.index.db import IndexDB

#: The file's suffix, after the index file's name.
SUFFIX = ".counts"
#: Keys kept at most for one state of the rows.
KEPT = 16


def count(index: IndexDB, key: str, sql: str, params: dict | tuple, now: float | None = None) -> int:
    """The count ``sql`` selects, kept (see the module docstring).

    Args:
        index: an opened index.
        key: names the count among those kept (its SQL and parameters, as text).
        sql: a query of one row: the count, then the first instant (seconds since the epoch)
            at which it may change by the clock alone, or NULL when it never does.
        params: ``sql``'s parameters.
        now: the clock the count is taken at (seconds), when it depends on one; None otherwise.

    Raises:
        sqlite3.Error: the index cannot be read (as running ``sql`` would).
    """
    kept = _load(index)
    row = index.db.execute("SELECT n FROM changes").fetchone()
    changes = row[0] if row else None
    name = json.dumps([index.generation, key])
    found = kept.get(name) if kept.get("changes") == changes else None
    if isinstance(found, list) and len(found) == 3 and isinstance(found[0], int):
        since, until = found[1], found[2]
        if now is None or ((since is None or since <= now) and (until is None or now < until)):
            return found[0]
    changes, counted, until = index.db.execute(f"SELECT (SELECT n FROM changes), * FROM ({sql})", params).fetchone()
    if kept.get("changes") != changes:
        kept = {"changes": changes}
    if len(kept) <= KEPT:
        kept[name] = [counted, now, until]
        _save(index, kept)
    return counted


def _path(index: IndexDB) -> str:
    return str(index.path.with_name(index.path.name + SUFFIX))


def _load(index: IndexDB) -> dict:
    """The kept counts, or ``{}`` when there are none or the file is unreadable. Never raises."""
    try:
        with open(_path(index), "rb") as handle:
            kept = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _save(index: IndexDB, kept: dict) -> None:
    """Write the kept counts atomically, without ``fsync`` (a cache). Never raises."""
    from pathlib import Path

    from memcli.store.files import atomic_write

    try:
        atomic_write(Path(_path(index)), json.dumps(kept).encode(), durable=False)
    except OSError:
        pass
