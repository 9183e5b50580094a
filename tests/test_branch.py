"""The memory branch: `memcli init --branch` keeps memory off the code branches (issue 12 point 2)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import run_memcli


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_memory_does_not_follow_code_branches_and_no_memcli_commit_lands_on_them(project: Path) -> None:
    init = run_memcli("init", "--branch", cwd=project)
    assert init.code == 0, init
    assert (project / ".memcli" / "memcli.toml").is_file()
    assert git("status", "--porcelain", cwd=project) == ""  # the worktree folder is git-ignored (info/exclude)
    assert run_memcli("remember", "Deploys go out on Tuesdays", cwd=project).code == 0
    assert run_memcli("remember", "The API listens on port 8080", cwd=project / "src" if (project / "src").is_dir()
                      else project).code == 0
    before = run_memcli("--json", "recall", "port", cwd=project).json()["data"]["hits"]
    code_branch = git("branch", "--show-current", cwd=project)
    git("checkout", "-q", "-b", "feature/x", cwd=project)
    (project / "feature.txt").write_text("new code\n")
    git("add", "feature.txt", cwd=project)
    git("commit", "-qm", "feature work", cwd=project)
    assert run_memcli("remember", "Feature flags live in flags.yaml", cwd=project).code == 0
    git("checkout", "-q", code_branch, cwd=project)
    after = run_memcli("--json", "recall", "port", cwd=project).json()["data"]["hits"]
    assert [h["id"] for h in after] == [h["id"] for h in before]
    assert "flags.yaml" in run_memcli("recall", "flags", cwd=project).out  # written on feature/x, still here
    for branch in (code_branch, "feature/x"):
        subjects = git("log", "--format=%s", branch, cwd=project).splitlines()
        assert not [s for s in subjects if s.startswith("memcli:")], subjects
    assert git("log", "--format=%s", "memcli/memory", cwd=project).count("memcli: remember") == 3


def test_a_fresh_clone_checks_out_the_memory_branch_on_its_first_command(project: Path, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=project)
    git("push", "-q", "origin", "HEAD", cwd=project)
    assert run_memcli("init", "--branch", cwd=project).code == 0
    assert run_memcli("remember", "Use uv to manage Python environments", cwd=project).code == 0
    assert run_memcli("sync", cwd=project / ".memcli").code == 0
    clone = tmp_path / "clone"
    git("clone", "-q", str(bare), str(clone), cwd=tmp_path)
    first = run_memcli("recall", "uv", cwd=clone)
    assert first.code == 0, first
    assert "Use uv" in first.out
    assert "checked out the memory branch memcli/memory" in first.err
    again = run_memcli("recall", "uv", cwd=clone)
    assert "checked out" not in again.err
    hook = run_memcli("hook", "claude", "session-start", input='{"cwd": "%s", "source": "startup"}' % clone)
    assert hook.code == 0 and "Use uv" in hook.out


def test_init_branch_outside_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    out = run_memcli("init", "--branch", cwd=plain)
    assert out.code == 3, out
    assert "not inside a git repository" in out.err
    named = run_memcli("init", "--branch", "team/memory", cwd=plain)
    assert named.code == 3


def test_init_branch_with_a_name(project: Path) -> None:
    out = run_memcli("init", "--branch", "team/memory", cwd=project)
    assert out.code == 0, out
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=project / ".memcli") == "team/memory"
    again = run_memcli("init", "--branch", "team/memory", cwd=project)
    assert again.code == 0 and "already" in again.out


def test_plain_init_at_a_code_repositorys_root_is_the_memory_branch(project: Path, tmp_path: Path) -> None:
    init = run_memcli("--json", "init", cwd=project)
    assert init.code == 0, init
    data = init.json()["data"]
    assert data["branch"] == "memcli/memory" and data["root"] == str(project / ".memcli")
    assert not (project / "memcli.toml").exists() and (project / ".memcli" / "memcli.toml").is_file()
    assert git("status", "--porcelain", cwd=project) == ""
    again = _fresh_repo(tmp_path / "again")
    (again / "main.go").write_text("package main\n", encoding="utf-8")  # code, no commit yet
    assert "--in-tree" in run_memcli("init", cwd=again).out  # the text names the way back
    empty = _fresh_repo(tmp_path / "empty")  # a bare `git init`: where a standalone store is made
    assert run_memcli("--json", "init", cwd=empty).json()["data"]["branch"] is None
    assert (empty / "memcli.toml").is_file()
    assert run_memcli("remember", "Deploys go out on Tuesdays", cwd=project).code == 0
    assert not [s for s in git("log", "--format=%s", cwd=project).splitlines() if s.startswith("memcli:")]


def test_in_tree_hidden_or_a_subfolder_keep_memory_in_the_code_tree(tmp_path: Path) -> None:
    for name, args, config in (("in-tree", ["--in-tree"], "memcli.toml"),
                               ("hidden", ["--hidden"], ".memcli/memcli.toml"),
                               ("sub", ["mem"], "mem/memcli.toml")):
        repo = _fresh_repo(tmp_path / name)
        init = run_memcli("--json", "init", *args, cwd=repo)
        assert init.code == 0, (name, init)
        assert init.json()["data"]["branch"] is None, name
        assert (repo / config).is_file(), name
        assert "memcli/memory" not in git("branch", "--list", cwd=repo), name
    assert run_memcli("init", "--in-tree", "--branch", cwd=_fresh_repo(tmp_path / "both")).code == 2


def _fresh_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    return path


def test_a_linked_worktree_of_the_code_reads_the_main_worktrees_memory(project: Path, tmp_path: Path) -> None:
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("remember", "Use pnpm for the web app", cwd=project).code == 0
    git("branch", "feature", cwd=project)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), "feature", cwd=project)
    found = run_memcli("recall", "pnpm", cwd=linked)
    assert found.code == 0 and "Use pnpm" in found.out, found
    hook = run_memcli("hook", "claude", "session-start", input='{"cwd": "%s", "source": "startup"}' % linked)
    assert hook.code == 0 and "Use pnpm" in hook.out, hook


def test_a_deleted_memcli_folder_comes_back_from_its_branch(project: Path) -> None:
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("remember", "Use pnpm for the web app", cwd=project).code == 0
    subprocess.run(["git", "clean", "-qffdx"], cwd=project, check=True)
    assert not (project / ".memcli").exists()
    again = run_memcli("recall", "pnpm", cwd=project)
    assert again.code == 0 and "Use pnpm" in again.out, again
    assert "checked out the memory branch memcli/memory" in again.err


def test_two_memory_branches_started_apart_say_how_to_join_them(project: Path, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=project)
    git("push", "-q", "origin", "HEAD", cwd=project)
    clone = tmp_path / "clone"
    git("clone", "-q", str(bare), str(clone), cwd=tmp_path)
    assert run_memcli("init", cwd=project).code == 0
    assert run_memcli("remember", "Use uv to manage Python environments", cwd=project).code == 0
    assert run_memcli("sync", cwd=project / ".memcli").code == 0
    assert run_memcli("init", cwd=clone).code == 0  # before fetching: a second, unrelated memory branch
    assert run_memcli("remember", "Deploys go out on Tuesdays", cwd=clone).code == 0
    stopped = run_memcli("sync", cwd=clone / ".memcli")
    assert stopped.code == 16 and "started apart" in stopped.err, stopped
    assert f"`memcli resolve` in {clone / '.memcli'}" in stopped.err  # where to join them (issue 22 point 4)
    joined = run_memcli("resolve", cwd=clone / ".memcli")  # the two memcli.toml differ: the remote's is taken
    assert joined.code == 0, joined
    assert run_memcli("sync", cwd=clone / ".memcli").code == 0
    both = run_memcli("recall", "uv", "Tuesdays", cwd=clone)
    assert "Use uv" in both.out or "Use uv" in run_memcli("recall", "uv", cwd=clone).out


def test_the_cli_default_of_init_branch_is_the_services() -> None:
    from memcli.cli import OPTIONAL_VALUES
    from memcli.service.branch import DEFAULT_BRANCH

    assert OPTIONAL_VALUES["--branch"] == DEFAULT_BRANCH


def test_plain_init_in_a_fresh_git_init_says_it_makes_a_store_of_its_own(tmp_path: Path) -> None:
    """In a repository with no commit (and no file) plain `init` set up in the folder itself and
    committed "memcli: init workspace" onto main, saying nothing, where the README promised the
    memory branch at a code repository's root: now init says what it did and why, and the docs
    say the same; `--branch` there keeps the code's branch unborn."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git("init", "-q", "-b", "main", cwd=fresh)
    out = run_memcli("init", cwd=fresh)
    assert out.code == 0, out
    assert "no commit and no file, so it is a memory store of its own" in out.err and "--branch" in out.err, out
    assert git("log", "--format=%s", "main", cwd=fresh).strip() == "memcli: init workspace"
    assert run_memcli("--json", "init", cwd=fresh).json()["data"]["standalone"] is False  # exists: nothing said
    code = tmp_path / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code)
    branch = run_memcli("init", "--branch", cwd=code)
    assert branch.code == 0 and "memory store of its own" not in branch.err, branch
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", "main"], cwd=code).returncode != 0  # still unborn
    root = Path(__file__).parent.parent
    for doc in ("README.md", "docs/workspace.md"):
        assert "fresh `git init`" in (root / doc).read_text(encoding="utf-8"), doc
