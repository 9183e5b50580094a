"""The README stays in step with the code: exit codes and the command list."""

import re
from pathlib import Path

from memcli.cli.app import app
from memcli.errors import EXIT_CODES

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_exit_code_table_matches_errors_module():
    block = README.split("<!-- exit-codes")[1].split("<!-- /exit-codes -->")[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", block, re.MULTILINE))
    assert {int(k): v for k, v in rows.items()} == EXIT_CODES


def test_every_command_is_documented():
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    missing = [n for n in names if f"`{n}" not in README]
    assert not missing, f"commands missing from README: {missing}"


def test_every_error_class_has_a_documented_exit_code():
    import memcli.errors as errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MemcliError)]
    assert all(c.exit_code in EXIT_CODES for c in classes)
    assert len({c.code for c in classes}) == len(classes), "each condition has its own code"
