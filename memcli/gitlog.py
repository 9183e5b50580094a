"""The git layer: a sealed environment, path-limited commits, the memcli log (SPEC.md section 1).

Old versions and commits per path are read by ``memcli.githistory``; ``purge --history``
rewrites history with ``memcli.gitrewrite``.

GitPython creates and finds repositories (``init``) and reads history. Every write
runs the git command line directly, as a subprocess: importing GitPython alone costs
about 80 ms (119 modules, measured here), a third of the 0.3 s that SPEC.md section 8
allows ``remember`` with its commit. GitPython's pure-Python index
(``index.add``/``index.commit``) is never used: on a 10,000-memory repository it costs
about 0.45 s a commit against 0.05 s for git itself.

Sealing: git reads repository-local variables (``git rev-parse --local-env-vars``:
``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` …) that a surrounding hook or script
may have set; every child (ours and GitPython's) inherits ``os.environ``, so this module
removes them from the memcli process's own environment before the first git call.
Every call runs in the workspace folder (as ``git -C`` would), never prompts, and reads
git's messages in the C locale. When git has no identity configured, the commit is
retried with the actor as author (``actor@memcli.invalid``).

Commits are path-limited, with ``git commit --only`` semantics, and crash-safe: whatever
the user has staged elsewhere stays staged and is not committed, and nothing of memcli's
is ever left staged (``memcli.gitcommit`` builds the commit in a temporary index). No
hook runs, as with ``--no-verify``: the repository's pre-commit hooks are meant for the
user's own code, not for memory files that memcli has already validated.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import GitFailed

#: Repository-local variables, as listed by ``git rev-parse --local-env-vars`` (git 2.39).
LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
)
TRAILER_PREFIX = "Memcli-"


def seal_environment() -> None:
    """Remove repository-local git variables from this process's environment; never prompt."""
    for name in LOCAL_ENV_VARS:
        os.environ.pop(name, None)
    os.environ["GIT_TERMINAL_PROMPT"] = "0"
    os.environ.setdefault("GIT_EDITOR", "true")


@dataclass
class Touched:
    """A file a commit (or the working tree) changed: ``kind`` is git's letter (A, M, D, R, C, T).

    ``path`` and ``old_path`` (renames and copies) are relative to the workspace.
    """

    kind: str
    path: str
    old_path: str | None = None


@dataclass
class Entry:
    """One commit in ``git log``: hash, time, author, subject, ``Memcli-*`` trailers, message text.

    ``trailers`` keys are lower case without the prefix (``op``, ``id``, ``actor`` …); empty
    for a commit memcli did not make. ``text`` is the message body without its trailers
    (memcli puts the memory's text there). ``touched`` is filled by :meth:`GitRepo.commits`.
    """

    commit: str
    at: str
    author: str
    subject: str
    trailers: dict[str, str]
    text: str = ""
    touched: list[Touched] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"commit": self.commit, "at": self.at, "author": self.author, "subject": self.subject,
                "trailers": self.trailers, "text": self.text}


#: ``git log`` format of an :class:`Entry`: six fields split by ``\x1f``.
ENTRY_FORMAT = "%H%x1f%aI%x1f%an%x1f%s%x1f%(trailers:only,unfold)%x1f%b"


def parse_entry(fields: list[str]) -> Entry:
    """An :class:`Entry` from the six fields of ``ENTRY_FORMAT``."""
    fields = [f.strip("\n") for f in fields] + [""] * (6 - len(fields))
    trailers = {}
    for line in fields[4].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.startswith(TRAILER_PREFIX):
            trailers[key[len(TRAILER_PREFIX):].lower()] = value.strip()
    body = [line for line in fields[5].splitlines() if not line.startswith(TRAILER_PREFIX)]
    return Entry(fields[0], fields[1], fields[2], fields[3], trailers, "\n".join(body).strip())


class GitRepo:
    """The git repository that holds a workspace (its own, or an enclosing project's).

    Args:
        workspace: the workspace folder.

    Raises:
        GitFailed: ``workspace`` is not inside a git work tree.
    """

    def __init__(self, workspace: Path) -> None:
        seal_environment()
        self.workspace = workspace
        from memcli.gitcommit import STATE_MARKERS

        names = ["index", *(name for name, _, _ in STATE_MARKERS), "rebase-apply/applying"]
        try:  # one git call: the per-worktree git folder and every path git keeps its state in
            out = self._run("rev-parse", "--path-format=absolute", "--absolute-git-dir",
                            *(arg for name in names for arg in ("--git-path", name)))
        except GitFailed:
            raise GitFailed(f"{workspace} is not inside a git repository",
                            hint="run `git init` there, or `memcli init` to set it up") from None
        lines = out.split("\n")
        self.git_dir = Path(lines[0])
        self._git_paths = dict(zip(names, (Path(line) for line in lines[1:])))

    @staticmethod
    def init(folder: Path, own: bool = False) -> bool:
        """Run ``git init`` in ``folder`` unless it is already inside a work tree (GitPython).

        Args:
            own: the folder gets a repository of its own unless it is the top of one, even
                inside another work tree (a personal store under a home folder kept in git).

        Returns:
            True when a new repository was created.
        """
        seal_environment()
        import git

        if own:
            if (folder / ".git").exists():
                return False
            git.Repo.init(folder)
            return True
        try:
            git.Repo(folder, search_parent_directories=True)
            return False
        except git.InvalidGitRepositoryError:
            git.Repo.init(folder)
            return True

    def _run(self, *args: str, env: dict | None = None, binary: bool = False):  # noqa: ANN202 - str, or bytes
        """Run ``git ARGS`` in the workspace folder; stdout without the final newline.

        Args:
            binary: return stdout as bytes, exactly as git wrote it (file contents).

        Raises:
            GitFailed: git exited non-zero (the message is git's first error line).
        """
        import subprocess

        try:
            proc = subprocess.run(["git", *args], cwd=self.workspace, capture_output=True, text=not binary,
                                  env={**os.environ, "LC_ALL": "C", **(env or {})}, stdin=subprocess.DEVNULL)
        except OSError as err:
            raise GitFailed(f"cannot run git: {err.strerror}", hint="install git and put it on PATH") from None
        if proc.returncode != 0:
            raise GitFailed(f"git {args[0]} failed: {first_line(proc.stderr) or proc.returncode}")
        return proc.stdout if binary else proc.stdout.rstrip("\n")

    def git_path(self, name: str) -> Path:
        """Where git keeps ``name`` for this worktree (``git rev-parse --git-path NAME``)."""
        known = self._git_paths.get(name)
        return known if known is not None else Path(self._run("rev-parse", "--path-format=absolute",
                                                              "--git-path", name))

    def index_path(self) -> Path:
        """The shared index file (``.git/index``, or a linked worktree's own)."""
        return self.git_path("index")

    def index_lock(self) -> Path:
        """git's lock on the shared index (``index.lock`` beside it)."""
        index = self.index_path()
        return index.with_name(index.name + ".lock")

    @staticmethod
    def _fallback_identity(actor: str) -> dict[str, str]:
        """Author and committer for a machine where git has no ``user.name``/``user.email``."""
        name = actor or "memcli"
        email = f"{re.sub(r'[^A-Za-z0-9._-]', '-', name)}@memcli.invalid"
        return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}

    def commit(self, paths: list[Path], message: str, *, actor: str, timeout: float = 10.0,
               date: str | None = None, on_commit=None) -> str:  # noqa: ANN001
        """Commit exactly ``paths`` (added, changed or deleted) with ``message``, crash-safe.

        The shared index is written only by one rename at the end, with only ``paths``
        updated: what the user has staged stays staged and is not committed, and a kill
        at any instant leaves nothing of memcli's staged (see ``memcli.gitcommit``).

        Args:
            paths: absolute paths inside the workspace.
            message: the full commit message (subject, body, trailers); passed on stdin.
            actor: used as the author only when git has no ``user.name``/``user.email``.
            timeout: seconds to wait for another process's ``index.lock``.
            date: author and committer date (RFC 3339), so history follows memcli's clock
                (``$MEMCLI_NOW``); git's own clock when None.
            on_commit: ``on_commit(commit, index_checksum)`` just before the branch moves,
                for a journal that ``gitcommit.recover`` reads after a crash.

        Returns:
            The new commit's full hash (``HEAD``'s when the files already equal it).

        Raises:
            UnsafeGitState: a detached HEAD, or a rebase, merge, cherry-pick, revert, bisect
                or ``am`` in progress.
            GitLocked: ``index.lock`` is held past ``timeout`` or is stale.
            GitFailed: git refused (the caller restores the files).
        """
        from memcli import gitcommit

        rels = [os.path.relpath(p, self.workspace) for p in paths]
        env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
        return gitcommit.commit(self, rels, message, env=env, fallback_env=self._fallback_identity(actor),
                                timeout=timeout, on_commit=on_commit)

    # --- paths and revisions ----------------------------------------------------------------

    def toplevel(self) -> Path:
        """The repository's top folder (the workspace itself, or the project holding it)."""
        if getattr(self, "_toplevel", None) is None:
            self._toplevel = Path(self._run("rev-parse", "--show-toplevel"))
        return self._toplevel

    def head_time(self) -> int | None:
        """The committer time of ``HEAD`` (seconds since the epoch), or None before the first commit."""
        status, out, _ = self._raw("log", "-1", "--format=%ct", "HEAD")
        text = out.decode("ascii", "replace").strip()
        return int(text) if status == 0 and text.isdigit() else None

    def top_rel(self, path: Path) -> str:
        """``path`` relative to the top folder (for ``REV:PATH``); pathspecs are relative to the workspace."""
        return Path(os.path.relpath(path.parent.resolve() / path.name, self.toplevel())).as_posix()

    def _raw(self, *args: str, input: bytes | None = None,  # noqa: A002
             env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
        """Run ``git ARGS`` in the workspace folder; ``(status, stdout bytes, stderr text)``, never raises on status.

        Args:
            input: bytes for git's stdin (path lists, messages: any size, never an argument).
            env: extra environment variables.

        Raises:
            GitFailed: git cannot be started.
        """
        import subprocess

        try:
            proc = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=self.workspace,
                                  capture_output=True, input=input, env={**os.environ, "LC_ALL": "C", **(env or {})},
                                  stdin=None if input is not None else subprocess.DEVNULL)
        except OSError as err:
            raise GitFailed(f"cannot run git: {err.strerror}", hint="install git and put it on PATH") from None
        return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")

    @property
    def prefix(self) -> str:
        """The workspace's folder relative to the repository's top (``""`` or ``"sub/dir/"``)."""
        if not hasattr(self, "_prefix"):
            self._prefix = self._run("rev-parse", "--show-prefix")
        return self._prefix

    def resolve(self, rev: str) -> str:
        """The full hash of the commit that ``rev`` names (a hash, branch, tag, ``HEAD~2`` …).

        Raises:
            RevisionNotFound: ``rev`` is empty, malformed or names no commit here.
        """
        from memcli.errors import RevisionNotFound

        text = (rev or "").strip()
        if text and not text.startswith("-") and "\n" not in text:
            status, out, _ = self._raw("rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}")
            if status == 0:
                return out.decode().strip()
        from memcli.text.secrets import shown

        raise RevisionNotFound(f"unknown revision {shown(text)}: no such commit, branch or tag in this repository",
                               hint="list commits with `memcli log` or `git log --oneline`")

    def log(self, path: Path | None = None, memory_id: str | None = None, limit: int = 50,
            keep=None) -> list[Entry]:  # noqa: ANN001
        """memcli commits touching ``path`` (default: the workspace), newest first.

        Args:
            path: limit to this file or folder.
            memory_id: keep only commits whose ``Memcli-Id`` or ``Memcli-Related`` trailer names it.
            limit: at most this many entries.
            keep: optional ``keep(entry) -> bool`` filter, applied before ``limit``.
        """
        target = os.path.relpath(path or self.workspace, self.workspace)
        # A purge --history leaves commits empty, and a path-limited log skips empty commits:
        # one memory's commits are found by their message (trailers checked below), and a
        # workspace that is the repository's top folder needs no path limit.
        which = ["--", target]
        if path is None and memory_id:
            which = ["--fixed-strings", f"--grep={memory_id}"]
        elif path is None and not self.prefix:
            which = []
        import git

        try:  # GitPython's wrapper
            out = git.Git(str(self.workspace)).log(f"--format={ENTRY_FORMAT}%x1e", *which)
        except git.GitCommandError as err:
            said = str(err.stderr or "").strip().strip("'").removeprefix("stderr: ").strip().strip("'")
            if "does not have any commits yet" in said or "unknown revision or path" in said and "HEAD" in said:
                return []  # no commits yet
            # a missing or damaged object: never "no history", which would read as an empty audit trail
            raise GitFailed(f"git log failed: {first_line(said) or err.status}",
                            hint="the repository may be damaged: run `git fsck`, then fetch the missing objects "
                                 "from a clone or a remote") from None
        entries = []
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) < 5:
                continue
            entry = parse_entry(fields)
            if not entry.trailers:
                continue
            trailers = entry.trailers
            if memory_id and memory_id not in (*trailers.get("id", "").split(), *trailers.get("related", "").split()):
                continue
            if keep is not None and not keep(entry):
                continue
            entries.append(entry)
            if len(entries) >= limit:
                break
        return entries


def summary(ids: list[str], scopes: list[str], actor: str) -> str:
    """A commit subject's words after the operation: ``ID (SCOPES) by ACTOR``, or ``N memories (SCOPES) by ACTOR``."""
    what = ids[0] if len(ids) == 1 else f"{len(ids)} memories"
    return f"{what} ({' '.join(scopes)}) by {actor}"


def message(op: str, summary: str, trailers: dict[str, str | None], body: str = "") -> str:
    """A commit message: ``memcli: OP SUMMARY``, an optional body, then ``Memcli-*`` trailers."""
    lines = [f"memcli: {op} {summary}".strip()]
    if body.strip():
        lines += ["", body.strip()]
    lines += [""] + [f"{TRAILER_PREFIX}{k}: {v}" for k, v in trailers.items() if v]
    return "\n".join(lines) + "\n"


def first_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("stderr:"):
            return line.removeprefix("fatal: ").removeprefix("error: ")
        if line.startswith("stderr:"):
            rest = line[len("stderr:"):].strip().strip("'")
            if rest:
                return rest.removeprefix("fatal: ").removeprefix("error: ")
    return ""
