"""memcli: long-term memory for coding agents, kept as Markdown files under git."""

import sys

__version__ = "0.1.0"
_DEFAULT_HOOK = sys.excepthook


def _interrupted(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """``sys.excepthook`` of the memcli program: a Ctrl-C that came while its first modules
    loaded, before ``memcli.cli.main`` could catch it, prints ``memcli: interrupted`` and
    exits 130 instead of a traceback of import frames; anything else goes to the default hook."""
    if not issubclass(kind, KeyboardInterrupt):
        _DEFAULT_HOOK(kind, value, tb)  # type: ignore[arg-type]
        return
    import os

    try:
        sys.stderr.write("memcli: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(130)


def process_started() -> float:
    """When this process started, as a ``time.monotonic()`` instant (Linux: from
    ``/proc/self/stat`` field 22, in clock ticks since boot, against ``CLOCK_BOOTTIME``;
    elsewhere, or if that cannot be read: now). Here, below every other module, because the
    fork server's client (``memcli.cli.zygote_client``) needs it before anything else loads;
    ``memcli.service.process_started`` adds the fork server's child's override."""
    import os
    import time

    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 3600 else now


# Only in the memcli program (the console script, or ``python -m memcli`` while the package
# loads: ``sys.argv[0]`` is then "-m"), never in a program that imports memcli as a library.
if sys.argv and sys.argv[0].rsplit("/", 1)[-1] in ("memcli", "-m"):
    sys.excepthook = _interrupted
