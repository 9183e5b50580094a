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


# Only in the memcli program (the console script, or ``python -m memcli`` while the package
# loads: ``sys.argv[0]`` is then "-m"), never in a program that imports memcli as a library.
if sys.argv and sys.argv[0].rsplit("/", 1)[-1] in ("memcli", "-m"):
    sys.excepthook = _interrupted
