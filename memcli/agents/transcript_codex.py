"""Codex rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``). Pure.

Source: Codex's own recorder (``codex-rs`` ``RolloutLine``: ``{timestamp, type, payload}``
with ``type`` one of ``session_meta``, ``response_item``, ``event_msg``, ``turn_context``,
``compacted`` and newer ones), and the files Codex CLI 0.171.0 writes (a real sample is
``tests/fixtures/codex-0.171.0-exec.jsonl``). Older rollouts wrote the items bare, one
``{"type": "message", "role": …}`` per line after a first line with the session's ``id``.

The person's words come from one source per file, the first of these that it holds:

1. ``event_msg`` records of type ``user_message`` (``payload.message``; one whose ``kind`` is
   given and is not ``plain`` is a client injection);
2. ``event_msg`` records of type ``item_completed`` whose item is a ``UserMessage``
   (Codex 0.171: its ``text`` content);
3. ``response_item`` messages of role ``user`` (what went to the model). These also carry
   Codex's injections: content items whose ``content_item_kinds`` is given and is not
   ``user.text``, or whose provenance is not the user, are left out, and so are
   ``<environment_context>``, ``<user_instructions>`` and "# AGENTS.md instructions for …"
   texts (``agents.transcript.strip_injected``).

Developer and system messages are never the person's. The assistant's words are the
``response_item`` messages of role ``assistant`` (``output_text``), or when there are none
the ``event_msg`` records of type ``agent_message``. A ``compacted`` record (a compaction
summary) is not a message.

Tool calls (``Transcript.tool_uses``): ``response_item`` items of type ``function_call``
(``name``, ``arguments``: a JSON object in a string), ``custom_tool_call`` (a freeform tool,
``apply_patch``: its ``input`` text, kept as ``{"input": TEXT}``) and ``local_shell_call``
(``action.command``, an argument list, kept as ``{"command": [...]}``), each answered by a
``*_output`` item with the same ``call_id``. A call ran when its output is there and is not a
refusal: Codex 0.171 answers a call its PreToolUse hook blocked with "Command blocked by
PreToolUse hook: …" or "Tool call blocked by PreToolUse hook: …", and one the person declined
with "… rejected by user" (strings of the 0.171 binary).

An ``event_msg`` of type ``thread_rolled_back`` drops the last
``num_turns`` turns of the person and everything after the first of them (the rewound part).
"""

from __future__ import annotations

import json

from memcli.agents.transcript import ToolUse, Transcript, Turn, string, strip_injected

#: Record types of the rollout envelope memcli knows; others are counted as unknown.
KNOWN_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state"})
#: How Codex 0.171 answers a tool call that did not run (module docstring).
REFUSALS = ("Command blocked by PreToolUse hook", "Tool call blocked by PreToolUse hook")
REJECTED = "rejected by user"
#: Tool call items and their output items.
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
#: Sources of the person's words, in order of preference (module docstring).
_SOURCES = ("user_message", "item_completed", "response_item")


def claims(entry: dict) -> bool:
    """True for a rollout record: the envelope with a known ``type`` and a ``payload`` object,
    or a bare item of an older rollout (``type: message`` with a ``role``, or ``record_type``)."""
    kind = entry.get("type")
    if isinstance(entry.get("payload"), dict) and isinstance(kind, str) and kind in KNOWN_TYPES:
        return True
    if "message" in entry or "uuid" in entry:
        return False
    return (kind == "message" and isinstance(entry.get("role"), str) and "content" in entry) \
        or "record_type" in entry or (kind is None and "instructions" in entry and "id" in entry)


def _texts(content: object, kinds: object = None, provenance: object = None) -> list[str]:
    """The text items of a content list (``input_text``, ``output_text``, ``text``), without those
    that ``content_item_kinds`` / their provenance mark as not typed by the person."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    out = []
    for n, item in enumerate(content):
        if not isinstance(item, dict) or item.get("type") not in ("input_text", "output_text", "text") \
                or not isinstance(item.get("text"), str):
            continue
        if isinstance(kinds, list) and n < len(kinds) and kinds[n] != "user.text":
            continue
        meta = provenance[n] if isinstance(provenance, list) and n < len(provenance) else None
        origin = meta.get("provenance") if isinstance(meta, dict) else None
        if isinstance(origin, dict) and origin.get("type") not in (None, "user"):
            continue
        out.append(item["text"])
    return out


class Reader:
    """Feeds rollout records into a :class:`~memcli.agents.transcript.Transcript`."""

    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.said: dict[str, list[Turn]] = {source: [] for source in _SOURCES}
        self.replies: dict[str, list[Turn]] = {"response_item": [], "agent_message": []}
        self.cuts: list[tuple[int, int]] = []  # (line of the rollback, turns rolled back)
        self.calls: dict[str, tuple[str, dict, int, str | None]] = {}  # call_id -> (name, input, line, stamp)
        self.results: dict[str, bool] = {}  # call_id -> it ran

    def _add(self, bucket: list[Turn], text: str, number: int, stamp: object, uuid: object, role: str) -> None:
        text = strip_injected(text)
        if text:
            bucket.append(Turn(self.out.session_id, string(uuid), string(stamp), text, number, role))

    def feed(self, number: int, entry: dict) -> None:
        """Take one record (``number``: its 1-based line)."""
        payload = entry.get("payload")
        kind = entry.get("type")
        if not isinstance(payload, dict):  # an older rollout: bare items, a first line with the session id
            if kind == "message":
                payload, kind = entry, "response_item"
            elif "record_type" in entry:
                return
            elif self.out.session_id is None and string(entry.get("id")):
                self.out.session_id = entry["id"]
                return
            else:
                self.out.unknown_lines += 1
                return
        stamp = entry.get("timestamp")
        if kind == "session_meta":
            self.out.session_id = self.out.session_id or string(payload.get("id")) or string(payload.get("session_id"))
        elif kind == "response_item" and payload.get("type") == "message":
            role = payload.get("role")
            meta = payload.get("internal_chat_message_metadata_passthrough")
            meta = meta if isinstance(meta, dict) else {}
            if role == "user":
                texts = _texts(payload.get("content"), meta.get("content_item_kinds"),
                               meta.get("content_item_metadata"))
                self._add(self.said["response_item"], "\n".join(texts), number, stamp, payload.get("id"), "user")
            elif role == "assistant":
                self._add(self.replies["response_item"], "\n".join(_texts(payload.get("content"))), number, stamp,
                          payload.get("id"), "assistant")
        elif kind == "response_item" and payload.get("type") in _CALLS + _OUTPUTS:
            self._tool(number, stamp, payload)
        elif kind == "event_msg":
            event = payload.get("type")
            if event == "user_message" and payload.get("kind") in (None, "plain") \
                    and isinstance(payload.get("message"), str):
                self._add(self.said["user_message"], payload["message"], number, stamp, None, "user")
            elif event == "item_completed" and isinstance(payload.get("item"), dict) \
                    and payload["item"].get("type") == "UserMessage":
                item = payload["item"]
                self._add(self.said["item_completed"], "\n".join(_texts(item.get("content"))), number, stamp,
                          item.get("id"), "user")
            elif event == "agent_message" and isinstance(payload.get("message"), str):
                self._add(self.replies["agent_message"], payload["message"], number, stamp, None, "assistant")
            elif event == "thread_rolled_back" and isinstance(payload.get("num_turns"), int):
                self.cuts.append((number, payload["num_turns"]))
        elif not isinstance(kind, str) or kind not in KNOWN_TYPES:
            self.out.unknown_lines += 1

    def _tool(self, number: int, stamp: object, item: dict) -> None:
        """Note one tool call item or its output (module docstring)."""
        call_id = string(item.get("call_id"))
        if call_id is None:
            return
        kind = item["type"]
        if kind in _OUTPUTS:
            output = item.get("output")
            if isinstance(output, dict):  # the older {"content": TEXT, "success": …} shape
                output = output.get("content")
            text = output if isinstance(output, str) else ""
            self.results[call_id] = not text.startswith(REFUSALS) and REJECTED not in text[:200]
            return
        name = string(item.get("name")) or ("local_shell" if kind == "local_shell_call" else None)
        if name is None:
            return
        if kind == "function_call":
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except (ValueError, TypeError, RecursionError):
                arguments = None
        elif kind == "custom_tool_call":
            arguments = {"input": item["input"]} if isinstance(item.get("input"), str) else None
        else:
            action = item.get("action")
            arguments = {"command": action.get("command")} if isinstance(action, dict) else None
        if isinstance(arguments, dict):
            self.calls.setdefault(call_id, (name, arguments, number, string(stamp)))

    def finish(self) -> None:
        """Choose the sources, apply rollbacks, and keep the conversation in file order."""
        said = next((self.said[s] for s in _SOURCES if self.said[s]), [])
        replies = self.replies["response_item"] or self.replies["agent_message"]
        messages = sorted(said + replies, key=lambda m: m.line)
        for at, count in self.cuts:
            before = [m for m in messages if m.line < at]
            mine = [n for n, m in enumerate(before) if m.role == "user"]
            if count <= 0 or not mine:
                continue
            cut = mine[-min(count, len(mine))]
            self.out.dropped += len(before) - cut
            messages = before[:cut] + [m for m in messages if m.line > at]
        session = self.out.session_id
        self.out.messages.extend(Turn(session, m.uuid, m.timestamp, m.text, m.line, m.role) for m in messages)
        self.out.tool_uses.extend(ToolUse(name, arguments, line, stamp, self.results.get(call_id, False))
                                  for call_id, (name, arguments, line, stamp) in self.calls.items())
