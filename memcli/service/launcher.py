"""This machine's memcli, for the agents: the absolute program and the personal launcher.

Shared files run ``agents.launch_command.SCRIPT``, which starts ``~/.local/share/memcli/bin/memcli``
first; this module writes that file (a two-line ``sh`` script naming this machine's memcli by
its absolute path). Personal files name the absolute program directly.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memcli.agents import launch_command

#: Where a file is read: ``shared`` (in the project, meant to be committed) or ``personal``.
SHARED, PERSONAL = "shared", "personal"


def memcli_program() -> list[str]:
    """The words that start this memcli from any ``PATH``: its console script, by absolute path.

    The script next to ``sys.executable`` is the one pip, pipx and ``uv tool`` install into
    the same environment; without one (``pip install --user``, a source tree), the
    interpreter itself runs ``-m memcli``. Symbolic links are not resolved: a virtual
    environment's ``python`` is a link to the base interpreter, which lacks memcli.
    """
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / "memcli"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), "-m", "memcli"]


def personal_path() -> Path:
    """The personal launcher: ``~/.local/share/memcli/bin/memcli`` (fixed under ``$HOME``, see
    ``agents.launch_command``)."""
    return Path.home() / launch_command.PERSONAL


def record() -> str | None:
    """Write (or refresh) the personal launcher so that shared files start this memcli.

    Returns:
        A line saying what was written, or None when the launcher already ran this memcli
        (no write).

    Raises:
        OSError: the file cannot be written (the caller reports it).
    """
    from memcli.store.files import atomic_write

    path = personal_path()
    program = memcli_program()
    text = launch_command.personal_text(program)
    try:
        if path.read_text(encoding="utf-8") == text and os.access(path, os.X_OK):
            return None
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"))
    os.chmod(path, 0o755)
    return f"{path} (personal, this machine only): now runs {program[0] if len(program) == 1 else ' '.join(program)}"


def where_label(where: str) -> str:
    """How an install names the file it wrote: shared (committed) or personal."""
    if where == SHARED:
        return "shared: meant to be committed, so it names no path of this machine"
    return "personal: yours only"
