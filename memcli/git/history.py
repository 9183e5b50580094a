"""Reading git history for the audit trail, rollback, undo and doctor (SPEC.md sections 1 and 4).

:class:`History` adds to :class:`memcli.git.repo.GitRepo` what the commands that look
back need: old versions of files (``git cat-file --batch``), the files a commit or a
range changed (renames detected), the commits that touched some paths with their
``Memcli-*`` trailers, and the uncommitted state of the work tree. Every call is a git
subprocess through the sealed runner (:mod:`memcli.git.run`).

A look-up that finds nothing answers None (a root commit has no parent, a path was never
committed, a file is absent from a commit); a git failure (a missing or damaged object, a
repository git cannot read) raises :class:`memcli.errors.GitFailed`, never an empty answer.

Paths given and returned are relative to the workspace unless a docstring says otherwise
(the workspace may be a sub-folder of a project's repository).
"""

from __future__ import annotations

import os
from pathlib import Path

from memcli.errors import GitFailed
from memcli.git.log import ENTRY_FIELDS, ENTRY_FORMAT, Entry, Touched, parse_entry
from memcli.git.repo import GitRepo
from memcli.git.run import batch_blobs, first_line

#: What git says when ``HEAD`` names a branch with no commit yet (``log``, ``rev-parse``).
UNBORN = ("does not have any commits yet", "bad default revision", "unknown revision or path not in the working tree")

#: The most paths passed to git as arguments; longer lists go by stdin or a folder-wide query.
PATHSPEC_ARGS = 200


class History(GitRepo):
    """A :class:`GitRepo` that reads its history: old versions, changed files, commits per path.

    Raises (constructor):
        GitFailed: the workspace is not inside a git work tree.
    """

    def _local(self, top_path: str) -> str | None:
        """A path relative to the repository's top as a workspace-relative path; None when outside."""
        return top_path[len(self.prefix):] if top_path.startswith(self.prefix) else None

    def parent(self, commit: str) -> str | None:
        """The first parent of ``commit`` (a full hash), or None for a root commit.

        Raises:
            GitFailed: ``commit`` cannot be read (a missing or damaged object).
        """
        # --no-walk: only the commit itself is read (its parent's object need not be there);
        # grafts, replacements and a shallow clone's boundary count as git counts them
        status, out, err = self.raw("rev-list", "--no-walk", "--parents", "--end-of-options", commit, "--")
        if status != 0:
            raise GitFailed(f"cannot read commit {commit[:12]}: {first_line(err) or status}",
                            hint="the repository may be damaged: run `git fsck`, then fetch the missing objects "
                                 "from a clone or a remote")
        hashes = out.decode("ascii", "replace").split()
        return hashes[1] if len(hashes) > 1 else None

    def last_change(self, path: Path) -> str | None:
        """The newest commit on ``HEAD`` that changed ``path``, or None (never committed, or no commit yet).

        Raises:
            GitFailed: git cannot read the history (a missing or damaged object).
        """
        status, out, err = self.raw("log", "-1", "--format=%H", "--", os.path.relpath(path, self.workspace))
        if status != 0:
            if any(s in err for s in UNBORN) and self.unborn():
                return None  # no commits yet
            raise GitFailed(f"git log failed: {first_line(err) or status}",
                            hint="the repository may be damaged: run `git fsck`")
        return out.decode("ascii", "replace").strip() or None

    def first_author(self, path: Path) -> tuple[str, str] | None:
        """``(name, email)`` of the author of the commit that added ``path`` on ``HEAD``'s line
        (the proposer of a memory, as ``memcli check`` reads it); None when it was never committed.

        Raises:
            GitFailed: git cannot read the history (a missing or damaged object).
        """
        status, out, err = self.raw("log", "--diff-filter=A", "--no-renames", "--format=%an%x00%ae", "--",
                                    os.path.relpath(path, self.workspace))
        if status != 0:
            if any(s in err for s in UNBORN) and self.unborn():
                return None
            raise GitFailed(f"git log failed: {first_line(err) or status}",
                            hint="the repository may be damaged: run `git fsck`")
        rows = out.decode("utf-8", "replace").splitlines()
        if not rows or "\x00" not in rows[-1]:
            return None
        name, email = rows[-1].split("\x00", 1)
        return name, email

    def entry(self, rev: str) -> Entry:
        """The commit ``rev`` (resolved first) as an :class:`Entry`, trailers included.

        Raises:
            RevisionNotFound: see :meth:`resolve`.
        """
        commit = self.resolve(rev)
        out = self.run("show", "-s", f"--format={ENTRY_FORMAT}", commit)
        return parse_entry(out.split("\x1f"))

    def blob(self, commit: str, path: Path) -> bytes | None:
        """The bytes of ``path`` (absolute) as committed in ``commit``, or None when it was absent.

        Raises:
            GitFailed: ``commit`` cannot be read (see :meth:`blobs`).
        """
        return self._batch([(commit, self.top_rel(path))])[0]

    def blobs(self, wanted: list[tuple[str, str]]) -> list[bytes | None]:
        """The bytes of each ``(rev, workspace-relative path)`` at that revision; None where it is absent.

        One ``git cat-file --batch`` process for all of them (and one ``--batch-check`` more
        when some are absent, to tell an absent file from an unreadable revision).

        Raises:
            GitFailed: a revision asked about is a hash whose commit or tree git cannot read
                (a missing or damaged object), or git failed. A name that resolves to
                nothing (``HEAD`` before the first commit) reads as every file absent.
        """
        return self._batch([(rev, f"{self.prefix}{path}") for rev, path in wanted])

    def _batch(self, wanted: list[tuple[str, str]]) -> list[bytes | None]:
        """:meth:`blobs` for paths relative to the repository's top."""
        if not wanted:
            return []
        request = "".join(f"{rev}:{path}\n" for rev, path in wanted).encode()
        status, out, err = self.raw("cat-file", "--batch", input=request)
        if status != 0:
            raise GitFailed(f"git cat-file failed: {first_line(err) or status}")
        found = batch_blobs(out, len(wanted))
        self._check_readable(sorted({rev for (rev, _), data in zip(wanted, found) if data is None}))
        return found

    def _check_readable(self, revs: list[str]) -> None:
        """Raise GitFailed when a revision among ``revs`` names a commit (or tree) git cannot read.

        "absent" from ``cat-file --batch`` is the same answer for a file not in the commit
        and for a commit whose object is gone: the revision's own tree tells them apart. A
        name that resolves to no object at all (``HEAD`` before the first commit) is not an error.
        """
        if not revs:
            return
        request = "".join(f"{rev}^{{tree}}\n" for rev in revs).encode()
        status, out, err = self.raw("cat-file", "--batch-check", input=request)
        if status != 0:
            raise GitFailed(f"git cat-file failed: {first_line(err) or status}")
        for rev, line in zip(revs, out.splitlines()):
            if not line.endswith(b" missing"):
                continue
            hashed = len(rev) >= 40 and all(c in "0123456789abcdef" for c in rev.lower())
            if hashed or self.raw("rev-parse", "-q", "--verify", "--end-of-options", rev)[0] == 0:
                raise GitFailed(f"commit {rev[:12]} cannot be read: its object is missing or damaged",
                                hint="the repository may be damaged: run `git fsck`, then fetch the missing "
                                     "objects from a clone or a remote")

    def changed_files(self, commit: str) -> list[Path]:
        """Absolute paths of the files ``commit`` added, changed or deleted (against its first parent)."""
        out = self.run("diff-tree", "-r", "--root", "--no-renames", "--no-commit-id", "--name-only", "-z", commit)
        top, real = self.toplevel(), self.workspace.resolve()
        paths = [top / name for name in out.split("\0") if name]
        # as paths under ``self.workspace`` as given (it may be reached through a symbolic link)
        return [self.workspace / p.relative_to(real) if real in p.parents else p for p in paths]

    def changed(self, old: str, new: str | None = None, under: str = ".") -> list[Touched]:
        """Files under ``under`` that differ between two commits, renames detected.

        Args:
            old, new: resolved revisions; ``new`` None means the working tree, untracked
                (not ignored) files included as added.
            under: a workspace-relative folder or path.
        """
        args = ["diff", "--name-status", "-M", old, *([new] if new else []), "--", under]
        status, out, err = self.raw(*args)
        if status != 0:
            raise GitFailed(f"git diff failed: {first_line(err) or status}")
        items = self._touched(out.decode("utf-8", "replace").splitlines())
        if new is None:
            status, out, _ = self.raw("ls-files", "--others", "--exclude-standard", "--", under)
            items += [Touched("A", p) for p in out.decode("utf-8", "replace").splitlines() if p]
        return items

    def uncommitted(self, paths: list[Path] | None = None, committed_only: bool = False) -> list[str]:
        """Files with staged or unstaged changes, relative to the top folder, limited to ``paths``.

        Files git does not track are listed only when ``paths`` names them; with no
        ``paths``, the whole repository's tracked files are checked. With
        ``committed_only``, only files ``HEAD`` holds are listed (neither untracked files
        nor files only added to the index). One ``git status``.
        """
        rels = [os.path.relpath(p, self.workspace) for p in paths or []]
        # git status takes no --pathspec-from-file: past PATHSPEC_ARGS paths, ask about the whole
        # workspace folder and keep the paths asked for (any batch size, no "Argument list too long")
        many = len(rels) > PATHSPEC_ARGS
        limit = ["--", "."] if many else (["--", *rels] if rels else [])
        untracked = "--untracked-files=all" if paths and not committed_only else "--untracked-files=no"
        out = self.run("--no-optional-locks", "status", "--porcelain", "-z", "--no-renames", untracked, *limit)
        found = [entry[3:] for entry in out.split("\0") if len(entry) > 3 and not (committed_only and entry[0] == "A")]
        if many:
            wanted = {self.top_rel(p) for p in paths or []}
            found = [f for f in found if f.rstrip("/") in wanted]
        return found

    def commits(self, paths: list[str], rev_range: str | None = None, all_refs: bool = False,
                grep: str | None = None) -> list[Entry]:
        """Every commit (memcli's and others') that touched ``paths``, oldest first, with what it touched.

        Args:
            paths: workspace-relative pathspecs (globs allowed: ``memories/*01jd*``); empty:
                every commit, empty ones included.
            rev_range: e.g. ``A..B``; default: the history of HEAD.
            all_refs: search every branch and tag (finds a file deleted on HEAD's line, too).
            grep: keep only commits whose message holds this fixed string (``git log -F --grep``).

        Each entry's ``touched`` lists the files it changed under ``paths`` (renames detected).
        """
        args = ["log", "--reverse", "-M", "--name-status", f"--format=\x1e{ENTRY_FORMAT}\x1f",
                *(["--all"] if all_refs else []), *([rev_range] if rev_range else []),
                *(["--fixed-strings", f"--grep={grep}"] if grep else []), "--", *paths]
        status, out, err = self.raw(*args)
        if status != 0:
            if rev_range is None and not all_refs and any(s in err for s in UNBORN) and self.unborn():
                return []  # an unborn branch: no history yet
            raise GitFailed(f"git log failed: {first_line(err) or status}",
                            hint="the repository may be damaged: run `git fsck`")
        entries = []
        for record in out.decode("utf-8", "replace").split("\x1e")[1:]:
            fields = record.split("\x1f")
            entry = parse_entry(fields[:ENTRY_FIELDS])
            entry.touched = self._touched(fields[ENTRY_FIELDS].splitlines() if len(fields) > ENTRY_FIELDS else [])
            entries.append(entry)
        return entries

    def files(self, rev: str, under: str = ".") -> list[str]:
        """Workspace-relative paths of every file under ``under`` at revision ``rev``."""
        status, out, err = self.raw("ls-tree", "-r", "--name-only", "--full-name", rev, "--", under)
        if status != 0:
            raise GitFailed(f"git ls-tree failed: {first_line(err) or status}")
        return [p for p in (self._local(line) for line in out.decode("utf-8", "replace").splitlines()) if p]

    def grep_paths(self, pattern: str, rev: str | None = None, under: str = ".") -> list[str]:
        """Workspace-relative paths of the files under ``under`` whose text holds the fixed string ``pattern``.

        Args:
            rev: search the files of this revision; None: the working tree, untracked files included.
        """
        args = ["grep", "-l", "--full-name", "-F", "-e", pattern, *([rev] if rev else ["--untracked"]), "--", under]
        status, out, err = self.raw(*args)
        if status not in (0, 1):
            raise GitFailed(f"git grep failed: {first_line(err) or status}")
        paths = []
        for line in out.decode("utf-8", "replace").splitlines():
            name = line.split(":", 1)[1] if rev else line  # "<rev>:<path>" names the revision first
            local = self._local(name)
            if local is not None:
                paths.append(local)
        return paths

    def first_added(self, folder: str) -> dict[str, str]:
        """When each file under ``folder`` was first added: ``path -> author date`` (ISO 8601).

        One ``git log --diff-filter=A`` over the folder (as ``git log --diff-filter=A
        --format=%aI -- FILE`` per file would say, in a single pass); paths are relative to
        the workspace. A repository without commits gives ``{}``.

        Raises:
            GitFailed: git failed for another reason.
        """
        try:
            out = self.run("-c", "core.quotePath=false", "log", "--diff-filter=A", "--relative",
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

    def _touched(self, lines: list[str]) -> list[Touched]:
        out = []
        for line in lines:
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0]:
                continue
            kind = parts[0][0]
            names = [self._local(p) for p in parts[1:]]
            if kind in "RC" and len(names) == 2:  # "R100 <old> <new>": either side may lie outside the workspace
                old, new = names
                if old is not None and new is not None:
                    out.append(Touched(kind, new, old))
                elif new is not None:
                    out.append(Touched("A", new))
                elif kind == "R" and old is not None:
                    out.append(Touched("D", old))
            elif names[-1] is not None:
                out.append(Touched(kind, names[-1]))
        return [t for t in out if t.path]
