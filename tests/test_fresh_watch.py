"""The store's freshness watcher (``memcli/index/watcher.py``; issue 21 point 1; docs/search.md,
"Freshness"): with it running, every hand change is seen by the first read after it, without
a walk of every file; without it (killed, idle, refused), reads fall back to their own check
and keep the documented bound, and one new watcher is started.

Real workspaces, real ``python -m memcli`` processes (every ``run`` here is one), the real
kernel watch and socket; nothing is mocked. Waits are hang guards, never timings.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from planted import Planted

from conftest import MEMCLI
from memcli.index.fresh import INLINE_ENV, SERVICE
from memcli.index.sockets import ask, socket_path

if TYPE_CHECKING:
    from cli_runner import Runner

# every test builds a store past the in-process walk's 2,000 files and runs real processes
pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's"),
              pytest.mark.process, pytest.mark.slow]

#: Seconds after which a file memcli hashed is no longer "racy" (``db.RACY_NS``): the store is
#: left that long before its index is built, so no read finds a change by re-hashing a recent file.
SETTLE = 2.2
#: A hang guard for a watcher to come up or go away on a loaded machine (seconds).
GUARD = 120
WORDS = ("alpha", "bravo", "charlie", "delta")


@pytest.fixture(autouse=True)
def own_sockets(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every read takes a large store's path (a store of a few files is walked whole by each
    read and never watched), the sockets live in a folder of this test's own
    (``$XDG_RUNTIME_DIR``, short enough for a socket's path), and the watcher is stopped after."""
    monkeypatch.setenv(INLINE_ENV, "0")
    runtime = Path(tempfile.mkdtemp(prefix="mcw-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield runtime
    found = ping(ws)
    if found:
        os.kill(found["pid"], signal.SIGTERM)
    shutil.rmtree(runtime, ignore_errors=True)


def fresh_socket(ws: Path) -> Path:
    return socket_path(ws / ".cache" / "index.sqlite3", SERVICE)


def ping(ws: Path) -> dict | None:
    return ask(fresh_socket(ws), {"ping": True}, 5.0)


def until_watching(ws: Path, other_than: int | None = None) -> dict:
    """The watcher's ``ping`` once one answers (another than ``other_than``)."""
    limit = time.monotonic() + GUARD
    while time.monotonic() < limit:
        found = ping(ws)
        if found and found["pid"] != other_than:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no watcher came up; its log: {log(ws)}")


def until_gone(pid: int) -> None:
    limit = time.monotonic() + GUARD
    while time.monotonic() < limit:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"watcher {pid} is still running")


def log(ws: Path) -> str:
    path = ws / ".cache" / "index-build.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def texts(run: Runner, word: str, env: dict[str, str] | None = None) -> list[str]:
    result = run("--json", "recall", word, env=env)
    assert result.code == 0 and "Traceback" not in result.err, result
    return [h["text"] for h in result.json()["data"]["hits"]]


def paths(run: Runner, word: str) -> list[str]:
    result = run("--json", "recall", word)
    assert result.code == 0, result
    return [h["path"] for h in result.json()["data"]["hits"]]


def write_memory(path: Path, word: str) -> None:
    memory_id = "01" + word.ljust(24, "z")[:24]
    path.write_text(f"---\nid: {memory_id}\nscope: project\ncategory: fact\ncreatedAt: 2026-11-02T09:14:05Z\n---\n"
                    f"The {word} service listens on port 1234.\n", encoding="utf-8")


@pytest.fixture
def store(ws: Path, run: Runner) -> dict[str, Path]:
    """Four memories in two folders, indexed, older than the racy window, and no watcher yet; ``word -> file``."""
    files = {}
    for i, word in enumerate(WORDS):
        folder = ws / "memories" / "project" / ("2026-11" if i % 2 == 0 else "2026-10")
        folder.mkdir(parents=True, exist_ok=True)
        files[word] = folder / f"01{word}-{word}.md"
        write_memory(files[word], word)
    time.sleep(SETTLE)
    assert run("index", "status").code == 0  # a full walk: the folder state, no watcher started
    return files


@pytest.fixture
def watching(store: dict[str, Path], ws: Path, run: Runner) -> dict[str, Path]:
    """``store`` with its watcher running (started by a read's owed walk)."""
    assert texts(run, "alpha")
    until_watching(ws)
    return store


def put_back(folder: Path, info: os.stat_result) -> None:
    os.utime(folder, ns=(info.st_atime_ns, info.st_mtime_ns))


def edit_in_place(ws: Path, files: dict[str, Path]) -> Callable[[Runner], bool]:
    path = files["alpha"]
    folder = path.parent.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("port 1234", "port 9876 zulu"), encoding="utf-8")
    put_back(path.parent, folder)
    return lambda run: texts(run, "zulu") == ["The alpha service listens on port 9876 zulu."]


def add(ws: Path, files: dict[str, Path]) -> Callable[[Runner], bool]:
    write_memory(files["bravo"].with_name("01yankee-added.md"), "yankee")
    return lambda run: texts(run, "yankee") == ["The yankee service listens on port 1234."]


def delete(ws: Path, files: dict[str, Path]) -> Callable[[Runner], bool]:
    files["charlie"].unlink()
    return lambda run: texts(run, "charlie") == [] and texts(run, "bravo") != []


def rename(ws: Path, files: dict[str, Path]) -> Callable[[Runner], bool]:
    across = files["bravo"].parent / files["alpha"].name  # into the other folder
    files["alpha"].rename(across)
    within = files["delta"].with_name("01delta-renamed.md")
    files["delta"].rename(within)
    return lambda run: (paths(run, "alpha") == [across.relative_to(ws).as_posix()]
                        and paths(run, "delta") == [within.relative_to(ws).as_posix()])


def replace_same_size(ws: Path, files: dict[str, Path]) -> Callable[[Runner], bool]:
    """Replaced by a file of the same size and mtime within the same second, the folder's mtime put back."""
    path = files["alpha"]
    info, folder = path.stat(), path.parent.stat()
    replacement = path.with_name(".replacement")
    replacement.write_text(path.read_text(encoding="utf-8").replace("alpha", "omega"), encoding="utf-8")
    assert replacement.stat().st_size == info.st_size
    os.utime(replacement, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(replacement, path)
    put_back(path.parent, folder)
    return lambda run: texts(run, "omega") == ["The omega service listens on port 1234."] and texts(run, "alpha") == []


CASES = {"an edit in place, folder mtime put back": edit_in_place, "a hand-added file": add,
         "a hand-deleted file": delete, "a rename within and across folders": rename,
         "a same-size replacement in the same second": replace_same_size}


@pytest.mark.parametrize("change", list(CASES.values()), ids=list(CASES))
def test_with_the_watcher_each_hand_change_is_seen_by_the_first_read(watching: dict[str, Path], ws: Path,
                                                                      run: Runner, change) -> None:
    before = until_watching(ws)
    seen = change(ws, watching)
    assert seen(run)  # the first read after the change: no stale answer at all
    after = ping(ws)
    assert after is not None and after["pid"] == before["pid"]  # answered by the same watcher,
    assert after["clean"] > before["clean"] and after["indexed"] > before["indexed"]  # which took the files in
    assert log(ws).count("started for") == 1  # and no read fell back to start a walk


def test_an_edit_in_place_rewritten_again_in_the_same_second_is_seen(watching: dict[str, Path], ws: Path,
                                                                      run: Runner) -> None:
    """Rewritten twice with the same size and mtime, the folder put back each time: two reads, two answers."""
    path = watching["bravo"]
    for old, word in (("bravo", "kilox"), ("kilox", "limax")):
        info, folder = path.stat(), path.parent.stat()
        path.write_bytes(path.read_bytes().replace(f"The {old}".encode(), f"The {word}".encode()))
        assert path.stat().st_size == info.st_size
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
        put_back(path.parent, folder)
        assert texts(run, word) == [f"The {word} service listens on port 1234."]
        assert texts(run, old) == []


def test_memcli_own_writes_are_taken_in_without_indexing_them_again(watching: dict[str, Path], ws: Path,
                                                                    run: Runner) -> None:
    first = until_watching(ws)
    assert run("remember", "The foxtrot service listens on port 4321.").code == 0  # this month's folder: new
    assert texts(run, "foxtrot") == ["The foxtrot service listens on port 4321."]
    before = until_watching(ws, other_than=first["pid"])  # the new folder: a new watcher
    made = run("--json", "remember", "The echo service listens on port 4321.")
    assert made.code == 0, made
    assert texts(run, "echo") == ["The echo service listens on port 4321."]
    after = ping(ws)
    assert after is not None and after["pid"] == before["pid"] and after["clean"] > before["clean"]
    assert after["indexed"] == before["indexed"]  # the write indexed its file; the watcher only checked it


def test_a_killed_watcher_means_the_fallback_then_a_new_watcher(watching: dict[str, Path], ws: Path,
                                                               run: Runner) -> None:
    old = until_watching(ws)
    os.kill(old["pid"], signal.SIGKILL)
    until_gone(old["pid"])
    assert fresh_socket(ws).exists()  # left behind: refused, not answered
    seen = edit_in_place(ws, watching)
    texts(run, "zulu")  # the fallback: at most this answer may miss it
    assert seen(run)
    new = until_watching(ws, other_than=old["pid"])
    seen = add(ws, watching)
    assert seen(run)
    after = ping(ws)
    assert after is not None and after["pid"] == new["pid"] and after["indexed"] > new["indexed"]


def test_a_watcher_killed_while_it_indexes_leaves_correct_answers(store: dict[str, Path], ws: Path,
                                                                  run: Runner) -> None:
    assert texts(run, "alpha", env={"MEMCLI_TEST_KILL_AT": "watcher:indexing"})  # its watcher inherits the point
    old = until_watching(ws)
    seen = edit_in_place(ws, store)
    texts(run, "zulu")  # the watcher dies asked; at most this answer may miss the edit
    until_gone(old["pid"])
    assert seen(run)
    assert texts(run, "bravo") == ["The bravo service listens on port 1234."]
    assert until_watching(ws, other_than=old["pid"])  # a new one, without the kill point


def test_an_idle_watcher_exits_and_removes_its_socket(store: dict[str, Path], ws: Path, run: Runner) -> None:
    assert texts(run, "alpha", env={"MEMCLI_TEST_WATCH_IDLE": "1"})
    found = until_watching(ws)
    until_gone(found["pid"])
    assert not fresh_socket(ws).exists()
    assert "exits: idle for 1 s" in log(ws)
    seen = edit_in_place(ws, store)  # no watcher: the documented bound of the fallback
    texts(run, "zulu")
    assert seen(run)


def test_a_watcher_exits_when_its_index_is_rebuilt_or_its_store_removed(watching: dict[str, Path], ws: Path,
                                                                      run: Runner) -> None:
    old = until_watching(ws)
    assert run("index", "rebuild").code == 0
    until_gone(old["pid"])
    assert "was replaced (rebuilt)" in log(ws) or "exits: the folder state" in log(ws), log(ws)
    assert texts(run, "bravo")
    assert texts(run, "bravo")
    new = until_watching(ws, other_than=old["pid"])
    shutil.rmtree(ws / "memories")
    until_gone(new["pid"])
    assert not fresh_socket(ws).exists()


def test_a_new_or_removed_folder_makes_the_watcher_give_way_to_a_new_one(watching: dict[str, Path], ws: Path,
                                                                         run: Runner) -> None:
    old = until_watching(ws)
    folder = ws / "memories" / "project" / "2026-12"
    folder.mkdir()
    write_memory(folder / "01xray-new.md", "xray")
    assert texts(run, "xray") == ["The xray service listens on port 1234."]  # the fallback's folder check
    until_gone(old["pid"])
    new = until_watching(ws, other_than=old["pid"])
    shutil.rmtree(folder)
    assert texts(run, "xray") == []
    until_gone(new["pid"])


def test_a_socket_folder_open_to_others_is_not_asked(watching: dict[str, Path], ws: Path, run: Runner) -> None:
    found = until_watching(ws)
    sockets = fresh_socket(ws).parent
    assert oct(sockets.stat().st_mode & 0o777) == "0o700" and oct(fresh_socket(ws).stat().st_mode & 0o777) == "0o600"
    sockets.chmod(0o755)
    try:
        seen = edit_in_place(ws, watching)
        texts(run, "zulu")  # not asked: the fallback, at most one stale answer
        assert seen(run)
    finally:
        sockets.chmod(0o700)
    after = ping(ws)
    assert after is not None and after["pid"] == found["pid"] and after["asked"] == found["asked"]


def test_a_socket_folder_open_to_others_is_not_served(store: dict[str, Path], ws: Path, run: Runner) -> None:
    sockets = fresh_socket(ws).parent
    sockets.mkdir(mode=0o755)
    sockets.chmod(0o755)
    assert texts(run, "bravo")  # starts a watcher, which walks but will not serve there
    limit = time.monotonic() + GUARD
    while "not serving" not in log(ws) and time.monotonic() < limit:
        time.sleep(0.05)
    assert "is not a private folder of this user" in log(ws)
    assert not fresh_socket(ws).exists()
    seen = edit_in_place(ws, store)
    texts(run, "zulu")
    assert seen(run)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to run a server as nobody")
def test_a_socket_another_user_serves_is_never_asked(store: dict[str, Path], ws: Path, run: Runner) -> None:
    """A socket at the watcher's path served by another uid (planted by root, say) gets nothing:
    the read checks the server's uid (SO_PEERCRED) first; a real watcher then takes its place."""
    path = fresh_socket(ws)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # the read's question, then the check before a walk is started
    planted = Planted(accepts=2, reply=b'{"fresh": "clean"}\n', guard=GUARD)
    try:
        planted.plant(path)
        seen = edit_in_place(ws, store)
        texts(run, "zulu")
        assert planted.received() == b""  # nothing was sent to it
        assert seen(run)
        assert until_watching(ws)["pid"] != planted.pid
    finally:
        planted.remove()


@pytest.mark.slow
def test_sixteen_concurrent_hooks_start_one_watcher(store: dict[str, Path], ws: Path, run: Runner) -> None:
    """16 hooks at once (8 session starts, 8 prompts), none with a watcher to ask: all answer,
    and they start one watcher between them (the build lock, then a ping under it). On a
    loaded machine some or all of them may answer at the deadline (the watchdog's note: the
    start-up of 16 interpreters on few cores), and such a hook starts nothing; a read after
    them then starts the one watcher."""
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8").replace("deadline = 2.0", "deadline = 60.0")
    assert "deadline = 60.0" in text
    config.write_text(text, encoding="utf-8")
    env = {**os.environ, "MEMCLI_WORKSPACE": str(ws)}
    procs = []
    for i in range(16):
        event = ("SessionStart", "session-start") if i % 2 == 0 else ("UserPromptSubmit", "user-prompt-submit")
        payload = json.dumps({"session_id": f"s{i}", "hook_event_name": event[0], "source": "startup",
                              "prompt": "which port does the alpha service listen on?", "cwd": str(ws)})
        proc = subprocess.Popen([*MEMCLI, "hook", "claude", event[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=ws)
        procs.append((proc, payload, event[0]))
    for proc, payload, name in procs:
        out, err = proc.communicate(payload, timeout=GUARD)  # a hang guard
        assert proc.returncode == 0 and "Traceback" not in err, err
        assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == name
    assert log(ws).count("started for") <= 1, log(ws)
    assert texts(run, "alpha")
    found = until_watching(ws)
    assert texts(run, "bravo")
    assert log(ws).count("started for") == 1 and log(ws).count("watching") == 1, log(ws)
    assert ping(ws)["pid"] == found["pid"]
