"""Honest partial answers (issue 21 point 5): a read over an index that is not complete yet
answers from what is indexed within its deadline, says so in the answer, and never says
"no memories match" when the memories it would find are not indexed yet.

The partial index is forced, not timed: ``MEMCLI_TEST_SYNC_FILES=N`` (``memcli.index.db``)
makes a sync that has a deadline stop after N changed files as if its deadline had come. A
read then indexes the newest N files, answers, and leaves the rest to one background build.
Each case starts from a fresh copy of the same store (no ``.cache``), so every read is the
first one. Real processes, a real MCP client; subprocess timeouts are hang guards only.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import git

TOTAL, INDEXED = 60, 20
HOOK_INPUT = json.dumps({"session_id": "s-partial", "hook_event_name": "SessionStart", "source": "startup"})


@pytest.fixture
def template(ws: Path) -> Path:
    """``ws`` with ``TOTAL`` committed memories: every one about the quokka ledger, the oldest ten
    (read last by a sync, so never in the partial index) also about wombats; no index yet."""
    folder = ws / "memories" / "project" / "2026-11"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(TOTAL):
        extra = " The wombat burrow feeds it." if i < 10 else ""
        (folder / f"m{i:06d}.md").write_text(
            f"---\nid: m{i:06d}\nscope: project\ncategory: fact\ncreatedAt: 2026-11-02T09:14:05Z\n---\n"
            f"Quokka ledger entry number {i}.{extra}\n", encoding="utf-8")
    git(ws, "add", "memories")
    git(ws, "commit", "-q", "-m", "memories")
    shutil.rmtree(ws / ".cache", ignore_errors=True)
    return ws


def fresh(template: Path, tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(template, copy, symlinks=True, ignore=shutil.ignore_patterns(".cache"))
    return copy


def env_for(ws: Path) -> dict[str, str]:
    return {"MEMCLI_WORKSPACE": str(ws), "MEMCLI_TEST_SYNC_FILES": str(INDEXED)}


NEWEST = {f"m{i:06d}" for i in range(TOTAL - INDEXED, TOTAL)}  # what the forced partial index holds


def test_recall_answers_from_what_is_indexed_and_says_so(template, tmp_path, run):
    ws = fresh(template, tmp_path, "hits")
    found = run("--json", "recall", "quokka ledger", "--limit", "100", env=env_for(ws), timeout=120)
    assert found.code == 0 and "Traceback" not in found.err, found
    data = found.json()["data"]
    assert data["hits"] and {h["id"] for h in data["hits"]} <= NEWEST
    assert "partial index" in data["partial"] and f"of {TOTAL} memory files are not indexed yet" in data["partial"]
    assert any("not indexed yet" in w for w in found.json()["warnings"])  # and among the warnings

    ws = fresh(template, tmp_path, "plain")
    plain = run("recall", "quokka", env=env_for(ws), timeout=120)
    assert plain.code == 0 and "Quokka ledger entry" in plain.out and "not indexed yet" in plain.err, plain


def test_a_query_whose_memories_are_not_indexed_yet_never_reads_as_no_match(template, tmp_path, run):
    ws = fresh(template, tmp_path, "none-json")
    missed = run("--json", "recall", "wombat", env=env_for(ws), timeout=120)
    assert missed.code == 0, missed
    data = missed.json()["data"]
    assert data["hits"] == [] and data["answer"] == "none" and data["partial"]
    assert data["note"] == "no memories match the query in what is indexed so far"

    ws = fresh(template, tmp_path, "none-text")
    plain = run("recall", "wombat", env=env_for(ws), timeout=120)
    assert plain.code == 0 and plain.out == "", plain
    assert "no memories match the query in what is indexed so far" in plain.err
    assert "no memories match the query\n" not in plain.err

    # the background build the read started completes the index; then the same query finds them
    log = ws / ".cache" / "index-build.log"
    for _ in range(1200):  # hang guard: 120 s
        if f"{TOTAL} memories" in (log.read_text(encoding="utf-8") if log.exists() else ""):
            break
        time.sleep(0.1)
    after = run("--json", "recall", "wombat", "--limit", "100", env={"MEMCLI_WORKSPACE": str(ws)}, timeout=120)
    data = after.json()["data"]
    assert data["partial"] is None and len(data["hits"]) == 10, after


def test_the_context_block_and_the_session_start_hook_carry_the_note(template, tmp_path, run):
    ws = fresh(template, tmp_path, "context")
    block = run("context", env=env_for(ws), timeout=120)
    assert block.code == 0, block
    assert "memcli: answered from a partial index" in block.out and "Quokka ledger entry" in block.out
    ws = fresh(template, tmp_path, "context-json")
    as_json = run("context", "--format", "json", env=env_for(ws), timeout=120)
    assert "partial index" in json.loads(as_json.out)["partial"], as_json

    ws = fresh(template, tmp_path, "hook")
    hook = run("hook", "claude", "session-start", input=HOOK_INPUT, env=env_for(ws), timeout=120)
    assert hook.code == 0, hook
    said = json.loads(hook.out)["hookSpecificOutput"]["additionalContext"]
    assert "answered from a partial index" in said and "Quokka ledger entry" in said


@pytest.mark.slow
def test_the_mcp_recall_tool_says_so_too(template, tmp_path):
    ws = fresh(template, tmp_path, "mcp")
    params = StdioServerParameters(command=sys.executable, args=["-m", "memcli", "-w", str(ws), "mcp"],
                                   env={**os.environ, **env_for(ws)}, cwd=str(ws))

    async def main() -> None:
        with anyio.fail_after(180):  # hang guard
            async with stdio_client(params, errlog=sys.stderr) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=120) as client:
                    await client.initialize()
                    found = (await client.call_tool("recall", {"query": "wombat"})).structured_content
                    assert found["hits"] == [] and found["partial"], found
                    assert found["note"] == "no memories match the query in what is indexed so far"
    anyio.run(main)
