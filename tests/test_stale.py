"""Memories that know their code (issue 23): anchors at write, `memcli stale`, marks, `confirm`.

Real git repositories (a code repository with the store on the memory branch, and an
in-tree store), the real CLI in subprocesses; the pointer rules are tested in-process.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import git

if TYPE_CHECKING:
    from mcp import ClientSession

    from cli_runner import Runner

RETRY = "".join(f"    step_{n} = attempt * {n}  # one step of the backoff schedule\n" for n in range(40))
CASE = ("Payment retries go through `retry_with_backoff` in src/payments/retry.py; run `make e2e` after "
        "changing it")


def commit_all(top: Path, message: str) -> None:
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", message)


@pytest.fixture(params=["branch", "in-tree"])
def code(request: pytest.FixtureRequest, tmp_path: Path, run: Runner, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A code repository with a store (on the memory branch, or in the same tree) and two memories."""
    top = tmp_path / "proj"
    (top / "src" / "payments").mkdir(parents=True)
    (top / "src" / "payments" / "retry.py").write_text(f"def retry_with_backoff(attempt):\n{RETRY}", encoding="utf-8")
    (top / "src" / "other.py").write_text("def other():\n    return 1\n", encoding="utf-8")
    (top / "Makefile").write_text("e2e:\n\tpytest e2e\ntest:\n\tpytest\n", encoding="utf-8")
    git(tmp_path, "init", "-q", str(top))
    commit_all(top, "code")
    args = ["init", str(top)] + (["--branch"] if request.param == "branch" else [])
    assert run(*args).code == 0
    monkeypatch.chdir(top)
    monkeypatch.delenv("MEMCLI_WORKSPACE", raising=False)
    return top


def remember(run: Runner, *args: str) -> str:
    result = run("--json", "remember", *args)
    assert result.code == 0, result
    return result.json()["data"]["id"]


def move_the_code(top: Path) -> None:
    """Rename the file, rename the function, drop the make target: one commit."""
    git(top, "mv", "src/payments/retry.py", "src/payments/backoff.py")
    path = top / "src" / "payments" / "backoff.py"
    path.write_text(path.read_text(encoding="utf-8").replace("retry_with_backoff", "backoff_schedule"),
                    encoding="utf-8")
    (top / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    commit_all(top, "rename the retry module")


def memory_file(top: Path, memory_id: str) -> Path:
    return next(p for p in top.rglob(f"{memory_id}*.md") if ".git" not in p.parts)


def memcli_commits(top: Path) -> int:
    store = top / ".memcli" if (top / ".memcli").is_dir() else top
    return int(git(store, "rev-list", "--count", "HEAD").strip())


@pytest.mark.slow
def test_the_case_is_listed_with_its_evidence_and_marked_then_confirm_clears_it(code: Path, run: Runner) -> None:
    case = remember(run, CASE, "--path", "src/payments/**")
    untouched = remember(run, "src/other.py returns 1 from other()")
    anchor = memory_file(code, case).read_text(encoding="utf-8")
    head = git(code, "rev-parse", "HEAD").strip()
    assert f"commit: {head}" in anchor and "retry_with_backoff" in anchor and "make e2e" in anchor
    assert json.loads(run("--json", "stale").out)["data"]["stale"] == []  # nothing moved yet

    move_the_code(code)
    data = run("--json", "stale").json()["data"]
    assert [v["id"] for v in data["stale"]] == [case]  # the memory about src/other.py is not listed
    reasons = {(r["kind"], r["name"]): r for r in data["stale"][0]["reasons"]}
    renamed = reasons[("renamed", "src/payments/retry.py")]
    assert renamed["now"] == "src/payments/backoff.py"
    assert renamed["commit"] == git(code, "rev-parse", "--short", "HEAD").strip()
    assert ("identifier", "retry_with_backoff") in reasons
    assert ("command", "make e2e") in reasons

    block = run("context").out
    lines = [line for line in block.splitlines() if line.startswith("- [")]
    assert untouched in lines[0] and case in lines[1]  # marked, and after the fresh one
    assert "may be outdated: src/payments/retry.py was renamed to src/payments/backoff.py in" in lines[1]

    before = memcli_commits(code)
    result = run("confirm", case)
    assert result.code == 0, result
    assert memcli_commits(code) == before + 1
    assert f"commit: {git(code, 'rev-parse', 'HEAD').strip()}" in memory_file(code, case).read_text(encoding="utf-8")
    assert "may be outdated" not in run("context").out  # the write dropped its verdict
    assert run("--json", "stale").json()["data"]["stale"] == []


def test_before_a_renamed_file_is_read_its_memories_come_marked(code: Path, run: Runner) -> None:
    # a newcomer's find: after `git mv auth.py session.py`, reading session.py brought none of
    # auth.py's memories, though `memcli stale` knew of the rename
    about = remember(run, "The retry module backs off 2^n seconds, capped at 60", "--path", "src/payments/retry.py")
    move_the_code(code)

    def before_reading(session: str) -> str:
        payload = {"session_id": session, "hook_event_name": "PreToolUse", "cwd": str(code), "tool_name": "Read",
                   "tool_input": {"file_path": str(code / "src" / "payments" / "backoff.py")}}
        result = run("hook", "claude", "pre-tool-use", input=json.dumps(payload), cwd=code)
        assert result.code == 0, result
        return result.out

    assert about not in before_reading("s1")  # the rename is not known yet
    assert run("stale", "--quiet").code == 0
    given = before_reading("s2")
    assert about in given and "was renamed to src/payments/backoff.py" in given, given


def test_supersede_writes_a_fresh_anchored_memory_in_one_commit(code: Path, run: Runner) -> None:
    case = remember(run, CASE, "--path", "src/payments/**")
    move_the_code(code)
    assert [v["id"] for v in run("--json", "stale").json()["data"]["stale"]] == [case]
    before = memcli_commits(code)
    result = run("--json", "supersede", case, "Payment retries go through `backoff_schedule` in "
                 "src/payments/backoff.py; run `make test` after changing it")
    assert result.code == 0, result
    assert memcli_commits(code) == before + 1
    new = result.json()["data"]["id"]
    assert f"commit: {git(code, 'rev-parse', 'HEAD').strip()}" in memory_file(code, new).read_text(encoding="utf-8")
    assert run("--json", "stale").json()["data"]["stale"] == []
    assert "may be outdated" not in run("context").out


def test_a_deleted_file_a_glob_that_matches_nothing_and_names_that_never_resolved(code: Path, run: Runner) -> None:
    glob = remember(run, "Payment code lives under src/payments/", "--path", "src/payments/**")
    product = remember(run, "Server state goes through TanStack Query and `useQueryClient`; see docs/never.md")
    git(code, "rm", "-q", "-r", "src/payments")
    commit_all(code, "drop payments")
    stale = {v["id"]: v for v in run("--json", "stale").json()["data"]["stale"]}
    assert set(stale) == {glob}  # names that never resolved at the anchor are never judged
    kinds = {(r["kind"], r["name"]) for r in stale[glob]["reasons"]}
    assert ("deleted", "src/payments/") in kinds and ("no-match", "src/payments/**") in kinds
    assert product not in stale


@pytest.mark.slow
def test_a_memory_without_an_anchor_is_anchored_at_the_code_commit_before_it_was_written(code: Path,
                                                                                         run: Runner) -> None:
    case = remember(run, CASE)
    path = memory_file(code, case)
    text = path.read_text(encoding="utf-8")
    start = text.index("anchor:")
    end = text.index("---", start)
    path.write_text(text[:start] + text[end:], encoding="utf-8")  # as written before anchors existed
    store = path.parents[3]
    commit_all(store, "an older memory")
    time.sleep(1.1)  # the rename's commit is later than the memory's createdAt (whole seconds)
    move_the_code(code)
    data = run("--json", "stale").json()["data"]["stale"]
    assert [v["id"] for v in data] == [case] and data[0]["lazy"] is True
    assert any(r["kind"] == "renamed" for r in data[0]["reasons"])


@pytest.mark.parametrize("harvest", [False, True])
@pytest.mark.slow
def test_the_session_start_judges_again_in_the_background_when_the_code_moved(code: Path, run: Runner,
                                                                              harvest: bool) -> None:
    """Also with ``[agents] harvest`` on, whose note comes first in the same answer."""
    if harvest:
        config = next(p for p in (code / ".memcli" / "memcli.toml", code / "memcli.toml") if p.is_file())
        config.write_text(config.read_text(encoding="utf-8").replace("harvest = false", "harvest = true"),
                          encoding="utf-8")
    case = remember(run, CASE)
    run("stale")
    move_the_code(code)
    payload = json.dumps({"session_id": "s1", "cwd": str(code), "hook_event_name": "SessionStart",
                          "source": "startup"})
    assert run("hook", "claude", "session-start", input=payload).code == 0
    store = code / ".memcli" if (code / ".memcli").is_dir() else code
    head = git(code, "rev-parse", "HEAD").strip()
    for _ in range(200):  # the background run's result, read when it is there (no timing asserted)
        try:
            data = json.loads((store / ".cache" / "stale.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("head") == head:
            break
        time.sleep(0.1)
    assert data.get("head") == head and case in data["memories"]
    assert "may be outdated" in run("context").out


def test_a_malformed_anchor_is_one_clear_line(code: Path, run: Runner) -> None:
    case = remember(run, CASE)
    path = memory_file(code, case)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("anchor:\n  commit: ", "anchor:\n  commit: not-a-commit-"), encoding="utf-8")
    result = run("doctor")
    assert result.code == 11 and "anchor: expected a mapping with commit" in result.out, result


def test_confirm_refuses_what_it_cannot_anchor(ws: Path, run: Runner) -> None:
    result = run("confirm", "nosuchid")
    assert result.code == 4 and "Traceback" not in result.err, result
    assert run("confirm").code == 2  # no id: a usage error


# --- the pointer rules (in-process) --------------------------------------------------------

@pytest.mark.parametrize("text, files, symbols, commands", [
    (CASE, ["src/payments/retry.py"], ["retry_with_backoff"], ["make e2e"]),
    ("前端文案统一放在 web/src/locales/zh-CN.json 中，不要在组件里硬编码中文。",
     ["web/src/locales/zh-CN.json"], [], []),
    ("迁移前先运行 `make migrate`，配置见 api/settings.py 里的 DATABASE_URL。", ["api/settings.py"],
     ["DATABASE_URL"], ["make migrate"]),
    ("Locally, copy .env.example to .env; never commit .env.", [".env.example", ".env"], [], []),
    ("See https://github.com/acme/app/blob/main/docs/setup.md; not https://example.com/a/b.py", ["docs/setup.md"], [],
     []),
    ("pnpm test runs Vitest; pnpm install --frozen-lockfile; npm run build; just fmt", [], [],
     ["just fmt", "npm run build", "pnpm test"]),
    ("debit/credit and and/or, e.g. v1.4.0 on python:3.12-slim with TanStack Query", [], [], []),
    ("Call `PaymentClient.refund()` or get_session() from api/db.py", ["api/db.py"],
     ["PaymentClient", "refund", "get_session"], []),
])
def test_pointers_found_in_english_and_chinese(text: str, files: list[str], symbols: list[str],
                                              commands: list[str]) -> None:
    from memcli.policy.pointers import find

    found = find(text)
    assert (found.files, found.identifiers, sorted(found.commands)) == (files, symbols, sorted(commands))


def test_the_pointer_rules_are_data_and_compile() -> None:
    import tomllib

    from memcli.policy.pointers import RULES, _rules

    assert tomllib.loads(RULES.read_text(encoding="utf-8"))["files"]["extensions"]
    assert _rules()["file"] and _rules()["identifier"] and _rules()["command"]


def test_head_cheap_agrees_with_git(code: Path) -> None:
    from memcli.git.code import head_cheap

    assert head_cheap(code) == git(code, "rev-parse", "HEAD").strip()
    git(code, "pack-refs", "--all")
    assert head_cheap(code) == git(code, "rev-parse", "HEAD").strip()



@pytest.mark.parametrize("bundle, kinds", [
    ("itsdangerous.bundle", ("renamed", "deleted", "identifier", "command")),
    ("debug.bundle", ("renamed", "deleted", "command")),
])
@pytest.mark.slow
def test_replay_on_a_real_history_agrees_with_git(tmp_path: Path, bundle: str, kinds: tuple[str, ...]) -> None:
    """Real histories (tests/fixtures/repos/, NOTICE.md there): pallets/itsdangerous (BSD-3-Clause)
    and debug-js/debug (MIT); memories anchored at old commits naming files, identifiers and
    make targets / npm scripts, every verdict checked against git and GNU make (bench/stale_replay.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import stale_replay

    out = stale_replay.replay(stale_replay.FIXTURES / bundle, tmp_path, anchors=6, per_files=8, per_symbols=4,
                              per_commands=4)
    assert out["mismatches"] == [], out["mismatches"]
    assert all(out["verdicts"].get(kind, 0) >= 1 for kind in kinds), out
    assert out["checks"] == out["agree"] and out["memories"] >= 60
    assert all(c["checks"] > 0 for c in out["checked"].values()), out["checked"]


@pytest.mark.slow
def test_a_command_is_judged_by_the_file_that_declared_it(code: Path, run: Runner) -> None:
    """``make X`` is gone when no Makefile of a folder that declared it at the anchor declares
    it now, nor the top one: a same-named target elsewhere, or a catch-all pattern rule,
    does not keep it alive; a target moved to the top Makefile or to a ``*.mk`` fragment does."""
    (code / "tools").mkdir()
    (code / "tools" / "Makefile").write_text("lint:\n\truff check\n", encoding="utf-8")
    (code / "mk").mkdir()
    (code / "mk" / "fmt.mk").write_text("fmt:\n\truff format\n", encoding="utf-8")
    (code / "web").mkdir()
    (code / "web" / "package.json").write_text('{"scripts": {"storybook": "sb", "build": "vite"}}', encoding="utf-8")
    commit_all(code, "tools")
    e2e = remember(run, "Run `make e2e` before a release")
    lint = remember(run, "Run `make lint` from tools/ before pushing")
    fmt = remember(run, "Run `make fmt` to format")
    storybook = remember(run, "In web/, `npm run storybook` shows the components")
    build = remember(run, "In web/, `npm run build` makes the bundle")
    (code / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff check .\nfmt:\n\truff format\n", encoding="utf-8")
    (code / "sub").mkdir()
    (code / "sub" / "Makefile").write_text("e2e:\n\tpytest e2e\n", encoding="utf-8")  # e2e moved away from the top
    (code / "docs").mkdir()
    (code / "docs" / "Makefile").write_text("help:\n\tsphinx-build -M help . _build\n%: Makefile\n"
                                            "\tsphinx-build -M $@ . _build\n", encoding="utf-8")
    (code / "tools" / "Makefile").write_text("check:\n\truff check\n", encoding="utf-8")  # lint now at the top
    (code / "mk" / "fmt.mk").unlink()  # fmt now at the top too
    (code / "web" / "package.json").write_text('{"scripts": {"build": "vite build"}}', encoding="utf-8")
    (code / "package.json").write_text('{"scripts": {"storybook": "echo elsewhere"}}', encoding="utf-8")
    commit_all(code, "move targets")
    stale = {v["id"]: v["reasons"] for v in run("--json", "stale").json()["data"]["stale"]}
    assert {(r["kind"], r["name"]) for r in stale.get(e2e, [])} == {("command", "make e2e")}
    assert lint not in stale and fmt not in stale and build not in stale
    assert storybook not in stale  # the top package.json has it now: `npm run storybook` at the top works


@pytest.mark.slow
def test_recall_mcp_stats_doctor_and_review_mark_or_count_the_stale_memory(code: Path, run: Runner) -> None:
    """Issue 23 point 3: every read marks the memory (recall keeps its relevance order: a search
    names what it wants), stats and doctor count it, ``review --stale`` lists it for a person."""
    from memcli.mcp_server.tools import Settings, Tools

    case = remember(run, CASE, "--path", "src/payments/**")
    fresh = remember(run, "src/other.py returns 1 from other()")
    move_the_code(code)
    behind = run("doctor")
    assert "the code moved since memories were last judged" in behind.err, behind
    assert run("--json", "doctor").json()["data"]["staleBehind"] is True
    assert run("stale", "--quiet").code == 0
    assert run("--json", "doctor").json()["data"]["staleBehind"] is False
    hits = {h["id"]: h for h in run("--json", "recall", "retry_with_backoff").json()["data"]["hits"]}
    assert hits[case]["mayBeOutdated"].startswith("may be outdated: src/payments/retry.py was renamed")
    assert "may be outdated" in run("recall", "retry_with_backoff").out  # the table's status column
    assert run("--json", "recall", "other").json()["data"]["hits"][0]["mayBeOutdated"] is None

    tools = Tools(Settings(workspace=str(code)))
    try:
        assert tools.recall("retry_with_backoff")["hits"][0]["mayBeOutdated"] == hits[case]["mayBeOutdated"]
        assert tools.show(case)["memory"]["mayBeOutdated"] == hits[case]["mayBeOutdated"]
        assert tools.show(fresh)["memory"]["mayBeOutdated"] is None
        assert {m["id"]: m["mayBeOutdated"] for m in tools.memories()}[case] == hits[case]["mayBeOutdated"]
    finally:
        tools.close()

    assert run("--json", "stats").json()["data"]["stale"] == 1
    doctor = run("--json", "doctor")
    assert doctor.json()["data"]["stale"] == [case]
    assert "1 active memory may be outdated" in run("doctor").err
    review = run("--json", "review", "--stale").json()["data"]
    assert [v["id"] for v in review["stale"]] == [case] and review["stale"][0]["text"] == CASE
    shown = run("review", "--stale")
    assert shown.code == 0 and case in shown.out and "memcli confirm ID" in shown.err
    assert run("confirm", case).code == 0
    assert run("--json", "stats").json()["data"]["stale"] == 0
    assert "no active memory is outdated" in run("review", "--stale").err


@pytest.mark.slow
def test_check_stale_fails_on_what_the_range_made_outdated_only(code: Path, run: Runner) -> None:
    """``memcli check --stale OLD..NEW`` (opt-in, for a CI job): a problem for each memory the
    range's code commits made outdated, none for one that was outdated before it."""
    case = remember(run, CASE, "--path", "src/payments/**")
    earlier = remember(run, "src/other.py returns 1 from other()")
    (code / "src" / "other.py").unlink()
    commit_all(code, "drop other.py")  # earlier is outdated from here on, before the range
    before = git(code, "rev-parse", "HEAD").strip()
    move_the_code(code)
    plain = run("check")
    assert plain.code == 0, plain  # without --stale, staleness is no failure
    failed = run("check", "--stale", f"{before}..HEAD")
    assert failed.code == 17 and case in failed.err and "was renamed to src/payments/backoff.py" in failed.err, failed
    assert earlier not in failed.err
    everything = run("check", "--stale")  # no range: whatever is outdated at HEAD
    assert everything.code == 17 and case in everything.err and earlier in everything.err
    assert run("check", "--stale", "HEAD..HEAD").code == 0  # an empty range makes nothing outdated
    usage = run("check", "--stale", "--staged")
    assert usage.code == 2 and "--stale judges code commits" in usage.err
    missing = run("check", "--stale", "nosuchrev..HEAD")
    assert missing.code != 0 and "nosuchrev" in missing.err and "Traceback" not in missing.err


def test_words_present_says_what_git_grep_says(tmp_path: Path) -> None:
    """``git.code.words_present`` reads the tree's words itself (git grep with thousands of
    fixed patterns is slow); it must agree with ``git grep -I -F -w`` on every kind of name
    and file: text, binary, larger than it reads, names with non-word characters."""
    from memcli.git import code as gitcode

    top = tmp_path / "repo"
    (top / "src").mkdir(parents=True)
    (top / "src" / "a.py").write_text("def alpha_one():\n    return beta.gamma(x)  # é_delta\n", encoding="utf-8")
    (top / "data.bin").write_bytes(b"\0binary_word\n")
    (top / "big.txt").write_text("only_in_big\n" + "x" * (gitcode.READ_LIMIT + 10), encoding="utf-8")
    git(tmp_path, "init", "-q", str(top))
    commit_all(top, "code")
    words = ["alpha_one", "alpha", "beta.gamma", "gamma", "binary_word", "only_in_big", "_delta", "delta",
             "return", "missing_name", "a-b"]
    expected = {w for w in words if subprocess.run(["git", "-C", str(top), "grep", "-q", "-I", "-F", "-w", "-e", w,
                                                    "HEAD"]).returncode == 0}  # one word at a time: -o with
    # several patterns prints only non-overlapping matches, so "gamma" inside "beta.gamma" would be lost
    assert gitcode.words_present(top, "HEAD", words) == expected
    assert {"alpha_one", "beta.gamma", "only_in_big", "_delta"} <= expected and "binary_word" not in expected
    head = git(top, "rev-parse", "HEAD").strip()
    assert gitcode.words_in(top, [(head, "src/a.py"), (head, "nope.py")], {"alpha_one", "gamma", "zeta"}) == {
        head: {"alpha_one", "gamma"}}


@pytest.mark.slow
def test_a_moved_head_judges_only_what_the_move_touched_as_a_whole_judgement_would(code: Path, run: Runner) -> None:
    """Issue 23 pt 2, "computed incrementally": when the code's HEAD moves along its history,
    only the memories whose names the new commits touched are judged again; the verdicts are
    the ones a whole judgement (``--refresh`` of every id, which saves nothing) gives."""
    case = remember(run, CASE, "--path", "src/payments/**")
    other = remember(run, "src/other.py returns 1 from other()")
    ids = [case, other]
    first = run("--json", "stale").json()["data"]
    assert first["checked"] == 2 and first["changed"] == []

    def both() -> tuple[dict, dict]:
        quick = run("--json", "stale").json()["data"]
        whole = run("--json", "stale", "--refresh", *ids).json()["data"]
        assert (quick["stale"], quick["changed"]) == (whole["stale"], whole["changed"])
        return quick, whole

    (code / "src" / "other.py").write_text("def other():\n    return 2\n", encoding="utf-8")
    commit_all(code, "other returns 2")
    quick, _ = both()
    assert (quick["checked"], quick["reused"]) == (1, 1)  # the payments memory was not touched
    assert [v["id"] for v in quick["changed"]] == [other]
    change = quick["changed"][0]["changes"][0]
    assert (change["name"], change["commits"]) == ("src/other.py", 1)
    assert change["line"].startswith("src/other.py changed in 1 commit since (last ")

    move_the_code(code)
    quick, _ = both()
    assert [v["id"] for v in quick["stale"]] == [case] and quick["checked"] == 1  # other.py untouched this time

    git(code, "mv", "src/payments/backoff.py", "src/payments/schedule.py")  # where it went moves on
    commit_all(code, "rename again")
    quick, _ = both()
    renamed = next(r for r in quick["stale"][0]["reasons"] if r["kind"] == "renamed")
    assert renamed["now"] == "src/payments/schedule.py" and quick["checked"] == 1

    git(code, "checkout", "-q", "-b", "elsewhere", "HEAD~3")  # not ahead of the cached HEAD: all judged again
    quick, _ = both()
    assert quick["reused"] == 0 and quick["stale"] == []
    assert "changed since written" not in run("stale").out


@pytest.mark.slow
def test_incremental_judging_on_a_real_history_agrees_with_a_whole_judgement(tmp_path: Path) -> None:
    """debug-js/debug's history (tests/fixtures/repos/debug.bundle): memories anchored over its
    first third, HEAD moved forward in steps; at each, the incremental verdicts are the whole ones."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import stale_replay

    out = stale_replay.walk(stale_replay.FIXTURES / "debug.bundle", tmp_path, steps=4)
    assert out["agree"], out
    assert any(r["reused"] for r in out["rounds"]) and any(r["stale"] for r in out["rounds"]), out


def test_words_present_with_a_few_names_says_what_git_grep_says(tmp_path: Path) -> None:
    """A few names are asked of ``git grep`` directly (``GREP_WORDS``); the answer is the same."""
    from memcli.git import code as gitcode

    top = tmp_path / "repo"
    (top / "src").mkdir(parents=True)
    (top / "src" / "a.py").write_text("def alpha_one():\n    return beta.gamma(x)\n", encoding="utf-8")
    (top / "data.bin").write_bytes(b"\0binary_word\n")
    git(tmp_path, "init", "-q", str(top))
    commit_all(top, "code")
    assert gitcode.words_present(top, "HEAD", ["alpha_one", "alpha", "gamma", "beta", "binary_word", "nope"]) == {
        "alpha_one", "gamma", "beta"}


@pytest.mark.slow
def test_an_agent_proposes_the_mended_text_through_mcp_and_a_person_approves_it(code: Path, run: Runner) -> None:
    """Issue 23 pt 4, through a real MCP client: the agent sees ``mayBeOutdated``, proposes the
    corrected text with ``supersede``; in the shared project scope it waits for review (no
    tool approves), the old one is still served, marked; ``review --stale`` shows the
    proposal beside the verdict; a person approves it, which anchors it at today's code."""
    from test_mcp_server import drive

    case = remember(run, CASE, "--path", "src/payments/**")
    move_the_code(code)
    assert run("stale", "--quiet").code == 0
    mended = "Payment retries go through `backoff_schedule` in src/payments/backoff.py; run `make test` after it"
    proposed: dict = {}

    async def steps(client: ClientSession) -> None:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "supersede" in names and not any("approve" in n for n in names)
        hit = (await client.call_tool("recall", {"query": "retry_with_backoff"})).structured_content["hits"][0]
        assert hit["id"] == case and hit["mayBeOutdated"].startswith(
            "may be outdated: src/payments/retry.py was renamed to src/payments/backoff.py")
        result = await client.call_tool("supersede", {"memory_id": case, "text": mended})
        assert not result.is_error
        proposed.update(result.structured_content)
        again = (await client.call_tool("recall", {"query": "retry_with_backoff"})).structured_content["hits"]
        assert [h["id"] for h in again] == [case] and again[0]["mayBeOutdated"]  # still served, still marked

    drive(code, steps)
    assert proposed["outcome"] == "pending_review" and proposed["memory"]["status"] == "pending_review"
    new = proposed["id"]
    review = run("--json", "review", "--stale").json()["data"]["stale"]
    assert [v["id"] for v in review] == [case]
    assert [p["id"] for p in review[0]["proposed"]] == [new] and review[0]["proposed"][0]["source"] == "model_derived"
    table = run("review", "--stale")
    assert new in table.out and "memcli approve ID" in table.err

    before = memcli_commits(code)
    assert run("approve", new).code == 0
    assert memcli_commits(code) == before + 1
    assert f"commit: {git(code, 'rev-parse', 'HEAD').strip()}" in memory_file(code, new).read_text(encoding="utf-8")
    assert run("--json", "stale").json()["data"]["stale"] == []
    assert "no active memory is outdated" in run("review", "--stale").err


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), paths=st.lists(st.text(max_size=40), max_size=4))
def test_pointers_never_fail_on_any_text(text: str, paths: list[str]) -> None:
    """Anything an agent or a person writes: the pointer rules return at most MAX_EACH names
    of each kind, every one of them found in the text or the paths, and never raise."""
    from memcli.policy.pointers import MAX_EACH, find

    found = find(text, paths)
    for names in (found.files, found.identifiers, found.commands):
        assert len(names) <= MAX_EACH and len(set(names)) == len(names)
    source = text + "\n" + "\n".join(paths)
    assert all(name in source for name in found.files + found.identifiers)
    assert all(c.split()[-1] in source for c in found.commands)


def test_a_burst_of_session_starts_starts_one_background_judgement(code: Path, run: Runner) -> None:
    """Found by the benchmark (stop 33): until the first background ``memcli stale`` wrote its
    verdicts, every session start found them out of date and started another; 3 starts in a
    second ran 3 judgements of 100,000 memories side by side. One is started per code
    ``HEAD`` (``stale_notes.REFRESH_MARK``); a new ``HEAD`` starts the next."""
    from memcli.service import Ctx
    from memcli.service.stale_notes import REFRESH_MARK, spawn_refresh

    remember(run, CASE)
    move_the_code(code)
    ctx = Ctx.open(str(code))
    assert spawn_refresh(ctx) is True
    assert [spawn_refresh(ctx) for _ in range(3)] == [False, False, False]
    mark = ctx.ws.root / ".cache" / REFRESH_MARK
    assert mark.read_text(encoding="utf-8") == git(code, "rev-parse", "HEAD").strip()
    (code / "NOTES.txt").write_text("another commit\n", encoding="utf-8")
    commit_all(code, "the code moved again: its verdicts are another judgement's")
    assert spawn_refresh(ctx) is True
