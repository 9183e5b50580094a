"""Ctrl-C held back once a write's commit is going onto the branch: a write that landed is done.

A SIGINT that raised ``KeyboardInterrupt`` while git moved the branch (or after it moved,
while memcli printed its report) turned a write that had landed into exit 130, with the
report missing or printed before the 130, and could restore the files the commit held.
:func:`hold`, called just before ``git update-ref`` (``memcli.git.commit``), records a
SIGINT instead; the commit then either lands (the hold stays for the rest of the command:
the write is reported and the command exits 0; a one-shot CLI process ends with it, and
``memcli.cli`` drops it before the next command in one process) or fails (:func:`release`
restores Python's handler: nothing was written, and the error is reported).

Only the main thread's default handler (``signal.default_int_handler``) is replaced: a
process that installed its own (the MCP server ends at SIGINT at once) keeps it.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_previous: Any = None
#: Whether a SIGINT came while held.
pending = False


def _record(signum: int, frame: Any) -> None:
    global pending
    pending = True


def hold() -> bool:
    """Record SIGINT instead of raising ``KeyboardInterrupt`` until :func:`release`.

    Returns:
        Whether SIGINT is held (False off the main thread or under a handler of the process's own).
    """
    global _previous
    if _previous is not None:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    _previous = signal.signal(signal.SIGINT, _record)
    return True


def release() -> bool:
    """Put back the SIGINT handler :func:`hold` replaced and forget the hold.

    Returns:
        Whether a SIGINT came while held (the caller decides whether it still means anything).
    """
    global _previous, pending
    came = pending
    if _previous is not None:
        try:
            signal.signal(signal.SIGINT, _previous)
        except ValueError:  # not the main thread: nothing was held here
            pass
    _previous, pending = None, False
    return came


def resume() -> None:
    """For a command that goes on after a commit landed (``sync`` after it commits the merge
    driver's line, then fetches and pushes): the commit is kept, and Ctrl-C interrupts again
    from here; a SIGINT that came while held is raised now.

    Raises:
        KeyboardInterrupt: a SIGINT came while held.
    """
    if release():
        raise KeyboardInterrupt
