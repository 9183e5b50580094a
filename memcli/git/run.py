"""The sealed git runner: the one place in memcli that starts a ``git`` process.

Every git command memcli runs goes through :func:`run` (``tests/test_git_sealed.py`` fails on
a ``subprocess`` call that runs git anywhere else in ``memcli/``). Each call:

* runs in a given folder (as ``git -C`` would), with stdin closed unless bytes are given,
  so git never waits on a terminal; ``GIT_TERMINAL_PROMPT=0`` and ``GIT_EDITOR=true``;
* drops the repository-local variables (``git rev-parse --local-env-vars``: ``GIT_DIR``,
  ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` …) that a surrounding hook or script may have set,
  so git asks about the folder given and nothing else (SPEC.md section 1, sealed git);
* reads git's messages in the C locale (``LC_ALL=C``) and its paths unquoted
  (``-c core.quotePath=false``);
* may have a deadline: past it the process is killed and :class:`GitTimedOut` raised.

Failures map to memcli's errors: git that cannot be started, or a command that exits
non-zero where the caller asks for its output (:func:`check`), raise
:class:`memcli.errors.GitFailed` (exit 10) with git's first error line.

This module is on the hot path (the session-start hook lists the project's changed files,
the actor may need ``git config``): it imports no more than :mod:`os` at import time.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from memcli.errors import GitFailed

if TYPE_CHECKING:
    import subprocess

#: Repository-local variables, as listed by ``git rev-parse --local-env-vars`` (git 2.39).
LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
)
#: Options given to every command, before the subcommand.
BASE_ARGS = ("git", "-c", "core.quotePath=false")


class GitTimedOut(GitFailed, TimeoutError):
    """A git command did not finish before its deadline (it was killed). Exit 10, like any git failure."""


#: The repository-local variables this process was started with, as the first
#: :func:`seal_environment` found them (``GIT_INDEX_FILE`` made absolute): what git gave a
#: hook it runs (``memcli check --staged`` in a pre-commit hook reads the index being committed).
INHERITED: dict[str, str] = {}
_sealed = False


def seal_environment() -> None:
    """Remove repository-local git variables from this process's own environment; never prompt.

    :func:`run` never passes them to git whether or not this was called; sealing the
    process matters for the children that run git on their own (git-filter-repo in
    ``memcli.git.rewrite``, the merge driver that git starts during ``sync``). The first call
    keeps what it removed in :data:`INHERITED`.
    """
    global _sealed
    if not _sealed:
        _sealed = True
        for name in LOCAL_ENV_VARS:
            if os.environ.get(name):
                INHERITED[name] = os.environ[name]
        if "GIT_INDEX_FILE" in INHERITED:
            INHERITED["GIT_INDEX_FILE"] = os.path.abspath(INHERITED["GIT_INDEX_FILE"])
    for name in LOCAL_ENV_VARS:
        os.environ.pop(name, None)
    os.environ["GIT_TERMINAL_PROMPT"] = "0"
    os.environ.setdefault("GIT_EDITOR", "true")


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a git child gets: this process's, sealed, in the C locale, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_ENV_VARS}
    env.setdefault("GIT_EDITOR", "true")
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    env.update(extra or {})
    return env


def run(args: tuple[str, ...] | list[str], cwd: Any = None, *, input: bytes | str | None = None,
        env: dict[str, str] | None = None, timeout: float | None = None, deadline: float | None = None,
        text: bool = False, own_session: bool = False) -> "subprocess.CompletedProcess[Any]":
    """Run ``git ARGS`` in the folder ``cwd`` (a path; None: the current folder), sealed.

    Args:
        args: git's arguments after ``git`` (global options such as ``--literal-pathspecs`` first).
        input: bytes (or text, with ``text``) for git's stdin: path lists, messages, any size.
        env: extra environment variables (``GIT_INDEX_FILE``, dates, an identity).
        timeout: seconds git may take.
        deadline: a ``time.monotonic()`` instant git must finish by (the nearer of the two counts).
        text: stdout and stderr as text (UTF-8, undecodable bytes replaced, universal newlines);
            else stdout is bytes and stderr too.
        own_session: start git in a session of its own (Unix), out of the terminal's process
            group, so a Ctrl-C meant for memcli never reaches it (the branch move of a commit,
            which memcli finishes whatever comes: ``git.commit``).

    Returns:
        The finished process (``returncode``, ``stdout``, ``stderr``); a non-zero status is not
        an error here (see :func:`check`).

    Raises:
        GitFailed: git cannot be started (not installed, not on ``PATH``, ``cwd`` missing).
        GitTimedOut: the deadline passed (git was killed).
    """
    import subprocess

    limit = timeout
    if deadline is not None:
        left = deadline - time.monotonic()
        limit = left if limit is None else min(limit, left)
    if limit is not None and limit <= 0:
        raise GitTimedOut(f"git {subcommand(args)} was not started: its deadline had passed")
    decoding: dict[str, Any] = {"encoding": "utf-8", "errors": "replace"} if text else {}
    try:
        if limit is None:
            return subprocess.run([*BASE_ARGS, *args], cwd=cwd, capture_output=True, input=input,
                                  env=environment(env), stdin=None if input is not None else subprocess.DEVNULL,
                                  start_new_session=own_session and hasattr(os, "setsid"), **decoding)
        return _run_bounded([*BASE_ARGS, *args], cwd, input, environment(env), limit, decoding)
    except subprocess.TimeoutExpired:
        raise GitTimedOut(f"git {subcommand(args)} did not finish within {limit:.3g} s and was stopped",
                          hint="retry; if it keeps happening, check the repository (`git fsck`) and the remote")
    except OSError as err:
        if cwd is not None and not os.path.isdir(cwd):
            raise GitFailed(f"cannot run git in {cwd}: {err.strerror}") from None
        raise GitFailed(f"cannot run git: {err.strerror}", hint="install git and put it on PATH") from None


def _run_bounded(argv: list[str], cwd: Any, input: bytes | str | None, env: dict[str, str],
                 limit: float, decoding: dict[str, Any]) -> "subprocess.CompletedProcess[Any]":
    """``subprocess.run`` with a time limit that ends git *and every process it started* (the
    merge driver, ssh, a remote helper): git runs as the leader of its own process group, and
    past the limit, or on any exception here (Ctrl-C), the whole group gets SIGKILL (issue 22
    point 9: no child outlives its command). Without ``os.killpg`` (not Unix), git alone is killed.

    Raises:
        subprocess.TimeoutExpired: the limit passed (the group is killed and reaped first).
    """
    import signal
    import subprocess

    unix = hasattr(os, "killpg")
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            start_new_session=unix, **decoding)
    try:
        out, err = proc.communicate(input, timeout=limit)
    except BaseException:
        if unix:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.communicate()
        raise
    if unix:  # git has ended; a child it left behind in its group (a stuck driver) must not outlive it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class Started:
    """A git process :func:`start` began, running while the caller works; :meth:`result` waits
    for it, :meth:`cancel` ends it. Either must be called once (the process is reaped there)."""

    def __init__(self, proc: "subprocess.Popen[bytes]", args: tuple[str, ...] | list[str], deadline: float) -> None:
        self.proc = proc
        self.args = args
        self.deadline = deadline

    def result(self) -> "subprocess.CompletedProcess[bytes]":
        """The finished process (stdout and stderr as bytes), as :func:`run` gives it.

        Raises:
            GitTimedOut: the deadline passed (git and its process group were killed).
        """
        import subprocess

        try:
            out, err = self.proc.communicate(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.cancel()
            raise GitTimedOut(f"git {subcommand(self.args)} did not finish in time and was stopped",
                              hint="retry; if it keeps happening, check the repository (`git fsck`)") from None
        except BaseException:
            self.cancel()
            raise
        _end_group(self.proc)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def cancel(self) -> None:
        """Kill git (and its process group) and reap it; the answer is not wanted. Never raises."""
        _end_group(self.proc)
        try:
            self.proc.kill()
            self.proc.communicate()
        except (OSError, ValueError):
            pass


def start(args: tuple[str, ...] | list[str], cwd: Any = None, *, timeout: float) -> Started:
    """Start ``git ARGS`` in ``cwd`` as :func:`run` would (sealed, stdin closed, its own process
    group), without waiting: git runs on another core while the caller works, and
    :meth:`Started.result` collects it within ``timeout`` seconds of now.

    Raises:
        GitFailed: git cannot be started (not installed, not on ``PATH``, ``cwd`` missing).
    """
    import subprocess

    unix = hasattr(os, "killpg")
    try:
        proc = subprocess.Popen([*BASE_ARGS, *args], cwd=cwd, env=environment(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=unix)
    except OSError as err:
        if cwd is not None and not os.path.isdir(cwd):
            raise GitFailed(f"cannot run git in {cwd}: {err.strerror}") from None
        raise GitFailed(f"cannot run git: {err.strerror}", hint="install git and put it on PATH") from None
    return Started(proc, args, time.monotonic() + timeout)


def _end_group(proc: "subprocess.Popen[Any]") -> None:
    """SIGKILL to git's process group (what it left behind must not outlive it); Unix only."""
    if hasattr(os, "killpg"):
        import signal

        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def check(proc: "subprocess.CompletedProcess[Any]", args: tuple[str, ...] | list[str], what: str = "") -> None:
    """Raise :class:`GitFailed` (``git SUBCOMMAND failed: FIRST ERROR LINE``) unless ``proc`` exited 0.

    Args:
        what: words to put after the message (``; nothing was written``).
    """
    if proc.returncode != 0:
        raise GitFailed(f"git {subcommand(args)} failed: {first_line(proc.stderr) or proc.returncode}{what}")


def output(args: tuple[str, ...] | list[str], cwd: Any = None, **kwargs: Any) -> str:
    """git's stdout as text without the final newline; see :func:`run` for the arguments.

    Raises:
        GitFailed: git cannot be started or exited non-zero (its first error line).
    """
    proc = run(args, cwd, text=True, **kwargs)
    check(proc, args)
    return proc.stdout.rstrip("\n")


def subcommand(args: tuple[str, ...] | list[str]) -> str:
    """The git subcommand in ``args`` (``log`` in ``-c x=y --no-pager log -1``), for messages."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return args[0] if args else ""


def first_line(text: str | bytes | None) -> str:
    """git's first error line, without ``fatal:`` / ``error:`` (and GitPython-style ``stderr:`` wrapping)."""
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


def batch_objects(out: bytes) -> list[tuple[str, str, bytes] | None]:
    """The answers in ``git cat-file --batch``'s output, one per query, in order: ``(object id,
    type, content)``, or None for a query git has no object for (``QUERY missing``,
    ``ambiguous``). Stops at an answer cut short, so the list may be shorter than the queries.

    Format: git-cat-file(1), BATCH OUTPUT: ``<oid> SP <type> SP <size> LF <contents> LF``.
    """
    found: list[tuple[str, str, bytes] | None] = []
    at = 0
    while at < len(out):
        end = out.find(b"\n", at)
        if end < 0:
            break
        head = out[at:end].split(b" ")
        at = end + 1
        if len(head) != 3 or not head[2].isdigit():
            found.append(None)
            continue
        size = int(head[2])
        if at + size > len(out):
            break
        found.append((head[0].decode(), head[1].decode(), out[at:at + size]))
        at += size + 1
    return found


def batch_blobs(out: bytes, count: int) -> list[bytes | None]:
    """The contents of the ``count`` queries' blobs in ``git cat-file --batch``'s output; None
    where git has none, the object is not a blob, or the answer was cut short."""
    found = [o[2] if o is not None and o[1] == "blob" else None for o in batch_objects(out)]
    return (found + [None] * count)[:count]
