"""A scripted model server for Gemini CLI: the Gemini API (``generativelanguage``), on 127.0.0.1.

The same script and recording as :class:`modelsim.ModelSim` (a :class:`modelsim.Turn` per
model turn: text, or tool calls that Gemini CLI runs, hooks included), in the Gemini API's
wire format. :meth:`GeminiSim.env` sends Gemini CLI here: ``GOOGLE_GEMINI_BASE_URL`` (read by
the bundled ``@google/genai`` client), a dummy ``GEMINI_API_KEY`` and
``GEMINI_CLI_TRUST_WORKSPACE=true``; ``~/.gemini/settings.json`` must select the API-key auth
(:func:`settings`). Standard library only.

What Gemini CLI 0.61.0 sends (``gemini -p``; every request logged by this server):

* ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` with ``x-goog-api-key``; the
  body has ``contents`` (``role`` ``user`` or ``model``, ``parts``: ``text``,
  ``functionCall`` with ``name`` and ``args``, ``functionResponse`` with ``name``, ``id`` and
  ``response``), ``systemInstruction``, ``tools`` (``functionDeclarations``) and
  ``generationConfig``. The answer is server-sent events, ``data: JSON`` lines only (the
  client reads no ``event:`` line), each a ``GenerateContentResponse``: ``candidates`` (one,
  ``content`` with ``role: model`` and ``parts``, ``finishReason`` on the last chunk) and
  ``usageMetadata``.
* ``POST …:generateContent`` (no stream) for its own side questions (a JSON schema in
  ``generationConfig.responseJsonSchema`` or ``responseSchema``: answered with the smallest
  value that fits), and ``POST …:countTokens`` (answered ``totalTokens``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modelsim import NAME, ModelSim, Request, Turn, _new_id, fitting

#: The model Gemini CLI is told to use (``-m``); any name works here.
MODEL = "gemini-2.5-flash"


class GeminiRequest(Request):
    """A request Gemini CLI sent: the Gemini API's ``contents``, read."""

    __slots__ = ()

    @property
    def model(self) -> str:
        """The model named in the path (``/v1beta/models/MODEL:method``)."""
        return self.path.rsplit("/", 1)[-1].split(":", 1)[0]

    @property
    def method_name(self) -> str:
        """The API method: ``streamGenerateContent``, ``generateContent``, ``countTokens``…"""
        return self.path.rsplit(":", 1)[-1] if ":" in self.path else ""

    @property
    def contents(self) -> list[dict[str, Any]]:
        """The request's ``contents`` (empty for a request that has none)."""
        value = self._field("contents")
        return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    @property
    def system(self) -> str:
        """The ``systemInstruction``'s text."""
        value = self._field("systemInstruction")
        if isinstance(value, str):
            return value
        return "\n".join(p.get("text", "") for p in (value or {}).get("parts") or [] if isinstance(p, dict))

    @property
    def tool_names(self) -> list[str]:
        """The names of the functions the request declares."""
        return [f.get("name", "") for tool in self._field("tools") or [] if isinstance(tool, dict)
                for f in tool.get("functionDeclarations") or [] if isinstance(f, dict)]

    def parts(self, role: str | None = None) -> list[dict[str, Any]]:
        """Every part of the contents (only ``role``'s when given), in order."""
        return [p for c in self.contents if role is None or c.get("role") == role
                for p in c.get("parts") or [] if isinstance(p, dict)]

    def texts(self, role: str | None = None) -> list[str]:
        """The text of each content (its ``text`` parts joined), in order; only ``role``'s when given."""
        return ["\n".join(p["text"] for p in c.get("parts") or [] if isinstance(p, dict) and "text" in p)
                for c in self.contents if role is None or c.get("role") == role]

    def calls(self) -> list[dict[str, Any]]:
        """Every ``functionCall`` of the contents, in order."""
        return [p["functionCall"] for p in self.parts() if isinstance(p.get("functionCall"), dict)]

    def responses(self) -> list[dict[str, Any]]:
        """Every ``functionResponse`` of the contents, in order."""
        return [p["functionResponse"] for p in self.parts() if isinstance(p.get("functionResponse"), dict)]

    def response_of(self, tool: str) -> dict[str, Any] | None:
        """The ``functionResponse`` answering the last call of ``tool``, or None."""
        found = [r for r in self.responses() if r.get("name") == tool]
        return found[-1] if found else None


def gemini_classify(request: Request) -> str:
    """``main`` for a streamed request that declares functions, ``count_tokens``, else ``side``."""
    method = request.path.rsplit(":", 1)[-1]
    if method == "countTokens":
        return "count_tokens"
    return "main" if method == "streamGenerateContent" and request.tool_names else "side"


def settings(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``~/.gemini/settings.json`` for a scripted run: API-key auth, no usage statistics, no
    update check, plus ``extra`` (merged at the top level)."""
    return {"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True}, **(extra or {})}


class GeminiSim(ModelSim):
    """A Gemini API server on ``127.0.0.1`` answering Gemini CLI from ``script`` (see :class:`modelsim.ModelSim`)."""

    request_class = GeminiRequest

    def __init__(self, script: list[Any] | None = None, side: str = NAME, classify: Any = gemini_classify) -> None:
        super().__init__(script, side=side, classify=classify)

    def main(self) -> list[GeminiRequest]:  # type: ignore[override]
        """The requests of the main conversation, in order."""
        return [r for r in self.requests if r.kind == "main"]  # type: ignore[misc]

    def env(self, token: bool = False) -> dict[str, str]:
        """The environment that sends Gemini CLI here: base URL, dummy key, trusted workspace."""
        return {"GOOGLE_GEMINI_BASE_URL": self.url, "GEMINI_API_KEY": "dummy-modelsim-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def write_settings(self, home: Path, extra: dict[str, Any] | None = None) -> Path:
        """Write :func:`settings` to ``home/.gemini/settings.json``; return its path."""
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        path = home / ".gemini" / "settings.json"
        path.write_text(json.dumps(settings(extra), indent=2), encoding="utf-8")
        return path

    def encode_events(self, events: list[dict[str, Any]]) -> bytes:
        """``data: JSON`` lines, one per chunk, each followed by a blank line."""
        return "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events).encode("utf-8")

    def answer(self, request: Request) -> tuple[int, Any, list[dict[str, Any]] | None]:
        """``streamGenerateContent``: the script's next turn as chunks; ``generateContent``: a side
        answer; ``countTokens``: a count; ``GET …/models``: the one model; anything else: 404."""
        path = request.path.rstrip("/")
        if request.method == "GET" and "/models" in path:
            return 200, {"models": [{"name": f"models/{MODEL}", "displayName": MODEL}]}, None
        if request.method != "POST" or ":" not in path or not isinstance(request.body, dict):
            return 404, {"error": {"code": 404, "message": f"{NAME}: no {request.method} {request.path}",
                                   "status": "NOT_FOUND"}}, None
        request.kind = self.classify(request)
        if request.kind == "count_tokens":
            return 200, {"totalTokens": max(1, len(request.raw) // 4)}, None
        if request.kind == "main":
            with self._lock:
                index = self._next
                step = self.script[index] if index < len(self.script) else None
                if step is not None:
                    self._next += 1
            request.turn = index if step is not None else None
            turn = step(request) if callable(step) else (step or self.fallback)
        else:
            config = request.body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            turn = Turn.text(json.dumps(fitting(_lower_types(schema), self.side)) if schema else self.side)
        request.reply = turn.sent()
        chunk = candidate_chunk(request.reply, len(request.raw))
        if request.path.endswith(":streamGenerateContent"):
            return 200, None, [chunk]
        return 200, chunk, None


def _lower_types(schema: Any) -> Any:
    """A Gemini schema (``type: OBJECT``) with JSON-schema type names (``object``)."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def candidate_chunk(blocks: list[dict[str, Any]], size: int) -> dict[str, Any]:
    """One ``GenerateContentResponse`` holding ``blocks``: a text is a ``text`` part, a
    ``tool_use`` a ``functionCall`` part (``name``, ``args``, and the block's id as ``id``);
    ``finishReason`` ``STOP``; ``size`` (characters of the request) sets the usage numbers."""
    parts = [{"functionCall": {"name": b["name"], "args": b["input"], "id": b["id"]}} if b["type"] == "tool_use"
             else {"text": b["text"]} for b in blocks]
    output = max(1, len(json.dumps(parts)) // 4)
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": max(1, size // 4), "candidatesTokenCount": output,
                              "totalTokenCount": max(1, size // 4) + output},
            "modelVersion": MODEL, "responseId": _new_id("resp")}
