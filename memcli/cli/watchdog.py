"""The deadline of a read hook, kept even on a machine too loaded for the work to finish.

``session-start``, ``user-prompt-submit`` and ``pre-tool-use`` bound their own work by
``[hooks] deadline`` (``Ctx.bound``: the index sync takes ``SYNC_SHARE`` of it, the rest
is left to a background build), but on a busy machine reading, ranking and the secret
scan can still run past it, and an agent that kills the hook at its timeout gets nothing
at all. A :class:`Watchdog` is the last line: a daemon thread that, at ``GUARD_SHARE`` of
the deadline after the process started, writes a well-formed answer of its own (a short
note for ``session-start``, nothing for the others), one warning line on stderr, starts
the background index build, and ends the process with status 0. The work it cuts short
is safe to stop at any instant, as a kill is: the index commits in batches (SQLite rolls
back an open transaction), and read hooks write nothing else but the session's cache of
ids already given (replaced atomically).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

#: Share of ``[hooks] deadline`` (from process start) after which the watchdog answers;
#: the rest is for writing the answer and exiting.
GUARD_SHARE = 0.9
#: The read hooks the watchdog guards (the write hooks have their own step deadlines).
GUARDED = ("session-start", "user-prompt-submit", "pre-tool-use", "post-tool-use")
#: What ``session-start`` says when the watchdog answers for it (SPEC.md section 6: the block
#: is reference data, fenced as every block is).
LATE_NOTE = ("<memcli-context>\nmemcli could not gather this project's memories within the hook's deadline "
             "(the machine is busy, or a fresh clone's search index is still being built in the background). "
             "Search them with `memcli recall WORDS`.\n</memcli-context>\n")


class Watchdog:
    """Answers for a read hook that is about to overrun its deadline.

    Args:
        answer: the hook's stdout to write if the deadline comes first (the agent's JSON).
        started: when the process started (a ``time.monotonic()`` instant).
        deadline: ``[hooks] deadline`` in seconds; :meth:`move` changes it once the
            workspace's configuration is known.
    """

    def __init__(self, answer: str, started: float, deadline: float) -> None:
        self._answer = answer
        self._started = started
        self._at = started + deadline * GUARD_SHARE
        self._deadline = deadline
        self._before_exit: Callable[[], None] | None = None
        self._claimed = threading.Lock()
        self._done = False
        self._wake = threading.Event()
        #: True while the hook waits for its input: an agent (or a person) that leaves stdin
        #: open is told so, not that the machine is busy (newcomer LOW, stop 34).
        self.reading = False
        threading.Thread(target=self._watch, name="memcli-hook-deadline", daemon=True).start()

    def move(self, deadline: float, before_exit: Callable[[], None] | None = None, answer: str | None = None) -> None:
        """Use ``deadline`` seconds (the workspace's ``[hooks] deadline``) from now on, call
        ``before_exit`` (it must not raise) if the watchdog answers, and answer ``answer``
        then, when given (the session is known now: a prompt's once-per-session note)."""
        self._before_exit = before_exit
        if answer is not None:
            self._answer = answer
        self._deadline = deadline
        self._at = self._started + deadline * GUARD_SHARE
        self._wake.set()

    def claim(self) -> None:
        """Take the answer for the hook's own result. If the watchdog is answering, this waits
        on its lock while it ends the process, so it never returns then."""
        with self._claimed:
            self._done = True

    def _watch(self) -> None:
        while True:
            left = self._at - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(left)
            self._wake.clear()
        with self._claimed:
            if self._done:
                return
            self._done = True
            why = ("its input on stdin never ended: close stdin after the JSON" if self.reading
                   else "the machine is busy or the index is being built")
            warning = (f"memcli: warning: no memories within the [hooks] deadline of {self._deadline:g} s "
                       f"({why}); answered without them\n")
            try:
                os.write(1, self._answer.encode("utf-8"))
                os.write(2, warning.encode("utf-8"))
                if self._before_exit is not None:
                    self._before_exit()  # the index goes on in the background
            finally:
                from memcli.cli import exit_now

                exit_now(0)
