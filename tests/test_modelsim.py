"""tests/modelsim.py on its own, over HTTP: the Messages API's shapes (a streamed tool call, a
plain answer, ``count_tokens``, a structured side request, a compaction, ``GET``/``HEAD``), and
how each request is recorded and classified. The real Claude Code against it is
tests/test_agent_session.py."""

from __future__ import annotations

import http.client
import json

from modelsim import ModelSim, Request, Turn


def test_modelsim_answers_like_the_messages_api() -> None:
    """The server alone, over HTTP: a streamed tool call, a plain answer, count_tokens, a side
    request with a JSON schema, a compaction, GET and HEAD; each request recorded and classified."""
    def post(path: str, body: dict) -> tuple[int, str, str]:
        connection = http.client.HTTPConnection("127.0.0.1", sim.server_address[1], timeout=10)
        connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, response.getheader("content-type") or "", response.read().decode()

    tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    with ModelSim([Turn.tools(("Read", {"file_path": "/x/ü.py"})), Turn.text("done")]) as sim:
        status, kind, text = post("/v1/messages?beta=true", {"model": "m", "stream": True, "tools": tools,
                                                             "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200 and kind.startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        names = [e["type"] for e in events]
        assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
        assert events[0]["message"]["content"] == [] and events[0]["message"]["model"] == "m"
        start = next(e for e in events if e["type"] == "content_block_start")["content_block"]
        assert start["type"] == "tool_use" and start["name"] == "Read" and start["input"] == {}
        pieces = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta")
        assert json.loads(pieces) == {"file_path": "/x/ü.py"}
        assert events[-2]["delta"]["stop_reason"] == "tool_use"

        status, _, text = post("/v1/messages", {"model": "m", "tools": tools,
                                                "messages": [{"role": "user", "content": "again"}]})
        assert json.loads(text)["content"] == [{"type": "text", "text": "done"}]
        assert json.loads(text)["stop_reason"] == "end_turn"
        assert json.loads(post("/v1/messages/count_tokens", {"messages": []})[2])["input_tokens"] >= 1
        schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
        titled = json.loads(post("/v1/messages", {"messages": [{"role": "user", "content": "t"}],
                                                  "output_config": {"format": {"type": "json_schema",
                                                                               "schema": schema}}})[2])
        assert json.loads(titled["content"][0]["text"]) == {"title": "memcli-modelsim"}
        compact = {"role": "user", "content": "Your task is to create a detailed summary of the conversation so "
                                              "far ... an <analysis> block followed by a <summary> block."}
        summary = json.loads(post("/v1/messages", {"tools": tools, "messages": [compact]})[2])
        assert "<summary>" in summary["content"][0]["text"]
        out_of_script = json.loads(post("/v1/messages", {"tools": tools, "messages": []})[2])
        assert "no more turns" in out_of_script["content"][0]["text"]
        for method in ("GET", "HEAD"):
            connection = http.client.HTTPConnection("127.0.0.1", sim.server_address[1], timeout=10)
            connection.request(method, "/v1/models")
            assert connection.getresponse().status == 200
        kinds = [(r.kind, r.turn) for r in sim.requests]
        assert kinds == [("main", 0), ("main", 1), ("count_tokens", None), ("side", None), ("compact", None),
                         ("main", None), ("other", None), ("other", None)]
        assert sim.main()[1].messages[0]["content"] == "again" and isinstance(sim.requests[0], Request)


def test_a_request_reads_hook_context_in_either_layout_and_finds_tool_results() -> None:
    """Claude Code puts hook context in a system message or at the end of the user message; both
    are found, each passage to the blank lines that end it; ``result_of`` pairs a call with its result."""
    passage = "<memcli-context>\n- a memory\n</memcli-context>"
    block = passage + "\n"
    system = {"role": "system", "content": [{"type": "text", "text": f"SessionStart hook additional context: "
                                                                      f"{block}\n\n# Environment\n..."}]}
    user = {"role": "user", "content": [{"type": "text", "text": "the prompt"}, {"type": "text", "text": (
        f"skills...\n\nUserPromptSubmit hook additional context: {block}\n\nToday's date is 2026-12-03.")}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                           "content": [{"type": "text", "text": "file text"}]}]}
    after = {"role": "system", "content": f"PreToolUse:Read hook additional context: {block}"}
    request = Request("POST", "/v1/messages", {}, {}, "", {"messages": [user, system, call, result, after]})
    assert request.hook_context("SessionStart") == [f"SessionStart hook additional context: {passage}"]
    assert request.hook_context("UserPromptSubmit") == [f"UserPromptSubmit hook additional context: {passage}"]
    assert request.hook_context("PreToolUse") == [f"PreToolUse:Read hook additional context: {passage}"]
    assert request.hook_context("PreCompact") == []
    found = request.result_of("Read")
    assert found is not None and found["tool_use_id"] == "t1" and request.result_of("Bash") is None
    assert request.texts("user")[0].startswith("the prompt")


def test_a_script_step_may_answer_from_the_request() -> None:
    """A step that is a function gets the request (here: echoes the last tool result back)."""
    def echo(request: Request) -> Turn:
        return Turn.text(f"saw {len(request.tool_results())} result(s)")

    with ModelSim([echo]) as sim:
        connection = http.client.HTTPConnection("127.0.0.1", sim.server_address[1], timeout=10)
        body = {"tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}]}
        connection.request("POST", "/v1/messages", json.dumps(body))
        answer = json.loads(connection.getresponse().read())
        assert answer["content"] == [{"type": "text", "text": "saw 1 result(s)"}] and sim.used == 1


def _post(port: int, path: str, body: dict) -> tuple[int, str, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    response = connection.getresponse()
    return response.status, response.getheader("content-type") or "", response.read().decode()


def test_codex_sim_answers_like_the_responses_api() -> None:
    """tests/modelsim_codex.py over HTTP: a tool turn streams ``response.created``, a
    ``function_call`` item (added, done) and ``response.completed``; the next request's
    ``function_call_output`` is paired with its call; the config names the server."""
    from modelsim_codex import CodexRequest, CodexSim

    tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]
    with CodexSim([Turn.tools(("exec_command", {"cmd": "npm install left-pad"})), Turn.text("done")]) as sim:
        status, kind, text = _post(sim.server_address[1], "/v1/responses", {"model": "m", "stream": True,
                                                                            "tools": tools, "input": []})
        assert status == 200 and kind.startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        assert [e["type"] for e in events] == ["response.created", "response.output_item.added",
                                               "response.output_item.done", "response.completed"]
        call = events[2]["item"]
        assert call["type"] == "function_call" and call["name"] == "exec_command"
        assert json.loads(call["arguments"]) == {"cmd": "npm install left-pad"}
        assert events[-1]["response"]["usage"]["total_tokens"] >= 1
        history = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sys"}]},
                   call, {"type": "function_call_output", "call_id": call["call_id"], "output": "denied: pnpm"}]
        _, _, text = _post(sim.server_address[1], "/v1/responses", {"tools": tools, "input": history})
        done = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        assert done[3]["item"]["content"][0] == {"type": "output_text", "text": "done", "annotations": []}
        second = sim.main()[1]
        assert isinstance(second, CodexRequest) and second.output_of("exec_command") == "denied: pnpm"
        assert second.system == "sys" and second.tool_names == ["exec_command"]
        assert f'base_url = "{sim.url}/v1"' in sim.config() and 'wire_api = "responses"' in sim.config()


def test_gemini_sim_answers_like_the_gemini_api() -> None:
    """tests/modelsim_gemini.py over HTTP: ``streamGenerateContent`` streams ``data:`` lines only
    with a ``functionCall`` part; a side ``generateContent`` with a JSON schema gets a value that
    fits (numbers at least 1); ``countTokens`` counts; ``functionResponse`` parts are read back."""
    from modelsim_gemini import GeminiRequest, GeminiSim

    tools = [{"functionDeclarations": [{"name": "run_shell_command"}]}]
    with GeminiSim([Turn.tools(("run_shell_command", {"command": "npm install left-pad"})),
                    Turn.text("done")]) as sim:
        port = sim.server_address[1]
        status, kind, text = _post(port, "/v1beta/models/g:streamGenerateContent?alt=sse",
                                   {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": tools})
        assert status == 200 and kind.startswith("text/event-stream") and "event:" not in text
        chunk = json.loads(text.splitlines()[0][6:])
        part = chunk["candidates"][0]["content"]["parts"][0]["functionCall"]
        assert part["name"] == "run_shell_command" and part["args"] == {"command": "npm install left-pad"}
        schema = {"type": "OBJECT", "properties": {"score": {"type": "INTEGER"}, "why": {"type": "STRING"}}}
        side = json.loads(_post(port, "/v1beta/models/g:generateContent",
                                {"contents": [], "generationConfig": {"responseJsonSchema": schema}})[2])
        assert json.loads(side["candidates"][0]["content"]["parts"][0]["text"]) == {"score": 1,
                                                                                    "why": "memcli-modelsim"}
        assert json.loads(_post(port, "/v1beta/models/g:countTokens", {"contents": []})[2])["totalTokens"] >= 1
        answer = {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "id": part["id"],
                                                                  "response": {"error": "denied"}}}]}
        _post(port, "/v1beta/models/g:streamGenerateContent?alt=sse",
              {"contents": [{"role": "model", "parts": [{"functionCall": part}]}, answer], "tools": tools})
        second = sim.main()[1]
        assert isinstance(second, GeminiRequest) and second.response_of("run_shell_command") == \
            answer["parts"][0]["functionResponse"]
        assert [r.kind for r in sim.requests] == ["main", "side", "count_tokens", "main"]
        assert sim.env()["GOOGLE_GEMINI_BASE_URL"] == sim.url
