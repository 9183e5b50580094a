"""The client of the warm fork server (``memcli.cli.zygote``): a hot command handed to a process
that has already imported memcli, or None and the command runs in this process as always.

``main`` calls :func:`run` first, before any heavy import, for ``context``, ``recall`` and
``hook AGENT EVENT``. It connects to this user's server of this installation
(:func:`socket_path`), checks that the server runs as this user (``SO_PEERCRED``), and sends
the command line, the whole environment, the umask, ``sys.path`` and the standard streams'
settings. The server forks; the forked child checks the installation and says its pid;
this client says "go" with the descriptors of stdin, stdout, stderr and the working folder
(``SCM_RIGHTS``: sent only to a child that has answered, so a stopped server never holds
this process's streams open); the child runs ``memcli.cli.main`` on them, in this folder
and environment, and sends its exit status, with which this process exits. Signals this
process gets (SIGINT, SIGTERM, SIGHUP) are passed on to the child; a child that dies
without a status (killed) is one line on stderr and exit :data:`NO_STATUS`.

Never required: no server, a server of another user or of other code, or no answer within
:data:`BUDGET` seconds, and :func:`run` returns None (the caller runs the command itself);
a child that finds the connection closed before "go" exits without doing anything, so a
command never runs twice. After an in-process run, :func:`start` starts a server for the
next command (detached, its own session).

This module is on the path of every hot command before the server answers: it imports only
modules written in C that are loaded already or cost nothing (``_socket``, ``marshal``,
``_blake2``, ``_signal``), never ``socket``, ``signal`` or ``json`` (about 10 ms).

Off: ``MEMCLI_NO_SERVER=1`` (any non-empty value but ``0``).
"""

from __future__ import annotations

import os
import sys

from memcli.cli import SERVER_OFF_ENV as OFF_ENV  # the setting that turns the server off

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms)
if TYPE_CHECKING:
    import _socket

#: Seconds from connecting to the forked child's first word; past it the command runs in-process.
BUDGET = 0.3
#: The version of the protocol below; part of every request.
PROTOCOL = 1
#: The status this client exits with when the child ended without sending one (memcli/errors.py).
NO_STATUS = 19
#: Signals passed on to the child once its pid is known.
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
#: Environment variables the server's modules read when they are imported (rapidfuzz picks its
#: implementation by one): part of the installation, so a client with other values gets
#: another server (``tests/test_fork_server.py`` records every read made while preloading).
IMPORT_ENV = ("RAPIDFUZZ_IMPLEMENTATION",)
#: Commands served (``hook install|uninstall|check …`` are not hot: they take the in-process path).
HOT = ("context", "recall", "hook")
NOT_HOOK_EVENTS = ("install", "uninstall", "check")


def hot(words: list[str]) -> bool:
    """Whether the command whose words (options left out) are ``words`` is one the server runs."""
    if not words or words[0] not in HOT:
        return False
    return words[0] != "hook" or (len(words) == 3 and words[1] not in NOT_HOOK_EVENTS)


def folder() -> str:
    """This user's socket folder: ``index.sockets.folder`` without ``pathlib`` (a test keeps the two equal)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _mine(runtime):
        base = runtime
    else:
        base = next((d for d in (os.environ.get(n) for n in ("TMPDIR", "TEMP", "TMP")) if d and os.path.isdir(d)),
                    "/tmp")
    return os.path.join(base, f"memcli-{os.getuid()}")


def _mine(path: str, private: bool = False) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_mode & 0o170000 == 0o040000 and info.st_uid == os.getuid()
            and (not private or info.st_mode & 0o077 == 0))


def installation() -> str:
    """What a server must share with this process to run its commands as this process would:
    the interpreter and its start-up settings (flags, ``sys.path``, file-system encoding), the
    memcli package's folder and the size and modification time of its ``__init__.py`` (a
    reinstall changes it). The server also checks every module file it loaded before each
    command (``zygote.Server.stale``), which catches an edit of an editable install."""
    import memcli

    marker = memcli.__file__ or ""
    try:
        info = os.stat(marker)
        stamp = (info.st_mtime_ns, info.st_size)
    except OSError:
        stamp = (0, 0)
    return repr((PROTOCOL, sys.executable, sys.version, os.path.dirname(marker), stamp, tuple(sys.flags),
                 search_path(), sys.warnoptions, {k: v for k, v in sys._xoptions.items() if k != "utf8"},
                 sys.getfilesystemencoding(), [os.environ.get(name) for name in IMPORT_ENV],
                 sys.getfilesystemencodeerrors()))


def search_path() -> list[str]:
    """``sys.path`` without its first entry when that is the working folder (``python -m`` and
    ``-c`` put it there): a server serves every folder (each child gets its client's whole
    ``sys.path`` back), and loads nothing from the folder it was started in."""
    first = sys.path[0] if sys.path else None
    if first == "" or (first is not None and first == _cwd()):
        return sys.path[1:]
    return list(sys.path)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def key(text: str) -> str:
    """A short name for the installation ``text`` (the socket's name)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it
        import zlib

        return f"{zlib.crc32(text.encode(errors='surrogateescape')):08x}"
    return blake2b(text.encode(errors="surrogateescape"), digest_size=10).hexdigest()


def socket_path(installed: str) -> str:
    """The server's socket for the installation ``installed`` (:func:`installation`)."""
    return os.path.join(folder(), f"zygote-{key(installed)}.sock")


def _stream(stream: object) -> tuple | None:
    """What the child needs to make its own copy of a standard stream: (encoding, errors,
    line_buffering, write_through, buffered); None when the stream is missing or not a file's."""
    try:
        buffer = stream.buffer  # type: ignore[attr-defined]
        return (stream.encoding, stream.errors, stream.line_buffering,  # type: ignore[attr-defined]
                stream.write_through, type(buffer).__name__ != "FileIO")  # type: ignore[attr-defined]
    except AttributeError:
        return None


def run(argv: list[str], started: float, hook: bool = False) -> int | None:
    """Run the command ``argv`` in the warm server; its exit status, or None when it did not
    run there, or is a hook whose run there ended without a status (the caller then runs it
    in-process). Never raises but ``KeyboardInterrupt``.

    Args:
        argv: the arguments without the program name.
        started: this process's start, a ``time.monotonic()`` instant (the hooks' deadlines count from it).
        hook: the command is a hook (``memcli hook AGENT EVENT``).
    """
    installed = installation()
    path = socket_path(installed)
    streams = [_stream(s) for s in (sys.stdin, sys.stdout, sys.stderr)]
    if None in streams or not _mine(os.path.dirname(path), private=True):
        return None
    import _socket

    try:
        here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        pid = _handshake(sock, path, installed, argv, streams, started)
        if pid is None:
            return None
        return _wait(sock, pid, here, hook)
    finally:
        sock.close()
        os.close(here)


def _handshake(sock: _socket.socket, path: str, installed: str, argv: list[str], streams: list,
               started: float) -> int | None:
    """Send the request (no descriptor yet: a server that never answers must not hold this
    process's streams open); the child's pid, or None (no server, not this user's, another
    installation, no answer in time)."""
    import marshal
    import time

    began = time.monotonic()
    try:
        sock.settimeout(BUDGET)
        sock.connect(path)
        if not _same_user(sock):
            return None
        umask = os.umask(0o077)
        os.umask(umask)
        request = marshal.dumps((PROTOCOL, installed, list(sys.argv[:1]) + argv, dict(os.environb), umask,
                                 streams, started, sys.path))
        sock.sendall(len(request).to_bytes(4, "big") + request)
        answer = b""
        while len(answer) < 5:
            left = BUDGET - (time.monotonic() - began)
            if left <= 0:
                return None
            sock.settimeout(left)
            chunk = sock.recv(5 - len(answer))
            if not chunk:
                return None
            answer += chunk
    except OSError:
        return None
    if answer[:1] != b"P":  # "N": another installation, or stale code (that server exits)
        return None
    return int.from_bytes(answer[1:], "big")


def _same_user(sock: _socket.socket) -> bool:
    import _socket

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:  # not Linux: the folder's 0700 decides
        return True
    creds = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid (C ints)
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _wait(sock: _socket.socket, pid: int, here: int, hook: bool) -> int | None:
    """Say "go" with the descriptors of stdin, stdout, stderr and the working folder ``here``,
    pass signals on to ``pid`` and wait for the exit status it sends. When the child ends
    without one (killed) and no signal was passed on: ``NO_STATUS`` for a command, None for a
    ``hook`` (it then runs in-process: a hook exits 0 whatever happens, docs/hooks.md)."""
    import _signal  # type: ignore[import-not-found]
    import _socket

    forwarded: list[int] = []

    def forward(signum: int, frame: object) -> None:
        forwarded.append(signum)
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for name in FORWARDED:
        signum = getattr(_signal, name, None)
        if signum is not None and _signal.getsignal(signum) != _signal.SIG_IGN:
            _signal.signal(signum, forward)
    status = b""
    try:
        sock.settimeout(None)
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2, here))
        sock.sendmsg([b"G"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        while len(status) < 5:
            chunk = sock.recv(5 - len(status))
            if not chunk:
                break
            status += chunk
    except OSError:
        pass
    if len(status) == 5 and status[:1] == b"S":
        return int.from_bytes(status[1:], "big")
    if forwarded:  # the child died of the signal passed on: so does this process, as in-process it would
        _signal.signal(forwarded[-1], _signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    then = ("it runs here instead" if hook
            else f"run the command again, or set {OFF_ENV}=1 to run without it")
    try:
        sys.stderr.write(f"memcli: the warm server's process {pid} running this command ended without an "
                         f"exit status (killed?); {then}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return None if hook else NO_STATUS


def start(installed: str | None = None) -> bool:
    """Start this installation's server, detached (its own session, output to a log beside its
    socket), unless another process is starting one now. True when one was started. Never raises.

    Args:
        installed: :func:`installation` (computed when not given).
    """
    try:
        import fcntl
    except ImportError:  # not Unix
        return False
    installed = installation() if installed is None else installed
    path = socket_path(installed)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if not _mine(os.path.dirname(path), private=True):
            return False
        lock = os.open(path[:-len(".sock")] + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a server is being started (it holds the lock until it serves)
            return False
        return _spawn(path, installed, lock)
    finally:
        os.close(lock)


def _spawn(path: str, installed: str, lock: int) -> bool:
    """``python [the same flags] -c …`` with this process's ``sys.path``, in a session of its own."""
    import subprocess  # loaded already by most commands (git)

    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    # UTF-8 mode also follows the locale: a C locale turns it on (PEP 540) and sets LC_CTYPE for
    # the processes this one starts (PEP 538), in which it would then be off; said explicitly
    flags += ["-X", f"utf8={sys.flags.utf8_mode}"]
    code = (f"import sys; sys.path[:] = {search_path()!r}; from memcli.cli.zygote import main; "
            f"sys.exit(main({path!r}, {installed!r}, {lock}))")
    log = path[:-len(".sock")] + ".log"
    try:
        os.set_inheritable(lock, True)
        os.posix_spawn(sys.executable, [sys.executable, *flags, "-c", code], os.environ,
                       file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
                                     (os.POSIX_SPAWN_DUP2, 1, 2)],
                       setsid=True)
    except (OSError, ValueError, TypeError):
        return False
    return True
