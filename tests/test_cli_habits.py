"""The command line behaves like the tools people know (issue 14, point 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_memcli


def test_bare_memcli_and_dash_h_print_the_overview_and_exit_0(tmp_path: Path) -> None:
    for args in ([], ["-h"], ["--help"], ["--json"]):
        out = run_memcli(*args)
        assert out.code == 0, (args, out)
        assert out.out.startswith("Usage: memcli [OPTIONS] COMMAND [ARGS]...")
        assert "Commands:" in out.out and "recall" in out.out
        assert out.err == ""


def test_every_help_summary_fits_one_line_without_an_ellipsis() -> None:
    text = run_memcli("--help").out
    commands = text.split("Commands:", 1)[1].splitlines()[1:]
    assert commands and all(re.match(r"^  \S+\s+\S", line) for line in commands if line.strip()), commands
    assert not [line for line in commands if line.rstrip().endswith(("...", "…"))]
    for group in ("hook", "index"):
        sub = run_memcli(group, "-h")
        assert sub.code == 0 and "..." not in sub.out.split("Commands:", 1)[1]


@pytest.mark.parametrize("args,usage", [
    (["recall", "-h"], "Usage: memcli recall [OPTIONS] QUERY..."),
    (["show", "--help"], "Usage: memcli show [OPTIONS] ID"),
    (["init", "-h"], "Usage: memcli init [OPTIONS] [PATH]"),
    (["hook", "install", "-h"], "Usage: memcli hook install [OPTIONS]"),
])
def test_command_help_with_dash_h_and_plain_metavars(args: list[str], usage: str) -> None:
    out = run_memcli(*args)
    assert out.code == 0, out
    assert out.out.startswith(usage)
    assert "{" not in out.out.splitlines()[0]


def test_global_options_after_the_command(ws: Path, tmp_path: Path) -> None:
    assert run_memcli("-w", str(ws), "remember", "Use pnpm, not npm").code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for args in (["recall", "pnpm", "-w", str(ws)], ["recall", "pnpm", f"--workspace={ws}", "--json"],
                 ["list", "--workspace", str(ws)], ["recall", "-w", str(ws), "pnpm", "--actor", "bob"]):
        out = run_memcli(*args, cwd=elsewhere)
        assert out.code == 0, (args, out)
        assert "pnpm" in out.out
    with_typer = run_memcli("recall", "pnpm", "-w", str(ws), cwd=elsewhere, env={"MEMCLI_NO_FAST": "1"})
    assert with_typer.code == 0 and "pnpm" in with_typer.out
    literal = run_memcli("-w", str(ws), "remember", "--", "-w is the workspace flag of memcli")
    assert literal.code == 0, literal  # after `--`, -w is text


@pytest.mark.parametrize("args,line", [
    (["recal", "x"], "memcli: error: unknown command 'recal' (did you mean 'recall'?); see `memcli --help`"),
    (["recall", "--bogus", "x"], "memcli: error: unknown option --bogus; see `memcli recall --help`"),
    (["remember"], "memcli: error: missing argument 'text'; see `memcli remember --help`"),
])
def test_usage_errors_read_in_one_style(args: list[str], line: str) -> None:
    out = run_memcli(*args)
    assert out.code == 2
    assert out.err.strip() == line


def test_bash_completion_completes_commands_and_options(tmp_path: Path) -> None:
    script = run_memcli("completion", "bash")
    assert script.code == 0 and "_memcli_completion" in script.out
    (tmp_path / "memcli.bash").write_text(script.out)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "memcli").write_text(f"#!/bin/sh\nexec {sys.executable} -m memcli \"$@\"\n")
    (shim / "memcli").chmod(0o755)
    probe = ("source memcli.bash; COMP_WORDS=(memcli rec); COMP_CWORD=1; _memcli_completion memcli; "
             "echo \"${COMPREPLY[@]}\"; COMP_WORDS=(memcli recall --lim); COMP_CWORD=2; _memcli_completion memcli; "
             "echo \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"})
    assert done.stdout.split("\n")[:2] == ["recall", "--limit"], done


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_print(shell: str) -> None:
    out = run_memcli("completion", shell)
    assert out.code == 0 and "_MEMCLI_COMPLETE" in out.out


def test_completion_install_writes_the_start_up_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = run_memcli("completion", "bash", "--install", env={"HOME": str(home)})
    assert out.code == 0, out
    assert (home / ".bashrc").read_text().count("memcli") >= 1
    assert run_memcli("completion", "tcsh").code == 2
