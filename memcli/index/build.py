"""The background index build: one detached process that finishes what a hook left.

A hook must answer within its deadline (``[hooks] deadline``), so on a fresh clone it
indexes what it can in that time and hands the rest to ``memcli index build`` started
here in its own session (``start_new_session``): the agent killing the hook, or
``timeout`` killing its process group, does not stop it. Its output goes to
``.cache/index-build.log``. Only one build runs at a time: the build lock of
``memcli.index.db`` decides, and a build that finds it held gives up at once, since the
holder either finishes or starts its own successor.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOG_NAME = "index-build.log"
#: The log is cut back to nothing when it grows past this many bytes.
LOG_LIMIT = 1_000_000


def spawn_build(root: Path, cache: Path) -> bool:
    """Start ``memcli --workspace ROOT index build`` detached; True when it was started.

    Args:
        root: the workspace folder.
        cache: its cache folder (checked, not a link), where the log goes.

    Never raises: a failure to start is reported as False (the next command tries again).
    """
    log_path = cache / LOG_NAME
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    try:
        if log_path.exists() and log_path.stat().st_size > LOG_LIMIT:
            log_path.unlink()
        log = os.open(log_path, flags, 0o600)
    except OSError:
        return False
    try:
        subprocess.Popen([sys.executable, "-m", "memcli", "--workspace", str(root), "index", "build"],
                         cwd=root, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                         start_new_session=True)
    except OSError:
        return False
    finally:
        os.close(log)
    return True
