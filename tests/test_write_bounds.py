"""Issue 22 point 8: nothing is written that memcli would refuse to read. Counts and sizes of tags and
paths are checked at write (CLI and MCP): one line, exit 5, nothing written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
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
