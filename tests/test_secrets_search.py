"""A search matches the text as served, never a secret it hides (newcomer trust fault 1).

A hand-written file holding a token is served with ``[secret removed: KIND]``; if a search
still matched the raw text, a probe of the token's prefixes (``ghp_1``, ``ghp_12``, ...)
would tell right guesses from wrong ones and rebuild the token a character at a time.
Every search mode is probed, through the CLI and the MCP server: a true prefix and a wrong
one of each length must give the same answer.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from test_mcp_server import drive

GH = "gh" + "p_1234567890abcdefghijklmnopqrstuvwxyzAB"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SECRETS = {"github": GH, "aws": AWS}


def wrong(secret: str, size: int) -> str:
    """A guess as long as ``secret[:size]`` whose last character is wrong."""
    last = secret[size - 1]
    return secret[: size - 1] + ("9" if last != "9" else "8")


def probes(secret: str) -> list[tuple[str, str]]:
    """(true prefix, wrong prefix) pairs of growing length, the whole token last."""
    return [(secret[:n], wrong(secret, n)) for n in (5, 6, 9, 14, len(secret) - 1, len(secret))]


def plant(ws: Path) -> None:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hand.md").write_text(f"The deploy token is {GH} and the backup key is {AWS}.\n", encoding="utf-8")


def patterns(prefix: str) -> dict[str, str]:
    """The query for each mode: grep takes a regular expression (the prefix, escaped)."""
    return {"ranked": prefix, "fuzzy": prefix, "grep": re.escape(prefix)}


@pytest.mark.slow
def test_cli_searches_learn_nothing_of_a_hidden_secret(ws: Path, run) -> None:
    plant(ws)
    served = run("--json", "list")
    assert served.code == 0 and "[secret removed: github-token]" in served.out and GH not in served.out
    flags = {"ranked": [], "fuzzy": ["--fuzzy"], "grep": ["--grep"]}
    for secret in SECRETS.values():
        for right, bad in probes(secret):
            for mode, flag in flags.items():
                answers = []
                for guess in (right, bad):
                    result = run("--json", "recall", *flag, patterns(guess)[mode])
                    assert result.code == 0, result
                    answers.append([h["id"] for h in result.json()["data"]["hits"]])
                assert answers[0] == answers[1] == [], (mode, right, answers)
    for pattern in ("ghp_[0-9]+", "AKIA[A-Z0-9]+", "[0-9]{10}"):
        assert run("--json", "recall", "--grep", pattern).json()["data"]["hits"] == [], pattern
    # the served text is what matches: the marker, and the words around the secret
    assert run("--json", "recall", "--grep", r"secret removed: github-token").json()["data"]["hits"]
    assert run("--json", "recall", "--grep", "deploy token is").json()["data"]["hits"]
    assert run("--json", "recall", "deploy token").json()["data"]["hits"]


@pytest.mark.slow
def test_mcp_recall_learns_nothing_of_a_hidden_secret(ws: Path) -> None:
    plant(ws)

    async def steps(client: ClientSession) -> None:
        for secret in SECRETS.values():
            for right, bad in probes(secret):
                for mode in ("ranked", "fuzzy", "grep"):
                    answers = []
                    for guess in (right, bad):
                        result = await client.call_tool("recall", {"mode": mode, "query": patterns(guess)[mode]})
                        assert not result.is_error, result
                        hits = result.structured_content["hits"]
                        answers.append([h["id"] for h in hits if h["match"] != "semantic"])
                    assert answers[0] == answers[1] == [], (mode, right, answers)
        found = await client.call_tool("recall", {"mode": "grep", "query": "deploy token is"})
        assert found.structured_content["hits"]
        await anyio.sleep(0)

    drive(ws, steps)


@pytest.mark.slow
def test_context_query_does_not_pull_a_memory_forward_by_its_hidden_secret(ws: Path, run) -> None:
    plant(ws)
    for n in range(30):  # others ahead of it in the browse order: only a query match brings it first
        run("remember", f"filler note number {n} about the build", "--importance", "5")
    answers = []
    for guess in (GH[:12], wrong(GH, 12)):
        result = run("--json", "context", "--query", guess)
        assert result.code == 0, result
        answers.append(result.json()["data"]["included"])
    assert answers[0] == answers[1]
