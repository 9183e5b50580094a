"""What a teammate's push does to the settings and to memory a mass change removed (newcomer
trust faults hnc3): two clones of one code repository, alice and bob, their memory on the memory
branch (``.memcli/``) of one bare remote, real git and real ``memcli sync``; the hooks run as the
agent runs them (a real process reading stdin).

1. A change by someone else to a setting that guards trust (``[scopes]``, ``[review]``,
   ``[gates]``, ``[workspace]``) that loosens it is quarantined on arrival and held back: the
   clone keeps the last verified settings until a person accepts or reverts it; a tightening
   one is in force and named. ``check OLD..NEW`` judges by OLD's settings.
2. A ``memcli.toml`` that does not load (bad TOML, an out-of-range value) is refused on arrival
   the same way; one broken locally leaves the guards in force (the last good settings) and
   every command that could fix it working, and the session start says what to do.
3. ``quarantine revert`` of a mass change puts back every memory file it removed, superseded
   ones too.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import Result, run_memcli
from test_arrival import homes

PEOPLE = ("alice", "bob")


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout.strip()


class Pair:
    """A bare remote, alice's code repository with the memory branch, and bob's clone of it.

    ``store[name]`` is that person's ``.memcli/``; ``mem(name, ...)`` runs memcli there as that
    person, ``git(name, ...)`` runs git there."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bare = tmp / "remote.git"
        git("init", "--bare", "-q", "-b", "main", str(self.bare), cwd=tmp)
        self.homes = homes(tmp, PEOPLE)
        code = tmp / "alice"
        code.mkdir()
        git("init", "-q", cwd=code, env=self.env("alice"))
        (code / "README").write_text("code\n", encoding="utf-8")
        git("add", "README", cwd=code, env=self.env("alice"))
        git("commit", "-qm", "code", cwd=code, env=self.env("alice"))
        git("remote", "add", "origin", str(self.bare), cwd=code)
        git("push", "-q", "origin", "main", cwd=code, env=self.env("alice"))
        init = run_memcli("init", cwd=code, env=self.env("alice"))
        assert init.code == 0, init
        self.store = {"alice": code / ".memcli"}
        self.guard = self.remember("alice", "Use pnpm, never npm", "--deny", "Bash(npm install:*)")
        self.sync("alice")
        clone = tmp / "bob"
        git("clone", "-q", str(self.bare), str(clone), cwd=tmp, env=self.env("bob"))
        took = run_memcli("init", cwd=clone, env=self.env("bob"))
        assert took.code == 0 and "took the project's memory" in took.out, took
        self.store["bob"] = clone / ".memcli"

    def env(self, name: str) -> dict[str, str]:
        return {"HOME": str(self.homes[name]), "XDG_CONFIG_HOME": str(self.homes[name] / ".config"),
                "MEMCLI_ACTOR": f"{name}@example.com"}

    def mem(self, name: str, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        return run_memcli("-w", str(self.store[name]), *args, env={**self.env(name), **(env or {})}, input=input)

    def git(self, name: str, *args: str) -> str:
        return git(*args, cwd=self.store[name], env=self.env(name))

    def sync(self, name: str) -> Result:
        out = self.mem(name, "sync")
        assert out.code == 0, out
        return out

    def remember(self, name: str, text: str, *args: str, env: dict[str, str] | None = None) -> str:
        out = self.mem(name, "--json", "remember", text, *args, env=env)
        assert out.code == 0, out
        return str(out.json()["data"]["id"])

    def set_config(self, name: str, old: str, new: str, message: str) -> None:
        """A hand edit of ``memcli.toml`` (``old`` -> ``new``), committed and pushed with plain git."""
        path = self.store[name] / "memcli.toml"
        text = path.read_text(encoding="utf-8")
        assert old in text, (old, text)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        self.git(name, "commit", "-qam", message)
        self.git(name, "push", "-q", "origin", "HEAD:memcli/memory")

    def quarantined(self, name: str) -> list[dict]:
        out = self.mem(name, "--json", "quarantine", "list")
        assert out.code == 0, out
        return list(out.json()["data"]["quarantined"])

    def hook(self, name: str, event: str, payload: dict) -> Result:
        """``memcli hook claude EVENT`` as Claude Code runs it: a process, the JSON on stdin, the
        code repository as its working folder."""
        body = {"session_id": "s1", "cwd": str(self.store[name].parent), **payload}
        return run_memcli("hook", "claude", event, input=json.dumps(body), env=self.env(name),
                          cwd=self.store[name].parent)


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    return Pair(tmp_path)


NPM = {"tool_name": "Bash", "tool_input": {"command": "npm install left-pad"}}


# --- 3. a mass deletion: revert puts back every file it removed ------------------------------------

@pytest.mark.slow
def test_revert_of_a_mass_deletion_restores_superseded_files_too(pair: Pair) -> None:
    first = [pair.remember("alice", f"note {n}: the worker pool has {n + 2} threads") for n in range(12)]
    successors = []
    for old in first[:2]:
        out = pair.mem("alice", "--json", "supersede", old, f"{old[-4:]}: the worker pool was resized")
        assert out.code == 0, out
        successors.append(out.json()["data"]["id"])
    pair.sync("alice")
    pair.sync("bob")
    files = sorted(p.relative_to(pair.store["bob"]).as_posix() for p in (pair.store["bob"] / "memories").rglob("*.md"))
    assert len(files) == 15  # 13 active (the guard's memory among them), 2 superseded
    pair.git("bob", "rm", "-q", *files)
    pair.git("bob", "commit", "-qm", "tidy up")
    pair.sync("bob")
    out = pair.sync("alice")
    assert "mass change by bob <bob@example.com>" in out.out and "13 removed or retired" in out.out, out
    entry = next(e for e in pair.quarantined("alice") if e["kind"] == "mass")
    reverted = pair.mem("alice", "quarantine", "revert", entry["id"])
    assert reverted.code == 0, reverted
    assert "15 files back" in reverted.out, reverted
    for memory_id in first[:2]:
        shown = pair.mem("alice", "--json", "show", memory_id)
        assert shown.code == 0, shown
        assert shown.json()["data"]["status"] == "superseded"
    history = pair.mem("alice", "history", successors[0])
    assert history.code == 0, history
    assert sorted(p.relative_to(pair.store["alice"]).as_posix()
                  for p in (pair.store["alice"] / "memories").rglob("*.md")) == files
    assert pair.git("alice", "status", "--porcelain") == ""


# --- 1. a teammate's change of the settings that guard trust ----------------------------------------

AGENT = {"CLAUDECODE": "1"}
SHARED = 'shared = ["project", "global", "channel:*"]'


def config_entry(pair: Pair, name: str) -> dict:
    held = [e for e in pair.quarantined(name) if e["kind"] == "config"]
    assert len(held) == 1, held
    return held[0]


def status_of(pair: Pair, name: str, memory_id: str) -> str:
    shown = pair.mem(name, "--json", "show", memory_id)
    assert shown.code == 0, shown
    return str(shown.json()["data"]["status"])


@pytest.mark.slow
def test_a_teammate_switching_off_review_is_held_back_until_a_person_accepts_it(pair: Pair) -> None:
    base = pair.git("alice", "rev-parse", "HEAD")
    pair.set_config("bob", SHARED, "shared = []", "simplify review config")
    out = pair.sync("alice")
    assert "1 commits received" in out.out, out
    assert "quarantined on arrival" in out.out and "bob <bob@example.com> loosened [scopes] shared" in out.out, out
    entry = config_entry(pair, "alice")
    assert entry["rule"] == "config" and entry["path"] == "memcli.toml" and entry["author"] == "bob <bob@example.com>"
    assert f"memcli quarantine accept {entry['id']}" in out.out
    proposed = pair.remember("alice", "Agents may push straight to main", env=AGENT)
    assert status_of(pair, "alice", proposed) == "pending_review"  # the verified settings still hold
    checked = pair.mem("alice", "check", f"{base}..HEAD")
    assert checked.code == 17 and "memcli.toml: commit" in checked.err and "[scopes] shared" in checked.err, checked
    block = pair.mem("alice", "context")
    assert "loosened [scopes] shared" in block.out and "held back" in block.out, block
    assert "loosened" not in pair.mem("alice", "context").out  # said once
    assert pair.mem("alice", "quarantine", "accept", entry["id"], env=AGENT).code == 8  # a person's decision
    accepted = pair.mem("alice", "quarantine", "accept", entry["id"])
    assert accepted.code == 0, accepted
    assert pair.quarantined("alice") == []
    later = pair.remember("alice", "Agents may tag releases", env=AGENT)
    assert status_of(pair, "alice", later) == "active"  # the team's choice, accepted, is in force


@pytest.mark.slow
def test_a_hold_the_teammate_ends_by_reverting_leaves_the_session_start_block(pair: Pair) -> None:
    """Newcomer fault 5 (stop 32, not reproduced since): the session start's block went on naming
    a held-back memcli.toml after the teammate's revert ended the hold. Plain git pulls both times."""
    pair.set_config("bob", SHARED, "shared = []", "simplify review config")
    pair.git("alice", "pull", "-q", "--no-rebase", "origin", "memcli/memory")
    assert "held back" in context_of(pair, "alice", "s1")
    pair.git("bob", "revert", "--no-edit", "HEAD")
    pair.git("bob", "push", "-q", "origin", "HEAD:memcli/memory")
    pair.git("alice", "pull", "-q", "--no-rebase", "origin", "memcli/memory")
    block = context_of(pair, "alice", "s2")
    assert "held back" not in block and "memcli.toml" not in block and pair.guard in block, block
    assert pair.quarantined("alice") == []


@pytest.mark.slow
def test_hiding_the_guards_by_a_plain_git_pull_is_held_back_at_the_first_read(pair: Pair) -> None:
    pair.set_config("bob", 'read = ["global", "project", "user:{actor}"]', "read = []", "read less")
    pair.git("alice", "pull", "-q", "--no-rebase", "origin", "memcli/memory")  # plain git, not memcli
    denied = pair.hook("alice", "pre-tool-use", NPM)
    assert denied.code == 0 and '"permissionDecision": "deny"' in denied.out, denied
    assert pair.guard in denied.out
    entry = config_entry(pair, "alice")
    assert "[scopes] read" in entry["reason"], entry
    reverted = pair.mem("alice", "quarantine", "revert", entry["id"])
    assert reverted.code == 0 and "1 file back" in reverted.out, reverted
    assert 'read = ["global", "project", "user:{actor}"]' in (pair.store["alice"] / "memcli.toml").read_text()
    assert pair.git("alice", "status", "--porcelain") == ""
    assert pair.quarantined("alice") == []
    pair.sync("alice")
    back = pair.sync("bob")  # bob receives alice's revert: it restores a setting, nothing to hold
    assert "quarantined" not in back.out, back
    assert 'read = ["global", "project", "user:{actor}"]' in (pair.store["bob"] / "memcli.toml").read_text()


@pytest.mark.slow
def test_a_tightening_change_is_in_force_and_named(pair: Pair) -> None:
    pair.set_config("bob", SHARED, 'shared = ["project", "global", "channel:*", "task:*"]', "review tasks too")
    out = pair.sync("alice")
    assert "quarantined" not in out.out, out
    assert "memcli.toml changed by bob <bob@example.com> (in force): [scopes] shared" in out.out, out
    assert pair.quarantined("alice") == []
    proposed = pair.remember("alice", "The release task waits for QA", "--scope", "task:release", env=AGENT)
    assert status_of(pair, "alice", proposed) == "pending_review"
    assert "memcli.toml changed by bob" in pair.mem("alice", "context").out


@pytest.mark.slow
def test_an_arrival_is_judged_by_the_verified_settings_not_by_those_it_brings(pair: Pair) -> None:
    """bob allows self-approval and approves his own agent's proposal in one push: alice's
    clone holds back the setting and quarantines the approval; check of the range refuses both."""
    base = pair.git("alice", "rev-parse", "HEAD")
    pair.set_config("bob", "allow_self_approve = false", "allow_self_approve = true", "work alone")
    proposed = pair.remember("bob", "Skip the staging deploy", env=AGENT)
    approved = pair.mem("bob", "approve", proposed)
    assert approved.code == 0, approved
    pair.sync("bob")
    out = pair.sync("alice")
    held = {e["rule"]: e for e in pair.quarantined("alice")}
    assert set(held) == {"config", "review"}, held
    assert "[review] allow_self_approve false -> true" in held["config"]["reason"]
    assert proposed not in pair.mem("alice", "list").out and "Skip the staging" not in pair.mem("alice", "context").out
    checked = pair.mem("alice", "check", f"{base}..HEAD")
    assert checked.code == 17 and "2 problems" in checked.err, (checked, out)
    assert "memcli.toml: commit" in checked.err and "allow_self_approve" in checked.err
    assert f"{held['review']['path']}: " in checked.err  # judged by the base's allow_self_approve = false


# --- 2. a memcli.toml that does not load -----------------------------------------------------------

BROKEN = [("prompt_floor = 0.35", "prompt_floor = 0,35", "cannot read configuration"),
          ("deadline = 2.0", "deadline = 0.001", "[hooks] deadline must be from 0.1 to 60 seconds")]


def context_of(pair: Pair, name: str, session: str) -> str:
    out = pair.hook(name, "session-start", {"session_id": session, "source": "startup"})
    assert out.code == 0, out
    return str(json.loads(out.out)["hookSpecificOutput"]["additionalContext"])


@pytest.mark.parametrize(("old", "new", "said"), BROKEN, ids=["bad-toml", "deadline-out-of-range"])
@pytest.mark.slow
def test_an_arriving_memcli_toml_that_does_not_load_is_refused_and_the_last_good_one_kept(
        pair: Pair, old: str, new: str, said: str) -> None:
    pair.set_config("bob", old, new, "tune the hooks")  # a plain git push
    out = pair.sync("alice")
    assert "1 commits received" in out.out and "does not load" in out.out and said in out.out, out
    entry = config_entry(pair, "alice")
    denied = pair.hook("alice", "pre-tool-use", NPM)  # the guard memory is still applied
    assert '"permissionDecision": "deny"' in denied.out and pair.guard in denied.out, denied
    block = context_of(pair, "alice", "s2")
    assert pair.guard in block and "does not load" in block, block
    assert pair.mem("alice", "recall", "pnpm").code == 0
    doctor = pair.mem("alice", "doctor")
    assert doctor.code == 0 and entry["id"] in doctor.out, doctor
    refused = pair.mem("alice", "quarantine", "accept", entry["id"])
    assert refused.code == 3 and "cannot be accepted" in refused.err and "Traceback" not in refused.err, refused
    reverted = pair.mem("alice", "quarantine", "revert", entry["id"])
    assert reverted.code == 0, reverted
    assert old in (pair.store["alice"] / "memcli.toml").read_text(encoding="utf-8")
    assert pair.quarantined("alice") == [] and pair.git("alice", "status", "--porcelain") == ""
    assert "memcli.toml" not in pair.mem("alice", "recall", "pnpm").err


@pytest.mark.parametrize(("old", "new", "said"), BROKEN, ids=["bad-toml", "deadline-out-of-range"])
@pytest.mark.slow
def test_a_memcli_toml_broken_here_keeps_the_guards_and_every_command_that_mends_it(
        pair: Pair, old: str, new: str, said: str) -> None:
    good = pair.git("alice", "log", "-1", "--format=%H", "--", "memcli.toml")  # its last committed version
    written = pair.remember("alice", "Builds run on the blue runners")
    config = pair.store["alice"] / "memcli.toml"
    # made in the second of memcli's last commit: git's racy-git check must still see it
    # (tests/test_git_commit_trees.py::test_a_same_size_edit_in_the_index_s_second_stays_seen_after_a_commit)
    config.write_text(config.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")  # not committed
    denied = pair.hook("alice", "pre-tool-use", NPM)  # fail closed: the guards hold
    assert denied.code == 0 and '"permissionDecision": "deny"' in denied.out, denied
    block = context_of(pair, "alice", "s3")
    notes = [line for line in block.splitlines() if "memcli.toml" in line]
    assert len(notes) == 1 and said in notes[0] and f"checkout {good[:12]} -- memcli.toml" in notes[0], block
    assert pair.guard in block
    context = pair.mem("alice", "context")
    assert context.code == 0 and pair.guard in context.out and said in context.out, context
    recalled = pair.mem("alice", "recall", "pnpm")  # an ordinary command: the person's file to fix
    assert recalled.code == 3 and said in recalled.err and recalled.err.count("\n") == 1, recalled
    doctor = pair.mem("alice", "doctor")
    assert doctor.code == 3 and said in doctor.out and "Traceback" not in doctor.err, doctor
    listed = pair.mem("alice", "quarantine", "list")
    assert listed.code == 0 and said in listed.err, listed
    undone = pair.mem("alice", "undo")
    assert undone.code == 0 and written in undone.out + undone.err, undone
    pair.git("alice", "checkout", good[:12], "--", "memcli.toml")  # the fix the line gives
    fixed = pair.mem("alice", "doctor")
    assert fixed.code == 0, fixed.out + fixed.err
    assert "memcli.toml" not in context_of(pair, "alice", "s4")


@pytest.mark.parametrize("how", ["deleted here", "deleted by my own commit", "deleted by a teammate's commit"])
@pytest.mark.slow
def test_a_deleted_memcli_toml_keeps_the_workspace_and_its_guards(pair: Pair, how: str) -> None:
    """hnc3's leftover: with its memcli.toml gone the workspace could not be found at all, so
    the hooks fell silent and the guards no longer held. A store memcli has read before (its
    cache holds the arrival record) is still the workspace, working by the last settings that
    load, and says so. Newcomer fault 7 (stop 32): after the person's own `git rm memcli.toml`
    and commit, the first ordinary command worked (it verified the commit and fell back) and
    the second stopped, telling to check the file out of HEAD, which has none: both stop now,
    naming a commit that has it."""
    if how == "deleted here":
        (pair.store["alice"] / "memcli.toml").unlink()  # not committed
    elif how == "deleted by my own commit":
        pair.git("alice", "rm", "-q", "memcli.toml")
        pair.git("alice", "commit", "-qm", "no more memcli")
        remote = pair.git("alice", "rev-parse", "origin/memcli/memory")
        synced = pair.mem("alice", "sync")  # the first command after it (stop 33: it pushed the deletion)
        assert synced.code == 3 and "memcli.toml is missing" in synced.err, synced
        assert git("rev-parse", "memcli/memory", cwd=pair.bare) == remote
        first = pair.mem("alice", "list")
        assert first.code == 3 and "memcli.toml is missing" in first.err and "HEAD" not in first.err, first
        assert first.err.count("\n") == 1, first.err
    else:
        pair.git("bob", "rm", "-q", "memcli.toml")
        pair.git("bob", "commit", "-qm", "no more memcli")
        pair.git("bob", "push", "-q", "origin", "HEAD:memcli/memory")
        out = pair.sync("alice")
        assert "quarantined on arrival" in out.out and "memcli.toml" in out.out, out
        assert not (pair.store["alice"] / "memcli.toml").exists()
    denied = pair.hook("alice", "pre-tool-use", NPM)  # the guard still holds
    assert denied.code == 0 and '"permissionDecision": "deny"' in denied.out and pair.guard in denied.out, denied
    block = context_of(pair, "alice", "s9")
    assert pair.guard in block, block
    recalled = pair.mem("alice", "recall", "pnpm")
    if how != "deleted by a teammate's commit":  # an ordinary command: the person's file to restore, one line
        assert recalled.code == 3 and "memcli.toml is missing" in recalled.err, recalled
        assert "Traceback" not in recalled.err and recalled.err.count("\n") == 1, recalled
        assert "memcli.toml is missing" in block, block
        again = run_memcli("init", cwd=pair.store["alice"].parent, env=pair.env("alice"))  # no second store
        assert again.code == 3 and "is a memcli store whose memcli.toml is missing" in again.err, again
        assert not (pair.store["alice"] / ".memcli").exists()
        fix = recalled.err.split("`")[1]  # the command the line gives
        assert fix.startswith("git -C ") and fix.endswith(" -- memcli.toml"), recalled.err
        subprocess.run(fix, shell=True, check=True, capture_output=True)
        assert pair.mem("alice", "recall", "pnpm").code == 0
    else:  # held back: the verified settings are served until a person decides
        assert recalled.code == 0 and pair.guard in recalled.out, recalled
        entry = config_entry(pair, "alice")
        assert pair.mem("alice", "quarantine", "revert", entry["id"]).code == 0
        assert (pair.store["alice"] / "memcli.toml").is_file()
