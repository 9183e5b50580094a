"""import and export: agents' rule files <-> memories (issue 4, part import/export).

Real files, real git; the service is called in-process for the parsing details and the
CLI runs in a subprocess for the commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, personal_store
from memcli.agents import rule_files
from memcli.service import Ctx
from memcli.service.import_export import import_rules
from memcli.store.files import MemoryFiles

GITHUB_TOKEN = "ghp_" + "a1B2" * 9


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def memories(ws: Path) -> dict[str, object]:
    """Every memory file of a workspace and of the person's own store of it, by id."""
    stores = [ws] + [p for p in (personal_store(ws),) if p.exists()]
    return {m.id: m for store in stores for m in MemoryFiles(store).scan().memories}


def summary(ws: Path) -> set[tuple]:
    """(text, source, line, tags, paths, pinned) of every memory."""
    return {(m.text, m.provenance.source, m.provenance.line, tuple(m.tags), tuple(m.paths), m.pinned)
            for m in memories(ws).values()}


def commits(ws: Path) -> int:
    return int(git(ws, "rev-list", "--count", "HEAD").strip())


def claude_project(root: Path) -> Path:
    """CLAUDE.md importing two levels deep (one import cyclic), a fence, a code span, and rules files."""
    write(root / "CLAUDE.md", """\
# Guide

- Use pnpm, not npm,
  for every package.
- Shared rules live in @docs/shared.md

@docs/extra.md

Run the tests with:

```bash
cat @docs/never.md
```

Mention `@docs/inline.md` only in code.

## Style
Two spaces of indentation,
never tabs.
""")
    write(root / "docs/shared.md", "- Shared rule one @deep/level2.md\n")
    write(root / "docs/deep/level2.md", "# Deep\n- Level two rule\n\n@../shared.md\n@../../CLAUDE.md\n")
    write(root / "docs/extra.md", "- Extra rule\n")
    write(root / "docs/never.md", "- Never imported\n")
    write(root / "docs/inline.md", "- Inline never imported\n")
    write(root / ".cursor/rules/web.mdc", """\
---
description: Frontend conventions
globs: "web/**,*.tsx"
alwaysApply: true
---
- Components are function components with hooks.
""")
    write(root / ".claude/rules/api.md", """\
---
paths:
  - "src/api/**/*.ts"
---
# API design
- Every endpoint validates its input.
""")
    return root


EXPECTED = {
    ("Use pnpm, not npm, for every package.", "CLAUDE.md", 3, ("guide",), (), False),
    ("Run the tests with:\n```bash\ncat @docs/never.md\n```", "CLAUDE.md", 9, ("guide",), (), False),
    ("Mention `@docs/inline.md` only in code.", "CLAUDE.md", 15, ("guide",), (), False),
    ("Two spaces of indentation, never tabs.", "CLAUDE.md", 18, ("guide", "style"), (), False),
    ("Shared rule one @deep/level2.md", "docs/shared.md", 1, (), (), False),
    ("Level two rule", "docs/deep/level2.md", 2, ("deep",), (), False),
    ("Extra rule", "docs/extra.md", 1, (), (), False),
    ("Components are function components with hooks.", ".cursor/rules/web.mdc", 6, ("web",),
     ("web/**", "*.tsx"), True),
    ("Every endpoint validates its input.", ".claude/rules/api.md", 6, ("api", "api-design"),
     ("src/api/**/*.ts",), False),
}


def test_import_claude_md_with_nested_imports_cursor_and_claude_rules(ws: Path, tmp_path: Path):
    project = claude_project(tmp_path / "proj")
    before = commits(ws)
    result = import_rules(Ctx.open(), [project])
    assert summary(ws) == EXPECTED
    assert result.counts() == {"created": 9, "pending_review": 0, "noop": 0, "refused": 0, "skipped": 3}
    assert [(i.source, i.line, i.gate) for i in result.items if i.outcome == "skipped"] == [
        ("CLAUDE.md", 5, "pointer"), ("CLAUDE.md", 7, "pointer"), ("docs/deep/level2.md", 4, "pointer")]
    assert commits(ws) == before + 1 and result.commit == git(ws, "rev-parse", "HEAD").strip()
    assert git(ws, "log", "-1", "--format=%s").strip() == "memcli: import 9 memories (project) by alice"
    assert {m.text: m.category for m in memories(ws).values()} == {
        "Use pnpm, not npm, for every package.": "preference", "Two spaces of indentation, never tabs.": "preference",
        "Run the tests with:\n```bash\ncat @docs/never.md\n```": "procedure",
        "Mention `@docs/inline.md` only in code.": "preference", "Shared rule one @deep/level2.md": "preference",
        "Level two rule": "preference", "Extra rule": "preference",
        "Components are function components with hooks.": "fact", "Every endpoint validates its input.": "preference"}
    for memory in memories(ws).values():
        assert (memory.scope, memory.status, memory.importance) == ("project", "active", 3)
        assert (memory.provenance.source_type, memory.provenance.run_id, memory.provenance.actor) == \
            ("admin_edit", None, "alice")
        assert memory.provenance.idempotency_key.startswith(f"import:project:{memory.provenance.source}:")
    assert not result.warnings
    cursor = next(f for f in result.files if f["kind"] == "cursor")
    assert cursor == {"source": ".cursor/rules/web.mdc", "kind": "cursor", "items": 1,
                      "description": "Frontend conventions", "paths": ["web/**", "*.tsx"], "pinned": True}


@pytest.mark.parametrize("given", [".cursor/rules", ".cursor"])
def test_a_rule_folder_inside_cursor_is_read_as_the_project_names_it(ws: Path, tmp_path: Path, given: str):
    """Newcomer MEDIUM (stop 34): `import PROJECT/.cursor/rules`, which `import -h` names,
    found no rule file; the folder's files are read as the project above it names them."""
    project = claude_project(tmp_path / "proj")
    result = import_rules(Ctx.open(), [project / given])
    assert [(f["source"], f["kind"], f["paths"]) for f in result.files] == [
        (".cursor/rules/web.mdc", "cursor", ["web/**", "*.tsx"])]
    assert result.counts()["created"] == 1 and not result.warnings


def test_a_named_rule_file_that_is_not_utf8_is_refused_with_where_and_what_to_do(ws: Path, tmp_path: Path, run):
    """Newcomer MEDIUM (stop 34): `import AGENTS.md` of a Latin-1 file said only "skipped
    AGENTS.md: invalid continuation byte" and exit 0. Named on its own: exit 5 with the byte's
    place and the fix, nothing written; found in a folder: a warning saying the same."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "AGENTS.md").write_bytes(b"- Use short names.\n- Use \xe9l\xe9gant names.\n")
    head = git(ws, "rev-parse", "HEAD").strip()
    named = run("import", str(project / "AGENTS.md"))
    assert named.code == 5 and named.err.count("\n") == 1, named
    assert "not UTF-8 text (byte 0xe9 at line 2, column 7)" in named.err and "iconv" in named.err, named
    assert git(ws, "rev-parse", "HEAD").strip() == head
    found = run("import", str(project))
    assert found.code == 0 and "skipped AGENTS.md: not UTF-8 text (byte 0xe9 at line 2, column 7)" in found.err, found


def test_source_and_line_are_in_the_file_and_survive_the_index(ws: Path, tmp_path: Path, run):
    import_rules(Ctx.open(), [claude_project(tmp_path / "proj")])
    memory = run("--json", "recall", "tabs").json()["data"]["hits"][0]  # a record read back from the index
    assert memory["provenance"]["source"] == "CLAUDE.md" and memory["provenance"]["line"] == 18
    text = (ws / memory["path"]).read_text(encoding="utf-8")
    assert "  source: CLAUDE.md\n  line: 18\n" in text


def test_second_import_is_a_no_op_without_a_commit(ws: Path, tmp_path: Path, run):
    project = claude_project(tmp_path / "proj")
    first = run("--json", "import", str(project))
    assert first.code == 0, first
    head = git(ws, "rev-parse", "HEAD")
    again = run("--json", "import", str(project))
    assert again.code == 0, again
    data = again.json()["data"]
    assert data["commit"] is None and data["counts"]["noop"] == 9 and data["counts"]["created"] == 0
    assert all(i["outcome"] == "noop" and i["gate"] == "idempotency" and "already" in i["message"]
               for i in data["items"] if i["outcome"] != "skipped")
    assert git(ws, "rev-parse", "HEAD") == head
    assert git(ws, "status", "--porcelain") == ""
    # the same file named on its own gives the same provenance, so the same keys
    alone = run("--json", "import", str(project / "CLAUDE.md")).json()["data"]
    assert alone["counts"]["noop"] == 7 and git(ws, "rev-parse", "HEAD") == head


def test_dry_run_writes_nothing(ws: Path, tmp_path: Path, run):
    project = claude_project(tmp_path / "proj")
    head = git(ws, "rev-parse", "HEAD")
    result = run("--json", "import", str(project), "--dry-run")
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["dry_run"] is True and data["commit"] is None and data["counts"]["created"] == 9
    assert git(ws, "rev-parse", "HEAD") == head and memories(ws) == {}


def test_agents_md_and_copilot_files(ws: Path, tmp_path: Path):
    root = tmp_path / "proj"
    write(root / "AGENTS.md", "# Agents\nBuild with `make`.\n\n- Run `make check` before pushing.\n")
    write(root / ".github/copilot-instructions.md", "Prefer small pull requests.\n")
    write(root / ".github/instructions/py.instructions.md",
          '---\napplyTo: "**/*.py"\n---\n- Type-hint public functions.\n')
    result = import_rules(Ctx.open(), [root])
    assert summary(ws) == {
        ("Build with `make`.", "AGENTS.md", 2, ("agents",), (), False),
        ("Run `make check` before pushing.", "AGENTS.md", 4, ("agents",), (), False),
        ("Prefer small pull requests.", ".github/copilot-instructions.md", 1, (), (), False),
        ("Type-hint public functions.", ".github/instructions/py.instructions.md", 4, ("py",), ("**/*.py",), False),
    }
    assert [f["kind"] for f in result.files] == ["agents", "copilot", "copilot-instructions"]


def test_a_secret_in_a_rule_file_is_refused_and_the_rest_imported(ws: Path, tmp_path: Path, run):
    root = tmp_path / "proj"
    write(root / "CLAUDE.md", f"- Use the staging cluster.\n- The CI token is {GITHUB_TOKEN}\n- Tag releases.\n")
    result = run("--json", "import", str(root))
    assert result.code == 0, result
    data = result.json()["data"]
    assert data["counts"] == {"created": 2, "pending_review": 0, "noop": 0, "refused": 1, "skipped": 0}
    refused = [i for i in data["items"] if i["outcome"] == "refused"]
    assert refused == [{"source": "CLAUDE.md", "line": 2, "outcome": "refused", "gate": "sensitive_data",
                        "message": refused[0]["message"], "id": None, "scope": "project", "text": None,
                        "category": "fact", "importance": 3}]
    assert "GitHub token" in refused[0]["message"]
    assert any("CLAUDE.md:2: refused by the sensitive_data gate" in w for w in result.json()["warnings"])
    assert GITHUB_TOKEN not in result.out + result.err
    assert {m.text for m in memories(ws).values()} == {"Use the staging cluster.", "Tag releases."}
    text = run("import", str(root))  # the human form names the refusal on stderr, never the secret
    assert "refused by the sensitive_data gate" in text.err and GITHUB_TOKEN not in text.out + text.err


def test_imports_outside_the_root_too_deep_or_not_markdown_are_not_followed(ws: Path, tmp_path: Path):
    root = tmp_path / "proj"
    secret = write(tmp_path / "outside.md", "- Outside the project\n")
    write(root / "CLAUDE.md", f"- Top\n\n@{secret}\n@~/notes.md\n@package.json\n@chain1.md\n\nping @alice\n")
    write(root / "package.json", "{}\n")
    for n in range(1, 8):
        write(root / f"chain{n}.md", f"- Chain {n}\n\n@chain{n + 1}.md\n")
    result = import_rules(Ctx.open(), [root])
    texts = {m.text for m in memories(ws).values()}
    assert texts == {"Top", "ping @alice", *(f"Chain {n}" for n in range(1, 6))}
    warned = "\n".join(result.warnings)
    assert f"CLAUDE.md:3: not following @{secret}: it is outside the import root" in warned
    assert "CLAUDE.md:4: not following @~/notes.md: it is outside the import root" in warned
    assert "CLAUDE.md:5: not following @package.json: not a Markdown or text file" in warned
    assert "chain5.md:3: not following @chain6.md: imports go at most 5 levels deep" in warned
    assert "alice" not in warned


def test_claude_local_md_goes_to_the_personal_scope(ws: Path, tmp_path: Path):
    root = tmp_path / "proj"
    write(root / "CLAUDE.local.md", "- My sandbox URL is http://localhost:3000\n")
    write(root / "CLAUDE.md", "- Shared rule\n")
    import_rules(Ctx.open(), [root])
    assert {m.text: m.scope for m in memories(ws).values()} == {
        "My sandbox URL is http://localhost:3000": "user:alice", "Shared rule": "project"}


def test_export_formats(ws: Path, tmp_path: Path, run):
    assert run("remember", "Prefer tabs in Makefiles @docs/make.md", "-c", "preference").code == 0
    assert run("remember", "The API lives in src/api", "-c", "fact", "--pinned").code == 0
    assert run("remember", "Old note", "-c", "fact").code == 0
    assert run("forget", run("--json", "recall", "Old note").json()["data"]["hits"][0]["id"]).code == 0

    claude = run("export", "--format", "claude-md")
    assert claude.code == 0, claude
    assert claude.out.startswith("<!-- Generated by memcli (`memcli export --format claude-md`)")
    assert "## Preferences\n\n- Prefer tabs in Makefiles \\@docs/make.md\n" in claude.out  # never an import
    assert "## Facts\n\n- The API lives in src/api\n" in claude.out
    assert "Old note" not in claude.out

    agents = run("export", "--format", "agents-md", "--output", str(tmp_path / "AGENTS.md"))
    assert agents.code == 0, agents
    text = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert "- Prefer tabs in Makefiles @docs/make.md\n" in text and "memcli export --format agents-md" in text

    lines = run("export", "--format", "jsonl").out.splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["text"] for r in records} == {"Prefer tabs in Makefiles @docs/make.md", "The API lives in src/api"}
    assert set(records[0]) >= {"id", "scope", "status", "createdAt", "updatedAt", "provenance", "tags", "paths",
                               "supersedes", "supersededBy", "review", "path", "text"}
    everything = [json.loads(line) for line in run("export", "--format", "jsonl", "--all").out.splitlines()]
    assert {r["status"] for r in everything} == {"active", "archived"}

    bad = run("export", "--format", "yaml")
    assert bad.code == 2 and "unknown --format 'yaml'" in bad.err  # an option's value: usage (stop 34)


@pytest.mark.slow
def test_jsonl_export_then_import_restores_every_field(ws: Path, tmp_path: Path, run):
    def remember(*args: str, env: dict | None = None) -> str:
        result = run("--json", "remember", *args, env=env)
        assert result.code == 0, result
        return result.json()["data"]["id"]

    early = {"MEMCLI_NOW": "2026-01-05T10:00:00Z"}
    remember("Use pnpm for packages", "-c", "preference", "--subject", "js.pm", "-t", "tooling", "--path", "web/**",
             "-i", "4", env=early)
    old = remember("Deploys go out on Tuesdays", "-c", "decision", "--subject", "deploy.day", env=early)
    assert run("supersede", old, "Deploys go out on Thursdays", env=early).code == 0
    pending = remember("The agent thinks CI is flaky", "--source-type", "model_derived", "--run-id", "s-1", env=early)
    assert run("--actor", "bob", "approve", pending, "--reason", "checked", env=early).code == 0
    rejected = remember("Agent idea to drop tests", "--source-type", "model_derived", env=early)
    assert run("--actor", "bob", "reject", rejected, "--reason", "no", env=early).code == 0
    remember("My editor is helix", "-s", "user:alice", "--pinned", "--ttl", "30d", env=early)
    remember("Staging freeze ends soon", "--expire-at", "2026-02-01", env=early)  # expired by export time
    project = write(tmp_path / "proj/CLAUDE.md", "- Imported with its line\n").parent
    assert run("import", str(project), env=early).code == 0

    export = run("export", "--format", "jsonl", "--all", "--output", str(tmp_path / "all.jsonl"),
                 env={"MEMCLI_NOW": "2026-03-01T00:00:00Z"})
    assert export.code == 0, export
    lines = (tmp_path / "all.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(memories(ws)) == 8

    fresh = tmp_path / "fresh"
    assert run("init", str(fresh)).code == 0
    restored = run("-w", str(fresh), "--json", "import", str(tmp_path / "all.jsonl"),
                   env={"MEMCLI_NOW": "2026-03-02T00:00:00Z"})
    assert restored.code == 0, restored
    assert restored.json()["data"]["counts"] == {"created": 8, "pending_review": 0, "noop": 0, "refused": 0,
                                                  "skipped": 0}
    source = {i: m.to_dict() for i, m in memories(ws).items()}
    copy = {i: m.to_dict() for i, m in memories(fresh).items()}
    assert copy == source
    assert {m["status"] for m in copy.values()} == {"active", "superseded", "rejected"}
    assert any(m["review"] and m["review"]["decision"] == "approved" for m in copy.values())
    # each store commits on its own: the personal memory in the person's store, never in the project
    assert git(fresh, "log", "-1", "--format=%s").startswith("memcli: import 7 memories (project)")
    assert "(user:alice)" in git(personal_store(fresh), "log", "-1", "--format=%s")
    assert "helix" not in git(fresh, "log", "--all", "-p")

    head = git(fresh, "rev-parse", "HEAD")
    again = run("-w", str(fresh), "--json", "import", str(tmp_path / "all.jsonl")).json()["data"]
    assert again["counts"]["noop"] == 8 and again["commit"] is None
    assert git(fresh, "rev-parse", "HEAD") == head


def test_jsonl_import_refuses_bad_lines_and_other_users_scopes(ws: Path, tmp_path: Path, run):
    record = {"id": "01jdxq5k7m2vaaaaaaaaaaaaaa", "scope": "user:bob", "category": "fact", "status": "active",
              "importance": 3, "createdAt": "2026-01-01T00:00:00Z", "text": "Bob's own note"}
    good = dict(record, id="01jdxq5k7m2vbbbbbbbbbbbbbb", scope="project", text="A restored fact")
    path = write(tmp_path / "in.jsonl", "\n".join([json.dumps(record), "not json", json.dumps({"id": "x"}),
                                                    json.dumps(good)]) + "\n")
    result = run("--json", "import", str(path))
    assert result.code == 0, result
    items = result.json()["data"]["items"]
    assert [(i["line"], i["outcome"], i["gate"]) for i in items] == [
        (1, "refused", "validation"), (2, "refused", "validation"), (3, "refused", "validation"),
        (4, "created", None)]
    assert "personal to bob" in items[0]["message"]
    assert [m.id for m in memories(ws).values()] == ["01jdxq5k7m2vbbbbbbbbbbbbbb"]


def test_export_never_includes_another_users_personal_memories(ws: Path, run):
    assert run("remember", "Alice keeps her notes in Obsidian", "-s", "user:alice").code == 0
    assert run("remember", "The project uses Postgres 16").code == 0
    for fmt in (f for f in rule_files.FORMATS if f != "cursor"):  # cursor: files only (test_rule_files_round_trip)
        as_bob = run("--actor", "bob", "export", "--format", fmt, "--all")
        assert as_bob.code == 0, as_bob
        assert "Postgres 16" in as_bob.out and "Obsidian" not in as_bob.out
        assert "Obsidian" in run("export", "--format", fmt, "--personal").out  # alice sees her own
    refused = run("--actor", "bob", "export", "--format", "jsonl", "--scope", "user:alice")
    assert refused.code == 5 and "personal to alice" in refused.err and refused.out == ""


def test_unknown_paths_are_usage_errors(ws: Path, tmp_path: Path, run):
    missing = run("import", str(tmp_path / "nope"))
    assert missing.code == 2 and "no such file or folder" in missing.err
    other = write(tmp_path / "main.py", "print()\n")
    assert run("import", str(other)).code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("--json", "import", str(empty))
    assert result.code == 0 and "no rule files in" in result.json()["warnings"][0]


# --- the parser on its own ---------------------------------------------------------------


def parse(text: str, **kw) -> list[tuple[str, int, list[str]]]:
    items, _ = rule_files.parse_markdown(text, "x.md", **kw)
    return [(i.text, i.line, i.tags) for i in items]


def test_nested_bullets_stay_with_their_parent_and_ordered_items_count():
    assert parse("- Frontend:\n  - use vitest\n    - with jsdom\n1. First\n2) Second\n+ Plus\n") == [
        ("Frontend:\n- use vitest\n  - with jsdom", 1, []), ("First", 4, []), ("Second", 5, []), ("Plus", 6, [])]


def test_a_fence_joins_the_item_before_it_and_is_skipped_alone():
    text = "# Build\n```\nmake orphan\n```\n- Build with:\n  ```sh\n  make all\n  ```\n  then deploy.\n"
    assert parse(text) == [("Build with:\n```sh\nmake all\n```\nthen deploy.", 5, ["build"])]


def test_setext_headings_comments_and_tables():
    text = "Setext Title\n============\n<!-- a note\nover lines -->\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert parse(text) == [("| a | b |\n|---|---|\n| 1 | 2 |", 5, ["setext-title"])]


def test_imports_are_found_outside_code_only():
    assert rule_files.find_imports("See @a.md, `@b.md` and ``x @c.md``; mail me@d.md or @e/f.md.") == ["a.md", "e/f.md"]
    items, imports = rule_files.parse_markdown("@only.md\n\n```\n@fenced.md\n```\n", "x.md", follow_imports=True)
    assert imports == [(1, "only.md")] and [i.text for i in items] == ["@only.md\n```\n@fenced.md\n```"]
    parsed = rule_files.parse_rule_file("claude", "@only.md\n\n```\n@fenced.md\n```\n", "x.md")
    assert parsed.items == [] and [(i.line, i.skipped) for i in parsed.skipped] == [(1, "pointer")]


def test_cursor_front_matter_that_is_not_yaml_is_read_leniently():
    parsed = rule_files.parse_rule_file("cursor", "---\nglobs: *.tsx, web/**\nalwaysApply: true\n---\n- Rule\n",
                                        "r.mdc")
    assert (parsed.paths, parsed.pinned, parsed.items[0].line) == (["*.tsx", "web/**"], True, 5)
    assert parsed.warnings and "not valid YAML" in parsed.warnings[0]
    listed = rule_files.parse_rule_file("cursor", "---\nglobs:\n  - a/**\n  - b/*.py\nalwaysApply: false\n---\nX\n",
                                        "r.mdc")
    assert (listed.paths, listed.pinned) == (["a/**", "b/*.py"], False)
