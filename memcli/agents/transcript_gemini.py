"""Gemini CLI chat logs (``~/.gemini/tmp/<project>/chats/session-*.jsonl``, older ``*.json``). Pure.

Source: Gemini CLI's ``chatRecordingService`` (``loadConversationRecord`` in
``packages/core``, as bundled in Gemini CLI 0.61.0), and the files it writes (a real sample
is ``tests/fixtures/gemini-0.61.0-prompt.jsonl``). A JSON Lines log holds:

* a metadata record (``sessionId``, ``projectHash``, ``startTime`` …; may hold ``messages``);
* message records (an ``id`` string, ``type`` ``user``, ``gemini``, ``info``, ``error`` or
  ``warning``, ``content`` a string or a list of parts). A record whose ``id`` was seen
  before replaces that message in place;
* ``{"$set": {…}}`` updates; one with ``messages`` sets the message list (Gemini CLI
  writes it after compressing the chat, and when it resumes one). Gemini CLI's loader keeps
  only that list; memcli keeps the earlier messages too (each listed one replaces its
  earlier copy, new ones are added), because what the person said before a compression is
  still theirs — as it follows a Claude Code compaction back;
* ``{"$rewindTo": ID}``: the message ``ID`` and every later one are dropped (a rewind).

The older form is one JSON document with ``sessionId`` and ``messages``; it is read as one
metadata record.

The person's words: ``user`` messages; their ``displayContent`` when given (what was typed,
before ``@file`` contents were added), else their ``content``; only ``text`` parts; the blocks
Gemini CLI and its hooks wrote into them cut out (``<session_context>``, ``<hook_context>``, a
compression summary's ``<state_snapshot>``; ``agents.transcript.strip_injected``). Gemini CLI
puts a hook's context into the person's own message: ``gemini -p`` prepends the SessionStart
hook's ``additionalContext`` as ``<hook_context>…</hook_context>`` + a blank line to the prompt
(``packages/cli`` ``gemini.tsx``), a BeforeAgent hook's is appended as a part of its own
(``packages/core`` ``client.ts``), both with ``<`` and ``>`` escaped (``getAdditionalContext``);
what is left after the blocks is the person's. Gemini CLI skips a whole message that *starts*
with ``<hook_context>`` when it resumes a session (``isIgnoredUserContent``), which is right for
the model's history but would lose those words here. As it does, a text that starts (after the
blocks) with ``/`` (a slash command) or ``?`` is not a turn. The assistant's words: ``gemini``
messages' text, without ``thought`` parts.

Tool calls (``Transcript.tool_uses``): the ``toolCalls`` of the ``gemini`` messages that stand
(``name``, ``args``, ``status``, ``timestamp``). A call ran when its ``status`` is ``success``
(a shell command that exits non-zero is a success too); ``error`` is a call that failed or
never ran (a BeforeTool hook's block: "Tool execution blocked: …") and ``cancelled`` one the
person declined, so neither counts as run.
"""

from __future__ import annotations

from memcli.agents.transcript import ToolUse, Transcript, Turn, string, strip_injected

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: What starts a user-role text that is a command to Gemini CLI, not words for memory (module docstring).
_COMMAND_STARTS = ("/", "?")


def claims(entry: dict) -> bool:
    """True for a chat-log record: metadata, an update, a rewind, or a message without Claude's ``message``."""
    if "$set" in entry or isinstance(entry.get("$rewindTo"), str):
        return True
    if isinstance(entry.get("sessionId"), str) and ("projectHash" in entry or isinstance(entry.get("messages"), list)):
        return True
    return isinstance(entry.get("id"), str) and isinstance(entry.get("type"), str) \
        and entry["type"] in MESSAGE_TYPES and "content" in entry \
        and "message" not in entry and "payload" not in entry


def _parts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    return [p if isinstance(p, str) else p["text"] for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"))]


def message_turn(message: dict, number: int, session: str | None) -> Turn | None:
    """One chat-log message as a turn of the person or the assistant, or None (module docstring)."""
    kind = message.get("type")
    if kind == "user":
        shown = message.get("displayContent")
        raw = "\n".join(_parts(shown if shown is not None else message.get("content")))
        role = "user"
    elif kind == "gemini":
        raw, role = "\n".join(_parts(message.get("content"))), "assistant"
    else:
        return None
    text = strip_injected(raw)
    if not text or (role == "user" and text.startswith(_COMMAND_STARTS)):
        return None
    return Turn(session, string(message.get("id")), string(message.get("timestamp")), text, number, role)


class Reader:
    """Feeds chat-log records into a :class:`~memcli.agents.transcript.Transcript`."""

    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.messages: dict[str, tuple[int, dict]] = {}  # id -> (line, message), in first-seen order

    def _message(self, number: int, message: object) -> None:
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            self.messages[message["id"]] = (number, message)

    def feed(self, number: int, entry: dict) -> None:
        """Take one record (``number``: its 1-based line)."""
        if isinstance(entry.get("$rewindTo"), str):
            ids = list(self.messages)
            target = entry["$rewindTo"]
            cut = ids.index(target) if target in self.messages else 0
            for gone in ids[cut:]:
                if self.messages.pop(gone)[1].get("type") in ("user", "gemini"):
                    self.out.dropped += 1
        elif isinstance(entry.get("$set"), dict):
            update = entry["$set"]
            if isinstance(update.get("messages"), list):  # a re-sync or a compression: not a rewind
                for message in update["messages"]:
                    self._message(number, message)
        elif isinstance(entry.get("sessionId"), str) and not isinstance(entry.get("id"), str):
            self.out.session_id = self.out.session_id or string(entry["sessionId"])
            listed = entry.get("messages")
            for message in listed if isinstance(listed, list) else []:
                self._message(number, message)
        elif isinstance(entry.get("id"), str) and isinstance(entry.get("type"), str) and entry["type"] in MESSAGE_TYPES:
            self._message(number, entry)
        else:
            self.out.unknown_lines += 1

    def finish(self) -> None:
        """Keep the messages that stand, in order, and their tool calls."""
        for number, message in self.messages.values():
            turn = message_turn(message, number, self.out.session_id)
            if turn is not None:
                self.out.messages.append(turn)
            calls = message.get("toolCalls") if message.get("type") == "gemini" else None
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("args"), dict):
                    stamp = string(call.get("timestamp")) or string(message.get("timestamp"))
                    self.out.tool_uses.append(ToolUse(call["name"], call["args"], number, stamp,
                                                      call.get("status") == "success"))
