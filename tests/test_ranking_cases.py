"""The three ranking cases of issue 18, each as a user met it.

1. ``recall "postgres port"`` among 40 memories puts the exact match first, also when a
   personal store is read beside the project (the merge of stores sorted by score alone put
   a typo hit, "posting", above the exact one, and the README's supersede recipe took it).
2. Before a Read of a file, the memory written for exactly that file comes first, however
   many memories about its folder or the whole tree there are, whatever their importance.
3. At a repository's root, general memories survive a small budget: path-scoped memories
   come forward only for the files in play (uncommitted changes), not for every file.

Real workspaces, the real CLI in subprocesses (the hooks' process boundary is the point).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import git

STAMP = "2026-11-01T09:00:00Z"
PORT = "The local Postgres in docker compose listens on port 5433, not the default 5432."
GLOSSARY = "Glossary: a posting is one line of an entry in the ledger; the postings of one entry sum to zero."
#: 39 more memories of a ledger project, one about Postgres (not its port).
FILLER = [
    "Run the tests with make test; they need Docker running.",
    "Use httpx, not requests, for outgoing HTTP calls.",
    "No new runtime dependencies without a decision record in docs/adr/.",
    "The web app is built with pnpm; never commit package-lock.json.",
    "Migrations are written with alembic; run make migrate after pulling.",
    "Staging deploys go out from the main branch every weekday at 10:00 UTC.",
    "The importer reads CSV exports from the bank with a semicolon separator.",
    "Amounts are stored as integer cents, never as floats.",
    "Currency codes follow ISO 4217 and are upper case.",
    "The on-call rota lives in the team calendar; swap shifts in the ops channel.",
    "Feature flags are read from config/flags.yaml at start-up.",
    "Lint Python with ruff and format with ruff format.",
    "Type-check the API with mypy in strict mode.",
    "The React app uses TanStack Query for server state.",
    "Do not log account numbers; mask all but the last four digits.",
    "Release notes are written in CHANGELOG.md under Unreleased.",
    "The exchange rate service caches rates for ten minutes.",
    "Background jobs run on RQ with a Redis queue named ledger-jobs.",
    "Timestamps are stored in UTC and shown in the user's time zone.",
    "Reconciliation runs nightly at 02:00 and emails a summary.",
    "API errors follow RFC 7807 problem details.",
    "Pagination uses opaque cursors, not page numbers.",
    "The admin pages are behind the staff role.",
    "Secrets come from the environment; never commit a .env file.",
    "Docker images are tagged with the git commit hash.",
    "E2E tests run with Playwright against a seeded database.",
    "Accounts are never deleted, only closed.",
    "Journal entries must balance before they are saved.",
    "Use the Decimal type for rate calculations.",
    "The API listens behind nginx, which terminates TLS.",
    "Storybook documents the shared UI components.",
    "CSV exports use UTF-8 with a byte order mark for Excel.",
    "A pull request needs one approval and green CI.",
    "Branch names start with the ticket number.",
    "The design tokens live in web/src/theme.ts.",
    "Rate limits are 100 requests a minute per API key.",
    "Webhooks are signed with HMAC-SHA256.",
    "The data retention period for audit logs is seven years.",
    "Prod Postgres runs on RDS with automated snapshots.",
]


def write(ws: Path, key: str, text: str, importance: int = 3, paths: list[str] | None = None,
          updated: str = STAMP) -> str:
    """A hand-written active project memory (id = ``key``); faster than ``remember`` and its commit."""
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    extra = "paths:\n" + "".join(f"  - {json.dumps(p)}\n" for p in paths) if paths else ""
    (folder / f"{key}.md").write_text(
        f"---\nid: {key}\nscope: project\ncategory: fact\nstatus: active\nimportance: {importance}\n{extra}"
        f"createdAt: {STAMP}\nupdatedAt: {updated}\n---\n{text}\n", encoding="utf-8")
    return key


@pytest.mark.parametrize("personal", [False, True], ids=["project-only", "with-personal-store"])
def test_postgres_port_among_40_memories_puts_the_exact_match_first(ws, run, personal):
    write(ws, "port", PORT)
    write(ws, "glossary", GLOSSARY, importance=5)  # more important and a typo away: still below
    for i, text in enumerate(FILLER):
        write(ws, f"f{i:02d}", text)
    if personal:  # a personal memory: the read merges the person's store with the project's
        assert run("remember", "I like short answers.", "--scope", "user:alice").code == 0
    hits = run("--json", "recall", "postgres port").json()["data"]["hits"]
    assert hits[0]["id"] == "port" and hits[0]["match"] == "exact", hits[:3]
    matches = [h["match"] for h in hits]
    assert matches == sorted(matches, key=("exact", "fuzzy", "partial", "substring", "semantic").index)
    # "posting" is no typo of "postgres" (a shorter word it starts with): the memory that
    # holds "Postgres" comes next, and the glossary not at all
    assert "glossary" not in [h["id"] for h in hits] and hits[1]["text"].startswith("Prod Postgres"), hits[:3]
    # the README's supersede recipe takes hits[0]: it replaces the port memory, not the glossary
    done = run("--json", "supersede", hits[0]["id"], "The local Postgres listens on port 6432 (pgbouncer).")
    assert done.code == 0, done
    assert run("--json", "show", "glossary").json()["data"]["status"] == "active"


@pytest.fixture
def rooted(project: Path, run) -> Path:
    """A code repository with api/ledger/importer.py and web/src/app.ts committed, and a
    workspace at its root (``init --in-tree .``)."""
    for name in ("api/ledger/importer.py", "api/app.py", "web/src/app.ts", "web/src/theme.ts"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("# code\n", encoding="utf-8")
        git(project, "add", name)
    git(project, "commit", "-qm", "code")
    assert run("init", "--in-tree", ".", cwd=project).code == 0
    return project


def _hook(run, project: Path, event: str, payload: dict) -> str:
    result = run("hook", "claude", event, input=json.dumps({"session_id": "s", "cwd": str(project), **payload}),
                 cwd=project, env={"MEMCLI_WORKSPACE": str(project)})
    assert result.code == 0 and "Traceback" not in result.err, result
    return json.loads(result.out)["hookSpecificOutput"]["additionalContext"] if result.out.strip() else ""


def _ids(block: str) -> list[str]:
    return re.findall(r"\(id ([a-z0-9_-]+)\)$", block, flags=re.M)


@pytest.mark.parametrize("broader", [3, 8])
def test_the_memory_for_exactly_that_file_comes_first_before_a_read(rooted, run, broader):
    exact = write(rooted, "importer", "The importer must skip the bank's trailer line.", importance=1,
                  paths=["api/ledger/importer.py"], updated="2025-01-01T00:00:00Z")  # old and unimportant
    write(rooted, "ledger", "Everything in api/ledger is covered by property tests.", importance=2,
          paths=["api/ledger/**"])
    for i in range(broader):
        write(rooted, f"api{i}", f"API rule {i}: handlers return problem details.", importance=5, paths=["api/**"])
        write(rooted, f"py{i}", f"Python rule {i}: type hints everywhere.", importance=5, paths=["**/*.py"])
    read = {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "t1",
            "tool_input": {"file_path": str(rooted / "api/ledger/importer.py")}}
    given = _ids(_hook(run, rooted, "pre-tool-use", read))
    assert given[:2] == [exact, "ledger"], given
    assert len(given) == 3  # TOOL_LIMIT; the others are counted in the footer


def test_general_memories_survive_a_small_budget_at_the_root(rooted, run):
    general = write(rooted, "tests", "Run the tests with make test; they need Docker running.",
                    updated="2026-11-02T00:00:00Z")  # a day newer than the path memories, as important
    for i in range(6):
        write(rooted, f"web{i}", f"Web rule {i}: components are function components with hooks.", paths=["web/**"])
        write(rooted, f"api{i}", f"API rule {i}: handlers return problem details.", paths=["api/**"])
    block = run("--json", "context", "--budget", "500", cwd=rooted).json()["data"]
    assert general in block["included"], block
    start = _hook(run, rooted, "session-start", {"hook_event_name": "SessionStart", "source": "startup"})
    assert general in _ids(start)
    (rooted / "web/src/app.ts").write_text("// edited\n", encoding="utf-8")  # now web/** is in play
    edited = run("--json", "context", "--budget", "500", cwd=rooted).json()["data"]["included"]
    assert edited[0].startswith("web"), edited


@pytest.mark.parametrize(("globs", "path", "matches"), [
    ([".github/**"], ".github/workflows/e2e.yml", True),  # lstrip("./") once ate the dot
    ([".github/workflows/e2e.yml"], "./.github/workflows/e2e.yml", True),
    ([".github/**"], "github/workflows/e2e.yml", False),
    (["web/**"], "./web/src/app.ts", True),
    (["web/**"], "/web/src/app.ts", True),
    ([".env"], ".env", True),
])
def test_paths_match_keeps_a_leading_dot(globs, path, matches):
    from memcli.index import paths_match

    assert paths_match(globs, path) is matches


@pytest.mark.parametrize(("glob", "narrower"), [
    ("api/ledger/importer.py", "api/ledger/*.py"), ("api/ledger/*.py", "api/**"), ("web/src/*.ts", "web/src/*"),
    ("api/**", "**/*.py"), (".github/workflows/e2e.yml", ".github/**"),
])
def test_glob_specificity_orders_the_narrower_glob_first(glob, narrower):
    from memcli.index import glob_specificity

    assert glob_specificity(glob) > glob_specificity(narrower)


@pytest.mark.parametrize("personal", [False, True], ids=["project-only", "with-personal-store"])
def test_recall_of_a_file_path_finds_the_memories_about_that_file_narrowest_first(ws, run, personal):
    """With a personal store too, hits are merged by tier and score: the broader, more important
    memory came first there and the answer was 'weak' (a newcomer, stop 35)."""
    exact = write(ws, "importer", "Skip the bank's trailer line.", importance=1, paths=["api/ledger/importer.py"])
    write(ws, "ledger", "Everything here has property tests.", importance=5, paths=["api/ledger/**"])
    write(ws, "api", "Handlers return problem details.", importance=5, paths=["api/**"])
    write(ws, "web", "Use pnpm.", paths=["web/**"])
    if personal:
        assert run("remember", "I like short answers.", "--scope", "user:alice").code == 0
    result = run("--json", "recall", "api/ledger/importer.py").json()["data"]
    assert [h["id"] for h in result["hits"]] == [exact, "ledger", "api"] and result["answer"] == "strong", result
    broad = run("--json", "recall", "api/other.py").json()["data"]
    assert [h["id"] for h in broad["hits"]] == ["api"] and broad["answer"] == "weak", broad


def test_a_stop_word_query_and_a_meaning_only_first_hit_are_weak_and_say_why(ws, run):
    """A newcomer (stop 35): `recall "the"` answered 'strong' (stop words are matched as typed,
    which answers no question), and a first hit found by meaning alone was told "the hits below
    hold only some of them" (they hold none)."""
    from memcli.index import Hit
    from memcli.service import Ctx
    from memcli.service.read import MEANING_NOTE, STOP_NOTE, recall_data

    write(ws, "port", PORT)
    write(ws, "tests", "Run the tests with make test.")
    stop = run("--json", "recall", "the").json()["data"]
    assert stop["hits"] and stop["answer"] == "weak" and stop["note"] == STOP_NOTE, stop
    ctx = Ctx.open(str(ws), "alice")
    memory = ctx.catalog().by_prefix("port")[0]
    data = recall_data(ctx, "which database listens where", "ranked", [Hit(memory, 0.3, "semantic", {"cosine": 0.3})])
    assert data["answer"] == "weak" and data["note"] == MEANING_NOTE


def test_recall_says_when_nothing_answers(ws, run):
    write(ws, "port", PORT)
    write(ws, "staging", "The staging database is wiped and reseeded every Sunday night.")
    for i, text in enumerate(FILLER[:10]):
        write(ws, f"f{i:02d}", text)
    weak = run("--json", "recall", "what port does staging db use").json()["data"]
    assert weak["hits"] and weak["answer"] == "weak" and "only some" in weak["note"], weak
    assert weak["retriever"] == "lexical"
    strong = run("--json", "recall", "postgres port").json()["data"]
    assert strong["answer"] == "strong" and strong["note"] is None
    none = run("--json", "recall", "kubernetes ingress").json()["data"]
    assert none == {**none, "hits": [], "answer": "none", "note": "no memories match the query"}
    human = run("recall", "what port does staging db use")
    assert human.code == 0 and "memcli: note: no memory matches every word" in human.err and "5433" in human.out
    explained = run("recall", "--explain", "postgres port")
    assert "retriever: lexical; answer: strong" in explained.err


ZH = {"backup": "数据库备份每天凌晨两点执行，保留三十天。", "pool": "数据库连接池大小为二十。",
      "password": "数据库密码放在保险库里，不要写进代码。", "migrate": "数据库迁移用 alembic，先在预发环境跑。",
      "replica": "生产数据库只读副本用于报表。", "grafana": "数据库监控面板在 Grafana。",
      "slow": "慢查询排查：先看 pg_stat_statements，再用 EXPLAIN ANALYZE 看执行计划，必要时加索引。",
      "pitr": "生产库按时间点恢复：在 RDS 控制台选择恢复到时间点，恢复成新实例。",
      "version": "数据库版本是 PostgreSQL 15。"}


@pytest.mark.parametrize(("query", "first"),
                         [("数据库查询很慢怎么办", "slow"), ("数据库恢复", "pitr"), ("查询很慢", "slow")])
def test_a_chinese_query_is_won_by_its_rare_words_not_by_the_word_every_memory_holds(ws, run, query, first):
    for key, text in ZH.items():
        write(ws, key, text)
    hits = run("--json", "recall", query).json()["data"]["hits"]
    assert hits[0]["id"] == first, hits[:3]
    assert len(hits) == 1 or hits[0]["score"] > 2 * hits[1]["score"], hits[:3]


def test_bytes_that_are_not_utf8_in_a_query_or_a_hook_input_are_no_internal_error(ws, run):
    import os
    import subprocess
    import sys

    write(ws, "port", PORT)
    for args in ([b"recall", b"stag\xff\xfeing port"], [b"context", b"--query", b"staging \xff"]):
        done = subprocess.run([os.fsencode(sys.executable), b"-m", b"memcli", *args], capture_output=True)
        assert done.returncode == 0 and b"internal error" not in done.stderr, done
    start = {"session_id": "\udcff", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(ws)}
    read = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read", "cwd": str(ws),
            "tool_input": {"file_path": str(ws / "a\udcff.py")}}
    for event, payload in (("session-start", start), ("pre-tool-use", read)):
        result = run("hook", "claude", event, input=json.dumps(payload))  # json.dumps writes \\udcff
        assert result.code == 0 and "failed" not in result.err, result
    assert "5433" in run("hook", "claude", "session-start", input=json.dumps(start)).out


def test_a_query_past_2000_characters_is_one_clear_line(ws, run):
    write(ws, "port", PORT)
    result = run("recall", "staging port " * 9000)
    assert result.code == 2 and result.err.startswith("memcli: error: the query is 117,000 characters long"), result
    assert result.out == "" and "Traceback" not in result.err
    assert run("recall", "postgres port " * 100).code == 0  # 1,400 characters: searched
