"""A long-lived process's walks (``index.fresh.Walker``, the MCP server's) skip the walk of
every file when an inotify watch saw nothing change since the last one (issue 21 points 1-2),
and walk as before on any change: an edit in place, a new folder, a deleted one.

Real files, a real index, the real kernel watch; the Walker's own thread.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from memcli.index import fresh

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture(autouse=True)
def large_store_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fresh.INLINE_ENV, "0")  # a store of a few files takes the large store's path


def _round(walker: fresh.Walker, ws: Path) -> None:
    """Kick one walk and wait until it is done: recorded by the kick itself (nothing changed)
    or walked by the walker's thread (a wait, not a timing)."""
    done = (walker.walks, walker.skipped)
    walker.kick(ws, ws / ".cache" / "index.sqlite3")
    limit = time.monotonic() + 120
    while (walker.walks, walker.skipped) == done and time.monotonic() < limit:
        time.sleep(0.02)
    assert (walker.walks, walker.skipped) != done, "the walker's round never came"


def _texts(run, word: str) -> list[str]:
    result = run("--json", "recall", word)
    assert result.code == 0, result
    return [h["text"] for h in result.json()["data"]["hits"]]


def test_a_watched_store_is_walked_only_when_something_changed(ws: Path, run) -> None:
    made = run("--json", "remember", "The alpha service listens on port 1234.")
    assert made.code == 0, made
    path = next((ws / "memories").rglob(f"{made.json()['data']['id']}*.md"))
    assert _texts(run, "alpha")
    walker = fresh.Walker()
    _round(walker, ws)  # the first round walks and starts the watch
    assert (walker.walks, walker.skipped) == (1, 0)
    state = fresh.load_state(ws / ".cache" / "index.sqlite3", _generation(ws))
    assert state is not None
    before = state.walked_ns
    _round(walker, ws)  # nothing changed: a walk recorded, none done
    assert (walker.walks, walker.skipped) == (1, 1)
    after = fresh.load_state(ws / ".cache" / "index.sqlite3", _generation(ws))
    assert after is not None and after.walked_ns > before

    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("1234", "9876 zulu"), encoding="utf-8")
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))  # an edit in place: no folder moves
    _round(walker, ws)
    assert (walker.walks, walker.skipped) == (2, 1)
    assert _texts(run, "zulu") == ["The alpha service listens on port 9876 zulu."]

    new = ws / "memories" / "project" / "handmade"
    new.mkdir()
    (new / "01zzzzzzzzzzzzzzzzzzzzzzzz-added.md").write_text(
        path.read_text(encoding="utf-8").replace(path.name.split("-")[0], "01zzzzzzzzzzzzzzzzzzzzzzzz")
        .replace("alpha", "yankee"), encoding="utf-8")
    _round(walker, ws)  # a new folder: the watch is made again, and the store walked
    assert walker.walks == 3
    assert _texts(run, "yankee")
    (new / "01zzzzzzzzzzzzzzzzzzzzzzzz-added.md").write_text("", encoding="utf-8")  # in the new folder: watched
    _round(walker, ws)
    assert walker.walks == 4
    _round(walker, ws)
    assert (walker.walks, walker.skipped) == (4, 2)


def test_the_process_own_writes_need_no_walk_but_a_hand_edit_after_them_does(ws: Path, run) -> None:
    """A write of this process re-indexes its files (``IndexDB.refresh``): the watch's events on
    them, and on its hidden temporary files, are no change; the same file edited by hand
    afterwards is (issue 21: a recall right after a remember costs about a plain one)."""
    assert run("remember", "The charlie service listens on port 1111.").code == 0
    walker = fresh.Walker()
    _round(walker, ws)
    assert walker.walks == 1
    made = run("--json", "remember", "The delta service listens on port 2222.")  # in this process
    assert made.code == 0, made
    _round(walker, ws)
    assert (walker.walks, walker.skipped) == (1, 1)
    path = next((ws / "memories").rglob(f"{made.json()['data']['id']}*.md"))
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("2222", "3333 whiskey"), encoding="utf-8")
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    _round(walker, ws)
    assert walker.walks == 2
    assert _texts(run, "whiskey") == ["The delta service listens on port 3333 whiskey."]


def test_without_a_watch_every_round_walks(ws: Path, run) -> None:
    assert run("remember", "The bravo service listens on port 4321.").code == 0
    walker = fresh.Walker(watch=False)
    _round(walker, ws)
    _round(walker, ws)
    assert (walker.walks, walker.skipped) == (2, 0)


def _generation(ws: Path) -> str:
    import sqlite3

    with sqlite3.connect(ws / ".cache" / "index.sqlite3") as db:
        return db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
