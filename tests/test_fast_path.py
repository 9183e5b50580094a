"""The typer-free fast path for `recall` and `context` behaves exactly like the typer path."""

import pytest

from memcli.cli import fast
from memcli.cli.app import app


def typer_options(name: str) -> set[str]:
    import typer.main

    command = typer.main.get_command(app).commands[name]
    return {opt for p in command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")} - {"--help"}


@pytest.mark.parametrize("name", sorted(fast.COMMANDS))
def test_fast_parser_knows_exactly_the_typer_options(name):
    assert set(fast.COMMANDS[name]) == typer_options(name)


@pytest.mark.parametrize("argv", [
    ["recall", "pnpm"], ["recall", "pnpm", "--json"], ["--json", "recall", "npm", "-n", "1"],
    ["recall", "x", "--limit=abc"], ["recall", "--help"], ["recall"], ["recall", "a", "b"],
    ["recall", "pnpm", "--scope", "user:bob"], ["recall", "(", "--grep"], ["recall", "", "--json"],
    ["recall", "pnpm", "--explain", "--json"], ["recall", "pnpm", "--status", "bogus"],
    ["context"], ["context", "--json"], ["context", "--budget", "300"], ["context", "--format", "yaml"],
    ["context", "-q", "pnpm", "--format", "markdown"], ["context", "--budget", "x"], ["context", "extra"],
    ["-w", "nowhere", "context"], ["--actor", "bob", "recall", "pnpm"], ["recall", "pnpm", "--bogus"],
    ["--version"], ["--json", "--version"], ["index", "status"], ["-w", "nowhere", "index", "status"],
    ["index", "status", "--bogus"], ["--json", "-w", "nowhere", "index", "status"],
])
def test_fast_and_typer_paths_print_the_same(ws, run, argv):
    run("remember", "Use pnpm, not npm, for JavaScript packages.", "--tag", "js")
    run("remember", "Bob prefers tabs.", "--scope", "user:bob", env={"MEMCLI_ACTOR": "bob"})
    fast_result = run(*argv)
    typer_result = run(*argv, env={"MEMCLI_NO_FAST": "1"})
    assert (fast_result.code, fast_result.out, fast_result.err) == \
        (typer_result.code, typer_result.out, typer_result.err)


def test_hot_commands_do_not_import_typer(ws, run):
    import subprocess
    import sys

    code = ("import sys\nfrom memcli.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('typer', 'click', 'rich', 'git'))), file=sys.stderr)")
    for argv in (["recall", "pnpm"], ["context"], ["--version"], ["index", "status"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
