"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``). Pure.

Not officially documented; this follows what parsers in the wild agree on and what
Claude Code 2.1.332 writes (INTEGRATIONS.md, "Claude Code transcripts"; a real sample is
``tests/fixtures/claude-2.1.332-login-failed.jsonl``). Each line is a JSON object with
``type``, ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``isSidechain``, optional
``isMeta``, and for messages a ``message`` whose ``content`` is a string or a list of blocks.

The person's words are, on the live branch only:

* a ``user`` record that is not ``isMeta``, ``isCompactSummary``, ``isVisibleInTranscriptOnly``
  or ``isSidechain``: its string content and ``text`` blocks, injected blocks cut out
  (``agents.transcript.strip_injected``: ``<task-notification>`` subagent results,
  ``<system-reminder>``, command wrappers, hook output, ``<memcli-context>`` …);
* in such a record, a ``tool_result`` block that is the client's rejection of a tool call
  (``is_error``, its text starts with :data:`REJECTION` and the record's ``toolUseResult`` is
  not a tool's structured output): only what follows "the user said:";
* an ``attachment`` record of type ``queued_command`` (what the person typed while the agent
  worked) whose ``commandMode`` is ``prompt`` or absent, not ``isMeta``, whose ``origin.kind``
  is ``human`` or absent: its ``prompt``.

The assistant's words: ``assistant`` records, not meta or sidechain, not made by the client
(``message.model == "<synthetic>"``, ``isApiErrorMessage``): their ``text`` blocks.

Tool calls (``Transcript.tool_uses``): the ``tool_use`` blocks of those assistant records
(``name``, ``input``, ``id``; one per id). A call ran when a ``tool_result`` block of a later
``user`` record answers its id without ``is_error``, or with the error of a shell command
that ran and exited non-zero ("Exit code N"); any other error is a refusal before the tool
ran (a hook's block, "PreToolUse:Bash hook error: …"; a permission not granted, "Claude
requested permissions to …"; the person's rejection) or a call the tool could not take.

The live branch: the records reached from the last non-sidechain record by ``parentUuid``
(and, from a ``compact_boundary`` whose ``parentUuid`` is null, by ``logicalParentUuid``).
A link to a record that is not in the file (a broken line) is bridged to the record just
before, in file order. Records off that chain are a rewound (abandoned) branch: their
messages are dropped (counted in ``Transcript.dropped``). A file in which no record names a parent (hand-made, or
very old) is read whole, in file order.
"""

from __future__ import annotations

from memcli.agents.transcript import ToolUse, Transcript, Turn, string, strip_injected

#: Record types Claude Code writes; any other type is counted as unknown.
KNOWN_TYPES = frozenset({
    "user", "assistant", "summary", "system", "attachment", "file-history-snapshot", "queue-operation", "progress",
    "last-prompt", "mode", "permission-mode", "custom-title", "ai-title", "tag", "agent-name", "atis-latch",
    "api-request", "api-request-shape", "api-request-blob", "cost-state", "pr-link", "worktree-state",
})
#: How Claude Code starts the tool result of a tool call the person rejected.
REJECTION = "The user doesn't want to proceed with this tool use."
_SAID = "the user said:\n"
_REJECTED = "User rejected tool use"
#: How the error result of a shell command that ran and failed starts (Claude Code 2.1.332).
RAN_AND_FAILED = "Exit code "


def claims(entry: dict) -> bool:
    """True for a record that only Claude Code writes: a known ``type`` with a ``message``,
    ``uuid``, ``sessionId`` or ``leafUuid``."""
    kind = entry.get("type")
    if not isinstance(kind, str) or kind not in KNOWN_TYPES:
        return False
    return any(key in entry for key in ("message", "uuid", "sessionId", "leafUuid"))


def _blocks_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                and isinstance(b.get("text"), str)]
    return []


def _rejection_words(entry: dict, block: dict) -> str | None:
    """The person's words in a tool-rejection reply (module docstring), or None."""
    if block.get("is_error") is not True or isinstance(entry.get("toolUseResult"), (dict, list)):
        return None
    text = "\n".join(_blocks_text(block.get("content")))
    if not text.startswith(REJECTION):
        return None
    at = text.find(_SAID)
    return text[at + len(_SAID):] if at >= 0 else None


def user_text(entry: dict) -> str | None:
    """The person's words in one record (module docstring), or None when it holds none."""
    kind = entry.get("type")
    if entry.get("isMeta") or entry.get("isSidechain"):
        return None
    if kind == "attachment":
        attachment = entry.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command" \
                or attachment.get("isMeta") or attachment.get("commandMode") not in (None, "prompt"):
            return None
        origin = attachment.get("origin")
        if isinstance(origin, dict) and origin.get("kind") not in (None, "human"):
            return None
        parts = _blocks_text(attachment.get("prompt"))
    elif kind == "user" and not entry.get("isCompactSummary") and not entry.get("isVisibleInTranscriptOnly"):
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        parts = _blocks_text(content)
        if isinstance(content, list):
            parts += [w for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                      for w in [_rejection_words(entry, b)] if w]
    else:
        return None
    text = strip_injected("\n".join(parts))
    return text or None


def assistant_text(entry: dict) -> str | None:
    """The assistant's words in one record (its ``text`` blocks), or None."""
    if entry.get("type") != "assistant" or entry.get("isMeta") or entry.get("isSidechain") \
            or entry.get("isApiErrorMessage"):
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>" \
            or not isinstance(message.get("content"), list):
        return None
    text = strip_injected("\n".join(_blocks_text(message["content"])))
    return text or None


class Reader:
    """Feeds Claude Code records into a :class:`~memcli.agents.transcript.Transcript`."""

    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.order: list[str] = []  # uuids in file order
        self.place: dict[str, int] = {}  # uuid -> index in self.order
        self.links: dict[str, tuple[str | None, bool]] = {}  # uuid -> (parent, parent is a logical link)
        self.sidechain: set[str] = set()
        self.chained = False
        self.found: list[tuple[str | None, Turn]] = []
        self.calls: dict[str, tuple[str | None, int, dict]] = {}  # tool_use id -> (uuid, line, record)
        self.results: dict[str, bool] = {}  # tool_use id -> it ran

    def feed(self, number: int, entry: dict) -> None:
        """Take one record (``number``: its 1-based line)."""
        kind = entry.get("type")
        if not isinstance(kind, str) or kind not in KNOWN_TYPES:
            self.out.unknown_lines += 1
            return
        session = string(entry.get("sessionId"))
        if self.out.session_id is None and session:
            self.out.session_id = session
        uuid = string(entry.get("uuid"))
        if uuid is not None and uuid in self.place:
            return  # the same record written again (Claude Code re-logs some): the first copy counts
        if uuid is not None:
            parent, logical = string(entry.get("parentUuid")), False
            if parent is None and string(entry.get("logicalParentUuid")):
                parent, logical = entry["logicalParentUuid"], True
            self.chained = self.chained or parent is not None
            self.place[uuid] = len(self.order)
            self.order.append(uuid)
            self.links[uuid] = (parent, logical)
            if entry.get("isSidechain"):
                self.sidechain.add(uuid)
        self._tools(uuid, number, entry)
        role, text = "user", user_text(entry)
        if text is None:
            role, text = "assistant", assistant_text(entry)
        if text is None:
            return
        message = entry.get("message")
        message_id = string(message.get("id")) if isinstance(message, dict) and role == "assistant" else None
        self.found.append((uuid, Turn(session, uuid, string(entry.get("timestamp")), text, number, role,
                                      message_id)))

    def _tools(self, uuid: str | None, number: int, entry: dict) -> None:
        """Note the tool calls (``tool_use``) and the results (``tool_result``) of one record."""
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or entry.get("isSidechain"):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and entry.get("type") == "assistant" and string(block.get("id")) \
                    and isinstance(block.get("name"), str) and isinstance(block.get("input"), dict):
                self.calls.setdefault(block["id"], (uuid, number, {**block, "timestamp": entry.get("timestamp")}))
            elif block.get("type") == "tool_result" and entry.get("type") == "user" \
                    and string(block.get("tool_use_id")):
                failed = block.get("is_error") is True
                text = "\n".join(_blocks_text(block.get("content")))
                self.results[block["tool_use_id"]] = not failed or text.startswith(RAN_AND_FAILED)

    def live(self) -> set[str] | None:
        """The uuids of the live branch, or None when the file names no parents (read it whole)."""
        if not self.chained:
            return None
        leaf = next((u for u in reversed(self.order) if u not in self.sidechain), None)
        alive: set[str] = set()
        at = leaf
        while at is not None and at not in alive:
            alive.add(at)
            parent, _logical = self.links[at]
            if parent is None:
                break
            if parent in self.links:
                at = parent
            else:  # a broken or missing line: bridge to the record just before this one
                index = self.place[at] - 1
                at = self.order[index] if index >= 0 else None
        return alive

    def finish(self) -> None:
        """Keep the messages of the live branch."""
        alive = self.live()
        kept = [turn for uuid, turn in self.found if alive is None or uuid is None or uuid in alive]
        self.out.dropped = len(self.found) - len(kept)
        self.out.messages.extend(kept)
        for call_id, (uuid, number, block) in self.calls.items():
            if alive is None or uuid is None or uuid in alive:
                self.out.tool_uses.append(ToolUse(block["name"], block["input"], number, string(block["timestamp"]),
                                                  self.results.get(call_id, False)))
