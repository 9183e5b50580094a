"""Issue 9, points 5 and 7: session summaries come back to their owner only; memory tied
to the code being touched (root-workspace ``paths`` relevance, the PreToolUse hook).

Real parts only: the real CLI in a subprocess, real git repositories, a real-shaped
Claude Code transcript (INTEGRATIONS.md).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import git

if TYPE_CHECKING:
    from memcli.model import Memory

SID = "9c0d1e2f-0000-4000-8000-000000000001"
SCOPE = f"session:{SID}"
BOB = {"MEMCLI_ACTOR": "bob"}


def _transcript(path: Path, cwd: Path) -> Path:
    """A Claude Code session: user and assistant turns, a tool call and its result, a meta line."""
    base = {"isSidechain": False, "cwd": str(cwd), "sessionId": SID, "version": "2.1.197"}
    records = [
        {"type": "summary", "summary": "Speed up CSV import", "leafUuid": "a1"},
        {**base, "parentUuid": None, "type": "user", "uuid": "u1", "timestamp": "2026-12-01T08:00:00.000Z",
         "message": {"role": "user", "content": "The CSV import is slow. We decided to batch the inserts "
                                                "with executemany in the ledger importer."}},
        {**base, "parentUuid": "u1", "type": "assistant", "uuid": "a1", "timestamp": "2026-12-01T08:00:04.000Z",
         "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [
             {"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"command": "make bench"}}]}},
        {**base, "parentUuid": "a1", "type": "user", "uuid": "u2", "timestamp": "2026-12-01T08:00:50.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "tu_1", "content": "import: 41.2 s"}]}},
        {**base, "parentUuid": "u2", "type": "assistant", "uuid": "a2", "timestamp": "2026-12-01T08:01:00.000Z",
         "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [
             {"type": "text", "text": "The root cause was one INSERT per row; it works now at 3.1 s."}]}},
        {**base, "parentUuid": "a2", "type": "user", "uuid": "u3", "isMeta": True,
         "timestamp": "2026-12-01T08:03:00.000Z",
         "message": {"role": "user", "content": "<local-command-caveat>made by the client</local-command-caveat>"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _hook(run, event: str, payload: dict, agent: str = "claude", env: dict | None = None):
    result = run("hook", agent, event, input=json.dumps(payload), env=env)
    assert result.code == 0, result
    return result


def _additional(result, event_name: str) -> str:
    if not result.out:
        return ""
    body = json.loads(result.out)
    assert list(body) == ["hookSpecificOutput"]
    assert body["hookSpecificOutput"]["hookEventName"] == event_name
    assert "permissionDecision" not in body["hookSpecificOutput"]  # never blocks nor allows a tool
    return body["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def summarised(ws: Path, run, tmp_path: Path) -> dict:
    """alice's workspace with ``[hooks] summarize = true``, after the pre-compact hook of her session."""
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("summarize = false", "summarize = true"),
                      encoding="utf-8")
    git(ws, "commit", "-qam", "summarize sessions")
    run("remember", "Use ruff for linting.")
    transcript = _transcript(tmp_path / f"{SID}.jsonl", ws)
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(ws),
               "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
    pre = _hook(run, "pre-compact", payload)
    assert pre.out == "" and f"summarised session {SID}" in pre.err, pre
    listed = run("--json", "list", "--scope", SCOPE).json()["data"]["memories"]
    assert [m["category"] for m in listed] == ["summary"] and listed[0]["provenance"]["actor"] == "alice"
    return {"id": listed[0]["id"], "cwd": str(ws), "path": listed[0]["path"]}


def _start(source: str, cwd: str, session: str = SID) -> dict:
    return {"session_id": session, "transcript_path": "/nonexistent", "cwd": cwd,
            "hook_event_name": "SessionStart", "source": source}


@pytest.mark.parametrize("source", ["compact", "resume"])
@pytest.mark.slow
def test_session_start_after_compaction_brings_the_summary_back(summarised, run, source):
    context = _additional(_hook(run, "session-start", _start(source, summarised["cwd"])), "SessionStart")
    assert summarised["id"] in context and "executemany" in context and "Use ruff" in context
    assert context.index(summarised["id"]) < context.index("Use ruff")  # the summary comes first
    assert "tool_result" not in context and "local-command-caveat" not in context


def test_a_plain_start_or_another_session_gets_no_summary(summarised, run):
    for payload in (_start("startup", summarised["cwd"]), _start("compact", summarised["cwd"], "another-session")):
        context = _additional(_hook(run, "session-start", payload), "SessionStart")
        assert "Use ruff" in context and summarised["id"] not in context


def test_a_long_summary_is_cut_to_fit_the_budget(summarised, run, ws):
    path = ws / summarised["path"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "".join(f"\n- filler line {i} " + "x" * 80 for i in range(200)), encoding="utf-8")
    context = _additional(_hook(run, "session-start", _start("compact", summarised["cwd"])), "SessionStart")
    assert len(context) <= 8_000 and summarised["id"] in context
    assert f"whole text: memcli show {summarised['id']}" in context and "Use ruff" in context


@pytest.mark.parametrize("budget", [600, 1000])
@pytest.mark.slow
def test_at_a_small_budget_the_summary_still_comes_back_cut(summarised, run, ws, budget):
    # the lead was cut to 60% of the budget without the fence, header and footer's room, so
    # at a small [context] budget it no longer fitted and was dropped whole
    path = ws / summarised["path"]
    path.write_text(path.read_text(encoding="utf-8") + "".join(f"\n- filler line {i} " + "x" * 80
                                                               for i in range(20)), encoding="utf-8")
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("budget = 8000", f"budget = {budget}"),
                      encoding="utf-8")
    context = _additional(_hook(run, "session-start", _start("compact", summarised["cwd"])), "SessionStart")
    assert len(context) <= budget and summarised["id"] in context, context


def test_a_lead_of_any_length_fits_any_budget():
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    from memcli.agents.context_block import render
    from memcli.model import from_dict
    from memcli.service.context import MIN_BUDGET, _leading

    @settings(max_examples=150, deadline=None)
    @given(st.integers(MIN_BUDGET, 3000), st.text(min_size=1, max_size=4000).filter(str.strip),
           st.sampled_from(["text", "markdown"]))
    def check(budget: int, body: str, fmt: str) -> None:
        def summary(text: str) -> Memory:
            return from_dict({"id": "01JSUMMARY0000000000000000", "text": text, "scope": "session:s", "category":
                              "summary", "status": "active", "importance": 3,
                              "provenance": {"sourceType": "tool_output", "actor": "alice"}})
        lead = summary(body)
        # (below about 500 characters the fence, header and footer leave room for no memory at all)
        assume(render([summary("x" * 60)], budget, fmt, 2).included)
        assert render([_leading(lead, budget, fmt)], budget, fmt, 2).included == [lead.id]
    check()


def test_recall_finds_ones_own_summaries_only_with_sessions(summarised, run):
    assert run("--json", "recall", "executemany").json()["data"]["hits"] == []
    hits = run("--json", "recall", "executemany", "--sessions").json()["data"]["hits"]
    assert [h["id"] for h in hits] == [summarised["id"]]
    typer_path = run("--json", "recall", "executemany", "--sessions", env={"MEMCLI_NO_FAST": "1"})
    assert [h["id"] for h in typer_path.json()["data"]["hits"]] == [summarised["id"]]
    listed = run("--json", "list", "--sessions").json()["data"]["memories"]
    assert summarised["id"] in [m["id"] for m in listed]


def test_another_actor_sees_the_session_nowhere(shared_tree_ws, summarised, run, ws):
    """bob, in the same workspace, on every read path: show, log, history, stats, diff,
    recall, context (the hook's and the command's), export."""
    memory_id = summarised["id"]
    unknown = run("show", "01m8zzzzzzzzzzzzzzzzzzzzzz", env=BOB)
    shown = run("show", memory_id, env=BOB)
    assert (shown.code, shown.out) == (unknown.code, "") == (4, "")
    assert shown.err.replace(memory_id, "ID") == unknown.err.replace("01m8zzzzzzzzzzzzzzzzzzzzzz", "ID")
    at = run("show", memory_id, "--at", "HEAD", env=BOB)
    assert at.code == 4 and memory_id not in at.out
    log = run("--json", "log", env=BOB)
    assert log.code == 0 and memory_id not in log.out and SCOPE not in log.out and "executemany" not in log.out
    assert run("log", memory_id, env=BOB).code == 4
    assert run("history", memory_id, env=BOB).code == 4
    stats = run("--json", "stats", env=BOB).json()["data"]
    assert SCOPE not in stats["byScope"] and "summary" not in stats["byCategory"] and stats["memories"] == 1
    diff = run("--json", "diff", "HEAD~1..HEAD", env=BOB)
    assert diff.code == 0 and diff.json()["data"]["changes"] == [] and memory_id not in diff.out
    for args in (("recall", "executemany", "--sessions"), ("recall", "executemany", "--scope", SCOPE),
                 ("recall", "executemany", "--grep", "--sessions"), ("list", "--sessions", "--status",
                                                                     "active,archived,superseded")):
        found = run("--json", *args, env=BOB)
        assert found.code == 0 and memory_id not in found.out, (args, found)
    context = run("--json", "context", "--query", "executemany", env=BOB)
    assert context.code == 0 and memory_id not in context.out
    start = _hook(run, "session-start", _start("compact", summarised["cwd"]), env=BOB)
    assert memory_id not in start.out and "executemany" not in start.out
    exported = run("export", "--format", "jsonl", "--all", "--scope", SCOPE, env=BOB)
    assert exported.code == 0 and memory_id not in exported.out
    # ...while alice sees it on each of those paths.
    assert memory_id in run("show", memory_id).out and memory_id in run("--json", "log").out
    assert run("history", memory_id).code == 0 and SCOPE in run("--json", "stats").json()["data"]["byScope"]
    assert memory_id in run("--json", "diff", "HEAD~1..HEAD").out
    assert memory_id in run("export", "--format", "jsonl", "--scope", SCOPE).out


def test_another_actor_cannot_write_undo_or_compact_the_session(shared_tree_ws, summarised, run, ws, tmp_path):
    memory_id = summarised["id"]
    before = git(ws, "rev-parse", "HEAD")
    wrote = run("remember", "Bob was here.", "--scope", SCOPE, env=BOB)
    assert wrote.code == 5 and wrote.err.count("\n") == 1 and "another person's session" in wrote.err
    assert "executemany" not in wrote.err and memory_id not in wrote.err
    transcript = tmp_path / f"{SID}.jsonl"
    again = run("compact", "--transcript", str(transcript), env=BOB)  # the same bytes: no "already summarised: ID"
    assert again.code == 5 and memory_id not in again.out + again.err and "another person's session" in again.err
    record = json.loads(run("export", "--format", "jsonl", "--scope", SCOPE).out.splitlines()[0])
    (tmp_path / "bob.jsonl").write_text(json.dumps({**record, "id": "01m8yyyyyyyyyyyyyyyyyyyyyy"}) + "\n",
                                        encoding="utf-8")
    imported = run("import", str(tmp_path / "bob.jsonl"), env=BOB)
    assert imported.out.startswith("refused\t") and "another person's session" in imported.out + imported.err
    assert memory_id not in imported.out + imported.err, imported
    assert run("forget", memory_id, env=BOB).code == 4
    assert run("compact", "--apply", "--scope", SCOPE, env=BOB).code == 0
    assert git(ws, "rev-parse", "HEAD") == before
    undone = run("undo", env=BOB)  # passes over alice's summary commit, to the project memory before it
    assert undone.code == 0 and memory_id not in undone.out + undone.err
    assert git(ws, "log", "-1", "--format=%(trailers:key=Memcli-Undoes,valueonly)").strip() == \
        git(ws, "rev-parse", "HEAD~2").strip()
    assert run("--json", "show", memory_id).json()["data"]["status"] == "active"


def test_a_session_file_without_an_owner_is_shown_to_nobody_else(ws, run):
    folder = ws / "memories" / "session" / "handmade"
    folder.mkdir(parents=True)
    (folder / "handnote.md").write_text("A note nobody owns.\n", encoding="utf-8")
    assert run("show", "handnote", env=BOB).code == 4
    assert run("--json", "list", "--sessions").json()["data"]["memories"] == []


# --- point 7: memory tied to the code being touched ---------------------------------------


@pytest.fixture
def rooted(project: Path, run) -> dict:
    """``memcli init`` at the root of a project whose ``web/`` files are tracked."""
    (project / "web" / "src").mkdir(parents=True)
    (project / "web" / "src" / "app.ts").write_text("export {}\n", encoding="utf-8")
    git(project, "add", "web/src/app.ts")
    git(project, "commit", "-qm", "web app")
    assert run("init", cwd=project).code == 0
    env = {"MEMCLI_WORKSPACE": str(project)}
    for i in range(5):
        assert run("remember", f"Important general rule {i}.", "--importance", "4", cwd=project, env=env).code == 0
    about = run("--json", "remember", "The web app uses strict TypeScript.", "--importance", "1",
                "--path", "web/**", cwd=project, env=env).json()["data"]["id"]
    api = run("--json", "remember", "The API uses Go modules.", "--importance", "1", "--path", "api/**",
              cwd=project, env=env).json()["data"]["id"]
    return {"project": project, "about": about, "api": api}


def _edit(project: Path, session: str, name: str = "web/src/app.ts", tool: str = "Edit") -> dict:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return {"session_id": session, "transcript_path": "/nonexistent", "cwd": str(project),
            "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": tool,
            "tool_use_id": "toolu_1", "tool_input": {key: str(project / name), "old_string": "a", "new_string": "b"}}


def test_context_at_a_repository_root_keeps_general_memories_above_path_ones(rooted, run):
    """At the root every file is under the folder: path-scoped memories come forward only for
    the files in play (uncommitted changes), never for all of them (issue 18)."""
    project = rooted["project"]
    included = run("--json", "context", cwd=project).json()["data"]["included"]
    assert included.index(rooted["about"]) >= 5 and included.index(rooted["api"]) >= 5  # the five general rules first
    start = _hook(run, "session-start", _start("startup", str(project), "s-root"))
    context = _additional(start, "SessionStart")
    assert context.index("Important general rule") < context.index(rooted["about"])
    small = run("--json", "context", "--budget", "700", cwd=project).json()["data"]["included"]
    assert rooted["about"] not in small and rooted["api"] not in small and small


def test_context_at_a_root_workspace_puts_memories_about_changed_files_first(rooted, run):
    project = rooted["project"]
    (project / "web" / "src" / "app.ts").write_text("export const x = 1\n", encoding="utf-8")  # in play now
    included = run("--json", "context", cwd=project).json()["data"]["included"]
    assert included[0] == rooted["about"] and included.index(rooted["api"]) > included.index(rooted["about"])
    start = _hook(run, "session-start", _start("startup", str(project), "s-root"))
    context = _additional(start, "SessionStart")
    assert context.index(rooted["about"]) < context.index("Important general rule")
    below = run("--json", "context", cwd=project / "web").json()["data"]["included"]  # a subfolder: its files
    assert below[0] == rooted["about"]


@pytest.mark.slow
def test_pre_tool_use_adds_the_files_memories_once_per_session(rooted, run):
    project = rooted["project"]
    first = _additional(_hook(run, "pre-tool-use", _edit(project, "edit-1")), "PreToolUse")
    assert rooted["about"] in first and "strict TypeScript" in first and first.startswith("<memcli-context>")
    assert rooted["api"] not in first and "Important general rule" not in first
    assert len(first) <= 1_500
    again = _hook(run, "pre-tool-use", _edit(project, "edit-1"))
    assert again.out == "" and again.err == ""
    read = _hook(run, "pre-tool-use", _edit(project, "edit-1", tool="Read"))
    assert read.out == ""
    other = _additional(_hook(run, "pre-tool-use", _edit(project, "edit-2", tool="Write")), "PreToolUse")
    assert rooted["about"] in other


@pytest.mark.slow
def test_pre_tool_use_adds_nothing_for_other_tools_files_or_memories_given_at_start(rooted, run, tmp_path):
    project = rooted["project"]
    bash = {**_edit(project, "e3"), "tool_name": "Bash", "tool_input": {"command": "cat web/src/app.ts"}}
    assert _hook(run, "pre-tool-use", bash).out == ""
    for name in ("README.md", "memories/project/x.md", "../elsewhere/web/src/app.ts"):
        assert _hook(run, "pre-tool-use", _edit(project, "e3", name)).out == "", name
    _hook(run, "session-start", _start("startup", str(project), "e4"))  # the block already holds it
    assert _hook(run, "pre-tool-use", _edit(project, "e4")).out == ""
    relative = {**_edit(project, "e5"), "tool_input": {"file_path": "web/new/page.ts", "content": "x"}}
    assert rooted["about"] in _additional(_hook(run, "pre-tool-use", relative), "PreToolUse")


@pytest.mark.parametrize("raw", ["", "not json", "[1]", json.dumps({"tool_name": "Edit", "tool_input": "x"}),
                                 json.dumps({"tool_name": "Edit", "tool_input": {"file_path": 7}})])
@pytest.mark.slow
def test_pre_tool_use_with_bad_input_exits_0_with_no_answer(rooted, run, raw):
    result = run("hook", "claude", "pre-tool-use", input=raw, cwd=rooted["project"])
    assert result.code == 0 and result.out == "" and "Traceback" not in result.err


def test_codex_apply_patch_gets_the_memories_as_json(rooted, run):
    project = rooted["project"]
    patch = "*** Begin Patch\n*** Update File: web/src/app.ts\n@@\n-export {}\n+export const a = 1\n*** End Patch\n"
    payload = {"session_id": "cx-1", "turn_id": "t1", "transcript_path": None, "cwd": str(project),
               "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default",
               "tool_name": "apply_patch", "tool_use_id": "call-1", "tool_input": {"command": patch}}
    result = _hook(run, "pre-tool-use", payload, agent="codex")
    assert rooted["about"] in _additional(result, "PreToolUse")
    assert _hook(run, "pre-tool-use", payload, agent="codex").out == ""


def test_hook_install_registers_pre_tool_use_with_its_matcher(project, run):
    assert run("hook", "install", "claude", cwd=project).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    groups = settings["hooks"]["PreToolUse"]
    # issue 24: Bash and WebFetch too, for guards and command memories
    assert [g["matcher"] for g in groups] == ["Bash|Read|Edit|MultiEdit|Write|NotebookEdit|WebFetch"]
    assert groups[0]["hooks"][0]["command"].endswith("hook claude pre-tool-use")


def test_a_workspace_in_a_subfolder_still_leaves_out_only_itself(project, run):
    """The other layout (``init mem`` in a project): memories about ``web/`` still come first."""
    (project / "web").mkdir()
    (project / "web" / "app.ts").write_text("export {}\n", encoding="utf-8")
    git(project, "add", "web/app.ts")
    assert run("init", str(project / "mem")).code == 0
    env = {"MEMCLI_WORKSPACE": str(project / "mem")}
    run("remember", "A general rule.", "--importance", "5", env=env)
    about = run("--json", "remember", "About the web files.", "--importance", "1", "--path", "web/**",
                env=env).json()["data"]["id"]
    mem_only = run("--json", "remember", "About memory files.", "--importance", "1", "--path", "mem/**",
                   env=env).json()["data"]["id"]
    included = run("--json", "context", cwd=project, env=env).json()["data"]["included"]
    assert included[0] == about and included[-1] == mem_only
    out = subprocess.run(["git", "-C", str(project), "ls-files", "mem"], capture_output=True, text=True).stdout
    assert out  # the workspace's files are tracked, and still not what memories are about


@pytest.mark.parametrize(("command", "wanted"), [
    ("terraform destroy -auto-approve", "Never run terraform destroy"),
    ("/usr/local/bin/terraform destroy", "Never run terraform destroy"),
    ("cd infra && docker compose down -v", "wipes the local database volume"),
    ("pytest -x tests/test_api.py", "calling pytest directly"),
    ("terraform plan", "Never run terraform destroy"),  # the program alone: a memory about terraform
    ("ls -la", None), ("git status", None), ("kubectl get pods", None),
])
def test_a_shell_command_a_memory_names_gets_that_memory_before_it_runs(rooted, run, command, wanted):
    """Newcomer fault 8 (stop 33): before ``terraform destroy``, ``docker compose down -v`` or
    ``kubectl apply`` the hook added nothing although memories named those very commands (only
    make targets and package scripts, a memory's anchor, counted). A memory whose text names the
    program with its first word argument, or an uncommon program alone, is given; a call that
    names nothing a memory says (``ls``, ``git status``, ``kubectl``) gets nothing."""
    project = rooted["project"]
    env = {"MEMCLI_WORKSPACE": str(project)}
    for text in ("Never run terraform destroy against prod; the state bucket is shared",
                 "`docker compose down -v` wipes the local database volume",
                 "Prefer make test over calling pytest directly"):
        assert run("remember", text, env=env).code == 0
    bash = {**_edit(project, f"cmd-{abs(hash(command))}"), "tool_name": "Bash", "tool_input": {"command": command}}
    given = _additional(_hook(run, "pre-tool-use", bash), "PreToolUse")
    if wanted is None:
        assert "terraform destroy" not in given and "docker compose" not in given and "pytest" not in given, given
    else:
        assert wanted in given, given
