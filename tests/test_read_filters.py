"""The read filters are defined once (``memcli.filters.FILTERS``, issue 20 scope 3): the fast path,
the typer commands ``recall`` and ``list``, the MCP ``recall`` tool and ``service.read.build_query``
all take them from that table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memcli.cli import fast
from memcli.filters import FILTERS, Filters

if TYPE_CHECKING:
    from mcp import ClientSession


def typer_params(name: str) -> dict[str, tuple[str, ...]]:
    import typer.main

    from memcli.cli.app import app

    command = typer.main.get_command(app).commands[name]
    return {p.name: tuple(o for o in (*p.opts, *p.secondary_opts) if o.startswith("-")) for p in command.params}


@pytest.mark.parametrize("command", ["recall", "list"])
def test_the_typer_commands_take_every_filter_from_the_table(command):
    params = typer_params(command)
    for f in FILTERS:
        assert params[f.keyword] == f.options, f.name
    assert list(params)[-1] == "json_"


def test_the_fast_path_parses_every_filter_from_the_table():
    for f in FILTERS:
        for option in f.options:
            assert fast.COMMANDS["recall"][option] == (f.keyword, f.kind)


def test_filters_refuse_a_name_that_is_not_a_filter_and_default_from_the_table():
    assert Filters().limit == 20 and Filters().scopes == [] and Filters(scopes=None).statuses == []
    assert Filters.from_options(scope=["global"], limit=None).scopes == ["global"]
    with pytest.raises(TypeError, match="no read filter named colour"):
        Filters(colour="red")
    with pytest.raises(TypeError, match="no read filter option scopes"):
        Filters.from_options(scopes=["global"])


@pytest.mark.slow
def test_the_mcp_recall_tool_offers_exactly_the_filters_the_table_marks(ws: Path):
    from test_mcp_server import drive

    async def steps(client: ClientSession) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        offered = set(tools["recall"].input_schema["properties"])
        assert offered - {"query", "mode"} == {f.name for f in FILTERS if f.mcp}
    drive(ws, steps)


def test_the_mcp_tools_take_the_filters_by_their_table_names(ws: Path, run):
    from memcli.mcp_server.tools import Settings, Tools

    assert run("remember", "Use pnpm for every package", "--tag", "js").code == 0
    assert run("remember", "Deploys go out on Tuesdays").code == 0
    tools = Tools(Settings(workspace=str(ws)))
    found = tools.recall("pnpm", tag="js", limit=5, scopes=["project"], include_expired=False)
    assert [h["text"] for h in found["hits"]] == ["Use pnpm for every package"]
    assert tools.recall("pnpm", tag="other")["hits"] == []
    with pytest.raises(TypeError, match="takes no filter sessions"):
        tools.recall("pnpm", sessions=True)


def test_recall_and_context_have_one_result_shape_in_the_cli_json_and_the_mcp_tools(ws: Path, run):
    """``service.read.recall_data`` and ``Block.to_dict``: the MCP result is the CLI's ``data``
    plus the call's ``warnings`` (the CLI puts them in its envelope)."""
    from memcli.mcp_server.tools import Settings, Tools

    assert run("remember", "Use pnpm for every package", "--tag", "js").code == 0
    tools = Tools(Settings(workspace=str(ws)))
    cli = run("--json", "recall", "pnpm").json()["data"]
    mcp = tools.recall("pnpm")
    assert mcp.pop("warnings") == []
    assert mcp == cli
    assert set(run("--json", "recall", "pnpm", "--explain").json()["data"]["hits"][0]) == set(cli["hits"][0]) | {
        "explain"}  # the richer shape: --explain adds each hit's factors
    cli = run("--json", "context").json()["data"]
    mcp = tools.context()
    assert mcp.pop("warnings") == [] and mcp == cli and set(cli) == {"text", "included", "omitted"}


def test_a_warm_server_reads_its_kept_index_through_memory_mapped_pages(ws: Path, run):
    """``IndexDB.map_pages``: the MCP server's kept index is memory-mapped (no system call a page
    read); a command's own index is not (its resident size must not grow with a scan)."""
    from memcli.mcp_server.tools import Settings, Tools
    from memcli.service import Ctx

    assert run("remember", "Use pnpm for every package").code == 0
    tools = Tools(Settings(workspace=str(ws)))
    assert tools.recall("pnpm")["hits"]
    kept = tools._base.kept if tools._base is not None else {}
    assert [index.db.execute("PRAGMA mmap_size").fetchone()[0] for index in kept.values()] == [1 << 30]
    ctx = Ctx.open(str(ws))
    assert ctx.catalog().index.db.execute("PRAGMA mmap_size").fetchone()[0] == 0  # type: ignore[attr-defined]
    tools.close()
