"""The command that starts memcli from a file the team commits (CASES.md R9 and T11).

A shared settings file (``.claude/settings.json``, ``.mcp.json``, ``.codex/hooks.json``,
``.codex/config.toml``, ``.gemini/settings.json``) is read on every teammate's machine, so
it may not name this machine's memcli by its absolute path. It runs a short POSIX ``sh``
script instead, which starts the first of:

1. ``~/.local/share/memcli/bin/memcli``: a personal launcher that ``memcli hook install``
   and ``memcli mcp install`` write on each machine (``exec /abs/path/of/memcli "$@"``),
   so the hooks run even when the agent's ``PATH`` lacks memcli (an agent started from a
   desktop launcher gets ``PATH=/usr/bin:/bin``);
2. ``memcli`` on the agent's ``PATH`` (pipx, ``uv tool`` and ``pip --user`` put it there);
3. ``~/.local/bin/memcli``, where those three install it when ``PATH`` does not say so.

When none is there it says so on stderr and exits 127 (the shell's "command not found"),
which the agents report as a failed hook and ``memcli hook check`` as a failure.

The launcher's folder is fixed under ``$HOME`` (no ``XDG_*`` variable): the script runs
with whatever environment the agent gives its hooks, often nothing but ``PATH`` and
``HOME``. Personal files (``--local``, ``--user``) keep the absolute path instead.

Pure: no file or process I/O here (``service.launcher`` writes the personal launcher).
"""

from __future__ import annotations

#: The personal launcher, relative to the home folder.
PERSONAL = ".local/share/memcli/bin/memcli"
#: The ``sh -c`` script a shared file runs; ``$@`` holds memcli's arguments. No brackets or
#: parentheses (``test``, backquotes): the agents' logs show a hook's command in ``[…]`` or
#: ``(…)``, and scripts/real-agents.py reads those lines.
SCRIPT = (f'for m in "$HOME/{PERSONAL}" "`command -v memcli`" "$HOME/.local/bin/memcli"; do '
          'test -x "$m" && exec "$m" "$@"; done; '
          'echo "memcli: not found in ~/' + PERSONAL.rsplit('/', 1)[0]
          + ', on PATH or in ~/.local/bin: install it, then run memcli hook install here once" >&2; exit 127')
#: The words before memcli's own arguments: ``sh -c SCRIPT memcli`` (``memcli`` becomes ``$0``).
PREFIX = ("sh", "-c", SCRIPT, "memcli")


def words(args: list[str]) -> list[str]:
    """The whole command of a shared file: ``["sh", "-c", SCRIPT, "memcli", *args]``.

    Args:
        args: memcli's arguments (``["hook", "claude", "session-start"]``, ``["mcp"]``).
    """
    return [*PREFIX, *args]


def is_launcher(program: tuple[str, ...] | list[str]) -> bool:
    """True when ``program`` (the words before memcli's arguments) is a launcher that finds
    memcli (this version's script or any ``sh -c '…memcli…' memcli``)."""
    return (len(program) == 4 and program[0].rsplit("/", 1)[-1] == "sh" and program[1] == "-c"
            and "memcli" in program[2] and program[3] == "memcli")


def personal_text(program: list[str]) -> str:
    """The personal launcher's content: a ``sh`` script that runs ``program`` (absolute words).

    Args:
        program: how this machine starts memcli (``["/venv/bin/memcli"]`` or
            ``["/venv/bin/python", "-m", "memcli"]``).
    """
    import shlex

    return ("#!/bin/sh\n# written by memcli hook install / mcp install: this machine's memcli\n"
            f'exec {shlex.join(program)} "$@"\n')
