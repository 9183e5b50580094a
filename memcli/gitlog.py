"""The git layer: a sealed environment, path-limited commits, history (SPEC.md section 1).

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

Commits are path-limited (``git commit --only -- PATHS``): whatever the user has staged
elsewhere stays staged and is not committed. ``--no-verify`` skips the repository's
pre-commit hooks, which are meant for the user's own code, not for memory files that
memcli has already validated.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import GitFailed, GitLocked

#: Repository-local variables, as listed by ``git rev-parse --local-env-vars`` (git 2.39).
LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
)
#: A git ``index.lock`` older than this (seconds) with no change is reported as stale.
STALE_LOCK_SECONDS = 600
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
_ENTRY_FORMAT = "%H%x1f%aI%x1f%an%x1f%s%x1f%(trailers:only,unfold)%x1f%b"


def _entry(fields: list[str]) -> Entry:
    """An :class:`Entry` from the six fields of ``_ENTRY_FORMAT``."""
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
        try:
            self.git_dir = Path(self._run("rev-parse", "--absolute-git-dir"))
        except GitFailed:
            raise GitFailed(f"{workspace} is not inside a git repository",
                            hint="run `git init` there, or `memcli init` to set it up") from None

    @staticmethod
    def init(folder: Path) -> bool:
        """Run ``git init`` in ``folder`` unless it is already inside a work tree (GitPython).

        Returns:
            True when a new repository was created.
        """
        seal_environment()
        import git

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
            raise GitFailed(f"git {args[0]} failed: {_first_line(proc.stderr) or proc.returncode}")
        return proc.stdout if binary else proc.stdout.rstrip("\n")

    def _index_lock(self) -> Path:
        return self.git_dir / "index.lock"

    def _wait_for_index(self, timeout: float) -> None:
        lock = self._index_lock()
        deadline = time.monotonic() + timeout
        delay = 0.02
        while lock.exists():
            try:
                age = time.time() - lock.stat().st_mtime
            except FileNotFoundError:
                break
            if age > STALE_LOCK_SECONDS:
                raise GitLocked(
                    f"git's {lock} is {age / 60:.0f} minutes old and looks stale; nothing was written",
                    hint="if no git process is running, remove it (`rm " + str(lock) + "`) and retry")
            if time.monotonic() >= deadline:
                raise GitLocked(f"git's {lock} is held by another git process; nothing was written",
                                hint=f"retry when it finishes (waited {timeout:g} s)")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    @staticmethod
    def _fallback_identity(actor: str) -> dict[str, str]:
        """Author and committer for a machine where git has no ``user.name``/``user.email``."""
        name = actor or "memcli"
        email = f"{re.sub(r'[^A-Za-z0-9._-]', '-', name)}@memcli.invalid"
        return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}

    def commit(self, paths: list[Path], message: str, *, actor: str, timeout: float = 10.0,
               date: str | None = None) -> str:
        """Commit exactly ``paths`` (added, changed or deleted) with ``message``.

        Args:
            paths: absolute paths inside the workspace.
            message: the full commit message (subject, body, trailers).
            actor: used as the author only when git has no ``user.name``/``user.email``.
            timeout: seconds to wait for another process's ``index.lock``.
            date: author and committer date (RFC 3339), so history follows memcli's clock
                (``$MEMCLI_NOW``); git's own clock when None.

        Returns:
            The new commit's full hash.

        Raises:
            GitLocked: ``index.lock`` is held past ``timeout`` or is stale.
            GitFailed: git refused (the caller restores the files).
        """
        rels = [os.path.relpath(p, self.workspace) for p in paths]
        env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
        for attempt in range(3):
            self._wait_for_index(timeout)
            try:
                present = [r for r, p in zip(rels, paths) if p.exists()]
                if present:
                    self._run("add", "--", *present)
                args = ("commit", "--only", "--no-verify", "--quiet", "-m", message, "--", *rels)
                try:
                    self._run(*args, env=env)
                except GitFailed as err:
                    if not any(s in err.message for s in ("identity unknown", "tell me who you are", "auto-detect", "empty ident")):
                        raise
                    self._run(*args, env={**env, **self._fallback_identity(actor)})
                return self._run("rev-parse", "HEAD")
            except GitFailed as err:
                self._unstage(present)
                if "index.lock" not in err.message or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _unstage(self, rels: list[str]) -> None:
        """Put the index entries of ``rels`` back to ``HEAD`` after a failed commit (best effort)."""
        if not rels:
            return
        try:
            self._run("reset", "-q", "--", *rels)
        except GitFailed:
            pass  # an unborn branch or a held lock: nothing more can be done here

    # --- old versions and local state, for rollback, undo and purge ------------------------

    def toplevel(self) -> Path:
        """The repository's top folder (the workspace itself, or the project holding it)."""
        if getattr(self, "_toplevel", None) is None:
            self._toplevel = Path(self._run("rev-parse", "--show-toplevel"))
        return self._toplevel

    def top_rel(self, path: Path) -> str:
        """``path`` relative to the top folder (for ``REV:PATH``); pathspecs are relative to the workspace."""
        return Path(os.path.relpath(path.parent.resolve() / path.name, self.toplevel())).as_posix()

    def resolve(self, rev: str) -> str:
        """The full hash of the commit ``rev`` names (a hash, branch, tag, ``HEAD~2`` …).

        Raises:
            RevisionNotFound: the repository holds no such commit.
        """
        from memcli.errors import RevisionNotFound

        if not rev.strip() or rev.startswith("-"):
            raise RevisionNotFound(f"unknown revision {rev!r}", hint="give a commit, branch or tag (see `git log`)")
        try:
            return self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        except GitFailed:
            raise RevisionNotFound(f"unknown revision {rev!r}",
                                   hint="give a commit, branch or tag that this repository holds (see `git log`)") \
                from None

    def parent(self, commit: str) -> str | None:
        """The first parent of ``commit`` (a full hash), or None for a root commit."""
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"{commit}^1")
        except GitFailed:
            return None

    def last_change(self, path: Path) -> str | None:
        """The newest commit on ``HEAD`` that changed ``path``, or None (never committed)."""
        try:
            return self._run("log", "-1", "--format=%H", "--", os.path.relpath(path, self.workspace)) or None
        except GitFailed:
            return None  # no commits yet

    def blob(self, commit: str, path: Path) -> bytes | None:
        """The bytes of ``path`` (absolute) as committed in ``commit``, or None when it was absent."""
        try:
            return self._run("cat-file", "blob", f"{commit}:{self.top_rel(path)}", binary=True)
        except GitFailed:
            return None

    def changed_files(self, commit: str) -> list[Path]:
        """Absolute paths of the files ``commit`` added, changed or deleted (against its first parent)."""
        out = self._run("diff-tree", "-r", "--root", "--no-renames", "--no-commit-id", "--name-only", "-z", commit)
        top, real = self.toplevel(), self.workspace.resolve()
        paths = [top / name for name in out.split("\0") if name]
        # as paths under ``self.workspace`` as given (it may be reached through a symbolic link)
        return [self.workspace / p.relative_to(real) if real in p.parents else p for p in paths]

    def uncommitted(self, paths: list[Path] | None = None) -> list[str]:
        """Files with staged or unstaged changes, relative to the top folder, limited to ``paths``.

        Files git does not track are listed only when ``paths`` names them; with no
        ``paths``, the whole repository's tracked files are checked.
        """
        limit = ["--", *(os.path.relpath(p, self.workspace) for p in paths)] if paths else []
        untracked = "--untracked-files=all" if paths else "--untracked-files=no"
        out = self._run("--no-optional-locks", "status", "--porcelain", "-z", "--no-renames", untracked, *limit)
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def first_added(self, folder: str) -> dict[str, str]:
        """When each file under ``folder`` was first added: ``path -> author date`` (ISO 8601).

        One ``git log --diff-filter=A`` over the folder (as ``git log --diff-filter=A
        --format=%aI -- FILE`` per file would say, in a single pass); paths are relative to
        the workspace. A repository without commits gives ``{}``.

        Raises:
            GitFailed: git failed for another reason.
        """
        try:
            out = self._run("-c", "core.quotePath=false", "log", "--diff-filter=A", "--relative",
                            "--format=%x1e%aI", "--name-only", "--", folder)
        except GitFailed as err:
            if "does not have any commits" in err.message or "bad default revision" in err.message:
                return {}
            raise
        dates: dict[str, str] = {}
        for record in out.split("\x1e"):  # newest first: the last date seen for a path is its first add
            lines = [line for line in record.splitlines() if line.strip()]
            for name in lines[1:]:
                dates[name] = lines[0]
        return dates

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
        import git

        try:  # GitPython's wrapper
            out = git.Git(str(self.workspace)).log(f"--format={_ENTRY_FORMAT}%x1e", "--", target)
        except git.GitCommandError:
            return []  # no commits yet
        entries = []
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) < 5:
                continue
            entry = _entry(fields)
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

    # --- reading history (audit: log, history, show --at, diff) ---------------------------

    def _raw(self, *args: str, input: bytes | None = None) -> tuple[int, bytes, str]:
        """Run ``git ARGS`` in the workspace folder; ``(status, stdout bytes, stderr text)``, never raises on status.

        Raises:
            GitFailed: git cannot be started.
        """
        import subprocess

        try:
            proc = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=self.workspace,
                                  capture_output=True, input=input, env={**os.environ, "LC_ALL": "C"},
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

    def _local(self, top_path: str) -> str | None:
        """A path relative to the repository's top as a workspace-relative path; None when outside."""
        return top_path[len(self.prefix):] if top_path.startswith(self.prefix) else None

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
        raise RevisionNotFound(f"unknown revision {text[:80]!r}: no such commit, branch or tag in this repository",
                               hint="list commits with `memcli log` or `git log --oneline`")

    def entry(self, rev: str) -> Entry:
        """The commit ``rev`` (resolved first) as an :class:`Entry`, trailers included.

        Raises:
            RevisionNotFound: see :meth:`resolve`.
        """
        commit = self.resolve(rev)
        out = self._run("show", "-s", f"--format={_ENTRY_FORMAT}", commit)
        return _entry(out.split("\x1f"))

    def blobs(self, wanted: list[tuple[str, str]]) -> list[bytes | None]:
        """The bytes of each ``(rev, workspace-relative path)`` at that revision; None where it is absent.

        One ``git cat-file --batch`` process for all of them.
        """
        if not wanted:
            return []
        request = "".join(f"{rev}:{self.prefix}{path}\n" for rev, path in wanted).encode()
        status, out, err = self._raw("cat-file", "--batch", input=request)
        if status != 0:
            raise GitFailed(f"git cat-file failed: {_first_line(err) or status}")
        found: list[bytes | None] = []
        pos = 0
        for _ in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                found.append(out[pos:pos + size])
                pos += size + 1
            else:  # "<name> missing", or a tree/commit at that name
                if len(header) == 3:
                    pos += int(header[2]) + 1
                found.append(None)
        return found

    def changed(self, old: str, new: str | None = None, under: str = ".") -> list[Touched]:
        """Files under ``under`` that differ between two commits, renames detected.

        Args:
            old, new: resolved revisions; ``new`` None means the working tree, untracked
                (not ignored) files included as added.
            under: a workspace-relative folder or path.
        """
        args = ["diff", "--name-status", "-M", old, *([new] if new else []), "--", under]
        status, out, err = self._raw(*args)
        if status != 0:
            raise GitFailed(f"git diff failed: {_first_line(err) or status}")
        items = self._touched(out.decode("utf-8", "replace").splitlines())
        if new is None:
            status, out, _ = self._raw("ls-files", "--others", "--exclude-standard", "--", under)
            items += [Touched("A", p) for p in out.decode("utf-8", "replace").splitlines() if p]
        return items

    def commits(self, paths: list[str], rev_range: str | None = None, all_refs: bool = False) -> list[Entry]:
        """Every commit (memcli's and others') that touched ``paths``, oldest first, with what it touched.

        Args:
            paths: workspace-relative pathspecs (globs allowed: ``memories/*01jd*``).
            rev_range: e.g. ``A..B``; default: the history of HEAD.
            all_refs: search every branch and tag (finds a file deleted on HEAD's line, too).

        Each entry's ``touched`` lists the files it changed under ``paths`` (renames detected).
        """
        args = ["log", "--reverse", "-M", "--name-status", f"--format=\x1e{_ENTRY_FORMAT}\x1f",
                *(["--all"] if all_refs else []), *([rev_range] if rev_range else []), "--", *paths]
        status, out, err = self._raw(*args)
        if status != 0:
            if rev_range is None and not all_refs:
                return []  # an unborn branch: no history yet
            raise GitFailed(f"git log failed: {_first_line(err) or status}")
        entries = []
        for record in out.decode("utf-8", "replace").split("\x1e")[1:]:
            fields = record.split("\x1f")
            entry = _entry(fields[:6])
            entry.touched = self._touched(fields[6].splitlines() if len(fields) > 6 else [])
            entries.append(entry)
        return entries

    def files(self, rev: str, under: str = ".") -> list[str]:
        """Workspace-relative paths of every file under ``under`` at revision ``rev``."""
        status, out, err = self._raw("ls-tree", "-r", "--name-only", "--full-name", rev, "--", under)
        if status != 0:
            raise GitFailed(f"git ls-tree failed: {_first_line(err) or status}")
        return [p for p in (self._local(line) for line in out.decode("utf-8", "replace").splitlines()) if p]

    def grep_paths(self, pattern: str, rev: str | None = None, under: str = ".") -> list[str]:
        """Workspace-relative paths of the files under ``under`` whose text holds the fixed string ``pattern``.

        Args:
            rev: search the files of this revision; None: the working tree, untracked files included.
        """
        args = ["grep", "-l", "--full-name", "-F", "-e", pattern, *([rev] if rev else ["--untracked"]), "--", under]
        status, out, err = self._raw(*args)
        if status not in (0, 1):
            raise GitFailed(f"git grep failed: {_first_line(err) or status}")
        paths = []
        for line in out.decode("utf-8", "replace").splitlines():
            name = line.split(":", 1)[1] if rev else line  # "<rev>:<path>" names the revision first
            local = self._local(name)
            if local is not None:
                paths.append(local)
        return paths

    def _touched(self, lines: list[str]) -> list[Touched]:
        out = []
        for line in lines:
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0]:
                continue
            kind = parts[0][0]
            names = [self._local(p) for p in parts[1:]]
            if kind in "RC" and len(names) == 3:
                out.append(Touched(kind, names[2] or "", names[1]))
            elif names[-1] is not None:
                out.append(Touched(kind, names[-1]))
        return [t for t in out if t.path]


def message(op: str, summary: str, trailers: dict[str, str | None], body: str = "") -> str:
    """A commit message: ``memcli: OP SUMMARY``, an optional body, then ``Memcli-*`` trailers."""
    lines = [f"memcli: {op} {summary}".strip()]
    if body.strip():
        lines += ["", body.strip()]
    lines += [""] + [f"{TRAILER_PREFIX}{k}: {v}" for k, v in trailers.items() if v]
    return "\n".join(lines) + "\n"


def _first_line(text: str | bytes | None) -> str:
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
