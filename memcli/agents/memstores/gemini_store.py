"""Gemini CLI's memories. Pure but for reading files.

From the pinned CLI (Gemini CLI 0.61.0, its bundle's system prompt and ``Storage``): there
is no ``save_memory`` tool any more; the model edits Markdown files itself, in tiers:

* the global personal memory ``~/.gemini/GEMINI.md`` (``$GEMINI_CLI_HOME``): its bullets.
  Earlier versions' ``save_memory`` appended ``- fact`` lines under ``## Gemini Added
  Memories``; those are bullets too.
* the private project memory ``~/.gemini/tmp/<project>/memory/``: ``MEMORY.md`` (an index:
  brief facts as bullets, and ``- See <path>/<topic>.md for …`` pointers, which are not
  memories) and its sibling topic files (one entry each). ``<project>`` is the short id of
  ``~/.gemini/projects.json`` (``{"projects": {"/abs/path": "id"}}``).
* the Auto Memory inbox ``memory/.inbox/{private,global}/extraction.patch``: unified diffs
  the extraction agent proposes and the person approves with ``/memory inbox``; each added
  line of a hunk (``+- fact``) is an entry held for review (``Entry.hold``).

A project's own ``GEMINI.md`` is a rule file (``memcli import GEMINI.md``), not this store.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from memcli.agents.memstores import (
    MARK,
    Entry,
    Reading,
    Store,
    bullets,
    prose,
    read_text,
    slug,
    why_unread,
    without_export,
)

INDEX = "MEMORY.md"
GLOBAL = "GEMINI.md"
INBOX = ".inbox"
PATCH = "extraction.patch"
#: The inbox's kinds (``.inbox/<kind>/``): ``private`` targets the project memory folder,
#: ``global`` ~/.gemini/GEMINI.md.
KINDS = ("private", "global")
#: Where Auto Memory keeps the skills it extracted (``memory/skills/<name>/SKILL.md``): procedures, not read.
SKILLS = "skills"
LEGACY_SECTION = "Gemini Added Memories"
#: A pointer line of MEMORY.md: ``See <path>.md for …`` or a link to a sibling note ``[Title](note.md): …``.
_SEE = re.compile(r"^(?:See\s+\S+\.md\b|\[[^\]]*\]\([^)\s]+\.md\))", re.IGNORECASE)


def home() -> Path:
    """Gemini CLI's folder: ``$GEMINI_CLI_HOME/.gemini`` (the CLI's own ``homedir()``), else ``~/.gemini``."""
    return Path(os.environ.get("GEMINI_CLI_HOME") or Path.home()).expanduser() / ".gemini"


def project_memory(gemini_home: Path, project: Path) -> Path | None:
    """The private memory folder of ``project`` (``tmp/<id>/memory``), from ``projects.json``;
    None when Gemini CLI has not registered the project."""
    try:
        data = json.loads((gemini_home / "projects.json").read_text(encoding="utf-8"))
        ident = data["projects"][str(project)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return gemini_home / "tmp" / str(ident) / "memory" if isinstance(ident, str) and ident else None


def find(folder: Path, project: Path) -> tuple[list[Store], list[Path]]:
    """``~/.gemini/GEMINI.md``, the project's private memory and its inbox, those that exist,
    and the places looked at."""
    base = home()
    found: list[Store] = []
    looked = [base / GLOBAL]
    if (base / GLOBAL).is_file():
        found.append(Store("gemini-global", base, base / GLOBAL))
    for root in dict.fromkeys((folder, project)):
        memory = project_memory(base, root)
        looked.append(memory if memory is not None else base / "projects.json")
        if memory is not None and memory.is_dir():
            found.append(Store("gemini-project", memory))
            if (memory / INBOX).is_dir():
                found.append(Store("gemini-inbox", memory))
            break
    return found, list(dict.fromkeys(looked))


def _is_home(folder: Path) -> bool:
    """Whether ``folder`` is a Gemini CLI home (``~/.gemini``), not a project's ``.gemini`` settings folder."""
    return folder.name == ".gemini" and (folder == home() or folder.parent == Path.home()
                                         or (folder / "projects.json").is_file()
                                         or (folder / "tmp").is_dir())


def _inbox_of(path: Path) -> Path | None:
    """The ``.inbox`` folder a patch file (or an inbox folder) lies in, or None."""
    for folder in (path, *path.parents):
        if folder.name == INBOX:
            return folder
    return None


def recognise(path: Path) -> Store | None:
    """The store ``path`` is, or None."""
    if path.is_file() and path.name == GLOBAL and _is_home(path.parent):
        return Store("gemini-global", path.parent, path)
    if path.is_dir() and _is_home(path) and (path / GLOBAL).is_file():
        return Store("gemini-global", path, path / GLOBAL)
    inbox = _inbox_of(path)
    if inbox is not None:
        if path.is_dir():
            return Store("gemini-inbox", inbox.parent, None if path == inbox else path)
        return Store("gemini-inbox", inbox.parent, path) if path.suffix == ".patch" else None
    folder = path if path.is_dir() else path.parent
    if folder.name == "memory" and folder.parent.parent.name == "tmp" and folder.parent.parent.parent.name == ".gemini":
        return Store("gemini-project", folder, None if path.is_dir() else path)
    return None


def patches(root: Path, within: Path | None = None) -> list[Path]:
    """The inbox's patch files, as Gemini CLI 0.61 lists them (``listInboxPatchFiles``: every
    ``*.patch`` under ``.inbox/private`` and ``.inbox/global``, at any depth, sorted)."""
    if within is not None and within.is_file():
        return [within]
    folders = [within] if within is not None else [root / INBOX / kind for kind in KINDS]
    return sorted(p for folder in folders for p in folder.rglob("*.patch") if p.is_file())


def read(store: Store, project: Path | None = None) -> Reading:
    """The entries of one Gemini store (see the module docstring)."""
    entries: list[Entry] = []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    unknown: list[tuple[str, str]] = []
    invalid: list[tuple[str, str]] = []
    if store.kind == "gemini-inbox":
        for patch in patches(store.root, store.file):
            files.append(patch)
            entries.extend(_patch(patch, store.root, skipped, unknown, invalid))
        return Reading(store.kind, store.root, entries, files, skipped, tuple(unknown), tuple(invalid))
    if store.kind == "gemini-global":
        path = store.file or store.root / GLOBAL
        files.append(path)
        entries.extend(_bullets(path, skipped, unknown, invalid, "global"))
        return Reading(store.kind, store.root, entries, files, skipped, tuple(unknown), tuple(invalid))
    root = store.root
    index = root / INDEX
    wanted = [store.file] if store.file else ([index] if index.is_file() else []) + sorted(
        p for p in root.glob("*.md") if p.name != INDEX and p.is_file())
    for path in wanted:
        files.append(path)
        if path.name == INDEX:
            entries.extend(_bullets(path, skipped, unknown, invalid, "project"))
        else:
            entries.extend(_topic(path, skipped, invalid))
    if not store.file:
        held = patches(root) if (root / INBOX).is_dir() else []
        if held:
            skipped.append((INBOX, f"{len(held)} inbox patches: Gemini CLI's Auto Memory inbox, read as a store of "
                                   "its own (`--agent gemini` reads it too), every entry held for review"))
        if (root / SKILLS).is_dir():
            skipped.append((SKILLS, "skills Auto Memory extracted (procedures, SKILL.md): not memories"))
    return Reading(store.kind, root, entries, files, skipped, tuple(unknown), tuple(invalid))


def _bullets(path: Path, skipped: list[tuple[str, str]], unknown: list[tuple[str, str]],
             invalid: list[tuple[str, str]], tier: str) -> list[Entry]:
    try:
        text, exported = without_export(read_text(path))
    except OSError as err:
        invalid.append((path.name, f"not imported: {why_unread(err)}"))
        return []
    if exported:
        skipped.append((path.name, "memcli's exported section: not read back"))
    out = []
    pointers = 0
    for line, heading, item in bullets(text):
        if _SEE.match(item):
            pointers += 1
            continue
        tags = tuple(t for t in ("gemini-cli", tier, slug(heading) if heading and heading != LEGACY_SECTION else "")
                     if t)
        out.append(Entry(path, f"{slug(heading) or 'top'}", item, line, "fact", tags))
    if pointers:
        skipped.append((path.name, f"{pointers} pointer lines to topic files: not memories of their own"))
    other = prose(text)
    if other:  # beside bullets, prose is the person's own text; with none, a layout memcli does not read
        why = f"{len(other)} lines that are not bullets (from line {other[0]}): memcli reads a bullet as a memory"
        (unknown if not out and not pointers else skipped).append((path.name, why))
    return out


def _topic(path: Path, skipped: list[tuple[str, str]], invalid: list[tuple[str, str]]) -> list[Entry]:
    try:
        text = read_text(path)
    except OSError as err:
        invalid.append((path.name, f"not imported: {why_unread(err)}"))
        return []
    if any(MARK in line for line in text.split("\n")[:12]):
        skipped.append((path.name, "written by memcli's export: not read back"))
        return []
    body = text.strip()
    if not body:
        skipped.append((path.name, "no text"))
        return []
    return [Entry(path, path.name, body, 1, "fact", ("gemini-cli", "project", slug(path.stem)), stable=True)]


class _Hunk(NamedTuple):
    """One file's part of a unified diff: its target (``+++``), whether it creates the file
    (``--- /dev/null``), and its changed lines ``(line in the patch, '+' or '-', text)``."""

    target: str
    new_file: bool
    lines: list[tuple[int, str, str]]


_RANGE = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _hunks(text: str) -> tuple[list[_Hunk], int]:
    """The file parts of a unified diff (the shape Gemini CLI's extraction prompt asks for:
    ``--- old`` / ``+++ new`` headers with absolute paths, ``@@ -a,b +c,d @@`` hunks whose
    counts say how many lines follow), and how many hunks it has. Context lines are left out."""
    parts: list[_Hunk] = []
    old = ""
    hunks = 0
    left = [0, 0]  # old and new lines the current hunk still has
    for number, line in enumerate(text.split("\n"), 1):
        if left[0] > 0 or left[1] > 0:
            sign = line[:1]
            if sign == "-":
                left[0] -= 1
            elif sign == "+":
                left[1] -= 1
            elif sign in (" ", ""):
                left[0], left[1] = left[0] - 1, left[1] - 1
            elif sign == "\\":  # "\ No newline at end of file"
                continue
            else:
                left = [0, 0]  # a short hunk: read the line as a header below
            if sign in "+-" and sign and parts:
                parts[-1].lines.append((number, sign, line[1:]))
            if sign != "" and sign in "+- ":
                continue
        if line.startswith("--- "):
            old = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ "):
            parts.append(_Hunk(line[4:].split("\t")[0].strip(), old == "/dev/null", []))
        elif (match := _RANGE.match(line)) and parts:
            hunks += 1
            left = [int(match.group(1) or 1), int(match.group(2) or 1)]
    return parts, hunks


def _patch(patch: Path, root: Path, skipped: list[tuple[str, str]], unknown: list[tuple[str, str]],
           invalid: list[tuple[str, str]]) -> list[Entry]:
    """What one inbox patch proposes, each entry held for review: a new note (``--- /dev/null``
    to a sibling ``.md``) whole; in an update of MEMORY.md or GEMINI.md each added bullet (a
    ``- See …`` pointer is not a memory) and each added paragraph. Removed lines are Gemini
    CLI's to apply once the person approves the patch; memcli sees that change in the file."""
    try:
        text = read_text(patch)
    except OSError as err:
        invalid.append((patch.relative_to(root).as_posix() if root in patch.parents else patch.name,
                        f"not imported: {why_unread(err)}"))
        return []
    kind = next((p.name for p in patch.parents if p.parent.name == INBOX), patch.parent.name)
    where = patch.relative_to(root).as_posix() if root in patch.parents else patch.name
    parts, hunks = _hunks(text)
    if not hunks or not parts:
        if text.strip():
            unknown.append((where, "no unified-diff hunk (`+++ TARGET` and `@@ … @@`), the inbox patch format"))
        return []
    out: list[Entry] = []
    removed = pointers = 0
    for part in parts:
        name = Path(part.target).name
        added = [(n, t) for n, sign, t in part.lines if sign == "+"]
        removed += sum(1 for _, sign, _ in part.lines if sign == "-")
        if MARK in "\n".join(t for _, t in added):
            skipped.append((where, f"{name}: memcli's own text: not read back"))
            continue
        tags = ("gemini-cli", "inbox", kind)
        if part.new_file and name not in (INDEX, GLOBAL):
            body = "\n".join(t for _, t in added).strip()
            if body:
                out.append(Entry(patch, f"{kind}/{name}", body, added[0][0], "fact", (*tags, slug(Path(name).stem)),
                                 hold=True))
            continue
        groups: list[tuple[int, list[str]]] = []  # (line, parts): one bullet, or one paragraph
        bullet = False
        for number, line in added:
            stripped = line.strip()
            found = re.match(r"^\s{0,3}[-*+]\s+(.*\S)", line)
            if not stripped or stripped.startswith("#"):
                groups.append((0, []))
                bullet = False
            elif found:
                groups.append((number, [found.group(1)]))
                bullet = True
            elif groups and groups[-1][1] and (bullet and line.startswith((" ", "\t")) or not bullet):
                groups[-1][1].append(stripped)
            else:
                groups.append((number, [stripped]))
                bullet = False
        for number, words in groups:
            item = " ".join(words).strip()
            if not item:
                continue
            if _SEE.match(item):
                pointers += 1
                continue
            out.append(Entry(patch, f"{kind}/{name}", item, number, "fact", tags, hold=True))
    if pointers:
        skipped.append((where, f"{pointers} pointer lines to notes: not memories of their own"))
    if removed:
        skipped.append((where, f"{removed} lines the patch would remove: Gemini CLI removes them when the person "
                               "approves it (`/memory inbox`); an import of that file then offers the change"))
    return out


def render_global(held: str, lines: list[str]) -> str:
    """``GEMINI.md`` with memcli's marked section of bullets ``lines`` in place of the one it
    held (or after the rest); the rest of the file kept as it was."""
    from memcli.agents.memstores import MARK_BEGIN, MARK_END

    out: list[str] = []
    inside = False
    for line in held.split("\n"):
        if line.strip() == MARK_BEGIN:
            inside = True
            continue
        if inside:
            inside = line.strip() != MARK_END
            continue
        out.append(line)
    body = "\n".join(out).rstrip("\n")
    section = "\n".join([MARK_BEGIN, "## Memories from memcli", "", *lines, MARK_END]) if lines else ""
    joined = "\n\n".join(part for part in (body, section) if part)
    return joined + "\n" if joined else ""
