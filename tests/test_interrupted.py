"""Issue 19 item 4: every interrupted operation is finished or rolled back by the next command or
``doctor --fix``, and ``doctor`` names it; item 8: a failed write says that nothing was written.

The kill loops run the real command in its own session and stop it with SIGKILL at named
steps (``memcli.testpoint``: ``$MEMCLI_TEST_KILL_AT``), at a step inside git itself (a
``reference-transaction`` hook that kills the whole process group when ``git merge`` is
about to move the branch: the index and working tree are written, the branch is not),
and after a random delay.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MEMCLI, git, run_memcli
from memcli.testpoint import ENV, POINTS

PURGE_POINTS = [p for p in POINTS if p.startswith(("purge:", "rewrite:"))]


def _killed(args: list[str], env: dict[str, str] | None = None, delay: float | None = None,
            cwd: Path | None = None) -> int:
    """Run memcli in its own session; with ``delay``, SIGKILL its whole group after that many seconds."""
    proc = subprocess.Popen([*MEMCLI, *args], env={**os.environ, **(env or {})}, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    if delay is not None:
        time.sleep(delay)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.wait(timeout=60)


def _all_objects(ws: Path) -> bytes:
    """Every object git's store holds, reachable or not, uncompressed."""
    return subprocess.run(["git", "-C", str(ws), "cat-file", "--batch-all-objects", "--batch"], check=True,
                          capture_output=True).stdout


def _remember(ws: Path, text: str) -> dict:
    out = run_memcli("-w", str(ws), "--json", "remember", text)
    assert out.code == 0, out
    return out.json()["data"]["memory"]


def _hand_memory(ws: Path, memory_id: str, text: str, push: bool = False) -> str:
    """Commit a memory file with plain git (faster than a memcli process; the text in the message
    too, as memcli's own commits have it); its path relative to ``ws``."""
    rel = f"memories/project/{memory_id}.md"
    if push:
        git(ws, "pull", "-q", "--no-rebase", "origin", "main")
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_text(f"---\nid: {memory_id}\nscope: project\ncategory: fact\nstatus: active\nimportance: 3\n"
                          "createdAt: 2026-01-01T00:00:00Z\nupdatedAt: 2026-01-01T00:00:00Z\nprovenance:\n"
                          f"  sourceType: user_said\n  actor: alice\n---\n{text}\n", encoding="utf-8")
    git(ws, "add", "--", rel)
    git(ws, "commit", "-q", "-m", f"memcli: remember {memory_id}\n\n{text}", "--", rel)
    if push:
        git(ws, "push", "-q", "origin", "HEAD")
    return rel


# --- purge --history -------------------------------------------------------------------------


@pytest.mark.slow
def test_purge_history_killed_at_every_step_is_finished_by_the_next_purge_or_doctor_fix(ws, run):
    for number, point in enumerate(PURGE_POINTS):
        word = f"zebra-quartz-{number}x"
        memory_id = f"01kill{number:020d}"
        rel = _hand_memory(ws, memory_id, f"The staging bastion answers on port 2222 behind the {word} gateway")
        assert _killed(["purge", memory_id, "--history", "--yes"], {ENV: point}) == -signal.SIGKILL, point
        if point == "purge:committed":  # the fault: the purge commit made, history not rewritten
            assert not (ws / rel).exists() and word in git(ws, "log", "--all", "-p")
        done = run("doctor", "--fix") if number % 2 else run("purge", memory_id, "--history", "--yes")
        assert done.code == 0, (point, done)
        assert "Traceback" not in done.err
        if number % 2:
            assert f"finished the purge of {memory_id}" in done.out or f"purged {memory_id}" in done.out, done
        assert not (ws / rel).exists(), point
        assert word not in git(ws, "log", "--all", "-p"), point
        assert word not in git(ws, "log", "--all", "--format=%B"), point
        assert word.encode() not in _all_objects(ws), f"{point}: an old object still holds the text"
        assert git(ws, "reflog", "--all") == "" or word not in git(ws, "log", "-g", "--all", "-p")
        assert not (ws / ".cache" / "unfinished-purge.json").exists(), point
        assert not any(word.encode() in f.read_bytes() for f in (ws / ".cache").rglob("*") if f.is_file()), point
        assert git(ws, "status", "--porcelain") == "", point
    again = run("purge", memory_id, "--history", "--yes")  # nothing is left to finish
    assert again.code == 4 and "no memory" in again.err, again
    subprocess.run(["git", "-C", str(ws), "fsck", "--full", "--strict"], check=True, capture_output=True)


def test_an_unfinished_purge_is_named_by_doctor_and_other_writes_and_finished_under_a_prefix(ws, run):
    memory_id = "01ochre0000000000000000001"
    _hand_memory(ws, memory_id, "The release signing key lives in the vault named ochre-lantern")
    assert _killed(["purge", memory_id, "--history", "--yes"], {ENV: "purge:committed"}) == -signal.SIGKILL
    doctor = run("doctor")
    assert doctor.code == 0, doctor
    assert f"repository: an unfinished `purge --history` of {memory_id}" in doctor.out, doctor
    assert f"`memcli purge {memory_id} --history --yes` or `memcli doctor --fix` finishes it" in doctor.out
    other = run("remember", "An unrelated note written after the kill")
    assert other.code == 0, other
    assert f"unfinished `purge --history` of {memory_id}" in other.err
    before = run("purge", memory_id[:10], "--history", "--yes")  # a prefix, as the person typed it first
    assert before.code == 0, before
    assert before.out.startswith(f"finished the purge of {memory_id}"), before
    assert "unfinished" not in before.err and "history was rewritten" in before.err
    assert "ochre-lantern" not in git(ws, "log", "--all", "-p")
    assert not (ws / ".cache" / "unfinished-purge.json").exists()


def test_a_purge_refused_by_git_before_its_commit_leaves_no_record(ws, run):
    rel = _hand_memory(ws, "01violet000000000000000001", "The build cache bucket is called violet-harbour")
    hook = ws / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] && { echo "refused by policy" >&2; exit 1; }\nexit 0\n')
    hook.chmod(0o755)
    refused = run("purge", "01violet000000000000000001", "--history", "--yes")
    hook.unlink()
    assert refused.code == 10 and "nothing was written" in refused.err, refused
    assert (ws / rel).exists() and git(ws, "status", "--porcelain") == ""
    assert not (ws / ".cache" / "unfinished-purge.json").exists()


# --- sync ---------------------------------------------------------------------------------------

#: Kills the whole process group (memcli and its git) when a ``git merge`` is about to move the branch.
KILL_HOOK = """#!/bin/sh
[ "$1" = prepared ] || exit 0
[ -n "$MEMCLI_TEST_KILL_MERGE" ] || exit 0
while read old new ref; do
  case "$ref" in HEAD|refs/heads/*) kill -9 0 ;; esac
done
exit 0
"""


@pytest.fixture
def pair(tmp_path: Path):
    """Two clones of a workspace on a bare remote; the second has the kill hook installed."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-q", str(bare))
    seed = tmp_path / "seed"
    assert run_memcli("init", str(seed)).code == 0
    git(seed, "remote", "add", "origin", str(bare))
    assert run_memcli("-w", str(seed), "sync").code == 0
    clones = []
    for name in ("one", "two"):
        git(tmp_path, "clone", "-q", str(bare), name)
        assert run_memcli("init", str(tmp_path / name)).code == 0
        clones.append(tmp_path / name)
    hook = clones[1] / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILL_HOOK)
    hook.chmod(0o755)
    return clones


def _ids(ws: Path) -> set[str]:
    """The ids of the memory files ``HEAD`` holds."""
    return {Path(p).stem for p in git(ws, "ls-files", "memories").split()}


def _consistent(ws: Path) -> None:
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (ws / ".git" / "MERGE_HEAD").exists()
    assert not list((ws / ".git").glob("*.lock")) and not list((ws / ".git" / "refs").rglob("*.lock"))
    assert not (ws / ".cache" / "unfinished-sync.json").exists()
    subprocess.run(["git", "-C", str(ws), "fsck", "--no-progress"], check=True, capture_output=True)


@pytest.mark.slow
def test_sync_killed_mid_merge_is_rolled_back_and_merged_again_with_nothing_lost(pair):
    one, two = pair
    rng = random.Random(25)
    # (how it is killed, whether `two` has a local commit to merge with): a fast-forward leaves the
    # incoming files staged with no MERGE_HEAD, a true merge leaves MERGE_HEAD and a held HEAD.lock
    cases = [("git", False), ("git", True), ("sync:merging", True), ("sync:merged", True), ("timer", True)]
    local: set[str] = set()
    for number, (how, with_local) in enumerate(cases):
        incoming = f"01incoming{number:016d}"
        _hand_memory(one, incoming, f"Incoming note {number} about the deploy calendar", push=True)
        if with_local:
            local.add(f"01local{number:019d}")
            _hand_memory(two, f"01local{number:019d}", f"Local note {number} about the lint settings")
        mine = git(two, "rev-parse", "HEAD").strip()
        if how == "git":
            code = _killed(["-w", str(two), "sync"], {"MEMCLI_TEST_KILL_MERGE": "1"})
        elif how == "timer":
            code = _killed(["-w", str(two), "sync"], delay=rng.uniform(0.4, 0.6))
        else:
            code = _killed(["-w", str(two), "sync"], {ENV: how})
        assert code in (-signal.SIGKILL, 0), (how, code)
        record = (two / ".cache" / "unfinished-sync.json").exists()
        if how == "git":  # the fault: files of the merge staged, the branch not moved
            assert record and git(two, "rev-parse", "HEAD").strip() == mine
            assert incoming in git(two, "diff", "--cached", "--name-only")
        if number % 2:
            fixed = run_memcli("-w", str(two), "doctor", "--fix")
            assert fixed.code == 0, fixed
            if record and how != "sync:merged":
                assert "repository: rolled back a `sync` merge" in fixed.out or "aborted a `sync` merge" in fixed.out
                assert "`memcli sync` merges again" in fixed.out, fixed
                assert git(two, "rev-parse", "HEAD").strip() == mine, "a roll-back keeps the branch as it was"
                assert git(two, "status", "--porcelain", "--untracked-files=all") == ""
        after = run_memcli("-w", str(two), "sync")
        assert after.code == 0, (how, after)
        assert "Traceback" not in after.err
        _consistent(two)
        assert subprocess.run(["git", "-C", str(two), "merge-base", "--is-ancestor", mine, "HEAD"]).returncode == 0
        assert incoming in _ids(two) and local <= _ids(two), how
    git(one, "pull", "-q", "--no-rebase", "origin", "main")
    assert _ids(one) == _ids(two)


def test_a_half_merge_is_named_by_doctor_keeps_the_persons_later_edits_and_a_write_rolls_it_back(pair):
    one, two = pair
    own = _hand_memory(two, "01own0000000000000000000001", "My own note about the staging database")
    git(two, "push", "-q", "origin", "HEAD")
    git(one, "pull", "-q", "--no-rebase", "origin", "main")
    incoming = _hand_memory(one, "01theirs000000000000000001", "Their note about the release train", push=True)
    assert _killed(["-w", str(two), "sync"], {"MEMCLI_TEST_KILL_MERGE": "1"}) == -signal.SIGKILL
    stuck = run_memcli("-w", str(two), "doctor")
    assert stuck.code == 0, stuck
    assert "repository: a `sync` merge of refs/remotes/origin/main into main was interrupted" in stuck.out
    assert "`memcli sync` rolls it back and merges again, `memcli doctor --fix` rolls it back" in stuck.out
    # after the kill the person edits two files by hand: their own, and the one the merge brought
    own_file, their_file = two / own, two / incoming
    own_file.write_text(own_file.read_text() + "\nA line I added by hand.\n")
    their_file.write_text(their_file.read_text() + "\nMy remark on their note.\n")

    wrote = run_memcli("-w", str(two), "remember", "A note written before the next sync")
    assert wrote.code == 0, wrote
    assert "rolled back a `sync` merge" in wrote.err and f"kept your later edits to {incoming}" in wrote.err
    assert not (two / ".cache" / "unfinished-sync.json").exists()
    assert git(two, "diff", "--cached", "--name-only") == "", "nothing of the merge is left staged"
    assert "A line I added by hand." in own_file.read_text()
    assert "My remark on their note." in their_file.read_text()
    stopped = run_memcli("-w", str(two), "sync")  # their own edits: sync asks them to decide, as always
    assert stopped.code == 16 and "commit them" in stopped.err, stopped
    git(two, "checkout", "--", own)
    their_file.unlink()
    assert run_memcli("-w", str(two), "sync").code == 0
    _consistent(two)
    assert "01theirs000000000000000001" in _ids(two)


# --- item 8: a failed write says that nothing was written ------------------------------------------


def test_a_write_refused_by_git_says_nothing_was_written_and_leaves_no_file(ws, run):
    start = git(ws, "rev-parse", "HEAD")
    hook = ws / ".git" / "hooks" / "reference-transaction"
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] && { echo "refused by policy" >&2; exit 1; }\nexit 0\n')
    hook.chmod(0o755)
    refused = run("remember", "Refused by a hook of the repository")
    assert refused.code == 10, refused
    assert refused.err.count("\n") == 1 and "refused by policy" in refused.err
    assert "nothing was written" in refused.err, refused
    hook.unlink()
    assert not list((ws / "memories").rglob("*.md")) and git(ws, "status", "--porcelain") == ""
    assert git(ws, "rev-parse", "HEAD") == start

    (ws / ".git" / "index.lock").write_text("")  # another git's lock, held past the wait
    config = ws / "memcli.toml"
    config.write_text(config.read_text().replace("lock_timeout = 10", "lock_timeout = 0.2"))
    locked = run("remember", "Blocked by git's index lock")
    assert locked.code == 9 and "nothing was written" in locked.err, locked
    assert not list((ws / "memories").rglob("*.md"))


def test_a_new_history_purge_first_finishes_one_a_kill_interrupted(ws, run):
    first = _hand_memory(ws, "01first00000000000000000001", "The first secret lives behind the amber-falcon door")
    second = _hand_memory(ws, "01second0000000000000000001", "The second secret lives behind the teal-otter door")
    assert _killed(["purge", "01first00000000000000000001", "--history", "--yes"],
                   {ENV: "rewrite:filtering-child"}) == -signal.SIGKILL
    done = run("purge", "01second0000000000000000001", "--history", "--yes")
    assert done.code == 0, done
    assert "finished the purge of 01first00000000000000000001" in done.err
    history = git(ws, "log", "--all", "-p")
    assert "amber-falcon" not in history and "teal-otter" not in history
    assert not (ws / first).exists() and not (ws / second).exists()
    assert not (ws / ".cache" / "unfinished-purge.json").exists()


# --- the other multi-step operations ------------------------------------------------------------


def test_an_init_killed_before_its_first_commit_is_finished_by_the_next_init(tmp_path, run):
    path = tmp_path / "store"
    assert _killed(["init", str(path)], {ENV: "init:written"}) == -signal.SIGKILL
    assert "memcli.toml" in git(path, "status", "--porcelain")  # written, never committed
    again = run("init", str(path))
    assert again.code == 0, again
    assert git(path, "status", "--porcelain") == ""
    assert "memcli.toml" in git(path, "show", "--name-only", "--format=", "HEAD")
    assert git(path, "log", "--format=%s").splitlines() == ["memcli: init workspace"]


def test_a_move_of_personal_memories_killed_between_its_two_commits_is_finished_by_doctor_fix(shared_tree_ws, run):
    from conftest import personal_store

    ws = shared_tree_ws
    _remember(ws, "My own editor settings use tabs")  # a project memory, which stays
    personal = run("--json", "remember", "I prefer short answers", "--scope", "user:alice")
    assert personal.code == 0, personal
    path = personal.json()["data"]["memory"]["path"]
    assert _killed(["doctor", "--fix"], {ENV: "move:stored"}) == -signal.SIGKILL
    store = personal_store(ws)
    assert (store / path).exists() and (ws / path).exists()  # in both stores: the second commit never came
    named = run("doctor")
    assert "1 personal memory of yours is kept in this workspace" in named.out, named
    fixed = run("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert not (ws / path).exists() and (store / path).exists()
    assert git(ws, "status", "--porcelain") == "" and git(store, "status", "--porcelain") == ""
    listed = run("--json", "list", "--scope", "user:alice")
    assert [m["path"] for m in listed.json()["data"]["memories"]].count(str(store / path)) == 1


def test_a_remember_killed_inside_update_ref_leaves_no_lock_that_blocks_the_next(ws, run):
    # a kill that took `git update-ref` with it left refs/heads/main.lock: the recovery
    # completed or rolled back the write, but every later write failed on "cannot lock ref"
    # (a rare instant of tests/test_robust_kill.py's random kills)
    hook = ws / ".git" / "hooks" / "reference-transaction"
    # git moves the branch in a process group of its own: kill memcli (git's parent) with it
    hook.write_text(KILL_HOOK.replace("kill -9 0", "kill -9 \"$(ps -o ppid= -p \"$PPID\" | tr -d ' ')\" 0"),
                    encoding="utf-8")
    hook.chmod(0o755)
    _killed(["remember", "A write killed while git moves the branch."], env={"MEMCLI_TEST_KILL_MERGE": "1"})
    hook.unlink()
    branch = git(ws, "symbolic-ref", "HEAD").strip()
    assert (ws / ".git" / f"{branch}.lock").exists()  # the state the kill left
    after = run("remember", "The write after the kill succeeds.")
    assert after.code == 0, after
    assert not (ws / ".git" / f"{branch}.lock").exists()
    assert git(ws, "status", "--porcelain", "--", "memories") == ""


#: A reference-transaction hook that sends SIGINT to memcli (the parent of the git that runs
#: it) at the phase ``$MEMCLI_TEST_INT_AT`` of moving the branch, as a Ctrl-C then would.
INT_HOOK = """#!/bin/sh
[ "$1" = "$MEMCLI_TEST_INT_AT" ] || exit 0
while read old new ref; do
  case "$ref" in HEAD|refs/heads/*) kill -INT "$(ps -o ppid= -p "$PPID" | tr -d ' ')" ;; esac
done
exit 0
"""


@pytest.mark.parametrize("phase", ["prepared", "committed"])
@pytest.mark.parametrize("op", ["remember", "forget"])
@pytest.mark.slow
def test_ctrl_c_while_the_branch_moves_reports_the_write_that_landed(ws, run, phase, op):
    """A Ctrl-C while git moves the branch (or after, while the report is printed) exited 130
    with the memory committed and the "remembered" line missing: a write that landed is done."""
    target = _remember(ws, "Deploy with make deploy.")["id"] if op == "forget" else None
    hook = ws / ".git" / "hooks" / "reference-transaction"
    hook.write_text(INT_HOOK, encoding="utf-8")
    hook.chmod(0o755)
    args = ["remember", "Lock hunt: Ctrl-C after the commit."] if op == "remember" else ["forget", str(target)]
    proc = subprocess.run([*MEMCLI, "-w", str(ws), *args], env={**os.environ, "MEMCLI_TEST_INT_AT": phase},
                          capture_output=True, text=True, timeout=120)
    hook.unlink()
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.startswith("remembered: " if op == "remember" else "forget: "), proc.stdout
    assert "Traceback" not in proc.stderr and "interrupted" not in proc.stderr, proc.stderr
    assert git(ws, "status", "--porcelain", "--untracked-files=all", "--", "memories") == ""
    assert not (ws / ".cache" / "unfinished-write.json").exists()
    if op == "remember":
        assert "Lock hunt" in git(ws, "log", "-1", "--format=%B")


#: Runs memcli as the console script does (``sys.argv[0]`` "memcli"), sending itself SIGINT the
#: first time the module ``sys.argv[1]`` is looked for: a Ctrl-C while that module loads.
INT_AT_IMPORT = """import os, runpy, signal, sys
target = sys.argv[1]
class Interrupt:
    @staticmethod
    def find_spec(name, path=None, target_=None):
        if name == target:
            sys.meta_path.remove(Interrupt)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt)
sys.argv = ["memcli", *sys.argv[2:]]
if target == "entry":
    os.kill(os.getpid(), signal.SIGINT)
    from memcli.cli import main
    main()
runpy.run_module("memcli", run_name="__main__")
"""


@pytest.mark.parametrize("target", ["memcli.cli", "memcli.cli.fast", "memcli.store.personal", "typer",
                                    "memcli.service.read"])
def test_ctrl_c_while_the_first_modules_load_says_interrupted_and_exits_130(ws, target):
    """A Ctrl-C in the first tenth of a second printed a traceback of import frames and exited
    1 or by the signal: now one line and 130 whenever it comes after memcli's first line."""
    import sys

    proc = subprocess.run([sys.executable, "-c", INT_AT_IMPORT, target, "-w", str(ws), "list"],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "memcli: interrupted\n", ""), proc


def _set_read_only(folder: Path, read_only: bool) -> bool:
    """Make ``folder``, its subfolders and files unwritable (chmod; ``chattr +i`` as root, whom
    chmod does not stop) or writable again. False when the folder stays writable."""
    import shutil

    paths = [folder, *folder.rglob("*")]
    chattr = os.geteuid() == 0 and shutil.which("chattr")
    for path in paths:
        if chattr and not read_only:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
        path.chmod((0o555 if path.is_dir() else 0o444) if read_only else (0o755 if path.is_dir() else 0o644))
        if chattr and read_only:
            subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if not read_only:
        return True
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return True
    (folder / "probe").unlink()
    return False


def test_a_write_the_disk_refuses_leaves_no_record_to_roll_back(ws, run):
    """A forget in a read-only memories folder said "nothing was written" (15) but left its
    journal record, and the next write warned of a rolled-back forget, "0 of 1 files restored"."""
    memory = _remember(ws, "Deploy with make deploy.")
    memories = ws / "memories"
    try:
        if not _set_read_only(memories, True):
            pytest.skip("cannot make a folder read-only here")
        refused = run("forget", memory["id"])
    finally:
        _set_read_only(memories, False)
    assert refused.code == 15 and "nothing was written" in refused.err, refused
    assert not (ws / ".cache" / "unfinished-write.json").exists()
    after = run("remember", "The next write has nothing to roll back.")
    assert after.code == 0 and "rolled back" not in after.err and after.err == "", after
    assert git(ws, "status", "--porcelain", "--", "memories") == ""


RESUME = """
import signal
from memcli import interrupts

assert interrupts.hold()
signal.raise_signal(signal.SIGINT)  # recorded, not raised
try:
    interrupts.resume()
except KeyboardInterrupt:
    print("raised at resume")
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
assert interrupts.hold()
interrupts.resume()  # nothing came: nothing raised
try:
    signal.raise_signal(signal.SIGINT)
except KeyboardInterrupt:
    print("raised again")
"""


def test_resume_after_a_landed_commit_lets_ctrl_c_interrupt_again() -> None:
    """``interrupts.resume`` (``sync`` after committing the merge driver's line, before it
    fetches and pushes): a SIGINT that came while held is raised then, and later ones raise as
    Python's handler does (a fresh interpreter: pytest's workers install their own handler)."""
    done = subprocess.run([sys.executable, "-c", RESUME], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "raised at resume\nraised again\n", ""), done


def test_a_sync_killed_after_its_merge_commit_but_before_git_removed_merge_head_syncs_again(pair) -> None:
    """CI, stop 35: the timer of the test above killed a sync between git's merge commit (HEAD
    moved) and git's removing MERGE_HEAD; the next sync found the merge committed, dropped its
    record, and then refused "a git operation is in progress (MERGE_HEAD)" for good."""
    import json

    one, two = pair
    _hand_memory(one, "01incoming0000000000000099", "Incoming note about the deploy calendar", push=True)
    _hand_memory(two, "01local0000000000000000099", "Local note about the lint settings")
    before = git(two, "rev-parse", "HEAD").strip()
    git(two, "fetch", "-q", "origin")
    incoming = git(two, "rev-parse", "origin/main").strip()
    git(two, "merge", "-q", "--no-edit", "origin/main")  # what the killed sync's git had done …
    (two / ".git" / "MERGE_HEAD").write_text(incoming + "\n")  # … all but removing its state
    (two / ".cache").mkdir(exist_ok=True)
    (two / ".cache" / "unfinished-sync.json").write_text(json.dumps(
        {"op": "sync", "branch": "main", "incomingRef": "refs/remotes/origin/main", "head": before,
         "incoming": incoming, "pid": 999999, "at": "2026-12-07T00:00:00+00:00"}))
    after = run_memcli("-w", str(two), "sync")
    assert after.code == 0, after
    _consistent(two)


#: A reference-transaction hook that writes the process group of the git that runs it and of
#: that git's parent (memcli) to ``$MEMCLI_TEST_GROUPS``.
GROUPS_HOOK = """#!/bin/sh
[ "$1" = "prepared" ] || exit 0
cat > /dev/null
P=$(ps -o ppid= -p "$PPID" | tr -d ' ')
echo "$(ps -o pgid= -p "$PPID" | tr -d ' ') $(ps -o pgid= -p "$P" | tr -d ' ')" >> "$MEMCLI_TEST_GROUPS"
exit 0
"""


def test_the_branch_move_runs_out_of_reach_of_a_terminals_ctrl_c(ws, tmp_path):
    """Newcomer, stop 36 (HIGH): a Ctrl-C at a terminal reaches memcli's whole process group;
    git update-ref, in that group, died after the branch moved, and memcli said "git
    update-ref failed: -2; nothing was written" and put the files back. The move now runs in
    a process group of its own."""
    hook = ws / ".git" / "hooks" / "reference-transaction"
    hook.write_text(GROUPS_HOOK, encoding="utf-8")
    hook.chmod(0o755)
    groups = tmp_path / "groups"
    proc = subprocess.run([*MEMCLI, "-w", str(ws), "remember", "Deploys go out on Tuesdays."],
                          env={**os.environ, "MEMCLI_TEST_GROUPS": str(groups)}, capture_output=True, text=True,
                          timeout=120, start_new_session=True)
    hook.unlink()
    assert proc.returncode == 0, proc
    moves = [line.split() for line in groups.read_text(encoding="utf-8").splitlines()]
    assert moves and all(git_group != memcli_group for git_group, memcli_group in moves), moves


def test_a_branch_move_git_reports_failed_but_that_landed_counts_as_landed(ws, run):
    """The same fault's other half: whatever kills git after the move, a branch that holds the
    new commit is a commit that landed (``git.commit._move``); one that does not is refused."""
    from memcli.errors import GitFailed
    from memcli.git.commit import _move
    from memcli.git.repo import GitRepo

    assert run("remember", "Deploys go out on Tuesdays.").code == 0
    repo = GitRepo(ws)
    branch = git(ws, "symbolic-ref", "HEAD").strip()
    head = git(ws, "rev-parse", "HEAD").strip()
    parent = git(ws, "rev-parse", "HEAD~1").strip()
    _move(repo, "already there", branch, head, parent)  # git refuses (old value), the branch holds it
    with pytest.raises(GitFailed, match="update-ref failed"):
        _move(repo, "not there", branch, parent, parent)
    assert git(ws, "rev-parse", "HEAD").strip() == head
