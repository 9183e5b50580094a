"""``memcli check`` reads a range's files a chunk at a time (``service.check.CHUNK``): one
``git log`` finds the files one commit made (``_Git.single_commits``), whose history needs no
``git log`` of its own. Stop 33's newcomer: a teammate's 3,000 new files took ``sync`` 1 min
33 s, four git processes a file.

The property: whatever the history (edits, merges, a side branch a merge discards, a root
commit), the problems ``check`` finds are the same with the shortcut as with every file's own
log. Real git repositories; the only thing switched is the shortcut itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memcli.service import check as checking
from memcli.service.context import Ctx

IDS = ["01kx0000000000000000000001", "01kx0000000000000000000002", "01kx0000000000000000000003"]
PEOPLE = ["ann@example.com", "bob@example.com"]


def git(ws: Path, *args: str, who: str = PEOPLE[0]) -> str:
    env_args = ["-c", f"user.email={who}", "-c", f"user.name={who.split('@')[0]}"]
    return subprocess.run(["git", *env_args, *args], cwd=ws, check=True, capture_output=True,
                          text=True).stdout.strip()


def memory_text(k: int, variant: int) -> str:
    """Versions of memory ``k``: variants differ in text, status, source type, guards and provenance."""
    source = "model_derived" if variant % 3 == 1 else "user_said"
    status = ("pending_review", "active", "archived")[variant % 3]
    guards = "guards:\n  - deny: Bash(rm -rf:*)\n" if variant % 2 else ""
    actor = PEOPLE[variant % 2] if variant % 4 == 3 else PEOPLE[0]
    return (f"---\nid: {IDS[k]}\nscope: project\ncategory: fact\nstatus: {status}\nimportance: 3\n"
            f"createdAt: 2026-11-01T09:00:00Z\nupdatedAt: 2026-11-0{1 + variant % 8}T09:00:00Z\n"
            f"provenance:\n  sourceType: {source}\n  actor: {actor}\n  at: 2026-11-01T09:00:00Z\n"
            f"{guards}---\nMemory {k}, version {variant}.\n")


def write(ws: Path, k: int, variant: int) -> None:
    path = ws / "memories" / "project" / "2026-11" / f"{IDS[k]}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(memory_text(k, variant), encoding="utf-8")


#: One step of a history: ("commit", file, variant, person), ("side", file, variant, person,
#: how) — a change on a side branch, merged back ("merge"), merged with ``-s ours`` so the
#: merge discards it ("ours"), or merged with a version of the merge's own ("evil": a merge that
#: differs from both parents).
STEP = st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 2), st.integers(0, 7), st.integers(0, 1)),
    st.tuples(st.just("side"), st.integers(0, 2), st.integers(0, 7), st.integers(0, 1),
              st.sampled_from(["merge", "ours", "evil"])),
)


def replay(ws: Path, steps: list[tuple]) -> None:
    for n, step in enumerate(steps):
        who = PEOPLE[step[3]]
        if step[0] == "commit":
            write(ws, step[1], step[2])
            git(ws, "add", "-A")
            git(ws, "commit", "-q", "--allow-empty", "-m", f"step {n}", who=who)
            continue
        git(ws, "checkout", "-q", "-b", f"side{n}")
        write(ws, step[1], step[2])
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "--allow-empty", "-m", f"side {n}", who=who)
        git(ws, "checkout", "-q", "-")
        write(ws, (step[1] + 1) % 3, (step[2] + 3) % 8)  # the main line moves on meanwhile
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "--allow-empty", "-m", f"main {n}", who=PEOPLE[0])
        strategy = ["-s", "ours"] if step[4] == "ours" else ["-X", "theirs"]
        if step[4] != "evil":
            git(ws, "merge", "-q", "--no-edit", "--no-ff", *strategy, f"side{n}", who=PEOPLE[1 - step[3]])
            continue
        git(ws, "merge", "-q", "--no-commit", "--no-ff", *strategy, f"side{n}", who=PEOPLE[1 - step[3]])
        write(ws, step[1], (step[2] + 5) % 8)
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "--no-edit", who=PEOPLE[1 - step[3]])


def problems(ws: Path, spec: str | None) -> list[tuple[str, str, str]]:
    result = checking.check(Ctx.open(str(ws)), spec)
    return sorted((p.path, p.rule, p.message) for p in result.problems)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=6))
@example(steps=[("side", 0, 1, 1, "evil")])  # made on a side branch, changed by the merge itself
@example(steps=[("commit", 0, 0, 0), ("side", 0, 1, 1, "ours")])  # a side change the merge discards
@example(steps=[("side", 0, 4, 1, "merge"), ("commit", 1, 3, 1)])
def test_the_one_commit_shortcut_finds_what_every_files_own_log_finds(
        ws: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        steps: list[tuple]) -> None:
    repo = tmp_path_factory.mktemp("hist") / "ws"
    subprocess.run(["cp", "-a", str(ws), str(repo)], check=True)
    start = git(repo, "rev-parse", "HEAD")
    replay(repo, steps)
    for spec in (None, f"{start}..HEAD"):
        batched = problems(repo, spec)
        with monkeypatch.context() as patch:
            patch.setattr(checking._Git, "single_commits", lambda self, rev, fulls: {})
            assert problems(repo, spec) == batched, steps


def test_many_new_files_from_one_commit_are_judged_in_a_few_git_processes(ws: Path) -> None:
    """Every file of a big arrival is still judged (a secret, an unapproved agent write), each
    by the rules a file's own log gives, and the chunks cover every file (CHUNK + 5 of them)."""
    start = git(ws, "rev-parse", "HEAD")
    folder = ws / "memories" / "project" / "2026-11"
    folder.mkdir(parents=True, exist_ok=True)
    count = checking.CHUNK + 5
    for n in range(count):
        mid = f"01kx{n:022d}"
        body = memory_text(0, 0).replace(IDS[0], mid)
        if n == 3:
            body = body.replace("Memory 0, version 0.", "token ghp_" + "a1B2" * 9)
        if n == checking.CHUNK + 2:  # in the second chunk: an agent's write made active without review
            body = memory_text(0, 1).replace(IDS[0], mid).replace("pending_review", "active")
        (folder / f"{mid}.md").write_text(body, encoding="utf-8")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "bulk", who=PEOPLE[1])
    result = checking.check(Ctx.open(str(ws)), f"{start}..HEAD")
    assert result.files == count
    found = {(p.path.rsplit("/", 1)[-1][:26], p.rule) for p in result.problems}
    assert (f"01kx{3:022d}", "secret") in found
    assert (f"01kx{checking.CHUNK + 2:022d}", "review") in found
