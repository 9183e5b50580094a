"""Pre-commit wiring that works in both layouts without breaking the code's own hooks (issue 22 point 5).

Real git commits run real hooks: the pre-commit framework (``pre-commit install``) for the
code, and ``memcli check --install-hook`` for the memory branch's worktree. A hand-made
approval by its own proposer is the forgery each hook must stop, whether it is committed from
the index, with ``git commit -a`` or with ``git commit PATH`` (git then commits from a
temporary index it names in ``GIT_INDEX_FILE``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import run_memcli

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def precommit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, capture_output=True, text=True)


CODE_HOOK = ("- repo: local\n  hooks:\n  - id: code-hook\n    name: the code's own hook\n"
             "    entry: sh -c 'date >> \"$(git rev-parse --git-common-dir)/code-hook-ran\"'\n"
             "    language: system\n    always_run: true\n    pass_filenames: false\n")


def manifest_hook() -> dict:
    """memcli's entry of .pre-commit-hooks.yaml."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return hook


def memcli_hook_as_local() -> str:
    """memcli's entry of .pre-commit-hooks.yaml as a local hook (the same entry, files and
    pass_filenames; this interpreter's memcli instead of an environment pre-commit builds)."""
    hook = manifest_hook()
    assert hook["entry"].startswith("memcli ")
    entry = f"{sys.executable} -m {hook['entry']}"
    return ("- repo: local\n  hooks:\n  - id: memcli-check\n    name: memcli check\n"
            f"    entry: {entry}\n    language: system\n    pass_filenames: {str(hook['pass_filenames']).lower()}\n"
            f"    files: '{hook['files']}'\n")


def be(repo: Path, email: str) -> None:
    for key, value in (("user.email", email), ("user.name", email.split("@")[0])):
        assert git("config", key, value, cwd=repo).returncode == 0


def propose(store: Path, text: str) -> Path:
    out = run_memcli("-w", str(store), "--json", "--actor", "bob", "remember", text, "--source-type", "model_derived")
    assert out.code == 0, out
    return next((store / "memories").rglob(f"{out.json()['data']['id']}*.md"))


def approve_by_hand(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(
        "status: pending_review", "status: active\nreview:\n  by: bob\n  decision: approved"), encoding="utf-8")


def code_hook_ran(project: Path) -> bool:
    marker = project / ".git" / "code-hook-ran"
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


@pytest.mark.parametrize("how", ["index", "-a", "path"])
@pytest.mark.slow
def test_the_memory_branch_hook_is_scoped_to_its_worktree(project: Path, how: str) -> None:
    (project / ".pre-commit-config.yaml").write_text("repos:\n" + CODE_HOOK, encoding="utf-8")
    assert git("add", ".pre-commit-config.yaml", cwd=project).returncode == 0
    assert git("commit", "-qm", "the code's hooks", cwd=project).returncode == 0
    assert precommit("install", cwd=project).returncode == 0
    assert run_memcli("init", cwd=project).code == 0
    store = project / ".memcli"
    out = run_memcli("-w", str(store), "check", "--install-hook")
    assert out.code == 0 and "pre-commit hook installed" in out.out and "memory-branch" in out.out, out
    again = run_memcli("-w", str(store), "check", "--install-hook")
    assert again.code == 0 and "already installed" in again.out, again

    (project / "src.py").write_text("print('code')\n", encoding="utf-8")  # a code commit: the code's hook only
    assert git("add", "src.py", cwd=project).returncode == 0
    code = git("commit", "-m", "code", cwd=project)
    assert code.returncode == 0, code.stdout + code.stderr
    assert code_hook_ran(project) and "memcli" not in code.stdout + code.stderr

    be(store, "bob@example.com")
    path = propose(store, "Deploy on Fridays")
    approve_by_hand(path)  # bob approves his own agent's memory
    rel = str(path.relative_to(store))
    if how == "index":
        assert git("add", rel, cwd=store).returncode == 0
        refused = git("commit", "-m", "approve", cwd=store)
    elif how == "-a":
        refused = git("commit", "-a", "-m", "approve", cwd=store)
    else:
        refused = git("commit", "-m", "approve", rel, cwd=store)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "by its own proposer" in refused.stderr
    assert not code_hook_ran(project)  # the code's hook is not the memory's
    git("reset", "-q", cwd=store)
    be(store, "rae@example.com")
    path.write_text(path.read_text(encoding="utf-8").replace("by: bob", "by: rae"), encoding="utf-8")
    accepted = git("commit", "-a", "-m", "approve", cwd=store)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr

    removed = run_memcli("-w", str(store), "check", "--uninstall-hook")
    assert removed.code == 0 and "pre-commit hook removed" in removed.out, removed
    assert git("config", "--worktree", "--get", "core.hooksPath", cwd=store).returncode != 0


@pytest.mark.parametrize("how", ["index", "-a"])
@pytest.mark.slow
def test_an_in_tree_store_takes_the_manifest_entry_which_runs_only_on_memory_files(project: Path, how: str) -> None:
    assert manifest_hook()["files"] == r"(^|/)memories/.*\.md$" and manifest_hook()["pass_filenames"] is True
    assert run_memcli("init", "docs/memory", cwd=project).code == 0  # a store in a folder of the code
    store = project / "docs" / "memory"
    (project / ".pre-commit-config.yaml").write_text("repos:\n" + CODE_HOOK + memcli_hook_as_local(),
                                                     encoding="utf-8")
    assert git("add", "-A", cwd=project).returncode == 0
    assert git("commit", "-qm", "memory and hooks", cwd=project).returncode == 0
    assert precommit("install", cwd=project).returncode == 0
    refused_install = run_memcli("-w", str(store), "check", "--install-hook")
    assert refused_install.code == 2 and "a folder of the code's tree" in refused_install.err, refused_install
    code_hook_ran(project)

    (project / "src.py").write_text("print('code')\n", encoding="utf-8")
    assert git("add", "src.py", cwd=project).returncode == 0
    code = git("commit", "-m", "code", cwd=project)
    assert code.returncode == 0, code.stdout + code.stderr
    said = code.stdout + code.stderr
    assert code_hook_ran(project) and "memcli check" in said and "(no files to check)Skipped" in said

    be(project, "bob@example.com")
    path = propose(store, "Merge without review")
    approve_by_hand(path)
    if how == "index":
        assert git("add", "-A", cwd=project).returncode == 0
        refused = git("commit", "-m", "approve", cwd=project)
    else:
        refused = git("commit", "-a", "-m", "approve", cwd=project)
    assert refused.returncode != 0 and "by its own proposer" in refused.stdout + refused.stderr, refused.stdout
    git("reset", "-q", cwd=project)
    be(project, "rae@example.com")
    path.write_text(path.read_text(encoding="utf-8").replace("by: bob", "by: rae"), encoding="utf-8")
    accepted = git("commit", "-a", "-m", "approve", cwd=project)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_a_standalone_store_gets_its_own_hook_and_a_foreign_hook_is_kept(ws: Path) -> None:
    hooks = ws / ".git" / "hooks"
    out = run_memcli("-w", str(ws), "check", "--install-hook")
    assert out.code == 0 and "standalone" in out.out, out
    be(ws, "bob@example.com")
    path = propose(ws, "Skip the staging tests")
    approve_by_hand(path)
    refused = git("commit", "-a", "-m", "approve", cwd=ws)
    assert refused.returncode != 0 and "by its own proposer" in refused.stderr
    assert run_memcli("-w", str(ws), "check", "--uninstall-hook").code == 0
    assert not (hooks / "pre-commit").exists()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    kept = run_memcli("-w", str(ws), "check", "--install-hook")
    assert kept.code == 2 and "not memcli's; nothing changed" in kept.err, kept
    assert (hooks / "pre-commit").read_text(encoding="utf-8") == "#!/bin/sh\nexit 0\n"
    both = run_memcli("-w", str(ws), "check", "--install-hook", "HEAD")
    assert both.code == 2 and "take no range" in both.err


def test_check_staged_with_files_outside_any_store_passes_them(project: Path) -> None:
    (project / "memories").mkdir()
    (project / "memories" / "notes.md").write_text("not memcli's\n", encoding="utf-8")
    out = run_memcli("check", "--staged", "memories/notes.md", cwd=project)
    assert out.code == 0 and "not in a memcli store, not checked: memories/notes.md" in out.err, out


@pytest.mark.slow
def test_the_manifest_installs_and_runs_through_pre_commit_itself(project: Path) -> None:
    """``pre-commit try-repo`` builds memcli's hook environment from this repository (its
    .pre-commit-hooks.yaml, ``language: python``) and runs it on a staged forged approval."""
    if os.environ.get("MEMCLI_SKIP_PRE_COMMIT_ENV"):
        pytest.skip("MEMCLI_SKIP_PRE_COMMIT_ENV is set")
    assert run_memcli("init", "--in-tree", cwd=project).code == 0
    be(project, "bob@example.com")
    path = propose(project, "Turn the linters off")
    approve_by_hand(path)
    assert git("add", "-A", cwd=project).returncode == 0
    rel = str(path.relative_to(project))
    tried = precommit("try-repo", str(ROOT), "memcli-check", "--files", rel, cwd=project)
    assert tried.returncode != 0 and "by its own proposer" in tried.stdout, tried.stdout[-2000:] + tried.stderr
