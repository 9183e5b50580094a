"""Rule-file import and export on real CLAUDE.md files (issue 19, item 7): categories from the
text, boilerplate and pointer lines left out, emphasis raising importance, the ids a dry run
shows, and ``paths`` kept by export so that import -> export -> import finds no near duplicates.

The real files are in ``tests/fixtures/rules`` (see its README). The word rules are
table-driven, in-process; the CLI runs in a subprocess where the command is the point.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git
from memcli.agents import rule_files, rulekinds
from memcli.service import Ctx
from memcli.service.import_export import export_rules, import_rules, write_export
from memcli.store.files import MemoryFiles

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
REPORAILS = FIXTURES / "reporails-cli"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def stored(ws: Path) -> dict[str, object]:
    return {m.text: m for m in MemoryFiles(ws).scan().memories}


# --- what one line is, in English and Chinese ------------------------------------------------

@pytest.mark.parametrize("text, tags, expected", [
    # not memories
    ("This file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.", [],
     ("boilerplate", 3)),
    ("This file provides guidance to Claude Code when working with code in this repository. See the `.claude/` "
     "directory for detailed documentation:", [], ("boilerplate", 3)),
    ("See @docs/architecture.md", [], ("pointer", 3)),
    ("@docs/specs/arch.md for full architecture details.", ["architecture"], ("pointer", 3)),
    ("See [AGENTS.md](./AGENTS.md) for repository guidelines, architecture, commands, and conventions.", [],
     ("pointer", 3)),
    ("**Testing**: @docs/TESTING.md", [], ("pointer", 3)),
    ("Shared rules live in @docs/shared.md", [], ("pointer", 3)),
    ("本文件为 Claude Code 提供指导。", [], ("boilerplate", 3)),
    ("详见 `docs/architecture.md`。", [], ("pointer", 3)),
    # pointers that are instructions, and rules that name a file, stay
    ("Read `packages/content/AGENTS.md` before writing anything under that directory.", [], ("preference", 3)),
    ("NEVER edit files in `gen/` — see docs/gen.md", [], ("preference", 4)),
    ("Use pnpm for packages @docs/pnpm.md", [], ("preference", 3)),
    # categories
    ("Type hints on every public function", ["code-style"], ("preference", 3)),
    ("The API is a small Flask app that serves the dashboard.", [], ("fact", 3)),
    ("Run the tests with `make test`.", [], ("procedure", 3)),
    ("`pnpm dev` - Start development server with hot reload", ["commands"], ("procedure", 3)),
    ("Build/Install: `pip install -e .`", ["commands"], ("procedure", 3)),
    ("We chose SQLite over Postgres because the CLI must run offline.", [], ("decision", 3)),
    ("**Entry**: A single piece of authored content in a collection.", ["language"], ("glossary", 3)),
    ("Naming conventions: `snake_case` for functions, `PascalCase` for classes", ["code-style"], ("preference", 3)),
    ("代码统一使用四个空格缩进。", [], ("preference", 3)),
    ("API 服务位于 `services/api` 目录。", [], ("fact", 3)),
    ("提交前运行 `make lint`。", [], ("procedure", 3)),
    ("我们决定用 SQLite，因为命令行要离线运行。", [], ("decision", 3)),
    # emphasis
    ("IMPORTANT: never push to main.", [], ("preference", 5)),
    ("NEVER create files unless they're absolutely necessary.", [], ("preference", 4)),
    ("You MUST read the backbone first.", [], ("preference", 4)),
    ("Do what has been asked; nothing more, nothing less.", ["important-instruction-reminders"], ("preference", 4)),
    ("禁止直接推送到 main 分支。", [], ("preference", 4)),
    ("重要：提交前必须运行 `make lint`。", [], ("procedure", 5)),
    ("never push to main", [], ("preference", 3)),  # lower case is how rules are written, not emphasis
])
def test_what_a_line_of_a_rule_file_is(text, tags, expected):
    kind = rulekinds.classify(text, tags)
    assert (kind.skipped or kind.category, kind.importance) == expected


def test_a_paragraph_keeps_its_sentences_around_boilerplate_and_pointers():
    kind = rulekinds.classify("This file provides guidance to Claude Code. Always use uv. See `docs/uv.md` for more.")
    assert (kind.text, kind.category, kind.skipped) == ("Always use uv.", "preference", None)


# --- the real CLAUDE.md, imported and exported back --------------------------------------------

REPORAILS_CATEGORIES = {"preference": 44, "fact": 16, "procedure": 3}
REPORAILS_SKIPPED = [("CLAUDE.md", 72, "pointer"), ("CLAUDE.md", 74, "pointer"), ("CLAUDE.md", 102, "pointer")]
REPORAILS_PATHS = {
    ".claude/rules/memcli-checks-readonly.md": ["src/reporails_cli/bundled/**"],
    ".claude/rules/memcli-documentation.md": ["docs/*.md", "README.md"],
    ".claude/rules/memcli-instruction-file-style.md": ["CLAUDE.md", ".claude/rules/**"],
    ".claude/rules/memcli-specs.md": ["docs/specs/**"],
    ".claude/rules/memcli-writing-rules.md": [".claude/rules/**"],
}


@pytest.mark.slow
def test_real_claude_md_imported_and_exported_back_without_near_duplicates(ws: Path, tmp_path: Path, run):
    first = import_rules(Ctx.open(), [REPORAILS])
    assert [(i.source, i.line, i.gate) for i in first.items if i.outcome == "skipped"] == REPORAILS_SKIPPED
    assert first.counts() == {"created": 63, "pending_review": 0, "noop": 1, "refused": 0, "skipped": 3}
    memories = stored(ws)
    categories: dict[str, int] = {}
    for memory in memories.values():
        categories[memory.category] = categories.get(memory.category, 0) + 1
    assert categories == REPORAILS_CATEGORIES
    assert memories["Type annotations required on public function signatures"].category == "preference"
    assert memories["**OpenGrep-Powered**: Deterministic pattern matching"].category == "fact"
    assert memories["`uv run poe qa` — Full QA including integration tests"].category == "procedure"
    assert {t: m.importance for t, m in memories.items() if m.importance != 3} == {
        "**BEFORE** running `find`, `grep`, `ls`, or glob to locate project files, you **MUST** read "
        "`.reporails/backbone.yml` first — it defines all project paths, avoiding stale exploratory searches. You "
        "**MUST NOT** use exploratory commands to discover paths that the backbone already provides — they produce "
        "inconsistent results and waste tokens.": 4,
        "NEVER execute destructive or irreversible operations without explicit user confirmation — data loss "
        "cannot be undone": 4,
        "NEVER write ad-hoc scripts — use the project's `uv`/`poe` toolchain (`uv run`, `uv run poe qa_fast`, etc.) "
        "to keep tooling consistent": 4,
        "ALWAYS run `uv run poe qa_fast` after code changes before considering work complete — it catches "
        "regressions early": 4,
        "NEVER modify bundled config files without explicit human instruction — instead, describe the intended "
        "change and let the user decide.": 4,
        "Every line MUST be actionable or informative — passive filler wastes context tokens": 4}
    assert not any("See `docs" in t or t.startswith("@") or "see those files" in t for t in memories)
    assert memories["**OpenGrep-Powered**: Uses OpenGrep for deterministic pattern matching"].provenance.source == \
        "docs/specs/arch.md"  # the @import was followed

    out = tmp_path / "exported"
    exported = run("--json", "export", "--dir", str(out))
    assert exported.code == 0, exported
    files = {Path(f["path"]).relative_to(out).as_posix(): f for f in exported.json()["data"]["files"]}
    assert {name: f["paths"] for name, f in files.items() if f["paths"]} == REPORAILS_PATHS
    assert files["CLAUDE.md"]["memories"] == 63 - sum(files[n]["memories"] for n in REPORAILS_PATHS)
    checks = (out / ".claude/rules/memcli-checks-readonly.md").read_text(encoding="utf-8")
    assert checks.startswith('---\npaths:\n  - "src/reporails_cli/bundled/**"\n---\n<!-- Generated by memcli')
    assert "| `ails check [PATH]` | Validate instruction files |" in (out / "CLAUDE.md").read_text(encoding="utf-8")

    again = import_rules(Ctx.open(), [out])
    assert again.counts() == {"created": 0, "pending_review": 0, "noop": 63, "refused": 0, "skipped": 0}
    assert not [w for w in again.warnings if "near duplicate" in w]
    assert {(m.text, tuple(m.paths)) for m in stored(ws).values()} == \
        {(m.text, tuple(m.paths)) for m in memories.values()}


def test_boilerplate_and_imports_of_a_real_claude_md_pair(ws: Path):
    """spectralcodex: both files open with the boilerplate sentence; CLAUDE.md imports
    .claude/CLAUDE.md, whose own imports resolve (relative to it) to files that do not exist."""
    result = import_rules(Ctx.open(), [FIXTURES / "spectralcodex"], apply=False)
    assert [(i.source, i.line, i.gate) for i in result.items if i.outcome == "skipped"] == [
        ("CLAUDE.md", 3, "boilerplate"), ("CLAUDE.md", 5, "pointer"), (".claude/CLAUDE.md", 3, "boilerplate"),
        (".claude/CLAUDE.md", 5, "pointer")]
    [kept] = [i for i in result.items if i.outcome == "created"]
    assert (kept.source, kept.category, kept.importance) == (".claude/CLAUDE.md", "preference", 4)
    assert kept.text.startswith("Do what has been asked; nothing more, nothing less. NEVER create files")
    assert ".claude/CLAUDE.md:5: not following @.claude/commands.md: no such file .claude/.claude/commands.md " \
           "(an @import is relative to the file that holds it)" in result.warnings


# --- ids, repository bounds, nested files ----------------------------------------------------

def test_the_dry_run_shows_the_ids_the_real_run_writes(ws: Path, tmp_path: Path, run):
    project = write(tmp_path / "proj/CLAUDE.md", "# Style\n- Use tabs.\n- NEVER push to main.\n").parent
    dry = run("--json", "import", str(project), "--dry-run")
    assert dry.code == 0, dry
    planned = [i["id"] for i in dry.json()["data"]["items"]]
    assert len(planned) == 2 and all(planned) and stored(ws) == {}
    shown = run("import", str(project), "--dry-run")
    assert all(memory_id in shown.out for memory_id in planned)
    real = run("--json", "import", str(project))
    assert real.code == 0, real
    assert [i["id"] for i in real.json()["data"]["items"]] == planned
    assert sorted(m.id for m in stored(ws).values()) == sorted(planned)
    assert {m.text: (m.category, m.importance) for m in stored(ws).values()} == {
        "Use tabs.": ("preference", 3), "NEVER push to main.": ("preference", 4)}


def test_imports_stay_inside_the_repository(ws: Path, tmp_path: Path):
    repo = tmp_path / "repo"
    git(repo.parent, "init", "-q", str(repo))
    write(repo / "docs/shared.md", "- Shared inside the repository\n")
    write(tmp_path / "outside.md", "- Outside the repository\n")
    sub = write(repo / "app/CLAUDE.md", "- App rule\n\n@../docs/shared.md\n@../../outside.md\n").parent
    result = import_rules(Ctx.open(), [sub / "CLAUDE.md"])
    assert {m.text: m.provenance.source for m in stored(ws).values()} == {
        "App rule": "CLAUDE.md", "Shared inside the repository": "docs/shared.md"}
    assert "CLAUDE.md:4: not following @../../outside.md: it is outside the repository" in result.warnings


def test_nested_agents_md_and_gemini_md_are_read_for_their_folder(ws: Path, tmp_path: Path):
    root = tmp_path / "proj"
    write(root / "AGENTS.md", "- Use uv.\n")
    write(root / "services/api/AGENTS.md", "- Every handler validates its input.\n")
    write(root / "node_modules/pkg/AGENTS.md", "- Not ours.\n")
    write(root / "GEMINI.md", "- Prefer small pull requests.\n\n@docs/more.md\n")
    write(root / "docs/more.md", "- The docs site deploys from gh-pages.\n")
    import_rules(Ctx.open(), [root])
    assert {m.text: (m.paths, m.category) for m in stored(ws).values()} == {
        "Use uv.": ([], "preference"), "Every handler validates its input.": (["services/api/**"], "preference"),
        "Prefer small pull requests.": ([], "preference"), "The docs site deploys from gh-pages.": ([], "fact")}


# --- export keeps paths as each format allows --------------------------------------------------

def scoped_memories() -> None:
    """Five memories, four with paths (in-process: the service's ``remember``)."""
    from memcli.service.write import WriteOptions, write_batch

    ctx = Ctx.open()
    items = [("Use pnpm for every package.", WriteOptions(category="preference")),
             ("Every endpoint validates its input.", WriteOptions(paths=["src/api/**/*.ts"])),
             ("Handlers return typed errors.", WriteOptions(paths=["src/api/**/*.ts"])),
             ("Components are function components.", WriteOptions(paths=["web/**", "*.tsx"], pinned=True)),
             ("Migrations are reversible.", WriteOptions(paths=["db/migrations/**"], category="fact"))]
    results, _ = write_batch(ctx, "remember", items)
    assert all(r.outcome == "created" for r in results)


def test_export_agents_md_nests_by_folder_and_cursor_keeps_globs(ws: Path, tmp_path: Path):
    scoped_memories()
    agents = export_rules(Ctx.open(), "agents-md", project=True)
    assert {f.path: (f.memories, f.paths) for f in agents.files} == {
        "AGENTS.md": (2, []), "db/migrations/AGENTS.md": (1, ["db/migrations/**"]),
        "src/api/AGENTS.md": (2, ["src/api/**/*.ts"])}
    assert agents.unscoped == 1  # web/** and *.tsx share no folder: in the main file, said
    cursor = export_rules(Ctx.open(), "cursor", project=True)
    texts = {f.path: f.text for f in cursor.files}
    assert sorted(texts) == [".cursor/rules/memcli-db-migrations.mdc", ".cursor/rules/memcli-src-api.mdc",
                             ".cursor/rules/memcli-web.mdc", ".cursor/rules/memcli.mdc"]
    assert texts[".cursor/rules/memcli-web.mdc"].startswith(
        '---\ndescription: "Memories kept by memcli for web/**, *.tsx"\nglobs: "web/**,*.tsx"\nalwaysApply: true\n---')
    for fmt, files in (("agents-md", agents), ("cursor", cursor)):
        folder = tmp_path / fmt
        write_export(files, folder)
        again = import_rules(Ctx.open(), [folder])
        assert again.counts()["created"] == 0 and not [w for w in again.warnings if "near duplicate" in w], fmt
    reread = rule_files.parse_rule_file("cursor", texts[".cursor/rules/memcli-web.mdc"], ".cursor/rules/memcli-web.mdc")
    assert (reread.paths, reread.pinned, [i.text for i in reread.items]) == (
        ["web/**", "*.tsx"], True, ["Components are function components."])


def test_export_never_overwrites_a_rule_file_memcli_did_not_write(ws: Path, tmp_path: Path, run):
    scoped_memories()
    own = write(tmp_path / "proj/CLAUDE.md", "# Mine\n- Hand-written.\n")
    refused = run("export", "--dir", str(own.parent))
    assert refused.code == 2 and refused.err.startswith("memcli: error: ") and "memcli did not write it" in refused.err
    assert own.read_text(encoding="utf-8") == "# Mine\n- Hand-written.\n" and not (own.parent / ".claude").exists()
    stdout = run("export")
    assert stdout.code == 0 and "4 memories with paths are written without them on stdout" in stdout.err
    cursor = run("export", "--format", "cursor")
    assert cursor.code == 2 and "--dir" in cursor.err and cursor.out == ""
    assert json.loads(run("--json", "export", "--dir", str(tmp_path / "fresh")).out)["ok"] is True
