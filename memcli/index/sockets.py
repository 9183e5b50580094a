"""The Unix sockets a workspace's long-lived processes serve to its short-lived ones (SPEC.md
section 8: "a Unix socket only its owner can open"): where they are, who may use them, and
one question asked within a budget. The servers are ``index.warm.Server``.

Where: ``<runtime>/memcli-<uid>/<key>[.<service>].sock``, ``<runtime>`` being
``$XDG_RUNTIME_DIR`` when it is a folder of this user, else the system's temporary folder;
the ``memcli-<uid>`` folder is made 0700 and refused unless this user owns it with no
access for others; a socket is 0600, and both ends check the other's uid (``SO_PEERCRED``)
before anything is said. ``<key>`` is a hash of the workspace's index file, so each store
has its own sockets; ``<service>`` names what is served (none: the semantic model of an
MCP server, ``index.warm``; ``fresh``: the freshness watcher, ``index.watcher``).

The protocol: one JSON object on one line (at most ``MAX_LINE`` bytes), one JSON line
back, then the server closes the connection.

Every read asks the freshness watcher (``index.fresh``), so this module is on the hot path
and kept lean: it uses ``_socket``, the C module under the standard ``socket`` module, whose
Python layer (selectors, enums, ``makefile``) would add several milliseconds of imports to
every read for nothing used here.
"""

from __future__ import annotations

import _socket
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import socket

#: The longest request line a server reads (bytes).
MAX_LINE = 65536


def folder() -> Path:
    """The folder of this user's sockets (see the module docstring); not created here.

    ``$XDG_RUNTIME_DIR`` when it is a folder of this user, else the first of ``$TMPDIR``,
    ``$TEMP``, ``$TMP`` that is a folder, else ``/tmp``: the order of Python's
    ``tempfile.gettempdir`` on Unix, without importing ``tempfile`` (with ``shutil``,
    ``random``, ``bz2`` and ``lzma``, some 5 ms of every write and large-store read)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and mine(Path(runtime)):
        base = Path(runtime)
    else:
        base = Path(next((d for d in (os.environ.get(n) for n in ("TMPDIR", "TEMP", "TMP")) if d and os.path.isdir(d)),
                         "/tmp"))
    return base / f"memcli-{os.getuid()}"


def mine(path: Path, private: bool = False) -> bool:
    """Whether ``path`` is a real folder of this user (and, with ``private``, closed to everyone else)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    import stat

    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and (not private or info.st_mode & 0o077 == 0))


def socket_path(index: Path, service: str = "") -> Path:
    """The socket of ``service`` (see the module docstring) for the store whose index file is ``index``."""
    from memcli.digests import blake2b  # not hashlib: no OpenSSL load on a read

    key = blake2b(str(Path(index).resolve()).encode(), digest_size=10).hexdigest()
    return folder() / (f"{key}.{service}.sock" if service else f"{key}.sock")


def same_user(conn: _socket.socket) -> bool:
    """Whether the peer of the connected ``conn`` runs as this user (Linux ``SO_PEERCRED``;
    elsewhere the folder's 0700 decides)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return True
    import struct

    creds = conn.getsockopt(_socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


def bind_private(path: Path, live: Callable[[], bool], backlog: int) -> tuple[socket.socket, tuple[int, int]]:
    """A listening Unix socket at ``path`` that only this user can open (a private folder, the
    socket file 0600 from its creation), and the ``(st_dev, st_ino)`` of the file it made
    (:func:`still_bound`). A file already at ``path`` is removed unless ``live()`` says a
    process still serves it. For the long-lived servers: ``index.warm.Server`` and the fork
    server (``memcli.cli.zygote``).

    Raises:
        OSError: the folder is not this user's alone, ``live()`` is true, or the socket cannot
            be bound.
    """
    import socket as sockets

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not mine(path.parent, private=True):
        raise OSError(f"{path.parent} is not a private folder of this user")
    if os.path.lexists(path):
        if live():
            raise OSError(f"another process serves {path}")
        path.unlink()
    sock = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        info = os.lstat(path)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock, (info.st_dev, info.st_ino)


def still_bound(path: Path, bound: tuple[int, int]) -> bool:
    """Whether ``path`` is still the socket file :func:`bind_private` made (``bound``): another
    process may have replaced it, taking this one's server for dead while it was stopped."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == bound


def ask(path: Path, request: dict, budget: float) -> dict | None:
    """Send ``request`` to the server at ``path`` and return its answer, or None on any failure
    (no server, not this user's folder or a server of another user (``SO_PEERCRED``, checked
    before anything is sent), a timeout after ``budget`` seconds in all, an error answer).

    Never raises, and costs one ``stat`` when no server runs.
    """
    started = time.monotonic()
    try:
        if not mine(path.parent, private=True):
            return None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        sock.settimeout(max(0.001, budget))
        sock.connect(str(path))
        if not same_user(sock):  # a socket another user serves (root planted it, say): never ask it
            return None
        sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            left = budget - (time.monotonic() - started)
            if left <= 0:
                return None
            sock.settimeout(left)
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        reply = json.loads(data)
        return reply if isinstance(reply, dict) and "error" not in reply else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
