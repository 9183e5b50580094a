"""`memcli mcp` answers every request, malformed or huge (issue 19 point 5).

Raw JSON-RPC lines are written to a real server's stdin (the malformed cases a client
library would never send); the size limits are checked through the SDK's own client
(``ClientSession`` over stdio). No case may leave the client waiting: each answer is read
under a bound (``ANSWER``), after which the test fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

from memcli.mcp_server import stdio
from memcli.mcp_server.tools import LIMITS
from test_mcp_server import drive, text_of

#: Seconds to wait for one answer before the test fails (a bound, not a timing assertion: the
#: faults it catches never answered at all, or answered after 48-124 s).
ANSWER = 30


class RawServer:
    """``python -m memcli mcp`` on a workspace, spoken to in raw JSON-RPC lines."""

    def __init__(self, ws: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "memcli", "-w", str(ws), "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(ws),
                                     env={**os.environ, "MEMCLI_ACTOR": "alice"})
        self.buf = b""
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert self.answer()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict | None = None, raw: bytes | None = None) -> None:
        self.proc.stdin.write(raw if raw is not None else json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        """The next message the server writes, within ``ANSWER`` seconds."""
        end = time.monotonic() + ANSWER
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            assert left > 0, "no answer: the client would wait for its own timeout"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                assert chunk, "the server closed its stdout"
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=ANSWER)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def call(request_id: int, tool: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


#: (what, raw line, expected error code, expected id). The first four never got an answer.
MALFORMED = [
    ("a lone surrogate", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
                         b'"arguments":{"query":"\\ud800"}}}\n', INVALID_PARAMS, 1),
    ("params given as a list", b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":["recall"]}\n',
     INVALID_PARAMS, 2),
    ("not JSON", b'{"jsonrpc":"2.0","id":3,\n', PARSE_ERROR, None),
    ("a batch", b'[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]\n', INVALID_REQUEST, None),
    ("nested too deeply", b"[" * 200_000 + b"\n", PARSE_ERROR, None),
    ("an id that is a boolean", b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}\n', INVALID_REQUEST, None),
    ("no jsonrpc member", b'{"id":5,"method":"tools/list"}\n', INVALID_REQUEST, 5),
    ("a surrogate in a key", b'{"jsonrpc":"2.0","id":6,"method":"tools/list","\\udc80":1}\n', INVALID_REQUEST, 6),
]


@pytest.mark.slow
def test_every_malformed_or_huge_request_gets_an_answer_and_later_ones_are_served(ws: Path) -> None:
    server = RawServer(ws)
    try:
        for what, line, code, request_id in MALFORMED:
            server.send(raw=line)
            answer = server.answer()
            assert answer.get("error", {}).get("code") == code and answer["id"] == request_id, (what, answer)
        # a bad notification is never answered (JSON-RPC 2.0 section 4.1): the next answer is the next request's
        server.send(raw=b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}\n')
        # 60 MB in one line, id first (the Python SDK's order) and id last (the TypeScript SDK's)
        huge = "a" * 60_000_000
        server.send(raw=b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall","arguments":'
                        b'{"query":"' + huge.encode() + b'"}}}\n')
        first = server.answer()
        assert first["id"] == 8 and first["error"]["code"] == INVALID_REQUEST, first
        assert "60,000,0" in first["error"]["message"] and f"{stdio.MAX_MESSAGE_BYTES:,}" in first["error"]["message"]
        server.send(raw=b'{"method":"tools/call","params":{"name":"recall","arguments":{"query":"'
                        + b"b" * 3_000_000 + b'"}},"jsonrpc":"2.0","id":"last"}\n')
        assert server.answer()["id"] == "last"
        # 10 MB through a tool: refused for its size, not worked on (it took 120 s, and 48.8 s for remember)
        for request_id, tool, key in ((10, "recall", "query"), (11, "remember", "text")):
            server.send(call(request_id, tool, {key: "word " * 2_000_000}))
            answer = server.answer()
            assert answer["id"] == request_id and answer["error"]["code"] == INVALID_REQUEST, answer
        server.send({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})
        listed = server.answer()
        assert listed["id"] == 12 and {t["name"] for t in listed["result"]["tools"]} >= {"recall", "remember"}
        server.send(call(13, "recall", {"query": "(?R)", "mode": "grep"}))
        grep = server.answer()
        assert grep["id"] == 13 and grep["result"]["isError"], grep
        assert "invalid regular expression" in grep["result"]["content"][0]["text"]
    finally:
        server.close()


@pytest.mark.slow
def test_requests_in_flight_when_stdin_ends_are_answered(ws: Path) -> None:
    """A client that writes its requests and closes its end (``printf … | memcli mcp``) gets an
    answer to each: the write that was carried out is reported, not lost with the pipe."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(1, "remember", {"text": "The staging API listens on port 8443."}),
        call(2, "recall", {"query": "staging port"}),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]
    proc = subprocess.run([sys.executable, "-m", "memcli", "-w", str(ws), "mcp"], cwd=str(ws),
                          input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                          capture_output=True, timeout=ANSWER * 4, env={**os.environ, "MEMCLI_ACTOR": "alice"})
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert sorted(answers) == [0, 1, 2, 3], proc.stdout
    assert '"pending_review"' in answers[1]["result"]["content"][0]["text"]
    assert proc.returncode == 0


@pytest.mark.slow
def test_the_schemas_publish_the_limits_and_the_tools_check_them_first(ws: Path) -> None:
    async def steps(client: ClientSession) -> None:
        tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}

        def limit(prop: dict, key: str) -> int | None:
            return prop.get(key) or next((a[key] for a in prop.get("anyOf", []) if key in a), None)
        assert limit(tools["recall"]["query"], "maxLength") == LIMITS["query"] == 2_000
        assert limit(tools["recall"]["scopes"], "maxItems") == LIMITS["scopes"]
        assert limit(tools["context"]["query"], "maxLength") == LIMITS["query"]
        for name in ("remember", "supersede"):
            assert limit(tools[name]["text"], "maxLength") == LIMITS["text"] == 20_000
            assert limit(tools[name]["tags"], "maxItems") == LIMITS["tags"]
            assert limit(tools[name]["paths"], "maxItems") == LIMITS["paths"]
            assert limit(tools[name]["subject"], "maxLength") == LIMITS["subject"]
        for name in ("show", "history", "forget", "supersede"):
            assert limit(tools[name]["memory_id"], "maxLength") == LIMITS["memory_id"]
        for tool, arguments, where in (
                ("recall", {"query": "deploy " * 500}, "query"),
                ("recall", {"query": "x" * 2001, "mode": "grep"}, "query"),
                ("context", {"query": "y" * 2001}, "query"),
                ("remember", {"text": "z" * 20_001}, "text"),
                ("remember", {"text": "Use pnpm", "tags": [f"t{n}" for n in range(51)]}, "tags"),
                ("remember", {"text": "Use pnpm", "tags": ["t" * 201]}, "tags.0"),
                ("show", {"memory_id": "0" * 65}, "memory_id")):
            result = await client.call_tool(tool, arguments)
            assert result.is_error and f"invalid arguments for {tool}: {where}:" in text_of(result), text_of(result)
        for pattern in ("(?R)", "(?0)", "((?R)|x)", "(a"):
            result = await client.call_tool("recall", {"query": pattern, "mode": "grep"})
            assert result.is_error and text_of(result).startswith("invalid regular expression"), text_of(result)
        assert (await client.call_tool("recall", {"query": "x" * 2000})).is_error is False

    drive(ws, steps)


# --- the transport's parts, in process -------------------------------------------------


def test_lines_are_cut_at_the_limit_without_keeping_what_is_cut() -> None:
    lines = stdio.Lines(limit=10)
    assert lines.feed(b'{"a":1}\n{"b"') == [(b'{"a":1}', None)]
    assert lines.feed(b':2}\n') == [(b'{"b":2}', None)]
    out = lines.feed(b"x" * 5) + lines.feed(b"y" * 50_000) + lines.feed(b"z\nnext\n")
    assert len(out) == 2 and out[0][0] is None and out[1] == (b"next", None)
    head, tail, size = out[0][1]
    assert size == 50_006 and head.startswith(b"xxxxxyyy") and tail.endswith(b"yz") and len(tail) == stdio.EDGE
    assert lines.feed(b"w" * 20) == [] and lines.close()[0][1][2] == 20  # a too-long last line without a newline
    assert stdio.Lines().close() == []


@pytest.mark.parametrize(("head", "tail", "found"), [
    (b'{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"arguments": {"query": "aaa', b"", 42),
    (b'{"jsonrpc":"2.0","method":"x","params":{"id":7,"q":"aaa', b'aaa"}},"id":"abc"}', "abc"),
    (b'{"method":"x","params":{"id":7,"q":"aaa', b'aaa"}}}', None),  # only an id inside params
    (b'{"id": true, "method": "x"', b"", None),
    (b'[1, 2, 3', b"]", None),
])
def test_the_id_of_a_cut_message_comes_from_its_ends(head: bytes, tail: bytes, found: object) -> None:
    assert stdio.cut_id(head, tail) == found


def test_a_good_line_passes_as_the_sdk_reads_it() -> None:
    message = stdio.check(b'{"jsonrpc":"2.0","id":"r1","method":"tools/list"}')
    assert message is not None and message.message.method == "tools/list" and message.message.id == "r1"
    assert stdio.check(b"   ") is None
    assert stdio.check(b'{"jsonrpc":"2.0","method":"notifications/x","params":[]}') is None  # never answered
    assert stdio.check(b'{"jsonrpc":"2.0","id":9,"result":5}') is None  # a bad response: not answered either


@pytest.mark.parametrize(("params", "said"), [
    ('{"name": "recall", "arguments": [1]}', "params.arguments must be an object of the tool's named arguments, "
                                             "not an array"),
    ('{"name": null}', "params.name must be the tool's name, a string (see tools/list), not null"),
    ('{"arguments": {}}', "params.name must be the tool's name, a string (see tools/list), not missing"),
    ('{"name": {"a": 1}}', "params.name must be the tool's name, a string (see tools/list), not an object"),
    ('{"name": "recall", "arguments": "query"}', "not a string"),
])
def test_a_malformed_tool_call_is_answered_with_what_is_wrong(params: str, said: str) -> None:
    """Newcomer, stop 36 (LOW): these got the SDK's "Invalid request parameters" with no word of
    which field was wrong."""
    message = stdio.check(f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}'.encode())
    assert message is not None
    error = message.message
    assert error.id == 7 and error.error.code == INVALID_PARAMS and said in error.error.message, error
    fine = stdio.check(b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall","arguments":{}}}')
    assert fine is not None and fine.message.method == "tools/call"


def test_docs_mcp_md_publishes_the_limits_the_schemas_carry() -> None:
    text = (Path(__file__).parent.parent / "docs" / "mcp.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("  | `")]
    assert f"{stdio.MAX_MESSAGE_BYTES:,} bytes" in text
    for name, value in LIMITS.items():
        row = next(line for line in rows if f"`{name}`" in line)
        assert f"{value:,}" in row, (name, row)
