"""The generated reference in docs/reference/ stays true (issue 14, point 1)."""

from __future__ import annotations

from pathlib import Path

from memcli.cli import reference

ROOT = Path(__file__).resolve().parent.parent


def test_the_generated_reference_is_up_to_date() -> None:
    stale = [str(rel) for rel, text in reference.files().items()
             if not (ROOT / rel).exists() or (ROOT / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"run `python -m memcli.cli.reference` to regenerate: {stale}"


def test_every_command_option_key_and_exit_code_is_in_the_reference() -> None:
    import typer

    from memcli.cli.app import app
    from memcli.config import DEFAULT_TOML, KEYS
    from memcli.errors import EXIT_CODES

    commands = (ROOT / reference.FOLDER / "commands.md").read_text(encoding="utf-8")
    for path, command in reference._commands(typer.main.get_command(app), ["memcli"]):
        assert f"## `{' '.join(path)}`" in commands
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and not getattr(param, "hidden", False):
                    assert opt in commands, (path, opt)
    for section, key in KEYS:
        assert f"[{section}]" in DEFAULT_TOML and f"\n{key} = " in DEFAULT_TOML, (section, key)
    codes = (ROOT / reference.FOLDER / "exit-codes.md").read_text(encoding="utf-8")
    assert all(f"| {code} | {meaning} |" in codes for code, meaning in EXIT_CODES.items())
