"""Changed files read in worker processes while one process writes the index (issue 21).

A build reads, hashes and parses every changed memory file (``db.read_row``: libyaml's
events turned into Python objects, the tokenizer's stems and bigrams: Python's CPU), then
writes its row; SQLite takes one writer at a time. With two or more processors and at
least :data:`MIN_FILES` changed files, worker processes read and parse while the process
that holds the build lock writes their rows, in the order of the change list, so the
result is the one a single process gives (the same rows, the same winner of an id held by
two files). A build stopped at its deadline or killed keeps what it committed, as before.

Workers are forked, so they start with memcli's modules loaded and nothing to set up, and
only where forking is safe: an OS with ``fork`` and a process that runs no other Python
thread (the MCP server's threads rule it out there; its builds stay in one process).
``MEMCLI_TEST_INDEX_WORKERS`` (tests and ``bench/`` only, not a setting) fixes the number
of workers; ``0`` reads in the process itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.index.db import Same
    from memcli.store.files import MemoryFiles

#: Fewer changed files than this are read in the process itself (forking costs more than it saves).
MIN_FILES = 2_000
#: Files a worker takes at a time.
CHUNK = 64
#: The test-only variable that fixes the number of workers.
WORKERS_VARIABLE = "MEMCLI_TEST_INDEX_WORKERS"

_FILES: MemoryFiles | None = None  # the workers' tree, inherited through fork


def workers(files: int) -> int:
    """How many worker processes to read ``files`` changed files with (0: in this process)."""
    fixed = os.environ.get(WORKERS_VARIABLE)
    if fixed is not None and fixed.isdigit():
        return int(fixed) if files else 0
    if files < MIN_FILES or not hasattr(os, "fork"):
        return 0
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus if cpus > 1 else 0


def _read(task: tuple[str, Same | None]) -> tuple:
    from memcli.index.db import read_row

    assert _FILES is not None
    return read_row(_FILES, task[0], task[1])


@contextmanager
def read_ahead(files: MemoryFiles, tasks: list[tuple[str, Same | None]]) -> Iterator[Iterator[tuple] | None]:
    """``db.read_row`` of each ``(path, same)`` in ``tasks`` (``db.Same``), read by worker processes
    and given back in the order of ``tasks``; None when they are better read in this process
    (see :func:`workers`). The workers are stopped when the block ends, whatever is left.
    """
    count = workers(len(tasks))
    if count < 1:
        yield None
        return
    import multiprocessing

    global _FILES
    _FILES = files
    pool = multiprocessing.get_context("fork").Pool(count)
    try:
        yield pool.imap(_read, tasks, chunksize=CHUNK)
    finally:
        pool.terminate()
        pool.join()
        _FILES = None
