"""`memcli mcp`, driven through the MCP SDK's own stdio client (`stdio_client` + `ClientSession`).

Each test starts the real server (`python -m memcli mcp`) in a subprocess on a real
workspace with a real git repository; nothing is mocked.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, Implementation

from conftest import personal_store, run_memcli

GITHUB_TOKEN = "ghp_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
#: A hang guard for a whole session (start-up included) on a loaded machine.
GUARD = 180


@contextlib.asynccontextmanager
async def session(ws: Path, *args: str, actor: str = "alice", name: str = "Test Client",
                  errlog: TextIO | None = None) -> AsyncIterator[ClientSession]:
    env = {**os.environ, "MEMCLI_ACTOR": actor}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memcli", "-w", str(ws), "mcp", *args],
                                   env=env, cwd=str(ws))
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name=name, version="1.0"),
                                 read_timeout_seconds=120) as client:
            await client.initialize()
            yield client


def drive(ws: Path, steps: Callable[[ClientSession], Awaitable[None]], *args: str, **kwargs: Any) -> None:
    """Run ``steps(client)`` against a server on ``ws``, under a hang guard."""
    async def main() -> None:
        with anyio.fail_after(GUARD):
            async with session(ws, *args, **kwargs) as client:
                await steps(client)
    anyio.run(main)


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def commits(ws: Path) -> int:
    return int(subprocess.run(["git", "-C", str(ws), "rev-list", "--count", "HEAD"], capture_output=True,
                              text=True, check=True).stdout)


def remember_cli(ws: Path, text: str, *args: str, actor: str = "alice") -> str:
    result = run_memcli("--json", "-w", str(ws), "remember", text, *args, env={"MEMCLI_ACTOR": actor})
    assert result.code == 0, result
    return result.json()["data"]["id"]


READ_TOOLS = {"recall", "context", "show", "history", "review"}
WRITE_TOOLS = {"remember", "supersede", "forget"}


@pytest.mark.slow
def test_tools_schemas_annotations_and_no_tool_approves(ws: Path) -> None:
    async def steps(client: ClientSession) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == READ_TOOLS | WRITE_TOOLS
        assert not any("approve" in n or "reject" in n for n in tools)
        for name, tool in tools.items():
            assert tool.description and len(tool.description) > 80, name
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema and tool.output_schema["type"] == "object", name
            assert "ctx" not in tool.input_schema.get("properties", {})
            hints = tool.annotations
            assert hints.read_only_hint is (name in READ_TOOLS), name
            assert hints.destructive_hint is (name == "forget"), name
        assert tools["recall"].input_schema["required"] == ["query"]
        assert {"query", "limit", "mode", "scopes", "category", "tag", "include_expired"} \
            <= set(tools["recall"].input_schema["properties"])
        assert tools["remember"].input_schema["required"] == ["text"]
        assert set(tools["supersede"].input_schema["required"]) == {"memory_id", "text"}
        result = await client.call_tool("approve", {"memory_id": "01abcdef"})
        assert result.is_error and "approve" in text_of(result)

    drive(ws, steps)

    async def read_only(client: ClientSession) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS

    drive(ws, read_only, "--read-only")


@pytest.mark.slow
def test_remember_recall_supersede_recall_returns_only_the_new_text(ws: Path) -> None:
    async def steps(client: ClientSession) -> None:
        first = await client.call_tool("remember", {"text": "Deploys go out with the blue-green script",
                                                    "scope": "user:alice", "tags": ["deploy"]})
        assert not first.is_error, text_of(first)
        written = first.structured_content
        assert written["outcome"] == "created" and written["commit"]
        assert written["memory"]["provenance"]["sourceType"] == "model_derived"
        assert written["memory"]["provenance"]["actor"] == "mcp-client"  # never from clientInfo.name (issue 22)
        assert written["memory"]["provenance"]["runId"].startswith("mcp-")
        old_id = written["id"]
        found = (await client.call_tool("recall", {"query": "blue-green deploys"})).structured_content
        assert [h["id"] for h in found["hits"]] == [old_id] and found["answer"] == "strong" and found["note"] is None
        weak = (await client.call_tool("recall", {"query": "blue-green database"})).structured_content
        assert weak["answer"] == "weak" and "only some" in weak["note"] and weak["retriever"]

        replaced = await client.call_tool("supersede", {"memory_id": old_id[:12],
                                                        "text": "Deploys go out with the canary script"})
        assert not replaced.is_error, text_of(replaced)
        new = replaced.structured_content
        assert new["outcome"] == "created" and new["changed"] == [old_id]
        assert new["memory"]["scope"] == "user:alice" and new["memory"]["tags"] == ["deploy"]
        hits = (await client.call_tool("recall", {"query": "deploys script"})).structured_content["hits"]
        assert [h["text"] for h in hits] == ["Deploys go out with the canary script"]
        shown = (await client.call_tool("show", {"memory_id": old_id})).structured_content["memory"]
        assert shown["status"] == "superseded" and shown["supersededBy"] == [new["id"]]
        history = (await client.call_tool("history", {"memory_id": new["id"]})).structured_content
        assert [link["id"] for link in history["chain"]] == [old_id, new["id"]]
        block = (await client.call_tool("context", {})).structured_content
        assert "canary" in block["text"] and "blue-green" not in block["text"]
        assert block["included"] == [new["id"]]

        forgot = await client.call_tool("forget", {"memory_id": new["id"]})
        assert not forgot.is_error and forgot.structured_content["memory"]["status"] == "archived"
        again = (await client.call_tool("recall", {"query": "deploys"})).structured_content["hits"]
        assert again == []

    drive(ws, steps)
    log = run_memcli("--json", "-w", str(ws), "log").json()["data"]["entries"]
    assert [e["trailers"]["op"] for e in log][:3] == ["forget", "supersede", "remember"]
    assert {e["trailers"]["actor"] for e in log[:3]} == {"alice"}  # the person, in the commit trailers


def test_a_secret_is_a_tool_error_never_echoed_and_nothing_is_written(ws: Path) -> None:
    before = commits(ws)
    files_before = sorted((ws / "memories").rglob("*.md"))

    async def steps(client: ClientSession) -> None:
        result = await client.call_tool("remember", {"text": f"the token is {GITHUB_TOKEN} for CI",
                                                     "scope": "user:alice"})
        assert result.is_error
        message = text_of(result)
        assert "GitHub token" in message and GITHUB_TOKEN not in message and "\n" not in message
        for arguments in ({"query": "x", "limit": GITHUB_TOKEN}, {"query": "x", "scopes": [GITHUB_TOKEN]},
                          {"query": "x", "category": GITHUB_TOKEN}):
            bad = await client.call_tool("recall", arguments)
            assert bad.is_error and GITHUB_TOKEN not in text_of(bad) and GITHUB_TOKEN.lower() not in text_of(bad)
        for tool in ("show", "history", "forget"):
            bad = await client.call_tool(tool, {"memory_id": GITHUB_TOKEN})
            assert bad.is_error and GITHUB_TOKEN.lower() not in text_of(bad).lower(), tool
        named = await client.call_tool(GITHUB_TOKEN, {})
        assert named.is_error and GITHUB_TOKEN not in text_of(named)
        tagged = await client.call_tool("remember", {"text": "a fine text", "tags": [GITHUB_TOKEN]})
        assert tagged.is_error and GITHUB_TOKEN not in text_of(tagged)
        assert (await client.call_tool("recall", {"query": "token"})).structured_content["hits"] == []

    drive(ws, steps)
    assert commits(ws) == before
    assert sorted((ws / "memories").rglob("*.md")) == files_before
    assert GITHUB_TOKEN not in subprocess.run(["git", "-C", str(ws), "log", "-p", "--all"], capture_output=True,
                                              text=True).stdout


@pytest.mark.slow
def test_a_project_write_waits_in_pending_review_and_errors_carry_the_cli_line(ws: Path) -> None:
    async def steps(client: ClientSession) -> None:
        result = await client.call_tool("remember", {"text": "The API lives in services/api", "scope": "project"})
        written = result.structured_content
        assert written["outcome"] == "pending_review" and written["memory"]["status"] == "pending_review"
        assert written["gate"] == "review"
        assert (await client.call_tool("recall", {"query": "API services"})).structured_content["hits"] == []
        pending = (await client.call_tool("review", {})).structured_content["pending"]
        assert [p["id"] for p in pending] == [written["id"]]
        assert pending[0]["provenance"]["actor"] == "mcp-client"
        default = (await client.call_tool("remember", {"text": "Releases are tagged vYYYY.MM"})).structured_content
        assert default["memory"]["scope"] == "project" and default["outcome"] == "pending_review"

        unknown = await client.call_tool("show", {"memory_id": "01zzzzzzzzzz"})
        assert unknown.is_error
        # the hint names what the agent has (it cannot run memcli), not the CLI's commands
        assert text_of(unknown) == ("no memory '01zzzzzzzzzz'; list ids with the memory resources "
                                    "(resources/list, memcli://memory/ID) or search with the `recall` tool")
        empty = await client.call_tool("recall", {"query": "   "})
        assert empty.is_error and text_of(empty).startswith("the query is empty")
        assert "`memcli list`" not in text_of(empty) and "the memory resources" in text_of(empty)
        shared = await client.call_tool("forget", {"memory_id": project_id})
        assert shared.is_error and "shared scope project" in text_of(shared)
        assert "memcli forget" in text_of(shared)
        wrong = await client.call_tool("supersede", {"memory_id": written["id"], "text": "x y z"})
        assert wrong.is_error and "only an active memory can be superseded" in text_of(wrong)
        outside = await client.call_tool("remember", {"text": "team note", "scope": "channel:ops"})
        assert outside.is_error and "outside this server's scopes" in text_of(outside)
        assert "leave scope out to write to the default one" in text_of(outside)  # not "search" (stop 33)

    project_id = remember_cli(ws, "Python code is formatted with black")
    drive(ws, steps)
    cli = run_memcli("-w", str(ws), "show", "01zzzzzzzzzz")
    assert cli.code == 4 and "no memory '01zzzzzzzzzz'; list ids with `memcli list`" in cli.err


@pytest.mark.slow
def test_a_server_started_as_alice_never_returns_bobs_personal_memories(ws: Path, tmp_path: Path) -> None:
    bob_id = remember_cli(ws, "bob keeps his zebra notes here", "--scope", "user:bob", actor="bob")
    alice_id = remember_cli(ws, "alice keeps her zebra notes here", "--scope", "user:alice")
    errlog = (tmp_path / "server.err").open("w+")

    async def steps(client: ClientSession) -> None:
        seen: list[str] = []
        for arguments in ({"query": "zebra"}, {"query": "zebra", "mode": "fuzzy"}, {"query": "zeb.*", "mode": "grep"},
                          {"query": "zebra", "statuses": ["active", "archived", "superseded"],
                           "include_expired": True}):
            result = await client.call_tool("recall", arguments)
            seen += [h["id"] for h in result.structured_content["hits"]]
        assert set(seen) == {alice_id}
        for scopes in (["user:bob"], ["user:*"], ["*"]):
            result = await client.call_tool("recall", {"query": "zebra", "scopes": scopes})
            assert result.is_error and "bob keeps" not in text_of(result)
        unknown = text_of(await client.call_tool("show", {"memory_id": "01zzzzzzzzzz"}))
        for tool in ("show", "history", "supersede", "forget"):
            arguments = {"memory_id": bob_id, **({"text": "mine now"} if tool == "supersede" else {})}
            result = await client.call_tool(tool, arguments)
            assert result.is_error and text_of(result) == unknown.replace("01zzzzzzzzzz", bob_id), tool
        block = (await client.call_tool("context", {"query": "zebra"})).structured_content
        assert "bob" not in block["text"] and bob_id not in block["included"]
        bobs = await client.call_tool("remember", {"text": "planted", "scope": "user:bob"})
        assert bobs.is_error
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert f"memcli://memory/{alice_id}" in resources and not any(bob_id in str(u) for u in resources)
        with pytest.raises(Exception) as raised:
            await client.read_resource(f"memcli://memory/{bob_id}")
        assert "no memory" in str(raised.value)
        mine = await client.read_resource(f"memcli://memory/{alice_id}")
        assert json.loads(mine.contents[0].text)["text"] == "alice keeps her zebra notes here"

    drive(ws, steps, errlog=errlog)
    started = run_memcli("-w", str(ws), "mcp", "--scope", "user:bob", input="")
    assert started.code == 5 and started.err.count("\n") == 1
    assert "personal to bob" in started.err and "Traceback" not in started.err
    errlog.seek(0)
    assert "Traceback" not in errlog.read()


@pytest.mark.slow
def test_scopes_fixed_at_start_narrow_every_tool(ws: Path) -> None:
    project_id = remember_cli(ws, "ostrich project fact")
    alice_id = remember_cli(ws, "ostrich personal fact", "--scope", "user:alice")

    async def steps(client: ClientSession) -> None:
        hits = (await client.call_tool("recall", {"query": "ostrich"})).structured_content["hits"]
        assert [h["id"] for h in hits] == [alice_id]
        widened = await client.call_tool("recall", {"query": "ostrich", "scopes": ["project"]})
        assert widened.is_error and "outside this server's scopes (user:alice)" in text_of(widened)
        assert (await client.call_tool("show", {"memory_id": project_id})).is_error
        written = (await client.call_tool("remember", {"text": "ostrich default scope"})).structured_content
        assert written["memory"]["scope"] == "user:alice" and written["outcome"] == "created"
        assert written["memory"]["provenance"]["actor"] == "codex-ci"  # the configured agent wins

    drive(ws, steps, "--scope", "user:alice", "--agent", "codex-ci")


@pytest.mark.slow
def test_the_next_call_sees_hand_edits_cli_writes_and_deletions(ws: Path) -> None:
    edited_id = remember_cli(ws, "the alpha cluster runs postgres", "--scope", "user:alice")
    doomed_id = remember_cli(ws, "ghostword777 lives here", "--scope", "user:alice")

    def path_of(memory_id: str) -> Path:  # user:alice: in alice's own store of the workspace
        return next((personal_store(ws) / "memories").rglob(f"{memory_id}*.md"))

    async def steps(client: ClientSession) -> None:
        assert (await client.call_tool("recall", {"query": "ghostword777"})).structured_content["hits"]
        assert (await client.call_tool("recall", {"query": "alpha cluster"})).structured_content["hits"]
        target = path_of(edited_id)
        target.write_text(target.read_text(encoding="utf-8").replace("alpha", "beta"), encoding="utf-8")
        path_of(doomed_id).unlink()
        cli_id = await anyio.to_thread.run_sync(lambda: remember_cli(ws, "written by the CLI: okapi",
                                                                     "--scope", "user:alice"))
        beta = (await client.call_tool("recall", {"query": "beta cluster"})).structured_content["hits"]
        assert [h["id"] for h in beta] == [edited_id]
        alpha = (await client.call_tool("recall", {"query": "alpha"})).structured_content["hits"]
        assert [h for h in alpha if h["match"] != "semantic"] == []  # once the model is up, "beta" is near in meaning
        assert (await client.call_tool("recall", {"query": "ghostword777"})).structured_content["hits"] == []
        assert (await client.call_tool("show", {"memory_id": doomed_id})).is_error
        okapi = (await client.call_tool("recall", {"query": "okapi"})).structured_content["hits"]
        assert [h["id"] for h in okapi] == [cli_id]
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert not any(doomed_id in u for u in resources) and any(cli_id in u for u in resources)

    drive(ws, steps)


def test_without_a_workspace_every_tool_says_so_and_the_server_keeps_serving(tmp_path: Path) -> None:
    empty = tmp_path / "nowhere"
    empty.mkdir()

    async def steps(client: ClientSession) -> None:
        for _ in range(2):
            result = await client.call_tool("recall", {"query": "anything"})
            assert result.is_error and "memcli init" in text_of(result)
        assert (await client.list_resources()).resources == []

    drive(empty, steps)


def test_agent_names_from_clients_are_plain_and_never_secrets() -> None:
    from memcli.mcp_server.tools import agent_name

    assert agent_name("Claude Code") == "claude-code"
    assert agent_name("gemini-cli-mcp-client") == "gemini-cli-mcp-client"
    assert agent_name("../../etc/passwd") == "etc-passwd"
    assert agent_name("x" * 100) == "x" * 40
    assert agent_name(GITHUB_TOKEN) is None and agent_name(f"client {GITHUB_TOKEN}") is None
    assert agent_name("") is None and agent_name("---") is None and agent_name(None) is None


def test_bad_start_options_are_one_line_errors(ws: Path) -> None:
    for args, code, words in ((["--agent", "!!!"], 5, "invalid agent name"),
                              (["--scope", "no such scope!"], 5, "scope"),
                              (["--transport", "carrier-pigeon"], 2, "unknown --transport")):
        result = run_memcli("-w", str(ws), "mcp", *args, input="")
        assert result.code == code and words in result.err and result.err.count("\n") == 1, (args, result)
        assert result.out == ""


@pytest.mark.slow
def test_a_client_calling_itself_bob_does_not_become_the_actor(ws: Path) -> None:
    """Issue 22 point 3: clientInfo.name is whatever a client says; bob's own approval of his agent's
    write must not look like a second person's."""
    async def steps(client: ClientSession) -> None:
        written = await client.call_tool("remember", {"text": "Release notes live in CHANGES.md", "scope": "project"})
        assert not written.is_error, text_of(written)
        assert written.structured_content["memory"]["provenance"]["actor"] == "mcp-client"

    drive(ws, steps, actor="bob", name="bob")


@pytest.mark.slow
def test_a_memcli_toml_that_stops_loading_keeps_reads_and_refuses_writes(ws: Path) -> None:
    """hnc3's leftover: the MCP server took no fallback, so a memcli.toml broken mid-session made
    every tool call an error. Reads now work by the last committed settings that load and say so
    in their warnings (as the hooks do); a write is refused with the reason, nothing written."""
    config = ws / "memcli.toml"
    subprocess.run(["git", "-C", str(ws), "add", "memcli.toml"], check=True)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "settings", "--allow-empty"], check=True)
    good = config.read_text(encoding="utf-8")

    async def steps(client: ClientSession) -> None:
        first = await client.call_tool("remember", {"text": "Deploys go out with the blue-green script",
                                                    "scope": "user:alice"})
        assert not first.is_error, text_of(first)
        config.write_text(good + "\n[hooks\n", encoding="utf-8")  # not TOML any more
        before = commits(ws)
        found = await client.call_tool("recall", {"query": "blue-green deploys"})
        assert not found.is_error, text_of(found)
        data = found.structured_content
        assert [h["text"] for h in data["hits"]] == ["Deploys go out with the blue-green script"]
        assert any("memcli.toml" in w and "cannot read configuration" in w for w in data["warnings"]), data
        refused = await client.call_tool("remember", {"text": "Staging listens on port 5433", "scope": "user:alice"})
        assert refused.is_error and "writes nothing" in text_of(refused) and "Traceback" not in text_of(refused)
        assert commits(ws) == before
        config.write_text(good, encoding="utf-8")
        again = await client.call_tool("remember", {"text": "Staging listens on port 5433", "scope": "user:alice"})
        assert not again.is_error, text_of(again)

    drive(ws, steps)
