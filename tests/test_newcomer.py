"""A newcomer's first five minutes, as CI can repeat it (issue 14): scripts/newcomer.sh clones
this repository, follows the README's install and Claude Code quick start word for word
(reading the commands out of README.md) and checks each step's output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_readme_install_and_quick_start_work_word_for_word() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "GIT_", "PIPX_", "VIRTUAL_ENV"))}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "newcomer.sh")], capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "newcomer: ok:" in done.stderr
