"""The real agent CLIs (issue 9 point 8): scripts/real-agents.py installs the pinned Claude Code,
Codex and Gemini CLIs from npm (cached in .cache/agent-clis/ or $MEMCLI_AGENT_PREFIX), starts each with
memcli's hooks in a throw-away project, PATH=/usr/bin:/bin plus node's folder, and checks from
the CLIs' own logs that every hook exited 0 and the context reached the session.

Needs Node.js 20+, npm and the npm registry (the first run installs about 1 GB); CI has them.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "real-agents.py"
#: read before the autouse fixture of conftest clears every MEMCLI_ variable
PREFIX = os.environ.get("MEMCLI_AGENT_PREFIX")


def test_real_agent_clis_run_memcli_hooks_without_memcli_on_path():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "GIT_"))}
    if PREFIX:
        env["MEMCLI_AGENT_PREFIX"] = PREFIX
    # a hang guard for the npm install and three CLI runs, not a speed assertion
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "real-agents: all checks passed" in done.stdout
    for line in ("claude SessionStart hook", "claude UserPromptSubmit hook", "claude PreCompact hook",
                 "claude SessionEnd hook", "claude context reached the session", "codex SessionStart hook",
                 "codex context reached the session", "gemini SessionStart hook", "gemini context reached the session"):
        assert f"ok    {line}: " in done.stdout, done.stdout
