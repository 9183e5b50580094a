"""The ``index`` command group: status and rebuild of the derived search index."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit, is_terminal

index_app = typer.Typer(help="The derived search index (a cache: deleting it loses nothing).", no_args_is_help=True)
app.add_typer(index_app, name="index")


def _summary(data: dict) -> str:
    if data["backend"] == "background":
        return (f"index build started in the background (log: {data['log']})" if data["started"]
                else "memcli: could not start the background index build")
    if data["backend"] != "fts5":
        return f"index unavailable: serving {data['memories']} memories from the files"
    sync = data["last_sync"]
    state = ("" if data["complete"] else "; another memcli process is building it" if sync["busy"]
             else f"; {sync['pending']} files not indexed yet")
    return (f"index {data['path']}: {data['memories']} memories, {data['problems']} unreadable files, "
            f"{data['bytes'] / 1e6:.1f} MB; this sync: {sync['added']} added, {sync['updated']} updated, "
            f"{sync['removed']} removed, {sync['moved']} moved, of {sync['files']} files{state}")


@index_app.command("status")
def status(json_: JsonOpt = False) -> None:
    """Show the index: memories, unreadable files, freshness, size."""
    from memcli.service.read import index_status

    context = ctx()
    data = index_status(context)
    flush_warnings(context)
    emit(data, _summary(data))


@index_app.command("build")
def build(background: Annotated[bool, typer.Option(
              "--background", help="Start it as a detached process (log in .cache/index-build.log) and return.")] = False,
          json_: JsonOpt = False) -> None:
    """Bring the index in step with the files, going on from where a stopped build left off."""
    from memcli.service.read import index_build

    context = ctx()
    data = index_build(context, background=background)
    flush_warnings(context)
    emit(data, _summary(data))


@index_app.command("rebuild")
def rebuild(json_: JsonOpt = False) -> None:
    """Delete the index and build it again from the memory files."""
    from memcli.service.read import index_rebuild

    context = ctx()
    if is_terminal() and not json_:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("indexing", total=None)
            data = index_rebuild(context, lambda done, total: bar.update(task, completed=done, total=total))
    else:
        data = index_rebuild(context)
    flush_warnings(context)
    emit(data, _summary(data))
    if data["backend"] != "fts5":
        print("memcli: the index could not be built; see the warning above", file=sys.stderr)
