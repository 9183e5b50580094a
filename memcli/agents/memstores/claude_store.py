"""Claude Code's auto memory (``~/.claude/projects/<slug>/memory/``). Pure but for reading files.

From the pinned CLI's own system prompt (Claude Code 2.1.332, "How to save memories"):
saving a memory is writing one topic file (``user_role.md``, ``feedback_testing.md``) with
front-matter ``name`` (a kebab-case slug), ``description`` (one line) and ``type`` (one of
``user``, ``feedback``, ``project``, ``reference``; 2.1.3xx writes it as ``metadata: {type:}``,
earlier versions at the top level), then adding one pointer line to ``MEMORY.md``:
``- [Title](file.md) — one-line hook``. ``MEMORY.md`` "is an index, not a memory": its
lines are never imported. The folder is ``~/.claude/projects/<slug>/memory`` where the slug
is the project's path with every character outside ``[a-zA-Z0-9]`` replaced by ``-`` (cut at
200 characters plus a hash for longer paths: :func:`project_slug`), or the
``autoMemoryDirectory`` setting.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from memcli.agents.memstores import MARK, Entry, Reading, Store, read_text, why_unread, without_export
from memcli.errors import InvalidMemoryFile

INDEX = "MEMORY.md"
#: The store's own types -> memcli's category, and the tag each memory gets.
TYPES = {"user": ("fact", "about-user"), "feedback": ("feedback", "feedback"), "project": ("fact", "project"),
         "reference": ("fact", "reference")}
#: Longest slug Claude Code writes before it adds a hash (its ``jae``/``u`` constant).
SLUG_MAX = 200
_POINTER = re.compile(r"^\s*[-*]\s*\[[^\]]*\]\(([^)\s]+)\)")


def project_slug(project: Path) -> str:
    """The folder name Claude Code gives a project under ``~/.claude/projects``: every
    character outside ``[a-zA-Z0-9]`` becomes ``-``. A slug over 200 characters is cut and
    gets a hash suffix that memcli does not compute (:func:`store_for` finds it by prefix)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", str(project))


def store_for(claude_dir: Path, project: Path) -> Path:
    """The auto-memory folder of ``project`` (it may not exist); ``claude_dir`` is
    ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    base = claude_dir / "projects"
    name = project_slug(project)
    if len(name) > SLUG_MAX and base.is_dir():
        for folder in sorted(base.glob(name[:SLUG_MAX] + "-*")):
            return folder / "memory"
    return base / name / "memory"


def find(folder: Path, project: Path) -> tuple[list[Store], list[Path]]:
    """The auto-memory folder of ``folder`` (else of its git top level ``project``), if it
    exists, and the places looked at. The base is ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    looked = list(dict.fromkeys((store_for(base, folder), store_for(base, project))))
    for place in looked:
        if place.is_dir():
            return [Store("claude-memory", place)], looked
    return [], looked


def _is_store(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    if folder.name == "memory" and folder.parent.parent.name == "projects" and \
            (folder.parent.parent.parent / "projects").is_dir() and not (folder / "memory_summary.md").exists():
        return True
    index = folder / INDEX
    if not index.is_file():
        return False
    return any(_front_matter(p) for p in sorted(folder.glob("*.md"))[:50] if p.name != INDEX)


def recognise(path: Path) -> Store | None:
    """The store ``path`` is (the folder, or a file in it), or None."""
    if path.is_dir():
        return Store("claude-memory", path) if _is_store(path) else None
    if path.suffix == ".md" and _is_store(path.parent) and (path.name == INDEX or _front_matter(path)):
        return Store("claude-memory", path.parent, path)
    return None


def _front_matter(path: Path) -> dict[str, str] | None:
    """The front-matter of a topic file, read leniently (``key: value`` lines; ``metadata:``
    children too), or None when the file has none."""
    try:
        text = read_text(path)
    except OSError:
        return None
    return split(text)[0]


def split(text: str) -> tuple[dict[str, str] | None, str, int]:
    """``(front-matter fields, body, the body's first line)`` of a topic file's text; the
    fields None when it has no front-matter. Nested ``metadata:`` keys count as top-level
    ones. Never raises."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, text, 1
    end = next((n for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), None)
    if end is None:
        return None, text, 1
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        match = re.match(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$", line)
        if match:
            value = match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            fields.setdefault(match.group(1).lower(), value)
    return fields, "\n".join(lines[end + 1:]), end + 2


#: Claude Code's second try at front-matter YAML that does not parse (its ``_u`` and ``DDr``,
#: 2.1.332): an unquoted top-level ``key: value`` whose value holds one of these characters
#: (or ``": "``) is quoted, a flow list that parses (``[a, b]``) kept, indenting tabs made spaces.
_LOSSY = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
_PAIR = re.compile(r"^([a-zA-Z_-]+):\s+(\S.*)$")


def _quoted_as_claude(block: str) -> str:
    """``block`` (front-matter YAML) with the values quoted as Claude Code quotes them before
    its second parse (:data:`_LOSSY`)."""
    import yaml

    out = []
    for line in block.split("\n"):
        match = _PAIR.match(line)
        value = match.group(2) if match else ""
        if match and not (value[0] in "'\"" and value[-1] == value[0]):
            listed = False
            if value.startswith("[") and value.endswith("]"):
                try:
                    listed = isinstance(yaml.safe_load(value), list)
                except yaml.YAMLError:
                    listed = False
            if not listed and _LOSSY.search(value):
                line = f'{match.group(1)}: "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(line)
    return re.sub(r"^\t+", lambda tabs: "  " * len(tabs.group(0)), "\n".join(out), flags=re.MULTILINE)


def fields(text: str, name: str) -> tuple[dict[str, Any] | None, InvalidMemoryFile | None]:
    """The front-matter of a topic file's ``text`` as YAML, as Claude Code reads it, and what
    is wrong with it: ``(mapping, None)`` when it parses; ``(mapping, error)`` when only Claude
    Code's second try (:func:`_quoted_as_claude`) parses it; ``(None, error)`` when neither
    does. ``error`` is ``memcli.fileformat``'s, the
    words and line ``doctor`` gives for a memory file (``name`` is the file named in it).
    A text without front-matter is ``({}, None)``."""
    from memcli.fileformat import parse

    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, None
    end = next((n for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), None)
    if end is None:
        return {}, None
    block = "\n".join(line.rstrip("\r") for line in lines[1:end])
    try:
        return dict(parse(f"---\n{block}\n---\n".encode(), name, round_trip=False).meta), None
    except InvalidMemoryFile as err:
        first = err
    try:
        return dict(parse(f"---\n{_quoted_as_claude(block)}\n---\n".encode(), name, round_trip=False).meta), first
    except InvalidMemoryFile:
        return None, first


def _field(meta: dict[str, Any], key: str) -> object:
    """A front-matter value, at the top level or under ``metadata:`` (Claude Code 2.1.3xx)."""
    if key in meta:
        return meta[key]
    nested = meta.get("metadata")
    return nested.get(key) if isinstance(nested, dict) else None


def _kind(meta: dict[str, Any] | None, problem: InvalidMemoryFile | None) -> tuple[str, str | None]:
    """The topic file's type (a key of :data:`TYPES`, or '') and, when it is wrong, why (one line)."""
    broken = ""
    if problem is not None:
        broken = f"line {problem.lineno}: {problem.reason}" if problem.lineno else problem.reason
    if meta is None:
        return "", f"{broken}; none of its fields is read, so its type is unknown: imported as a fact"
    value = _field(meta, "type")
    if value is None:
        return "", None
    kind = value.strip().lower() if isinstance(value, str) else ""
    if kind in TYPES:
        return kind, None
    said = f"type {value!r} is none of Claude Code's types ({', '.join(TYPES)}): imported as a fact"
    if broken:
        said += f" ({broken}; Claude Code reads it with the value quoted)"
    return "", said


def read(store: Store, project: Path | None = None) -> Reading:
    """Every topic file of the folder as one entry (the index's lines are not memories)."""
    root = store.root
    entries: list[Entry] = []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    unknown: list[tuple[str, str]] = []
    invalid: list[tuple[str, str]] = []
    pointed: set[str] = set()
    index = root / INDEX
    if index.is_file():
        files.append(index)
        try:
            text, _ = without_export(read_text(index))
            lines = text.split("\n")
        except OSError as err:
            invalid.append((INDEX, f"not read: {why_unread(err)}"))
            lines = []
        pointed = {m.group(1) for m in map(_POINTER.match, lines) if m}
        count = sum(1 for line in lines if _POINTER.match(line))
        if count:
            skipped.append((INDEX, f"the index: {count} lines pointing at topic files, not memories of their own"))
        other = [n for n, line in enumerate(lines, 1)
                 if line.strip() and not _POINTER.match(line) and not line.lstrip().startswith("#")]
        if other:  # Claude Code's prompt: "one line per memory … never put memory content there"
            unknown.append((INDEX, f"{len(other)} lines that are not pointers `- [Title](file.md) — hook` (from line "
                                   f"{other[0]}): the index holds no memories of its own"))
        gone = sorted(name for name in pointed if "/" not in name and not (root / name).is_file())
        if gone:
            skipped.append((INDEX, f"points at {', '.join(gone[:3])}{' …' if len(gone) > 3 else ''}, not there"))
    if store.file is None:
        odd = sorted(p.name for p in root.iterdir() if not p.name.startswith(".") and not
                     (p.is_file() and p.suffix == ".md")) if root.is_dir() else []
        if odd:
            unknown.append((odd[0], f"{len(odd)} entries that are not Markdown topic files ({', '.join(odd[:3])}"
                                    f"{' …' if len(odd) > 3 else ''}): memcli reads one `.md` file per memory"))
    wanted = [store.file] if store.file is not None and store.file.name != INDEX else \
        sorted(p for p in root.glob("*.md") if p.name != INDEX and p.is_file())
    for path in wanted:
        files.append(path)
        try:
            text = read_text(path)
        except OSError as err:
            invalid.append((path.name, f"not imported: {why_unread(err)}"))
            continue
        if any(MARK in line for line in text.split("\n")[:12]):
            skipped.append((path.name, "written by memcli's export: not read back"))
            continue
        _, body, first = split(text)
        body_text = body.strip()
        if not body_text:
            skipped.append((path.name, "no text"))
            continue
        first += body[:len(body) - len(body.lstrip())].count("\n")  # the text's first line, past blank ones
        meta, problem = fields(text, path.name)
        kind, wrong = _kind(meta, problem)
        if wrong:
            skipped.append((path.name, wrong))
        category, tag = TYPES.get(kind, ("fact", ""))
        named = _field(meta or {}, "name")
        name = named.strip() if isinstance(named, str) and named.strip() else path.stem
        words = body_text  # the description is the index's hook: the body says it in full
        tags = tuple(t for t in ("claude-code", tag) if t)
        if pointed and path.name not in pointed:
            skipped.append((path.name, f"not in {INDEX}'s index (read anyway: {name})"))
        entries.append(Entry(path, path.name, words, first, category, tags, stable=True))
    return Reading("claude-memory", root, entries, files, skipped, tuple(unknown), tuple(invalid))


#: memcli's category (or a tag) -> the auto-memory type an exported memory gets.
EXPORT_TYPES = {"feedback": "feedback", "preference": "feedback", "procedure": "feedback"}
#: The prefix of the topic files memcli exports (``memcli_<id>.md``).
EXPORT_PREFIX = "memcli_"


def render_topic(memory_id: str, scope: str, category: str, tags: list[str], text: str) -> str:
    """One exported memory as a topic file in the CLI's own format, marked as memcli's."""
    kind = "user" if "about-user" in tags else "reference" if "reference" in tags else \
        EXPORT_TYPES.get(category, "project")
    first = " ".join(text.split())
    description = (first[:147] + "...") if len(first) > 150 else first
    quoted = '"' + description.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return (f"---\nname: memcli-{memory_id}\ndescription: {quoted}\nmetadata:\n  type: {kind}\n---\n"
            f"<!-- {MARK} from memory {memory_id} ({scope}); change it with memcli: `memcli export --format "
            f"claude-memory` rewrites this file -->\n\n{text.strip()}\n")


def render_index(held: str, lines: list[str]) -> str:
    """``MEMORY.md`` with memcli's section (``lines``, pointer lines) in place of the one it held
    (or after the rest); the lines outside it are kept as they were."""
    from memcli.agents.memstores import MARK_BEGIN, MARK_END, without_export

    rest, _ = without_export(held)
    kept = [line for line, orig in zip(rest.split("\n"), held.split("\n")) if line == orig or line]
    body = "\n".join(kept).rstrip("\n")
    section = "\n".join([MARK_BEGIN, *lines, MARK_END]) if lines else ""
    joined = "\n\n".join(part for part in (body, section) if part)
    return joined + "\n" if joined else ""
