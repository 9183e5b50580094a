"""The warm model's socket: a long-lived process serves embeddings and semantic scores to the
short-lived ones of the same workspace (SPEC.md section 8: "a Unix socket only its owner can open").

Where: ``<runtime>/memcli-<uid>/<key>.sock``, ``<runtime>`` being ``$XDG_RUNTIME_DIR`` when it
is a folder of this user, else the system's temporary folder; the ``memcli-<uid>`` folder is
made 0700 and refused unless this user owns it with no access for others; the socket is
0600, and the server also checks the peer's uid (``SO_PEERCRED``) and closes any other.
``<key>`` is a hash of the workspace's index file, so each workspace has its own socket.

The protocol: one JSON object on one line (at most ``MAX_LINE`` bytes), one JSON line
back, then the server closes the connection.

- ``{"ping": true}`` -> ``{"model": model_id, "name": display name}``
- ``{"embed": "text"}`` -> ``{"model": …, "vector": base64 of little-endian float32}``
- ``{"search": "text", "query": {…}, "limit": n, "also": [ids]}`` -> ``{"model": …, "name": …,
  "hits": [[id, score], …], "also": {id: score}}``: the query's filters (:func:`query_to_json`)
  apply on the server's indexes, and the caller checks every id again on its own.

Anything else, a line too long, bad JSON or a wrong type -> ``{"error": "..."}``. The server
never blocks on a client: each connection has ``CLIENT_TIMEOUT`` seconds in its own thread.
The client (:func:`ask`) gives up silently (None) at its budget. This module imports
neither numpy nor the model: the server is handed callables.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from memcli.index import Query

MAX_LINE = 65536
CLIENT_TIMEOUT = 2.0
#: The ``Query`` fields a search request carries, and how each is read back.
_TEXT = ("text", "mode", "category", "tag", "subject", "path", "actor", "order")
_TIMES = ("now", "created_after", "created_before", "updated_after", "updated_before")


def folder() -> Path:
    """The folder of this user's sockets (see the module docstring); created 0700 if missing."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and _mine(Path(runtime)) else Path(tempfile.gettempdir())
    return base / f"memcli-{os.getuid()}"


def _mine(path: Path, private: bool = False) -> bool:
    """Whether ``path`` is a real folder of this user (and, with ``private``, closed to everyone else)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    import stat

    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and (not private or info.st_mode & 0o077 == 0))


def socket_path(index: Path) -> Path:
    """The socket of the workspace whose index file is ``index``."""
    import hashlib

    key = hashlib.blake2b(str(Path(index).resolve()).encode(), digest_size=10).hexdigest()
    return folder() / f"{key}.sock"


def query_to_json(query: Query) -> dict:
    """The filters and text of ``query`` as JSON (times as POSIX seconds)."""
    out: dict = {name: getattr(query, name) for name in _TEXT}
    out.update({name: getattr(query, name).timestamp() if getattr(query, name) else None for name in _TIMES})
    out.update(scopes=list(query.scopes), statuses=list(query.statuses), include_expired=bool(query.include_expired),
               limit=int(query.limit))
    return out


def query_from_json(data: object) -> Query:
    """The :class:`Query` of :func:`query_to_json`.

    Raises:
        ValueError: a field is missing or has the wrong type.
    """
    if not isinstance(data, dict):
        raise ValueError("query must be an object")

    def text(name: str, required: bool = False) -> str | None:
        value = data.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or len(value) > 10_000:
            raise ValueError(f"query.{name} must be a string")
        return value

    def instant(name: str) -> datetime:
        value = data.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"query.{name} must be a number")
        return datetime.fromtimestamp(value, timezone.utc)

    def moment(name: str) -> datetime | None:
        return None if data.get(name) is None else instant(name)

    def strings(name: str) -> list[str]:
        value = data.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > 100:
            raise ValueError(f"query.{name} must be a list of strings")
        return value

    limit = data.get("limit", 20)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ValueError("query.limit must be 1 to 1000")
    return Query(text=text("text", True) or "", scopes=strings("scopes"), now=instant("now"),
                 mode=text("mode") or "ranked", statuses=tuple(strings("statuses")),
                 include_expired=data.get("include_expired") is True, category=text("category"), tag=text("tag"),
                 subject=text("subject"), limit=limit, path=text("path"), created_after=moment("created_after"),
                 created_before=moment("created_before"), updated_after=moment("updated_after"),
                 updated_before=moment("updated_before"), order=text("order") or "importance", actor=text("actor"))


class Server:
    """The socket server of a long-lived process.

    Args:
        path: the socket (:func:`socket_path`).
        handlers: ``"embed"`` -> ``f(text) -> (model_id, float32 bytes)``, ``"search"`` ->
            ``f(text, Query, limit, also) -> dict`` and ``"ping"`` -> ``f() -> dict``.

    Raises:
        OSError: the folder is not this user's alone, or the socket cannot be bound.
    """

    def __init__(self, path: Path, handlers: dict[str, Callable]) -> None:
        self.path = path
        self.handlers = handlers
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _mine(path.parent, private=True):
            raise OSError(f"{path.parent} is not a private folder of this user")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if path.exists() or path.is_symlink():
            if _answers(path):
                self.sock.close()
                raise OSError(f"another process serves {path}")
            path.unlink()
        old = os.umask(0o177)
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.sock.listen(16)
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="memcli-warm-socket", daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving and remove the socket file."""
        self.closed.set()
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(CLIENT_TIMEOUT)
            if not _same_user(conn):
                return  # closed without a word: only the owner may talk to it
            line = _read_line(conn)
            reply = self._reply(line)
            conn.sendall(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def _reply(self, line: bytes | None) -> dict:
        if line is None:
            return {"error": f"send one JSON object on one line of at most {MAX_LINE} bytes"}
        try:
            request = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return {"error": "not JSON"}
        if not isinstance(request, dict) or len(request) > 4:
            return {"error": "send an object with one of: ping, embed, search"}
        try:
            if request.get("ping") is True and "ping" in self.handlers:
                return self.handlers["ping"]()
            text = request.get("embed")
            if isinstance(text, str) and "embed" in self.handlers:
                import base64

                model, data = self.handlers["embed"](text)
                return {"model": model, "vector": base64.b64encode(data).decode()}
            text = request.get("search")
            if isinstance(text, str) and "search" in self.handlers:
                query = query_from_json(request.get("query"))
                limit = request.get("limit", 50)
                also = request.get("also", [])
                if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
                    return {"error": "limit must be 1 to 1000"}
                if not isinstance(also, list) or len(also) > 1000 or not all(isinstance(i, str) for i in also):
                    return {"error": "also must be a list of ids"}
                return self.handlers["search"](text, query, limit, also)
        except ValueError as err:
            return {"error": str(err)[:200]}
        except Exception as err:  # noqa: BLE001 - a failing model never takes the server down
            return {"error": f"failed: {type(err).__name__}"}
        return {"error": "send an object with one of: ping, embed, search"}


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (Linux ``SO_PEERCRED``; elsewhere the folder's 0700 decides)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


def _read_line(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_LINE:
            return None
    line = data.split(b"\n", 1)[0]
    return line if line.strip() else None


def _answers(path: Path) -> bool:
    """Whether a server answers at ``path`` now (a leftover socket file of a dead process does not)."""
    return ask(path, {"ping": True}, 0.2) is not None


def ask(path: Path, request: dict, budget: float) -> dict | None:
    """Send ``request`` to the server at ``path`` and return its answer, or None on any failure
    (no server, not this user's folder or a server of another user (``SO_PEERCRED``, checked
    before anything is sent), a timeout after ``budget`` seconds in all, an error answer).

    Never raises, and costs one ``stat`` when no server runs.
    """
    import time

    started = time.monotonic()
    try:
        if not _mine(path.parent, private=True):
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        sock.settimeout(max(0.001, budget))
        sock.connect(str(path))
        if not _same_user(sock):  # a socket another user serves (root planted it, say): never ask it
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
