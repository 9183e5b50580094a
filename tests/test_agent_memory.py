"""The agents' own memories, governed (issue 25): Claude Code's auto memory, Codex Memories and
Gemini CLI's memory imported with provenance through the write gates, harvested at session end,
shared, and exported back into the agents' own places.

Real files in the test's HOME (the stores the pinned CLIs wrote, tests/fixtures/agent_memory,
recorded through the scripted model by scripts/record-agent-memory.py; Codex's is built here from
its consolidation prompt's format until a recording lands), real git stores, and ``memcli`` in a
subprocess where the process boundary matters. Hypothesis feeds the parsers any text.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import personal_store
from memcli.agents import memstores
from memcli.agents.memstores import claude_store
from memcli.store.files import MemoryFiles

FIXTURES = Path(__file__).parent / "fixtures" / "agent_memory"
CLAUDE_STORE = FIXTURES / "claude" / ".claude" / "projects" / "-tmp-memcli-agent-memory-project" / "memory"
GITHUB_TOKEN = "ghp_" + "a1B2" * 9

CODEX_MEMORY = """\
# Task Group: billing service (this project)
scope: the billing API's tests and releases
applies_to: cwd={project}; reuse_rule=safe in this checkout

## Task 1: make the integration tests pass, done
### rollout_summary_files
- rollout_summaries/2026-12-03T10-00-00-abcd-tests.md (cwd={project}, thread_id=t1)
### keywords
- pytest, postgres, fixtures

## User preferences
- when running tests, the user asked: "never mock the database" -> use the docker postgres fixture [Task 1]

## Reusable knowledge
- the integration tests need `docker compose up db` first [Task 1]

## Failures and how to do differently
- a stale .pytest_cache made tests pass locally -> run with -p no:cacheprovider [Task 1]

# Task Group: another repository
scope: the website
applies_to: cwd=/srv/elsewhere/website; reuse_rule=checkout-specific

## Task 1: fix the header, done
### rollout_summary_files
- rollout_summaries/other.md (cwd=/srv/elsewhere/website)
### keywords
- css

## Reusable knowledge
- the website builds with hugo 0.120
"""

CODEX_SUMMARY = """\
v1
## User Profile
The user is a backend engineer on the billing team.

## User preferences
- never mock the database

## What's in Memory
- billing service: tests, releases
"""


def memories(ws: Path) -> list:
    """Every memory of the workspace and of the person's own store."""
    stores = [ws] + [p for p in (personal_store(ws),) if p.exists()]
    return [m for store in stores for m in MemoryFiles(store).scan().memories]


def claude_home(home: Path, project: Path) -> Path:
    """The recorded Claude Code store, placed where Claude Code keeps it for ``project``."""
    store = home / ".claude" / "projects" / claude_store.project_slug(project) / "memory"
    shutil.copytree(CLAUDE_STORE, store)
    return store


def codex_home(home: Path, project: Path) -> Path:
    store = home / ".codex" / "memories"
    (store / "rollout_summaries").mkdir(parents=True)
    (store / "MEMORY.md").write_text(CODEX_MEMORY.format(project=project), encoding="utf-8")
    (store / "memory_summary.md").write_text(CODEX_SUMMARY, encoding="utf-8")
    (store / "raw_memories.md").write_text("# raw\n- raw notes of a rollout\n", encoding="utf-8")
    (store / "rollout_summaries" / "2026-12-03T10-00-00-abcd-tests.md").write_text("recap\n", encoding="utf-8")
    return store


def gemini_home(home: Path, project: Path) -> Path:
    base = home / ".gemini"
    shutil.copytree(FIXTURES / "gemini" / ".gemini", base)
    (base / "projects.json").write_text(json.dumps({"projects": {str(project): "project"}}), encoding="utf-8")
    return base


def imported(result) -> dict:
    return result.json()["data"] if "data" in result.json() else result.json()


# --- readers -----------------------------------------------------------------------------


def test_claude_reader_reads_topic_files_and_not_the_index():
    store = memstores.recognise(CLAUDE_STORE)
    reading = memstores.read(store)
    assert store.kind == "claude-memory"
    assert {e.key: e.category for e in reading.entries} == {"use-pnpm-not-npm.md": "feedback",
                                                           "user-billing-backend.md": "fact"}
    pnpm = next(e for e in reading.entries if e.key == "use-pnpm-not-npm.md")
    assert pnpm.text.startswith("Use pnpm, never npm") and "**Why:**" in pnpm.text and "name:" not in pnpm.text
    assert pnpm.line == 11 and pnpm.stable
    assert any(f == "MEMORY.md" and "not memories" in why for f, why in reading.skipped)


def test_claude_slug_is_the_path_with_non_alphanumerics_as_dashes():
    assert claude_store.project_slug(Path("/tmp/memcli-agent-memory/project")) == "-tmp-memcli-agent-memory-project"
    assert claude_store.project_slug(Path("/home/a.b/my_repo")) == "-home-a-b-my-repo"


def test_codex_reader_keeps_block_sections_and_this_project(tmp_path):
    project = tmp_path / "project"
    store = codex_home(tmp_path / "h", project)
    reading = memstores.read(memstores.recognise(store), project)
    assert [(e.category, e.text) for e in reading.entries] == [
        ("preference", 'when running tests, the user asked: "never mock the database" -> use the docker postgres '
                       "fixture"),
        ("fact", "the integration tests need `docker compose up db` first"),
        ("fact", "a stale .pytest_cache made tests pass locally -> run with -p no:cacheprovider")]
    why = " ".join(w for _, w in reading.skipped)
    assert "another project" in why and "raw_memories.md" in " ".join(f for f, _ in reading.skipped)
    assert "a digest of MEMORY.md" in why
    everything = memstores.read(memstores.recognise(store), None)
    assert any("hugo" in e.text for e in everything.entries)


def test_codex_summary_is_read_when_memory_md_is_missing(tmp_path):
    store = codex_home(tmp_path / "h", tmp_path / "p")
    (store / "MEMORY.md").unlink()
    reading = memstores.read(memstores.recognise(store))
    assert [(e.category, e.text) for e in reading.entries] == [
        ("fact", "The user is a backend engineer on the billing team."), ("preference", "never mock the database")]


def test_gemini_readers_global_project_and_inbox(tmp_path):
    base = gemini_home(tmp_path / "h", tmp_path / "p")
    glob = memstores.read(memstores.recognise(base / "GEMINI.md"))
    assert [e.text for e in glob.entries] == ["Prefer pytest over unittest for tests, in every project."]
    proj = memstores.read(memstores.recognise(base / "tmp" / "project" / "memory"))
    assert [e.text for e in proj.entries][0].startswith("The staging database tunnel listens on port 6543")
    assert any(e.key == "release-checklist.md" and "Tag the release" in e.text for e in proj.entries)
    assert len(proj.entries) == 2  # the pointer line to release-checklist.md is not a memory
    inbox = base / "tmp" / "project" / "memory" / ".inbox" / "private"
    inbox.mkdir(parents=True)
    (inbox / "extraction.patch").write_text(
        f"--- {base}/tmp/project/memory/MEMORY.md\n+++ {base}/tmp/project/memory/MEMORY.md\n@@ -1,3 +1,4 @@\n"
        " # Private project memory\n \n+- The local redis runs on port 6380.\n", encoding="utf-8")
    held = memstores.read(memstores.recognise(inbox.parent))
    assert [(e.text, e.hold) for e in held.entries] == [("The local redis runs on port 6380.", True)]


def test_legacy_gemini_added_memories_section_is_read(tmp_path):
    base = tmp_path / ".gemini"
    base.mkdir()
    (base / "projects.json").write_text("{}", encoding="utf-8")
    (base / "GEMINI.md").write_text("## Gemini Added Memories\n- My cat is called Io.\n", encoding="utf-8")
    reading = memstores.read(memstores.recognise(base / "GEMINI.md"))
    assert [e.text for e in reading.entries] == ["My cat is called Io."]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=600))
@pytest.mark.slow
def test_parsers_take_any_text(tmp_path_factory, text):
    """Any text: entries or skipped lines, never a crash; every entry has text."""
    root = tmp_path_factory.mktemp("any")
    cl = root / ".claude" / "projects" / "-p" / "memory"
    cl.mkdir(parents=True)
    (cl / "MEMORY.md").write_text(text, encoding="utf-8")
    (cl / "topic.md").write_text(text, encoding="utf-8")
    cx = root / "codex" / "memories"
    cx.mkdir(parents=True)
    (cx / "MEMORY.md").write_text(text, encoding="utf-8")
    (cx / "memory_summary.md").write_text(text, encoding="utf-8")
    gm = root / ".gemini"
    (gm / "tmp" / "x" / "memory" / ".inbox" / "global").mkdir(parents=True)
    (gm / "GEMINI.md").write_text(text, encoding="utf-8")
    (gm / "tmp" / "x" / "memory" / "MEMORY.md").write_text(text, encoding="utf-8")
    (gm / "tmp" / "x" / "memory" / ".inbox" / "global" / "extraction.patch").write_text(text, encoding="utf-8")
    for path in (cl, cx, cx / "memory_summary.md", gm / "GEMINI.md", gm / "tmp" / "x" / "memory",
                 gm / "tmp" / "x" / "memory" / ".inbox"):
        reading = memstores.read(memstores.recognise(path), root)
        assert all(e.text.strip() and e.line >= 1 for e in reading.entries)


DIFF_LINES = st.one_of(st.sampled_from(["--- /dev/null", "--- /m/MEMORY.md", "+++ /m/MEMORY.md", "+++ /m/note.md",
                                         "@@ -1,2 +1,3 @@", "@@ -0,0 +1,2 @@", "@@ -1 +1 @@", "@@ bad @@", "+- a fact",
                                         "+  continued", "+# heading", "+", "-- old fact", " context", "",
                                         "\\ No newline at end of file", "+- See /m/note.md for more."]),
                       st.text(max_size=30).map(lambda t: t.replace("\n", " ")))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(DIFF_LINES, max_size=40))
def test_inbox_patches_of_any_shape_never_crash(tmp_path_factory, lines):
    """Any sequence of diff-like lines: entries with text, held for review, on a line of the patch."""
    inbox = tmp_path_factory.mktemp("inbox") / ".gemini" / "tmp" / "p" / "memory" / ".inbox" / "private"
    inbox.mkdir(parents=True)
    (inbox / "extraction.patch").write_text("\n".join(lines), encoding="utf-8")
    reading = memstores.read(memstores.recognise(inbox.parent))
    assert all(e.text.strip() and e.hold and 1 <= e.line <= len(lines) for e in reading.entries)


@given(text=st.text(max_size=400))
def test_front_matter_split_never_raises(text):
    fields, body, first = claude_store.split(text)
    assert first >= 1 and isinstance(body, str) and (fields is None or isinstance(fields, dict))


def test_unknown_layout_is_one_line_and_exit_2(ws, tmp_path, run):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("- just a list\n", encoding="utf-8")
    before = memories(ws)
    result = run("import", "--agent", "claude", cwd=folder)
    assert result.code == 2 and result.err.count("\n") == 1 and "keeps no memory for" in result.err, result
    assert "Traceback" not in result.err and memories(ws) == before
    result = run("import", "--agent", "cursor")
    assert result.code == 2 and "unknown agent" in result.err


# --- import, repeat, changes ---------------------------------------------------------------


def test_claude_store_imports_into_my_scope_and_a_repeat_is_a_noop(ws, project, run):
    store = claude_home(Path.home(), project)
    first = run("import", "--agent", "claude", "--json", cwd=project)
    assert first.code == 0, first
    data = imported(first)
    assert data["counts"]["created"] == 2 and data["stores"][0]["entries"] == 2
    mine = [m for m in memories(ws) if m.provenance.actor == "claude-code"]
    assert {m.scope for m in mine} == {"user:alice"} and {m.status for m in mine} == {"active"}
    assert {m.provenance.source_type for m in mine} == {"model_derived"}
    refs = {m.provenance.source for m in mine}
    assert refs == {f"~/.claude/projects/{store.parent.name}/memory/use-pnpm-not-npm.md",
                    f"~/.claude/projects/{store.parent.name}/memory/user-billing-backend.md"}
    assert not any("Use pnpm not npm](" in m.text for m in mine)  # the index is not imported
    again = run("import", str(store), "--json")
    assert again.code == 0 and imported(again)["counts"]["noop"] == 2 and imported(again)["commits"] == []
    assert len(memories(ws)) == len(mine)


def test_into_project_the_entries_wait_for_review(ws, project, run):
    claude_home(Path.home(), project)
    result = run("import", "--agent", "claude", "--scope", "project", cwd=project)
    assert result.code == 0, result
    assert "2 waiting for review" in result.out
    pending = [m for m in memories(ws) if m.scope == "project"]
    assert len(pending) == 2 and {m.status for m in pending} == {"pending_review"}
    review = run("review")
    assert "claude-code" in review.out


def test_edits_and_deletions_are_offered_then_applied(ws, project, run):
    store = claude_home(Path.home(), project)
    assert run("import", "--agent", "claude", cwd=project).code == 0
    topic = store / "use-pnpm-not-npm.md"
    text = topic.read_text(encoding="utf-8")
    topic.write_text(text.replace("never npm, to install", "never npm or yarn, to install"), encoding="utf-8")
    (store / "user-billing-backend.md").unlink()
    offered = run("import", "--agent", "claude", "--json", cwd=project)
    data = imported(offered)
    changes = sorted((i["change"], i["outcome"]) for i in data["items"] if i["change"])
    assert changes == [("delete", "offered"), ("edit", "offered")], data
    assert data["commits"] == [] and all("--apply-changes" in i["command"] for i in data["items"] if i["change"])
    applied = run("import", "--agent", "claude", "--apply-changes", "--json", cwd=project)
    data = imported(applied)
    assert sorted(i["outcome"] for i in data["items"] if i["change"]) == ["forgotten", "superseded"], data
    live = [m for m in memories(ws) if m.status == "active"]
    assert [m.text for m in live] and all("yarn" in m.text for m in live) and len(live) == 1
    assert live[0].supersedes and run("import", "--agent", "claude", "--json", cwd=project).json()
    last = imported(run("import", "--agent", "claude", "--json", cwd=project))
    assert last["counts"]["offered"] == 0 and last["counts"]["noop"] == 1


def test_a_secret_in_an_agent_entry_is_refused(ws, project, run):
    store = claude_home(Path.home(), project)
    (store / "token.md").write_text(f"---\nname: token\ndescription: t\ntype: reference\n---\n\nThe deploy token is "
                                    f"{GITHUB_TOKEN}\n", encoding="utf-8")
    result = run("import", "--agent", "claude", "--json", cwd=project)
    data = imported(result)
    assert result.code == 0 and data["counts"]["refused"] == 1 and data["counts"]["created"] == 2
    assert GITHUB_TOKEN not in result.out + result.err


def test_an_edit_that_brings_a_secret_is_refused_not_offered(ws, project, run):
    """An edit is checked by the text gates before it is offered: the offer never shows a secret."""
    store = claude_home(Path.home(), project)
    assert run("import", "--agent", "claude", cwd=project).code == 0
    topic = store / "use-pnpm-not-npm.md"
    topic.write_text(topic.read_text(encoding="utf-8").replace("never npm,", f"never npm (token {GITHUB_TOKEN}),"),
                     encoding="utf-8")
    before = sorted((m.id, m.status, m.text) for m in memories(ws))
    for args in ((), ("--apply-changes",)):
        result = run("import", "--agent", "claude", *args, "--json", cwd=project)
        data = imported(result)
        edits = [i for i in data["items"] if i["change"] == "edit"]
        assert [(i["outcome"], i["gate"], i["text"], i["command"]) for i in edits] == [
            ("refused", "sensitive_data", None, None)], data
        assert data["commits"] == [] and GITHUB_TOKEN not in result.out + result.err
        assert "refused by the sensitive_data gate" in result.out  # the envelope's warnings
    table = run("import", "--agent", "claude", cwd=project)
    assert table.code == 0 and GITHUB_TOKEN not in table.out + table.err and "refused (edit)" in table.out
    assert sorted((m.id, m.status, m.text) for m in memories(ws)) == before


def test_codex_and_gemini_stores_import(ws, project, run):
    codex_home(Path.home(), project)
    gemini_home(Path.home(), project)
    cx = imported(run("import", "--agent", "codex", "--json", cwd=project))
    assert cx["counts"]["created"] == 3 and {i["sourceRef"].split("#")[0] for i in cx["items"]} == \
        {"~/.codex/memories/MEMORY.md"}
    inbox = Path.home() / ".gemini" / "tmp" / "project" / "memory" / ".inbox" / "private"
    inbox.mkdir(parents=True)
    (inbox / "extraction.patch").write_text("--- /x/MEMORY.md\n+++ /x/MEMORY.md\n@@ -1,1 +1,2 @@\n x\n"
                                            "+- The local redis runs on port 6380.\n", encoding="utf-8")
    gm = run("import", "--agent", "gemini", "--json", cwd=project)
    data = imported(gm)
    assert gm.code == 0, gm
    assert [s["kind"] for s in data["stores"]] == ["gemini-global", "gemini-project", "gemini-inbox"]
    assert data["counts"]["created"] == 3 and data["counts"]["pending_review"] == 1  # the inbox waits
    actors = {m.provenance.actor for m in memories(ws)}
    assert actors == {"codex", "gemini-cli"}
    for agent in ("codex", "gemini"):
        again = imported(run("import", "--agent", agent, "--json", cwd=project))
        assert again["commits"] == [] and again["counts"]["created"] == again["counts"]["pending_review"] == 0


# --- harvest, share, export ------------------------------------------------------------------


def hook(run, agent: str, event: str, project: Path, session: str):
    payload = {"session_id": session, "cwd": str(project), "hook_event_name": event,
               "source": "startup", "transcript_path": ""}
    return run("hook", agent, event, input=json.dumps(payload), cwd=project)


def test_harvest_at_session_end_and_the_next_start_says_so_once(ws, project, run):
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"), encoding="utf-8")
    claude_home(Path.home(), project)
    end = hook(run, "claude", "session-end", project, "s1")
    assert end.code == 0 and "imported 2 into user:alice" in end.err, end
    start = hook(run, "claude", "session-start", project, "s2")
    context = json.loads(start.out)["hookSpecificOutput"]["additionalContext"]
    assert "2 new memories from Claude Code's auto memory: review with `memcli list --tag claude-code`" in context
    again = hook(run, "claude", "session-start", project, "s3")
    assert "new memories from" not in again.out
    quiet = hook(run, "claude", "session-end", project, "s4")
    assert "imported" not in quiet.err and hook(run, "claude", "session-start", project, "s5").out.count("new mem") == 0


def test_harvest_is_off_by_default(ws, project, run):
    claude_home(Path.home(), project)
    assert hook(run, "claude", "session-end", project, "s1").code == 0
    assert memories(ws) == []


def test_share_proposes_for_review_with_provenance(ws, project, run):
    claude_home(Path.home(), project)
    data = imported(run("import", "--agent", "claude", "--json", cwd=project))
    original = next(i["id"] for i in data["items"] if "pnpm" in i["text"])
    shared = run("share", original, "--json")
    assert shared.code == 0, shared
    copy = [m for m in memories(ws) if m.scope == "project"]
    assert len(copy) == 1 and copy[0].status == "pending_review"
    assert copy[0].provenance.actor == "claude-code" and copy[0].provenance.source_type == "model_derived"
    assert copy[0].provenance.idempotency_key == f"share:project:{original}" and "shared" in copy[0].tags
    assert "already proposed" in run("share", original).out
    assert run("share", copy[0].id).code == 2  # not a personal memory


def test_export_claude_memory_round_trip(ws, project, run):
    store = claude_home(Path.home(), project)
    assert run("remember", "Prefer uv over pip", "--scope", "user:alice", "--category", "preference").code == 0
    first = run("export", "--format", "claude-memory", "--json", cwd=project)
    assert first.code == 0, first
    index_before = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [Use pnpm not npm](use-pnpm-not-npm.md)" in index_before and memstores.MARK_BEGIN in index_before
    exported = list(store.glob("memcli_*.md"))
    assert len(exported) == 1 and "type: feedback" in exported[0].read_text(encoding="utf-8")
    second = run("export", "--format", "claude-memory", "--json", cwd=project)
    assert all(f["state"] == "unchanged" for f in imported(second)["files"])
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == index_before
    count = len(memories(ws))
    again = imported(run("import", "--agent", "claude", "--json", cwd=project))
    assert again["counts"]["created"] == 2 and len(memories(ws)) == count + 2  # only Claude Code's own two
    assert imported(run("export", "--format", "claude-memory", "--json", cwd=project))["left_out"] == 2
    assert imported(run("import", "--agent", "claude", "--json", cwd=project))["commits"] == []


def test_export_gemini_memory_keeps_the_files_and_is_not_read_back(ws, project, run):
    """A memory of this project goes to Gemini CLI's private memory of this project, a
    cross-project one (--all-projects) to the global GEMINI.md; neither is read back."""
    base = gemini_home(Path.home(), project)
    private = base / "tmp" / "project" / "memory" / "MEMORY.md"
    held = (base / "GEMINI.md").read_text(encoding="utf-8")
    assert run("remember", "Prefer uv over pip", "--scope", "user:alice").code == 0
    first = run("export", "--format", "gemini-memory", cwd=project)
    assert first.code == 0, first
    assert (base / "GEMINI.md").read_text(encoding="utf-8") == held  # nothing of this project in the global file
    text = private.read_text(encoding="utf-8")
    assert text.startswith("# Private project memory\n") and "- Prefer uv over pip" in text
    assert memstores.MARK_BEGIN in text
    assert run("remember", "I write commit messages in the imperative mood", "--scope", "user:alice",
               "--all-projects").code == 0
    assert run("export", "--format", "gemini-memory", cwd=project).code == 0
    glob = (base / "GEMINI.md").read_text(encoding="utf-8")
    assert glob.startswith(held.rstrip("\n")) and "- I write commit messages in the imperative mood" in glob
    assert "Prefer uv" not in glob and "imperative" not in private.read_text(encoding="utf-8")
    assert run("export", "--format", "gemini-memory", cwd=project).out.count("0 files changed") == 1
    data = imported(run("import", "--agent", "gemini", "--json", cwd=project))
    assert {i["text"].split("\n")[0][:22] for i in data["items"]} == {
        "Prefer pytest over uni", "# Local release checkl", "The staging database t"}, data
    assert data["counts"]["created"] == 3


def test_export_gemini_memory_for_a_project_gemini_does_not_know_writes_nothing(ws, project, run):
    base = gemini_home(Path.home(), Path("/somewhere/else"))
    before = (base / "GEMINI.md").read_text(encoding="utf-8")
    assert run("remember", "Prefer uv over pip", "--scope", "user:alice").code == 0
    result = run("export", "--format", "gemini-memory", cwd=project)
    assert result.code == 2 and "Gemini CLI has not registered" in result.err and "start `gemini`" in result.err
    assert (base / "GEMINI.md").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("fmt", ["claude-memory", "gemini-memory"])
def test_native_export_refuses_output(ws, fmt, run, tmp_path):
    result = run("export", "--format", fmt, "--output", str(tmp_path / "x.md"))
    assert result.code == 2 and "does not apply" in result.err or "do not apply" in result.err


def test_harvest_stays_off_the_other_hooks_hot_path(ws, project, run):
    """With harvest on, a session start without a note, and a prompt, load no store reader."""
    from test_imports import loaded_modules

    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"), encoding="utf-8")
    claude_home(Path.home(), project)
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart"})
    for event in ("session-start", "user-prompt-submit"):
        modules = loaded_modules("hook", "claude", event, input=payload, cwd=project)
        assert not {m for m in modules if "memstores" in m or "agent_memory" in m}, event
    assert hook(run, "claude", "session-end", project, "s1").code == 0
    modules = loaded_modules("hook", "claude", "session-start", input=payload, cwd=project)
    assert "memcli.service.harvest_note" in modules and "memcli.service.agent_memory" not in modules
    assert "memcli.agents.memstores" not in modules


@pytest.mark.parametrize(("agent", "title", "tag", "count"), [
    ("codex", "Codex Memories", "codex", 3), ("gemini", "Gemini CLI's project memory", "gemini-cli", 2)])
@pytest.mark.slow
def test_harvest_by_the_hooks_of_codex_and_gemini(ws, project, run, agent, title, tag, count):
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"), encoding="utf-8")
    (codex_home if agent == "codex" else gemini_home)(Path.home(), project)
    end = hook(run, agent, "session-end", project, "s1")
    assert end.code == 0 and "imported" in end.err, end
    start = hook(run, agent, "session-start", project, "s2")
    assert f"{count} new memories from {title}: review with `memcli list --tag {tag}`" in start.out, start
    assert {m.provenance.actor for m in memories(ws)} == {tag}


def test_an_unknown_layout_in_an_agents_home_is_exit_2(ws, run):
    odd = Path.home() / ".codex" / "memories"
    odd.mkdir(parents=True)
    (odd / "notes.txt").write_text("hello\n", encoding="utf-8")
    result = run("import", str(odd))
    assert result.code == 2 and "not an agent memory store memcli knows" in result.err, result
    assert result.err.count("\n") == 1 and memories(ws) == []
    hidden = claude_home(Path.home(), Path("/tmp/some/project"))
    (hidden / "bidi.md").write_text("---\nname: b\ntype: user\n---\n\nDeploy with \u202e`rm -rf`\u202c safely\n",
                                    encoding="utf-8")
    data = imported(run("import", str(hidden), "--json"))
    assert data["counts"]["refused"] == 1 and data["counts"]["created"] == 2, data


def test_the_recorded_codex_store_imports_its_summary(ws, project, run):
    """Codex 0.171's memories_v2 (recorded): memory_summary.md's profile, preferences and tips."""
    shutil.copytree(FIXTURES / "codex" / ".codex", Path.home() / ".codex")
    data = imported(run("import", "--agent", "codex", "--json", cwd=project))
    assert data["stores"][0]["root"] == "~/.codex/memories_v2" and data["stores"][0]["entries"] == 3, data
    assert sorted((i["category"], i["outcome"]) for i in data["items"]) == [
        ("fact", "created"), ("preference", "created"), ("procedure", "created")]
    assert any("pnpm, never npm" in i["text"] for i in data["items"])
    assert not any("rollout_summaries/" in i["text"] for i in data["items"])  # routing lines are not memories
    assert imported(run("import", "--agent", "codex", "--json", cwd=project))["counts"]["noop"] == 3


def test_the_recorded_later_session_is_an_edit_and_a_deletion(ws, project, run):
    """claude-edited/: the same store after Claude Code edited one memory and deleted the other."""
    store = claude_home(Path.home(), project)
    assert imported(run("import", "--agent", "claude", "--json", cwd=project))["counts"]["created"] == 2
    shutil.rmtree(store)
    shutil.copytree(FIXTURES / "claude-edited" / ".claude" / "projects" / CLAUDE_STORE.parent.name / "memory", store)
    data = imported(run("import", "--agent", "claude", "--json", cwd=project))
    offers = {(i["change"], i["sourceRef"].rsplit("/", 1)[-1]) for i in data["items"] if i["outcome"] == "offered"}
    assert offers == {("edit", "use-pnpm-not-npm.md"), ("delete", "user-billing-backend.md")}, data
    assert data["counts"]["created"] == 0 and data["commits"] == []
    done = imported(run("import", "--agent", "claude", "--apply-changes", "--json", cwd=project))
    assert sorted(i["outcome"] for i in done["items"] if i["change"]) == ["forgotten", "superseded"]
    active = [m for m in memories(ws) if m.status == "active"]
    assert len(active) == 1 and "bun" in active[0].text and active[0].provenance.actor == "claude-code"


def test_gemini_cli_home_moves_the_store(ws, project, run, tmp_path):
    other = tmp_path / "gemini-home"
    gemini_home(other, project)
    data = imported(run("import", "--agent", "gemini", "--json", cwd=project, env={"GEMINI_CLI_HOME": str(other)}))
    assert [s["kind"] for s in data["stores"]] == ["gemini-global", "gemini-project"] and data["counts"]["created"] == 3


# --- Codex's ad-hoc notes, Gemini CLI's inbox, unknown layouts ------------------------------------

INBOX = FIXTURES / "gemini-inbox" / ".gemini" / "tmp" / "project" / "memory" / ".inbox"
NOTE = ("The user asked to remember: run the tests with `-p no:cacheprovider` in this repository "
        "(a stale .pytest_cache hid a failure).\n")


def codex_v2(home: Path) -> Path:
    """The recorded Codex 0.171 store with one ad-hoc note a session wrote, as its prompt asks."""
    shutil.copytree(FIXTURES / "codex" / ".codex", home / ".codex")
    store = home / ".codex" / "memories_v2"
    (store / "extensions" / "ad_hoc" / "notes").mkdir()
    (store / "extensions" / "ad_hoc" / "notes" / "2026-12-06T09-30-00-tests-no-cacheprovider.md").write_text(
        NOTE, encoding="utf-8")
    return store


def test_codex_ad_hoc_notes_are_read_and_their_consolidated_lines_are_not(tmp_path):
    store = codex_v2(tmp_path)
    reading = memstores.read(memstores.recognise(store))
    note = [e for e in reading.entries if e.key.endswith("tests-no-cacheprovider.md")]
    assert [(e.text, e.stable, e.tags) for e in note] == [(NOTE.strip(), True, ("codex", "ad-hoc-note"))]
    assert len(reading.entries) == 4 and reading.unknown == ()
    summary = store / "memory_summary.md"  # a later consolidation folds the note in, tagged as the extension asks
    summary.write_text(summary.read_text(encoding="utf-8").replace(
        "## General Tips\n", "## General Tips\n\n- Run the tests with -p no:cacheprovider [ad-hoc note]\n"),
        encoding="utf-8")
    again = memstores.read(memstores.recognise(store))
    assert [e.text for e in again.entries] == [e.text for e in reading.entries]
    assert any("took from ad-hoc notes" in why for _, why in again.skipped)
    one = memstores.recognise(store / "extensions" / "ad_hoc" / "notes" / note[0].key)
    assert one.file is not None and [e.text for e in memstores.read(one).entries] == [NOTE.strip()]


def test_a_codex_note_imports_with_its_file_as_source_ref(ws, project, run):
    codex_v2(Path.home())
    data = imported(run("import", "--agent", "codex", "--json", cwd=project))
    notes = [i for i in data["items"] if "ad_hoc/notes/" in i["sourceRef"]]
    assert [(i["outcome"], i["sourceRef"]) for i in notes] == [
        ("created", "~/.codex/memories_v2/extensions/ad_hoc/notes/2026-12-06T09-30-00-tests-no-cacheprovider.md")]
    assert data["counts"]["created"] == 4
    assert imported(run("import", "--agent", "codex", "--json", cwd=project))["counts"]["noop"] == 4


def test_gemini_inbox_fixture_entries_wait_for_review(ws, project, run):
    """The inbox patches (built in the format of Gemini CLI 0.61's extraction prompt and accepted
    by its own inbox code: gemini-inbox-check.json): every proposal waits, even in user:YOU."""
    base = gemini_home(Path.home(), project)
    shutil.copytree(INBOX, base / "tmp" / "project" / "memory" / ".inbox")
    result = run("import", "--agent", "gemini", "--json", cwd=project)
    data = imported(result)
    assert result.code == 0 and [s["kind"] for s in data["stores"]] == ["gemini-global", "gemini-project",
                                                                        "gemini-inbox"], data
    inbox = [i for i in data["items"] if i["store"] == "gemini-inbox"]
    assert sorted((i["outcome"], i["text"].split("\n")[0]) for i in inbox) == [
        ("pending_review", "# Flaky webhook tests"),
        ("pending_review", "Explain a shell command in one line before running it, in every project."),
        ("pending_review", "The local redis for the tests runs on port 6380 on this machine."),
        ("pending_review", "The staging database tunnel listens on port 6544 on this machine since the 2026-12 "
                           "move (never commit it).")]
    assert not any(i["text"].startswith("See ") for i in inbox)  # the pointer line is not a memory
    why = " ".join(s["why"] for s in data["stores"][2]["skipped"])
    assert "1 pointer lines" in why and "1 lines the patch would remove" in why
    assert all(m.status == "pending_review" for m in memories(ws) if "inbox" in m.tags)
    assert imported(run("import", "--agent", "gemini", "--json", cwd=project))["commits"] == []


@pytest.mark.parametrize("gone", [False, True])
@pytest.mark.slow
def test_gemini_inbox_approved_in_gemini_becomes_an_edit_and_retires_the_proposals(ws, project, run, gone):
    """After `/memory inbox` approves the patches (the files Gemini CLI's own code wrote, kept in
    gemini-inbox-check.json), the changed bullet is offered as an edit of the one imported before,
    and the proposals whose patch is gone as deletions (also when the whole inbox folder is gone)."""
    base = gemini_home(Path.home(), project)
    shutil.copytree(INBOX, base / "tmp" / "project" / "memory" / ".inbox")
    assert run("import", "--agent", "gemini", cwd=project).code == 0
    after = json.loads((FIXTURES / "gemini-inbox-check.json").read_text(encoding="utf-8"))["filesAfterApproving"]
    for rel, text in after.items():
        (Path.home() / rel).write_text(text, encoding="utf-8")
    for patch in (base / "tmp" / "project" / "memory" / ".inbox").rglob("*.patch"):
        patch.unlink()  # as applyInboxMemoryPatch does; the folders stay
    if gone:
        shutil.rmtree(base / "tmp" / "project" / "memory" / ".inbox")
    data = imported(run("import", "--agent", "gemini", "--json", cwd=project))
    offers = sorted((i["change"], (i["text"] or "")[:40]) for i in data["items"] if i["outcome"] == "offered")
    assert ("edit", "The staging database tunnel listens on p") in offers, offers
    assert sum(1 for change, _ in offers if change == "delete") == 4, offers
    done = imported(run("import", "--agent", "gemini", "--apply-changes", "--json", cwd=project))
    assert sorted(i["outcome"] for i in done["items"] if i["change"]) == ["rejected"] * 4 + ["superseded"]
    assert not [m for m in memories(ws) if m.status == "pending_review"]


@pytest.mark.parametrize("layout", ["codex-v2", "claude-json", "gemini-prose", "gemini-patch"])
def test_an_unknown_layout_is_one_line_exit_2_never_a_silent_0(ws, project, run, layout):
    home = Path.home()
    if layout == "codex-v2":
        store = home / ".codex" / "memories_v2"
        store.mkdir(parents=True)
        (store / "memory_summary.md").write_text("v2\n## Durable facts\n- pnpm, never npm\n", encoding="utf-8")
        args, says = ["--agent", "codex"], "its layout is v2; memcli reads v1"
    elif layout == "claude-json":
        store = home / ".claude" / "projects" / claude_store.project_slug(project) / "memory"
        store.mkdir(parents=True)
        (store / "memories.json").write_text('[{"text": "pnpm, never npm"}]\n', encoding="utf-8")
        args, says = ["--agent", "claude"], "not Markdown topic files (memories.json)"
    elif layout == "gemini-prose":
        (home / ".gemini").mkdir()
        (home / ".gemini" / "GEMINI.md").write_text("I prefer pytest.\nAnd tabs.\n", encoding="utf-8")
        args, says = [str(home / ".gemini" / "GEMINI.md")], "2 lines that are not bullets"
    else:
        inbox = home / ".gemini" / "tmp" / "p" / "memory" / ".inbox" / "private"
        inbox.mkdir(parents=True)
        (inbox / "extraction.patch").write_text("add: pnpm, never npm\n", encoding="utf-8")
        args, says = [str(inbox.parent)], "no unified-diff hunk"
    result = run("import", *args, cwd=project)
    assert result.code == 2 and says in result.err and result.err.count("\n") <= 2, result
    assert "Traceback" not in result.err and memories(ws) == []


def test_an_unknown_layout_beside_memories_is_a_warning(ws, project, run):
    store = claude_home(Path.home(), project)
    with (store / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.write("Remember to keep this file short.\n")
    result = run("import", "--agent", "claude", cwd=project)
    assert result.code == 0 and "not read, a layout memcli does not know" in result.err, result
    assert "1 lines that are not pointers" in result.err


def test_harvest_says_an_unknown_layout_and_exits_0(ws, project, run):
    toml = ws / "memcli.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"), encoding="utf-8")
    store = Path.home() / ".codex" / "memories_v2"
    store.mkdir(parents=True)
    (store / "memory_summary.md").write_text("v2\n## Durable facts\n- pnpm, never npm\n", encoding="utf-8")
    end = hook(run, "codex", "session-end", project, "s1")
    assert end.code == 0 and "harvest: ~/.codex/memories_v2/memory_summary.md: not read" in end.err, end
    assert memories(ws) == []


# --- files that cannot be read as they are (newcomer's finding 7) ---------------------------


def test_a_broken_claude_topic_file_is_said_per_file_and_the_others_import(ws, project, run):
    """A topic file that is not UTF-8 is not imported (one warning naming it and its first bad
    byte, as doctor says of a memory file); one whose front-matter does not parse is flagged
    with what is wrong; the recorded entries still import."""
    store = claude_home(Path.home(), project)
    (store / "bin.md").write_bytes(b"\xff\xfe bad utf8\n")
    (store / "broken.md").write_text("---\ntype: [unclosed\n---\nbody\n", encoding="utf-8")
    result = run("import", "--agent", "claude", cwd=project)
    assert result.code == 0 and "Traceback" not in result.err, result
    lines = result.err.splitlines()
    assert [line for line in lines if "/bin.md: " in line and "not in MEMORY.md" not in line] == [
        f"memcli: warning: ~/.claude/projects/{store.parent.name}/memory/bin.md: not imported: not UTF-8 text "
        "(byte 0)"], result
    broken = [line for line in lines if "/broken.md: " in line and "not in MEMORY.md" not in line]
    assert len(broken) == 1 and "type '[unclosed' is none of Claude Code's types" in broken[0], result
    assert "line 2: invalid YAML front-matter" in broken[0] and "imported as a fact" in broken[0]
    assert "1 file not readable, not imported" in result.out, result
    texts = sorted(m.text for m in memories(ws))
    assert not any("\ufffd" in t for t in texts) and "body" in texts and len(texts) == 3, texts
    data = imported(run("import", "--agent", "claude", "--json", cwd=project))
    assert data["stores"][0]["invalid"] == [{"file": "bin.md", "why": "not imported: not UTF-8 text (byte 0)"}]
    assert data["counts"]["noop"] == 3 and data["commits"] == []


def test_front_matter_claude_code_reads_imports_with_its_type_and_no_warning(ws, project, run):
    """``description: a: b`` is no valid YAML, but Claude Code reads it (it quotes the value
    and parses again): so does memcli, silently; a front-matter neither reads is flagged."""
    store = claude_home(Path.home(), project)
    (store / "colon.md").write_text("---\nname: colon\ndescription: Testing: always pytest\nmetadata:\n  type: "
                                    "feedback\n---\nRun the tests with pytest, never unittest.\n", encoding="utf-8")
    (store / "quote.md").write_text('---\nname: quote\ndescription: "unclosed\ntype: user\n---\nI use vim.\n',
                                    encoding="utf-8")
    data = imported(run("import", "--agent", "claude", "--json", cwd=project))
    categories = {i["sourceRef"].rsplit("/", 1)[-1]: i["category"] for i in data["items"]}
    assert categories["colon.md"] == "feedback" and categories["quote.md"] == "fact", data
    skipped = {s["file"]: s["why"] for s in data["stores"][0]["skipped"] if "MEMORY.md's index" not in s["why"]}
    assert "colon.md" not in skipped
    assert skipped["quote.md"].startswith("line 3: invalid YAML front-matter") and \
        "none of its fields is read" in skipped["quote.md"], skipped


@given(text=st.text(max_size=300))
def test_claude_front_matter_fields_never_raise(text):
    meta, problem = claude_store.fields(text, "topic.md")
    assert isinstance(meta, dict) or (meta is None and problem is not None and problem.reason)


def test_codex_and_gemini_files_that_are_not_utf8_are_not_imported(ws, project, run):
    notes = Path.home() / ".codex" / "memories_v2" / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    (notes / "2026-01-01T00-00-00-bad.md").write_bytes(b"use \xff pnpm\n")
    (notes / "2026-01-01T00-00-01-good.md").write_text("Use pnpm, not npm.\n", encoding="utf-8")
    base = gemini_home(Path.home(), project)
    (base / "tmp" / "project" / "memory" / "bad-note.md").write_bytes(b"\xfe\n")
    codex = run("import", "--agent", "codex", cwd=project)
    assert codex.code == 0 and "extensions/ad_hoc/notes/2026-01-01T00-00-00-bad.md: not imported: not UTF-8 text " \
        "(byte 4)" in codex.err, codex
    gemini = run("import", "--agent", "gemini", cwd=project)
    assert gemini.code == 0 and "memory/bad-note.md: not imported: not UTF-8 text (byte 0)" in gemini.err, gemini
    texts = [m.text for m in memories(ws)]
    assert "Use pnpm, not npm." in texts and len(texts) == 4 and not any("\ufffd" in t for t in texts), texts


def test_export_does_not_rewrite_an_index_that_is_not_utf8(ws, project, run):
    store = claude_home(Path.home(), project)
    (store / "MEMORY.md").write_bytes(b"- [A](a.md) \xff\n")
    assert run("remember", "Prefer uv over pip", "--scope", "user:alice").code == 0
    before = sorted((p.name, p.read_bytes()) for p in store.iterdir())
    result = run("export", "--format", "claude-memory", cwd=project)
    assert result.code == 2 and "cannot rewrite" in result.err and "not UTF-8 text (byte 12)" in result.err, result
    assert result.err.count("\n") <= 2 and sorted((p.name, p.read_bytes()) for p in store.iterdir()) == before
