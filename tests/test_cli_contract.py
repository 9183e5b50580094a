"""The --json envelope and the error contract, pinned (STYLE.md habit 3)."""

import json

import pytest

ENVELOPE_OK = {"schema", "command", "ok", "data", "warnings"}
ENVELOPE_ERR = {"schema", "command", "ok", "error", "warnings"}


def test_success_envelope(ws, run):
    result = run("remember", "Run the tests with pytest -n 2.", "--json")
    assert result.code == 0
    body = result.json()
    assert set(body) == ENVELOPE_OK
    assert body["schema"] == "memcli/v1" and body["command"] == "remember" and body["ok"] is True
    assert body["data"]["outcome"] == "created"
    assert [g["gate"] for g in body["data"]["gates"]] == [
        "validation", "sensitive_data", "idempotency", "duplicate", "conflict", "review"]


@pytest.mark.parametrize("args, code, exit_code", [
    (["show", "zzzzzz"], "memory_not_found", 4),
    (["remember", "x y z", "--scope", "nope"], "validation_failed", 5),
    (["remember", "   "], "validation_failed", 5),
    (["recall", "a", "--status", "bogus"], "validation_failed", 5),
    (["recall", "(", "--grep"], "usage", 2),
    (["recall", ""], "usage", 2),
    (["remember", "x", "--importance", "9"], "validation_failed", 5),
    (["remember", "x", "--ttl", "soon"], "validation_failed", 5),
    (["remember", "x", "--expire-at", "2001-01-01"], "validation_failed", 5),
    (["recall", "a", "--bogus-flag"], "usage", 2),
])
def test_error_envelope_and_exit_codes(ws, run, args, code, exit_code):
    result = run("--json", *args)
    assert result.code == exit_code, result
    body = result.json()
    assert set(body) == ENVELOPE_ERR and body["ok"] is False
    assert body["error"]["code"] == code and body["error"]["exit"] == exit_code
    assert "Traceback" not in result.out + result.err


def test_text_errors_are_one_line_on_stderr(ws, run):
    result = run("show", "zzzzzz")
    assert result.code == 4 and result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("memcli: error: no memory 'zzzzzz'")


def test_no_workspace_is_exit_3_naming_init(tmp_path, run):
    result = run("list", cwd=tmp_path)
    assert result.code == 3
    assert "memcli init" in result.err


def test_bad_clock_is_a_clear_error(ws, run):
    result = run("list", env={"MEMCLI_NOW": "tomorrow"})
    assert result.code == 5 and "MEMCLI_NOW" in result.err


def test_idempotency_key_returns_first_result(ws, run):
    first = run("--json", "remember", "Deploys go out on Tuesdays.", "--idempotency-key", "k1").json()
    again = run("--json", "remember", "Something else entirely.", "--idempotency-key", "k1").json()
    assert again["data"]["outcome"] == "noop" and again["data"]["gate"] == "idempotency"
    assert again["data"]["id"] == first["data"]["id"]
    assert len(run("--json", "list").json()["data"]["memories"]) == 1


def test_subject_conflict_supersedes_or_fails(ws, run):
    old = run("--json", "remember", "Python 3.11 is the minimum.", "--subject", "py.min").json()["data"]["id"]
    failed = run("remember", "Python 3.12 is the minimum.", "--subject", "py.min", "--on-conflict", "fail")
    assert failed.code == 7 and old in failed.err
    new = run("--json", "remember", "Python 3.12 is the minimum.", "--subject", "py.min").json()["data"]
    assert new["changed"] == [old]
    assert run("--json", "show", old).json()["data"]["supersededBy"] == [new["id"]]


def test_git_identity_fallback_when_unconfigured(tmp_path, run, monkeypatch):
    (tmp_path / "home" / ".gitconfig").unlink()
    assert run("init", "w").code == 0
    result = run("-w", "w", "remember", "No git identity is needed.", env={"MEMCLI_ACTOR": "carol"})
    assert result.code == 0, result


def test_json_lines_are_valid_json_for_every_read(ws, run):
    run("remember", "Alpha fact.")
    for args in (["list"], ["recall", "alpha"], ["review"], ["log"], ["context"], ["doctor"]):
        result = run("--json", *args)
        assert json.loads(result.out)["ok"] is True, (args, result)
