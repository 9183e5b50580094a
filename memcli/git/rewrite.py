"""Rewriting git history to purge one memory (``memcli purge ID --history``).

The rewrite is done by git-filter-repo (PyPI ``git-filter-repo``), the tool git's own
documentation recommends over ``git filter-branch``. It runs in a child process
(``python -m memcli.git.rewrite``, the job as JSON on stdin), because filter-repo prints
progress on stdout and keeps module-level state: memcli's own stdout stays clean.

What it does, in the repository's top folder:

* ``--invert-paths --path P`` for every path that ever held the memory's file: the file
  leaves every commit of every ref (branches, tags, remote-tracking refs);
* ``--prune-empty never``: the commits that become empty stay, with their subjects and
  ``Memcli-*`` trailers (ids, scopes, actors; never text), so the audit trail still shows
  that the memory was written and when it was purged (``memcli log ID``);
* a message callback (:func:`scrub`) takes the memory's text out of commit and tag
  messages: memcli puts a memory's text in the body of the commits that write it, and
  batch commits list ``- ID: first line``;
* ``--partial``: filter-repo would otherwise turn ``refs/remotes/origin/*`` into local
  branches and delete the ``origin`` remote (its "fresh clone" workflow); with it, every
  ref is still rewritten but remotes and remote-tracking refs stay as they were. The
  clean-up that ``--partial`` turns off is done here instead: reflogs expired, ``git gc
  --prune=now``, ``refs/original/*`` and ``ORIG_HEAD`` removed, so the old objects are gone;
* ``--force``: filter-repo refuses a repository that is not a fresh clone; memcli makes
  its own checks first (:func:`check_rewritable`): no uncommitted change to a tracked
  file, no stash (its reflog would be lost), a single work tree.

Commit hashes that filter-repo can map are rewritten inside messages too (so an undo's
``Memcli-Undoes`` trailer still names the right commit). The metadata filter-repo leaves in
``.git/filter-repo/`` (old -> new commit map) holds hashes only; its ``already_ran``
marker is removed so a later run is not taken for a continuation (which would prompt).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memcli import testpoint
from memcli.errors import GitFailed, HistoryConflict
from memcli.git.history import History
from memcli.git.run import environment

#: What replaces the memory's text in commit messages.
PURGED = "[text removed by memcli purge]"
#: A text (or first line) shorter than this is only removed from commits that name the
#: memory in their ``Memcli-Id`` trailer, never by literal search: a short phrase such as
#: "use pnpm" would also be cut out of unrelated messages.
MIN_LITERAL_CHARS = 12
#: memcli cuts a long text in a commit body at this many characters (``service.write._message``).
BODY_CHARS = 2000
#: memcli lists batch members as ``- ID: FIRST LINE`` cut at this many characters.
LINE_CHARS = 100


@dataclass
class Rewritten:
    """The outcome of a history rewrite.

    Attributes:
        head: the new ``HEAD`` commit.
        paths: the paths removed from history, relative to the top folder.
        remotes: the repository's remotes (each needs a forced push).
        project: True when the repository is larger than the workspace (a project's repo).
    """

    head: str
    paths: list[str]
    remotes: list[str] = field(default_factory=list)
    project: bool = False


def available() -> bool:
    """True when git-filter-repo can be imported by this Python."""
    import importlib.util

    return importlib.util.find_spec("git_filter_repo") is not None


def check_rewritable(repo: History) -> None:
    """Refuse a rewrite that would lose the user's work.

    Raises:
        HistoryConflict: uncommitted changes to tracked files, stashed changes, or more
            than one work tree.
        GitFailed: git-filter-repo is not installed.
    """
    if not available():
        raise GitFailed("git-filter-repo is not installed; nothing was written",
                        hint="install it with `pip install git-filter-repo` in memcli's environment")
    dirty = repo.uncommitted()
    if dirty:
        more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
        raise HistoryConflict(f"the repository has uncommitted changes ({dirty[0]}{more}); history rewrite refused",
                              hint="commit or discard them first: the rewrite resets the work tree to the new HEAD")
    if repo.run("stash", "list"):
        raise HistoryConflict("the repository has stashed changes, which a history rewrite would lose",
                              hint="apply or drop them first (`git stash list`)")
    trees = [line for line in repo.run("worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]
    if len(trees) > 1:
        raise HistoryConflict(f"the repository has {len(trees)} work trees; history rewrite refused",
                              hint="remove the others first (`git worktree list`, `git worktree remove PATH`)")


def paths_of(repo: History, memory_id: str, current: Path | None) -> list[str]:
    """Every path (relative to the top folder) that held the memory's file in any ref's history.

    That is its current path (None: the file is not in this repository, e.g. it moved to a
    personal store) and every committed file whose name starts with the id (memcli names
    files ``<id>[-slug].md``), wherever it lay.
    """
    out = repo.run("-c", "core.quotePath=false", "log", "--all", "--format=", "--name-only", "--no-renames")
    found = {repo.top_rel(current)} if current is not None else set()
    found.update(name for name in out.splitlines() if Path(name).name.lower().startswith(memory_id + "-")
                 or Path(name).name.lower() == memory_id + ".md")
    return sorted(found)


def texts_of(repo: History, paths: list[str]) -> set[str]:
    """Every text the memory had in history (each version's body, stripped, ``\\n`` line endings)."""
    from memcli import fileformat
    from memcli.errors import InvalidMemoryFile

    texts: set[str] = set()
    for blob in blobs_of(repo, paths):
        data = repo.run("cat-file", "blob", blob, binary=True)
        try:
            body = fileformat.parse(data, "history", round_trip=False).body
        except InvalidMemoryFile:
            body = data.decode("utf-8", "replace")
        texts.add(body.replace("\r\n", "\n").strip())
    return {t for t in texts if t}


def blobs_of(repo: History, paths: list[str]) -> set[str]:
    """The hashes of every version of ``paths`` that any ref's history holds (the objects a purge must remove)."""
    if not paths:
        return set()
    out = repo.run("log", "--all", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", *(
        f":(top){p}" for p in paths))
    return {h for line in out.splitlines() if line.startswith(":") for h in line.split()[2:4] if h.strip("0")}


def still_held(repo: History, memory_id: str, texts: set[str], blobs: set[str]) -> str | None:
    """What of the memory the repository still holds after a purge, in a few words; None when nothing.

    Checked: a file of the id in any ref's history (:func:`paths_of`), one of its old
    versions (``blobs``, from :func:`blobs_of` before the rewrite) still in the object store
    (reachable or not, reflogs included), and a text (the needles :func:`scrub` removes) in a
    commit or tag message of any ref.
    """
    held = paths_of(repo, memory_id, None)
    if held:
        return f"the file {held[0]} in old commits"
    if blobs:
        status, out, _ = repo.raw("cat-file", "--batch-check", input="".join(f"{b}\n" for b in sorted(blobs)).encode())
        if any(not line.endswith(b" missing") for line in out.splitlines() if line.strip()):
            return "old versions of its file in the object store (reflogs or unpruned objects)"
    messages = repo.run("log", "--all", "--format=%B") + repo.run("for-each-ref", "--format=%(contents)",
                                                                     "refs/tags")
    if any(needle in messages for needle in _needles(texts)):
        return "its text in a commit or tag message"
    return None


def _needles(texts: set[str] | list[str]) -> list[str]:
    """The strings :func:`scrub` replaces wherever they appear, longest first."""
    needles = set()
    for t in texts:
        first = t.splitlines()[0] if t else ""
        needles.update({t, t[:BODY_CHARS], first, first[:LINE_CHARS]})
    return sorted((n for n in needles if len(n) >= MIN_LITERAL_CHARS), key=len, reverse=True)


def scrub(message: bytes, memory_id: str, texts: list[str]) -> bytes:
    """A commit message with the memory's text taken out.

    In a memcli commit whose ``Memcli-Id`` trailer names only this memory, the whole body
    (between subject and trailers) becomes :data:`PURGED`; in a batch commit, the line
    ``- ID: …`` does. Then every text in ``texts`` (and its first 2,000 characters, and its
    first line cut at 100) of at least :data:`MIN_LITERAL_CHARS` characters is replaced
    wherever it appears. Subject and trailers hold ids, scopes and names, never text.

    Args:
        message: the raw message (git's bytes).
        memory_id: the purged memory's id.
        texts: its texts, as :func:`texts_of` returns them.
    """
    text = message.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    ids = [v for line in lines if line.startswith("Memcli-Id:") for v in line.split(":", 1)[1].split()]
    if memory_id in ids:
        end = len(lines)
        while end > 0 and not lines[end - 1].strip():
            end -= 1
        start = end
        while start > 0 and lines[start - 1].startswith("Memcli-"):
            start -= 1
        if len(ids) == 1 and any(line.strip() for line in lines[1:start]):
            lines = [lines[0], "", PURGED, "", *lines[start:]]
        else:
            lines = [f"- {memory_id}: {PURGED}" if line.startswith(f"- {memory_id}:") else line for line in lines]
        text = "\n".join(lines)
    for needle in _needles(texts):
        text = text.replace(needle, PURGED)
    return text.encode("utf-8", "surrogateescape")


def rewrite(repo: History, paths: list[str], memory_id: str, texts: set[str], workspace: Path) -> Rewritten:
    """Remove ``paths`` from every commit and the texts from every message; then drop the old objects.

    The caller holds the workspace lock and has run :func:`check_rewritable`.

    Args:
        paths: paths relative to the top folder (:func:`paths_of`).
        memory_id: the purged memory's id.
        texts: its texts (:func:`texts_of`).
        workspace: the workspace folder (to tell whether the repository is a larger project's).

    Raises:
        GitFailed: git-filter-repo or the clean-up failed (history may be partly rewritten;
            the message says which step).
    """
    import subprocess

    if not paths:  # --invert-paths with no --path would keep nothing: never run it so
        raise ValueError("rewrite() needs at least one path")
    top = repo.toplevel()
    marker = Path(repo.run("rev-parse", "--path-format=absolute", "--git-common-dir")) / "filter-repo" / "already_ran"
    marker.unlink(missing_ok=True)
    job = json.dumps({"paths": paths, "id": memory_id, "texts": sorted(texts)})
    proc = subprocess.run([sys.executable, "-m", "memcli.git.rewrite"], cwd=top, input=job, capture_output=True,
                          text=True, env=environment())
    marker.unlink(missing_ok=True)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        raise GitFailed(f"git-filter-repo failed: {lines[-1] if lines else proc.returncode}; the purge commit "
                        "was made but history still holds the text",
                        hint=f"run `memcli purge {memory_id} --history --yes` again to finish (`memcli doctor` "
                             "names the unfinished purge)")
    testpoint.reached("rewrite:filtered")
    for ref in repo.run("for-each-ref", "--format=%(refname)", "refs/original/").splitlines():
        repo.run("update-ref", "-d", ref)
    try:
        repo.run("update-ref", "-d", "ORIG_HEAD")  # filter-repo's reset --hard left it on the old HEAD
    except GitFailed:
        pass
    repo.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    repo.run("gc", "--prune=now", "--quiet")
    return Rewritten(head=repo.run("rev-parse", "HEAD"), paths=paths,
                     remotes=repo.run("remote").split(), project=top != workspace.resolve())


def _main() -> None:
    """Child process: run git-filter-repo on the job read from stdin (see :func:`rewrite`)."""
    job = json.loads(sys.stdin.read())
    import git_filter_repo as fr

    argv = ["--force", "--partial", "--quiet", "--prune-empty", "never", "--invert-paths"]
    for path in job["paths"]:
        argv += ["--path", path]
    args = fr.FilteringOptions.parse_args(argv)
    texts = job["texts"]

    def callback(message: bytes) -> bytes:
        testpoint.reached("rewrite:filtering-child")
        return scrub(message, job["id"], texts)

    fr.RepoFilter(args, message_callback=callback).run()


if __name__ == "__main__":
    _main()
