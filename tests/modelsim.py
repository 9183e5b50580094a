"""A scripted model server: the Anthropic Messages API, as Claude Code calls it, on 127.0.0.1.

Point the real Claude Code at it (``ANTHROPIC_BASE_URL`` and a dummy key, see
:meth:`ModelSim.env`) and it runs whole sessions with no key and no network: each request of
the main conversation is answered with the next :class:`Turn` of a script (text, or
``tool_use`` blocks that Claude Code then runs, hooks and MCP servers included), and every
request is kept (:attr:`ModelSim.requests`) so a test can read what the CLI sent: the system
prompt, the messages, the ``tool_result`` blocks, the context that hooks added.

Usable from the tests (``from modelsim import ModelSim, Turn``) and from ``scripts/`` (put
``tests/`` on ``sys.path`` first); it needs nothing beyond the standard library.

What Claude Code 2.1.332 sends (``claude -p``, ``ANTHROPIC_API_KEY`` set; every request body
logged by this server):

* ``POST /v1/messages?beta=true`` with ``x-api-key`` (``Authorization: Bearer`` with
  ``ANTHROPIC_AUTH_TOKEN``), ``anthropic-version: 2023-06-01``, an ``anthropic-beta`` list,
  ``x-claude-code-session-id``; the body has ``model`` (``claude-opus-5-5``), ``system`` (a
  list of text blocks: a billing line, "You are a Claude agent, built on Anthropic's Claude
  Agent SDK.", the agent prompt), ``messages``, ``tools`` (Agent, Bash, Edit, Read, Write …;
  MCP tools are *deferred*: not in ``tools`` but named in a system message, and callable
  directly), ``metadata``, ``max_tokens`` 128000, ``thinking``, ``context_management``,
  ``output_config`` and ``stream: true``. A print-mode run makes no other request: no
  ``count_tokens``, no title, no ``HEAD``.
* Hook context travels inside ``messages`` as passages "SessionStart hook additional context:
  …", "UserPromptSubmit hook additional context: …" and, after a tool's result,
  "PreToolUse:Read hook additional context: …": in a ``role: "system"`` message (beta
  ``per-turn-control``), or at the end of the user message; both were seen, from one run to
  the next (:meth:`Request.hook_context` finds them either way).
* ``/compact`` sends the same tools and system prompt; its last user message asks for "a
  detailed summary of the conversation" in ``<analysis>`` and ``<summary>`` blocks (answered
  here as kind ``compact``, from :attr:`ModelSim.summary`, never from the script).
* Side requests (a session title: ``output_config.format`` is a JSON schema with a ``title``)
  carry no tools; they get :attr:`ModelSim.side`, or a JSON object that fits the schema.

The stream is the Messages API's server-sent events (see :func:`stream_events`).
"""

from __future__ import annotations

import http.server
import itertools
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, Self

#: Where the answers that no script gave say they come from.
NAME = "memcli-modelsim"
#: The model named where a request names none.
MODEL = "claude-sonnet-4-5"
#: What tells Claude Code's compaction request (``/compact``, or automatic) from a turn.
COMPACT_MARK = "summary of the conversation"


class Turn:
    """One scripted answer of the model: content blocks, then a stop reason.

    Build one with :meth:`text` or :meth:`tools`. ``stop_reason`` is ``tool_use`` when a block
    is a tool call, else ``end_turn``. Each ``tool_use`` block gets a fresh id every time the
    turn is sent.
    """

    __slots__ = ("blocks", "stop_reason")

    def __init__(self, blocks: list[dict[str, Any]], stop_reason: str | None = None) -> None:
        self.blocks = blocks
        self.stop_reason = stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in blocks)
                                           else "end_turn")

    @classmethod
    def text(cls, text: str) -> Turn:
        """A final answer: one text block, ``end_turn``."""
        return cls([{"type": "text", "text": text}])

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]], text: str | None = None) -> Turn:
        """Tool calls ``(name, input)`` in order, after an optional text block; ``tool_use``."""
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks += [{"type": "tool_use", "name": name, "input": arguments} for name, arguments in calls]
        return cls(blocks)

    def sent(self) -> list[dict[str, Any]]:
        """The blocks as sent: copies, each ``tool_use`` with a new id."""
        return [{**b, "id": _new_id("toolu")} if b["type"] == "tool_use" else dict(b) for b in self.blocks]

    def __repr__(self) -> str:
        return f"Turn({self.blocks!r}, {self.stop_reason!r})"


#: A script step: a fixed turn, or a function of the request that returns one.
Step = Turn | Callable[["Request"], Turn]


class Request:
    """One request the server received.

    Attributes:
        method, path, query, headers: the HTTP request (path without its query; header names
            in lower case).
        raw: the body as text; ``body``, its JSON (None when it had none, or no JSON).
        kind: what the server took it for: ``main`` (the main conversation, answered from the
            script), ``compact`` (a compaction summary), ``side`` (Claude Code's own, such as a
            title), ``count_tokens``, or ``other``.
        turn: the index of the script step that answered a ``main`` request (None when the
            script had run out).
        reply: the content blocks sent back (for ``/v1/messages``).
        at: when it arrived (``time.time()``, to set beside a CLI's debug log).
    """

    __slots__ = ("at", "body", "headers", "kind", "method", "path", "query", "raw", "reply", "turn")

    def __init__(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
                 raw: str, body: Any) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.raw = raw
        self.body = body
        self.kind = "other"
        self.turn: int | None = None
        self.reply: list[dict[str, Any]] = []
        self.at = time.time()

    def _field(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None

    @property
    def system(self) -> str:
        """The system prompt as one text (its blocks joined by newlines)."""
        system = self._field("system")
        if isinstance(system, list):
            return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        return system if isinstance(system, str) else ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` (empty for a request that has none)."""
        value = self._field("messages")
        return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools the request offers the model (deferred MCP tools are not among them)."""
        return [t.get("name", "") for t in self._field("tools") or [] if isinstance(t, dict)]

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each message (its text blocks and ``tool_result`` contents joined), in order;
        only the messages of ``role`` (``user``, ``assistant``, ``system``) when given."""
        return [message_text(m) for m in self.messages if role is None or m.get("role") == role]

    def tool_uses(self) -> list[dict[str, Any]]:
        """Every ``tool_use`` block of the request's assistant messages, in order."""
        return [b for m in self.messages if m.get("role") == "assistant"
                for b in blocks_of(m.get("content")) if b.get("type") == "tool_use"]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block of the request's user messages, in order."""
        return [b for m in self.messages if m.get("role") == "user"
                for b in blocks_of(m.get("content")) if b.get("type") == "tool_result"]

    def result_of(self, tool: str) -> dict[str, Any] | None:
        """The ``tool_result`` block answering the last call of ``tool`` in this request, or None."""
        ids = [b.get("id") for b in self.tool_uses() if b.get("name") == tool]
        results = {b.get("tool_use_id"): b for b in self.tool_results()}
        return results.get(ids[-1]) if ids else None

    def hook_context(self, event: str) -> list[str]:
        """The passages Claude Code added for ``event``'s hooks, in order: each from its line
        "EVENT hook additional context: " (``PreToolUse`` also matches ``PreToolUse:Read``) to the
        blank lines that end it (Claude Code joins its sections with two newlines and a hook's
        context ends with one; trailing white space dropped), wherever it is: a system message, or
        the end of a user message."""
        pattern = re.compile(rf"(?:^|\n)({re.escape(event)}(?::\S+)? hook additional context: .*?)(?=\n\n\n|\Z)",
                             re.DOTALL)
        return [m.group(1).rstrip() for text in self.texts() for m in pattern.finditer(text)]

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path} kind={self.kind} turn={self.turn})"


def blocks_of(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a plain string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []


def result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (its content is a string or a list of blocks)."""
    return "\n".join(b.get("text", "") for b in blocks_of(block.get("content")) if b.get("type") == "text")


def message_text(message: dict[str, Any]) -> str:
    """A message's text: its text blocks and its ``tool_result`` contents, joined by newlines."""
    parts = []
    for block in blocks_of(message.get("content")):
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(result_text(block))
    return "\n".join(parts)


_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    """An id in the Anthropic shape (``msg_…``, ``toolu_…``), unique in this process."""
    return f"{prefix}_01modelsim{next(_ids):014d}"


def classify(request: Request) -> str:
    """``main``, ``compact`` or ``side`` for a ``POST /v1/messages`` request.

    The main conversation (and a sub-agent's) offers tools; a compaction offers them too but
    its last user message asks for a summary (``COMPACT_MARK``); a side request of Claude
    Code's own (a session title, a name) offers none.
    """
    if not request.tool_names:
        return "side"
    last = next((m for m in reversed(request.messages) if m.get("role") == "user"), None)
    if last is not None and COMPACT_MARK in message_text(last) and "<summary>" in message_text(last):
        return "compact"
    return "main"


def fitting(schema: Any, word: str = NAME) -> Any:
    """The smallest value that fits a JSON schema (strings are ``word``, numbers their ``minimum`` or 1),
    for a structured-output request."""
    if not isinstance(schema, dict):
        return word
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = str(kind[0] if isinstance(kind, list) and kind else kind)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: fitting(properties.get(name), word) for name in schema.get("required") or list(properties)}
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)  # 1, not 0: a score may have an unstated floor (Gemini CLI's router's)
    return {"array": [], "boolean": False, "null": None}.get(kind, word)


class ModelSim(http.server.ThreadingHTTPServer):
    """A model server on ``127.0.0.1`` (a random port) answering from ``script``.

    Args:
        script: the answers for the main conversation, in order (across every CLI process that
            uses this server): a :class:`Turn`, or a function of the :class:`Request` that
            returns one. Past its end the main conversation gets :attr:`fallback`.
        side: the text for every side request (a title, a name).
        summary: the text of the ``<summary>`` a compaction gets.
        classify: what tells main, compaction and side requests apart (default :func:`classify`).

    Use it as a context manager, or call :meth:`close`. Every request is in :attr:`requests`
    in the order received; :meth:`main` gives those of the main conversation; a script step
    that raised is in :attr:`errors` (the CLI got an HTTP 500).
    """

    daemon_threads = True
    #: the class of the recorded requests (an API's own subclass adds its accessors)
    request_class: type[Request] = Request

    def __init__(self, script: Sequence[Step] | None = None, side: str = NAME,
                 summary: str = f"{NAME}: the conversation so far.",
                 classify: Callable[[Request], str] = classify) -> None:
        self.script: list[Step] = list(script or [])
        self.side = side
        self.summary = summary
        self.classify = classify
        self.fallback = Turn.text(f"({NAME}: the script has no more turns)")
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._next = 0
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self.serve_forever, name=NAME, daemon=True).start()

    @property
    def url(self) -> str:
        """The base URL for ``ANTHROPIC_BASE_URL`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def env(self, token: bool = False) -> dict[str, str]:
        """The environment that sends Claude Code here and nowhere else.

        ``ANTHROPIC_BASE_URL``, a dummy ``ANTHROPIC_API_KEY`` (``ANTHROPIC_AUTH_TOKEN`` with
        ``token``: sent as ``Authorization: Bearer``), and the switches that stop its other
        traffic (updates, telemetry, error reports, feature flags).
        """
        key = "ANTHROPIC_AUTH_TOKEN" if token else "ANTHROPIC_API_KEY"
        return {"ANTHROPIC_BASE_URL": self.url, key: "dummy-modelsim-key",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}

    def main(self) -> list[Request]:
        """The requests of the main conversation, in order."""
        return [r for r in self.requests if r.kind == "main"]

    def add(self, *steps: Step) -> None:
        """Append steps to the script (for a later prompt)."""
        with self._lock:
            self.script.extend(steps)

    @property
    def used(self) -> int:
        """How many steps of the script have answered a request."""
        return self._next

    def close(self) -> None:
        """Stop serving and free the port."""
        self.shutdown()
        self.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def encode_events(self, events: list[dict[str, Any]]) -> bytes:
        """The body of a server-sent-events answer: ``event: TYPE`` and ``data: JSON`` per event
        (an API whose clients read ``data:`` lines only overrides this)."""
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n"
                       for e in events).encode("utf-8")

    def dump(self) -> str:
        """Every request, one JSON line each (for a failure message or a file)."""
        return "\n".join(json.dumps({"at": r.at, "method": r.method, "path": r.path, "kind": r.kind, "turn": r.turn,
                                     "headers": r.headers, "body": r.body if r.body is not None else r.raw,
                                     "reply": r.reply}, ensure_ascii=False) for r in self.requests)

    def answer(self, request: Request) -> tuple[int, Any, list[dict[str, Any]] | None]:
        """What to send back: ``(status, JSON body, None)`` or ``(200, None, SSE events)``."""
        path = request.path.rstrip("/")
        if request.method in ("GET", "HEAD"):
            if path.endswith("/v1/models"):
                return 200, {"data": [_model(MODEL)], "has_more": False, "first_id": MODEL, "last_id": MODEL}, None
            if "/v1/models/" in path:
                return 200, _model(path.rsplit("/", 1)[-1]), None
            return 200, {}, None
        if path.endswith("/v1/messages/count_tokens"):
            request.kind = "count_tokens"
            return 200, {"input_tokens": max(1, len(request.raw) // 4)}, None
        if request.method != "POST" or not path.endswith("/v1/messages") or not isinstance(request.body, dict):
            return 404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": f"{NAME}: no {request.method} {request.path}"}}, None
        request.kind = self.classify(request)
        if request.kind == "main":
            with self._lock:
                index = self._next
                step = self.script[index] if index < len(self.script) else None
                if step is not None:
                    self._next += 1
            request.turn = index if step is not None else None
            turn = step(request) if callable(step) else (step or self.fallback)
        elif request.kind == "compact":
            turn = Turn.text(f"<analysis>{NAME}</analysis>\n<summary>{self.summary}</summary>")
        else:
            schema = (request.body.get("output_format") or (request.body.get("output_config") or {}).get("format")
                      or {}).get("schema")
            turn = Turn.text(json.dumps(fitting(schema, self.side)) if schema else self.side)
        request.reply = turn.sent()
        message = {"id": _new_id("msg"), "type": "message", "role": "assistant",
                   "model": request.body.get("model") or MODEL, "content": request.reply,
                   "stop_reason": turn.stop_reason, "stop_sequence": None,
                   "usage": {"input_tokens": max(1, len(request.raw) // 4),
                             "output_tokens": max(1, len(json.dumps(request.reply)) // 4),
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if request.body.get("stream"):
            return 200, None, stream_events(message)
        return 200, message, None


def _model(model_id: str) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": model_id, "created_at": "2025-01-01T00:00:00Z"}


def stream_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The server-sent events of ``message`` as the Messages API streams it.

    ``message_start`` (the message with empty content and no stop reason), ``ping``, then per
    block ``content_block_start`` (a text block with empty text, or a ``tool_use`` with its id,
    name and an empty ``input``), ``content_block_delta`` (``text_delta`` pieces, or
    ``input_json_delta`` whose ``partial_json`` pieces join to the input's JSON) and
    ``content_block_stop``; then ``message_delta`` (``stop_reason``, output tokens) and
    ``message_stop``. Each is sent as ``event: TYPE`` and ``data: JSON``.
    """
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"],
                                             "input": {}}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}
                       for piece in _pieces(json.dumps(block["input"], ensure_ascii=False))]
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}} for piece in _pieces(block["text"])]
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})
    return events


def _pieces(text: str, size: int = 24) -> list[str]:
    """``text`` cut into chunks (one empty chunk for an empty text), as a stream delivers it."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _handler(sim: ModelSim) -> type[http.server.BaseHTTPRequestHandler]:
    """The request handler class bound to ``sim``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK expects

        def _serve(handler) -> None:
            size = int(handler.headers.get("content-length") or 0)
            raw = handler.rfile.read(size).decode("utf-8", "replace") if size else ""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            url = urllib.parse.urlsplit(handler.path)
            request = sim.request_class(handler.command, url.path, urllib.parse.parse_qs(url.query),
                              {k.lower(): v for k, v in handler.headers.items()}, raw, body)
            with sim._lock:
                sim.requests.append(request)
            try:
                status, payload, events = sim.answer(request)
            except Exception as err:  # noqa: BLE001 - a broken script step is the test's to see, not a hang
                sim.errors.append(f"{request!r}: {type(err).__name__}: {err}")
                status, payload, events = 500, {"type": "error", "error": {"type": "api_error",
                                                                            "message": f"{NAME}: {err}"}}, None
            if events is not None:
                data = sim.encode_events(events)
                kind = "text/event-stream; charset=utf-8"
            else:
                data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
                kind = "application/json"
            handler.send_response(status)
            handler.send_header("content-type", kind)
            handler.send_header("content-length", str(len(data)))
            handler.send_header("request-id", _new_id("req"))
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(data)

        do_POST = do_GET = do_HEAD = do_PUT = do_DELETE = _serve

        def log_message(handler, *args: object) -> None:
            pass

    return Handler
