"""``memcli.toml``: the workspace configuration, with documented defaults.

Read with the standard library's ``tomllib``. Unknown keys are ignored (a newer
memcli may add some); a known key with a wrong type is a one-line error.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from memcli.errors import WorkspaceInvalid

CONFIG_NAME = "memcli.toml"

#: What ``DEFAULT_TOML`` holds where ``init`` writes a workspace's id.
ID_PLACEHOLDER = "<a ULID, written by memcli init>"
DEFAULT_TOML = """\
# memcli workspace configuration. Every key is optional; these are the defaults.

[workspace]
# The workspace's stable id (keep it): it names each person's own store of their
# personal scopes (user:<name>, session:*) for this workspace, outside this repository.
# Without one, personal scopes stay in this workspace (`memcli doctor --fix` adds one).
id = "<a ULID, written by memcli init>"
# "project", or "personal" for a person's own store (made by memcli, never shared).
kind = "project"

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
# Commit signing (docs/teams.md): "off", or "ssh" to trust git's SSH commit signatures
# only, checked against the allowed_signers file at the store's root. With "ssh", check,
# verify-on-arrival, history and log take a commit's person from its signature, never
# from its author or its Memcli-Actor trailer, and memcli signs its own commits.
signing = "off"

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

[compact]
# `memcli compact` archives superseded and rejected memories last updated longer ago
# than this (a duration: 30d, 12w, 1y).
retention = "90d"
# rapidfuzz ratio (50-100) at or over which two active memories of one scope are merged.
near_duplicate = 95

[ttl]
# Default time to live per category, for a write without --ttl or --expire-at
# ("never" switches a default off). Any category may be listed.
goal = "30d"
episode = "90d"

[hooks]
# Let the pre-compact and session-end hooks run `memcli extract --apply` on the
# session transcript (only the person's own words, through every write gate).
extract = false
# Let the pre-compact hook run `memcli compact --transcript` on the session transcript:
# one rule-based summary memory in session:<id> before the agent's own compaction.
summarize = false
# The relevance floor (0-1) of the memories a prompt adds (user-prompt-submit): the share
# of the prompt's content words, weighted by rarity (BM25 IDF), that a memory must match.
prompt_floor = 0.35
# Seconds within which a hook (and `memcli context`) answers. With a missing or stale
# index it serves what is indexed by half of this time and leaves the rest of
# the build to one background process. Keep it well under the installed timeouts (5 s).
deadline = 2.0
# Let the session-start hook run `memcli stale --quiet` in the background when the code's
# HEAD moved since the last verdicts, so the reads mark memories whose code moved.
stale = true

[agents]
# Let each agent's session-end hook import what the agent wrote into its own memory store
# during the session (Claude Code's auto memory, Codex Memories, Gemini CLI's memory) into
# your user:<you> scope, through every write gate; the next session start says how many.
# The agents' stores are only read, never written (see `memcli export --format claude-memory`).
harvest = false

[search]
# The semantic retriever (recall by meaning, a local embedding model): "auto" (on when
# the `semantic` extra and a model are installed), "on" (a missing model is a warning on
# every search), or "off". Only long-lived processes (the MCP server) load the model;
# other commands ask one that runs, else answer lexically.
semantic = "auto"
# The embedding model: "" for the one the `semantic-offline` extra installs, a local
# folder (model.onnx and tokenizer.json), or a name fetched once into the user cache.
# $MEMCLI_EMBED_MODEL overrides it.
model = ""

[sync]
# Let the session-start (before the context is made) and session-end hooks run
# `memcli sync --quiet --deadline SECONDS` with the store's remote. A failure is one
# warning; the hook still answers.
session_start = false
session_end = false
# Seconds such a hook-run sync may take.
deadline = 3
"""


class Config:
    """The settings of one workspace; see ``DEFAULT_TOML`` for each key's meaning.

    Times are seconds (``lock_timeout``, ``hook_deadline``, ``sync_deadline``),
    ``context_budget`` is characters, ``near_duplicate`` and ``compact_near_duplicate`` are
    rapidfuzz ratios (0-100), ``prompt_floor`` a share (0-1). A list or table left None
    gets its default (a fresh copy each time). ``unknown`` holds the ``[table] key`` names in
    the file that memcli does not know (each a warning; see ``unknown_keys``).
    ``workspace_id`` is ``[workspace] id``, the stable id ``init`` gives a workspace: it keys
    the person's own store of its personal scopes (``store.personal``); None for an older
    workspace, which keeps personal scopes in its own tree until ``memcli doctor --fix``
    gives it one. ``kind`` is ``[workspace] kind``: ``project`` or ``personal`` (a person's
    own store). ``search_semantic`` is ``[search] semantic`` (``auto``, ``on`` or ``off``) and
    ``search_model`` ``[search] model`` (``""``: the package-shipped model; see
    ``memcli.index.embed``).

    Two attributes say where the settings came from when they are not the file's own
    (``service.settings``): ``broken``, one line naming a ``memcli.toml`` that does not load
    and the settings used instead (the last committed version that loads, else the defaults);
    ``held``, the id of the quarantine entry whose arriving ``memcli.toml`` is held back
    (``service.arrival``: a teammate's change that loosens trust, or that does not load),
    the settings then being the last verified ones. Both are ``""`` otherwise.
    """

    __slots__ = ("read_scopes", "write_scope", "shared_scopes", "allow_self_approve", "near_duplicate",
                 "on_conflict", "autocommit", "lock_timeout", "context_budget", "hook_extract", "hook_summarize",
                 "hook_stale",
                 "hook_deadline", "sync_session_start", "sync_session_end", "sync_deadline", "prompt_floor",
                 "compact_retention", "compact_near_duplicate", "ttl", "unknown", "workspace_id", "kind",
                 "search_semantic", "search_model", "agents_harvest", "signing", "broken", "held")

    def __init__(self, read_scopes: list[str] | None = None, write_scope: str = "project",
                 shared_scopes: list[str] | None = None, allow_self_approve: bool = False, near_duplicate: int = 90,
                 on_conflict: str = "supersede", autocommit: bool = True, lock_timeout: float = 10.0,
                 context_budget: int = 8000, hook_extract: bool = False, hook_summarize: bool = False,
                 hook_stale: bool = True,
                 hook_deadline: float = 2.0, sync_session_start: bool = False, sync_session_end: bool = False,
                 sync_deadline: float = 3.0, prompt_floor: float = 0.35, compact_retention: str = "90d",
                 compact_near_duplicate: int = 95, ttl: dict[str, str] | None = None,
                 unknown: list[str] | None = None, workspace_id: str | None = None, kind: str = "project",
                 search_semantic: str = "auto", search_model: str = "", agents_harvest: bool = False,
                 signing: str = "off") -> None:
        self.read_scopes = ["global", "project", "user:{actor}"] if read_scopes is None else read_scopes
        self.write_scope = write_scope
        self.shared_scopes = ["project", "global", "channel:*"] if shared_scopes is None else shared_scopes
        self.allow_self_approve = allow_self_approve
        self.near_duplicate = near_duplicate
        self.on_conflict = on_conflict
        self.autocommit = autocommit
        self.lock_timeout = lock_timeout
        self.context_budget = context_budget
        self.hook_extract = hook_extract
        self.hook_summarize = hook_summarize
        self.hook_stale = hook_stale
        self.hook_deadline = hook_deadline
        self.sync_session_start = sync_session_start
        self.sync_session_end = sync_session_end
        self.sync_deadline = sync_deadline
        self.prompt_floor = prompt_floor
        self.compact_retention = compact_retention
        self.compact_near_duplicate = compact_near_duplicate
        self.ttl = dict(DEFAULT_TTL) if ttl is None else ttl
        self.unknown = [] if unknown is None else unknown
        self.workspace_id = workspace_id
        self.kind = kind
        self.search_semantic = search_semantic
        self.search_model = search_model
        self.agents_harvest = agents_harvest
        self.signing = signing
        self.broken = ""
        self.held = ""

    def default_ttl(self, category: str) -> timedelta | None:
        """The ``[ttl]`` duration of a category (``goal`` -> 30 days), or None when it has none."""
        from memcli.timeutil import parse_duration

        value = self.ttl.get(category, NEVER)
        return None if value == NEVER else parse_duration(value)

    def default_ttl_or_none(self, category: str) -> timedelta | None:
        """:meth:`default_ttl`, or None for a value that does not read (a file checked elsewhere)."""
        try:
            return self.default_ttl(category)
        except ValueError:
            return None

    def retention(self) -> timedelta:
        """``[compact] retention`` as a duration (checked when the file was read)."""
        from memcli.timeutil import parse_duration

        return parse_duration(self.compact_retention)


#: A ``[workspace] id``: what ``new_toml`` writes is 26 characters (a lower-case ULID).
_WORKSPACE_ID = re.compile(r"[a-z0-9][a-z0-9-]{7,63}")


def new_toml(kind: str = "project") -> str:
    """The ``memcli.toml`` of a new workspace: ``DEFAULT_TOML`` with a fresh ``[workspace] id``
    (a project workspace) or with ``kind = "personal"`` and no id (a person's own store)."""
    if kind == "personal":
        return DEFAULT_TOML.replace(f'id = "{ID_PLACEHOLDER}"\n', "").replace('kind = "project"', 'kind = "personal"')
    return DEFAULT_TOML.replace(ID_PLACEHOLDER, new_workspace_id())


def new_workspace_id() -> str:
    """A fresh ``[workspace] id``: a lower-case ULID (26 characters)."""
    import ulid

    return str(ulid.ULID()).lower()


#: ``[ttl]`` defaults: goals and episodes go stale; facts and preferences hold until changed.
DEFAULT_TTL = {"goal": "30d", "episode": "90d"}
#: The ``[ttl]`` value that switches a category's default off.
NEVER = "never"


#: ``(section, key)`` -> ``(Config attribute, type)``; docs/reference/configuration.md lists them.
KEYS: dict[tuple[str, str], tuple[str, type | tuple[type, ...]]] = {
    ("workspace", "id"): ("workspace_id", str),
    ("workspace", "kind"): ("kind", str),
    ("scopes", "read"): ("read_scopes", list),
    ("scopes", "write"): ("write_scope", str),
    ("scopes", "shared"): ("shared_scopes", list),
    ("review", "allow_self_approve"): ("allow_self_approve", bool),
    ("review", "signing"): ("signing", str),
    ("gates", "near_duplicate"): ("near_duplicate", int),
    ("gates", "on_conflict"): ("on_conflict", str),
    ("git", "autocommit"): ("autocommit", bool),
    ("git", "lock_timeout"): ("lock_timeout", (int, float)),
    ("context", "budget"): ("context_budget", int),
    ("hooks", "extract"): ("hook_extract", bool),
    ("hooks", "summarize"): ("hook_summarize", bool),
    ("hooks", "stale"): ("hook_stale", bool),
    ("hooks", "deadline"): ("hook_deadline", (int, float)),
    ("sync", "session_start"): ("sync_session_start", bool),
    ("sync", "session_end"): ("sync_session_end", bool),
    ("sync", "deadline"): ("sync_deadline", (int, float)),
    ("hooks", "prompt_floor"): ("prompt_floor", (int, float)),
    ("compact", "retention"): ("compact_retention", str),
    ("compact", "near_duplicate"): ("compact_near_duplicate", int),
    ("search", "semantic"): ("search_semantic", str),
    ("search", "model"): ("search_model", str),
    ("agents", "harvest"): ("agents_harvest", bool),
}


def load_config(path: Path) -> Config:
    """Read ``memcli.toml`` at ``path``.

    Raises:
        WorkspaceInvalid: the file is not valid TOML or a known key has the wrong type.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise WorkspaceInvalid(f"{path} is missing (deleted, or removed by a commit)",
                               hint=f"restore it: `git checkout HEAD -- {path.name}` (or an older commit: "
                                    f"`git log -- {path.name}`)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise WorkspaceInvalid(f"{path}: cannot read configuration: {err}", hint="fix the TOML syntax") from None
    return parse_config(text, path)


def parse_config(text: str, path: Path | str = CONFIG_NAME) -> Config:
    """The settings a ``memcli.toml`` text holds (``path`` only names it in messages).

    Raises:
        WorkspaceInvalid: not valid TOML, a known key of the wrong type or out of its range.
    """
    data = _toml(text.removeprefix("\ufeff"), path)
    config = Config()
    for (table, key), (attr, kind) in KEYS.items():
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
    if config.context_budget < 200:
        raise WorkspaceInvalid(f"{path}: [context] budget must be at least 200 characters",
                               hint="the default is 8000 (Claude Code caps a hook's output at 10,000)")
    if config.lock_timeout < 0:
        raise WorkspaceInvalid(f"{path}: [git] lock_timeout must not be negative (seconds to wait for a lock)",
                               hint="the default is 10; 0 gives up at once")
    if isinstance(config.hook_deadline, bool) or not 0.1 <= config.hook_deadline <= 60:
        raise WorkspaceInvalid(f"{path}: [hooks] deadline must be from 0.1 to 60 seconds",
                               hint="the default is 2.0; keep it well under the hooks' installed timeouts")
    if not 0 <= config.prompt_floor <= 1:
        raise WorkspaceInvalid(f"{path}: [hooks] prompt_floor must be from 0 to 1 (a share of the prompt's words)",
                               hint="the default is 0.35")
    if config.on_conflict not in ("supersede", "fail"):
        raise WorkspaceInvalid(f"{path}: [gates] on_conflict must be \"supersede\" or \"fail\"")
    if not 50 <= config.compact_near_duplicate <= 100:  # below half alike, unrelated texts would merge
        raise WorkspaceInvalid(f"{path}: [compact] near_duplicate must be from 50 to 100 (a rapidfuzz ratio)",
                               hint="the default is 95")
    _check_duration(path, "[compact] retention", config.compact_retention)
    if config.workspace_id is not None and not _WORKSPACE_ID.fullmatch(config.workspace_id):
        raise WorkspaceInvalid(f"{path}: [workspace] id must be 8 to 64 characters a-z, 0-9 or '-', "
                               "starting with a letter or digit",
                               hint="keep the id `memcli init` wrote; it names your personal store of this workspace")
    if config.search_semantic not in ("auto", "on", "off"):
        raise WorkspaceInvalid(f"{path}: [search] semantic must be \"auto\", \"on\" or \"off\"",
                               hint="the default is \"auto\" (on when a model is installed)")
    if config.signing not in ("off", "ssh"):
        raise WorkspaceInvalid(f"{path}: [review] signing must be \"off\" or \"ssh\"",
                               hint="\"ssh\" trusts SSH commit signatures only (docs/teams.md)")
    if config.kind not in ("project", "personal"):
        raise WorkspaceInvalid(f"{path}: [workspace] kind must be \"project\" or \"personal\"")
    config.ttl = {**DEFAULT_TTL, **_ttl_table(path, data.get("ttl", {}))}
    config.unknown = unknown_keys(data)
    return config


#: Settings texts whose parse is kept for the next process (``_toml``): a person's workspaces.
KEPT_TEXTS = 16


def _toml(text: str, path: Path | str) -> dict:
    """``tomllib.loads(text)``, kept in this user's cache of derived data (``text.recache.kept``)
    for the next command: importing and running ``tomllib`` costs 5 ms, reading it back 0.1 ms.
    A text holding a TOML date or time (no ``marshal`` form) is parsed every time.

    Raises:
        WorkspaceInvalid: not valid TOML.
    """
    import marshal

    from memcli.text.recache import kept

    parsed: list[dict] = []

    def parse() -> object:
        parsed.append(_parse_now(text, path))
        return marshal.loads(marshal.dumps(parsed[0])) if _plain(parsed[0]) else None  # kept apart from the caller's

    found = kept(text, parse, kind="toml", keep=KEPT_TEXTS)
    if parsed:
        return parsed[0]
    if not isinstance(found, dict):  # a date in the text, or a damaged entry: parsed here
        return _parse_now(text, path)
    return marshal.loads(marshal.dumps(found))  # a copy: the caller's lists are its own


def _parse_now(text: str, path: Path | str) -> dict:
    """``tomllib.loads(text)``.

    Raises:
        WorkspaceInvalid: not valid TOML.
    """
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise WorkspaceInvalid(f"{path}: cannot read configuration: {err}", hint="fix the TOML syntax") from None


def _plain(value: object) -> bool:
    """Whether ``value`` holds only what ``marshal`` writes and TOML gives (no date or time)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float | bool)


def unknown_keys(data: dict) -> list[str]:
    """The tables and keys of a parsed ``memcli.toml`` that memcli does not know (a typo, or a
    key of a newer memcli), as ``[table] key``: reported, never fatal."""
    tables = {table for table, _ in KEYS}
    out = []
    for table, section in data.items():
        if table == "ttl":
            continue
        if table not in tables or not isinstance(section, dict):
            out.append(f"[{table}]")
            continue
        out += [f"[{table}] {key}" for key in section if (table, key) not in KEYS]
    return out


def _check_duration(path: Path | str, key: str, value: str) -> None:
    """Refuse a duration that does not parse, or that would carry today's date past the year 9999."""
    from datetime import datetime, timezone

    from memcli.timeutil import parse_duration, shift

    try:  # today by the wall clock: a $MEMCLI_NOW near the year 9999 must not make the file invalid
        shift(datetime.now(timezone.utc), parse_duration(value))
    except ValueError as err:  # OutOfCalendar too: past the year 9999 from today
        raise WorkspaceInvalid(f"{path}: {key}: {err}", hint="give a duration such as \"30d\", or \"never\"") from None


def _ttl_table(path: Path | str, table: object) -> dict[str, str]:
    """``[ttl]``: category -> duration string (or ``"never"``), each checked.

    Raises:
        WorkspaceInvalid: not a table, an unknown category, or a value that is no duration.
    """
    from memcli.model import CATEGORIES

    if not isinstance(table, dict):
        raise WorkspaceInvalid(f"{path}: [ttl] must be a table of category = \"duration\"")
    for category, value in table.items():
        if category not in CATEGORIES:
            raise WorkspaceInvalid(f"{path}: [ttl] {category!r} is not a category",
                                   hint=f"use one of: {', '.join(CATEGORIES)}")
        if not isinstance(value, str):
            raise WorkspaceInvalid(f"{path}: [ttl] {category} has the wrong type ({type(value).__name__})",
                                   hint="give a duration string such as \"30d\", or \"never\"")
        if value != NEVER:
            _check_duration(path, f"[ttl] {category}", value)
    return dict(table)
