"""CASES.md table H against ``memcli context`` (the ``hook`` command builds on it):
H1 the budgeted block, H2 never breaking the agent's session.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MEMCLI, git

IDENT = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid")
OPEN, CLOSE = "<memcli-context>", "</memcli-context>"
LINE = re.compile(r"^- \[fact, project\] (?P<text>.*) \(id (?P<id>h\d{3})\)$")
FOOTER = re.compile(r"^\((?P<n>\d+) more memor(?:y|ies) not shown; .*`memcli recall[^`]*`.*\)$")


def commit_all(ws: Path, message: str = "hand-written memories") -> None:
    git(ws, "add", "-A", "memories")
    subprocess.run(["git", *IDENT, "-C", str(ws), "commit", "-q", "-m", message], check=True)


def assert_clean_block(out: str) -> list[str]:
    """stdout is one fenced block and nothing else; returns its lines."""
    assert out.startswith(OPEN + "\n") and out.endswith(CLOSE + "\n"), out
    lines = out.splitlines()
    assert lines.count(OPEN) == 1 and lines.count(CLOSE) == 1
    assert not any(line.startswith("memcli") for line in lines), out
    return lines


# --- H1 ------------------------------------------------------------------------------

EN = "the build cache must be warmed before the integration suite runs, and flaky tests are retried once; "
ZH = "构建缓存必须在集成测试运行之前预热，不稳定的测试只重试一次，发布前要检查变更日志。"


def _text(i: int) -> str:
    if i % 4 == 0:
        return (f"记忆{i:03d}：" + ZH * 10)[:200]
    return (f"Memory {i:03d}: " + EN * 3)[:200].rstrip()


@pytest.fixture
def many(ws) -> dict[str, tuple[str, int]]:
    """300 active hand-written memories of about 200 characters, a quarter Chinese, one commit."""
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    memories = {}
    for i in range(300):
        importance = i % 5 + 1
        memories[f"h{i:03d}"] = (_text(i), importance)
        (folder / f"h{i:03d}.md").write_text(
            f"---\nscope: project\nimportance: {importance}\n---\n{_text(i)}\n", encoding="utf-8")
    commit_all(ws)
    return memories


def test_h1_block_within_budget_cut_at_memories_most_important_first(run, many):
    result = run("context")
    assert result.code == 0, result
    out = result.out
    assert len(out) <= 8000
    lines = assert_clean_block(out)
    body = lines[2:-2]
    footer = FOOTER.match(lines[-2])
    assert footer, lines[-2]
    included = []
    for line in body:
        match = LINE.match(line)
        assert match, f"not one whole memory: {line!r}"
        assert match["text"] == many[match["id"]][0]  # never cut inside a memory
        included.append(match["id"])
    assert len(included) >= 20 and len(set(included)) == len(included)
    assert int(footer["n"]) == 300 - len(included)
    importances = [many[i][1] for i in included]
    assert importances == sorted(importances, reverse=True)
    omitted = set(many) - set(included)
    assert max(many[i][1] for i in omitted) <= min(importances)
    assert any(many[i][0].startswith("记忆") for i in included)

    envelope = run("--json", "context").json()["data"]
    assert envelope["text"] == out and envelope["included"] == included
    assert envelope["omitted"] == 300 - len(included)


def test_h1_json_format_is_valid_json_within_budget(run, many):
    for args in ((), ("--budget", "3001"), ("--budget", "1234")):
        result = run("context", "--format", "json", *args)
        assert result.code == 0, result
        budget = int(args[1]) if args else 8000
        assert len(result.out) <= budget, (args, len(result.out))
        data = json.loads(result.out)
        chosen = data["memories"]
        assert chosen and len(chosen) + data["omitted"] == 300
        assert [m["importance"] for m in chosen] == sorted((m["importance"] for m in chosen), reverse=True)
        assert all(m["text"] == many[m["id"]][0] for m in chosen)
        assert "memcli recall" in data["search"]


def test_h1_json_render_never_exceeds_the_budget():
    """The pure renderer, over a sweep of budgets (a subprocess per budget would be slow)."""
    from memcli.agents.context_block import render
    from memcli.model import Memory

    memories = [Memory(id=f"m{i:04d}", scope="project", body=_text(i)) for i in range(300)]
    for budget in range(250, 4000, 7):
        for fmt in ("json", "text", "markdown"):
            block = render(memories, budget, fmt)
            assert len(block.text) <= budget, (fmt, budget, len(block.text))
        json.loads(render(memories, budget, "json").text)


# --- H2 ------------------------------------------------------------------------------

BAD_FILES = {
    "bad-yaml.md": b"---\ntags: [#a, #b]\n---\nInvalid YAML flow list.\n",
    "bad-list.md": b"---\n- a\n- b\n---\nFront-matter is a list.\n",
    "bad-tab.md": b"---\ntags:\n\t- a\n---\nTab-indented list.\n",
    "bad-bytes.md": b"---\nscope: project\n---\n\xff\xfe\x80 not UTF-8\n",
    "bad-id.md": b"---\nid: ../../x\n---\nUnsafe id.\n",
    "bad-date.md": b"---\nexpireAt: tomorrow\n---\nNot a date.\n",
    "bad-dup.md": b"---\nimportance: 3\nimportance: 4\n---\nDuplicate key.\n",
}


def test_h2_empty_workspace(ws, run):
    for args in ((), ("--query", "anything"), ("--format", "markdown")):
        result = run("context", *args)
        assert result.code == 0, result
        assert result.out == "", result
        assert "error" not in result.err
    as_json = run("context", "--format", "json")
    assert as_json.code == 0 and json.loads(as_json.out)["memories"] == []


def test_h2_malformed_files_beside_good_ones(ws, run):
    good = [run("--json", "remember", text).json()["data"]["id"]
            for text in ("The API gateway is Envoy.", "Releases are cut on Thursdays.")]
    folder = ws / "memories" / "project"
    for name, data in BAD_FILES.items():
        (folder / name).write_bytes(data)
    result = run("context")
    assert result.code == 0, result
    lines = assert_clean_block(result.out)
    assert all(memory_id in result.out for memory_id in good)
    assert len([line for line in lines if line.startswith("- [")]) == 2
    named = [name for name in BAD_FILES if name in result.err]
    assert all(result.err.count(name) == 1 for name in named), result.err  # each named once at most
    more = re.search(r"(\d+) more unreadable", result.err)
    assert len(named) + (int(more[1]) if more else 0) == len(BAD_FILES), result.err  # and none forgotten
    assert all(line.startswith("memcli: warning:") for line in result.err.splitlines()), result.err
    assert run("--json", "context").json()["data"]["text"] == result.out
    for args in (("--format", "json"), ("--format", "markdown"), ("--query", "Envoy")):
        other = run("context", *args)
        assert other.code == 0 and "Envoy" in other.out and "memcli:" not in other.out, other
    assert json.loads(run("context", "--format", "json").out)["memories"]


def test_h2_missing_workspace(tmp_path, run):
    nowhere = tmp_path / "nowhere"
    for args in ((), ("--format", "json"), ("--query", "x")):
        result = run("context", *args, env={"MEMCLI_WORKSPACE": str(nowhere)})
        assert result.code == 0, result
        assert result.out == ""
        assert "warning" in result.err and "memcli init" in result.err
        assert "internal error" not in result.err
    assert not nowhere.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    outside = run("context", cwd=empty)  # no $MEMCLI_WORKSPACE, no memcli.toml above
    assert outside.code == 0 and outside.out == "" and "warning" in outside.err, outside
    assert run("list", env={"MEMCLI_WORKSPACE": str(nowhere)}).code == 3


def test_h2_current_folder_deleted(tmp_path):
    """An agent whose working folder was removed: context still exits 0, quietly."""
    gone = tmp_path / "gone"
    script = f'mkdir "{gone}" && cd "{gone}" && rmdir "{gone}" && exec "$@"'
    env = {k: v for k, v in os.environ.items() if k != "MEMCLI_WORKSPACE"}

    def run_there(*args):
        return subprocess.run(["bash", "-c", script, "bash", *MEMCLI, *args], capture_output=True, text=True,
                              env=env, timeout=60)

    result = run_there("context")
    assert result.returncode == 0, result
    assert result.stdout == "" and "warning" in result.stderr, result
    assert "internal error" not in result.stderr, result
    listed = run_there("list")
    assert listed.returncode == 3, listed  # no workspace, not a crash


def test_h2_unreadable_config(ws, run):
    """A memcli.toml that does not load: the block still comes (by the last committed version
    that loads), its first line saying what is wrong and how to mend it (hnc3 fault 2)."""
    memory_id = run("--json", "remember", "The on-call rota lives in the wiki.").json()["data"]["id"]
    (ws / "memcli.toml").write_text("[[[ not toml\n", encoding="utf-8")
    result = run("context")
    assert result.code == 0 and memory_id in result.out, result
    notes = [line for line in result.out.splitlines() if "memcli.toml" in line]
    assert len(notes) == 1 and "cannot read configuration" in notes[0] and "-- memcli.toml" in notes[0], result
    assert "warning" in result.err and "memcli.toml" in result.err


def test_h2_locks_do_not_break_context(ws, run):
    from filelock import FileLock

    memory_id = run("--json", "remember", "The on-call rota lives in the wiki.").json()["data"]["id"]
    (ws / ".git" / "index.lock").write_bytes(b"")
    lock = FileLock(str(ws / ".cache" / "write.lock"))
    with lock:
        result = run("context")
    assert result.code == 0, result
    assert_clean_block(result.out)
    assert memory_id in result.out and result.err == ""


def test_h2_corrupt_index(ws, run):
    memory_id = run("--json", "remember", "The search index is only a cache.").json()["data"]["id"]
    assert run("context").code == 0
    cache = ws / ".cache"
    for path in cache.glob("index*"):
        path.unlink()
    (cache / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    result = run("context")
    assert result.code == 0, result
    assert_clean_block(result.out)
    assert memory_id in result.out
    again = run("context")
    assert again.code == 0 and again.out == result.out


def test_h2_console_script_keeps_stdout_clean(ws, run):
    """The console script (not only ``python -m``) keeps stdout clean as well."""
    run("--json", "remember", "Staging deploys need a ticket.")
    script = Path(sys.executable).with_name("memcli")
    result = subprocess.run([str(script), "context"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result
    assert_clean_block(result.stdout)
