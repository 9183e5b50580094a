"""Real MCP clients no one here wrote: the MCP Inspector's CLI and Claude Code's `claude mcp list`.

Runs ``scripts/mcp-inspector-check.sh``, which installs the pinned npm CLIs once into
``$MEMCLI_AGENT_PREFIX`` (default ``.cache/agent-clis``, git-ignored) and drives
``memcli mcp`` with them on a throw-away workspace and private HOME.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real agent CLIs or kill loops: CI runs them, the inner loop does not

SCRIPT = Path(__file__).parent.parent / "scripts" / "mcp-inspector-check.sh"


def test_inspector_lists_and_calls_the_tools_and_claude_connects() -> None:
    memcli = Path(sys.executable).parent / "memcli"
    env = {**os.environ, "MEMCLI_BIN": str(memcli)}
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=900,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "ok: inspector tools/list" in out and "recall remember review show supersede" in out
    assert "ok: inspector tools/call recall query=pnpm: user:alice | Use pnpm" in out
    assert "Connected" in out and "mcp-inspector-check: all checks passed" in out
