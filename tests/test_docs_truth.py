"""README and docs say what the tool does (issue 19 item 9): each install command's documented
file and events against what it writes, no citation of a file outside the repository, and the
actor named as it is resolved."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: `memcli hook install claude --local   # .claude/settings.local.json: SessionStart, …`
INSTALL_LINE = re.compile(r"memcli (?:-w \S+ )?(hook|mcp) install (claude|codex|gemini)((?: --(?:user|local))*)"
                          r"\s+#\s*(.*)")
PATH_WORD = re.compile(r"(~/)?\.?[\w-]+(?:/[\w.-]+)*\.(?:json|toml)\b")
EVENT_WORD = re.compile(r"\b(?:[A-Z][a-z]+){2,}\b")


def documented_installs() -> list[tuple[str, str, str, str, str]]:
    """Every commented install line: ``(page, kind, agent, flags, comment)``."""
    found = []
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            match = INSTALL_LINE.search(line)
            if match:
                found.append((page.name, *match.groups()))
    return found


def test_the_install_lines_are_found():
    kinds = {(kind, agent) for _, kind, agent, _, _ in documented_installs()}
    assert kinds == {(k, a) for k in ("hook", "mcp") for a in ("claude", "codex", "gemini")}


@pytest.mark.parametrize("page, kind, agent, flags, comment", documented_installs())
def test_each_install_writes_the_documented_file_and_events(tmp_path, page, kind, agent, flags, comment):
    from memcli.mcp_server import install as mcp_install
    from memcli.service import hook_install

    project = tmp_path / "project"
    project.mkdir()
    home = Path.home()
    # the comment's first file is what this line's flags write; "--user: FILE" what --user writes
    runs = [(flags.split(), comment.split("--user:")[0])]
    if "--user:" in comment:
        runs.append((["--user"], comment.split("--user:")[1]))
    for options, text in runs:
        paths = [m.group(0) for m in PATH_WORD.finditer(text)]
        assert paths, f"{page}: `{kind} install {agent}{flags}` names no file: {comment!r}"
        documented = home / paths[0][2:] if paths[0].startswith("~/") else project / paths[0]
        if kind == "hook":
            where = "user" if "--user" in options else "local" if "--local" in options else "project"
            written = Path(hook_install.install(agent, where, project, None)["path"])
        else:
            written = Path(mcp_install.install(agent, "--user" in options, project, ["mcp"])["path"])
        assert written == documented, f"{page}: `{kind} install {agent} {' '.join(options)}` writes {written}"
        if kind == "hook":
            events = set(EVENT_WORD.findall(text))
            if events:  # "the same in …" documents the file only
                assert events == set(json.loads(written.read_text(encoding="utf-8"))["hooks"]), (page, comment)
        elif written.suffix == ".toml":
            assert "memcli" in tomllib.loads(written.read_text(encoding="utf-8"))["mcp_servers"]
        else:
            assert "memcli" in json.loads(written.read_text(encoding="utf-8"))["mcpServers"]


def cited_elsewhere(page: Path, name: str, files: list[str], quoted: bool = False) -> bool:
    """True when the Markdown file ``name`` that ``page`` mentions is neither in the repository,
    nor an agent's rule file or memory store file (the names ``memcli import`` reads), nor an example: a lower-case
    name in a code span (``quoted``: `` `docs/x.md` ``, `` `handnote.md` ``), or a bare one."""
    from memcli.agents.memstores import STORE_FILES
    from memcli.agents.rule_files import DISCOVER

    name = name.removeprefix("./").removeprefix("~/")
    base = name.rsplit("/", 1)[-1]
    if (page.parent / name).exists() or (ROOT / name).exists() or any(f.endswith("/" + name) for f in files):
        return False
    from fnmatch import fnmatch

    rule_names = {pattern.rsplit("/", 1)[-1] for pattern in DISCOVER if "*" not in pattern}
    if base in rule_names or base in STORE_FILES or any(fnmatch(name, p.replace("**/", "*")) for p in DISCOVER) or \
            base.endswith(".instructions.md"):
        return False
    if base.islower() and (quoted or "/" not in name):  # `handnote.md`, "See `docs/x.md`": examples
        return False
    return True


def test_docs_cite_no_file_outside_the_repository():
    """SPEC.md, STYLE.md and the like are not in the repository: a reader cannot open them."""
    skip = {".git", ".venv", ".cache", "node_modules"}
    files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if not skip & set(p.parts)]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bSPEC\b", text), f"{page.name} cites the spec, which is not in the repository"
        quoted = {t for span in re.findall(r"`([^`]+)`", text) for t in re.findall(r"~?[\w./-]*\w\.md\b", span)}
        for token in set(re.findall(r"~?[\w./-]*\w\.md\b", text)):
            for name in re.split(r"(?<=\.md)/", token):  # "CLAUDE.md/AGENTS.md"
                assert not cited_elsewhere(page, name, files, token in quoted), \
                    f"{page.name} cites {name}, not in the repository"


def test_the_citation_check_catches_the_spec():
    page = ROOT / "README.md"
    assert cited_elsewhere(page, "SPEC.md", []) and cited_elsewhere(page, "docs/nowhere.md", [])
    assert cited_elsewhere(page, "SPEC.md", [], quoted=True) and not cited_elsewhere(page, "docs/x.md", [], quoted=True)
    assert not cited_elsewhere(page, "docs/hooks.md", []) and not cited_elsewhere(page, "~/.claude/CLAUDE.md", [])


def test_the_actor_is_documented_as_git_user_email():
    from memcli.cli.app import app  # noqa: F401  (the --help text below is the source)

    for page in ("review-gate.md", "mcp.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert "user.email" in text and not re.search(r"`\$MEMCLI_ACTOR`,? (?:else )?(?:your )?login name", text)


def test_gemini_auth_precondition_is_said_by_the_docs_and_the_install(tmp_path):
    from memcli.service.hook_install import install

    assert "exits 41" in (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    steps = install("gemini", "project", tmp_path, None)["next"]
    assert any("exits 41" in step and "GEMINI_API_KEY" in step for step in steps), steps
