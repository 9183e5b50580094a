"""Test-only kill points: the kill-loop tests stop a multi-step operation at a named step.

With ``$MEMCLI_TEST_KILL_AT`` set to one of :data:`POINTS`, the process that reaches that
step kills itself with SIGKILL (the ``*-child`` points, reached in a child process, kill
its parent, memcli, first): a deterministic ``kill -9`` between two steps, which a timer
would hit only by luck. Nothing but ``tests/test_interrupted.py`` sets it; unset, a
point costs one environment look-up. It is not a user setting and is not documented
as one (docs/development.md names it for contributors).
"""

from __future__ import annotations

import os
import signal

ENV = "MEMCLI_TEST_KILL_AT"
#: The named steps, in the order each operation reaches them.
POINTS = (
    "purge:journaled",  # purge --history: the record of the purge is written, nothing else
    "purge:committed",  # the purge commit is on the branch; history not rewritten yet
    "rewrite:filtering-child",  # inside git-filter-repo (its child process), refs half-way or not yet moved
    "rewrite:filtered",  # git-filter-repo finished; reflogs and old objects still hold the text
    "purge:rewritten",  # history rewritten; index, raw transcript and record not yet dropped
    "sync:merging",  # sync: the record of the merge is written; `git merge` not started
    "sync:merged",  # `git merge` finished; the record not yet dropped
    "init:written",  # init: memcli.toml and .gitattributes written, not committed
    "move:stored",  # doctor --fix: personal memories committed in the person's store, not yet removed here
    "fresh:walking",  # the full walk a read started after its answer (index.watcher), before it walks
    "watcher:indexing",  # the store's watcher, asked by a read, about to index files the kernel reported changed
)
#: ``$MEMCLI_TEST_STALL_AT``: the process that reaches this named step waits there (an hour, the
#: GIL released) instead of dying, so that a deadline is met there: the hook tests' watchdog.
STALL_ENV = "MEMCLI_TEST_STALL_AT"
STALLS = (
    "guards:matching",  # the pre-tool hook holds the guards in force and is about to match the call
    "arrival:verifying",  # a read is about to verify what arrived since the store's record
    "zygote:taken-over",  # a fork server's child has taken the client's place; memcli's main not begun
)


def reached(name: str) -> None:
    """SIGKILL this process (and, for a ``*-child`` point, its parent first) when ``$MEMCLI_TEST_KILL_AT``
    names ``name``; otherwise nothing.

    Args:
        name: one of :data:`POINTS`.
    """
    if os.environ.get(ENV) != name:
        return
    if name.endswith("-child"):
        os.kill(os.getppid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def stall(name: str) -> None:
    """Wait an hour (a deadline's watchdog answers meanwhile) when ``$MEMCLI_TEST_STALL_AT``
    names ``name``; otherwise nothing.

    Args:
        name: one of :data:`STALLS`.
    """
    if os.environ.get(STALL_ENV) == name:
        import time

        time.sleep(3600)
