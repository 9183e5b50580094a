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

from memcli.agents.memstores import MARK, Entry, Reading, Store, bullets, read_text, slug, without_export

INDEX = "MEMORY.md"
GLOBAL = "GEMINI.md"
INBOX = ".inbox"
PATCH = "extraction.patch"
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


def recognise(path: Path) -> Store | None:
    """The store ``path`` is, or None."""
    if path.is_file() and path.name == GLOBAL and _is_home(path.parent):
        return Store("gemini-global", path.parent, path)
    if path.is_dir() and _is_home(path) and (path / GLOBAL).is_file():
        return Store("gemini-global", path, path / GLOBAL)
    if path.is_file() and path.name == PATCH and path.parent.parent.name == INBOX:
        return Store("gemini-inbox", path.parent.parent.parent, path)
    if path.is_dir() and path.name == INBOX:
        return Store("gemini-inbox", path.parent)
    folder = path if path.is_dir() else path.parent
    if folder.name == "memory" and folder.parent.parent.name == "tmp" and folder.parent.parent.parent.name == ".gemini":
        return Store("gemini-project", folder, None if path.is_dir() else path)
    return None


def read(store: Store, project: Path | None = None) -> Reading:
    """The entries of one Gemini store (see the module docstring)."""
    entries: list[Entry] = []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    if store.kind == "gemini-inbox":
        patches = [store.file] if store.file else sorted((store.root / INBOX).glob(f"*/{PATCH}"))
        for patch in patches:
            files.append(patch)
            entries.extend(_patch(patch, store.root, skipped))
        return Reading(store.kind, store.root, entries, files, skipped)
    if store.kind == "gemini-global":
        path = store.file or store.root / GLOBAL
        files.append(path)
        entries.extend(_bullets(path, skipped, "global"))
        return Reading(store.kind, store.root, entries, files, skipped)
    root = store.root
    index = root / INDEX
    wanted = [store.file] if store.file else ([index] if index.is_file() else []) + sorted(
        p for p in root.glob("*.md") if p.name != INDEX and p.is_file())
    for path in wanted:
        files.append(path)
        if path.name == INDEX:
            entries.extend(_bullets(path, skipped, "project"))
        else:
            entries.extend(_topic(path, skipped))
    if (root / INBOX).is_dir() and not store.file:
        count = len(list((root / INBOX).glob(f"*/{PATCH}")))
        if count:
            skipped.append((INBOX, f"{count} inbox patches: import {root / INBOX} to read them, held for review"))
    return Reading(store.kind, root, entries, files, skipped)


def _bullets(path: Path, skipped: list[tuple[str, str]], tier: str) -> list[Entry]:
    try:
        text, exported = without_export(read_text(path))
    except OSError as err:
        skipped.append((path.name, f"not read: {err}"))
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
    return out


def _topic(path: Path, skipped: list[tuple[str, str]]) -> list[Entry]:
    try:
        text = read_text(path)
    except OSError as err:
        skipped.append((path.name, f"not read: {err}"))
        return []
    if any(MARK in line for line in text.split("\n")[:12]):
        skipped.append((path.name, "written by memcli's export: not read back"))
        return []
    body = text.strip()
    if not body:
        skipped.append((path.name, "no text"))
        return []
    return [Entry(path, path.name, body, 1, "fact", ("gemini-cli", "project", slug(path.stem)), stable=True)]


def _patch(patch: Path, root: Path, skipped: list[tuple[str, str]]) -> list[Entry]:
    """The added lines of a unified diff's hunks, one entry per added bullet or paragraph."""
    try:
        text = read_text(patch)
    except OSError as err:
        skipped.append((patch.name, f"not read: {err}"))
        return []
    kind = patch.parent.name
    out: list[Entry] = []
    target = ""
    hunks = 0
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("+++ "):
            target = Path(line[4:].strip()).name
            continue
        if line.startswith("--- "):
            continue
        if line.startswith("@@"):
            hunks += 1
            continue
        if not line.startswith("+") or not hunks:
            continue
        added = line[1:].strip()
        match = re.match(r"^[-*+]\s+(.*\S)", added)
        item = match.group(1) if match else added
        if not item or item.startswith("#") or _SEE.match(item) or MARK in item:
            continue
        out.append(Entry(patch, f"{kind}/{target}", item, number, "fact",
                         ("gemini-cli", "inbox", kind), hold=True))
    if not hunks and text.strip():
        skipped.append((patch.name, "no unified-diff hunk (@@ … @@): nothing read"))
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
