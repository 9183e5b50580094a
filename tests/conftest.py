"""Shared fixtures: every test runs with a clean environment and its own folders.

Tests use real parts: real git repositories in temporary folders, real files, and memcli's
real command line (``run``): its entry point called in the test process, or a real
``python -m memcli`` process where the process boundary is the point (``cli_runner.py``
says which; a test marked ``@pytest.mark.process`` and ``run_proc`` always start one).
Nothing is mocked.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cli_runner
from cli_runner import MEMCLI, Result, Runner, run_memcli, run_memcli_proc

__all__ = ["MEMCLI", "Result", "run_memcli", "run_memcli_proc", "git", "personal_store", "shared_tree"]

# Sandboxes and CI runners often set PYTHONDONTWRITEBYTECODE=1. Then no .pyc is ever written
# for memcli's own modules (an editable install compiles nothing), so every memcli process a
# test starts compiled each module it imports from source, and every xdist worker rewrote
# every test module again (pytest keeps no rewritten copy either). Measured on three hook
# test files with -n 3: 64 s of CPU with it set, 44 s without. The test processes write them.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session", autouse=True)
def no_fork_server_left_behind():
    """Stop the warm fork servers (memcli/cli/zygote.py) this session's processes started.

    Tests run with ``MEMCLI_NO_SERVER=1``, but an agent CLI or a hook command run with a
    minimal environment (``PATH`` and ``HOME`` only, as the agents give) starts one in the
    system's socket folder, and the README's install test one of a throw-away pipx venv. At the
    end, every memcli server process that started after the session did gets SIGTERM (a
    command that finds its server gone runs in-process).
    """
    began = time.time()
    yield
    try:
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        ticks = os.sysconf("SC_CLK_TCK")
        entries = list(Path("/proc").iterdir())
    except (OSError, StopIteration, ValueError):
        return  # not Linux: nothing to find this way
    for entry in entries:
        try:
            if not entry.name.isdigit():
                continue
            command = (entry / "cmdline").read_bytes()
            if b"from memcli.cli.zygote import main" not in command:
                continue
            started = boot + int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[19]) / ticks
            if started >= began - 1:
                os.kill(int(entry.name), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            continue


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No memcli, git or locale setting leaks in from the developer's machine."""
    for name in list(os.environ):
        if name.startswith(("MEMCLI_", "GIT_")):
            monkeypatch.delenv(name, raising=False)
    for name in ("CLAUDECODE", "CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "GEMINI_CLI"):
        monkeypatch.delenv(name, raising=False)  # run inside an agent, a test's write would be the agent's
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("MEMCLI_ACTOR", "alice")
    # the MCP servers of the tests load no model (each load costs 2 s of CPU, and a model that
    # comes up in the middle of a test changes what recall finds); tests/test_semantic*.py
    # turn it back on (their fixture semantic_on)
    monkeypatch.setenv("MEMCLI_SEMANTIC", "off")
    monkeypatch.setenv("TZ", "UTC")
    # a store's freshness watcher (memcli/index/watcher.py) that a test's read starts exits
    # after this many idle seconds instead of ten minutes: a run leaves no crowd of them behind
    monkeypatch.setenv("MEMCLI_TEST_WATCH_IDLE", "20")
    # no command of a test hands itself to a warm fork server (memcli/cli/zygote.py) or starts
    # one: tests/test_fork_server.py turns it on, with its own socket folder, and stops its servers
    monkeypatch.setenv("MEMCLI_NO_SERVER", "1")
    monkeypatch.chdir(tmp_path)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--all-processes", action="store_true",
                     help="memcli: run every run/run_memcli call as a real process, as before the in-process "
                          "runner (to compare the two forms of a test)")


@pytest.fixture(autouse=True)
def _runner_mode(request: pytest.FixtureRequest):
    """A test marked ``process`` (or any, with ``--all-processes``) runs every ``run``/``run_memcli``
    call as a real process."""
    cli_runner.FORCE_PROCESS = (request.node.get_closest_marker("process") is not None
                                or request.config.getoption("--all-processes"))
    yield
    cli_runner.FORCE_PROCESS = False


@pytest.fixture
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """``[search] semantic`` as the workspace says (default auto), not the tests' ``off``."""
    monkeypatch.delenv("MEMCLI_SEMANTIC", raising=False)


@pytest.fixture
def run() -> Runner:
    """``run(*args, cwd=..., input=..., env=...)`` -> Result; see ``cli_runner.run_memcli``
    (in this process unless the call or the test needs a real one)."""
    return run_memcli


@pytest.fixture
def run_proc() -> Runner:
    """As ``run``, always a real ``python -m memcli`` process (``cli_runner.run_memcli_proc``)."""
    return run_memcli_proc


#: Workspaces made by ``memcli init`` in this test process, by what init reads of the
#: environment (see :func:`_init_key`): the ``ws`` fixture copies one instead of running
#: init again for every test (about 0.15 s each, a tenth of the suite's set-up time).
_INIT_TEMPLATES: dict[tuple[str, ...], Path] = {}


def _init_key() -> tuple[str, ...] | None:
    """What ``memcli init`` reads besides its argument: memcli's and git's variables, the
    time zone, the locale and the person's git configuration in the test's ``$HOME``; None
    when there is more (a configuration under ``$XDG_CONFIG_HOME``): then init runs itself."""
    home = Path(os.environ["HOME"])
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    if (xdg / "git").exists() or (xdg / "memcli").exists() or (home / ".config").exists():
        return None
    env = tuple(sorted(f"{k}={v}" for k, v in os.environ.items()
                       if k.startswith(("MEMCLI_", "GIT_", "LC_", "LANG", "TZ", "PATH"))))
    gitconfig = home / ".gitconfig"
    return (*env, gitconfig.read_text(encoding="utf-8") if gitconfig.is_file() else "")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh workspace (its own git repository) at ``tmp_path/ws``: what ``memcli init``
    makes, copied from the one it made for an earlier test with the same environment (the
    workspace id is then the same across tests; each test has its own ``$HOME``, so its own
    personal store)."""
    path = tmp_path / "ws"
    key = _init_key()
    template = _INIT_TEMPLATES.get(key) if key is not None else None
    if template is None:
        made = tmp_path_factory.mktemp("ws-template") / "ws" if key is not None else path
        result = run_memcli("init", str(made))
        assert result.code == 0, result
        if key is None:
            monkeypatch.setenv("MEMCLI_WORKSPACE", str(path))
            return path
        template = _INIT_TEMPLATES[key] = made
    shutil.copytree(template, path, symlinks=True, copy_function=shutil.copy)
    monkeypatch.setenv("MEMCLI_WORKSPACE", str(path))
    return path


@pytest.fixture
def shared_tree_ws(ws: Path) -> Path:
    """``ws`` made a shared tree (see :func:`shared_tree`)."""
    return shared_tree(ws)


def shared_tree(ws: Path) -> Path:
    """``ws`` without a ``[workspace] id``, as a workspace made before issue 12: it keeps
    every scope in its own tree, other people's personal scopes included (the case the
    scope-isolation tests of a shared tree are about)."""
    config = ws / "memcli.toml"
    config.write_text("\n".join(line for line in config.read_text(encoding="utf-8").splitlines()
                                if not line.startswith("id = ")) + "\n", encoding="utf-8")
    git(ws, "commit", "-q", "-m", "no workspace id", "--", "memcli.toml")
    return ws


def personal_store(ws: Path) -> Path:
    """The root of the person's own store of the workspace ``ws`` (``memcli.store.personal``),
    for this test's ``$HOME`` (it may not exist yet)."""
    import tomllib

    workspace_id = tomllib.loads((ws / "memcli.toml").read_text(encoding="utf-8"))["workspace"]["id"]
    return Path(os.environ["HOME"]) / ".local" / "share" / "memcli" / "projects" / workspace_id


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project's own git repository at ``tmp_path/project``, one commit, no workspace yet."""
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("# project\n", encoding="utf-8")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path


def git(path: Path, *args: str) -> str:
    """Run git in ``path`` and return stdout (raises on failure)."""
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True).stdout
