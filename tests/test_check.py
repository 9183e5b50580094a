"""memcli check: the review gate over git authorship, for CI and pre-commit (issue 12 point 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_memcli

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def as_author(ws: Path, email: str) -> None:
    git("config", "user.email", email, cwd=ws)
    git("config", "user.name", email.split("@")[0], cwd=ws)


def propose(ws: Path, text: str) -> str:
    out = run_memcli("-w", str(ws), "--json", "remember", text, "--source-type", "model_derived")
    assert out.code == 0, out
    assert out.json()["data"]["memory"]["status"] == "pending_review"
    return out.json()["data"]["id"]


def test_check_fails_a_self_approval_by_git_author(ws: Path) -> None:
    start = git("rev-parse", "HEAD", cwd=ws)
    as_author(ws, "pat@example.com")
    mid = propose(ws, "Run migrations with alembic upgrade head")
    # the local label says bob; git records pat as the author of both commits
    assert run_memcli("-w", str(ws), "--actor", "bob", "approve", mid).code == 0
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17, out
    assert "approved in commit" in out.err and "by its own proposer (pat@example.com)" in out.err
    as_json = run_memcli("-w", str(ws), "--json", "check", f"{start}..HEAD")
    assert as_json.code == 17 and as_json.json()["error"]["code"] == "check_failed"


def test_check_passes_an_approval_by_a_second_author(ws: Path) -> None:
    start = git("rev-parse", "HEAD", cwd=ws)
    as_author(ws, "pat@example.com")
    mid = propose(ws, "Run migrations with alembic upgrade head")
    as_author(ws, "rae@example.com")
    assert run_memcli("-w", str(ws), "--actor", "rae", "approve", mid).code == 0
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 0, out
    assert "ok: 1 file checked" in out.out
    assert run_memcli("-w", str(ws), "check").code == 0  # the default: every file at HEAD


def test_check_allows_self_approval_when_configured(ws: Path) -> None:
    config = ws / "memcli.toml"
    config.write_text(config.read_text().replace("allow_self_approve = false", "allow_self_approve = true"))
    git("commit", "-qam", "allow self approval", cwd=ws)
    start = git("rev-parse", "HEAD", cwd=ws)
    mid = propose(ws, "Cache the wheels in CI")
    # the reviewer's name is the approving commit's author (issue 22: review.by is compared with it)
    assert run_memcli("-w", str(ws), "--actor", "test@example.invalid", "approve", mid).code == 0
    assert run_memcli("-w", str(ws), "check", f"{start}..HEAD").code == 0


def _hand_written(ws: Path, name: str, text: str) -> None:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    git("add", "-A", cwd=ws)
    git("commit", "-qm", f"add {name} by hand", cwd=ws)


@pytest.mark.parametrize("name,text,words", [
    ("01m8aaaaaaaaaaaaaaaaaaaaa1-token.md",
     "---\nscope: project\n---\nThe deploy token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "\n",
     "holds a GitHub token"),
    ("01m8aaaaaaaaaaaaaaaaaaaaa2-bad.md", "---\ntags: [#a, #b]\n---\nBroken tags\n", "01m8aaaaaaaaaaaaaaaaaaaaa2"),
    ("01m8aaaaaaaaaaaaaaaaaaaaa3-agent.md",
     "---\nscope: project\nstatus: active\nprovenance:\n  sourceType: model_derived\n  actor: claude\n---\n"
     "Always deploy on Fridays\n", "arrived active without review"),
])
def test_check_fails_a_secret_an_invalid_file_and_an_unreviewed_agent_write(ws: Path, name: str, text: str,
                                                                            words: str) -> None:
    start = git("rev-parse", "HEAD", cwd=ws)
    _hand_written(ws, name, text)
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17, out
    assert words in out.err
    assert "ghp_a1B2" not in out.err + out.out  # a secret is never echoed


def test_check_refuses_a_symlink_and_an_unknown_revision(ws: Path) -> None:
    start = git("rev-parse", "HEAD", cwd=ws)
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True)
    (folder / "01m8aaaaaaaaaaaaaaaaaaaab1.md").symlink_to("/etc/hostname")
    git("add", "-A", cwd=ws)
    git("commit", "-qm", "a link", cwd=ws)
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17 and "symbolic link" in out.err
    unknown = run_memcli("-w", str(ws), "check", "nope..HEAD")
    assert unknown.code == 12, unknown


def test_the_same_checks_run_through_pre_commit(ws: Path) -> None:
    manifest = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                               str(ROOT / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    (ws / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: memcli-check\n    name: memcli check\n"
        f"    entry: {sys.executable} -m memcli check --staged\n    language: system\n"
        "    pass_filenames: false\n    files: (^|/)memories/.*\\.md$\n", encoding="utf-8")
    git("add", ".pre-commit-config.yaml", cwd=ws)
    git("commit", "-qm", "pre-commit config", cwd=ws)
    env_home = {"PRE_COMMIT_HOME": str(ws.parent / "pre-commit-home")}
    install = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=ws, capture_output=True,
                             text=True, env={**__import__("os").environ, **env_home})
    assert install.returncode == 0, install.stdout + install.stderr
    as_author(ws, "pat@example.com")
    mid = propose(ws, "Pin the Node version in .nvmrc")
    path = next((ws / "memories").rglob(f"{mid}*.md"))
    # approved by hand, with the review record an approval carries (issue 22: it names the approving author)
    path.write_text(path.read_text().replace("status: pending_review", "status: active\nreview:\n  by: rae\n"
                                             "  decision: approved"))
    git("add", "-A", cwd=ws)
    refused = subprocess.run(["git", "commit", "-qm", "approve by hand"], cwd=ws, capture_output=True, text=True,
                             env={**__import__("os").environ, **env_home})
    assert refused.returncode != 0
    assert "by its own proposer" in refused.stdout + refused.stderr
    as_author(ws, "rae@example.com")
    accepted = subprocess.run(["git", "commit", "-qm", "approve by hand"], cwd=ws, capture_output=True, text=True,
                              env={**__import__("os").environ, **env_home})
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_the_actor_defaults_to_git_user_email(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMCLI_ACTOR")
    as_author(ws, "dana+work@example.com")
    out = run_memcli("-w", str(ws), "--json", "remember", "My editor is helix", "--scope", "user:dana-work@example.com")
    assert out.code == 0, out
    assert out.json()["data"]["memory"]["provenance"]["actor"] == "dana-work@example.com"
    mine = run_memcli("-w", str(ws), "recall", "helix")
    assert "helix" in mine.out  # user:<me> is read by default, <me> from git
    labelled = run_memcli("-w", str(ws), "--actor", "claude", "--json", "remember", "Agents label themselves")
    assert labelled.json()["data"]["memory"]["provenance"]["actor"] == "claude"
    git("config", "--unset", "user.email", cwd=ws)
    global_ = run_memcli("-w", str(ws), "--json", "remember", "The global git config counts", "--scope", "project")
    assert global_.json()["data"]["memory"]["provenance"]["actor"] == "test@example.invalid"
    bare_home = ws.parent / "bare-home"
    bare_home.mkdir()
    (bare_home / ".gitconfig").write_text("[user]\n\tname = Dana Scully\n", encoding="utf-8")
    git("config", "--unset", "user.name", cwd=ws)
    named = run_memcli("-w", str(ws), "--json", "remember", "Fall back to the name", "--scope", "project",
                       env={"HOME": str(bare_home)})
    assert named.json()["data"]["memory"]["provenance"]["actor"] == "Dana-Scully"


def _set(ws: Path, old: str, new: str, message: str) -> None:
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8")
    assert old in text, old
    config.write_text(text.replace(old, new, 1), encoding="utf-8")
    git("commit", "-qam", message, cwd=ws)


def test_check_judges_a_range_by_its_bases_settings_and_refuses_loosening_them(ws: Path) -> None:
    """A push that allows self-approval and self-approves cannot vouch for itself (hnc3 fault 1)."""
    start = git("rev-parse", "HEAD", cwd=ws)
    _set(ws, "allow_self_approve = false", "allow_self_approve = true", "work alone")
    mid = propose(ws, "Cache the wheels in CI")
    assert run_memcli("-w", str(ws), "--actor", "test@example.invalid", "approve", mid).code == 0
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17 and "2 problems" in out.err, out
    assert "memcli.toml: commit" in out.err and "[review] allow_self_approve false -> true" in out.err
    assert "by its own proposer" in out.err  # judged by the base's allow_self_approve = false


def test_check_passes_a_tightening_and_refuses_a_memcli_toml_that_does_not_load(ws: Path) -> None:
    start = git("rev-parse", "HEAD", cwd=ws)
    _set(ws, 'shared = ["project", "global", "channel:*"]', 'shared = ["project", "global", "channel:*", "task:*"]',
         "review tasks too")
    assert run_memcli("-w", str(ws), "check", f"{start}..HEAD").code == 0
    _set(ws, "prompt_floor = 0.35", "prompt_floor = 0,35", "a comma")
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17 and "memcli.toml: as commit" in out.err and "does not load" in out.err, out
