"""Shared settings files name no path of this machine (issue 19 item 6, CASES.md R9 and T11).

`hook install claude` and `mcp install claude` in a repository, the files committed and
cloned on a "second machine" (another HOME, memcli installed in another virtual
environment, the first one gone from PATH): `memcli hook check claude` passes there, and the
MCP entry starts the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from conftest import git, run_memcli

FIRST = str(Path(sys.executable).absolute().parent)  # this machine's memcli lives here
MINIMAL = {"PATH": "/usr/bin:/bin"}


def second_install(root: Path) -> Path:
    """memcli installed in another virtual environment at ``root``: its own interpreter and
    console script, the packages found through a ``.pth`` file (as an install would put them)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=60)
    site = Path(subprocess.run([str(root / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    packages = sysconfig.get_paths()["purelib"]  # addsitedir also runs its .pth files (the editable install's)
    (site / "memcli-deps.pth").write_text(f"import site; site.addsitedir({packages!r})\n", encoding="utf-8")
    script = root / "bin" / "memcli"
    script.write_text(f"#!{root / 'bin' / 'python'}\nimport sys\nfrom memcli.cli import main\nsys.exit(main())\n",
                      encoding="utf-8")
    script.chmod(0o755)
    return script


def new_home(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / ".gitconfig").write_text("[user]\n\tname = Bob\n\temail = bob@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    return path


@pytest.fixture
def shared_repo(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Machine one: `init`, a memory, `hook install claude` and `mcp install claude`, the two
    files committed and everything pushed to a bare remote. Returns ``(project, remote)``."""
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("remember", "The staging database is called ledger_stage.", cwd=project).code == 0
    hooks = run_memcli("hook", "install", "claude", cwd=project)
    assert hooks.code == 0, hooks
    assert "settings.json (shared: meant to be committed" in hooks.out
    assert "launcher: " in hooks.out and "(personal, this machine only)" in hooks.out
    mcp = run_memcli("mcp", "install", "claude", cwd=project)
    assert mcp.code == 0 and ".mcp.json (shared: meant to be committed" in mcp.out, mcp
    git(project, "add", ".claude/settings.json", ".mcp.json")
    git(project, "commit", "-q", "-m", "memcli hooks and MCP server")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "origin", "--all")
    return project, remote


def test_shared_files_hold_no_path_of_this_machine(shared_repo):
    project, _ = shared_repo
    for name in (".claude/settings.json", ".mcp.json"):
        text = (project / name).read_text(encoding="utf-8")
        for machine in (FIRST, str(Path.home()), str(project)):
            assert machine not in text, (name, machine)
    entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["memcli"]
    assert entry["command"] == "sh" and entry["args"][0] == "-c" and entry["args"][2:] == ["memcli", "mcp"]
    launcher = Path.home() / ".local" / "share" / "memcli" / "bin" / "memcli"
    assert FIRST in launcher.read_text(encoding="utf-8") and os.access(launcher, os.X_OK)
    again = run_memcli("hook", "install", "claude", cwd=project)
    assert again.code == 0 and "nothing to change" in again.out and "launcher:" not in again.out, again


@pytest.mark.slow
def test_a_teammate_with_memcli_elsewhere_passes_hook_check(shared_repo, tmp_path):
    """T11: another HOME, memcli in another virtual environment, this one not on PATH."""
    _, remote = shared_repo
    home = new_home(tmp_path / "machine2" / "home")
    memcli2 = second_install(tmp_path / "machine2" / "venv")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **MINIMAL}
    clone = tmp_path / "machine2" / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True, env=env, timeout=60)

    def memcli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(memcli2), *args], cwd=clone, env=env, capture_output=True, text=True, timeout=120)

    # memcli on the agent's PATH (as pipx puts it): the committed hooks run as they are
    pipx_bin = home / ".local" / "bin"
    pipx_bin.mkdir(parents=True)
    (pipx_bin / "memcli").symlink_to(memcli2)
    check = memcli("hook", "check", "claude")
    assert check.returncode == 0, check
    lines = [line for line in check.stdout.splitlines() if not line.startswith("\t")]  # "\t": a hook's note
    assert len(lines) == 5 and all(line.startswith("pass\tclaude\t") for line in lines), lines
    assert "ledger_stage" in memcli("context").stdout  # the team's memory branch was taken up
    # memcli only in a virtual environment off PATH: check names what to do; one install fixes it
    (pipx_bin / "memcli").unlink()
    failed = memcli("hook", "check", "claude")
    assert failed.returncode == 18 and "exit 127: memcli: not found" in failed.stdout, failed
    assert "memcli hook install" in failed.stdout
    installed = memcli("hook", "install", "claude")
    assert installed.returncode == 0 and "nothing to change" in installed.stdout, installed
    assert "no memcli workspace" not in installed.stderr  # the hooks check out the memory branch
    assert str(memcli2) in installed.stdout  # the personal launcher names this machine's memcli
    assert git(clone, "status", "--porcelain") == ""  # the shared file is as committed
    check = memcli("hook", "check", "claude")
    assert check.returncode == 0, check
    entry = json.loads((clone / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["memcli"]
    server = subprocess.run([entry["command"], *entry["args"], "--help"], cwd=clone, capture_output=True,
                            text=True, env={"HOME": str(home), **MINIMAL}, timeout=120)
    assert server.returncode == 0 and "install" in server.stdout, server


def test_no_memcli_anywhere_is_one_line_and_exit_127(tmp_path, shared_repo):
    project, _ = shared_repo
    command = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0]
    home = new_home(tmp_path / "empty-home")
    proc = subprocess.run(["/bin/sh", "-c", command["command"]], input="{}", capture_output=True, text=True,
                          cwd=project, env={"HOME": str(home), **MINIMAL}, timeout=30)
    assert proc.returncode == 127 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc
    assert proc.stderr.startswith("memcli: not found") and "memcli hook install" in proc.stderr


@pytest.mark.parametrize("agent, name", [("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")])
@pytest.mark.slow
def test_codex_and_gemini_project_files_get_the_launcher(project, agent, name):
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("hook", "install", agent, cwd=project).code == 0
    assert run_memcli("mcp", "install", agent, cwd=project).code == 0
    texts = [(project / name).read_text(encoding="utf-8")]
    if agent == "codex":
        config = (project / ".codex" / "config.toml").read_text(encoding="utf-8")
        assert tomllib.loads(config)["mcp_servers"]["memcli"]["command"] == "sh"
        texts.append(config)
    assert all(FIRST not in text and str(Path.home()) not in text for text in texts)
    check = run_memcli("hook", "check", agent, cwd=project, env=MINIMAL)
    assert check.code == 0, check


def test_a_pinned_workspace_is_relative_in_a_shared_file_and_refused_outside_it(project, tmp_path):
    inner = project / "team-memory"
    assert run_memcli("init", str(inner)).code == 0
    assert run_memcli("-w", str(inner), "hook", "install", "claude", cwd=project).code == 0
    command = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"][0]["hooks"][0]
    assert command["command"].endswith(" memcli -w team-memory hook claude session-end")
    outside = tmp_path / "elsewhere"
    assert run_memcli("init", str(outside)).code == 0
    for args in (["hook", "install", "gemini"], ["mcp", "install", "gemini"]):
        refused = run_memcli("-w", str(outside), *args, cwd=project)
        assert refused.code == 2 and refused.err.count("\n") == 1, refused
        assert "outside the project" in refused.err and "--user" in refused.err
    assert not (project / ".gemini").exists()
    personal = run_memcli("-w", str(outside), "mcp", "install", "gemini", "--user", cwd=project)
    assert personal.code == 0 and "(personal: yours only)" in personal.out


def test_an_actor_is_refused_in_a_shared_mcp_file_and_kept_in_a_personal_one(project):
    refused = run_memcli("--actor", "alice@example.invalid", "mcp", "install", "claude", cwd=project)
    assert refused.code == 2 and refused.err.count("\n") == 1 and "every teammate" in refused.err, refused
    assert not (project / ".mcp.json").exists()
    assert run_memcli("--actor", "alice@example.invalid", "mcp", "install", "claude", "--user", cwd=project).code == 0
