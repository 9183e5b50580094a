"""The memory record and its schema (SPEC.md section 2). Pure: no I/O.

A memory is one Markdown file; this module knows its fields, their rules, how a
parsed front-matter mapping becomes a :class:`Memory` (with the documented defaults for
hand-written files) and how a new memory becomes a mapping to write.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime
from typing import Any, Callable

from memcli.errors import ValidationFailed
from memcli.text.recache import compiled
from memcli.timeutil import OutOfCalendar, format_instant, parse_instant, to_utc

CATEGORIES = ("preference", "fact", "decision", "procedure", "feedback", "goal", "episode", "summary", "glossary")
#: Words developers reach for that are not categories, and the category a memory so labelled
#: is written as (the word becomes a tag, so ``--tag gotcha`` finds it): a gotcha or pitfall
#: is a surprising fact about the code or its tools ("the staging database listens on 5433").
CATEGORY_ALIASES = {"gotcha": "fact", "gotchas": "fact", "pitfall": "fact", "pitfalls": "fact",
                    "caveat": "fact", "trap": "fact"}
STATUSES = ("active", "pending_review", "superseded", "rejected", "archived")
SOURCE_TYPES = ("user_said", "tool_result", "model_derived", "admin_edit")
#: Scope kinds without a name, and kinds that take ``kind:name``.
PLAIN_SCOPES = ("global", "project")
NAMED_SCOPES = ("user", "agent", "session", "task", "channel")
#: Key order for files memcli writes (SPEC.md section 2 example).
KEY_ORDER = (
    "id", "scope", "category", "subject", "status", "importance", "pinned", "createdAt", "updatedAt",
    "expireAt", "provenance", "review", "tags", "paths", "guards", "anchor", "supersedes", "supersededBy", "merged",
)
#: The keys of ``anchor`` (the code commit a memory was written against, and what it points
#: at: ``policy.pointers``), and the most names each list may hold.
ANCHOR_LISTS = ("files", "symbols", "commands")
MAX_ANCHOR_NAMES = 50
_COMMIT = compiled(r"^[0-9a-f]{7,64}$")
MAX_BODY_CHARS = 20_000
MAX_SUBJECT_CHARS = 200
#: Write bounds of a memory's labels (issue 22 point 8; the MCP tools publish the same in their
#: schemas): at most this many tags of at most this many characters each, and the same for paths.
MAX_TAGS, MAX_TAG_CHARS, MAX_PATHS, MAX_PATH_CHARS = 50, 200, 50, 1_024

_ID = compiled(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_NAME = compiled(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_MONTH_DIR = compiled(r"^\d{4}-\d{2}$")
# Windows device names: refused as path components everywhere (pass/gopass do the same).
#: A file name memcli makes: a ULID (26 characters of Crockford base32, lower case; the first
#: 0-7) followed by ``-`` and a slug; see :func:`id_from_stem`.
_ULID_NAME = compiled(r"(?P<id>[0-7][0-9a-hjkmnp-tv-z]{25})-.+", re.DOTALL)
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
# Refused in text and labels: C0 controls but tab, newline and carriage return; DEL; C1
# controls; the bidirectional embeddings, overrides and isolates of Unicode UAX #9 that can
# make text read differently from what it holds ("Trojan Source", CVE-2021-42574); and
# lone surrogates, which is how undecodable bytes arrive (PEP 383 surrogateescape).
_FORBIDDEN = compiled(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: The characters ``check_chars`` refuses, for callers that remove them instead (session summaries).
FORBIDDEN_CHARS = _FORBIDDEN
_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x1B: "ESC", 0x7F: "DEL"}
BOM = "\ufeff"


class Provenance:
    """Where a memory came from: ``sourceType``, ``actor``, ``runId``, ``at`` (SPEC.md section 2).

    ``source`` and ``line`` (optional) name the file and 1-based line the memory was taken
    from (``import`` of a rule file); ``sha256`` (optional) is the hex SHA-256 of that
    file's bytes (``compact --transcript``: the archived raw transcript). Each is written
    only when set. ``allow_secret`` (``allowSecret``) lists the secret kinds a person let
    through (a fresh empty list when None).
    """

    __slots__ = ("source_type", "actor", "run_id", "at", "idempotency_key", "source", "line", "sha256",
                 "allow_secret")

    def __init__(self, source_type: str = "admin_edit", actor: str = "unknown", run_id: str | None = None,
                 at: datetime | None = None, idempotency_key: str | None = None, source: str | None = None,
                 line: int | None = None, sha256: str | None = None, allow_secret: list[str] | None = None) -> None:
        self.source_type = source_type
        self.actor = actor
        self.run_id = run_id
        self.at = at
        self.idempotency_key = idempotency_key
        self.source = source
        self.line = line
        self.sha256 = sha256
        self.allow_secret = [] if allow_secret is None else allow_secret


class Memory:
    """One memory record.

    Times are aware UTC datetimes. ``path`` is the file's path relative to the
    workspace root, with ``/`` separators. ``body`` is the text after the front-matter,
    exactly as in the file (line endings normalised to ``\\n`` for display only by callers);
    a leading byte order mark is dropped. ``importance`` is 1-5. ``merged`` lists the
    memories ``compact`` merged into this one: ``{"id", "sourceType", "actor", "runId",
    "at"}`` each. ``anchor`` is None or ``{"commit": hex, "files"?, "symbols"?, "commands"?}``
    (the code commit the memory was written against and what it points at; SPEC.md
    section 11). ``guards`` lists the tool calls the memory forbids or asks about, as
    front-matter mappings ``{"deny"|"ask"|"warn": PATTERN}`` (``memcli.guards``, checked).
    A list argument left None becomes a fresh empty list, ``provenance`` a
    fresh :class:`Provenance`.
    """

    __slots__ = ("id", "scope", "body", "category", "subject", "status", "importance", "pinned", "created_at",
                 "updated_at", "expire_at", "provenance", "supersedes", "superseded_by", "review", "tags", "paths",
                 "path", "merged", "anchor", "guards")

    def __init__(self, id: str, scope: str, body: str, category: str = "fact", subject: str | None = None,
                 status: str = "active", importance: int = 3, pinned: bool = False,
                 created_at: datetime | None = None, updated_at: datetime | None = None,
                 expire_at: datetime | None = None, provenance: Provenance | None = None,
                 supersedes: list[str] | None = None, superseded_by: list[str] | None = None,
                 review: dict[str, Any] | None = None, tags: list[str] | None = None, paths: list[str] | None = None,
                 path: str = "", merged: list[dict[str, Any]] | None = None,
                 anchor: dict[str, Any] | None = None, guards: list[dict[str, str]] | None = None) -> None:
        self.id = id
        self.scope = scope
        # A byte order mark is an encoding artefact (stdin from some editors), never text.
        self.body = body[1:] if body.startswith(BOM) else body
        self.category = category
        self.subject = subject
        self.status = status
        self.importance = importance
        self.pinned = pinned
        self.created_at = created_at
        self.updated_at = updated_at
        self.expire_at = expire_at
        self.provenance = Provenance() if provenance is None else provenance
        self.supersedes = [] if supersedes is None else supersedes
        self.superseded_by = [] if superseded_by is None else superseded_by
        self.review = review
        self.tags = [] if tags is None else tags
        self.paths = [] if paths is None else paths
        self.path = path
        self.merged = [] if merged is None else merged
        self.anchor = anchor
        self.guards = [] if guards is None else guards

    def with_(self, **changes: Any) -> Memory:
        """A new record with ``changes`` (field name -> value); the other fields are shared, not copied.

        Raises:
            TypeError: a name in ``changes`` is not a field.
        """
        values = {name: getattr(self, name) for name in Memory.__slots__}
        values.update(changes)
        return Memory(**values)

    def is_expired(self, at: datetime) -> bool:
        """True when ``expireAt`` is set and ``at`` (aware UTC) is at or past it."""
        return self.expire_at is not None and at >= self.expire_at

    def served(self, at: datetime) -> bool:
        """True when the memory is in force: ``active`` and not expired at ``at``."""
        return self.status == "active" and not self.is_expired(at)

    @property
    def text(self) -> str:
        """The body without surrounding blank space, with ``\\n`` line endings."""
        return self.body.replace("\r\n", "\n").strip()

    def to_dict(self, at: datetime | None = None) -> dict[str, Any]:
        """A JSON-ready dict (ISO strings for times); ``expired`` added when ``at`` is given."""
        out: dict[str, Any] = {
            "id": self.id, "scope": self.scope, "category": self.category, "subject": self.subject,
            "status": self.status, "importance": self.importance, "pinned": self.pinned,
            "createdAt": _iso(self.created_at), "updatedAt": _iso(self.updated_at),
            "expireAt": _iso(self.expire_at),
            "provenance": {
                "sourceType": self.provenance.source_type, "actor": self.provenance.actor,
                "runId": self.provenance.run_id, "at": _iso(self.provenance.at),
                **({"source": self.provenance.source} if self.provenance.source is not None else {}),
                **({"line": self.provenance.line} if self.provenance.line is not None else {}),
                **({"sha256": self.provenance.sha256} if self.provenance.sha256 is not None else {}),
                **({"idempotencyKey": self.provenance.idempotency_key} if self.provenance.idempotency_key else {}),
                **({"allowSecret": list(self.provenance.allow_secret)} if self.provenance.allow_secret else {}),
            },
            "tags": list(self.tags), "paths": list(self.paths),
            "supersedes": list(self.supersedes), "supersededBy": list(self.superseded_by),
            "review": _jsonable(self.review), "path": self.path, "text": self.text,
        }
        if self.merged:
            out["merged"] = _jsonable(self.merged)
        if self.anchor:
            out["anchor"] = _jsonable(self.anchor)
        if self.guards:
            out["guards"] = [dict(g) for g in self.guards]
        if at is not None:
            out["expired"] = self.is_expired(at)
        return out


def _iso(value: datetime | None) -> str | None:
    return format_instant(value) if value else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime, date)):
        try:
            return format_instant(to_utc(value))
        except (OutOfCalendar, OverflowError):  # a time past the calendar's edge once in UTC
            return value.isoformat()
    return value


# --- validation of single values -------------------------------------------------------


def id_from_stem(stem: str) -> str:
    """The default id of a file without an ``id`` key, from its name without ``.md``.

    memcli names files ``<id>-<slug>.md``: when the stem (in lower case) is a 26-character
    ULID (Crockford base32, first character 0-7) followed by ``-`` and anything, the id is
    the ULID (``01m3aaaaaaaaaaaaaaaaaaaaaa-build`` -> ``01m3aaaaaaaaaaaaaaaaaaaaaa``);
    otherwise it is the whole stem (``handnote``, ``blue-green``), checked by the caller.
    """
    stem = stem.lower()
    match = _ULID_NAME.fullmatch(stem)
    return match["id"] if match else stem


#: ``[milliseconds, randomness]`` of the last id :func:`new_id` made in this process (-1: none yet).
_LAST_ID: list[int] = [-1, 0]
_ID_LOCK: list[Any] = []  # a threading.Lock once an id is made: the MCP server may write from two threads
_RANDOM_BITS = 80
_MAX_MS = (1 << 48) - 1  # the 48-bit time part: 10889-08-02T05:31:50.655Z


def new_id(at: datetime) -> str:
    """A new memory id: a ULID (ulid/spec: 48 bits of Unix milliseconds, 80 random bits),
    in lower case, whose time part is ``at`` to the millisecond, so ids sort by ``createdAt``.

    Unique under any clock.  The spec's monotonic rule: an id made in the same millisecond
    as this process's last one (a frozen ``$MEMCLI_NOW``, a batch import) takes the last
    random part plus one, so they stay distinct and in order; any other id takes 80 fresh
    random bits (``os.urandom``), so ids made in separate processes in the same millisecond,
    or under the same frozen clock, collide with a chance of 2**-80 per pair.  (python-ulid's
    own generator starts from "last id: time 0, random 0", so under a clock at 1970-01-01
    its first id in every process is ``00000000000000000000000001``; hence this one.)

    Args:
        at: an aware datetime at or after 1970-01-01T00:00:00Z.

    Raises:
        ValueError: ``at`` is before 1970 or past the ULID's last millisecond (year 10889).
    """
    import os
    import threading

    ms = int(to_utc(at).timestamp() * 1000)
    if not 0 <= ms <= _MAX_MS:
        raise ValueError("outside what ids can hold (1970-10889)")
    if not _ID_LOCK:
        _ID_LOCK.append(threading.Lock())
    with _ID_LOCK[0]:
        last_ms, last_random = _LAST_ID
        if ms == last_ms and last_random < (1 << _RANDOM_BITS) - 1:
            random = last_random + 1
        else:
            random = int.from_bytes(os.urandom(_RANDOM_BITS // 8), "big")
        _LAST_ID[:] = [ms, random]
    return crockford((ms << _RANDOM_BITS) | random)


#: Crockford's base32 alphabet in lower case (ulid/spec; no i, l, o, u).
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def crockford(value: int) -> str:
    """A 128-bit ``value`` as the 26 characters of a ULID's text form (ulid/spec: Crockford's
    base32, most significant first, 5 bits a character; the first character carries the top 3
    bits, so it is 0-7), in lower case. The same text as python-ulid's ``str(ULID)`` lowered
    (tests/test_ids.py compares them), without importing it (about 30-60 ms of every write:
    it imports ``importlib.metadata`` for its version).

    Raises:
        ValueError: ``value`` is negative or needs more than 128 bits.
    """
    if not 0 <= value < 1 << 128:
        raise ValueError("a ULID holds 128 bits")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def check_id(value: object) -> str:
    """Validate a memory id: 1–64 of ``a-z 0-9 _ -``, starting with a letter or digit.

    memcli makes 26-character ULIDs; a hand-written file's id is its name, so ``ci.md``
    has the id ``ci`` (an id shorter than a prefix is found by its whole value only).

    Ids are path components, so this also refuses ``..``, ``/``, ``\\``, NUL, ``%``,
    dots and Windows device names (CASES.md G1).

    Raises:
        ValidationFailed: the id is not acceptable.
    """
    if not isinstance(value, str) or not _ID.match(value) or value in _RESERVED:
        raise ValidationFailed(
            f"invalid id {_show(value)}: use 1-64 characters a-z, 0-9, '-' or '_'",
            hint="ids are file names, so no dots, slashes or device names",
        )
    return value


def check_scope(value: object) -> str:
    """Validate a scope: ``global``, ``project`` or ``kind:name`` (SPEC.md section 2).

    Raises:
        ValidationFailed: unknown kind, missing or unsafe name.
    """
    if isinstance(value, str):
        kind, sep, name = value.partition(":")
        if not sep and kind in PLAIN_SCOPES:
            return value
        if sep and kind in NAMED_SCOPES and _NAME.match(name) and name.lower() not in _RESERVED and ".." not in name:
            return value
    raise ValidationFailed(
        f"invalid scope {_show(value)}",
        hint="use global, project, or user:NAME, agent:NAME, session:ID, task:ID, channel:NAME",
    )


def check_choice(key: str, value: object, choices: tuple[str, ...]) -> str:
    """Validate that ``value`` is one of ``choices``; raises ValidationFailed naming them."""
    if not isinstance(value, str) or value not in choices:
        raise ValidationFailed(f"invalid {key} {_show(value)}", hint=f"use one of: {', '.join(choices)}")
    return value


def check_importance(value: object) -> int:
    """Validate importance: a whole number 1–5 (booleans are refused, not coerced)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ValidationFailed(f"invalid importance {_show(value)}", hint="use a whole number from 1 to 5")
    return int(value)


def check_chars(what: str, value: str) -> str:
    """Refuse control and invisible characters in ``value`` (see ``_FORBIDDEN``), and text
    that is not valid UTF-8, naming the character and its place but never echoing the text.

    Args:
        what: how the message names the value ("the memory text", "tags").
        value: the text to check.

    Raises:
        ValidationFailed: ``value`` holds such a character; the message gives it as
            ``U+XXXX`` with its 1-based line and column (in code points).
    """
    found = _FORBIDDEN.search(value)
    if found is None:
        return value
    code = ord(found.group())
    line = value.count("\n", 0, found.start()) + 1
    column = found.start() - (value.rfind("\n", 0, found.start()) + 1) + 1
    where = f"at line {line}, column {column}"
    if 0xD800 <= code <= 0xDFFF:
        byte = f" (undecodable byte 0x{code - 0xDC00:02X})" if 0xDC80 <= code <= 0xDCFF else " (a lone surrogate)"
        raise ValidationFailed(f"{what} is not valid UTF-8: U+{code:04X}{byte} {where}",
                               hint="save or pipe the text as UTF-8")
    if 0x202A <= code <= 0x2069:
        kind = "an invisible bidirectional control"
    else:
        kind = "a control character"
    name = f" ({_CONTROL_NAMES[code]})" if code in _CONTROL_NAMES else ""
    raise ValidationFailed(f"{what} contains {kind} U+{code:04X}{name} {where}",
                           hint="remove it: memories are plain text (tabs and newlines are fine)")


def check_text(body: str) -> str:
    """Validate a memory's text: not blank, at most ``MAX_BODY_CHARS`` characters, no control
    or invisible characters, valid UTF-8 (``check_chars``).

    Returns:
        The text without a leading byte order mark (U+FEFF), which stdin may start with.

    Raises:
        ValidationFailed: the text is blank, too long, or holds a refused character.
    """
    if body.startswith(BOM):
        body = body[1:]
    if not body.strip():
        raise ValidationFailed("the memory text is empty", hint="pass the text as an argument, or '-' to read stdin")
    if len(body) > MAX_BODY_CHARS:
        raise ValidationFailed(
            f"the memory text has {len(body)} characters, over the limit of {MAX_BODY_CHARS}",
            hint="store a distilled fact, not a log; split it into several memories",
        )
    return check_chars("the memory text", body)


def check_subject(value: str | None) -> str | None:
    """Validate a subject (the conflict key): one non-blank line of at most ``MAX_SUBJECT_CHARS``
    characters, without the characters ``check_chars`` refuses. None passes.

    Raises:
        ValidationFailed: the subject is not acceptable.
    """
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_SUBJECT_CHARS or "\n" in value:
        raise ValidationFailed(f"invalid subject: use one line of at most {MAX_SUBJECT_CHARS} characters")
    return check_chars("invalid subject: it", value)


def check_labels(key: str, values: object) -> list[str]:
    """Validate ``tags`` or ``paths``: a list of non-empty strings without newlines or the
    characters ``check_chars`` refuses."""
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ValidationFailed(f"invalid {key}: expected a list of non-empty strings")
    if any("\n" in v for v in values):  # said "a list of non-empty strings" (stop 34)
        raise ValidationFailed(f"invalid {key}: a value holds a line break; each is one line")
    for value in values:
        check_chars(f"invalid {key}: a value", value)
    return [str(v) for v in values]


def check_label_bounds(tags: list[str], paths: list[str]) -> None:
    """The write bounds of a memory's labels (:data:`MAX_TAGS` … :data:`MAX_PATH_CHARS`): checked when
    memcli writes (``service.write``), never when it reads a file someone wrote.

    Raises:
        ValidationFailed: too many tags or paths, or one too long; the message gives the count and the limit.
    """
    for key, values, most, longest in (("tags", tags, MAX_TAGS, MAX_TAG_CHARS),
                                       ("paths", paths, MAX_PATHS, MAX_PATH_CHARS)):
        if len(values) > most:
            raise ValidationFailed(f"too many {key}: {len(values)}, over the limit of {most}",
                                   hint=f"keep the {most} that matter most")
        long = next((v for v in values if isinstance(v, str) and len(v) > longest), None)
        if long is not None:
            raise ValidationFailed(f"a {key[:-1]} has {len(long)} characters, over the limit of {longest}",
                                   hint=f"shorten it to at most {longest} characters")


#: Where a glob example points a person whose path was refused.
_GLOB_HINT = "a memory's paths are globs relative to the project's top folder, e.g. --path 'src/**/*.py'"


def _unclosed_bracket(segment: str) -> int | None:
    """The index of the first ``[`` of a glob segment that no ``]`` closes (POSIX bracket
    rules, as wcmatch reads them: a ``]`` just after ``[`` or ``[!``/``[^`` is a member, a
    backslash escapes the next character), or None. wcmatch reads such a ``[`` as a literal
    character, so ``[[`` names a file called ``[[``: never what was meant."""
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            end = i + 1
            if end < len(segment) and segment[end] in "!^":
                end += 1
            if end < len(segment) and segment[end] == "]":
                end += 1
            close = segment.find("]", end)
            if close < 0:
                return i
            i = close + 1
            continue
        i += 1
    return None


def check_path_globs(paths: list[str]) -> None:
    """Refuse ``paths`` entries that can never match a file of the project, at write time
    (``service.write``; files already written are read as they are).

    A memory's ``paths`` are globs relative to the project's top folder, matched by
    ``index.paths_match`` (wcmatch, ``GLOBSTAR | DOTGLOB``) against a file's path relative to
    it (``web/src/a.ts``). Refused: an absolute path (``/``, ``\\``, ``~``, a drive ``C:``), a
    ``..`` segment (out of the project) or a ``.`` segment (``./src``: a file's path has none),
    a ``[`` no ``]`` closes (wcmatch would read it as a literal ``[``), and a bracket
    expression wcmatch compiles to no character at all (a reversed range, ``[z-a]``).

    Raises:
        ValidationFailed: the first such path, with what is wrong and the glob to write.
    """
    for value in paths:
        shown = _show(value)
        if value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:[\\/]", value):
            raise ValidationFailed(f"invalid path {shown}: an absolute path, which no file of the project can match",
                                   hint=_GLOB_HINT)
        segments = value.split("/")
        if segments[0] == "..":
            raise ValidationFailed(f"invalid path {shown}: '..' climbs out of the project, where no file of the "
                                   "project can match", hint=_GLOB_HINT)
        odd = next((part for part in segments if part in (".", "..")), None)
        if odd is not None:
            fixed = "/".join(part for part in segments if part != ".") if odd == "." else ""
            raise ValidationFailed(f"invalid path {shown}: a {odd!r} segment, which no file's path relative to the "
                                   "project has", hint=f"write it without './': --path {_show(fixed)}" if fixed
                                   else _GLOB_HINT)
        for segment in segments:
            at = _unclosed_bracket(segment)
            if at is not None:
                raise ValidationFailed(f"invalid path {shown}: the glob does not compile: the '[' of "
                                       f"{_show(segment[at:])} is never closed by a ']'",
                                       hint="close the bracket expression ([ab]); a literal '[' is written [[]")
        from wcmatch import glob

        patterns, _ = glob.translate(value, flags=glob.GLOBSTAR | glob.DOTGLOB)
        if any("(?!)" in pattern for pattern in patterns):
            raise ValidationFailed(f"invalid path {shown}: a bracket expression in it matches no character "
                                   "(a range written backwards, as [z-a]?)", hint="write ranges low to high: [a-z]")


def _show(value: object) -> str:
    """A rejected value as an error may show it: secrets removed, hidden characters stripped, cut
    short, and the hidden characters it held named (``U+200B``), so that a value that looks
    right says why it is not (stop 34: "invalid scope 'user:alice@example.com'")."""
    from memcli.text.secrets import shown

    out = shown(value)
    if isinstance(value, str):
        hidden = sorted({f"U+{ord(c):04X}" for c in value if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cn", "Zl",
                                                                                        "Zp")})
        if hidden:
            out += f" (it holds invisible characters: {', '.join(hidden[:3])}{', …' if len(hidden) > 3 else ''})"
    return out


# --- scope <-> folder ----------------------------------------------------------------


def scope_parts(scope: str) -> tuple[str, ...]:
    """The folder parts of a scope under ``memories/``: ``user:alice`` -> ``("user", "alice")``."""
    kind, _, name = check_scope(scope).partition(":")
    return (kind, name) if name else (kind,)


def scope_of_parts(parts: tuple[str, ...]) -> str | None:
    """The scope a folder under ``memories/`` stands for, ignoring month folders; or None."""
    if not parts:
        return None
    if parts[0] in PLAIN_SCOPES:
        return parts[0]
    if parts[0] in NAMED_SCOPES and len(parts) >= 2 and not _MONTH_DIR.match(parts[1]):
        return f"{parts[0]}:{parts[1]}"
    return None


def normalise_text(text: str) -> str:
    """The form used by the exact-duplicate gate: NFKC, case-folded, blank runs collapsed,
    closing punctuation (``.`` ``!`` ``。`` ``！``) dropped."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(" .!。！")


# --- mapping <-> record --------------------------------------------------------------


def _instant(key: str, value: object) -> datetime | None:
    if value is None:
        return None
    try:
        if isinstance(value, (datetime, date)):
            return to_utc(value)
        if isinstance(value, str):
            return parse_instant(value)
    except (OverflowError, OutOfCalendar):
        raise ValidationFailed(f"{key}: {_show(str(value))} is outside the calendar memcli can hold "
                               "(years 1 to 9999, in UTC)") from None
    except ValueError:
        pass
    raise ValidationFailed(f"{key}: {_show(value)} is not an RFC 3339 time or a date")


def from_mapping(meta: dict[str, Any], body: str, *, path: str, file_id: str,
                 folder_scope: str | None, file_time: datetime) -> Memory:
    """Build a :class:`Memory` from a parsed front-matter mapping, applying defaults.

    Args:
        meta: the front-matter keys (may be empty for a hand-written file).
        body: the text after the front-matter.
        path: the file's path relative to the workspace, for messages.
        file_id: the id derived from the file name (used when ``id`` is absent; see
            :func:`id_from_stem`).
        folder_scope: the scope derived from the folder (used when ``scope`` is absent).
        file_time: the file's modification time, the default for ``createdAt``.

    Raises:
        ValidationFailed: a key has a value outside the schema; the message names the key.
    """
    def key(name: str, check: Callable[[Any], Any], default: Any = None) -> Any:
        """``check(meta[name])``, or ``default`` when the key is absent or null; errors name the key."""
        if name not in meta or meta[name] is None:
            return default
        try:
            return check(meta[name])
        except ValidationFailed as err:
            raise ValidationFailed(f"{name}: {err.message}") from None

    if not body.strip():
        raise ValidationFailed("the memory text is empty (nothing after the front-matter)")
    memory_id = key("id", check_id, None) or check_id(file_id)
    scope = key("scope", check_scope, folder_scope)
    if scope is None:
        raise ValidationFailed("no scope: the file is outside every scope folder and has no 'scope' key")
    if folder_scope is not None and scope != folder_scope:
        raise ValidationFailed(f"scope {scope!r} does not match its folder (scope {folder_scope!r})")
    prov = meta.get("provenance") or {}
    if not isinstance(prov, dict):
        raise ValidationFailed("provenance: expected a mapping")
    review = meta.get("review")
    if review is not None and not isinstance(review, dict):
        raise ValidationFailed("review: expected a mapping")
    for name in ("provenance", "review", "merged"):
        _plain_data(name, meta.get(name))
    subject = meta.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise ValidationFailed(f"subject: {_show(subject)} is not a string")
    pinned = meta.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValidationFailed(f"pinned: {_show(pinned)} is not true or false")
    created = _instant("createdAt", meta.get("createdAt")) or file_time
    return Memory(
        id=memory_id,
        scope=scope,
        body=body,
        category=key("category", lambda v: check_choice("category", v, CATEGORIES), "fact"),
        subject=subject,
        status=key("status", lambda v: check_choice("status", v, STATUSES), "active"),
        importance=key("importance", check_importance, 3),
        pinned=pinned,
        created_at=created,
        updated_at=_instant("updatedAt", meta.get("updatedAt")) or created,
        expire_at=_instant("expireAt", meta.get("expireAt")),
        provenance=Provenance(
            source_type=check_choice("provenance.sourceType", prov.get("sourceType", "admin_edit"), SOURCE_TYPES),
            actor=str(prov.get("actor") or "unknown"),
            run_id=None if prov.get("runId") is None else str(prov.get("runId")),
            at=_instant("provenance.at", prov.get("at")),
            idempotency_key=None if prov.get("idempotencyKey") is None else str(prov.get("idempotencyKey")),
            source=None if prov.get("source") is None else str(prov.get("source")),
            line=_line(prov.get("line")),
            sha256=None if prov.get("sha256") is None else str(prov.get("sha256")),
            allow_secret=[str(k) for k in prov.get("allowSecret") or [] if isinstance(k, str)]
            if isinstance(prov.get("allowSecret"), list) else [],
        ),
        supersedes=key("supersedes", lambda v: check_labels("supersedes", _one_item(v)), []),
        superseded_by=key("supersededBy", lambda v: check_labels("supersededBy", _one_item(v)), []),
        review=dict(review) if review else None,
        tags=key("tags", lambda v: check_labels("tags", _one_item(v)), []),
        paths=key("paths", lambda v: check_labels("paths", _one_item(v)), []),
        path=path,
        merged=_merged(meta.get("merged")),
        anchor=check_anchor(meta.get("anchor")),
        guards=key("guards", check_guards, []),
    )


#: The values a front-matter mapping may hold once read (YAML 1.2's core schema, and timestamps).
_PLAIN = (str, int, float, bool, type(None), datetime, date)


def _plain_data(key: str, value: object, depth: int = 0) -> None:
    """Refuse what JSON output and the index cannot hold: a YAML tag (``!!binary``, ``!!set``,
    ``!foo``) or nesting deeper than 20 levels inside ``key``.

    Raises:
        ValidationFailed: naming ``key`` and the kind of value found.
    """
    if depth > 20:
        raise ValidationFailed(f"{key}: nested more than 20 levels deep")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValidationFailed(f"{key}: a key {_show(k)} that is not a string")
            _plain_data(key, v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _plain_data(key, v, depth + 1)
    elif not isinstance(value, _PLAIN) or type(value).__name__.startswith("Tagged"):
        kind = "binary data" if isinstance(value, (bytes, bytearray)) \
            else "a set" if isinstance(value, (set, frozenset)) \
            else f"a YAML tag ({getattr(getattr(value, 'tag', None), 'value', None) or type(value).__name__})"
        raise ValidationFailed(f"{key}: holds {kind}; memcli reads only plain strings, numbers, dates, lists and "
                               "mappings")


def _one_item(value: object) -> object:
    """A one-item list for a lone string where a list is expected: ``supersededBy: ID`` is how
    people write one link by hand (YAML's ``[ID]``); anything else is returned as it is."""
    return [value] if isinstance(value, str) else value


def check_anchor(value: object) -> dict[str, Any] | None:
    """The ``anchor`` mapping, checked: ``commit`` a hexadecimal commit id (7 to 64 digits),
    and optionally ``files``, ``symbols``, ``commands``: lists of at most
    ``MAX_ANCHOR_NAMES`` one-line strings; ``confirmedBy`` (a name) and ``confirmedAt`` (a
    time) after ``memcli confirm``. None stays None.

    Raises:
        ValidationFailed: anything else (the message names the key).
    """
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("commit"), str) \
            or not _COMMIT.match(value["commit"]):
        raise ValidationFailed("anchor: expected a mapping with commit: a commit id (7 to 64 hexadecimal digits)")
    out: dict[str, Any] = {"commit": value["commit"]}
    for key in ANCHOR_LISTS:
        names = value.get(key)
        if names is None:
            continue
        if not isinstance(names, list) or len(names) > MAX_ANCHOR_NAMES or not all(
                isinstance(n, str) and n and len(n) <= 300 and "\n" not in n for n in names):
            raise ValidationFailed(f"anchor.{key}: expected a list of at most {MAX_ANCHOR_NAMES} names")
        out[key] = list(names)
    if value.get("confirmedBy") is not None:
        if not isinstance(value["confirmedBy"], str) or not _NAME.match(value["confirmedBy"]):
            raise ValidationFailed("anchor.confirmedBy: expected a name")
        out["confirmedBy"] = value["confirmedBy"]
    if value.get("confirmedAt") is not None:
        out["confirmedAt"] = _instant("anchor.confirmedAt", value["confirmedAt"])
    unknown = sorted(set(value) - {"commit", "confirmedBy", "confirmedAt", *ANCHOR_LISTS})
    if unknown:
        raise ValidationFailed(f"anchor: unknown key {unknown[0]!r} (known: commit, {', '.join(ANCHOR_LISTS)}, "
                               "confirmedBy, confirmedAt)")
    return out


def check_guards(value: object) -> list[dict[str, str]]:
    """The ``guards`` list, checked (``memcli.guards.check_guards``): one-key mappings
    ``{deny|ask|warn: PATTERN}`` in Claude Code's permission-rule syntax; patterns as written.

    Raises:
        ValidationFailed: anything else (the message names the pattern and what is wrong).
    """
    from memcli import guards

    return guards.to_list(guards.check_guards(value))


def _merged(value: object) -> list[dict[str, Any]]:
    """The ``merged`` list (written by ``compact``): mappings with an ``id`` and the merged one's provenance."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get("id"), str) for v in value):
        raise ValidationFailed("merged: expected a list of mappings, each with an id")
    out = []
    for entry in value:
        item = {str(k): v for k, v in entry.items()}
        if "at" in item:
            item["at"] = _instant("merged.at", item["at"])
        out.append(item)
    return out


def _line(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationFailed(f"provenance.line: {_show(value)} is not a line number (a whole number from 1)")
    return value


def to_mapping(memory: Memory) -> dict[str, Any]:
    """The front-matter mapping for a new file, in ``KEY_ORDER``, omitting empty optionals.

    Times stay ``datetime`` objects; ``fileformat.emit`` writes them as RFC 3339 ``Z`` stamps.
    """
    prov: dict[str, Any] = {
        "sourceType": memory.provenance.source_type,
        "actor": memory.provenance.actor,
        "runId": memory.provenance.run_id,
        "at": memory.provenance.at or memory.created_at,
    }
    if memory.provenance.source is not None:
        prov["source"] = memory.provenance.source
    if memory.provenance.line is not None:
        prov["line"] = memory.provenance.line
    if memory.provenance.sha256 is not None:
        prov["sha256"] = memory.provenance.sha256
    if memory.provenance.idempotency_key:
        prov["idempotencyKey"] = memory.provenance.idempotency_key
    if memory.provenance.allow_secret:
        prov["allowSecret"] = list(memory.provenance.allow_secret)
    values: dict[str, Any] = {
        "id": memory.id, "scope": memory.scope, "category": memory.category, "subject": memory.subject,
        "status": memory.status, "importance": memory.importance, "pinned": memory.pinned or None,
        "createdAt": memory.created_at, "updatedAt": memory.updated_at,
        "expireAt": memory.expire_at, "provenance": prov, "review": memory.review,
        "tags": memory.tags or None, "paths": memory.paths or None,
        "supersedes": memory.supersedes or None, "supersededBy": memory.superseded_by or None,
        "merged": memory.merged or None, "anchor": memory.anchor or None,
        "guards": [dict(g) for g in memory.guards] or None,
    }
    return {k: values[k] for k in KEY_ORDER if values[k] is not None}


def from_dict(data: dict[str, Any]) -> Memory:
    """Rebuild a :class:`Memory` from :meth:`Memory.to_dict` output (the index's stored record).

    The body is the stored ``text`` plus a newline; times are parsed back to aware UTC.
    """
    def when(value: str | None) -> datetime | None:
        return parse_instant(value) if value else None

    prov = data.get("provenance") or {}
    return Memory(
        id=data["id"], scope=data["scope"], body=data.get("text", "") + "\n", category=data["category"],
        subject=data.get("subject"), status=data["status"], importance=data["importance"],
        pinned=bool(data.get("pinned")), created_at=when(data.get("createdAt")),
        updated_at=when(data.get("updatedAt")), expire_at=when(data.get("expireAt")),
        provenance=Provenance(source_type=prov.get("sourceType", "admin_edit"), actor=prov.get("actor", "unknown"),
                              run_id=prov.get("runId"), at=when(prov.get("at")),
                              idempotency_key=prov.get("idempotencyKey"), source=prov.get("source"),
                              line=prov.get("line"), sha256=prov.get("sha256"),
                              allow_secret=list(prov.get("allowSecret") or [])),
        supersedes=list(data.get("supersedes") or []), superseded_by=list(data.get("supersededBy") or []),
        review=data.get("review"), tags=list(data.get("tags") or []), paths=list(data.get("paths") or []),
        path=data.get("path", ""),
        merged=[{**m, "at": when(m.get("at"))} if "at" in m else dict(m) for m in data.get("merged") or []],
        anchor=data.get("anchor"), guards=[dict(g) for g in data.get("guards") or []])
