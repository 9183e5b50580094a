"""The repository that holds a workspace: :class:`GitRepo` (SPEC.md section 1).

Every call runs through the sealed runner (:mod:`memcli.git.run`): in the workspace folder
(as ``git -C`` would), repository-local variables dropped, never prompting, git's messages
in the C locale. Old versions and commits per path are read by :mod:`memcli.git.history`;
commits are made by :mod:`memcli.git.commit`; ``purge --history`` rewrites history with
:mod:`memcli.git.rewrite`.

Every call is the git command line, as a subprocess (GitPython is not used: importing it
alone cost about 80 ms, and its pure-Python index about 0.45 s a commit on a 10,000-memory
repository against 0.05 s for git itself). When git has no identity configured, a commit
is retried with the actor as author (``actor@memcli.invalid``).

Commits are path-limited, with ``git commit --only`` semantics, and crash-safe: whatever
the user has staged elsewhere stays staged and is not committed, and nothing of memcli's
is ever left staged (``memcli.git.commit`` builds the commit beside the index). No
hook runs, as with ``--no-verify``: the repository's pre-commit hooks are meant for the
user's own code, not for memory files that memcli has already validated.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from memcli.errors import GitFailed
from memcli.git import run as runner
from memcli.git.commit import STATE_MARKERS
from memcli.git.log import ENTRY_FORMAT, Entry, parse_entry
from memcli.git.run import first_line, seal_environment


class GitRepo:
    """The git repository that holds a workspace (its own, or an enclosing project's).

    Args:
        workspace: the workspace folder.

    Raises:
        GitFailed: ``workspace`` is not inside a git work tree.
    """

    #: Sign every commit memcli makes here with SSH (the store's ``[review] signing = "ssh"``;
    #: ``service.Ctx.git`` sets it). Otherwise a commit is signed when ``commit.gpgsign`` says so.
    sign_ssh = False
    #: The cache file of git's settings here (``memcli.git.identity``), which a commit reads its
    #: settings from (``service.Ctx.history`` sets it); None: a commit asks git.
    config_cache: Path | None = None

    def __init__(self, workspace: Path) -> None:
        seal_environment()
        self.workspace = workspace
        names = ["index", *(name for name, _, _ in STATE_MARKERS), "rebase-apply/applying"]
        try:  # one git call: the per-worktree and common git folders, the work tree, the workspace's
            # prefix, every path git keeps its state in
            out = self.run("rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
                           "--show-toplevel", "--show-prefix", *(arg for name in names for arg in ("--git-path", name)))
        except GitFailed:
            raise GitFailed(f"{workspace} is not inside a git repository",
                            hint="run `git init` there, or `memcli init` to set it up") from None
        lines = out.split("\n")
        self.git_dir = Path(lines[0])
        #: The git folder shared by every worktree of the repository (``--git-common-dir``).
        self.common_dir = Path(lines[1])
        self._toplevel = Path(lines[2])
        self._prefix = lines[3]
        self._git_paths = dict(zip(names, (Path(line) for line in lines[4:])))

    @staticmethod
    def init(folder: Path, own: bool = False, branch: str | None = None) -> bool:
        """Run ``git init`` in ``folder`` unless it is already inside a work tree.

        Args:
            folder: an existing folder, or one to create (with its parents).
            own: the folder gets a repository of its own unless it is the top of one, even
                inside another work tree (a personal store under a home folder kept in git).
            branch: the first branch's name (git's ``init.defaultBranch`` when None).

        Returns:
            True when a new repository was created.

        Raises:
            GitFailed: git cannot be run, or ``git init`` failed.
        """
        seal_environment()
        if own:
            if (folder / ".git").exists():
                return False
        elif folder.is_dir() and runner.run(("rev-parse", "--git-dir"), folder).returncode == 0:
            return False
        folder.mkdir(parents=True, exist_ok=True)
        runner.output(("init", "-q", *(["--initial-branch", branch] if branch else [])), folder)
        return True

    def run(self, *args: str, env: dict[str, str] | None = None, binary: bool = False) -> Any:
        """Run ``git ARGS`` in the workspace folder; its stdout without the final newline.

        Args:
            env: extra environment variables.
            binary: return stdout as bytes, exactly as git wrote it (file contents); else text.

        Returns:
            ``str`` (``bytes`` with ``binary``).

        Raises:
            GitFailed: git exited non-zero (the message is git's first error line) or cannot be started.
        """
        proc = runner.run(args, self.workspace, env=env, text=not binary)
        runner.check(proc, args)
        return proc.stdout if binary else proc.stdout.rstrip("\n")

    def git_path(self, name: str) -> Path:
        """Where git keeps ``name`` for this worktree (``git rev-parse --git-path NAME``)."""
        known = self._git_paths.get(name)
        return known if known is not None else Path(self.run("rev-parse", "--path-format=absolute",
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
               date: str | None = None, on_commit: Callable[[str, bytes], None] | None = None,
               split_index: bool = False, branch: str | None = None) -> str:
        """Commit exactly ``paths`` (added, changed or deleted) with ``message``, crash-safe.

        The shared index is written only by one rename at the end, with only ``paths``
        updated: what the user has staged stays staged and is not committed, and a kill
        at any instant leaves nothing of memcli's staged (see ``memcli.git.commit``).

        Args:
            paths: absolute paths inside the workspace.
            message: the full commit message (subject, body, trailers); passed on stdin.
            actor: used as the author only when git has no ``user.name``/``user.email``.
            timeout: seconds to wait for another process's ``index.lock``.
            date: author and committer date (RFC 3339), so history follows memcli's clock
                (``$MEMCLI_NOW``); git's own clock when None.
            on_commit: ``on_commit(commit, index_checksum)`` just before the branch moves,
                for a journal that ``memcli.git.commit.recover`` reads after a crash.
            split_index: keep the shared index split, so the update writes only the changed
                entries (for a repository no one else stages in; see ``memcli.git.commit.commit``).
            branch: the branch ``memcli.git.commit.check_state`` gave the caller for this
                write; None: checked here (one more git process).

        Returns:
            The new commit's full hash (``HEAD``'s when the files already equal it).

        Raises:
            UnsafeGitState: a detached HEAD, or a rebase, merge, cherry-pick, revert, bisect
                or ``am`` in progress.
            GitLocked: ``index.lock`` is held past ``timeout`` or is stale.
            GitFailed: git refused (the caller restores the files).
        """
        from memcli.git import commit as committing

        rels = [os.path.relpath(p, self.workspace) for p in paths]
        env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
        return committing.commit(self, rels, message, env=env, fallback_env=self._fallback_identity(actor),
                                timeout=timeout, on_commit=on_commit, split_index=split_index, branch=branch)

    # --- paths and revisions ----------------------------------------------------------------

    def toplevel(self) -> Path:
        """The repository's top folder (the workspace itself, or the project holding it)."""
        return self._toplevel

    def head_time(self) -> int | None:
        """The committer time of ``HEAD`` (seconds since the epoch), or None before the first commit."""
        status, out, _ = self.raw("log", "-1", "--format=%ct", "HEAD")
        text = out.decode("ascii", "replace").strip()
        return int(text) if status == 0 and text.isdigit() else None

    def unborn(self) -> bool:
        """True before the first commit: ``HEAD`` names a branch that does not exist yet.

        A ``HEAD`` whose commit object is missing is not unborn (git still reads the ref).

        Raises:
            GitFailed: git cannot be started.
        """
        return self.raw("rev-parse", "-q", "--verify", "HEAD")[0] != 0

    def top_rel(self, path: Path) -> str:
        """``path`` relative to the top folder (for ``REV:PATH``); pathspecs are relative to the workspace."""
        return Path(os.path.relpath(path.parent.resolve() / path.name, self.toplevel())).as_posix()

    def raw(self, *args: str, input: bytes | None = None,
            env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
        """Run ``git ARGS`` in the workspace folder; ``(status, stdout bytes, stderr text)``, never raises on status.

        For the commands whose non-zero status is an answer (``merge-base --is-ancestor``,
        ``rev-parse --verify``, ``symbolic-ref -q``); the caller tells a failure apart.

        Args:
            input: bytes for git's stdin (path lists, messages: any size, never an argument).
            env: extra environment variables.

        Raises:
            GitFailed: git cannot be started.
        """
        proc = runner.run(args, self.workspace, input=input, env=env)
        return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")

    @property
    def prefix(self) -> str:
        """The workspace's folder relative to the repository's top (``""`` or ``"sub/dir/"``)."""
        if not hasattr(self, "_prefix"):
            self._prefix = self.run("rev-parse", "--show-prefix")
        return self._prefix

    def resolve(self, rev: str) -> str:
        """The full hash of the commit that ``rev`` names (a hash, branch, tag, ``HEAD~2`` …).

        Raises:
            RevisionNotFound: ``rev`` is empty, malformed or names no commit here.
        """
        from memcli.errors import RevisionNotFound

        text = (rev or "").strip()
        if text and not text.startswith("-") and "\n" not in text:
            status, out, _ = self.raw("rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}")
            if status == 0:
                return out.decode().strip()
        from memcli.text.secrets import shown

        raise RevisionNotFound(f"unknown revision {shown(text)}: no such commit, branch or tag in this repository",
                               hint="list commits with `memcli log` or `git log --oneline`")

    def log(self, path: Path | None = None, memory_id: str | None = None, limit: int = 50,
            keep: Callable[[Entry], bool] | None = None) -> list[Entry]:
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
        proc = runner.run(("log", f"--format={ENTRY_FORMAT}%x1e", *which), self.workspace, text=True)
        if proc.returncode != 0:
            said = proc.stderr.strip()
            if "does not have any commits yet" in said or "unknown revision or path" in said and "HEAD" in said:
                return []  # no commits yet
            # a missing or damaged object: never "no history", which would read as an empty audit trail
            raise GitFailed(f"git log failed: {first_line(said) or proc.returncode}",
                            hint="the repository may be damaged: run `git fsck`, then fetch the missing objects "
                                 "from a clone or a remote")
        out = proc.stdout.rstrip("\n")
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
