"""Issue 21, the read path at 100,000 memories: what the context block costs must not grow
with the store, and must say the same as before.

- the files in play at a repository's root come from one ``git status`` over the root's
  entries besides memcli's own (never a search of ``memories/`` for untracked files): a
  changed, an untracked, a deleted file, in-tree and beside a workspace folder, and a read
  never rewrites git's index;
- the block's pool is read in the order of an SQL index (``db.POOL_INDEX``), made by the
  first full sync of an index made before it; without it the same block;
- the block's count is kept beside the index under its ``changes`` counter and holds only
  until the first expiry among the memories it counted.

Real parts: real git repositories, the real CLI, real SQLite files. No timing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from memcli.service.context import changed_files
from tests.conftest import git


def _rooted(project: Path, run) -> None:
    """``memcli init`` at the root of ``project`` (README.md tracked), plus tracked code in ``web/``."""
    (project / "web" / "src").mkdir(parents=True)
    (project / "web" / "src" / "app.ts").write_text("export {}\n", encoding="utf-8")
    (project / "docs").mkdir()
    (project / "docs" / "guide.md").write_text("# guide\n", encoding="utf-8")
    git(project, "add", "web", "docs")
    git(project, "commit", "-qm", "code")
    assert run("init", cwd=project).code == 0


def test_files_in_play_at_a_root_workspace_are_every_change_but_memclis_own(project, run):
    _rooted(project, run)
    env = {"MEMCLI_WORKSPACE": str(project)}
    assert run("remember", "A memory to commit.", cwd=project, env=env).code == 0
    assert changed_files(project, project) == []
    (project / "web" / "src" / "app.ts").write_text("export const x = 1\n", encoding="utf-8")  # changed
    (project / "api").mkdir()
    (project / "api" / "main.go").write_text("package main\n", encoding="utf-8")  # a new folder
    (project / "notes.txt").write_text("todo\n", encoding="utf-8")  # a new file at the root
    (project / "docs" / "guide.md").unlink()
    (project / "docs").rmdir()  # a whole top-level entry gone: only HEAD still names it
    dropped = project / "memories" / "project" / "by-hand.md"
    dropped.parent.mkdir(parents=True, exist_ok=True)
    dropped.write_text("A file dropped by hand.\n", encoding="utf-8")  # memcli's own: never in play
    (project / "archive" / "old.md").parent.mkdir(exist_ok=True)
    (project / "archive" / "old.md").write_text("x\n", encoding="utf-8")
    assert sorted(changed_files(project, project)) == ["api/", "docs/guide.md", "notes.txt", "web/src/app.ts"]
    git(project, "add", "notes.txt")
    git(project, "mv", "web/src/app.ts", "web/src/main.ts")  # a staged rename: the new name
    assert sorted(changed_files(project, project)) == ["api/", "docs/guide.md", "notes.txt", "web/src/main.ts"]


def test_files_in_play_beside_a_workspace_folder_at_any_depth(project, run):
    (project / "tools" / "lint").mkdir(parents=True)
    (project / "tools" / "lint" / "rules.py").write_text("RULES = []\n", encoding="utf-8")
    git(project, "add", "tools")
    git(project, "commit", "-qm", "tools")
    for workspace in (project / "mem", project / "tools" / "mem"):
        assert run("init", str(workspace), cwd=project).code == 0
        assert run("remember", "Kept in the workspace folder.", env={"MEMCLI_WORKSPACE": str(workspace)}).code == 0
        (workspace / "stray.txt").write_text("inside the workspace\n", encoding="utf-8")
        assert changed_files(project, workspace) == [], workspace  # the workspace folder is left out whole
        (workspace / "stray.txt").unlink()
    (project / "tools" / "lint" / "rules.py").write_text("RULES = [1]\n", encoding="utf-8")
    (project / "tools" / "new.sh").write_text("#!/bin/sh\n", encoding="utf-8")  # beside tools/mem
    (project / "README.md").unlink()
    (project / "mem" / "stray.txt").write_text("another workspace's file is code here\n", encoding="utf-8")
    expected = ["README.md", "tools/lint/rules.py", "tools/new.sh"]
    assert sorted(changed_files(project, project / "tools" / "mem")) == sorted([*expected, "mem/stray.txt"])
    assert sorted(changed_files(project, project / "mem")) == expected


def test_the_block_at_a_root_brings_an_untracked_and_a_deleted_files_memories_first(project, run):
    _rooted(project, run)
    env = {"MEMCLI_WORKSPACE": str(project)}
    for i in range(4):
        assert run("remember", f"Important general rule {i}.", "--importance", "4", cwd=project, env=env).code == 0
    ids = {}
    for glob in ("api/**", "docs/**", "memories/**"):
        ids[glob] = run("--json", "remember", f"About {glob} only.", "--importance", "1", "--path", glob,
                        cwd=project, env=env).json()["data"]["id"]
    included = run("--json", "context", cwd=project, env=env).json()["data"]["included"]
    assert all(included.index(i) >= 4 for i in ids.values())  # nothing in play yet
    (project / "api").mkdir()
    (project / "api" / "main.go").write_text("package main\n", encoding="utf-8")
    git(project, "rm", "-rq", "docs")
    included = run("--json", "context", cwd=project, env=env).json()["data"]["included"]
    assert set(included[:2]) == {ids["api/**"], ids["docs/**"]}, included
    assert included.index(ids["memories/**"]) >= 4  # the memories' own files are never in play


def test_a_read_at_a_root_never_rewrites_gits_index(project, run):
    _rooted(project, run)
    assert run("remember", "The web app is strict TypeScript.", "--path", "web/**", cwd=project,
               env={"MEMCLI_WORKSPACE": str(project)}).code == 0  # a path memory: the files in play are asked for
    index = project / ".git" / "index"
    code = project / "web" / "src" / "app.ts"
    stamp = index.stat().st_mtime_ns
    os.utime(code, ns=(stamp + 5_000_000_000, stamp + 5_000_000_000))  # same content, newer mtime: stat-dirty
    before = (index.stat().st_mtime_ns, index.read_bytes())
    start = {"session_id": "s-lock", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(project)}
    assert run("hook", "claude", "session-start", input=json.dumps(start), cwd=project,
               env={"MEMCLI_WORKSPACE": str(project)}).code == 0
    assert run("context", cwd=project, env={"MEMCLI_WORKSPACE": str(project)}).code == 0
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before  # git status did not refresh it on disk
    assert git(project, "status", "--porcelain") == ""  # and the file is clean all the same


def _omitted(run, **env: str) -> int:
    data = run("--json", "context", "--budget", "300", env=env).json()["data"]
    return data["omitted"] + len(data["included"])


def test_the_blocks_count_follows_writes_hand_edits_expiry_and_a_rebuild(ws, run):
    june, later = {"MEMCLI_NOW": "2029-06-01T00:00:00Z"}, {"MEMCLI_NOW": "2030-06-01T00:00:00Z"}
    for text in ("Use ruff for linting.", "Run mypy in strict mode.", "Tabs are never used."):
        assert run("remember", text, env=june).code == 0
    short = run("--json", "remember", "The demo server is up until New Year.", "--expire-at", "2030-01-01",
                env=june).json()["data"]["id"]
    assert _omitted(run, **june) == 4
    kept = ws / ".cache" / "index.sqlite3.counts"
    assert 4 in [v[0] for v in json.loads(kept.read_text(encoding="utf-8")).values() if isinstance(v, list)]
    assert _omitted(run, **june) == 4  # the kept count
    assert _omitted(run, **later) == 3  # past the expiry: counted again
    assert _omitted(run, **june) == 4  # and before it again
    assert run("remember", "Commit messages are in English.", env=june).code == 0
    assert _omitted(run, **june) == 5
    assert run("forget", short, env=june).code == 0
    assert _omitted(run, **june) == 4
    path = next(p for p in (ws / "memories").rglob("*.md") if "Tabs are never used" in p.read_text(encoding="utf-8"))
    path.write_text(path.read_text(encoding="utf-8").replace("status: active", "status: archived"), encoding="utf-8")
    assert _omitted(run, **june) == 3  # a hand edit (the index's changes counter moved)
    assert run("index", "rebuild").code == 0
    assert _omitted(run, **june) == 3
    kept.write_text("{not json", encoding="utf-8")
    assert _omitted(run, **june) == 3  # an unreadable file is no count


def test_the_pool_index_is_made_for_an_old_index_and_changes_no_block(ws, run):
    for i in range(30):
        pinned = ["--pinned"] if i in (7, 19) else []
        assert run("remember", f"Rule number {i} of the house style.", "--importance", str(1 + i % 5),
                   *pinned).code == 0
    with_index = run("--json", "context").json()["data"]
    database = ws / ".cache" / "index.sqlite3"
    db = sqlite3.connect(database)
    db.execute("DROP INDEX docs_pool")  # an index made before POOL_INDEX existed
    db.commit()
    db.close()
    assert run("--json", "context").json()["data"] == with_index  # sorted without it: the same block
    assert run("index", "status").code == 0  # a full sync makes it
    db = sqlite3.connect(database)
    plan = " ".join(str(row) for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT record FROM docs d WHERE d.status IN ('active') AND d.id IS NOT NULL"
        " ORDER BY d.pinned DESC, d.importance DESC, d.updated DESC, d.id LIMIT 400"))
    db.close()
    assert "docs_pool" in plan and "TEMP B-TREE" not in plan
    assert run("--json", "context").json()["data"] == with_index


def test_the_count_of_unreadable_files_follows_hand_changes(ws, run):
    """The "skipped N more unreadable files" count is kept too (``index.kept``): right after each change."""
    import re

    folder = ws / "memories" / "project" / "broken"
    folder.mkdir(parents=True)
    for i in range(8):
        (folder / f"bad-{i}.md").write_text("---\nscope: [unclosed\n---\nbroken\n", encoding="utf-8")

    def more() -> int:
        found = re.search(r"skipped (\d+) more unreadable files", run("list").err)
        return int(found.group(1)) if found else 0

    first = more()
    assert first > 0 and more() == first  # the second from the kept count
    (folder / "bad-8.md").write_text("---\nscope: [unclosed\n---\nbroken\n", encoding="utf-8")
    assert more() == first + 1
    (folder / "bad-0.md").unlink()
    (folder / "bad-1.md").unlink()
    assert more() == first - 1


def test_the_early_git_hint_follows_the_pool_and_changes_no_block(project, run):
    """git starts before the index's work when the last block's pool held a path-scoped memory
    (``.cache/context-paths``, issue 21): a hint of timing only. The same block with it, without
    it, and stale (set while no memory has paths, or removed while one has); git is not asked
    for a pool without paths."""
    _rooted(project, run)
    env = {"MEMCLI_WORKSPACE": str(project)}
    hint = project / ".memcli" / ".cache" / "context-paths"  # the workspace `init` made at the root
    general = run("--json", "remember", "A general rule for everything.", cwd=project, env=env).json()["data"]["id"]

    def block() -> list[str]:
        return run("--json", "context", cwd=project, env=env).json()["data"]["included"]

    assert block() == [general] and not hint.exists()  # no path-scoped memory: no git, no hint
    hint.touch()  # stale: git started early, then stopped unasked
    assert block() == [general] and not hint.exists()
    about = run("--json", "remember", "About the api only.", "--importance", "1", "--path", "api/**",
                cwd=project, env=env).json()["data"]["id"]
    (project / "api").mkdir()
    (project / "api" / "main.go").write_text("package main\n", encoding="utf-8")
    assert block() == [about, general] and hint.exists()  # asked once the pool is known: the hint set
    assert block() == [about, general] and hint.exists()  # started early: the same block
    hint.unlink()
    assert block() == [about, general] and hint.exists()
    assert "context-paths" not in git(project / ".memcli", "status", "--porcelain", "--ignored=no")  # cache: ignored
