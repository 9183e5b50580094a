"""Turning results and errors into output: the ``--json`` envelope, tables, stderr lines.

The envelope (version ``memcli/v1``, pinned by ``tests/test_cli_contract.py``)::

    {"schema": "memcli/v1", "command": "recall", "ok": true, "data": {...}, "warnings": []}
    {"schema": "memcli/v1", "command": "recall", "ok": false,
     "error": {"code": "memory_not_found", "message": "...", "hint": "...", "exit": 4}, "warnings": []}

Data goes to stdout, messages to stderr (SPEC.md section 4). rich renders tables only
when stdout is a terminal; otherwise rows are plain tab-separated lines, and rich is
never imported (it costs tens of milliseconds on the hot path).
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

SCHEMA = "memcli/v1"


class State:
    """Per-process output settings, filled in by ``main`` before the command runs.

    ``json``: the ``--json`` envelope is wanted; ``command``: the command's name in it;
    ``warnings``: the envelope's warnings (a fresh empty list when None); ``fast_exit``: a
    read hook has answered, so ``main`` ends the process without the interpreter's teardown;
    ``said``: the warnings given so far (each is given once per command).
    """

    __slots__ = ("json", "command", "warnings", "fast_exit", "said")

    def __init__(self, json: bool = False, command: str = "memcli", warnings: list[str] | None = None,
                 fast_exit: bool = False) -> None:
        self.json = json
        self.command = command
        self.warnings = [] if warnings is None else warnings
        self.fast_exit = fast_exit
        self.said: set[str] = set()

    def reset(self) -> None:
        """Back to the settings of a new process (``main`` calls it first)."""
        self.__init__()  # type: ignore[misc]


STATE = State()


def write(text: str) -> None:
    """Write ``text`` to stdout whole, or raise ``BrokenPipeError`` when its reader has gone.

    With ``PYTHONUNBUFFERED`` set (or ``python -u``), ``sys.stdout`` writes straight to the
    raw file, and a write the reader cuts short (``memcli --json recall X | head -c 100``)
    is taken as done: the rest is dropped, no error, exit 0 where git ends with 141. Then
    the bytes are written here until all are out, so a closed pipe raises (``cli._pipe_closed``).
    """
    stream = sys.stdout
    raw = getattr(stream, "buffer", None)
    if not isinstance(raw, io.FileIO):  # buffered: its writer writes everything or raises
        stream.write(text)
        return
    stream.flush()
    view = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
    while view:
        view = view[raw.write(view) or 0:]


def warn(message: str) -> None:
    """A warning: on stderr now (text mode) or in the envelope's ``warnings`` (JSON mode); once
    per command, however many passes over the files found the same problem."""
    if message in STATE.said:
        return
    STATE.said.add(message)
    if STATE.json:
        STATE.warnings.append(message)
    else:
        print(f"memcli: warning: {message}", file=sys.stderr)


def emit(data: Any, text: str | None = None) -> None:
    """Print a command's result: the envelope in JSON mode, else ``text`` (if any)."""
    if STATE.json:
        envelope = {"schema": SCHEMA, "command": STATE.command, "ok": True, "data": data,
                    "warnings": STATE.warnings}
        write(json.dumps(envelope, ensure_ascii=False, default=str) + "\n")
    elif text:
        write(text if text.endswith("\n") else text + "\n")


def error(code: str, message: str, hint: str | None, exit_code: int) -> None:
    """Print an error: the envelope on stdout in JSON mode, else one line on stderr."""
    if STATE.json:
        envelope = {"schema": SCHEMA, "command": STATE.command, "ok": False,
                    "error": {"code": code, "message": message, "hint": hint, "exit": exit_code},
                    "warnings": STATE.warnings}
        write(json.dumps(envelope, ensure_ascii=False) + "\n")
    else:
        line = f"{message.rstrip('.')}; {hint}" if hint else message
        print(f"memcli: error: {line}", file=sys.stderr)


def is_terminal() -> bool:
    """True when stdout is an interactive terminal."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def one_line(text: str, width: int = 100) -> str:
    """The text on one line, shortened to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(title: str, columns: list[str], rows: list[list[str]], header: bool = False) -> None:
    """Print rows: a rich table on a terminal, else tab-separated lines, led by the column
    names when ``header`` (output read by a person, such as ``recall --explain``)."""
    if not is_terminal():
        lines = ["\t".join(columns)] if header else []
        write("".join(f"{line}\n" for line in [*lines, *("\t".join(one_line(c, 400) for c in row) for row in rows)]))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*(Text(c) for c in row))  # Text: memory text is never read as markup
    Console().print(grid)
