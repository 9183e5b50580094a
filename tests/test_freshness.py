"""Hand changes are seen within the documented bound without a walk of every file on the
hot path (issue 21 point 1; docs/search.md, "Freshness"): a change that moves its folder's
mtime (a file added, deleted, renamed or replaced) is seen by the next read; an edit in
place, which moves no folder, by the read after the next one at the latest (the first read
starts the full walk once it has answered, the second waits for it).

Real workspaces, the real CLI (``python -m memcli recall``) in subprocesses; nothing is mocked.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cli_runner import Runner

#: Seconds after which a file memcli hashed is no longer "racy" (``memcli.index.db.RACY_NS``):
#: the tests wait this long so that a change is found by the folder check or the full walk,
#: not by the re-hash of recent files.
SETTLE = 2.2


def recall(run: Runner, *words: str) -> list[dict]:
    result = run("--json", "recall", *words)
    assert result.code == 0 and "Traceback" not in result.err, result
    return result.json()["data"]["hits"]


def texts(run: Runner, *words: str) -> list[str]:
    return [h["text"] for h in recall(run, *words)]


@pytest.fixture(autouse=True)
def large_store_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read takes the path of a large store (``index.fresh.INLINE_WALK``: a store of a
    few files is otherwise walked whole by every read)."""
    monkeypatch.setenv("MEMCLI_TEST_INLINE_WALK", "0")


@pytest.fixture
def settled(ws: Path, run: Runner) -> dict[str, Path]:
    """Three memories, indexed and older than the racy window; ``word -> file``."""
    out = {}
    for word in ("alpha", "bravo", "charlie"):
        made = run("--json", "remember", f"The {word} service listens on port 1234.")
        assert made.code == 0, made
        out[word] = next((ws / "memories").rglob(f"{made.json()['data']['id']}*.md"))
    time.sleep(SETTLE)
    assert texts(run, "alpha")  # the hot path settles the racy rows; its walk runs after it
    assert texts(run, "bravo")
    return out


def _put_back(folder: Path, info: os.stat_result) -> None:
    os.utime(folder, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.slow
def test_an_edit_in_place_that_leaves_the_folder_mtime_is_seen_by_the_second_read(settled: dict[str, Path],
                                                                                   run: Runner) -> None:
    path = settled["alpha"]
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("port 1234", "port 9876 zulu"), encoding="utf-8")
    _put_back(path.parent, folder)
    assert path.parent.stat().st_mtime_ns == folder.st_mtime_ns
    recall(run, "zulu")  # at most this one answer may miss it
    assert texts(run, "zulu") == ["The alpha service listens on port 9876 zulu."]
    assert texts(run, "alpha") == ["The alpha service listens on port 9876 zulu."]


def _hand_copy(source: Path, new_id: str, word: str) -> Path:
    """A file added by hand beside ``source``: its text with id ``new_id`` and "bravo" made ``word``."""
    copy = source.with_name(f"{new_id}-added.md")
    text = source.read_text(encoding="utf-8").replace(source.name.split("-")[0], new_id)
    copy.write_text(text.replace("bravo", word), encoding="utf-8")
    return copy


@pytest.mark.slow
def test_a_hand_added_file_is_seen_by_the_next_read(settled: dict[str, Path], run: Runner) -> None:
    _hand_copy(settled["bravo"], "01zzzzzzzzzzzzzzzzzzzzzzzz", "yankee")
    assert texts(run, "yankee") == ["The yankee service listens on port 1234."]


@pytest.mark.slow
def test_a_hand_deleted_file_is_gone_from_the_next_read(settled: dict[str, Path], run: Runner) -> None:
    settled["charlie"].unlink()
    assert texts(run, "charlie") == []
    assert texts(run, "bravo")


@pytest.mark.slow
def test_a_renamed_file_is_found_at_its_new_path_by_the_next_read(ws: Path, settled: dict[str, Path],
                                                                  run: Runner) -> None:
    source = settled["bravo"]
    target_folder = ws / "memories" / "project" / "moved"
    target_folder.mkdir()
    target = target_folder / source.name
    source.rename(target)
    hits = recall(run, "bravo")
    assert [h["path"] for h in hits] == [target.relative_to(ws).as_posix()]
    same = settled["charlie"].with_name(settled["charlie"].name.replace(".md", "-renamed.md"))
    settled["charlie"].rename(same)  # within its folder
    assert [h["path"] for h in recall(run, "charlie")] == [same.relative_to(ws).as_posix()]


@pytest.mark.slow
def test_a_file_replaced_by_a_same_size_file_in_the_same_second_is_seen(settled: dict[str, Path], run: Runner) -> None:
    path = settled["alpha"]
    info, folder = path.stat(), path.parent.stat()
    replacement = path.with_name(".replacement")
    replacement.write_text(path.read_text(encoding="utf-8").replace("alpha", "omega"), encoding="utf-8")
    assert replacement.stat().st_size == info.st_size
    os.utime(replacement, ns=(info.st_atime_ns, info.st_mtime_ns))  # same size, same mtime
    os.replace(replacement, path)
    _put_back(path.parent, folder)
    recall(run, "omega")  # at most this one answer may miss it
    assert texts(run, "omega") == ["The omega service listens on port 1234."]
    assert texts(run, "alpha") == []
    # and rewritten in place, same size and mtime again, the folder's mtime put back
    info, folder = path.stat(), path.parent.stat()
    path.write_bytes(path.read_bytes().replace(b"omega", b"sigma"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    _put_back(path.parent, folder)
    recall(run, "sigma")
    assert texts(run, "sigma") == ["The sigma service listens on port 1234."]
    assert texts(run, "omega") == []


@pytest.mark.slow
def test_a_hand_change_is_seen_when_no_walk_could_be_started(settled: dict[str, Path], ws: Path, run: Runner) -> None:
    """The walk a read owes is done by the next read itself when none runs (a killed child)."""
    path = settled["bravo"]
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("1234", "5555"), encoding="utf-8")
    _put_back(path.parent, folder)
    read = run("--json", "recall", "5555", env={"MEMCLI_TEST_KILL_AT": "fresh:walking"})  # its walk dies
    assert read.code == 0, read
    assert texts(run, "5555") == ["The bravo service listens on port 5555."]


@pytest.mark.slow
@pytest.mark.process  # the walk's process and the read's are the point
def test_an_owed_walk_of_a_large_store_runs_in_its_own_process_not_in_the_read(ws: Path, run: Runner) -> None:
    """A read that owes a walk nobody runs (the child of the previous read was killed) starts
    it in its own process and waits for it, rather than walking every file itself (a read's
    memory would then grow with the store: 106 MB at 100,000 files); the change is seen all the same."""
    killed = {"MEMCLI_TEST_KILL_AT": "fresh:walking"}  # every walk started in the set-up dies before it walks
    for word in ("alpha", "bravo"):
        assert run("remember", f"The {word} service listens on port 1234.", env=killed).code == 0
    time.sleep(SETTLE)
    assert run("--json", "recall", "alpha", env=killed).code == 0  # answers, owes a walk; its child dies
    _walks_over(ws)  # ... and is gone: a read while it still starts up would wait for it, then walk in-process
    log = ws / ".cache" / "index-build.log"
    assert "started for" not in (log.read_text(encoding="utf-8") if log.exists() else "")
    path = next((ws / "memories").rglob("*.md"))
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("port 1234", "port 4321 zulu"), encoding="utf-8")
    _put_back(path.parent, folder)
    assert len(recall(run, "zulu")) == 1  # waited for the walk it started
    assert "started for" in log.read_text(encoding="utf-8")  # a walk of its own process (then the watcher)


@pytest.mark.parametrize("damage", [b"", b"\x00" * 64, b"not marshal"])
@pytest.mark.slow
def test_an_empty_or_garbled_folder_state_or_snapshot_means_a_full_walk(settled, ws: Path, run, damage) -> None:
    """The folder state and the snapshot are written without fsync (a cache): after a power
    loss either may be empty or garbled; a read then walks every file, missing nothing."""
    from memcli.store.oslock import FileLock

    FileLock(ws / ".cache" / "index.lock", timeout=120).acquire().release()  # the fixture's reads' walk is over
    path = settled["charlie"]
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("1234", "4242 xray"), encoding="utf-8")
    _put_back(path.parent, folder)
    for name in ("index.sqlite3.folders", "index.sqlite3.snapshot"):
        (ws / ".cache" / name).write_bytes(damage)
    assert texts(run, "xray") == ["The charlie service listens on port 4242 xray."]
    assert texts(run, "bravo")


# --- writes: the same folder check as the reads, and the files a write rewrites read from disk ---


def _git(ws: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=ws, check=True,
                   capture_output=True)


def _walks_over(ws: Path) -> None:
    """Wait for the full walks earlier reads started in the background (they hold the build lock)."""
    from memcli.store.oslock import FileLock

    FileLock(ws / ".cache" / "index.lock", timeout=120).acquire().release()


@pytest.mark.slow
def test_a_write_is_at_most_the_one_stale_answer_after_an_edit_in_place(ws: Path, settled: dict[str, Path],
                                                                         run: Runner) -> None:
    """A write checks the folders as a read does: after an edit in place that moves no
    folder, the read that starts once the write has answered sees the edit."""
    _walks_over(ws)
    path = settled["alpha"]
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("port 1234", "port 9876 zulu"), encoding="utf-8")
    _put_back(path.parent, folder)
    made = run("--json", "remember", "The delta service listens on port 4321.")
    assert made.code == 0, made
    assert texts(run, "zulu") == ["The alpha service listens on port 9876 zulu."]


@pytest.mark.slow
def test_a_write_reads_the_subject_holder_from_disk_before_it_retires_it(ws: Path, run: Runner) -> None:
    """The index finds the memory holding a subject; the write reads that file from disk first:
    a holder archived by a committed edit in place (its folder's mtime unchanged, so the index
    may not have seen it yet) is left as it is, not marked superseded."""
    held = run("--json", "remember", "The staging database listens on port 5432.", "--subject", "staging-db-port")
    assert held.code == 0, held
    path = next((ws / "memories").rglob(f"{held.json()['data']['id']}*.md"))
    time.sleep(SETTLE)
    assert texts(run, "staging")  # indexed, settled; its walk runs after it
    assert texts(run, "staging")
    _walks_over(ws)  # so no walk that starts after the edit below finds it: only the write's own check can
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("status: active", "status: archived"), encoding="utf-8")
    _put_back(path.parent, folder)
    _git(ws, "commit", "-q", "-am", "archived by hand")
    before = path.read_bytes()
    new = run("--json", "remember", "The staging database now listens on port 6543.",
              "--subject", "staging-db-port")
    assert new.code == 0, new
    assert new.json()["data"]["changed"] == []
    assert path.read_bytes() == before  # still archived, by the person's hand; not superseded by memcli
    shown = run("--json", "show", held.json()["data"]["id"])
    assert shown.json()["data"]["status"] == "archived", shown


@pytest.mark.slow
def test_a_write_sees_a_hand_added_duplicate(settled: dict[str, Path], run: Runner) -> None:
    """A file added by hand moves its folder's mtime: the next write's duplicate gate finds it."""
    _hand_copy(settled["bravo"], "01zzzzzzzzzzzzzzzzzzzzzzzy", "kilo")
    again = run("--json", "remember", "The kilo service listens on port 1234.")
    assert again.code == 0, again
    assert again.json()["data"]["outcome"] == "noop" and again.json()["data"]["id"] == "01zzzzzzzzzzzzzzzzzzzzzzzy"
