"""Every shell example in the README and docs/ runs (issue 14, point 1).

Each Markdown file's ```sh blocks run in order, each as one ``bash -e`` script starting in
the folder the one before it ended in (as in one terminal), in one throw-away folder per
file that holds ``my-project`` (a git repository with a commit and
``web/src/app.ts``), with a private HOME and the memcli under test first on PATH. A block
whose info string says ``no-test`` is not run: installing memcli itself, and the set-up
commands that CI and ``scripts/newcomer.sh`` run anyway.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(sh|bash)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[str]:
    return [body for _, info, body in BLOCK.findall(page.read_text(encoding="utf-8")) if "no-test" not in info]


def sandbox(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Dee Veloper\n\temail = dee@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "memcli").write_text(f"#!/bin/sh\nexec {sys.executable} -m memcli \"$@\"\n", encoding="utf-8")
    (bin_dir / "memcli").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "GIT_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1",
               PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", TZ="UTC")
    project = tmp_path / "my-project"
    (project / "web" / "src").mkdir(parents=True)
    (project / "web" / "src" / "app.ts").write_text("export const app = 1;\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "web app"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)
    return env


@pytest.mark.slow  # every shell block of every page, in real shells
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    env = sandbox(tmp_path)
    here = tmp_path / ".cwd"
    here.write_text(str(tmp_path))
    for number, body in enumerate(blocks(page), 1):
        # one terminal per page: a block starts where the one before it left off (its `cd`)
        script = f'cd "$(cat {here})"\n{body}\npwd > {here}\n'
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{page.name} block {number} failed:\n{body}\n--- stderr:\n{done.stderr}"
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
