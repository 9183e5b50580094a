"""Issue 22 point 8: nothing is written that memcli would refuse to read. Counts and sizes of tags and
paths are checked at write (CLI and MCP): one line, exit 5, nothing written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession

from conftest import run_memcli
from test_mcp_server import drive, text_of


def head(ws: Path) -> str:
    return subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("args,words", [
    ([a for i in range(5_000) for a in ("--tag", f"t{i}")], "too many tags: 5000, over the limit of 50"),
    ([a for i in range(51) for a in ("--path", f"src/{i}/*.py")], "too many paths: 51, over the limit of 50"),
    (["--tag", "x" * 201], "a tag has 201 characters, over the limit of 200"),
    (["--path", "p/" * 600], "a path has 1200 characters, over the limit of 1024"),
])
def test_the_cli_refuses_labels_over_the_bounds(ws: Path, args: list[str], words: str) -> None:
    before = head(ws)
    out = run_memcli("-w", str(ws), "remember", "Tagged within reason", *args)
    assert out.code == 5, out
    assert words in out.err and len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    assert head(ws) == before and not list((ws / "memories").rglob("*.md"))


def test_fifty_tags_are_still_fine(ws: Path) -> None:
    args = [a for i in range(50) for a in ("--tag", f"t{i}")]
    out = run_memcli("-w", str(ws), "--json", "remember", "Fifty tags", *args)
    assert out.code == 0, out
    assert run_memcli("-w", str(ws), "show", out.json()["data"]["id"]).code == 0


@pytest.mark.slow
def test_mcp_refuses_labels_over_the_bounds(ws: Path) -> None:
    before = head(ws)

    async def steps(client: ClientSession) -> None:
        many = await client.call_tool("remember", {"text": "Too many tags", "scope": "user:alice",
                                                   "tags": [f"t{i}" for i in range(51)]})
        assert many.is_error, text_of(many)
        long = await client.call_tool("remember", {"text": "A long path", "scope": "user:alice",
                                                   "paths": ["p/" * 600]})
        assert long.is_error, text_of(long)

    drive(ws, steps)
    assert head(ws) == before


def test_a_file_over_the_read_cap_is_refused_whole(ws: Path) -> None:
    from memcli.store.files import MAX_FILE_BYTES

    before = head(ws)
    wide = "\U00020000"  # 4 bytes in UTF-8: labels within their bounds still make a file over the read cap
    args = [a for i in range(50) for a in ("--path", f"{i:02d}/" + wide * 1_000)]
    args += [a for i in range(50) for a in ("--tag", f"{i:02d}" + wide * 190)]
    out = run_memcli("-w", str(ws), "remember", wide * 19_000, *args)
    assert out.code == 5, out
    assert f"over the {MAX_FILE_BYTES // 1024} KiB memcli reads; nothing was written" in out.err
    assert len(out.err.strip().splitlines()) == 1
    assert head(ws) == before and not list((ws / "memories").rglob("*.md"))


# --- paths that can never match (newcomer's finding 9) ------------------------------------

NEVER_MATCH = [
    ("/etc/passwd", "invalid path '/etc/passwd': an absolute path"),
    ("~/notes/*.md", "an absolute path"),
    ("C:\\src\\*.py", "an absolute path"),
    ("../outside/**", "invalid path '../outside/**': '..' climbs out of the project"),
    ("src/../lib/*.py", "a '..' segment"),
    ("./src/a.py", "a '.' segment"),
    ("[[", "invalid path '[[': the glob does not compile: the '[' of '[[' is never closed"),
    ("src/**/x[ab", "the '[' of '[ab' is never closed"),
    ("src/[z-a].py", "a bracket expression in it matches no character"),
]


@pytest.mark.parametrize("glob,words", NEVER_MATCH)
def test_a_path_no_file_of_the_project_can_match_is_refused(ws: Path, glob: str, words: str) -> None:
    before = head(ws)
    out = run_memcli("-w", str(ws), "remember", "About some files", "--path", glob)
    assert out.code == 5 and words in out.err, out
    assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    assert head(ws) == before and not list((ws / "memories").rglob("*.md"))


def test_supersede_refuses_such_a_path_and_keeps_an_old_one(ws: Path) -> None:
    made = run_memcli("-w", str(ws), "--json", "remember", "Build with make", "--path", "Makefile")
    assert made.code == 0, made
    memory_id = made.json()["data"]["id"]
    before = head(ws)
    out = run_memcli("-w", str(ws), "supersede", memory_id, "Build with make", "--path", "/etc/make.conf")
    assert out.code == 5 and "an absolute path" in out.err and head(ws) == before, out
    kept = run_memcli("-w", str(ws), "supersede", memory_id, "Build with make, never by hand")
    assert kept.code == 0, kept  # the paths it keeps are not checked again


@pytest.mark.parametrize("glob", ["src/**/*.py", "*.tsx", ".github/workflows/*.yml", "[[]", "src/[!]]x",
                                  "docs/[a-z]*.md", "src/\\[literal", "Makefile"])
def test_globs_that_can_match_are_written(ws: Path, glob: str) -> None:
    out = run_memcli("-w", str(ws), "--json", "remember", f"About {glob}", "--path", glob)
    assert out.code == 0, out
    assert out.json()["data"]["memory"]["paths"] == [glob]


@pytest.mark.slow
def test_mcp_remember_and_supersede_refuse_such_a_path(ws: Path) -> None:
    made = run_memcli("-w", str(ws), "--json", "remember", "Lint with ruff", "--scope", "user:alice")
    memory_id = made.json()["data"]["id"]
    before = head(ws)

    async def steps(client: ClientSession) -> None:
        for glob in ("/etc/passwd", "[[", "../outside/**"):
            new = await client.call_tool("remember", {"text": "About files", "scope": "user:alice", "paths": [glob]})
            assert new.is_error and "invalid path" in text_of(new) and "\n" not in text_of(new), text_of(new)
            old = await client.call_tool("supersede", {"memory_id": memory_id, "text": "Lint with ruff, always",
                                                       "paths": [glob]})
            assert old.is_error and "invalid path" in text_of(old), text_of(old)

    drive(ws, steps)
    assert head(ws) == before


def test_a_repeated_text_with_a_new_path_says_so_and_supersede_applies_it(ws: Path) -> None:
    """``remember TEXT --path P`` on a text that exists is a no-op: it says the path was not
    applied and gives the supersede that applies it, which then works (it was a no-op too)."""
    made = run_memcli("-w", str(ws), "--json", "remember", "Indent YAML with two spaces")
    memory_id = made.json()["data"]["id"]
    again = run_memcli("-w", str(ws), "remember", "Indent YAML with two spaces", "--path", "**/*.yml", "--tag", "yaml")
    assert again.code == 0, again
    assert again.out.strip() == (f"already exists: {memory_id} (its tags: none; its paths: none): the tags, paths "
                                 f"given were not applied; to change them: memcli supersede {memory_id} --tag yaml "
                                 "--path '**/*.yml'"), again
    plain = run_memcli("-w", str(ws), "remember", "Indent YAML with two spaces")
    assert plain.out.strip() == f"already exists: {memory_id}", plain
    applied = run_memcli("-w", str(ws), "--json", "supersede", memory_id, "--tag", "yaml", "--path", "**/*.yml")
    assert applied.code == 0 and applied.json()["data"]["outcome"] == "created", applied
    assert applied.json()["data"]["changed"] == [memory_id]
    new = applied.json()["data"]["memory"]
    assert new["paths"] == ["**/*.yml"] and new["tags"] == ["yaml"] and new["text"] == "Indent YAML with two spaces"
    same = run_memcli("-w", str(ws), "--json", "supersede", new["id"], "--tag", "yaml", "--path", "**/*.yml")
    assert same.json()["data"]["outcome"] == "noop", same  # nothing differs: still a no-op


@given(glob=st.text(max_size=40))
def test_the_path_check_raises_only_validation_failed(glob: str) -> None:
    from memcli.errors import ValidationFailed
    from memcli.index import paths_match
    from memcli.model import check_path_globs

    try:
        check_path_globs([glob])
    except ValidationFailed as err:
        assert "\n" not in err.line()
    else:
        paths_match([glob], "src/a.py")
