"""Team sync over any git remote (SPEC.md section 10): ``memcli sync`` and the merge driver.

``sync`` fetches the store's branch from its remote, merges it (memory files through
memcli's field-by-field merge driver, :mod:`memcli.policy.merge`) and pushes the result,
under the workspace lock so that no memcli write lands half-way. It never force-pushes
and never rewrites a commit: when the remote moved between the fetch and the push, it
fetches and merges again (at most :data:`ATTEMPTS` times). A true conflict aborts the
merge (``git merge --abort``), so nothing is left half-merged, and names the files. The
merge is recorded before it starts (``.cache/unfinished-sync.json``): a sync killed in the
middle of it is rolled back by the next sync, the next write or ``doctor --fix``
(:mod:`memcli.service.sync_recover`).

The merge driver is registered per clone by ``memcli init`` (and again by every ``sync``):
``.gitattributes`` (committed) maps ``memories/**/*.md`` to ``merge=memcli``, and the
repository's git config says how to run it (``merge.memcli.driver``), with the absolute
path of the Python that runs this memcli, so that plain ``git merge`` and ``git pull`` use
it too, whatever their PATH.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli import testpoint
from memcli.errors import MemcliError, SyncStopped
from memcli.git import log as gitlog
from memcli.git import run as runner
from memcli.git.repo import GitRepo

if TYPE_CHECKING:
    from types import FrameType

    from memcli.service import Ctx

#: Fetch-merge-push rounds before giving up on a remote that keeps moving.
ATTEMPTS = 6
#: The ``.gitattributes`` line that sends memory files to memcli's merge driver.
ATTRIBUTES_LINE = "memories/**/*.md merge=memcli"
#: git's words for a push refused because the remote has commits we lack.
_REJECTED = ("non-fast-forward", "fetch first", "rejected", "stale info", "cannot lock ref")


def driver_command() -> str:
    """The merge driver command git runs: ``PYTHON -m memcli merge-file %O %A %B %P``.

    The absolute interpreter path makes it independent of the PATH git runs with.
    """
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m memcli merge-file %O %A %B %P"


def ensure_merge_driver(root: Path, write: bool = True) -> list[Path]:
    """Register memcli's merge driver for the repository holding workspace ``root``.

    Writes ``root/.gitattributes`` (adding :data:`ATTRIBUTES_LINE` when missing; with
    ``write`` False the caller writes :func:`attributes_text` itself, journaled) and sets
    ``merge.memcli.name`` and ``merge.memcli.driver`` in the repository's git config.

    Returns:
        The files changed (or to change) on disk, for the caller to commit: ``[.gitattributes]`` or ``[]``.

    Raises:
        GitFailed: git config cannot be written.
    """
    repo = GitRepo(root)
    status, current, _ = repo.raw("config", "--get", "merge.memcli.driver")
    if status != 0 or current.decode("utf-8", "replace").strip() != driver_command():
        repo.run("config", "merge.memcli.name", "memcli memory files (field by field)")
        repo.run("config", "merge.memcli.driver", driver_command())
    attributes = root / ".gitattributes"
    data = attributes_text(root)
    if data is None:
        return []
    if write:
        from memcli.store.files import atomic_write

        atomic_write(attributes, data)
    return [attributes]


def attributes_text(root: Path) -> bytes | None:
    """The bytes ``root/.gitattributes`` needs to hold :data:`ATTRIBUTES_LINE`, or None when it holds it
    (or cannot be read)."""
    attributes = root / ".gitattributes"
    try:
        text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    except (OSError, UnicodeDecodeError):
        return None
    if ATTRIBUTES_LINE in text.splitlines():
        return None
    return (text + ("" if not text or text.endswith("\n") else "\n") + ATTRIBUTES_LINE + "\n").encode("utf-8")


#: Seconds the merge driver may spend on one file (its field-by-field merge) before it calls
#: the file a conflict (issue 22 point 9); the sync's own ``--deadline`` ends it sooner.
DRIVER_SECONDS = 20


class _deadline:
    """``with _deadline(seconds):`` raises TimeoutError in the body once ``seconds`` pass
    (``SIGALRM``; a no-op where there is none, or off the main thread)."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.old: Any = None

    def __enter__(self) -> None:
        import signal
        import threading

        if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
            return

        def expired(signum: int, frame: FrameType | None) -> None:
            raise TimeoutError("merge driver deadline")

        self.old = signal.signal(signal.SIGALRM, expired)
        signal.alarm(self.seconds)

    def __exit__(self, *exc: object) -> None:
        import signal

        if self.old is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self.old)


@dataclass
class DriverResult:
    """What ``memcli merge-file`` did: ``merged`` or not, and lines for git's output."""

    merged: bool
    lines: list[str] = field(default_factory=list)


def merge_driver(base: Path, ours: Path, theirs: Path, path: str) -> DriverResult:
    """git's merge driver contract: leave the result in ``ours``; say whether it merged.

    Args:
        base, ours, theirs: git's temporary files for ``%O``, ``%A``, ``%B``.
        path: the file's path in the repository (``%P``), for messages.

    A version that does not parse as a memory falls back to git's own textual merge
    (``git merge-file``); a conflict leaves git's conflict markers in ``ours``, so the
    file reads as invalid until a person resolves it (memcli never serves it half-merged).
    A version over the reader's bounds (over ``MAX_FILE_BYTES``, more YAML aliases, nesting or
    values than ``fileformat`` reads: ``FileOverLimit``), or a merge that takes longer than
    :data:`DRIVER_SECONDS`, is a conflict at once: never expanded, never a hang (issue 22 point 9).
    """
    from memcli.errors import FileOverLimit, InvalidMemoryFile
    from memcli.policy.merge import merge_file
    from memcli.store.files import MAX_FILE_BYTES, atomic_write

    sizes = [p.stat().st_size if p.exists() else 0 for p in (base, ours, theirs)]
    if max(sizes) > MAX_FILE_BYTES:
        return DriverResult(False, [f"memcli: conflict in {path}: a version is over the {MAX_FILE_BYTES // 1024} KiB "
                                    "a memory file may hold; not merged"])
    base_data, ours_data, theirs_data = base.read_bytes(), ours.read_bytes(), theirs.read_bytes()
    try:
        with _deadline(DRIVER_SECONDS):
            result = merge_file(base_data or None, ours_data, theirs_data, path)
    except FileOverLimit as err:
        return DriverResult(False, [f"memcli: conflict in {path}: {err.reason}; not merged"])
    except TimeoutError:
        return DriverResult(False, [f"memcli: conflict in {path}: not merged within {DRIVER_SECONDS} s"])
    except InvalidMemoryFile as err:
        result = None
        reason = f"{path}: not merged field by field ({err.reason}); textual merge"
    if result is not None and result.data is not None:
        atomic_write(ours, result.data)
        return DriverResult(True, [f"memcli: merged {path} field by field" + (
            f" ({'; '.join(result.notes)})" if result.notes else "")])
    runner.seal_environment()
    proc = runner.run(("merge-file", "-L", "ours", "-L", "base", "-L", "theirs", str(ours), str(base), str(theirs)))
    if result is None:
        return DriverResult(proc.returncode == 0, [reason] if proc.returncode else [])
    return DriverResult(False, [f"memcli: conflict in {path}: {'; '.join(result.conflicts)}"])


@dataclass
class SyncResult:
    """The outcome of ``memcli sync``.

    Attributes:
        remote, branch: where it synced with.
        received: commits merged in from the remote.
        sent: commits pushed to the remote.
        attempts: fetch-merge-push rounds (more than one when the remote moved meanwhile).
    """

    remote: str
    branch: str
    received: int = 0
    sent: int = 0
    attempts: int = 0
    notes: list[str] = field(default_factory=list)
    #: One line per personal store that synced too (``sync``).
    personal: list[str] = field(default_factory=list)
    #: One line per change quarantined on arrival (``service.arrival``): kept in git, not served.
    quarantined: list[str] = field(default_factory=list)
    #: What the merge settled or left for a person (``service.resolve.after_merge``).
    settled: list[str] = field(default_factory=list)
    #: One line per teammate's change of the trust settings that arrived and is in force (a
    #: loosening one is held back: one of ``quarantined``).
    settings: list[str] = field(default_factory=list)
    #: One line per arrival that passed verification but changes what an agent is told: pinned,
    #: instruction-like, or a change of this person's own memory (``service.arrival_notes``).
    arrived: list[str] = field(default_factory=list)
    #: Memory files the merge added, changed and removed (``arrival_notes.received``); None when none moved.
    files: dict[str, int] | None = None

    def message(self) -> str:
        """One line for a person (and one per personal store that synced)."""
        if not self.received and not self.sent:
            line = f"in sync with {self.remote}/{self.branch}"
        else:
            line = f"synced with {self.remote}/{self.branch}: {self.received} commits received, {self.sent} sent"
            if self.files:
                line += (f" ({self.files['added']} memory files added, {self.files['changed']} changed, "
                         f"{self.files['removed']} removed)")
        held = [f"quarantined on arrival (not served; `memcli quarantine accept|revert ID`): {q}"
                for q in self.quarantined]
        from memcli.text.hidden import printable

        # a teammate's name, path or text may hold terminal escapes (red team, stop 35: an author
        # name `Alice\x1b]0;pwned\x07` set the terminal's title): none reaches the terminal
        return printable("\n".join([line, *held, *self.arrived, *self.settings, *self.settled, *self.personal]))

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"remote": self.remote, "branch": self.branch, "received": self.received, "sent": self.sent,
                "attempts": self.attempts, "notes": self.notes, "personal": self.personal,
                "quarantined": self.quarantined, "settled": self.settled, "settings": self.settings,
                "arrived": self.arrived, "files": self.files}


class _Git:
    """git in the store, with one deadline for the whole sync (seconds, monotonic clock)."""

    def __init__(self, root: Path, deadline: float | None) -> None:
        runner.seal_environment()
        self.root = root
        self.until = None if deadline is None else time.monotonic() + deadline

    def run(self, *args: str) -> subprocess.CompletedProcess:
        env = {"GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")}
        # past the deadline the runner raises GitTimedOut, a TimeoutError
        return runner.run(args, self.root, env=env, deadline=self.until, text=True)

    def out(self, *args: str) -> str:
        proc = self.run(*args)
        if proc.returncode != 0:
            runner.check(proc, args)
        return proc.stdout.strip()


def _remote_for(git: _Git, branch: str, wanted: str | None) -> str:
    remotes = git.out("remote").split()
    if wanted:
        if wanted not in remotes:
            raise SyncStopped(f"no git remote named {wanted[:60]!r} in this store",
                              hint="list them with `git remote -v`; add one with `git remote add NAME URL`")
        return wanted
    configured = git.run("config", "--get", f"branch.{branch}.remote").stdout.strip()
    if configured in remotes:
        return configured
    if len(remotes) == 1:
        return remotes[0]
    if "origin" in remotes:
        return "origin"
    raise SyncStopped("this store has no git remote to sync with" if not remotes else
                      f"this store has several remotes ({', '.join(remotes[:5])}); say which",
                      hint="`memcli sync REMOTE`, or add one with `git remote add origin URL`")


def _check_state(git: _Git, ctx: Ctx) -> str:
    """The branch to sync; refuses a store that is not its repository's top, a detached HEAD,
    an operation in progress, or uncommitted memory files."""
    top = Path(git.out("rev-parse", "--show-toplevel")).resolve()
    if top != ctx.ws.root.resolve():
        raise SyncStopped(f"the workspace is a folder of the repository {top}, so syncing it would push that "
                          "repository's branch",
                          hint="sync it with `git pull` and `git push` as you do its code")
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip()
    if not branch:
        raise SyncStopped("HEAD is detached, so there is no branch to sync", hint="`git switch BRANCH` first")
    for marker in ("MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD"):
        if (ctx.ws.root / git.out("rev-parse", "--git-path", marker)).exists():
            raise SyncStopped(f"a git operation is in progress ({marker})",
                              hint="finish it or abort it (`git merge --abort`, `git rebase --abort`), then sync")
    dirty = git.out("status", "--porcelain", "--untracked-files=no", "--", "memories", "memcli.toml")
    if dirty:  # a new file git does not track yet is judged after the fetch (_collisions): a merge
        # overwrites it only when the other side adds the same path (newcomer fault, stop 33)
        count = len(dirty.splitlines())
        files = "1 file has" if count == 1 else f"{count} files have"  # memcli.toml counts too
        raise SyncStopped(f"{files} uncommitted changes, which a merge could overwrite",
                          hint="commit them (`git commit`) or restore them (`git restore`), then sync")
    return branch


def _personal_target(git: _Git, remote: str, branch: str) -> str:
    """The remote branch a person's own store syncs with: its own branch's name when the
    remote has it or has no branch yet; else the remote's default (``HEAD``) or only branch —
    another machine's store that began on a differently named branch (an older memcli took
    git's ``init.defaultBranch``), so no second branch is ever pushed beside it."""
    heads = [line.split("refs/heads/", 1)[1] for line in git.run("ls-remote", "--heads", remote).stdout.splitlines()
             if "refs/heads/" in line]
    if not heads or branch in heads:
        return branch
    symref = git.run("ls-remote", "--symref", remote, "HEAD").stdout.splitlines()
    named = next((line.split("refs/heads/", 1)[1].split()[0] for line in symref if line.startswith("ref:")), "")
    if named in heads:
        return named
    return heads[0] if len(heads) == 1 else branch


def _refuse_unsafe_arrival(git: _Git, remote_ref: str) -> None:
    """Before merging ``remote_ref``: what it brings that a merge would let act on this clone
    before any rule could judge it (red team, stop 35) stops the sync, nothing merged: a file
    under the workspace's ``.cache/`` (a clone's own state: a tracked ``arrival.json`` replaced
    what this clone had verified, so nothing after it was checked), a ``.gitattributes`` that
    makes git rewrite the memory files' bytes on checkout (``check.checkout_hazard``).
    ``memcli check`` refuses the same at a gate (rule ``tree``).

    Raises:
        SyncStopped: such a file arrives.
    """
    from pathlib import PurePosixPath

    from memcli.service.check import checkout_hazard

    base = git.run("merge-base", "HEAD", remote_ref).stdout.strip()
    if not base:
        return  # stores started apart: the merge says so
    prefix = PurePosixPath(git.out("rev-parse", "--show-prefix"))
    listed = git.run("diff", "-z", "--name-only", "--no-renames", "--diff-filter=AMRTC", base, remote_ref, "--", ":/")
    bad = []
    for path in [p for p in listed.stdout.split("\0") if p]:
        said = checkout_hazard(path, prefix, lambda p: git.run("cat-file", "blob", f"{remote_ref}:{p}").stdout.encode())
        if said:
            bad.append(f"{path}: {said}")
    if bad:
        raise SyncStopped(f"{remote_ref} brings {'; '.join(bad[:3])}; not merged, nothing changed",
                          hint="ask whoever pushed it to remove it (`memcli check` at the remote's gate refuses it: "
                               "rule tree), then `memcli sync` again")


def _merge(ctx: Ctx, git: _Git, remote_ref: str, branch: str, message: str) -> None:
    """``git merge`` of ``remote_ref``, recorded first (``service.sync_recover``) so that a kill
    half-way is rolled back by the next command; a failed merge is aborted.

    Raises:
        SyncStopped: a true conflict or another merge failure (aborted: nothing changed).
    """
    from memcli.service import journal

    _refuse_unsafe_arrival(git, remote_ref)
    journal.save(ctx, journal.SYNC, {"op": "sync", "branch": branch, "incomingRef": remote_ref,
                                     "head": git.out("rev-parse", "HEAD"),
                                     "incoming": git.out("rev-parse", remote_ref)})
    testpoint.reached("sync:merging")
    from memcli.git.signatures import signing_args

    pre, sign = signing_args(ctx.ws.config.signing == "ssh")  # a merge commit is signed like any other
    # a person's own store on two machines: two first commits, one person (docs/teams.md, "Two machines")
    joining = ["--allow-unrelated-histories"] if ctx.ws.config.kind == "personal" else []
    proc = git.run(*pre, "merge", *sign, *joining, "--no-edit", "-m", message, remote_ref)
    if proc.returncode == 0:
        testpoint.reached("sync:merged")
        journal.drop(ctx, journal.SYNC)
        return
    conflicted = git.run("diff", "--name-only", "--diff-filter=U").stdout.split()
    said = [line.removeprefix("memcli: ") for line in (proc.stdout + proc.stderr).splitlines()
            if line.startswith("memcli: conflict")]
    if git.run("merge", "--abort").returncode == 0 or not git.run("rev-parse", "-q", "--verify",
                                                                   "MERGE_HEAD").stdout.strip():
        journal.drop(ctx, journal.SYNC)
    from memcli.service.conflicts import set_blocked
    from memcli.timeutil import format_instant

    blocked = {"ref": remote_ref, "branch": branch, "root": str(ctx.ws.root), "at": format_instant(ctx.now),
               "files": conflicted, "said": "; ".join(said)}
    if not conflicted and "unrelated histories" in proc.stderr:  # two `memcli init`s made two memory branches
        set_blocked(ctx, {**blocked, "kind": "apart", "said": "two stores started apart (no common commit)"})
        raise SyncStopped(f"this store and {remote_ref} were started apart (two `memcli init`s, no common commit); "
                          "nothing changed",
                          hint=f"join them once with `memcli resolve` in {ctx.ws.root} (memory files have unique "
                               "names; the joined store takes the remote's workspace id and your personal "
                               "memories come along), then `memcli sync` again")
    if not conflicted:
        raise SyncStopped(f"git merge failed: {runner.first_line(proc.stderr) or proc.returncode}; "
                          "the merge was aborted, nothing changed")
    set_blocked(ctx, {**blocked, "kind": "conflict"})
    named = "; ".join(said) if said else ", ".join(conflicted[:5])
    raise SyncStopped(f"a true conflict with {remote_ref}: {named}; the merge was aborted, nothing changed",
                      hint=f"run `memcli resolve` in {ctx.ws.root}: it shows both sides of each file and takes "
                           "the one you choose; then `memcli sync` again")


def sync(ctx: Ctx, remote: str | None = None, deadline: float | None = None) -> SyncResult:
    """Fetch, merge and push the store's branch; see the module docstring. Then the same for
    each of the person's own stores (``Ctx.personal_stores``) that has a git remote; a failure
    there is a warning (``SyncResult.personal`` lists what synced).

    Args:
        ctx: the service context (``memcli.service.Ctx``).
        remote: the remote's name; default the branch's upstream, else the only remote, else ``origin``.
        deadline: seconds the whole sync may take (a hook's budget); None waits as long as git does.

    Raises:
        SyncStopped: no remote, a state that cannot be synced, a true conflict (merge
            aborted), a remote that refused or could not be reached, or the deadline passed.
        WorkspaceLocked: another memcli process holds the workspace lock.
        GitFailed: git itself failed.
        settings.Unloadable: the store's ``memcli.toml`` is missing or does not load (``ctx`` not tolerant).
    """
    from memcli.service.arrived import held

    held(ctx)  # this clone's own commits since the last verification first: a memcli.toml they removed
    # or broke stops the sync (exit 3) as it stops any other command, instead of being pushed
    result = _sync_store(ctx, remote, deadline)
    for store in ctx.personal_stores():  # the person's own stores, where they gave one a remote
        if not _Git(store.ws.root, None).run("remote").stdout.split():
            continue
        try:
            done = _sync_store(store, None, deadline)
            result.personal.append(f"your personal store {store.ws.root}: {done.message()}")
        except MemcliError as err:
            ctx.warnings.append(f"your personal store {store.ws.root} did not sync: {err.message}")
    return result


def _sync_store(ctx: Ctx, remote: str | None, deadline: float | None) -> SyncResult:
    """:func:`sync` of one store."""
    git = _Git(ctx.ws.root, deadline)
    with ctx.ws.lock():
        try:
            return _sync_locked(ctx, git, remote)
        except TimeoutError:  # git and its children (driver, ssh) are killed: tidy up without the deadline
            if runner.run(("rev-parse", "-q", "--verify", "MERGE_HEAD"), ctx.ws.root).returncode == 0:
                runner.run(("merge", "--abort"), ctx.ws.root)
            from memcli.service import journal

            if journal.load(ctx, journal.SYNC) is not None:  # the merge was stopped half-way: undo it now
                from memcli.service.sync_recover import roll_back

                roll_back(ctx)
            raise SyncStopped(f"sync did not finish within its deadline of {deadline:g} s; nothing is half-merged",
                              hint="run `memcli sync` again without --deadline") from None


def _collisions(git: _Git, tracking: str) -> None:
    """Refuse a merge that would overwrite a file git does not track yet: one the fetched side
    ``tracking`` adds at the same path (git would stop half-way with its own message).

    Raises:
        SyncStopped: such files, named (at most 3).
    """
    untracked = [line[3:] for line in git.out("status", "--porcelain", "--untracked-files=all", "--", "memories",
                                              "memcli.toml").splitlines() if line.startswith("?? ")]
    if not untracked:
        return
    theirs = git.out("ls-tree", "-r", "--name-only", tracking, "--", *untracked).splitlines()
    if theirs:
        shown = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more" if len(theirs) > 3 else "")
        raise SyncStopped(f"{len(theirs)} file{'' if len(theirs) == 1 else 's'} not committed here would be "
                          f"overwritten by the merge: {shown}",
                          hint="commit them (`git add` and `git commit`) or move them away, then sync")


def _sync_locked(ctx: Ctx, git: _Git, wanted: str | None) -> SyncResult:
    from memcli.service.sync_recover import roll_back

    undone = roll_back(ctx)  # a merge a kill interrupted: put back as HEAD has it, then merged again below
    if undone:
        ctx.warnings.append(undone)
    branch = _check_state(git, ctx)
    remote = _remote_for(git, branch, wanted)
    changed = ensure_merge_driver(ctx.ws.root, write=False)
    data = attributes_text(ctx.ws.root) if changed else None
    if data is not None and ctx.ws.config.autocommit:  # journaled: a kill never leaves it written but uncommitted
        from memcli.service.write import apply

        apply(ctx, {changed[0]: data}, "sync", [], [], edits_checked=True,
              message=gitlog.message("sync", "register the memory merge driver", {"Op": "sync"}))
    elif data is not None:  # autocommit = false: the driver's line is committed all the same, as ever
        from memcli.store.files import atomic_write

        atomic_write(changed[0], data)
        ctx.git().commit(changed, gitlog.message("sync", "register the memory merge driver", {"Op": "sync"}),
                         actor=ctx.actor)
    if data is not None:  # committed: the fetch, merge and push that follow can be interrupted again
        from memcli import interrupts

        interrupts.resume()
    target = _personal_target(git, remote, branch) if ctx.ws.config.kind == "personal" else branch
    result = SyncResult(remote, target)
    tracking = f"refs/remotes/{remote}/{target}"
    for attempt in range(1, ATTEMPTS + 1):
        result.attempts = attempt
        fetched = git.run("fetch", "--quiet", remote, f"+refs/heads/{target}:{tracking}")
        if fetched.returncode != 0 and "couldn't find remote ref" not in fetched.stderr:
            raise SyncStopped(f"cannot fetch from {remote}: {runner.first_line(fetched.stderr)}",
                              hint="check the remote's URL (`git remote -v`) and your access to it")
        has_remote = git.run("rev-parse", "-q", "--verify", tracking).returncode == 0
        if has_remote and git.run("merge-base", "--is-ancestor", tracking, "HEAD").returncode != 0:
            _collisions(git, tracking)
            result.received += int(git.out("rev-list", "--count", f"HEAD..{tracking}"))
            before = git.out("rev-parse", "HEAD")
            _merge(ctx, git, tracking, branch, gitlog.message("sync", f"merge {remote}/{target}", {"Op": "sync"}))
            from memcli.service import arrival  # verify on arrival: what fails is quarantined, never served

            held, said = arrival.after_sync(ctx, before)
            result.quarantined += [e.line() for e in held]
            result.settings += said
            from memcli.service.arrival_notes import merged, notable, received  # passed, but worth a look

            changes = merged(ctx, before)  # one diff for the counts and the notable arrivals
            result.files = received(changes)
            result.arrived += notable(ctx, before, {e.path for e in held}, changes)
            from memcli.service.resolve import after_merge  # a review race settled, two answers for one subject

            result.settled += after_merge(ctx, before)
        ahead = int(git.out("rev-list", "--count", f"{tracking}..HEAD")) if has_remote else \
            int(git.out("rev-list", "--count", "HEAD"))
        from memcli.service.conflicts import set_blocked

        set_blocked(ctx, None)  # merged (or nothing to merge): no longer blocked
        if not ahead:
            return result
        pushed = git.run("push", "--porcelain", remote, f"HEAD:refs/heads/{target}")
        if pushed.returncode == 0:
            result.sent += ahead
            git.run("update-ref", tracking, "HEAD")
            if not git.run("config", "--get", f"branch.{branch}.remote").stdout.strip():
                git.run("branch", f"--set-upstream-to={remote}/{target}", branch)
            return result
        if not any(word in pushed.stdout + pushed.stderr for word in _REJECTED):
            raise SyncStopped(f"{remote} refused the push: {runner.first_line(pushed.stderr) or pushed.returncode}",
                              hint="check your access to the remote; nothing was lost locally")
        result.notes.append(f"{remote} moved during the sync; merging again")
        time.sleep(min(0.05 * attempt, 0.3))
    raise SyncStopped(f"{remote} kept moving: {ATTEMPTS} rounds of fetch, merge and push did not settle",
                      hint="run `memcli sync` again")
