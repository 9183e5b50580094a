"""Issue 19 item 10, the small ones: `recall --explain` labels its columns, `--help` never cuts a
summary mid-clause, exit 130 is documented (and given), `compact` says why it has nothing to do,
and `gotcha`/`pitfall` are taken as `fact` with a tag."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import run_memcli

if TYPE_CHECKING:
    from cli_runner import Runner

ROOT = Path(__file__).parent.parent


def test_recall_explain_prints_a_header_when_piped(ws):
    assert run_memcli("remember", "nginx reload needs a config test first").code == 0
    result = run_memcli("recall", "--explain", "nginx")
    assert result.code == 0, result
    header, first = result.out.splitlines()[:2]
    assert header.split("\t") == ["id", "match", "score", "bm25", "coverage", "importance", "recency", "text"]
    assert len(first.split("\t")) == len(header.split("\t")) and "nginx" in first
    assert "\tmatch\t" not in run_memcli("recall", "nginx").out  # plain recall stays header-less for scripts


def test_no_help_summary_is_cut_mid_clause():
    """`memcli --help` once showed "Export your memories as CLAUDE.md/AGENTS.md bullets by"."""
    import typer

    from memcli.cli.app import app

    def clause(text: str) -> str:  # the first sentence up to ":" or ";", parentheses dropped
        text = re.split(r"\.\s|\.$", " ".join((text or "").split("\n\n", 1)[0].split()), maxsplit=1)[0]
        text = re.split(r"[:;](?![^(]*\))", text, maxsplit=1)[0]
        return re.sub(r"\s*\([^()]*\)", "", text).strip()

    root = typer.main.get_command(app)
    for group in ([], ["hook"], ["index"], ["mcp"]):
        command = root
        for word in group:
            command = command.commands[word]
        shown = run_memcli(*group, "--help", env={"COLUMNS": "80"}).out.split("Commands:", 1)[1]
        for line in shown.splitlines():
            if not line.strip():
                continue
            name, summary = line.split(None, 1)
            summary = re.sub(r"\s*\([^()]*\)", "", summary.strip())
            whole = clause(command.commands[name].help)
            rest = whole[len(summary):] if whole.startswith(summary) else None
            assert rest is not None and (rest == "" or rest.startswith(",")), (group, name, summary, whole)


def test_exit_130_is_in_the_table_and_the_generated_docs(ws):
    from memcli.errors import EXIT_CODES

    assert "Ctrl-C" in EXIT_CODES[130]
    assert f"| 130 | {EXIT_CODES[130]} |" in (ROOT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "remember", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wchan = Path(f"/proc/{proc.pid}/wchan")
        for _ in range(400):  # until it waits for the text on stdin (a loaded machine starts it slowly)
            time.sleep(0.05)
            try:
                if "pipe" in wchan.read_text():
                    break
            except OSError:
                break
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, err)
    assert not list((ws / "memories").rglob("*.md"))


def test_compact_says_why_it_has_nothing_to_do(ws):
    first = run_memcli("--json", "remember", "Deploy with make deploy.").json()["data"]["id"]
    then = {"MEMCLI_NOW": "2026-05-01T00:00:00Z"}
    assert run_memcli("supersede", first, "Deploy with make release.", env=then).code == 0
    result = run_memcli("compact", env={"MEMCLI_NOW": "2026-05-02T00:00:00Z"})
    assert result.code == 0, result
    assert result.out.startswith("nothing to compact: nothing has expired")
    assert "[compact] retention (90d)" in result.out
    assert "retires on 2026-07-30" in result.out, result.out
    data = run_memcli("--json", "compact", env={"MEMCLI_NOW": "2026-05-02T00:00:00Z"}).json()["data"]
    assert data["waiting"] == [{"id": first, "due": "2026-07-30T00:00:00Z"}]
    due = run_memcli("compact", env={"MEMCLI_NOW": "2026-07-30T00:00:01Z"})
    assert f"retire {first}" in due.out


def test_gotcha_and_pitfall_are_facts_with_a_tag(ws):
    result = run_memcli("--json", "remember", "The staging database listens on 5433, not 5432.", "--category", "gotcha")
    assert result.code == 0, result
    memory = result.json()["data"]
    shown = run_memcli("--json", "show", memory["id"]).json()["data"]
    assert shown["category"] == "fact" and shown["tags"] == ["gotcha"], shown
    assert "written as 'fact' tagged 'gotcha'" in result.json()["warnings"][0]
    assert run_memcli("remember", "Never run tox in parallel here.", "-c", "Pitfall").code == 0
    assert len(run_memcli("list", "--tag", "pitfall").out.splitlines()) == 1
    refused = run_memcli("list", "--category", "gotcha")
    assert refused.code == 5 and "use --tag gotcha" in refused.err and refused.err.count("\n") == 1
    bogus = run_memcli("remember", "x y z", "--category", "bogus")
    assert bogus.code == 5 and "use one of: preference, fact" in bogus.err


@pytest.mark.parametrize("args", [("recall", "deploy"), ("list",), ("--json", "list"), ("show", "ID")])
def test_a_closed_output_pipe_ends_quietly_with_141(ws: Path, run: Runner, args: tuple[str, ...]) -> None:
    # `memcli recall X | head -1` ended in "internal error: BrokenPipeError" (exit 1), and
    # commands through typer in a silent exit 1 (its click's answer to EPIPE)
    written = run("--json", "remember", "Deploys go out on Tuesdays; the deploy script warms the cache.").json()
    args = tuple(written["data"]["id"] if a == "ID" else a for a in args)
    proc = subprocess.Popen([sys.executable, "-m", "memcli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == "", err


@pytest.mark.parametrize("unbuffered", ["1", None])
@pytest.mark.parametrize("args", [("recall", "quokka", "--limit", "1000"), ("list", "--limit", "1000"),
                                  ("--json", "recall", "quokka", "--limit", "1000"),
                                  ("--json", "list", "--limit", "1000")])
@pytest.mark.slow
def test_a_real_pipe_to_head_ends_quietly_with_141_as_git(ws: Path, args: tuple[str, ...],
                                                          unbuffered: str | None) -> None:
    # issue 21 point 4: `memcli recall X | head -1` through a real pipe, with more output than the
    # pipe holds, so the reader is gone before memcli has written it all (git ends with 141 so).
    # With PYTHONUNBUFFERED the write cut short by the reader was taken as done: exit 0.
    folder = ws / "memories" / "project" / "2026-11"
    folder.mkdir(parents=True)
    words = " ".join(["the quokka ledger keeps its balances in the eastern vault"] * 2)
    for i in range(1000):  # some 130 bytes a line: twice what a pipe holds
        (folder / f"m{i:06d}.md").write_text(f"---\nid: m{i:06d}\nscope: project\ncategory: fact\n---\n"
                                             f"Entry {i}: {words}.\n", encoding="utf-8")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONUNBUFFERED"}
    env |= {"PYTHONUNBUFFERED": unbuffered} if unbuffered else {}
    assert run_memcli("index", "status").code == 0
    full = subprocess.run([sys.executable, "-m", "memcli", *args], capture_output=True, env=env)
    assert full.returncode == 0 and len(full.stdout) > 100_000, (full.returncode, len(full.stdout))
    memcli = subprocess.Popen([sys.executable, "-m", "memcli", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env)
    head = subprocess.Popen(["head", "-c", "100"] if "--json" in args else ["head", "-1"], stdin=memcli.stdout,
                            stdout=subprocess.PIPE)
    memcli.stdout.close()  # head holds the only reading end
    first = head.communicate(timeout=120)[0]
    err = memcli.stderr.read().decode()
    assert memcli.wait(timeout=120) == 141 and err == "", (memcli.returncode, err)
    assert first and head.returncode == 0
