"""The servers of a workspace's long-lived processes: one socket each, serving the short-lived
processes of the same user (SPEC.md section 8: "a Unix socket only its owner can open");
where the sockets are, who may use them and the client's ``ask``: ``index.sockets``.

A :class:`Server` answers one JSON object on one line (at most ``MAX_LINE`` bytes) with one
JSON line, then closes the connection. The request's first key that names one of its
handlers picks the handler, which gets the whole request and returns the answer, so one
process can serve several things by merging handler tables. The tables in use:

- the semantic model of an MCP server (``service.semantic.Warm``; :func:`model_handlers`),
  at ``socket_path(index)``:

  - ``{"ping": true}`` -> ``{"model": model_id, "name": display name}``
  - ``{"embed": "text"}`` -> ``{"model": …, "vector": base64 of little-endian float32}``
  - ``{"search": "text", "query": {…}, "limit": n, "also": [ids], "skip": [ids]}`` -> ``{"model": …,
    "name": …, "hits": [[id, score], …], "also": {id: score}}``: the query's filters
    (:func:`query_to_json`) apply on the server's indexes, the ``skip`` ids (the caller's
    quarantined memories) are never scored, and the caller checks every id again on its own
    (its filters and its quarantine: ``hybrid._checked``);

- the freshness watcher (``index.watcher``), at ``socket_path(index, "fresh")``:
  ``{"ping": true}`` and ``{"fresh": true}`` (see there).

Anything else, a line too long, bad JSON or a wrong type -> ``{"error": "..."}``. The server
never blocks on a client: each connection has ``CLIENT_TIMEOUT`` seconds in its own thread.
The client (:func:`ask`) gives up silently (None) at its budget. This module imports
neither numpy nor the model: the server is handed callables.
"""

from __future__ import annotations

import json
import socket
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from memcli.index import Query
from memcli.index.sockets import MAX_LINE, ask, bind_private, folder, same_user, socket_path, still_bound

__all__ = ["MAX_LINE", "Server", "ask", "folder", "model_handlers", "query_from_json", "query_to_json",
           "socket_path"]

CLIENT_TIMEOUT = 2.0
#: The ``Query`` fields a search request carries, and how each is read back.
_TEXT = ("text", "mode", "category", "tag", "subject", "path", "actor", "order")
_TIMES = ("now", "created_after", "created_before", "updated_after", "updated_before")


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


#: A request handler: the whole request in, the answer out (``{"error": …}`` for a refusal).
#: It may raise ``ValueError`` (the answer is its message) or anything else (``failed``).
Handler = Callable[[dict], dict]


class Server:
    """The socket server of a long-lived process (see the module docstring).

    Args:
        path: the socket (:func:`socket_path`).
        handlers: request key -> :data:`Handler`; a request is answered by the handler of
            its first key found here (:func:`model_handlers` makes the model's).

    Raises:
        OSError: the folder is not this user's alone, another live process serves ``path``,
            or the socket cannot be bound.
    """

    def __init__(self, path: Path, handlers: dict[str, Handler]) -> None:
        self.path = path
        self.handlers = handlers
        self.sock, self._bound = bind_private(path, lambda: _answers(path), 16)
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="memcli-warm-socket", daemon=True)
        self.thread.start()

    def owns(self) -> bool:
        """Whether ``path`` is still the socket this server bound (``sockets.still_bound``)."""
        return still_bound(self.path, self._bound)

    def close(self) -> None:
        """Stop serving and remove the socket file (only if it is still this server's)."""
        self.closed.set()
        try:
            if self.owns():
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
            if not same_user(conn):
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
        handler = next((self.handlers[key] for key in request if key in self.handlers), None) \
            if isinstance(request, dict) and len(request) <= 5 else None
        if handler is None:
            return {"error": f"send an object with one of: {', '.join(self.handlers)}"}
        try:
            return handler(request)
        except ValueError as err:
            return {"error": str(err)[:200]}
        except Exception as err:  # noqa: BLE001 - a failing handler never takes the server down
            return {"error": f"failed: {type(err).__name__}"}


def model_handlers(ping: Callable[[], dict], embed: Callable[[str], tuple[str, bytes]],
                   search: Callable[[str, Query, int, list[str], set[str]], dict]) -> dict[str, Handler]:
    """The handlers of the semantic model's requests (the module docstring) around its callables.

    Args:
        ping: ``f() -> dict``: what the model is.
        embed: ``f(text) -> (model_id, little-endian float32 bytes)``.
        search: ``f(text, Query, limit, also ids, skip ids) -> dict``.
    """

    def pinged(request: dict) -> dict:
        if request.get("ping") is not True:
            raise ValueError("ping must be true")
        return ping()

    def embedded(request: dict) -> dict:
        text = request.get("embed")
        if not isinstance(text, str):
            raise ValueError("embed must be a string")
        import base64

        model, data = embed(text)
        return {"model": model, "vector": base64.b64encode(data).decode()}

    def searched(request: dict) -> dict:
        text = request.get("search")
        if not isinstance(text, str):
            raise ValueError("search must be a string")
        query = query_from_json(request.get("query"))
        limit = request.get("limit", 50)
        also = request.get("also", [])
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise ValueError("limit must be 1 to 1000")
        if not isinstance(also, list) or len(also) > 1000 or not all(isinstance(i, str) for i in also):
            raise ValueError("also must be a list of ids")
        skip = request.get("skip", [])
        if not isinstance(skip, list) or len(skip) > 1000 or not all(isinstance(i, str) for i in skip):
            raise ValueError("skip must be a list of ids")
        return search(text, query, limit, also, set(skip))

    return {"ping": pinged, "embed": embedded, "search": searched}


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
