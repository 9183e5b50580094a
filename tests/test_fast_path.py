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
@pytest.mark.slow
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
    for argv in (["recall", "pnpm"], ["context"], ["--version"], ["index", "status"], ["remember", "A new fact"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


@pytest.mark.parametrize("argv", [
    ["remember", "Use pnpm, not npm, for JavaScript packages."],
    ["--json", "remember", "Deploy with make deploy", "-t", "ops", "--tag", "ci", "--importance", "4"],
    ["remember", "Pin this one", "--pinned", "--json"], ["remember", "Not pinned", "--no-pinned", "--json"],
    ["remember", "Never run rm -rf / on the build host", "--deny", "Bash(rm -rf:*)", "-c", "procedure"],
    ["remember", "A fact for a subject", "--subject", "db.port", "--ttl", "30d", "--path", "src/**"],
    ["remember", "x", "--importance", "abc"], ["remember", "x", "--importance", "9"], ["remember"],
    ["remember", "a", "b"], ["remember", "Bad conflict", "--on-conflict", "maybe"], ["remember", "--help"],
    ["remember", "t", "--bogus"], ["remember", "t", "--pinned=yes"], ["-w", "nowhere", "remember", "t"],
    ["remember", "The key is ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "--json"],
    ["--actor", "bob", "remember", "Bob prefers tabs", "--scope", "user:bob"],
])
@pytest.mark.slow
def test_fast_and_typer_paths_write_and_print_the_same(tmp_path, run, argv):
    """A remember through the fast path and through typer, each on its own new workspace: the
    same status, output (ids and instants aside) and files."""
    import re

    def normal(text: str) -> str:
        text = re.sub(r"\b[0-9a-f]{40}\b", "COMMIT", re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "T", text))
        return re.sub(r"\b[0-9a-z]{26}\b", "ID", text).replace(
            str(tmp_path), "TMP").replace("/fast/", "/X/").replace("/typer/", "/X/")

    seen = []
    for name, env in (("fast", {}), ("typer", {"MEMCLI_NO_FAST": "1"})):
        ws = tmp_path / name
        assert run("init", str(ws)).code == 0
        result = run(*argv, cwd=ws, env={"MEMCLI_WORKSPACE": str(ws), **env})
        files = sorted(re.sub(r"[0-9a-z]{26}", "ID", p.relative_to(ws).as_posix())
                       for p in (ws / "memories").rglob("*.md"))
        seen.append((result.code, normal(result.out), normal(result.err), files))
    assert seen[0] == seen[1]


def test_a_fast_remember_reads_its_text_from_stdin(ws, run):
    made = run("--json", "remember", "-", input="Read from stdin: the staging port is 5433\n")
    assert made.code == 0, made
    assert run("--json", "recall", "staging").json()["data"]["hits"][0]["text"].startswith("Read from stdin")
