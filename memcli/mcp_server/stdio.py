"""memcli's stdio transport for the MCP server: the SDK's, with a size limit and an answer for every request.

The SDK's ``mcp.server.stdio.stdio_server`` reads stdin one text line at a time, however
long, and drops a line it cannot parse or validate without a word: the client then waits
for its own timeout (a lone surrogate ``"\\ud800"``, ``params`` given as a list, a line that
is not JSON). A 60 MB line was read whole and parsed before the next message was looked at.
This transport reads the same wire (newline-delimited JSON-RPC messages, MCP's stdio
transport) and differs in three ways:

1. a message longer than :data:`MAX_MESSAGE_BYTES` is not kept: its bytes are skipped up to
   the next newline, and the request is answered with ``-32600`` (its ``id`` read from the
   first or last bytes of the line when it is there, else ``null``); the messages after it
   are read as usual;
2. a line that is not JSON (or nested deeper than the JSON reader goes) is answered with
   ``-32700`` (parse error, ``id: null``, JSON-RPC 2.0 section 5.1);
3. a JSON value that is not a valid JSON-RPC message is answered with ``-32600``, a request
   whose ``params`` is not an object with ``-32602``, and a string holding a lone surrogate
   (not Unicode, so not a string MCP can carry) with ``-32602`` or ``-32600``; each with the
   request's ``id`` when it has one. A notification (no ``id``) or a response from the
   client is never answered (JSON-RPC 2.0 section 4.1), only logged on stderr;
4. when stdin ends (a client that writes its requests and closes its end, ``printf … |
   memcli mcp``), the requests already read are served and answered before the server is
   told to stop (the SDK ends at once, so a ``remember`` in flight was committed but never
   answered), for at most :data:`IN_FLIGHT` seconds.

What passes is validated by the SDK's own ``jsonrpc_message_adapter``, as in the SDK.
While serving, descriptors 0 and 1 point at ``/dev/null`` and stderr (as the SDK does), so
a child process or a stray ``print`` never reads or writes the wire.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

#: The longest message read, in bytes of its line (1 MiB). The largest a tool takes is a
#: ``remember`` text of 20,000 characters (``model.MAX_BODY_CHARS``), at most 120 KB once
#: JSON-escaped; a longer line is refused without being kept in memory.
MAX_MESSAGE_BYTES = 1 << 20
#: Bytes read from stdin at a time.
CHUNK = 1 << 16
#: Bytes of a too-long line kept at each end to find its ``id``.
EDGE = 4096
#: Seconds the transport waits, when the server stops, for the answers still queued to be written.
DRAIN = 5.0
#: Seconds the transport waits, once stdin has ended, for the requests still being served to be
#: answered before it tells the server to stop (a ``remember`` takes its commit's time; the
#: longest tool deadline is ``[git] lock_timeout`` plus a commit, well under this).
IN_FLIGHT = 60.0

_LOG = logging.getLogger("memcli.mcp_server")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: An ``"id": VALUE`` member closing the top-level object at the end of a line (a client
#: that writes ``id`` last, as the TypeScript SDK does).
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*}\s*$')


class Lines:
    """Split a byte stream into lines of at most ``limit`` bytes; pure, fed chunk by chunk.

    :meth:`feed` returns complete lines as ``(line, None)``, and for a line longer than
    ``limit`` one ``(None, (head, tail, size))`` once its end has been read: its first and
    last :data:`EDGE` bytes and its length in bytes (the rest is never kept).

    Args:
        limit: most bytes of a line (the newline not counted).
    """

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._skipping = False
        self._head = b""
        self._tail = b""
        self._size = 0

    def feed(self, data: bytes) -> list[tuple[bytes | None, tuple[bytes, bytes, int] | None]]:
        """The lines that ``data`` completes, in order (see the class)."""
        out: list[tuple[bytes | None, tuple[bytes, bytes, int] | None]] = []
        while data:
            end = data.find(b"\n")
            piece, data = (data, b"") if end < 0 else (data[:end], data[end + 1:])
            if self._skipping:
                self._size += len(piece)
                self._tail = (self._tail + piece)[-EDGE:]
            else:
                self._buf += piece
                if len(self._buf) > self.limit:
                    self._skipping, self._size = True, len(self._buf)
                    self._head, self._tail = bytes(self._buf[:EDGE]), bytes(self._buf[-EDGE:])
                    self._buf = bytearray()
            if end >= 0:
                out.append(self._finish())
        return out

    def close(self) -> list[tuple[bytes | None, tuple[bytes, bytes, int] | None]]:
        """What is left at the end of the stream: a last line without its newline, if any."""
        return [self._finish()] if self._skipping or self._buf.strip() else []

    def _finish(self) -> tuple[bytes | None, tuple[bytes, bytes, int] | None]:
        if self._skipping:
            found = (self._head, self._tail, self._size)
            self._skipping, self._head, self._tail, self._size = False, b"", b"", 0
            return None, found
        line, self._buf = bytes(self._buf), bytearray()
        return line, None


def _head_id(head: bytes) -> Any:
    """The ``id`` member of the top-level object at the start of a cut message, or None.

    Scans ``{"jsonrpc": "2.0", "id": 7, …`` member by member at depth 1 only (an ``id``
    inside ``params`` is not the request's); gives up at the first thing it cannot read.
    """
    text = head.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    pos = re.match(r"\s*\{\s*", text)
    if pos is None:
        return None
    i = pos.end()
    while True:
        try:
            key, i = decoder.raw_decode(text, i)
            colon = re.compile(r"\s*:\s*").match(text, i)
            if not isinstance(key, str) or colon is None:
                return None
            value, i = decoder.raw_decode(text, colon.end())
        except (ValueError, RecursionError):
            return None
        if key == "id":
            return value
        sep = re.compile(r"\s*,\s*").match(text, i)
        if sep is None:
            return None
        i = sep.end()


def _valid_id(value: Any) -> int | str | None:
    """``value`` if it can be a JSON-RPC request id (a string or a whole number, not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def cut_id(head: bytes, tail: bytes) -> int | str | None:
    """The ``id`` of a message too long to read, from its first or last bytes; None when not found."""
    found = _valid_id(_head_id(head))
    if found is None:
        match = _TAIL_ID.search(tail)
        if match is not None:
            try:
                found = _valid_id(json.loads(match.group(1)))
            except ValueError:
                found = None
    return found


def _surrogate_at(value: Any, path: str = "") -> str | None:
    """Where the first string (or key) holding a lone surrogate sits in ``value`` (``params.arguments.query``)."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where or "the message"
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{where}.{key}" if where else str(key)
                if _SURROGATE.search(key):
                    return where or "the message"
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{n}]") for n, child in enumerate(item))
    return None


def _tool_call_problem(params: Any) -> str:
    """What is wrong with the ``params`` of a ``tools/call`` request ('' when nothing): the
    tool's ``name`` must be a string, its ``arguments`` an object when given."""
    name = (params or {}).get("name")
    if not isinstance(name, str) or not name:
        kind = ("missing" if "name" not in (params or {}) else "null" if name is None else "empty" if name == ""
                else type(name).__name__.replace("dict", "an object").replace("list", "an array"))
        return f"params.name must be the tool's name, a string (see tools/list), not {kind}"
    arguments = (params or {}).get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        kind = type(arguments).__name__.replace("list", "an array").replace("str", "a string")
        return f"params.arguments must be an object of the tool's named arguments, not {kind}"
    return ""


def _error(request_id: int | str | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))


def check(line: bytes) -> SessionMessage | None:
    """The message a line holds, an error answer for it, or None when it gets neither.

    Returns:
        A ``SessionMessage`` of the client's message; or of a ``JSONRPCError`` to send back
        (see the module's docstring for the codes); or None for a blank line and for a bad
        notification or response (JSON-RPC never answers those; a line on stderr says why).
    """
    text = line.decode("utf-8", errors="replace")  # as the SDK reads stdin
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except RecursionError:
        return _error(None, types.PARSE_ERROR, "Parse error: the message is nested too deeply to read")
    except ValueError as err:
        return _error(None, types.PARSE_ERROR, f"Parse error: the line is not JSON ({err})")
    if not isinstance(value, dict):
        kind = "an array (JSON-RPC batches are not part of MCP)" if isinstance(value, list) else "not an object"
        return _error(None, types.INVALID_REQUEST, f"Invalid Request: the message is {kind}")
    request_id = _valid_id(value.get("id"))
    is_request = "method" in value and "id" in value
    if "method" in value:
        answer = "id" in value  # a notification is never answered
    else:
        answer = "result" not in value and "error" not in value  # nor is a response
    problem: tuple[int, str] | None = None
    where = _surrogate_at(value)
    if where is not None:
        code = types.INVALID_PARAMS if where.startswith("params") else types.INVALID_REQUEST
        problem = (code, f"Invalid {'params' if code == types.INVALID_PARAMS else 'Request'}: {where} holds a lone "
                         "surrogate (\\ud800-\\udfff), which is not Unicode text; send UTF-8 text")
    elif "id" in value and request_id is None:
        problem = (types.INVALID_REQUEST, "Invalid Request: the id must be a string or a whole number")
    elif is_request and "params" in value and not isinstance(value["params"], dict | None):
        problem = (types.INVALID_PARAMS, f"Invalid params: params must be an object of named values, not "
                                         f"{type(value['params']).__name__.replace('list', 'an array')}")
    elif is_request and value.get("method") == "tools/call" and (said := _tool_call_problem(value.get("params"))):
        problem = (types.INVALID_PARAMS, f"Invalid params: {said}")  # the SDK's answer named nothing (stop 36)
    else:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValidationError as err:
            reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'message'}: {e['msg']}"
                                for e in err.errors(include_url=False, include_input=False)[:3])
            problem = (types.INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({reasons})")
    if not answer:
        _LOG.warning("memcli: a message without an id was dropped: %s", problem[1])
        return None
    return _error(request_id, *problem)


def too_long(head: bytes, tail: bytes, size: int, limit: int = MAX_MESSAGE_BYTES) -> SessionMessage:
    """The answer to a message of ``size`` bytes, over ``limit``: ``-32600`` with its id if found."""
    return _error(cut_id(head, tail), types.INVALID_REQUEST,
                  f"Invalid Request: the message is {size:,} bytes, more than the {limit:,} this server reads; "
                  "see the size limits in each tool's input schema")


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of ``fd``, with ``fd`` itself pointed at ``diversion``; -1 when it cannot be done."""
    try:
        private = os.dup(fd)
    except OSError:
        return -1
    try:
        os.dup2(diversion, fd)
    except OSError:
        os.close(private)
        return -1
    return private


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@asynccontextmanager
async def stdio_transport(limit: int = MAX_MESSAGE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """Serve MCP over the process's stdin and stdout; yields ``(read_stream, write_stream)`` for
    ``mcp.server.lowlevel.Server.run``, as ``mcp.server.stdio.stdio_server`` does.

    Args:
        limit: most bytes of one message (its line).
    """
    null = os.open(os.devnull, os.O_RDONLY)
    stdin_fd = _claim(0, null)
    stdout_fd = _claim(1, 2)
    os.close(null)
    in_fd = 0 if stdin_fd < 0 else stdin_fd
    out_fd = 1 if stdout_fd < 0 else stdout_fd
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    answers = write_send.clone()
    lines = Lines(limit)
    in_flight: set[Any] = set()  # ids of the requests passed to the server and not yet answered
    settled = anyio.Event()  # set whenever in_flight becomes empty after stdin has ended
    ended = False

    async def handle(found: tuple[bytes | None, tuple[bytes, bytes, int] | None]) -> None:
        line, cut = found
        message = check(line) if line is not None else too_long(*cut, limit=limit)  # type: ignore[misc]
        if message is None:
            return
        if isinstance(message.message, types.JSONRPCError):
            _LOG.warning("memcli: refused a message: %s", message.message.error.message)
            await answers.send(message)
        else:
            if isinstance(message.message, types.JSONRPCRequest):
                in_flight.add(message.message.id)
            await read_send.send(message)

    async def reader() -> None:
        nonlocal ended
        try:
            async with read_send, answers:
                while True:
                    data = await anyio.to_thread.run_sync(os.read, in_fd, CHUNK, abandon_on_cancel=True)
                    if not data:
                        break
                    for found in lines.feed(data):
                        await handle(found)
                for found in lines.close():
                    await handle(found)
                ended = True
                if in_flight:  # stdin is done: answer what was asked before the server is told to stop
                    with anyio.move_on_after(IN_FLIGHT):
                        await settled.wait()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await anyio.lowlevel.checkpoint()

    def answered(message: Any) -> None:
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            in_flight.discard(message.id)
            if ended and not in_flight:
                settled.set()

    async def writer() -> None:
        try:
            async with write_recv:
                async for session_message in write_recv:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await anyio.to_thread.run_sync(_write_all, out_fd, data.encode("utf-8") + b"\n")
                    answered(session_message.message)
        except (anyio.ClosedResourceError, BrokenPipeError, OSError):
            await anyio.lowlevel.checkpoint()

    written = anyio.Event()

    async def writing() -> None:
        try:
            await writer()
        finally:
            written.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writing)
            try:
                yield read_recv, write_send
            finally:
                write_send.close()  # the writer sends what is queued, then ends with the reader's clone
                with anyio.move_on_after(DRAIN, shield=True):
                    await written.wait()
                tg.cancel_scope.cancel()  # a reader still blocked on stdin is abandoned
    finally:
        for fd, private in ((0, stdin_fd), (1, stdout_fd)):
            if private >= 0:
                try:
                    os.dup2(private, fd)
                except OSError:
                    pass
