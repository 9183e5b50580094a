"""The warm fork server (a "zygote", as in Android and Chromium): one process per user and per
memcli installation that has imported the hot commands' modules and compiled their pure
rules, and forks a child for each command a client hands it (``memcli.cli.zygote_client``
says what is sent and why a command never depends on it).

Started detached by a hot command that found none (``zygote_client.start``, after that
command's answer) as ``python [flags] -c "…; main(SOCKET, INSTALLATION, LOCK_FD)"``. It:

1. loads :data:`PRELOAD` and calls :data:`WARM` (no workspace is opened, nothing of a store
   is read: it holds no workspace state), then ``gc.freeze()`` so the children share its pages;
2. binds ``SOCKET`` (the owner-only folder of ``index.sockets``, the socket 0600), taking it
   over from a server that does not answer, then lets the start lock go;
3. serves, one thread only (a fork of a threaded process may copy a lock held by another
   thread): accepts a connection, checks the peer's uid (``SO_PEERCRED``), forks, and reaps
   the children it has forked;
4. exits after :data:`IDLE` seconds without a command, when its socket is gone or taken over
   (another server started while this one was stopped), on SIGTERM, and when a child finds
   a module file changed since it was loaded (the child refuses that command: the client
   runs it in-process and starts a new server).

A child (:func:`child`) reads the request, answers "N" (another installation, stale code)
or "P" and its pid, waits for "go" and the client's descriptors (a closed connection: it
exits, having touched nothing), then takes the client's working folder, environment (and
time zone, ``LC_CTYPE``), umask, ``sys.path``, standard streams (their encoding, errors and
buffering as the client's interpreter made them) and start time, runs ``memcli.cli.main``
as the client would, and sends ``S`` and the exit status just before it ends (``atexit``
work done, the streams flushed and let go). A ping (a request without a command line) is
answered ``A``, the server's pid and how many children it has forked.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any

#: Seconds without a command after which the server exits (the next hot command starts one again).
IDLE = 600.0
#: Test-only: another value for ``IDLE`` (seconds). Not a user setting.
IDLE_ENV = "MEMCLI_TEST_ZYGOTE_IDLE"
#: Seconds between the server's checks of its socket, its idle time and its children.
CHECK = 1.0
#: Seconds a child waits for a request once connected (a client sends it at once).
REQUEST_WAIT = 5.0
#: The largest request (bytes): the command line and the environment.
MAX_REQUEST = 4 << 20

#: The modules of the hot commands (recall, context, the hooks of each agent), loaded once here.
PRELOAD = (
    "memcli.cli.fast", "memcli.cli.hot", "memcli.cli.output", "memcli.cli.state", "memcli.cli.watchdog",
    "memcli.agents.claude", "memcli.agents.codex", "memcli.agents.gemini", "memcli.agents.context_block",
    "memcli.agents.hook_protocol", "memcli.agents.injection", "memcli.agents.registry", "memcli.agents.tool_calls",
    "memcli.agents.transcript", "memcli.service.context", "memcli.service.hooks", "memcli.service.read",
    "memcli.service.redact", "memcli.service.semantic", "memcli.service.settings", "memcli.service.stale_notes",
    "memcli.service.unbacked", "memcli.service.arrived", "memcli.service.conflicts", "memcli.service.branch",
    "memcli.index.build", "memcli.index.catalog", "memcli.index.db", "memcli.index.fresh", "memcli.index.hybrid",
    "memcli.index.search", "memcli.index.query", "memcli.index.kept", "memcli.index.sockets",
    "memcli.store.events", "memcli.store.usage", "memcli.store.personal", "memcli.text.secrets",
    "memcli.text.secrets.own_rules", "memcli.text.hidden", "memcli.text.confusables", "memcli.git.run",
    "memcli.git.code", "memcli.timeutil", "memcli.index.embed", "subprocess", "heapq", "struct", "tempfile",
    "rapidfuzz.process", "rapidfuzz.fuzz", "Stemmer",  # typo corrections, stemming: a prompt hook's words
    "memcli.agents.injected", "memcli.text.literals", "memcli.digests",
)
#: Pure work done once here: (module, function, arguments); compiled rules the hot path
#: would otherwise compile (or load from ``text.recache``) in every process, the stemmer.
WARM: tuple[tuple[str, str, tuple], ...] = (
    ("memcli.agents.injection", "_pattern", ()),
    ("memcli.agents.injection", "_screen", ()),
    ("memcli.text.secrets.prefilter", "_any", ()),
    ("memcli.text.secrets", "_all_slugs", ()),
    ("memcli.index.tokenize", "stem", ("deploying",)),
)


def preload() -> list[str]:
    """Import :data:`PRELOAD` and call :data:`WARM`; what failed (one line each). Never raises."""
    import importlib

    failed = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - a module missing here is loaded by the child itself
            failed.append(f"{name}: {type(err).__name__}: {err}")
    for module, function, args in WARM:
        try:
            getattr(importlib.import_module(module), function)(*args)
        except Exception as err:  # noqa: BLE001 - as above: the child compiles it
            failed.append(f"{module}.{function}: {type(err).__name__}: {err}")
    recache = sys.modules.get("memcli.text.recache")
    if recache is not None:
        recache.save()  # what was compiled here is the cache's too; a child has nothing of it to save
    return failed


def module_files() -> dict[str, tuple[int, int]]:
    """The file of every loaded module of the memcli package -> (mtime in ns, size)."""
    import memcli

    top = os.path.dirname(memcli.__file__ or "") + os.sep
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith(top):
            try:
                info = os.stat(path)
            except OSError:
                continue
            out[path] = (info.st_mtime_ns, info.st_size)
    return out


def stale(files: dict[str, tuple[int, int]]) -> bool:
    """Whether a module file of ``files`` (:func:`module_files`) changed or went since it was loaded."""
    for path, (mtime, size) in files.items():
        try:
            info = os.stat(path)
        except OSError:
            return True
        if (info.st_mtime_ns, info.st_size) != (mtime, size):
            return True
    return False


class Server:
    """The listening socket and the accept loop (the module docstring, steps 2-4).

    Args:
        path: the socket (``zygote_client.socket_path``).
        installed: the installation it serves (``zygote_client.installation``).

    Raises:
        OSError: the folder is not this user's alone, a live server answers at ``path``, or
            the socket cannot be bound.
    """

    def __init__(self, path: str, installed: str) -> None:
        from pathlib import Path

        from memcli.index.sockets import bind_private

        self.path = path
        self.installed = installed
        self.sock, self._bound = bind_private(Path(path), lambda: _answers(path, installed), 64)
        self.files = module_files()
        self.stopping = ""
        self.children = 0
        self.served = 0

    def owns(self) -> bool:
        """Whether the socket file is still the one this server bound (``sockets.still_bound``)."""
        from pathlib import Path

        from memcli.index.sockets import still_bound

        return still_bound(Path(self.path), self._bound)

    def idle_limit(self) -> float:
        """``IDLE``, or the test-only ``$MEMCLI_TEST_ZYGOTE_IDLE``."""
        try:
            return float(os.environ[IDLE_ENV]) if os.environ.get(IDLE_ENV) else IDLE
        except ValueError:
            return IDLE

    def serve(self) -> str:
        """Accept and fork until a reason to stop (the module docstring, step 4); return it."""
        import select

        from memcli.index.sockets import same_user

        idle = self.idle_limit()
        last = checked = time.monotonic()
        while not self.stopping:
            try:
                ready, _, _ = select.select([self.sock], [], [], CHECK)
            except InterruptedError:
                ready = []
            self.reap()
            if ready:
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    conn = None
                if conn is not None:
                    try:
                        if same_user(conn):
                            self.fork(conn)
                            last = time.monotonic()
                    except OSError:
                        pass
                    finally:
                        conn.close()
            now = time.monotonic()
            if now - checked < CHECK and ready:
                continue
            checked = now
            if now - last > idle:
                self.stopping = f"idle for {idle:g} s"
            elif not self.owns():
                self.stopping = "its socket is gone or another server took it over"
        return self.stopping

    def fork(self, conn: socket.socket) -> None:
        """Fork a child for the connection ``conn`` (:func:`child`); the child never returns."""
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                self.sock.close()
                status = child(conn, self)
            except BaseException:  # noqa: BLE001 - nothing of the server's may run in a child
                status = 70
            os._exit(status)
        self.children += 1
        self.served += 1

    def reap(self) -> None:
        """Collect the children that have ended."""
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children = 0
                return
            if pid == 0:
                return
            self.children -= 1

    def close(self) -> None:
        """Remove the socket (if still this server's) and close it."""
        try:
            if self.owns():
                os.unlink(self.path)
        except OSError:
            pass
        self.sock.close()


def _answers(path: str, installed: str) -> bool:
    """Whether a server answers at ``path`` now (a stopped or dead one does not)."""
    return ping(path) is not None


def ping(path: str, budget: float = 0.5) -> tuple[int, int] | None:
    """The pid of the server at ``path`` and how many connections it had forked a child for
    before this one (pings too), or None when none answers within ``budget`` seconds (or it
    runs as another user)."""
    import marshal
    import socket

    from memcli.index.sockets import same_user

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(budget)
        probe.connect(path)
        if not same_user(probe):
            return None
        request = marshal.dumps((_protocol(), "", None, {}, 0, [], 0.0, []))
        probe.sendall(len(request).to_bytes(4, "big") + request)
        answer = b""
        while len(answer) < 9:
            chunk = probe.recv(9 - len(answer))
            if not chunk:
                return None
            answer += chunk
    except OSError:
        return None
    finally:
        probe.close()
    if answer[:1] != b"A":
        return None
    return int.from_bytes(answer[1:5], "big"), int.from_bytes(answer[5:], "big")


def _protocol() -> int:
    from memcli.cli.zygote_client import PROTOCOL

    return PROTOCOL


def _receive(conn: socket.socket) -> tuple[tuple, list[int]] | None:
    """The request and the descriptors sent with it, or None (malformed, too large, too slow)."""
    import marshal
    import socket

    conn.settimeout(REQUEST_WAIT)
    fds: list[int] = []
    data = b""
    try:
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            if len(data) >= 4 and int.from_bytes(data[:4], "big") > MAX_REQUEST:
                return None
            chunk, more, _, _ = socket.recv_fds(conn, 1 << 20, 8)
            fds += more
            if not chunk:
                return None
            data += chunk
        request = marshal.loads(data[4:])
    except (OSError, ValueError, EOFError, TypeError):
        for fd in fds:
            os.close(fd)
        return None
    if not isinstance(request, tuple) or len(request) != 8:
        for fd in fds:
            os.close(fd)
        return None
    return request, fds


def child(conn: socket.socket, server: Server) -> int:
    """A forked child's whole life (the module docstring): the status to end with when the
    command did not run; a command that ran ends the process itself (:func:`_finish`)."""
    import signal
    import socket

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    got = _receive(conn)
    if got is None:
        return 0
    (protocol, their, argv, environ, umask, streams, started, path), fds = got
    for fd in fds:  # descriptors come with "go" only
        os.close(fd)
    if protocol == _protocol() and argv is None:  # a ping (a new server, a test): who serves, how much
        conn.sendall(b"A" + os.getppid().to_bytes(4, "big") + server.served.to_bytes(4, "big"))
        return 0
    if protocol != _protocol() or their != server.installed:
        conn.sendall(b"N")
        return 0
    if stale(server.files):
        conn.sendall(b"N")
        os.kill(os.getppid(), signal.SIGTERM)  # memcli's code changed under it: let a new server load it
        return 0
    conn.sendall(b"P" + os.getpid().to_bytes(4, "big"))
    conn.settimeout(None)
    status = 0
    try:
        # a Ctrl-C the client passes on may come before main guards against it (while the child
        # waits for "go" or takes the client's place): it must end as main would, with the status
        # sent (130), never end the child without one (the client then died of the signal: CI),
        # and its "memcli: interrupted" on the client's stderr, so it is held until the child has
        # taken the client's streams (a Ctrl-C between the two printed it on the server's: CI)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            go, fds, _, _ = socket.recv_fds(conn, 1, 8)
        except OSError:
            return 0
        if go != b"G" or len(fds) != 4:  # the client gave up and ran the command itself
            for fd in fds:
                os.close(fd)
            return 0
        sys.path[:] = path
        _take_over(conn, argv, environ, umask, streams, started, fds)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # one held now raises here
        if os.environ.get("MEMCLI_TEST_STALL_AT"):  # tests only (memcli.testpoint)
            from memcli import testpoint

            testpoint.stall("zygote:taken-over")
        from memcli import cli

        cli.main(argv[1:])
    except SystemExit as end:
        status = _code(end.code)
    except KeyboardInterrupt:
        try:
            sys.stderr.write("memcli: interrupted\n")
        except (OSError, ValueError):
            pass
        status = 130
    except BaseException:  # noqa: BLE001 - main turns every error into a status; this is a last guard
        status = 1
    _finish(conn, status)
    return status  # not reached


def _code(code: object) -> int:
    """The process status of ``sys.exit(code)``, as the interpreter makes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except (OSError, ValueError):
        pass
    return 1


def _take_over(conn: socket.socket, argv: list, environ: dict, umask: int, streams: list, started: float,
               fds: list[int]) -> None:
    """Become the client's command: its folder, environment, umask, streams and start time."""
    import io

    stdin, stdout, stderr, here = fds
    os.fchdir(here)
    os.close(here)
    os.environb.clear()
    os.environb.update(environ)
    time.tzset()
    try:
        import locale

        locale.setlocale(locale.LC_CTYPE, "")  # as the interpreter does at start-up
    except Exception:  # noqa: BLE001 - an unknown locale: the interpreter keeps the C locale too
        pass
    os.umask(umask)
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    names = ("<stdin>", "<stdout>", "<stderr>")
    made = []
    for target, spec in enumerate(streams):
        encoding, errors, line_buffering, write_through, buffered = spec
        raw = io.FileIO(target, "rb" if target == 0 else "wb", closefd=False)
        raw.name = names[target]
        buffer: Any = raw
        if target == 0:
            buffer = io.BufferedReader(raw)
        elif buffered:
            buffer = io.BufferedWriter(raw)
        made.append(io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline="\n",
                                     line_buffering=line_buffering, write_through=write_through))
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made  # type: ignore[misc]
    sys.argv = list(argv)
    import memcli
    from memcli import cli, service

    recache = sys.modules.get("memcli.text.recache")
    if recache is not None:  # read from the starter's cache folder: this command reads its own
        recache._STORE = None  # type: ignore[attr-defined]
    if sys.argv and sys.argv[0].rsplit("/", 1)[-1] in ("memcli", "-m"):
        sys.excepthook = memcli._interrupted
    service.STARTED = started
    cli.ENDING.append(lambda status: _finish(conn, status, teardown=False))


def _finish(conn: socket.socket, status: int, teardown: bool = True) -> None:
    """End the command: with ``teardown``, the interpreter's exit work (``atexit``, the streams
    flushed; without it, as ``os._exit``: ``cli.exit_now``), the client's streams let go,
    then the status sent; the process ends here."""
    import atexit

    from memcli import cli

    del cli.ENDING[:]
    if teardown:
        try:
            atexit._run_exitfuncs()
        except BaseException:  # noqa: BLE001 - as at the interpreter's exit: printed, not fatal
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                status = status or 120  # the interpreter's status when flushing at exit fails
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
    except OSError:
        pass
    try:
        conn.sendall(b"S" + (status & 0xFF).to_bytes(4, "big"))
    except OSError:
        pass
    os._exit(status & 0xFF)


def _say(line: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"{stamp} zygote {os.getpid()}: {line}", flush=True)


def main(path: str, installed: str, lock: int) -> int:
    """The server process (the module docstring): 0 when it served and stopped, 1 when it could not serve.

    Args:
        path: its socket.
        installed: the installation it serves; it refuses to start when its own differs.
        lock: the start lock's descriptor (``zygote_client.start``), closed once it serves.
    """
    import gc
    import signal

    from memcli.cli import zygote_client

    os.chdir("/")
    try:
        if zygote_client.installation() != installed:
            _say("not started: this process's installation differs from its starter's")
            return 1
        failed = preload()
        for line in failed:
            _say(f"not preloaded: {line}")
        gc.collect()
        gc.freeze()  # the children share these pages: no collection of theirs writes to them
        try:
            server = Server(path, installed)
        except OSError as err:
            _say(f"not serving: {err}")
            return 1
    finally:
        os.close(lock)
    def terminated(signum: int, frame: object) -> None:
        server.stopping = f"signal {signum}"

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _say(f"serving {path} ({len(sys.modules)} modules loaded)")
    try:
        why = server.serve()
    finally:
        server.close()
    _say(f"exits after {server.served} commands: {why}")
    return 0
