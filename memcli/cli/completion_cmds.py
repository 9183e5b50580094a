"""``memcli completion SHELL``: shell completion for bash, zsh and fish (typer's scripts)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from memcli.cli.app import app
from memcli.cli.output import emit

SHELLS = ("bash", "zsh", "fish")


@app.command()
def completion(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
    install: Annotated[bool, typer.Option("--install", help="Add it to the shell's start-up files.")] = False,
) -> None:
    """Print the shell completion script (or --install it) for bash, zsh or fish."""
    from typer._completion_shared import get_completion_script
    from typer._completion_shared import install as do_install

    from memcli.cli import COMPLETE_VAR
    from memcli.errors import UsageProblem

    if shell not in SHELLS:
        raise UsageProblem(f"no completion for the shell {shell[:20]!r}", hint="use bash, zsh or fish")
    if not install:
        sys.stdout.write(get_completion_script(prog_name="memcli", complete_var=COMPLETE_VAR, shell=shell) + "\n")
        return
    _, path = do_install(shell=shell, prog_name="memcli", complete_var=COMPLETE_VAR)
    emit({"shell": shell, "path": str(path)},
         f"{shell} completion installed in {path}; it takes effect in a new shell")
