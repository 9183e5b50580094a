"""The README and docs/ stay in step with the code (issue 14, point 1)."""

import re
from pathlib import Path

from memcli.cli.app import app
from memcli.errors import EXIT_CODES

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")


def test_readme_is_a_front_door():
    lines = README.splitlines()
    assert len(lines) <= 260, len(lines)
    for heading in ("## Install", "## Quick start: Claude Code", "## Where memory lives", "## Documentation"):
        assert heading in README
    assert "**Contents:**" in README


def test_every_link_in_readme_and_docs_points_to_a_file_or_heading():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path) if path else page
            assert dest.exists(), f"{page.name}: broken link {target}"
            if anchor and dest.suffix == ".md":
                slugs = {re.sub(r"[^\w\- ]", "", h.strip("# ").lower()).replace(" ", "-")
                         for h in dest.read_text(encoding="utf-8").splitlines() if h.startswith("#")}
                assert anchor in slugs, f"{page.name}: no heading for {target}"


def test_every_command_is_in_the_guide_or_the_readme():
    names = [c.name or c.callback.__name__ for c in app.registered_commands if not c.hidden]
    names += [g.name for g in app.registered_groups]
    missing = [n for n in names if f"`{n}" not in GUIDE and f"memcli {n}" not in README]
    assert not missing, f"commands missing from README and docs/commands.md: {missing}"


def test_every_error_class_has_a_documented_exit_code():
    import memcli.errors as errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MemcliError)]
    assert all(c.exit_code in EXIT_CODES for c in classes)
    assert len({c.code for c in classes}) == len(classes), "each condition has its own code"
