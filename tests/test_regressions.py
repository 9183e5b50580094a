"""Faults a newcomer found by hand (one test each, with the input that showed it)."""

import os
import subprocess
import sys
import time

import pytest

from conftest import git


def ids(result) -> list[str]:
    data = result.json()["data"]
    return [m["id"] for m in data.get("hits", data.get("memories", []))]


def write(ws, name: str, text: str) -> None:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def test_a_bad_date_is_a_reported_file_not_a_crash(ws, run):
    good = run("--json", "remember", "The good memory.").json()["data"]["id"]
    write(ws, "bad.md", "---\ncreatedAt: 2025-13-45\n---\nbad date\n")
    write(ws, "bad2.md", "---\nreview:\n  at: 2025-02-30T10:00:00Z\n---\nbad day\n")
    listed = run("--json", "list")
    assert listed.code == 0 and ids(listed) == [good]
    assert any("bad.md:2: invalid date or time" in w for w in listed.json()["warnings"])
    assert run("doctor").code == 11


def test_symbolic_links_are_never_followed(ws, run, tmp_path):
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", encoding="utf-8")
    (ws / "memories" / "project").mkdir(parents=True, exist_ok=True)
    os.symlink(secret, ws / "memories" / "project" / "creds.md")
    context = run("context")
    assert "wJalr" not in context.out and "creds.md" in context.err
    assert "symbolic link" in run("doctor").out


def test_an_idempotency_key_never_matches_another_users_memory(ws, run):
    run("remember", "bob private", "--scope", "user:bob", "--idempotency-key", "k1", env={"MEMCLI_ACTOR": "bob"})
    mine = run("--json", "remember", "alice text", "--idempotency-key", "k1")
    assert mine.json()["data"]["outcome"] == "created" and "bob private" not in mine.out


def test_a_failed_commit_leaves_the_index_clean(ws, run):
    git(ws, "config", "commit.gpgsign", "true")
    git(ws, "config", "gpg.program", "/bin/false")
    result = run("remember", "This commit will fail to sign.")
    assert result.code == 10
    assert git(ws, "status", "--porcelain") == ""


def test_racing_supersedes_one_wins_the_others_are_refused(ws, run):
    old = run("--json", "remember", "Version zero.", "--subject", "rule").json()["data"]["id"]
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-m", "memcli", "supersede", old, f"Version {i}."], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes == [0, 8, 8, 8]
    assert len(ids(run("--json", "list", "--subject", "rule"))) == 1


def test_one_oversized_memory_does_not_empty_the_context(ws, run):
    for i in range(3):
        run("remember", f"Small memory number {i}.")
    run("remember", "big " + "y " * 4000, "--importance", "5")
    data = run("--json", "context").json()["data"]
    assert len(data["included"]) == 3 and data["omitted"] == 1


def test_a_pending_proposal_does_not_swallow_a_persons_write(ws, run):
    run("remember", "Tabs are four spaces wide.", "--source-type", "model_derived")
    mine = run("--json", "remember", "Tabs are four spaces wide.")
    assert mine.json()["data"]["outcome"] == "created"


@pytest.mark.slow
def test_a_restore_with_the_old_mtime_and_size_is_seen(ws, run):
    memory_id = run("--json", "remember", "The flag is alpha.").json()["data"]["id"]
    time.sleep(2.1)  # older than the racy window, so only the ctime can tell
    assert ids(run("--json", "recall", "alpha")) == [memory_id]
    path = next((ws / "memories").rglob(f"{memory_id}*.md"))
    info = path.stat()
    path.write_bytes(path.read_bytes().replace(b"alpha", b"omega"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # touch -r / cp -p / rsync -t
    assert ids(run("--json", "recall", "omega")) == [memory_id]


def test_configured_read_patterns_never_open_another_users_scope(ws, run):
    run("remember", "bob private note", "--scope", "user:bob", env={"MEMCLI_ACTOR": "bob"})
    config = ws / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        'read = ["global", "project", "user:{actor}"]', 'read = ["*"]'), encoding="utf-8")
    for args in (["list"], ["recall", "private"], ["context"]):
        assert "bob private" not in run(*args).out


@pytest.mark.parametrize("query", ["postgress", "kubernetess", "migratoins", "deploymnet", "deployemnts"])
def test_typos_at_the_end_of_a_word_still_find_it(ws, run, query):
    memory_id = run("--json", "remember", "The deployments were deployed with kubernetes and postgres migrations.")
    assert ids(run("--json", "recall", query)) == [memory_id.json()["data"]["id"]]


def test_importance_orders_memories_that_bm25_cannot_tell_apart(ws, run):
    low = run("--json", "remember", "pnpm one", "--importance", "1").json()["data"]["id"]
    high = run("--json", "remember", "pnpm two", "--importance", "5").json()["data"]["id"]
    run("remember", "pnpm three")
    run("remember", "pnpm four")
    order = ids(run("--json", "recall", "pnpm"))
    assert order.index(high) < order.index(low)


def test_recall_takes_unquoted_words(ws, run):
    memory_id = run("--json", "remember", "The review gate waits for a second person.").json()["data"]["id"]
    assert ids(run("--json", "recall", "review", "gate")) == [memory_id]
    assert run("recall", "review", "gate").code == 0


def test_an_empty_memory_file_is_reported(ws, run):
    write(ws, "empty.md", "")
    assert "empty.md" in run("--json", "list").out and run("doctor").code == 11


def test_actor_names_must_make_a_personal_scope(ws, run):
    result = run("list", env={"MEMCLI_ACTOR": "Alice Smith"})
    assert result.code == 5 and "actor" in result.err


def test_init_inside_the_memories_of_a_workspace_is_refused(ws, run):
    result = run("init", str(ws / "memories" / "project" / "sub"))
    assert result.code == 3 and not (ws / "memories" / "project" / "sub" / "memcli.toml").exists()


def test_forget_of_an_unreadable_file_names_the_problem(ws, run):
    memory_id = run("--json", "remember", "Will be broken by hand.").json()["data"]["id"]
    path = next((ws / "memories").rglob(f"{memory_id}*.md"))
    path.write_text(path.read_text(encoding="utf-8").replace("tags:", "x: [#bad]\ntags:").replace(
        "status: active", "status: active\nbroken: [#a, #b]"), encoding="utf-8")
    result = run("forget", memory_id)
    assert result.code == 11 and path.name in result.err


def test_accents_and_camel_case_are_found(ws, run):
    cafe = run("--json", "remember", "Meet at the café in İstanbul.").json()["data"]["id"]
    camel = run("--json", "remember", "Call getUserName before rendering.").json()["data"]["id"]
    assert ids(run("--json", "recall", "cafe istanbul")) == [cafe]
    assert ids(run("--json", "recall", "get user name")) == [camel]
    assert ids(run("--json", "recall", "getUserName")) == [camel]


def test_supersede_does_not_warn_about_the_memory_it_replaces(ws: object) -> None:
    """Newcomer LOW (stop 34): superseding "port 5433" with "port 5434 now" warned that the new
    text was a near duplicate of, and possibly conflicted with, the very memory it replaced."""
    from conftest import run_memcli

    old = run_memcli("--json", "remember", "The local Postgres for development listens on port 5433, not 5432.",
                     "--subject", "dev.db-port").json()["data"]["id"]
    other = run_memcli("--json", "remember", "The local Postgres for development listens on port 5434 now, per Dana.",
                       "--subject", "dev.db-port-note").json()["data"]["id"]
    out = run_memcli("supersede", old, "The local Postgres for development listens on port 5434 now.")
    assert out.code == 0, out
    assert old not in out.err, out.err  # no warning names the replaced memory
    assert f"near duplicate of {other}" in out.err or f"possible conflict with {other}" in out.err, out.err


def test_an_id_made_after_its_clock_moved_on_never_sorts_before_an_earlier_one(monkeypatch) -> None:
    """Newcomer MEDIUM (stop 34): a write that read the clock in one second and made its id in
    the next took the wall clock's milliseconds on the earlier second, so a later memory's id
    could sort before the one written just before it (1 in 8 in a loop of remembers)."""
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace

    from memcli import model
    from memcli.service.write import _new_id

    monkeypatch.delenv("MEMCLI_NOW", raising=False)
    now = datetime.now(timezone.utc)
    earlier = SimpleNamespace(now=(now - timedelta(seconds=2)).replace(microsecond=0))
    late = _new_id(earlier)  # the clock read two seconds before the id was made
    first = model.new_id(earlier.now.replace(microsecond=998_000))  # an id made late in that second, earlier
    assert first < late  # within that second, the late one sorts last
    assert late < model.new_id(earlier.now + timedelta(seconds=1))  # and before the next second's


def test_a_rejected_value_names_the_invisible_characters_it_holds(ws: object) -> None:
    """Newcomer LOW (stop 34): a scope with a zero-width space read "invalid scope
    'user:alice@example.com'", which looks right; a tag with a line break "expected a list
    of non-empty strings"."""
    from conftest import run_memcli

    scope = run_memcli("remember", "A fact", "--scope", "user:alice@example.com\u200b")
    assert scope.code == 5 and "it holds invisible characters: U+200B" in scope.err, scope
    tag = run_memcli("remember", "A fact", "--tag", "a\nb")
    assert tag.code == 5 and "a value holds a line break" in tag.err, tag


def test_a_workspace_option_naming_a_file_says_so(tmp_path) -> None:
    """Newcomer LOW (stop 34): `-w /etc/passwd` suggested `memcli init /etc/passwd`."""
    from conftest import run_memcli

    file = tmp_path / "notes.txt"
    file.write_text("x", encoding="utf-8")
    out = run_memcli("-w", str(file), "list")
    assert out.code == 3 and "is a file, not a memcli workspace folder" in out.err and "memcli init" not in out.err, out


def test_a_supersede_whose_text_is_already_a_memory_retires_the_old_one_for_it(ws, run) -> None:
    """Newcomer, stop 36 (HIGH): `supersede OLD TEXT`, TEXT already held by another active
    memory, was a no-op that exited 0 ("already exists") and left OLD active: the outdated
    port was served beside the right one. OLD is now superseded by that memory, linked both
    ways, in one commit; the CLI and the MCP tool share the path."""
    right = run("--json", "remember", "The staging database listens on port 6432.").json()["data"]["id"]
    old = run("--json", "remember", "The staging database listens on port 5433.").json()["data"]["id"]
    commits = git(ws, "rev-list", "--count", "HEAD")
    out = run("--json", "supersede", old, "The staging database listens on port 6432.")
    assert out.code == 0, out
    data = out.json()["data"]
    assert data["id"] == right and data["outcome"] == "updated" and data["changed"] == [old], data
    listed = run("--json", "list").json()["data"]["memories"]
    assert [m["id"] for m in listed] == [right]
    shown = run("--json", "show", old).json()["data"]
    assert shown["status"] == "superseded" and shown["supersededBy"] == [right], shown
    assert old in run("--json", "show", right).json()["data"]["supersedes"]
    assert int(git(ws, "rev-list", "--count", "HEAD")) == int(commits) + 1
    assert git(ws, "status", "--porcelain", "--", "memories") == ""
    again = run("--json", "supersede", right, "The staging database listens on port 6432.")
    assert again.code == 0 and again.json()["data"]["outcome"] == "noop"  # its own text: nothing to do


def test_a_text_from_stdin_is_not_charged_for_its_closing_line_break(ws, run) -> None:
    """Newcomer, stop 36: `python -c 'print("c" * 20000)' | memcli remember -` was refused as
    20,001 characters, though the text is stored without its closing line break."""
    assert run("remember", "-", input="c" * 20000 + "\n").code == 0
    assert run("remember", "-", input="d" * 20001 + "\n").code == 5


@pytest.mark.parametrize("port", ["99999", "-1", "0"])
def test_an_mcp_port_out_of_range_is_a_usage_error(ws, run, port: str) -> None:
    """Newcomer, stop 36: `memcli mcp --transport streamable-http --port 99999` printed two
    tracebacks (OverflowError from bind) and exited 1."""
    out = run("mcp", "--transport", "streamable-http", "--port", port, input="")
    assert out.code == 2 and "--port" in out.err and "Traceback" not in out.err, out


def test_the_mcp_server_takes_the_scope_of_the_actor_its_tools_act_as(ws, run, tmp_path) -> None:
    """Newcomer, stop 36: with no --actor, `memcli mcp --scope user:<git e-mail>` was refused at
    start ("personal to a@x.io; you are root"): the start-up check took the login name, every
    tool call git's user.email."""
    home = tmp_path / "dana"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\temail = dana@example.com\n\tname = Dana\n", encoding="utf-8")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "MEMCLI_ACTOR": ""}
    out = run("mcp", "--scope", "user:dana@example.com", input="", env=env)
    assert out.code == 0, out
    other = run("mcp", "--scope", "user:somebody-else", input="", env=env)
    assert other.code == 5 and "dana@example.com" in other.err, other
