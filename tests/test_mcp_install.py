"""`memcli mcp install|uninstall AGENT`: where each agent looks, merging without clobbering, restoring."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conftest import Result, run_memcli


def install(project: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return run_memcli("--json", "mcp", "install", *args, cwd=project, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    return folder


def assert_absolute_memcli(entry: dict) -> None:
    program = Path(entry["command"])
    assert program.is_absolute() and program.exists()
    assert program.name == "memcli" or entry["args"][:2] == ["-m", "memcli"]
    assert "mcp" in entry["args"]


def assert_launcher(entry: dict) -> None:
    """A shared file's entry: the launcher that finds memcli (no path of this machine)."""
    from memcli.agents.launch_command import PREFIX

    assert [entry["command"], *entry["args"][:3]] == list(PREFIX) and "mcp" in entry["args"]


def test_claude_project_and_user_entries_keep_everything_else(project: Path, tmp_path: Path) -> None:
    mcp_json = project / ".mcp.json"
    original = {"mcpServers": {"other": {"command": "/usr/bin/other", "args": []}}, "note": "kept"}
    mcp_json.write_text(json.dumps(original, indent=2) + "\n", encoding="utf-8")
    before = mcp_json.read_text(encoding="utf-8")
    result = install(project, "claude")
    assert result.code == 0, result
    data = json.loads(mcp_json.read_text(encoding="utf-8"))
    assert data["note"] == "kept" and data["mcpServers"]["other"] == original["mcpServers"]["other"]
    entry = data["mcpServers"]["memcli"]
    assert entry["type"] == "stdio"
    assert_launcher(entry)
    assert result.json()["data"]["changes"] == ["added mcpServers.memcli"]
    assert install(project, "claude").json()["data"]["changes"] == []  # twice: no change, no write
    removed = run_memcli("--json", "mcp", "uninstall", "claude", cwd=project)
    assert removed.code == 0 and removed.json()["data"]["changes"] == ["removed mcpServers.memcli"]
    assert mcp_json.read_text(encoding="utf-8") == before

    claude_json = Path.home() / ".claude.json"
    claude_json.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {}}}, indent=2) + "\n", encoding="utf-8")
    claude_json.chmod(0o600)
    user_before = claude_json.read_text(encoding="utf-8")
    assert install(project, "claude", "--user", "--scope", "user:alice", "--read-only").code == 0
    data = json.loads(claude_json.read_text(encoding="utf-8"))
    assert_absolute_memcli(data["mcpServers"]["memcli"])
    assert data["numStartups"] == 3 and data["projects"] == {"/x": {}}
    assert data["mcpServers"]["memcli"]["args"][-4:] == ["mcp", "--scope", "user:alice", "--read-only"]
    assert claude_json.stat().st_mode & 0o777 == 0o600
    assert run_memcli("mcp", "uninstall", "claude", "--user", cwd=project).code == 0
    assert claude_json.read_text(encoding="utf-8") == user_before


def test_a_file_made_by_install_is_removed_by_uninstall_and_a_workspace_is_pinned(project: Path,
                                                                                   tmp_path: Path) -> None:
    ws = project / "ws"
    assert run_memcli("init", str(ws)).code == 0
    settings = project / ".gemini" / "settings.json"
    assert run_memcli("-w", str(ws), "mcp", "install", "gemini", cwd=project).code == 0
    entry = json.loads(settings.read_text(encoding="utf-8"))["mcpServers"]["memcli"]
    assert_launcher(entry)
    assert entry["args"][entry["args"].index("-w") + 1] == "ws"  # shared: relative to the project
    assert run_memcli("mcp", "uninstall", "gemini", cwd=project).code == 0
    assert not settings.exists()


def test_codex_toml_keeps_comments_and_uninstall_gives_the_file_back(project: Path) -> None:
    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir()
    original = ('# my codex settings\nmodel = "o4"  # the default model\n\n'
                '[mcp_servers.docs]\ncommand = "docs-server"\nargs = ["--port", "1"]\n\n'
                '[profiles.fast]\nmodel = "mini"\n')
    config.write_text(original, encoding="utf-8")
    result = install(project, "codex", "--user")
    assert result.code == 0, result
    text = config.read_text(encoding="utf-8")
    assert text.startswith(original.split("[profiles")[0][:40]) and "# the default model" in text
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--port", "1"]}
    assert parsed["profiles"] == {"fast": {"model": "mini"}}
    assert_absolute_memcli(parsed["mcp_servers"]["memcli"])
    assert install(project, "codex", "--user").json()["data"]["changes"] == []
    assert run_memcli("mcp", "uninstall", "codex", "--user", cwd=project).code == 0
    assert config.read_text(encoding="utf-8") == original

    local = install(project, "codex")  # a trusted project's .codex/config.toml
    assert local.code == 0 and "trusted" in local.json()["warnings"][0]
    assert_launcher(tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["memcli"])


def test_a_symlink_is_written_through(project: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}\n', encoding="utf-8")
    link = Path.home() / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert install(project, "gemini", "--user").code == 0
    assert link.is_symlink()
    data = json.loads(real.read_text(encoding="utf-8"))
    assert data["theme"] == "dark" and "memcli" in data["mcpServers"]


@pytest.mark.parametrize("agent, name, content, why", [
    ("claude", ".mcp.json", '{"mcpServers": {"a": 1},', "is not valid JSON"),
    ("claude", ".mcp.json", '["a list"]', "does not hold a JSON object"),
    ("gemini", ".gemini/settings.json", '{"mcpServers": []}', "mcpServers value that is not an object"),
    ("gemini", ".gemini/settings.json", '{\n  // a comment\n  "theme": "dark"\n}', "is not valid JSON"),
    ("gemini", ".gemini/settings.json", '{"a": 1, "a": 2}', "has the key 'a' twice"),  # was rewritten as {"a": 2}
    ("claude", ".mcp.json", '{"mcpServers": {"x": {"command": "a"}, "x": {"command": "b"}}}', "has the key 'x' twice"),
    ("codex", ".codex/config.toml", 'model = "o4\n', "is not valid TOML"),
    ("codex", ".codex/config.toml", 'mcp_servers = "none"\n', "not a table"),
])
def test_a_file_that_cannot_be_merged_safely_is_refused_with_one_line(project: Path, agent: str, name: str,
                                                                       content: str, why: str) -> None:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    result = run_memcli("mcp", "install", agent, cwd=project)
    assert result.code == 5 and result.out == ""
    assert result.err.count("\n") == 1 and why in result.err and "left it as it is" in result.err
    assert path.read_text(encoding="utf-8") == content


def test_unknown_agent_and_bad_options_are_usage_errors(project: Path) -> None:
    result = run_memcli("mcp", "install", "cursor", cwd=project)
    assert result.code == 2 and "unknown agent 'cursor'" in result.err and result.err.count("\n") == 1
    result = run_memcli("mcp", "install", "claude", "--scope", "user:bob", cwd=project)
    assert result.code == 5 and "personal to bob" in result.err
    assert not (project / ".mcp.json").exists()


def test_the_installed_command_runs_from_an_empty_path(project: Path) -> None:
    """R9 for MCP: the agent starts the server with its own PATH; the absolute command still runs."""
    assert install(project, "claude").code == 0
    entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["memcli"]
    import subprocess

    proc = subprocess.run([entry["command"], *entry["args"], "--help"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}, timeout=120)
    assert proc.returncode == 0 and "install" in proc.stdout
