"""The main loop in one test: init, remember, recall, supersede, show, log."""

from conftest import git


def test_remember_recall_supersede(ws, run):
    first = run("--json", "remember", "Use pnpm, not npm, for JavaScript packages.", "--subject", "js.pm")
    assert first.code == 0, first
    old = first.json()["data"]["id"]
    assert run("--json", "recall", "pnpm").json()["data"]["hits"][0]["id"] == old
    second = run("--json", "supersede", old[:8], "Use bun for JavaScript packages.")
    assert second.code == 0, second
    new = second.json()["data"]["id"]
    assert run("--json", "recall", "pnpm").json()["data"]["hits"] == []
    assert [h["id"] for h in run("--json", "recall", "bun").json()["data"]["hits"]] == [new]
    shown = run("--json", "show", old).json()["data"]
    assert shown["status"] == "superseded" and shown["supersededBy"] == [new]
    assert len(git(ws, "log", "--oneline").splitlines()) == 3
