"""A scripted model server for Codex: the OpenAI Responses API, as Codex calls it, on 127.0.0.1.

The same script and recording as :class:`modelsim.ModelSim` (a :class:`modelsim.Turn` per
model turn: text, or tool calls that Codex runs, hooks included), in the wire format of a
custom model provider with ``wire_api = "responses"``: :meth:`CodexSim.config` writes the
``~/.codex/config.toml`` that sends Codex here. Standard library only.

What Codex 0.171.0 sends (``codex exec``; every request logged by this server):

* ``POST /v1/responses`` (the provider's ``base_url`` is ``URL/v1``; no ``Authorization``
  without an ``env_key``), headers ``originator: codex_exec``, ``session-id`` and
  ``x-codex-turn-metadata`` (JSON: ``request_kind`` ``turn``, ``turn_id``…); the body has
  ``model``, ``input`` (items: ``message`` with role ``developer`` (the first holds the
  system prompt, "You are a coding agent running in the Codex CLI…", later ones skills and
  hook context) or ``user`` (the environment context, the prompt) and ``input_text`` parts;
  ``function_call`` with ``name``, ``arguments`` (a JSON text) and ``call_id``;
  ``function_call_output`` with ``call_id`` and ``output``, a text), ``tools`` (``type:
  function`` entries: ``exec_command`` (``cmd``, a shell command line), ``write_stdin``,
  ``view_image``…), ``tool_choice``, ``parallel_tool_calls``, ``reasoning``, ``store``,
  ``stream: true``, ``include``, ``prompt_cache_key`` and ``client_metadata``. It makes no
  other request in ``codex exec`` (no ``/models`` with a custom provider).
* The answer it reads (``codex-rs/codex-api/src/sse/responses.rs``): server-sent events
  ``response.created`` (a ``response`` object), ``response.output_item.added`` and
  ``response.output_item.done`` (an ``item``: ``message`` with ``output_text`` content, or
  ``function_call``), ``response.output_text.delta``, and ``response.completed`` (``response``
  with ``id`` and ``usage``); a stream that ends without ``response.completed`` is an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from modelsim import NAME, ModelSim, Request, Turn, _new_id, fitting

#: The model named in the written config: one of Codex's bundled models, so that it has the model
#: metadata (with a made-up name it offers no ``apply_patch`` tool and warns "Model metadata … not found")
MODEL = "gpt-5.5"
#: The provider id in ``config.toml``.
PROVIDER = "modelsim"


class CodexRequest(Request):
    """A request Codex sent: the Responses API's ``input`` items, read."""

    __slots__ = ()

    @property
    def items(self) -> list[dict[str, Any]]:
        """The request's ``input`` items (empty for a request that has none)."""
        value = self._field("input")
        return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []

    @property
    def system(self) -> str:
        """Codex's system prompt: ``instructions`` when sent, else the first developer message."""
        value = self._field("instructions")
        if isinstance(value, str):
            return value
        return next(iter(self.texts("developer")), "")

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered (``function`` tools by name, others by type)."""
        return [t.get("name") or t.get("type", "") for t in self._field("tools") or [] if isinstance(t, dict)]

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each ``message`` item (its parts joined), in order; only ``role``'s when given."""
        return [item_text(i) for i in self.items
                if i.get("type") == "message" and (role is None or i.get("role") == role)]

    def calls(self) -> list[dict[str, Any]]:
        """Every ``function_call`` item (and ``custom_tool_call``), in order."""
        return [i for i in self.items if i.get("type") in ("function_call", "custom_tool_call")]

    def outputs(self) -> list[dict[str, Any]]:
        """Every ``function_call_output`` item (and ``custom_tool_call_output``), in order."""
        return [i for i in self.items if i.get("type") in ("function_call_output", "custom_tool_call_output")]

    def output_of(self, tool: str) -> str | None:
        """The output text of the last call of ``tool`` in this request, or None."""
        ids = [c.get("call_id") for c in self.calls() if c.get("name") == tool]
        found = {o.get("call_id"): o for o in self.outputs()}
        return output_text(found[ids[-1]]) if ids and ids[-1] in found else None


def item_text(item: dict[str, Any]) -> str:
    """A ``message`` item's text: its ``input_text``/``output_text`` parts joined by newlines."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def output_text(item: dict[str, Any]) -> str:
    """A ``function_call_output``'s text (``output`` is a text, or a list of ``input_text`` parts)."""
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return str(output.get("content", ""))
    return "\n".join(p.get("text", "") for p in output or [] if isinstance(p, dict))


def turn_metadata(request: Request) -> dict[str, Any]:
    """The JSON of the ``x-codex-turn-metadata`` header (``thread_source``, ``turn_trigger``,
    ``request_kind``…), or an empty dict."""
    try:
        value = json.loads(request.headers.get("x-codex-turn-metadata") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def codex_classify(request: Request) -> str:
    """``main`` for a turn of a user's thread that offers tools; ``memory_consolidation`` for a
    turn of Codex's memory-consolidation agent (header ``thread_source``); ``memory_extraction``
    for a phase-1 memory request (``request_kind: memory`` and a JSON schema in ``text.format``);
    else ``side``."""
    metadata = turn_metadata(request)
    schema = (((request.body or {}).get("text") or {}).get("format") or {}).get("schema")
    if metadata.get("request_kind") == "memory" and schema:
        return "memory_extraction"
    if metadata.get("thread_source") == "memory_consolidation":
        return "memory_consolidation"
    return "main" if request.tool_names else "side"


class CodexSim(ModelSim):
    """A Responses API server on ``127.0.0.1`` answering Codex from ``script`` (see :class:`modelsim.ModelSim`).

    ``classify`` (default :func:`codex_classify`) tells the main conversation from Codex's own
    side requests, which get :attr:`side` as text (or, when they ask for a JSON schema through
    ``text.format``, the smallest value that fits it).
    """

    request_class = CodexRequest

    def __init__(self, script: list[Any] | None = None, side: str = NAME, classify: Any = codex_classify) -> None:
        super().__init__(script, side=side, classify=classify)
        #: kind (of :func:`codex_classify`) -> the function of the request that answers it, for
        #: the requests outside the main script (``memory_extraction``, ``memory_consolidation``)
        self.handlers: dict[str, Callable[[Request], Turn]] = {}

    def main(self) -> list[CodexRequest]:  # type: ignore[override]
        """The requests of the main conversation, in order."""
        return [r for r in self.requests if r.kind == "main"]  # type: ignore[misc]

    def config(self, extra: str = "") -> str:
        """The ``config.toml`` text that makes this server Codex's only model provider.

        No retries (a broken answer fails at once), no websockets, no env key (Codex sends no
        ``Authorization``), plus ``extra`` (more TOML, such as ``[projects."…"]`` tables).
        """
        return (f'model = "{MODEL}"\nmodel_provider = "{PROVIDER}"\n'
                f'[model_providers.{PROVIDER}]\nname = "{PROVIDER}"\nbase_url = "{self.url}/v1"\n'
                'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
                'supports_websockets = false\n' + extra)

    def write_config(self, codex_home: Path, extra: str = "") -> Path:
        """Write :meth:`config` to ``codex_home/config.toml`` (folders made); return its path."""
        codex_home.mkdir(parents=True, exist_ok=True)
        path = codex_home / "config.toml"
        path.write_text(self.config(extra), encoding="utf-8")
        return path

    def answer(self, request: Request) -> tuple[int, Any, list[dict[str, Any]] | None]:
        """``POST …/responses``: the script's next turn as streamed events; ``GET …/models``: an
        empty list; anything else: 404."""
        path = request.path.rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return 200, {"models": [], "data": [], "object": "list"}, None
        if request.method != "POST" or not path.endswith("/responses") or not isinstance(request.body, dict):
            return 404, {"error": {"message": f"{NAME}: no {request.method} {request.path}",
                                   "type": "invalid_request_error", "code": "not_found"}}, None
        request.kind = self.classify(request)
        if request.kind in self.handlers:
            turn = self.handlers[request.kind](request)
        elif request.kind == "main":
            with self._lock:
                index = self._next
                step = self.script[index] if index < len(self.script) else None
                if step is not None:
                    self._next += 1
            request.turn = index if step is not None else None
            turn = step(request) if callable(step) else (step or self.fallback)
        else:
            schema = ((request.body.get("text") or {}).get("format") or {}).get("schema")
            turn = Turn.text(json.dumps(fitting(schema, self.side)) if schema else self.side)
        request.reply = turn.sent()
        return 200, None, response_events(request.reply, request.body.get("model") or MODEL, len(request.raw))


def output_items(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's blocks as Responses API output items: a text is an assistant ``message`` with one
    ``output_text`` part; a ``tool_use`` is a ``function_call`` (its input as a JSON text,
    ``call_id`` from the block's id), or, when its input is a text, a ``custom_tool_call`` of a
    freeform tool (Codex's ``exec`` code mode, ``apply_patch``) with that text as ``input``."""
    items = []
    for block in blocks:
        if block["type"] == "tool_use" and isinstance(block["input"], str):  # a freeform tool (exec, apply_patch)
            items.append({"type": "custom_tool_call", "id": _new_id("ctc"), "status": "completed",
                          "call_id": block["id"].replace("toolu", "call"), "name": block["name"],
                          "input": block["input"]})
        elif block["type"] == "tool_use":
            items.append({"type": "function_call", "id": _new_id("fc"), "call_id": block["id"].replace("toolu", "call"),
                          "name": block["name"], "arguments": json.dumps(block["input"], ensure_ascii=False),
                          "status": "completed"})
        else:
            items.append({"type": "message", "id": _new_id("msg"), "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": block["text"], "annotations": []}]})
    return items


def response_events(blocks: list[dict[str, Any]], model: str, size: int) -> list[dict[str, Any]]:
    """The streamed events of one response holding ``blocks`` (module docstring), each with its
    ``type`` and ``sequence_number``; ``size`` (characters of the request) sets the usage numbers."""
    response_id = _new_id("resp")
    base = {"id": response_id, "object": "response", "model": model, "created_at": 0}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {**base, "status": "in_progress",
                                                                              "output": []}}]
    items = output_items(blocks)
    for index, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "status": "in_progress"}})
        if item["type"] == "message":
            events.append({"type": "response.output_text.delta", "output_index": index, "content_index": 0,
                           "item_id": item["id"], "delta": item["content"][0]["text"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    output_tokens = max(1, len(json.dumps(items)) // 4)
    usage = {"input_tokens": max(1, size // 4), "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": max(1, size // 4) + output_tokens}
    events.append({"type": "response.completed", "response": {**base, "status": "completed", "output": items,
                                                             "usage": usage}})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]
