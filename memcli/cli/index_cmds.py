"""The ``index`` command group: status and rebuild of the derived search index."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.hot import index_summary as _summary
from memcli.cli.output import emit, is_terminal

index_app = typer.Typer(help="The derived search index (a cache: deleting it loses nothing).", no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("status")
def status(json_: JsonOpt = False) -> None:
    """Show the index: memories, unreadable files, freshness, size."""
    from memcli.cli.hot import index_status

    index_status()


@index_app.command("build")
def build(background: Annotated[bool, typer.Option(
              "--background",
              help="Start it as a detached process (log in .cache/index-build.log) and return.")] = False,
          json_: JsonOpt = False) -> None:
    """Bring the index in step with the files, going on from where a stopped build left off."""
    from memcli.service.read import index_build

    context = ctx()
    data = index_build(context, background=background)
    flush_warnings(context)
    emit(data, _summary(data))


@index_app.command("rebuild")
def rebuild(embed: Annotated[bool, typer.Option(
                "--embed", help="Also embed every memory for the semantic retriever, in this process (loads the "
                                "model: seconds, then about 10 ms a memory). Without it a long-lived process "
                                "(`memcli mcp`) embeds them in the background.")] = False,
            json_: JsonOpt = False) -> None:
    """Delete the index and build it again from the memory files."""
    from memcli.service.read import index_rebuild

    context = ctx()
    if is_terminal() and not json_:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("indexing", total=None)
            data = index_rebuild(context, lambda done, total: bar.update(task, completed=done, total=total))
            if embed and data["backend"] == "fts5":
                from memcli.service.semantic import embed_all

                task = bar.add_task("embedding", total=None)
                data["semantic"] = embed_all(context, lambda done, total: bar.update(task, completed=done,
                                                                                       total=total))
    else:
        data = index_rebuild(context)
        if embed and data["backend"] == "fts5":
            from memcli.service.semantic import embed_all

            data["semantic"] = embed_all(context)
    flush_warnings(context)
    emit(data, _summary(data))
    if data["backend"] != "fts5":
        print("memcli: the index could not be built; see the warning above", file=sys.stderr)
