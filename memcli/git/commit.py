"""Crash-safe, path-limited commits that never leave memcli's files staged in the user's index.

``git add`` then ``git commit --only`` stages memcli's files in the shared index first: a
writer killed between the two left them staged, and the person's next ``git commit``
carried them without memcli's trailers (SPEC.md section 8, CASES.md R4). A commit here
takes the same steps git's own ``commit --only`` takes, with git's plumbing, and never
writes the shared index but by one atomic rename:

1. refuse a repository in the middle of something (:func:`check_state`): a detached
   HEAD (the worktree's ``HEAD`` file names the branch to commit to, as git's files backend
   keeps it; ``git symbolic-ref`` when that file cannot say plainly), or a rebase, ``am``,
   merge, cherry-pick, revert or bisect in progress, found by the files git itself looks
   for (``wt-status.c``: ``rebase-merge``, ``rebase-apply``, ``MERGE_HEAD``,
   ``CHERRY_PICK_HEAD``, ``REVERT_HEAD``, ``sequencer``, ``BISECT_LOG``), located with
   ``git rev-parse --git-path`` so linked worktrees work; a writer checks before it touches
   a file, and the files are looked for again here;
2. take git's ``index.lock`` as git does (``O_CREAT | O_EXCL``), writing ``memcli PID``
   into it, so no other git process writes the index meanwhile;
3. prepare the next shared index in a temporary file: a copy of the current index with
   only memcli's paths updated by ``update-index --stdin`` (paths go through stdin: any
   batch size, never "Argument list too long"); the person's staged changes stay staged,
   as with ``commit --only``. Where only memcli stages (the memory branch's worktree, a
   personal store) the index is kept split (``core.splitIndex``), so this writes only the
   changed entries, not an index of every file;
4. build the commit's tree from the branch's, reading and rebuilding only the trees on
   memcli's paths (one ``cat-file --batch`` gives the branch's commit, those trees and the
   blobs the next index holds; ``mktree --batch``), and the commit with ``commit-tree -F -``:
   no index of the whole ``HEAD`` is built, so a commit costs the same at 1,000 memories or
   100,000;
5. move the branch with ``update-ref refs/heads/BRANCH NEW OLD``, a compare-and-swap (a
   branch moved since step 4 is refused, nothing written), with Ctrl-C held from its start
   (``memcli.interrupts``): a commit that landed is reported, never undone;
6. rename the lock file (by then holding the next index) over the index (git's
   ``commit_lock_file``).

A kill before step 5 leaves ``HEAD`` and the index as they were (the lock file says
``memcli PID``); a kill between 5 and 6 leaves the finished next index in the lock file,
its checksum recorded by the caller (``on_commit``). :func:`recover` completes or
undoes either from that record. Commits made here run no hooks, like ``--no-verify``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from memcli import interrupts
from memcli.errors import GitFailed, GitLocked, UnsafeGitState
from memcli.git.run import batch_objects, first_line
from memcli.git.run import run as run_git

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo

#: Files and folders git keeps while an operation is in progress, and how to name it.
#: Source: git's wt-status.c (``wt_status_get_state``) and ``git status`` messages.
STATE_MARKERS = (
    ("rebase-merge", "a rebase", "git rebase --continue` or `git rebase --abort"),
    ("rebase-apply", "a rebase or `git am`", "git rebase --abort` or `git am --abort"),
    ("MERGE_HEAD", "a merge", "git merge --continue` or `git merge --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue` or `git cherry-pick --abort"),
    ("REVERT_HEAD", "a revert", "git revert --continue` or `git revert --abort"),
    ("sequencer", "a cherry-pick or revert", "git cherry-pick --abort` or `git revert --abort"),
    ("BISECT_LOG", "a bisect", "git bisect reset"),
)
#: A git ``index.lock`` older than this (seconds) is reported as stale.
STALE_LOCK_SECONDS = 600
LOCK_TAG = b"memcli "
#: Size of the SHA-1 checksum that ends every git index file (``index-format.txt``).
CHECKSUM_BYTES = 20


def check_state(repo: GitRepo) -> str:
    """The checked-out branch (``refs/heads/…``) if the repository is safe to commit to.

    Raises:
        UnsafeGitState: a detached HEAD, or a rebase, ``am``, merge, cherry-pick, revert or
            bisect in progress; the hint names git's command to finish or abort it.
    """
    check_markers(repo)
    branch = _head_file_branch(repo)
    if branch is not None:
        return branch
    status, out, _ = repo.raw("symbolic-ref", "-q", "HEAD")
    if status != 0:
        raise UnsafeGitState(f"HEAD is detached in {repo.toplevel()} (no branch is checked out): "
                             "a commit there would be lost at the next checkout; nothing was written",
                             hint="check out a branch first (`git switch BRANCH`), then retry")
    return out.decode().strip()


#: A branch name read from the ``HEAD`` file is used only when it is this plain (ASCII, no
#: component starting with a dot or ending with ``.lock``, no ``..``); anything else is asked of git.
_PLAIN_BRANCH = re.compile(r"refs/heads/(?!.*\.\.)(?!.*//)(?!.*/\.)(?!\.)[A-Za-z0-9_./-]*[A-Za-z0-9_-](?<!\.lock)")


def _head_file_branch(repo: GitRepo) -> str | None:
    """The branch ``HEAD`` names, read from the worktree's ``HEAD`` file as git's files backend
    keeps it (``ref: refs/heads/NAME``: what ``git symbolic-ref -q HEAD`` answers, without a
    process); None when that file cannot say it plainly (a detached ``HEAD``, the reftable
    backend, whose ``HEAD`` file is a stub, an unusual name): the caller asks git."""
    if (repo.common_dir / "reftable").exists():
        return None
    try:
        text = (repo.git_dir / "HEAD").read_bytes()
    except OSError:
        return None
    if not text.startswith(b"ref: ") or not text.endswith(b"\n"):
        return None
    try:
        name = text[5:-1].decode("ascii")
    except UnicodeDecodeError:
        return None
    return name if _PLAIN_BRANCH.fullmatch(name) else None


def _still_on(repo: GitRepo, branch: str, old: str | None) -> None:
    """Refuse a commit whose branch is no longer the one checked out (renamed or switched since
    the caller's :func:`check_state`): one file read, and one ``rev-parse`` when ``branch`` has
    no commit (it may have been renamed away; ``update-ref`` would then create it anew).

    Raises:
        GitFailed: ``HEAD`` names another branch now, or is detached.
    """
    now = _head_file_branch(repo)
    if now is None:
        status, out, _ = repo.raw("symbolic-ref", "-q", "HEAD")
        now = out.decode().strip() if status == 0 else None
    if now == branch and (old is not None or repo.raw("rev-parse", "-q", "--verify", "HEAD^{commit}")[0] != 0):
        return
    raise GitFailed(f"the checked-out branch changed during the write ({branch} is no longer HEAD's, or it moved); "
                    "nothing was committed", hint="retry")


def check_markers(repo: GitRepo) -> None:
    """The part of :func:`check_state` that starts no process: git's files of an operation in progress.

    Raises:
        UnsafeGitState: a rebase, ``am``, merge, cherry-pick, revert or bisect is in progress.
    """
    for name, what, finish in STATE_MARKERS:
        if os.path.lexists(repo.git_path(name)):
            if name == "rebase-apply" and os.path.lexists(repo.git_path("rebase-apply/applying")):
                what, finish = "`git am`", "git am --continue` or `git am --abort"
            raise UnsafeGitState(f"{what} is in progress in {repo.toplevel()}; nothing was written",
                                 hint=f"finish it first (`{finish}`), then retry")


def lock_age(lock: Path) -> float | None:
    """Seconds since ``lock`` last changed, or None when it does not exist."""
    try:
        return max(0.0, time.time() - lock.stat().st_mtime)
    except OSError:
        return None


def _take_lock(repo: GitRepo, timeout: float) -> Path:
    """Create git's ``index.lock`` exclusively, as git does; wait up to ``timeout`` seconds.

    Raises:
        GitLocked: it is held past ``timeout``, or is older than ``STALE_LOCK_SECONDS``.
    """
    lock, tag = repo.index_lock(), _temp_index(repo, "tag")
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        try:
            _create_tagged(lock, tag)
        except FileExistsError:
            age = lock_age(lock)
            if age is None:
                continue
            fix = "`memcli doctor --fix` removes it when no git process is running"
            if age > STALE_LOCK_SECONDS:
                raise GitLocked(f"git's {lock} is {age / 60:.0f} minutes old and looks stale; nothing was written",
                                hint=f"if no git process is running, remove it (`rm {lock}`) and retry; {fix}") \
                    from None
            if time.monotonic() >= deadline:
                raise GitLocked(f"git's {lock} is held by another git process ({age:.0f} s old); nothing was written",
                                hint=f"retry when it finishes (waited {timeout:g} s); {fix}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
            continue
        except OSError as err:
            raise GitFailed(f"cannot create git's {lock}: {err.strerror}; nothing was written",
                            hint="check the repository's permissions and free disk space") from None
        return lock


def _create_tagged(lock: Path, tag: Path) -> None:
    """Create ``lock`` exclusively with ``memcli PID`` already in it (so no kill leaves it empty).

    The content goes into ``tag`` first and is hard-linked to ``lock`` (``link`` fails with
    EEXIST as ``O_EXCL`` does); where hard links are not supported, ``O_EXCL`` and a write.

    Raises:
        FileExistsError: ``lock`` exists.
        OSError: it cannot be created.
    """
    content = LOCK_TAG + str(os.getpid()).encode() + b"\n"
    tag.write_bytes(content)
    try:
        os.link(tag, lock)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    finally:
        tag.unlink(missing_ok=True)
    fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, content)
    finally:
        os.close(fd)


def _temp_index(repo: GitRepo, kind: str, pid: int | None = None) -> Path:
    return repo.git_dir / f"memcli-index.{pid or os.getpid()}.{kind}"


def commit(repo: GitRepo, rels: list[str], message: str, *, env: dict[str, str], fallback_env: dict[str, str],
           timeout: float, on_commit: Callable[[str, bytes], None] | None = None, split_index: bool = False,
           branch: str | None = None) -> str:
    """Commit exactly ``rels`` (workspace-relative; added, changed or deleted) with ``message``.

    The next shared index is a copy of the current one with ``rels`` updated (git's own
    ``update-index``, as ``git add``/``git rm`` of those paths). The commit's tree is the
    branch's with only the trees on the paths of ``rels`` rebuilt (:func:`_tree`): no index of
    the whole ``HEAD`` is read or written, whatever the store's size. The branch's commit is
    read under git's ``index.lock``, in the same ``cat-file`` as those trees, and the branch
    is moved only if it still holds that commit (``update-ref`` with the old value).

    Args:
        repo: the :class:`memcli.git.repo.GitRepo`.
        env: extra environment (author and committer dates).
        fallback_env: the identity to retry with when git has none configured.
        timeout: seconds to wait for another process's ``index.lock``.
        on_commit: called with the new commit and the next index's checksum just before the
            branch moves (the caller records them for :func:`recover`).
        split_index: keep the shared index split (``core.splitIndex``, git's
            ``Documentation/technical/split-index.txt``): the update then writes a small file
            of the changed entries, not the whole index. Only for repositories where no one
            else works with the index (the memory branch's worktree, a personal store): tools
            that do not read split indexes (libgit2) would not read it.
        branch: the branch :func:`check_state` gave the caller for this write (``refs/heads/…``);
            only the operation markers are then checked again (no process). None: checked here.

    Returns:
        The new commit's hash (the branch's, unchanged, when the files equal its commit's).

    Raises:
        UnsafeGitState: see :func:`check_state`; nothing was committed.
        GitLocked: ``index.lock`` is held past ``timeout`` or stale.
        GitFailed: git refused (the branch moved meanwhile, say); ``HEAD`` and the index are as they were.
    """
    if branch is None:
        branch = check_state(repo)
    else:
        check_markers(repo)
    settings = _settings(repo)
    if any("\n" in r or "\0" in r for r in rels):
        raise GitFailed("a path to commit holds a line break; nothing was committed")
    ssh = bool(getattr(repo, "sign_ssh", False))  # the store signs its commits: [review] signing = "ssh"
    sign = ssh or settings.get("commit.gpgsign", "").lower() in TRUE
    pre: list[str] = []
    if ssh:  # only then: memcli.git.signatures imports tempfile and dataclasses
        from memcli.git.signatures import signing_args

        pre, _ = signing_args(ssh)
    lock = _take_lock(repo, timeout)
    next_index = _temp_index(repo, "next")
    listed = b"".join(os.fsencode(r) + b"\0" for r in rels)
    landed = held = False
    try:
        shared = repo.index_path()
        if shared.exists():
            _copy(shared, next_index)
        split = ("-c", "core.splitIndex=true") if split_index else ()
        _plumb(repo, *split, "update-index", "-z", "--add", "--remove", "--stdin", index=next_index, input=listed)
        if not next_index.exists():  # no index yet and nothing to add: git wrote none
            _plumb(repo, "read-tree", "--empty", index=next_index)
        old, tree, old_tree = _tree(repo, branch, rels, next_index, settings)
        _still_on(repo, branch, old)
        if old and tree == old_tree:
            return old  # the files already equal the branch's: no commit for a no-op
        args = [*pre, "commit-tree", tree, *(["-p", old] if old else []), *(["-S"] if sign else []), "-F", "-"]
        try:
            new = _plumb(repo, *args, input=message.encode(), env=env).decode().strip()
        except GitFailed as err:
            if ssh and any(s in err.message for s in ("signingkey", "signing", "load public key", "sign")):
                from memcli.git.signatures import SIGNING_HINT

                raise GitFailed(f"git could not sign the commit: {err.message}", hint=SIGNING_HINT) from None
            if not any(s in err.message for s in ("identity unknown", "tell me who you are", "auto-detect",
                                                  "empty ident")):
                raise
            new = _plumb(repo, *args, input=message.encode(), env={**env, **fallback_env}).decode().strip()
        checksum = next_index.read_bytes()[-CHECKSUM_BYTES:]
        if on_commit is not None:  # recorded before the lock holds it: a kill at any instant is recoverable
            on_commit(new, checksum)
        os.replace(next_index, lock)  # the lock (still held) now holds the next index
        subject = message.split("\n", 1)[0]
        # from here a Ctrl-C cannot undo a commit git has put on the branch (memcli.interrupts)
        held = interrupts.hold()
        # the branch itself, not HEAD: a HEAD detached meanwhile (a rebase starting) never gets the commit;
        # git logs it in HEAD's reflog too, as a commit on the checked-out branch
        _move(repo, f"commit: {subject}"[:200], branch, new, old or "")
        landed = True
        os.replace(lock, shared)
        return new
    finally:
        if not landed:
            lock.unlink(missing_ok=True)
            if held:  # git refused the move: nothing was written, Ctrl-C works again
                interrupts.release()
        next_index.unlink(missing_ok=True)
        Path(f"{next_index}.lock").unlink(missing_ok=True)


def _copy(source: Path, target: Path) -> None:
    """Copy the bytes of ``source`` to a new ``target`` (``shutil.copyfile`` without importing
    shutil, which brings bz2 and lzma: a few ms of every commit), and its modification time.

    The time matters: git judges an entry whose mtime is not older than the index file's own
    as "racily clean" and compares its content (``read-cache.c``, ``is_racy_timestamp``;
    git's Documentation/technical/racy-git.txt). A copy dated now would make such an entry
    look settled, and a same-size edit made in the index's second would vanish from
    ``git status`` once the copy became the index.

    Raises:
        OSError: either file cannot be opened, read or written.
    """
    with open(source, "rb") as src, open(target, "wb") as dst:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            dst.write(chunk)
        stamp = os.fstat(src.fileno())
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))


#: git's spellings of a true boolean (``git-config(1)``, "Values").
TRUE = ("true", "yes", "on", "1")


def _settings(repo: GitRepo) -> dict[str, str]:
    """The settings a commit reads (``commit.gpgsign``, ``core.filemode``), lower-cased names: kept
    with the actor in the repository's ``config_cache`` file when it has one (``memcli.git.identity``:
    no process while git's config files are unchanged), else in one git call."""
    cache = getattr(repo, "config_cache", None)
    if cache is not None:
        from memcli.git.identity import settings

        known = settings(repo.workspace, cache)
        if known is not None:
            return known
    status, out, _ = repo.raw("config", "-z", "--get-regexp", r"^(commit\.gpgsign|core\.filemode)$")
    found: dict[str, str] = {}
    if status == 0:
        for record in out.decode("utf-8", "replace").split("\0"):
            name, _, value = record.partition("\n")
            if name:
                found[name.lower()] = value if _ else "true"  # a bare key is true
    return found


def _tree(repo: GitRepo, branch: str, rels: list[str], index: Path,
          settings: dict[str, str]) -> tuple[str | None, str, str | None]:
    """The tree of ``branch``'s commit with ``rels`` (workspace-relative) as ``index`` holds them.

    Only the trees on the paths are read (one ``cat-file --batch``, which also gives the
    branch's commit, and each path's blob from ``index``: the object ``update-index`` just
    wrote) and rebuilt (one ``mktree --batch``, bottom up); a folder left empty is dropped,
    as git never stores one. The new trees' ids are computed here first (each parent names
    its children) and checked against the ids ``mktree`` gives.

    Returns:
        ``(the branch's commit or None before the first, new tree, that commit's tree or None)``.

    Raises:
        GitFailed: a tree or blob cannot be read, or git's ids differ from the ones computed.
    """
    import hashlib
    import posixpath

    top = {posixpath.normpath(repo.prefix + Path(rel).as_posix()): rel for rel in rels}  # from the top -> on disk
    if any(path.startswith("../") or path in ("..", ".") for path in top):
        raise GitFailed("a path to commit is outside the repository; nothing was committed")
    paths = list(top)
    folders = {""}
    for path in paths:
        parts = path.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    order = sorted(folders)
    kept = [p for p in paths if os.path.lexists(repo.workspace / top[p])]
    # one process: the branch's commit first, then its trees (a branch moved in between is refused by update-ref)
    queries = [f"{branch}^{{commit}}", *(f"{branch}^{{tree}}" if not folder else f"{branch}:{folder}"
                                         for folder in order), *(f":{path}" for path in kept)]
    found = _batch(repo, queries, index)
    old, kind, _ = found[0]
    if old is not None and kind != "commit":
        raise GitFailed(f"git cat-file gave a {kind} for {branch}; nothing was committed")
    algorithm = _object_format(repo, old)
    width = 20 if algorithm == "sha1" else 32
    trees: dict[str, dict[bytes, tuple[bytes, bytes]]] = {}
    old_tree = None
    for i, folder in enumerate(order, start=1):
        oid, kind, data = found[i] if old else (None, None, b"")
        if folder == "" and oid:
            old_tree = oid
        trees[folder] = _entries(data, width) if kind == "tree" else {}
    blobs = {path: found[len(queries) - len(kept) + i] for i, path in enumerate(kept)}
    trust_mode = settings.get("core.filemode", "true").lower() in TRUE
    for path in paths:
        folder, _, name = path.rpartition("/")
        entries, key = trees[folder], os.fsencode(name)
        if path not in blobs:
            entries.pop(key, None)
            continue
        oid, kind, _ = blobs[path]
        if kind != "blob" or oid is None:
            raise GitFailed(f"git's index holds no file {path} after adding it; nothing was committed")
        entries[key] = (_mode(repo.workspace / top[path], entries.get(key), trust_mode),
                        bytes.fromhex(oid))
    written: list[tuple[str, bytes]] = []
    for folder in sorted(order, key=lambda f: (-f.count("/") - bool(f), f)):  # deepest first, the root last
        entries = trees[folder]
        parent, _, name = folder.rpartition("/")
        if not entries and folder:
            trees[parent].pop(os.fsencode(name), None)
            continue
        body = b"".join(mode + b" " + key + b"\0" + oid for key, (mode, oid) in
                        sorted(entries.items(), key=lambda e: e[0] + (b"/" if e[1][0] == b"40000" else b"")))
        oid_bytes = hashlib.new(algorithm, b"tree %d\0" % len(body) + body).digest()
        written.append((oid_bytes.hex(), b"".join(
            mode + (b" tree " if mode == b"40000" else b" commit " if mode == b"160000" else b" blob ")
            + oid.hex().encode() + b"\t" + key + b"\0" for key, (mode, oid) in entries.items()) + b"\0"))
        if folder:
            trees[parent][os.fsencode(name)] = (b"40000", oid_bytes)
    tree = written[-1][0]  # the root's (always written, even empty)
    if old_tree == tree:
        return old, tree, old_tree
    # --missing: the unchanged entries are not looked up (a partial clone may lack them); the ids are checked
    made = _plumb(repo, "mktree", "-z", "--missing", "--batch",
                  input=b"".join(text for _, text in written)).decode().split()
    if made != [oid for oid, _ in written]:
        raise GitFailed("git built other trees than memcli computed for the commit; nothing was committed",
                        hint="report this with `git --version`; commit the files with git meanwhile")
    return old, tree, old_tree


def _object_format(repo: GitRepo, old: str | None) -> str:
    """``sha1`` or ``sha256``: from the length of ``old``'s id, else asked of git (a repository without commits)."""
    if old:
        return "sha1" if len(old) == 40 else "sha256"
    return "sha256" if _plumb(repo, "rev-parse", "--show-object-format").strip() == b"sha256" else "sha1"


def _mode(path: Path, before: tuple[bytes, bytes] | None, trust_mode: bool) -> bytes:
    """The tree mode git's ``update-index --add`` gives ``path`` (``read-cache.c``, ``ce_mode_from_stat``):
    a symbolic link 120000; a file 100755 when its owner may run it, else 100644; with
    ``core.fileMode`` false a file keeps the mode it had."""
    import stat

    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return b"120000"
    if not trust_mode and before is not None and before[0] in (b"100644", b"100755"):
        return before[0]
    return b"100755" if st.st_mode & stat.S_IXUSR else b"100644"


def _entries(data: bytes, width: int) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw tree object's entries: name -> (mode, binary id); ``width`` is the id's length in bytes."""
    entries = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul]] = (data[at:space], data[nul + 1:nul + 1 + width])
        at = nul + 1 + width
    return entries


def _batch(repo: GitRepo, queries: list[str], index: Path) -> list[tuple[str | None, str | None, bytes]]:
    """``git cat-file --batch`` for ``queries`` (revisions, ``:path`` read from ``index``): per query
    ``(id, type, content)``, or ``(None, None, b"")`` when git has no such object.

    Raises:
        GitFailed: git failed or its answer cannot be read.
    """
    out = _plumb(repo, "cat-file", "--batch", index=index, input="".join(q + "\n" for q in queries).encode())
    answers = batch_objects(out)
    if len(answers) < len(queries):
        raise GitFailed("git cat-file gave a short answer; nothing was committed")
    return [(None, None, b"") if a is None else a for a in answers[:len(queries)]]


def _move(repo: GitRepo, message: str, branch: str, new: str, old: str) -> None:
    """``update-ref -m MESSAGE BRANCH NEW OLD`` in a session of its own, so a Ctrl-C at the
    terminal does not reach it; if git fails all the same (killed, say) after the branch
    moved, the move stands: a commit that landed is never reported as not written (newcomer,
    stop 36: "git update-ref failed: -2; nothing was written", and the files were put back).

    Raises:
        GitFailed: the branch does not hold ``new``.
    """
    proc = run_git(("update-ref", "-m", message, branch, new, old), repo.workspace, own_session=True)
    if proc.returncode == 0:
        return
    status, out, _ = repo.raw("rev-parse", "-q", "--verify", f"{branch}^{{commit}}")
    if status == 0 and out.decode().strip() == new:
        return
    raise GitFailed(f"git update-ref failed: {first_line(proc.stderr) or proc.returncode}")


def _plumb(repo: GitRepo, *args: str, index: Path | None = None, input: bytes | None = None,
           env: dict[str, str] | None = None) -> bytes:
    """Run one plumbing command; stdout bytes.

    Raises:
        GitFailed: git exited non-zero (its first error line) or cannot be started.
        KeyboardInterrupt: git was stopped by SIGINT (the person's Ctrl-C: exit 130, nothing written).
    """
    extra = {**(env or {}), **({"GIT_INDEX_FILE": str(index)} if index else {})}
    status, out, err = repo.raw(*args, input=input, env=extra)
    if status == -2:  # SIGINT: a Ctrl-C at the terminal reached git too, before the branch moved
        raise KeyboardInterrupt
    if status != 0:
        name = next((a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] != "-c")), "")
        raise GitFailed(f"git {name} failed: {first_line(err) or status}")
    return out


def recover(repo: GitRepo, pid: int, new: str | None, checksum: bytes | None, rels: list[str]) -> bool:
    """Finish or undo the git side of a commit whose writer (process ``pid``) died.

    The caller has the proof that the writer is gone: it holds the workspace lock the
    writer held (``service.journal``).

    Args:
        pid: the writer's process id (its ``index.lock`` says ``memcli PID``).
        new: the commit it was about to put on the branch, if it got that far.
        checksum: the checksum of the next index it left in ``index.lock``.
        rels: its workspace-relative paths.

    Returns:
        True when the commit is on the branch (completed: the shared index now agrees with
        it for ``rels``); False when it never got there (the lock it held is removed; the
        caller restores the files).

    Raises:
        GitFailed: git cannot be run.
    """
    status, out, _ = repo.raw("rev-parse", "-q", "--verify", "HEAD^{commit}")
    head = out.decode().strip() if status == 0 else None
    landed = new is not None and bool(new) and head is not None and (
        head == new or repo.raw("merge-base", "--is-ancestor", new, head)[0] == 0)
    lock = repo.index_lock()
    try:
        held = lock.read_bytes()
    except OSError:
        held = None
    if held is not None:
        ours_next = checksum is not None and len(held) > CHECKSUM_BYTES and held[-CHECKSUM_BYTES:] == checksum
        if landed and ours_next:
            os.replace(lock, repo.index_path())
        elif ours_next or held.startswith(LOCK_TAG + str(pid).encode() + b"\n"):
            lock.unlink(missing_ok=True)
    for kind in ("head", "next", "tag"):
        path = _temp_index(repo, kind, pid)
        path.unlink(missing_ok=True)
        Path(f"{path}.lock").unlink(missing_ok=True)
    if landed and rels and not lock.exists():
        _sync_index(repo, rels)
    return landed


def _sync_index(repo: GitRepo, rels: list[str]) -> None:
    """Put the shared index entries of ``rels`` back in step with ``HEAD`` where they differ."""
    status, out, _ = repo.raw("diff", "--cached", "--name-only", "-z", "--relative", "HEAD")
    if status != 0:
        return
    wanted = set(rels)
    stale = [p for p in out.decode("utf-8", "replace").split("\0") if p in wanted]
    if stale:
        listed = b"".join(os.fsencode(p) + b"\0" for p in stale)
        repo.raw("--literal-pathspecs", "reset", "-q", "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul",
                  input=listed)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a reused id counts as alive: the safe answer)."""
    if pid <= 0 or pid == os.getpid():
        return pid == os.getpid()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def git_processes(repo: GitRepo) -> list[int]:
    """Process ids of running ``git`` commands whose folder is inside the repository (Linux ``/proc``).

    Returns:
        The ids found; ``[-1]`` when processes cannot be listed here (no ``/proc``), so a
        caller never takes an empty answer for proof that no git is running.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return [-1]
    top = str(repo.toplevel().resolve())
    git_dir = str(repo.git_dir.resolve())
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
            if os.path.basename(argv0) not in (b"git", b"git.exe") and not argv0.startswith(b"git-"):
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == top or cwd.startswith(top + os.sep) or cwd.startswith(git_dir):
            found.append(int(entry.name))
    return found
