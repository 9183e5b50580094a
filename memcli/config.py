"""``memcli.toml``: the workspace configuration, with documented defaults.

Read with the standard library's ``tomllib``. Unknown keys are ignored (a newer
memcli may add some); a known key with a wrong type is a one-line error.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from memcli.errors import WorkspaceInvalid

CONFIG_NAME = "memcli.toml"

DEFAULT_TOML = """\
# memcli workspace configuration. Every key is optional; these are the defaults.

[scopes]
# The scopes a query reads when no --scope is given. {actor} is the caller's name.
read = ["global", "project", "user:{actor}"]
# Where `remember` writes when no --scope is given.
write = "project"
# Shared scopes (glob patterns): a write there from an agent (model_derived) or a tool
# (tool_result) waits in pending_review until someone else approves it.
shared = ["project", "global", "channel:*"]

[review]
# May a reviewer approve their own write?
allow_self_approve = false

[gates]
# rapidfuzz ratio (0-100) over which a new memory is reported as a near duplicate.
near_duplicate = 90
# What a write does when an active memory in the same scope holds the same subject:
# "supersede" (the new one replaces it) or "fail".
on_conflict = "supersede"

[git]
# One commit per change. With false, memcli writes files and you commit them.
autocommit = true
# Seconds to wait for the workspace lock or git's index.lock before giving up.
lock_timeout = 10

[context]
# Characters the context block may take (Claude Code caps hook output at 10,000).
budget = 8000

[hooks]
# Let the pre-compact and session-end hooks run `memcli extract --apply` on the
# session transcript (only the person's own words, through every write gate).
extract = false
"""


@dataclass
class Config:
    """The settings of one workspace; see ``DEFAULT_TOML`` for each key's meaning."""

    read_scopes: list[str] = field(default_factory=lambda: ["global", "project", "user:{actor}"])
    write_scope: str = "project"
    shared_scopes: list[str] = field(default_factory=lambda: ["project", "global", "channel:*"])
    allow_self_approve: bool = False
    near_duplicate: int = 90
    on_conflict: str = "supersede"
    autocommit: bool = True
    lock_timeout: float = 10.0
    context_budget: int = 8000
    hook_extract: bool = False


_KEYS = {
    ("scopes", "read"): ("read_scopes", list),
    ("scopes", "write"): ("write_scope", str),
    ("scopes", "shared"): ("shared_scopes", list),
    ("review", "allow_self_approve"): ("allow_self_approve", bool),
    ("gates", "near_duplicate"): ("near_duplicate", int),
    ("gates", "on_conflict"): ("on_conflict", str),
    ("git", "autocommit"): ("autocommit", bool),
    ("git", "lock_timeout"): ("lock_timeout", (int, float)),
    ("context", "budget"): ("context_budget", int),
    ("hooks", "extract"): ("hook_extract", bool),
}


def load_config(path: Path) -> Config:
    """Read ``memcli.toml`` at ``path``.

    Raises:
        WorkspaceInvalid: the file is not valid TOML or a known key has the wrong type.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise WorkspaceInvalid(f"{path}: cannot read configuration: {err}", hint="fix the TOML syntax") from None
    config = Config()
    for (table, key), (attr, kind) in _KEYS.items():
        section = data.get(table, {})
        if not isinstance(section, dict) or key not in section:
            continue
        value = section[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise WorkspaceInvalid(f"{path}: [{table}] {key} has the wrong type ({type(value).__name__})",
                                   hint="see the comments in a fresh `memcli init` for each key's type")
        setattr(config, attr, value)
    if not 0 <= config.near_duplicate <= 100:
        raise WorkspaceInvalid(f"{path}: [gates] near_duplicate must be from 0 to 100 (a rapidfuzz ratio)")
    if config.context_budget < 200 or config.lock_timeout < 0:
        raise WorkspaceInvalid(f"{path}: [context] budget must be at least 200 and [git] lock_timeout not negative")
    if config.on_conflict not in ("supersede", "fail"):
        raise WorkspaceInvalid(f"{path}: [gates] on_conflict must be \"supersede\" or \"fail\"")
    return config
