"""Running memcli's command line for the tests: in this process (the fast tier) or as a real process.

``run_memcli`` (the ``run`` fixture) calls ``memcli.cli.main`` here, with what a child process
would have been given and would have seen: ``argv``, the environment (``env=`` on top of this
process's, which ``isolated_env`` has cleaned), the folder (``cwd=``), stdin (``input=``, else an
empty, non-terminal one) and, as seen from outside, stdout and stderr as text (decoded and
newline-translated as ``subprocess.run(text=True)`` does) and the exit status (``SystemExit``
codes, ``os._exit``, modulo 256). An in-process call costs a few milliseconds instead of a new
interpreter (about 0.1-0.3 s, more under load).

What memcli changes in the process for one command is put back after it: ``os.environ``
(``memcli.git.run.seal_environment`` sets ``GIT_TERMINAL_PROMPT`` and ``GIT_EDITOR``), the
folder, the umask (``memcli.store.personal.private_umask`` narrows it to 077), the signal
handlers, ``sys.argv``, the standard streams (``sys.std*`` and ``sys.__std*__``: click and
``shutil.get_terminal_size`` read the latter), the time zone (``time.tzset`` for the ``TZ``
the call sees) and the warning filters. The SQLite connections the command opened are closed
(memcli leaves them to the process's exit; in CPython each is in a reference cycle with its
statement cache, so only a full garbage collection, 0.1-0.3 s here, would close them). The
per-command state of ``memcli.cli`` itself (output settings, global options, the workspace
opened) is reset by ``main`` on entry.
``memcli.service.process_started`` answers the call's start, as it would in a new process
(it bounds a hook's and ``context``'s deadline).

Some calls cannot be made in-process, and ``run_memcli`` makes them as real processes
(:func:`needs_process` says why): an agent's hook (``hook AGENT EVENT``: its deadline
watchdog ends the process, and the agent sees the process's exit), the MCP server (it takes
over file descriptors 0 and 1), a kill point (``MEMCLI_TEST_KILL_AT`` SIGKILLs the process),
variables an interpreter reads only at its start (``PYTHON*``, ``LC_*``, ``LANG``), and a call
from a thread other than the main one (the streams are process-wide: concurrency needs
processes). A test whose point is the process boundary (signals, kill loops, pipes, real
agents, background children) is marked ``@pytest.mark.process``: ``run`` and ``run_memcli``
then start a real ``python -m memcli`` for every call; ``run_proc`` always does.

Not reproduced in-process: ``timeout=`` (a hang hangs the test), and output of a logger
(pytest captures logging); memcli uses neither logging nor timeouts on the CLI path.
"""

from __future__ import annotations

import io
import json
import locale
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Protocol

import typer.main

import memcli.cli.app  # noqa: F401 - the app's commands, from memcli's own agents, before any test registers one

MEMCLI = [sys.executable, "-m", "memcli"]

#: Set by the autouse fixture ``_runner_mode`` (conftest.py) for a test marked ``process``.
FORCE_PROCESS = False

#: Environment variables an interpreter reads at start only: given in ``env=``, they need a process.
START_ONLY_ENV = ("PYTHON", "LC_", "LANG")
#: ``hook`` words that are commands of memcli's own (typer), not an agent's hook.
HOOK_COMMANDS = ("install", "uninstall", "check")
#: ``mcp`` words that are commands, not the server.
MCP_COMMANDS = ("install", "uninstall")
#: Signals whose handlers are put back after an in-process call.
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM", "SIGPIPE", "SIGCHLD")
                if hasattr(signal, name))
#: Python's default warning filters (``warnings.filters`` in a fresh interpreter).
DEFAULT_WARNINGS = [("default", None, DeprecationWarning, "__main__", 0), ("ignore", None, DeprecationWarning, None, 0),
                    ("ignore", None, PendingDeprecationWarning, None, 0), ("ignore", None, ImportWarning, None, 0),
                    ("ignore", None, ResourceWarning, None, 0)]


class Result:
    """A finished ``memcli`` command: exit code, stdout, stderr, and ``json()`` of stdout.

    ``process`` says how it ran: True for a real process, False in-process.
    """

    def __init__(self, code: int, out: str, err: str, process: bool) -> None:
        self.code = code
        self.out = out
        self.err = err
        self.process = process

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


class Runner(Protocol):
    """What the ``run`` and ``run_proc`` fixtures are: :func:`run_memcli`, :func:`run_memcli_proc`."""

    def __call__(self, *args: str, cwd: Path | str | None = None, input: str | None = None,
                 env: dict[str, str] | None = None, timeout: float = 60) -> Result: ...


def run_memcli(*args: str, cwd: Path | str | None = None, input: str | None = None,
               env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    """Run ``memcli ARGS``: in this process, unless :func:`needs_process` names a reason (then
    as :func:`run_memcli_proc`). ``timeout`` (seconds) holds for a process only."""
    if FORCE_PROCESS or needs_process(args, env) is not None:
        return run_memcli_proc(*args, cwd=cwd, input=input, env=env, timeout=timeout)
    return run_in_process(*args, cwd=cwd, input=input, env=env)


def run_memcli_proc(*args: str, cwd: Path | str | None = None, input: str | None = None,
                    env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    """Run the real CLI in a subprocess (``python -m memcli``)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([*MEMCLI, *args], cwd=cwd, input=input, capture_output=True, text=True,
                          env=full_env, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr, process=True)


def needs_process(args: tuple[str, ...] | list[str], env: dict[str, str] | None = None) -> str | None:
    """Why ``memcli ARGS`` (with ``env`` added) must run as a real process, or None when it can run here."""
    from memcli.cli import _words, hoist_globals

    if threading.current_thread() is not threading.main_thread():
        return "called from a thread: the standard streams are the process's"
    words = _words(hoist_globals(list(args)))
    if words[:1] == ["hook"] and len(words) > 1 and words[1] not in HOOK_COMMANDS:
        return "an agent's hook: its deadline watchdog ends the process"
    if words[:1] == ["mcp"] and (len(words) == 1 or words[1] not in MCP_COMMANDS):
        return "the MCP server takes over file descriptors 0 and 1"
    if (env or {}).get("MEMCLI_TEST_KILL_AT") or os.environ.get("MEMCLI_TEST_KILL_AT"):
        return "a kill point SIGKILLs the process"
    started = [name for name in env or {} if name.startswith(START_ONLY_ENV)]
    if started:
        return f"{started[0]} is read when an interpreter starts"
    return None


def run_in_process(*args: str, cwd: Path | str | None = None, input: str | None = None,
                   env: dict[str, str] | None = None) -> Result:
    """Call ``memcli.cli.main(ARGS)`` in this process as a child process would run it (module docstring)."""
    import memcli.service
    from memcli.cli import main

    encoding = locale.getpreferredencoding(False)
    stdin = _stream(io.BytesIO((input or "").encode(encoding)), _ORIGINAL[0], encoding)
    stdout = _stream(io.BytesIO(), _ORIGINAL[1], encoding)
    stderr = _stream(io.BytesIO(), _ORIGINAL[2], encoding)
    saved = _Saved(memcli.service)
    started = time.monotonic()
    try:
        os.environ.update(env or {})
        time.tzset()
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [str(Path(memcli.__file__).with_name("__main__.py")), *args]
        sys.stdin = sys.__stdin__ = stdin
        sys.stdout = sys.__stdout__ = stdout
        sys.stderr = sys.__stderr__ = stderr
        memcli.service.process_started = lambda: started  # type: ignore[assignment]  # this call is the process
        typer.main.get_command = _command  # type: ignore[assignment]
        sqlite3.connect = saved.connect_recorded  # type: ignore[assignment]
        os._exit = _exit  # type: ignore[assignment]  # memcli's fast exit ends the call, not the test run
        warnings.filters[:] = DEFAULT_WARNINGS
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]  # to sys.stderr
        code = _status(main, list(args), stderr)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    finally:
        saved.restore()
    return Result(code, _text(stdout, encoding), _text(stderr, encoding), process=False)


def _command(typer_app: Any) -> Any:
    """``typer.main.get_command``, once per app: the click command tree typer builds from
    memcli's app on every run (about 45 ms, most of an in-process typer command) is the same
    each time, since the app is complete once ``memcli.cli.app`` is imported."""
    built = _COMMANDS.get(id(typer_app))
    if built is None or built[0] is not typer_app:
        built = _COMMANDS[id(typer_app)] = (typer_app, _GET_COMMAND(typer_app))
    return built[1]


class _Exited(BaseException):
    """``os._exit(status)`` called during an in-process command."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _exit(status: int) -> None:
    raise _Exited(status)


def _status(main: Any, args: list[str], stderr: io.TextIOWrapper) -> int:
    """Run ``main(args)``; the exit status a parent process would see."""
    try:
        main(args)
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        print(code, file=stderr)  # sys.exit("message"): the interpreter prints it, status 1
        return 1
    except _Exited as done:
        return done.status & 0xFF
    return 0


def _stream(raw: io.BytesIO, like: Any, encoding: str) -> io.TextIOWrapper:
    """A text stream over ``raw`` set up as the interpreter set up ``like`` (one of its
    standard streams on a pipe): its error handler; ``newline="\\n"`` (no translation, as on POSIX)."""
    errors = getattr(like, "errors", None) or "strict"
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline="\n", write_through=True)


def _text(stream: io.TextIOWrapper, encoding: str) -> str:
    """What ``subprocess.run(text=True)`` gives for the bytes written to ``stream``."""
    data = stream.buffer.getvalue()  # type: ignore[attr-defined]
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


#: typer's own ``get_command``, and what it built per app (:func:`_command`).
_GET_COMMAND = typer.main.get_command
_COMMANDS: dict[int, tuple[Any, Any]] = {}
#: The interpreter's own ``sys.__std*__`` (their error handlers are copied).
_ORIGINAL = (sys.__stdin__, sys.__stdout__, sys.__stderr__)


class _Saved:
    """The process-wide state an in-process command may change, taken when made
    (``service``: the ``memcli.service`` module, whose ``process_started`` the call replaces)."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.process_started = service.process_started
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.handlers = {number: signal.getsignal(number) for number in SIGNALS}
        self.argv = sys.argv
        self.streams = {name: getattr(sys, name) for name in
                        ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__")}
        self.exit = os._exit
        self.connect = sqlite3.connect
        self.connections: list[sqlite3.Connection] = []
        self.warnings = (list(warnings.filters), warnings.showwarning)

    def connect_recorded(self, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        """``sqlite3.connect``, remembering the connection to close it after the call."""
        connection = self.connect(*args, **kwargs)
        self.connections.append(connection)
        return connection

    def restore(self) -> None:
        """Put everything back; close the SQLite connections the call opened."""
        sqlite3.connect = self.connect  # type: ignore[assignment]
        for connection in self.connections:
            try:
                connection.close()
            except sqlite3.Error:
                pass
        for name, stream in self.streams.items():
            setattr(sys, name, stream)
        os._exit = self.exit  # type: ignore[assignment]
        typer.main.get_command = _GET_COMMAND  # type: ignore[assignment]
        sys.argv = self.argv
        warnings.filters[:], warnings.showwarning = self.warnings[0], self.warnings[1]
        warnings._filters_mutated()  # type: ignore[attr-defined]
        for number, handler in self.handlers.items():
            if handler is not None and signal.getsignal(number) is not handler:
                signal.signal(number, handler)
        os.umask(self.umask)
        try:
            os.chdir(self.cwd)
        except OSError:
            pass
        for name in set(os.environ) - set(self.environ):
            del os.environ[name]
        for name, value in self.environ.items():
            if os.environ.get(name) != value:
                os.environ[name] = value
        time.tzset()
        self.service.process_started = self.process_started
