"""The ``index`` command group: status and rebuild of the derived search index."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.hot import index_summary as _summary
from memcli.cli.output import emit, is_terminal

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

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


#: Seconds between two redraws of the rebuild's progress bar.
REDRAW = 0.1


@contextmanager
def progress_bar() -> Iterator[Callable[[str], Callable[[int, int], None]]]:
    """A transient progress bar on the terminal, without rich's refresh thread: a build forks
    its read workers only from a process that runs no other thread (``index/parallel.py``), so
    with that thread a rebuild in a terminal used one core. Yields ``task(name)``, which adds
    a line to the bar and gives its ``progress(done, total)`` callback."""
    from rich.progress import Progress

    with Progress(transient=True, auto_refresh=False) as bar:
        yield lambda name: _redraw(bar, bar.add_task(name, total=None))


def _redraw(bar: Progress, task: TaskID) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback that updates ``task`` of ``bar`` and redraws it at
    most every :data:`REDRAW` seconds, and at the end (the bar has no refresh thread)."""
    import time

    last = [0.0]

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)
        now = time.monotonic()
        if done >= total or now - last[0] >= REDRAW:
            last[0] = now
            bar.refresh()
    return update


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
        with progress_bar() as task:
            data = index_rebuild(context, task("indexing"))
            if embed and data["backend"] == "fts5":
                from memcli.service.semantic import embed_all

                data["semantic"] = embed_all(context, task("embedding"))
    else:
        data = index_rebuild(context)
        if embed and data["backend"] == "fts5":
            from memcli.service.semantic import embed_all

            data["semantic"] = embed_all(context)
    flush_warnings(context)
    emit(data, _summary(data))
    if data["backend"] != "fts5":
        print("memcli: the index could not be built; see the warning above", file=sys.stderr)
