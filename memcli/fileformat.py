"""Read and rewrite one memory file, round-trip safe. Pure: bytes in, bytes out.

Why not python-frontmatter here: its ``loads`` strips the whole text and its boundary
pattern (``^-{3,}\\s*$``) swallows blank lines after the fence, so a body would not
survive byte for byte, and its default YAML loader is YAML 1.1 (``no`` -> False).
memcli uses python-frontmatter where byte fidelity does not matter (rule files met by
``import``); memory files go through this module, which:

* accepts UTF-8 with or without BOM, LF or CRLF (SPEC.md section 2; CASES.md F1, F2);
* parses the YAML with ruamel.yaml in round-trip mode, YAML 1.2 semantics, duplicate
  keys refused, and reports problems with the file's own line number (F4, F7, F8);
* rewrites surgically: a changed key's lines are replaced, a new key is appended before
  the closing fence, everything else (key order, comments, unknown keys, line endings,
  BOM, the body) is kept byte for byte, so ``git diff`` shows only the changed lines.
"""

from __future__ import annotations

import io
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memcli.errors import FileOverLimit, InvalidMemoryFile
from memcli.text.recache import compiled

if TYPE_CHECKING:
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.representer import RoundTripRepresenter

BOM = "\ufeff"
FENCE = "---"
#: One line with its ending. Only CRLF, LF and a lone CR end a line, as in ruamel's line
#: numbers; ``str.splitlines`` would also split at U+2028, U+0085, form feed and others.
_LINE = compiled(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class Document:
    """A parsed memory file.

    Attributes:
        meta: the front-matter mapping (a ruamel ``CommentedMap``; ``{}`` if there is none).
        body: the text after the closing fence, exactly as in the file.
        newline: ``"\\n"``, ``"\\r\\n"`` or ``"\\r"``, taken from the first line.
        bom: whether the file started with a UTF-8 byte-order mark.
        yaml_lines: the front-matter lines between the fences, with their endings (a fresh
            empty list when None).
        has_front_matter: whether the file had fences at all.
        fences: the opening and closing fence lines, each with its own line ending (the
            closing one may have none at the end of the file).
    """

    __slots__ = ("meta", "body", "newline", "bom", "yaml_lines", "has_front_matter", "fences")

    def __init__(self, meta: Any, body: str, newline: str = "\n", bom: bool = False,
                 yaml_lines: list[str] | None = None, has_front_matter: bool = True,
                 fences: tuple[str, str] = (FENCE + "\n", FENCE + "\n")) -> None:
        self.meta = meta
        self.body = body
        self.newline = newline
        self.bom = bom
        self.yaml_lines = [] if yaml_lines is None else yaml_lines
        self.has_front_matter = has_front_matter
        self.fences = fences


_LOADERS: dict[bool, YAML] = {}


def _yaml(round_trip: bool = True) -> YAML:
    """A cached ruamel loader: round-trip (keeps comments and line numbers) or fast (libyaml)."""
    if round_trip not in _LOADERS:
        from ruamel.yaml import YAML

        yaml = YAML(typ="rt") if round_trip else YAML(typ="safe", pure=False)
        yaml.allow_duplicate_keys = False
        _LOADERS[round_trip] = yaml
    return _LOADERS[round_trip]


def _dumper() -> YAML:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.ignore_aliases = lambda *args: True  # equal times must not become &id001 anchors
    yaml.representer.add_representer(
        datetime, lambda r, d: r.represent_scalar("tag:yaml.org,2002:timestamp", _stamp(d)))
    yaml.representer.add_representer(
        type(None), lambda r, d: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    yaml.representer.add_representer(str, _represent_str)
    return yaml


#: Plain scalars that a YAML 1.1 reader (PyYAML, python-frontmatter) would turn into booleans.
YAML11_BOOLEANS = {"y", "yes", "n", "no", "on", "off", "true", "false"}


def _represent_str(representer: RoundTripRepresenter, value: str) -> ScalarNode:
    """Strings as ruamel would write them, but YAML 1.1 booleans (``no``, ``on``) quoted for other readers."""
    if value.lower() in YAML11_BOOLEANS:
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return representer.represent_str(value)


def _stamp(value: datetime) -> str:
    from memcli.timeutil import format_instant

    return format_instant(value)


def parse(data: bytes, path: str, round_trip: bool = True) -> Document:
    """Parse a memory file's bytes.

    Args:
        data: the raw file content (from the working tree or from ``git show``).
        path: the file's path, used only in error messages.
        round_trip: keep what :func:`update` needs (comments, key lines). ``False`` reads
            with ruamel's libyaml-based loader, five times faster, for indexing and
            scanning; the document is then read-only. Any file that loader rejects, or
            that holds a tab, is read again in round-trip mode, so both modes accept
            and refuse the same files with the same messages.

    Raises:
        InvalidMemoryFile: not UTF-8 (a NUL byte counts as not text), an unclosed fence, YAML that does not parse, or
            front-matter that is empty or not a mapping. ``lineno`` is the file's line.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidMemoryFile(path, f"not UTF-8 text (byte {err.start})") from None
    if "\0" in text:  # UTF-16 (a .gitattributes working-tree-encoding rewrites files so) or binary
        raise InvalidMemoryFile(path, f"not UTF-8 text: it holds a NUL byte (byte {data.index(0)}; "
                                      "UTF-16 or a binary file)")
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    lines = _LINE.findall(text)
    newline = next((end for end in ("\r\n", "\r") if lines and lines[0].endswith(end)), "\n")
    if not lines or lines[0].rstrip("\r\n") != FENCE:
        return Document(meta={}, body=text, newline=newline, bom=bom, has_front_matter=False)
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") in (FENCE, "...")), None)
    if close is None:
        raise InvalidMemoryFile(path, "the front-matter fence '---' is never closed", 1)
    yaml_lines = lines[1:close]
    meta = _load_yaml("".join(yaml_lines).replace("\r\n", "\n"), path, len(yaml_lines), round_trip)
    return Document(meta=meta, body="".join(lines[close + 1:]), newline=newline, bom=bom, yaml_lines=yaml_lines,
                    fences=(lines[0], lines[close]))


#: The deepest flow nesting (``[`` and ``{``) read: deeper front-matter is refused before the
#: YAML parser sees it (3,000 levels cost ruamel seconds of recursion before it gives up).
MAX_NESTING = 64
#: The most YAML aliases (``*name``) front-matter may hold: memcli writes none (its dumper
#: ignores aliases), and each one can stand for a whole subtree, so a few dozen nested ones
#: (an "alias bomb", billion laughs) expand to gigabytes in whatever walks the values (issue 22
#: point 9). More is refused before any value is built.
MAX_ALIASES = 16


def _too_deep(source: str) -> int | None:
    """The 1-based YAML line where flow nesting passes ``MAX_NESTING``, or None (a cheap count first)."""
    if source.count("[") + source.count("{") <= MAX_NESTING:
        return None
    depth = 0
    for number, line in enumerate(source.split("\n"), start=1):
        for char in line:
            if char in "[{":
                depth += 1
                if depth > MAX_NESTING:
                    return number
            elif char in "]}" and depth:
                depth -= 1
    return None


def _aliases(source: str) -> tuple[int, int | None]:
    """How many YAML aliases ``source`` holds (counted only past :data:`MAX_ALIASES`) and the
    1-based YAML line of the first one over it. Free when the text has no ``&`` or no ``*``
    (an alias needs an anchor); else one pass of libyaml's scanner (PyYAML's own when
    libyaml is missing), no value built. A text the scanner rejects counts 0: the parser
    then gives its error."""
    if "&" not in source or "*" not in source:
        return 0, None
    import yaml

    count = 0
    try:
        for token in yaml.scan(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(token, yaml.AliasToken):
                count += 1
                if count > MAX_ALIASES:
                    return count, token.start_mark.line + 1
    except yaml.YAMLError:
        return count, None
    return count, None


def _load_yaml(source: str, path: str, count: int, round_trip: bool = True) -> Any:
    deep = _too_deep(source)
    if deep is not None:
        raise FileOverLimit(path, f"the front-matter is nested more than {MAX_NESTING} levels deep", deep + 1)
    aliases, line = _aliases(source)
    if line is not None:
        raise FileOverLimit(path, f"the front-matter holds more than {MAX_ALIASES} YAML aliases (*name); "
                                "memcli writes none, so remove them", line + 1)
    too_deep = f"the front-matter is nested more than {MAX_NESTING} levels deep"
    if not round_trip:
        meta = read_plain(source)  # within every limit: at most PLAIN_READ_MAX characters, two levels
        if meta is not None:
            return meta
        meta = _load_fast(source)
        if meta is not None:
            _bounded(meta, path, too_deep)
            return meta
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        meta = _yaml().load(source)
    except RecursionError:  # block nesting (``- - - …``, deeper indentation) past Python's stack
        raise FileOverLimit(path, too_deep, 2) from None
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        if mark is not None and mark.line >= count:  # at the end of the YAML: name its opening, or its last line
            mark = err.context_mark if err.context_mark is not None and err.context_mark.line < count else None
            lineno = mark.line + 2 if mark is not None else count + 1
        else:
            lineno = mark.line + 2 if mark is not None else None  # +1 for the fence, +1 for 1-based
        reason = (err.problem or err.context or "invalid YAML").strip()
        if "\t" in source and "'\\t'" in reason:
            reason += " (tabs are not allowed for indentation or before a comment in YAML)"
        elif re.search(r"[\[{,]\s*#", source):
            reason += " (a '#' after a space or '[' starts a comment: quote values that begin with '#')"
        raise InvalidMemoryFile(path, f"invalid YAML front-matter: {reason}", lineno) from None
    except YAMLError as err:
        raise InvalidMemoryFile(path, f"invalid YAML front-matter: {str(err).splitlines()[0]}", 2) from None
    except (ValueError, OverflowError, TypeError) as err:  # a timestamp that is no date: 2025-13-45, T24:00
        raise InvalidMemoryFile(path, f"invalid date or time: {err}", _bad_date_line(source)) from None
    if meta is None:
        raise InvalidMemoryFile(path, "the front-matter is empty (remove the fences or add keys)", 1)
    if not isinstance(meta, dict):
        kind = "a list" if isinstance(meta, list) else "a string" if isinstance(meta, str) else "a single value"
        raise InvalidMemoryFile(path, f"the front-matter is {kind}, expected a mapping of keys", 2)
    _bounded(meta, path, too_deep)
    return meta


#: The most values (scalars, lists, mappings; an alias's subtree counted each time it is used)
#: a front-matter may hold: far above any memory (tags and paths are capped at 50 each).
MAX_VALUES = 20_000


def _bounded(meta: Any, path: str, too_deep: str) -> None:
    """Refuse parsed front-matter nested past :data:`MAX_NESTING` (block style, which
    :func:`_too_deep` does not count) or holding more than :data:`MAX_VALUES` values, by one
    walk without recursion that stops at the first limit.

    Raises:
        InvalidMemoryFile: over a limit (line 2: the front-matter's first line).
    """
    todo: list[tuple[Any, int]] = [(meta, 1)]
    seen = 0
    while todo:
        value, depth = todo.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise FileOverLimit(path, f"the front-matter holds more than {MAX_VALUES} values", 2)
        if isinstance(value, dict):
            if depth > MAX_NESTING:
                raise FileOverLimit(path, too_deep, 2)
            todo.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            if depth > MAX_NESTING:
                raise FileOverLimit(path, too_deep, 2)
            todo.extend((v, depth + 1) for v in value)


def _load_fast(source: str) -> dict | None:
    """The read-only path: PyYAML's C loader with memcli's YAML rules (``memcli.yamlfast``),
    about 3x faster than ruamel's; None when it does not vouch for the text (a tab, a
    duplicate key, any error...), which the round-trip reading then explains."""
    known = _WRITTEN.get(source)
    if known is not None:  # written by this process just now (render_new): no YAML to read
        return _as_read(known)
    from memcli import yamlfast

    try:
        meta = yamlfast.load(source)
    except yamlfast.Refused:
        return None
    return meta if isinstance(meta, dict) and meta else None


_DATE_VALUE = compiled(r"^\s*(?:- )?[\w.-]+:\s*['\"]?(\d{4}-\d{1,2}-\d{1,2}[^'\"#\s]*)")


def _bad_date_line(source: str) -> int | None:
    """The file line of the first date-like value that is not a real date or time."""
    from memcli.timeutil import parse_instant

    for number, line in enumerate(source.split("\n"), start=2):
        match = _DATE_VALUE.match(line)
        if match:
            try:
                parse_instant(match.group(1))
            except (ValueError, OverflowError):
                return number
    return None


def line_of(doc: Document, key: str) -> int | None:
    """The 1-based file line of a top-level front-matter key, or None (for error messages)."""
    try:
        return doc.meta.lc.key(key)[0] + 2 + (0 if doc.has_front_matter else -1)
    except (AttributeError, KeyError, TypeError):
        return None


def emit(values: dict[str, Any], newline: str = "\n") -> list[str]:
    """Serialise top-level keys as YAML block lines; lists of scalars in flow style.

    What :func:`_emit_plain` can write exactly as ruamel would (the usual record of a new
    memory: plain words, numbers, times, mappings of them, lists of them) is written without
    loading ruamel (its import and dumper cost a write about 20 ms); everything else by
    ruamel's dumper. ``tests/test_frontmatter.py`` holds the two outputs equal.

    Args:
        values: keys and values (str, int, bool, None, datetime, list, dict).
        newline: the line ending of every emitted line.
    """
    plain = _emit_plain(values)
    if plain is not None:
        return [line + newline for line in plain]
    return _emit_ruamel(values, newline)


#: A string :func:`_emit_plain` writes as it is: ASCII words, digits and ``_ . / : @ + -`` with
#: single spaces, starting with a letter, digit or ``_``; what ruamel writes unquoted (a subset:
#: anything else goes to ruamel, which quotes where YAML needs it).
_PLAIN = compiled(r"[A-Za-z0-9_](?:[A-Za-z0-9_./:@+-]| (?=[A-Za-z0-9_./@+-]))*")
#: Plain strings a YAML reader would take for something else, so ruamel quotes them: the implicit
#: types of ruamel's resolver (``ruamel.yaml.resolver.implicit_resolvers``, YAML 1.2 and 1.1
#: alike: booleans, floats, ints, null, timestamps, ``<<``, ``=``), the YAML 1.1 booleans in any
#: case (``_represent_str``) and ``null`` in any case.
_NOT_TEXT = r"""(?x)
    (?i:y|yes|n|no|on|off|true|false|null|~)?
  | [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
  | [-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
  | [-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
  | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
  | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
  | [-+]?0b[0-1_]+ | [-+]?0o?[0-7_]+ | [-+]?[0-9_]+ | [-+]?0x[0-9a-fA-F_]+
  | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
  | [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
  | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
    (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
  | << | =
"""
#: Characters a plain scalar may not hold inside a flow list (``[a, b]``) in ruamel's output.
_FLOW_UNSAFE = frozenset(":,[]{}#")
#: The longest string written plain (ruamel folds lines past its width).
_PLAIN_MAX = 200


_COMPILED: list[re.Pattern[str]] = []


def _not_text() -> re.Pattern[str]:
    """:data:`_NOT_TEXT`, compiled on first use (only writes need it; ``text.recache`` keeps it)."""
    if not _COMPILED:
        from memcli.text.recache import compiled

        _COMPILED.append(compiled(_NOT_TEXT))
    return _COMPILED[0]


def _plain_scalar(value: Any, flow: bool) -> str | None:
    """``value`` as ruamel's dumper (``_dumper``) writes it, when that is certain; else None."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is datetime:
        return _stamp(value) if value.tzinfo is not None else None
    if kind is str:
        if (len(value) > _PLAIN_MAX or _PLAIN.fullmatch(value) is None or _not_text().fullmatch(value) is not None
                or value.endswith(":") or ": " in value or (flow and not _FLOW_UNSAFE.isdisjoint(value))):
            return None
        return value
    return None


def _emit_plain(values: dict[str, Any], indent: str = "") -> list[str] | None:
    """:func:`emit`'s lines (without endings) written here, or None when any key or value
    is outside what this writes exactly as ruamel does (see :data:`_PLAIN`)."""
    lines: list[str] = []
    for key, value in values.items():
        if type(key) is not str or _PLAIN.fullmatch(key) is None or _not_text().fullmatch(key) is not None \
                or ":" in key:
            return None
        kind = type(value)
        if kind is dict:
            if not value:
                lines.append(f"{indent}{key}: {{}}")
                continue
            inner = _emit_plain(value, indent + "  ")
            if inner is None:
                return None
            lines.append(f"{indent}{key}:")
            lines.extend(inner)
        elif kind is list:
            items = [_plain_scalar(item, flow=True) if type(item) is not bool and item is not None else None
                     for item in value]
            if any(item is None for item in items):
                return None
            lines.append(f"{indent}{key}: [{', '.join(items)}]")  # type: ignore[arg-type]
        else:
            scalar = _plain_scalar(value, flow=False)
            if scalar is None:
                return None
            lines.append(f"{indent}{key}: {scalar}")
    return lines


#: The longest front-matter :func:`read_plain` reads (a memory's is under 1 KB): so few
#: characters cannot pass :data:`MAX_VALUES` or :data:`MAX_NESTING`, and the parsers check them.
PLAIN_READ_MAX = 4096
_PLAIN_INT = compiled(r"0|-?[1-9][0-9]*")
_PLAIN_STAMP = compiled(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")
#: A glob such as ``src/hooks/*.ts`` or ``tests/**``, which ruamel writes plain: YAML 1.2 reads a
#: plain scalar that does not start with an indicator (``*`` starts an alias) and holds no
#: ``: ``, `` #`` or flow indicator as a string, and one holding ``*`` is no other type.
_PLAIN_GLOB = compiled(r"[A-Za-z0-9_./][A-Za-z0-9_./-]*\*[A-Za-z0-9_./*-]*")
#: A single-quoted string (``'**/*.py'``, ``'*.md'``, ``'yes'``), printable ASCII without
#: ``'`` (so nothing to unescape: YAML 1.2 section 7.3.2), ``\``, or a flow indicator (``,[]{}``).
_QUOTED = compiled(r"'[ -&(-+\--Z^-z|~]+'")
#: Keys :func:`read_plain` has found written plain, and ``(token, in a list) -> value`` of the
#: tokens it has read (values that never change: str, int, bool, None, datetime); bounded.
_PLAIN_KEYS: set[str] = set()
_PLAIN_TOKENS: dict[tuple[str, bool], Any] = {}
_PLAIN_SEEN_MAX = 4096


def _read_scalar(token: str, flow: bool) -> Any:
    """The value of one token of plain front-matter (``flow``: an item of a ``[...]`` list), or
    :data:`_NOT_PLAIN` when the plain writer would not write that value as exactly ``token``
    (:func:`_plain_scalar`) and it is no glob (:data:`_PLAIN_GLOB`) or simple single-quoted
    string (:data:`_QUOTED`) either."""
    seen = (token, flow)
    value = _PLAIN_TOKENS.get(seen, _NOT_PLAIN)
    if value is not _NOT_PLAIN:
        return value
    if token == "null" or token == "true" or token == "false":
        if flow:
            return _NOT_PLAIN
        value = None if token == "null" else token == "true"
    elif _PLAIN_INT.fullmatch(token):
        value = int(token)  # str() of it is the token: no sign, zero or leading zero
    elif stamp := _PLAIN_STAMP.fullmatch(token):  # _stamp of it is the token: every field zero-padded, UTC
        from datetime import timezone

        try:
            y, mo, d, h, mi, sec = map(int, stamp.groups())
            value = datetime(y, mo, d, h, mi, sec, tzinfo=timezone.utc)
        except ValueError:
            return _NOT_PLAIN
    elif _plain_scalar(token, flow) == token:
        value = token
    elif _PLAIN_GLOB.fullmatch(token):
        value = token
    elif _QUOTED.fullmatch(token):
        value = token[1:-1]
    else:
        return _NOT_PLAIN
    if len(_PLAIN_TOKENS) >= _PLAIN_SEEN_MAX:
        _PLAIN_TOKENS.clear()
    _PLAIN_TOKENS[seen] = value
    return value


_NOT_PLAIN = object()


def read_plain(source: str) -> dict[str, Any] | None:
    """Front-matter that :func:`_emit_plain` writes, read without a YAML parser; None for
    any other text (the YAML readers then read it).

    The text is taken only when the plain writer, given the values read, writes exactly
    ``source`` again (checked line by line and token by token with the writer's own rules,
    :func:`_plain_scalar`): then a YAML reader gives the same values, as
    ``tests/test_frontmatter.py`` holds for everything the plain writer writes
    (``_WRITTEN``, ``render_new``). Besides, a string token may be a glob ruamel writes plain
    (:data:`_PLAIN_GLOB`) or a single-quoted string without anything to unescape
    (:data:`_QUOTED`), as ruamel writes ``paths``; ``tests/test_yamlfast.py`` holds every text
    read here equal to ruamel's reading. Two levels at most (``provenance:``, ``anchor:``); at
    most :data:`PLAIN_READ_MAX` characters. A 10,000-memory build reads most files so, at about
    a fifth of the cost of libyaml's events built into Python objects (issue 21).

    Args:
        source: the YAML text between the fences, ``\\n`` line endings.
    """
    if len(source) > PLAIN_READ_MAX or not source.endswith("\n"):
        return None
    top: dict[str, Any] = {}
    inner: dict[str, Any] | None = None
    for line in source[:-1].split("\n"):
        if line[:2] == "  ":
            if inner is None or line[2:3] == " ":
                return None
            target, line = inner, line[2:]
        else:
            if inner is not None and not inner:
                return None  # "key:" with nothing under it is null in YAML, "{}" in the writer
            target, inner = top, None
        key, sep, token = line.partition(": ")
        if not sep:
            if target is not top or line[-1:] != ":":
                return None
            key, token = line[:-1], ""
        if key in target or (key not in _PLAIN_KEYS and not _plain_key(key)):
            return None
        if not sep:
            inner = target[key] = {}
        elif token == "{}":
            target[key] = {}
        elif token[:1] == "[":
            if token[-1:] != "]":
                return None
            items = [_read_scalar(item, True) for item in token[1:-1].split(", ")] if token != "[]" else []
            if _NOT_PLAIN in items:
                return None
            target[key] = items
        else:
            value = _read_scalar(token, False)
            if value is _NOT_PLAIN:
                return None
            target[key] = value
    if not top or (inner is not None and not inner):
        return None
    return top


def _plain_key(key: str) -> bool:
    """Whether :func:`_emit_plain` writes ``key`` as it is (remembered in :data:`_PLAIN_KEYS`)."""
    if _PLAIN.fullmatch(key) is None or _not_text().fullmatch(key) is not None or ":" in key:
        return False
    if len(_PLAIN_KEYS) >= _PLAIN_SEEN_MAX:
        _PLAIN_KEYS.clear()
    _PLAIN_KEYS.add(key)
    return True


def _emit_ruamel(values: dict[str, Any], newline: str) -> list[str]:
    """:func:`emit` by ruamel's dumper (any value it can represent)."""
    from ruamel.yaml.comments import CommentedSeq

    def prepare(value: Any) -> Any:
        if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
            seq = CommentedSeq(value)
            seq.fa.set_flow_style()
            return seq
        if isinstance(value, dict):
            return {k: prepare(v) for k, v in value.items()}
        return value

    buffer = io.StringIO()
    _dumper().dump({k: prepare(v) for k, v in values.items()}, buffer)
    return [line + newline for line in buffer.getvalue().split("\n") if line]


def render_new(meta: dict[str, Any], body: str) -> bytes:
    """The bytes of a new memory file: fences, ``meta`` in order, the body and a final newline.

    Front-matter the plain writer wrote (:func:`_emit_plain`) is kept with the values it reads
    back as (:data:`_WRITTEN`), so indexing the file just written parses no YAML."""
    text = body if body.endswith("\n") else body + "\n"
    plain = _emit_plain(meta)
    if plain is None:
        return ("".join([FENCE + "\n", *emit(meta), FENCE + "\n"]) + text).encode("utf-8")
    source = "".join(line + "\n" for line in plain)
    if len(_WRITTEN) >= _WRITTEN_MAX:
        _WRITTEN.clear()
    _WRITTEN[source] = _as_read(meta)
    return (FENCE + "\n" + source + FENCE + "\n" + text).encode("utf-8")


#: Front-matter texts this process wrote with the plain writer -> the values a YAML reader gives
#: for them (:func:`_as_read`); :func:`_load_fast` answers from it. Process-local, a few entries.
_WRITTEN: dict[str, dict[str, Any]] = {}
_WRITTEN_MAX = 64


def _as_read(value: Any) -> Any:
    """A fresh copy of ``value`` (what the plain writer accepts) as reading its YAML gives it:
    times in UTC to the second (``Z`` stamps), mappings and lists copied."""
    if type(value) is dict:
        return {k: _as_read(v) for k, v in value.items()}
    if type(value) is list:
        return [_as_read(v) for v in value]
    if type(value) is datetime:
        from datetime import timezone

        from memcli.timeutil import to_utc

        return to_utc(value).replace(microsecond=0, tzinfo=timezone.utc)
    return value


def update(doc: Document, changes: dict[str, Any]) -> bytes:
    """Rewrite a parsed file with some top-level keys changed; all else kept byte for byte.

    Args:
        doc: the result of :func:`parse` on the current bytes.
        changes: key -> new value; the value ``None`` removes the key. Keys already
            present are replaced in place (their whole block of lines; a one-line value keeps
            its end-of-line comment); new keys are appended before the closing fence in
            the order given. A flow-style mapping (``{id: x, status: y}``) has no line
            per key, so it is rewritten whole, in block style.

    Returns:
        The new file bytes, with the original BOM and line endings.
    """
    nl = doc.newline
    lines = list(doc.yaml_lines)
    keys = list(doc.meta.keys()) if doc.has_front_matter else []
    if keys and changes and doc.meta.fa.flow_style():  # {id: x, status: y}: keys share lines; write block style
        lines = emit({k: v for k, v in {**doc.meta, **changes}.items() if v is not None}, nl)
        keys, changes = [], {}
    starts = {k: doc.meta.lc.key(k)[0] for k in keys} if keys else {}
    edits: list[tuple[int, int, list[str]]] = []
    appended: list[str] = []
    for key, value in changes.items():
        new_lines = [] if value is None else emit({key: value}, nl)
        if key in starts:
            start = starts[key]
            later = [starts[k] for k in keys if starts[k] > start]
            end = min(later) if later else len(lines)
            while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
                end -= 1
            if end == start + 1 and len(new_lines) == 1:
                new_lines = [_keep_comment(doc, key, lines[start], new_lines[0])]
            edits.append((start, end, new_lines))
        else:
            appended.extend(new_lines)
    for start, end, new_lines in sorted(edits, reverse=True):
        lines[start:end] = new_lines
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += nl
    lines.extend(appended)
    if doc.has_front_matter:
        head = [doc.fences[0], *lines, doc.fences[1]]
    else:
        head = [FENCE + nl, *lines, FENCE + nl] if lines else []
    text = "".join(head) + doc.body
    return ((BOM if doc.bom else "") + text).encode("utf-8")


def _keep_comment(doc: Document, key: str, old: str, new: str) -> str:
    """``new`` (one line for ``key``) with the end-of-line comment of ``old``, the line it replaces."""
    try:
        token = doc.meta.ca.items[key][2]
        column = token.column if token.start_mark.line == doc.meta.lc.key(key)[0] else None
    except (AttributeError, KeyError, IndexError, TypeError):
        return new
    if column is None or not old[column:column + 1] == "#":
        return new
    while column > 0 and old[column - 1] in " \t":
        column -= 1
    return new.rstrip("\r\n") + old[column:]
