"""Small command-line fixes from newcomer report 1, problem 12 (the parts not about summaries).

Real workspaces and the real CLI in subprocesses.
"""

from __future__ import annotations

import pytest

from conftest import git

IDS = ("show", "history", "log", "rollback", "approve", "forget")


@pytest.mark.parametrize("limit", ["0", "-1", "1001"])
def test_log_limit_out_of_range_is_a_validation_error_like_recall(ws, run, limit):
    result = run("log", "--limit", limit)
    assert result.code == 5 and result.out == "", result
    assert result.err == f"memcli: error: invalid limit {limit}: use 1 to 1000\n"
    assert run("recall", "x", "--limit", limit).code == 5  # the same rule as recall's
    error = run("--json", "log", "-n", limit).json()["error"]
    assert (error["code"], error["exit"]) == ("validation_failed", 5)
    assert run("log", "--limit", "1").code == 0


def test_json_version_prints_an_envelope(run):
    result = run("--json", "--version")
    assert result.code == 0 and result.err == "", result
    envelope = result.json()
    assert envelope["ok"] is True and envelope["schema"] == "memcli/v1"
    assert envelope["data"]["version"] == run("--version").out.split()[-1]
    assert run("--version").out.startswith("memcli ")


@pytest.mark.parametrize("command", IDS)
def test_an_empty_id_is_a_validation_error(ws, run, command):
    result = run(command, "")
    assert result.code == 5 and result.out == "", result
    assert result.err.startswith("memcli: error: invalid id '': ") and result.err.count("\n") == 1


@pytest.mark.parametrize("ref", ["../etc", "a b c d", "x/yz", "  "])
def test_the_invalid_id_message_fits_whole_ids_and_prefixes(ws, run, ref):
    result = run("show", ref)
    assert result.code == 5, result
    assert "1-64 characters" in result.err and "first 4 or more characters" in result.err
    assert run("--json", "log", ref).json()["error"]["exit"] == 5


def test_a_short_well_formed_prefix_is_a_validation_error(ws, run):
    # was "not found" (4); the exit table's 5 covers an id memcli does not accept (README: 4 or more)
    result = run("show", "abc")
    assert result.code == 5 and "at least 4 characters" in result.err, result


@pytest.mark.parametrize("value", ["99999y", "99999999999999999y", "0d", "soon"])
def test_a_bad_ttl_in_the_config_is_a_config_error(ws, run, value):
    config = ws / "memcli.toml"
    text = config.read_text()
    assert 'goal = "30d"' in text
    config.write_text(text.replace('goal = "30d"', f'goal = "{value}"'))
    for args in (("remember", "Ship the beta by Friday", "--category", "goal"), ("list",)):
        result = run(*args)
        assert result.code == 3, result
        assert "[ttl] goal" in result.err and "--ttl" not in result.err and "never" in result.err
        assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert not list((ws / "memories").rglob("*.md"))


def test_doctor_fix_counts_one_file_in_the_singular(ws, run):
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deploy-days.md").write_text("Deploys go out on Tuesdays.\n")
    git(ws, "add", "memories")
    git(ws, "commit", "-q", "-m", "a note by hand")
    result = run("doctor", "--fix")
    assert result.code == 0, result
    assert "wrote defaults into 1 file (commit " in result.err and "1 files" not in result.err


def test_the_library_checks_ids_as_the_cli_does(ws):
    """``Ctx.resolve`` itself refuses an empty or malformed id (exit 5), not only the CLI."""
    import pytest

    from memcli.errors import MemoryNotFound, ValidationFailed
    from memcli.service import Ctx

    ctx = Ctx.open(str(ws), "alice")
    for bad in ("", "   ", "../x", "a/b", "x\x00y"):
        with pytest.raises(ValidationFailed, match="give a whole id"):
            ctx.resolve(bad)
    with pytest.raises(ValidationFailed, match="at least 4 characters"):
        ctx.resolve("abc")
    with pytest.raises(MemoryNotFound):
        ctx.resolve("abcd")


# --- newcomer's finding 10: each wrong setting or value its own message --------------------


@pytest.mark.parametrize(("old", "new", "says", "not_said"), [
    ("budget = 8000", "budget = 10", "[context] budget must be at least 200 characters", "lock_timeout"),
    ("lock_timeout = 10", "lock_timeout = -1", "[git] lock_timeout must not be negative", "budget"),
])
def test_each_out_of_range_setting_has_its_own_message(ws, run, old, new, says, not_said):
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8")
    assert old in text
    config.write_text(text.replace(old, new), encoding="utf-8")
    result = run("list")
    assert result.code == 3 and says in result.err and not_said not in result.err, result
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


@pytest.mark.parametrize("ttl", ["0d", "0h", "-1d", "-3w"])
def test_a_ttl_of_zero_or_less_is_said_to_be_not_positive(ws, run, ttl):
    result = run("remember", "Expires at once", f"--ttl={ttl}")
    assert result.code == 5 and "--ttl: a TTL must be positive" in result.err, result
    assert "not a duration" not in result.err and result.err.count("\n") == 1
    assert not list((ws / "memories").rglob("*.md"))
    soon = run("remember", "Expires some day", "--ttl", "soon")
    assert soon.code == 5 and "not a duration" in soon.err, soon


def test_an_empty_read_list_is_warned_on_every_read(ws, run):
    assert run("remember", "Deploys go out on Tuesdays").code == 0
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith("read = "))
    config.write_text(text.replace(line, "read = []"), encoding="utf-8")
    for args in (("list",), ("context",), ("recall", "deploys")):
        result = run(*args)
        assert result.code == 0 and "Tuesdays" not in result.out, result
        assert "[scopes] read is empty" in result.err and "unless --scope names one" in result.err, result
    named = run("list", "--scope", "project")
    assert "Tuesdays" in named.out, named


def test_an_export_with_nothing_to_export_says_so(ws, project, run):
    from pathlib import Path

    from memcli.agents.memstores import claude_store

    store = Path.home() / ".claude" / "projects" / claude_store.project_slug(project) / "memory"
    store.mkdir(parents=True)
    (store / "MEMORY.md").write_text("- [Role](role.md) — the user's role\n", encoding="utf-8")
    before = sorted((p.name, p.read_bytes()) for p in store.iterdir())
    result = run("export", "--format", "claude-memory", cwd=project)
    assert result.code == 0, result
    assert result.out.strip() == (f"nothing to export (claude-memory): no active memory in user:alice; "
                                  f"~/.claude/projects/{store.parent.name}/memory is left as it was"), result
    assert sorted((p.name, p.read_bytes()) for p in store.iterdir()) == before
    assert run("remember", "Prefer uv over pip", "--scope", "user:alice").code == 0
    one = run("export", "--format", "claude-memory", cwd=project)
    assert one.out.startswith("exported (claude-memory) 1 memory to ") and "2 files changed" in one.out, one
