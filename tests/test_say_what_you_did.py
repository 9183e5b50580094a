"""Small surprises removed: memcli says what a default did (issue 14, "Say what you did")."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_memcli


def test_a_default_ttl_is_printed(ws: Path) -> None:
    out = run_memcli("-w", str(ws), "remember", "Ship the v2 importer this sprint", "--category", "goal")
    assert out.code == 0, out
    assert "expires" in out.out and "[ttl] default for goal (30d" in out.out
    chosen = run_memcli("-w", str(ws), "remember", "Finish the audit by spring", "--category", "goal", "--ttl", "90d")
    assert "[ttl] default" not in chosen.out


@pytest.mark.parametrize("first,second,words", [
    ("Enable strict mode", "Disable strict mode", "disable / enable"),
    ("Always run the tests before pushing", "Never run the tests before pushing", "never / always"),
    ("Allow force pushes to the release branch", "Forbid force pushes to the release branch", "forbid / allow"),
    ("部署时启用缓存", "部署时禁用缓存", "部署时禁用缓存"),
    # clause by clause (newcomer, stop 34): each text flips twice, each clause once against zero
    ("Never rebase main; always merge.", "Always rebase main; never merge.", "one says the opposite"),
])
@pytest.mark.slow
def test_an_opposite_is_reported_at_write_time_with_the_other_id(ws: Path, first: str, second: str,
                                                                   words: str) -> None:
    one = run_memcli("-w", str(ws), "--json", "remember", first).json()["data"]["id"]
    out = run_memcli("-w", str(ws), "remember", second)
    assert out.code == 0, out
    assert f"possible conflict with {one}" in out.err and words in out.err
    assert f"memcli supersede {one} TEXT" in out.err and f"memcli forget {one}" in out.err


def test_agreeing_memories_are_not_reported(ws: Path) -> None:
    assert run_memcli("-w", str(ws), "remember", "Enable strict mode").code == 0
    out = run_memcli("-w", str(ws), "remember", "Enable strict mode in the CI job too")
    assert "possible conflict" not in out.err
    assert run_memcli("-w", str(ws), "remember", "Never rebase main; always merge.").code == 0
    out = run_memcli("-w", str(ws), "remember", "Never rebase main, always merge the PR.")
    assert "possible conflict" not in out.err, out


def test_export_has_a_default_format_and_leaves_out_personal_scopes(ws: Path) -> None:
    assert run_memcli("-w", str(ws), "remember", "Lint with ruff").code == 0
    assert run_memcli("-w", str(ws), "remember", "My editor is helix", "--scope", "user:alice").code == 0
    out = run_memcli("-w", str(ws), "export")
    assert out.code == 0, out
    assert "Lint with ruff" in out.out and "helix" not in out.out
    assert "left out 1 personal memories" in out.err
    mine = run_memcli("-w", str(ws), "export", "--personal")
    assert "helix" in mine.out and "# Personal (user:alice)" in mine.out and "CLAUDE.local.md" in mine.out
    assert mine.out.index("Lint with ruff") < mine.out.index("helix")
    lossless = run_memcli("-w", str(ws), "export", "--format", "jsonl")
    assert "helix" in lossless.out  # a backup for import keeps every scope


def test_a_hand_written_file_with_a_short_name_is_accepted(ws: Path) -> None:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ci.md").write_text("Run CI locally with make ci\n", encoding="utf-8")
    listed = run_memcli("-w", str(ws), "list")
    assert "make ci" in listed.out and "skipped" not in listed.err
    shown = run_memcli("-w", str(ws), "show", "ci")
    assert shown.code == 0 and "make ci" in shown.out
    assert run_memcli("-w", str(ws), "doctor").code == 0
