"""Codex Memories (``$CODEX_HOME/memories_v2``, earlier ``memories``; default under ``~/.codex``).
Pure but for reading files.

Codex 0.171 (recorded in tests/fixtures/agent_memory/codex) keeps them in ``memories_v2/``, a
git work tree of its own, with ``memory_summary.md`` (``v1``, then ``## User Profile``, ``##
User preferences``, ``## General Tips`` and ``## What's in Memory``, whose ``### <project>`` /
``#### <date>`` pointer lines to ``rollout_summaries/…`` are routing, not memories),
``rollout_summaries/`` and ``extensions/``; no ``MEMORY.md``. There, the profile paragraph and
the preference and tip bullets of memory_summary.md are the memories.

What a session writes: Codex 0.171's read-path prompt tells the model, "for an explicit
remember, forget, or correction request, append a small Markdown note under
``<base>/extensions/ad_hoc/notes/``" (file ``<timestamp>-<slug>.md``; its ``add_ad_hoc_note``
tool enforces ``YYYY-MM-DDTHH-MM-SS-<slug>.md``). Each note is one entry. A later
consolidation folds the notes into memory_summary.md, marking such lines ``[ad-hoc note]``:
those are left out while the notes are there (the note is the source), else they would come
in twice.

The consolidation prompt of the same binary also describes a ``MEMORY.md``: "the durable,
retrieval-oriented handbook", made of blocks that start with ``# Task Group: <…>``, ``scope:
…`` and ``applies_to: cwd=<folder>; reuse_rule=…``, then ``## Task <n>: …`` sections (``###
rollout_summary_files``, ``### keywords``: routing, not memories) and the block-level ``## User
preferences``, ``## Reusable knowledge`` and ``## Failures and how to do differently`` bullets:
those bullets are the memories (the trailing ``[Task 1]`` references are dropped); when it is
there, memory_summary.md (its digest) is not read, else its bullets would come in twice.
``raw_memories.md``, ``rollout_summaries/``, ``skills/`` and the rest of ``extensions/`` are
the consolidation's inputs and Codex's own files, not read. Codex keeps one store for every
project: a block whose ``applies_to: cwd=`` names a folder outside the project being imported
for is left out (said in ``skipped``). Text in a layout memcli does not know (a summary
version other than ``v1``, an unknown section, a MEMORY.md without task groups) is said in
``Reading.unknown``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memcli.agents.memstores import MARK, Entry, Reading, Store, bullets, read_text, slug, why_unread, without_export

INDEX = "MEMORY.md"
SUMMARY = "memory_summary.md"
#: Where the session's model writes what the user asks it to remember, forget or correct
#: (Codex 0.171's read-path prompt: "append a small Markdown note under
#: ``<base>/extensions/ad_hoc/notes/``"; its ``add_ad_hoc_note`` tool names them
#: ``YYYY-MM-DDTHH-MM-SS-<slug>.md``); consolidation folds them into memory_summary.md later.
NOTES = Path("extensions") / "ad_hoc" / "notes"
#: What a consolidation writes after a line it took from an ad-hoc note (its extension's instructions).
NOTE_TAG = "[ad-hoc note]"
#: Files of the store that are not memories (the consolidation's inputs, Codex's own files).
INPUTS = ("raw_memories.md", "rollout_summaries", "extensions", "skills")
#: The store's folders under ``$CODEX_HOME``, newest layout first.
FOLDERS = ("memories_v2", "memories")
#: MEMORY.md block sections -> memcli's category and tag.
SECTIONS = {"user preferences": ("preference", "user-preferences"),
            "reusable knowledge": ("fact", "reusable-knowledge"),
            "failures and how to do differently": ("fact", "pitfall")}
#: memory_summary.md sections read when MEMORY.md is missing.
SUMMARY_SECTIONS = {"user profile": ("fact", "about-user"), "user preferences": ("preference", "user-preferences"),
                    "general tips": ("procedure", "general-tips")}
#: memory_summary.md's routing section (pointers to rollout summaries): not memories.
ROUTING = "what's in memory"
#: The summary layout memcli reads (its first line).
VERSION = "v1"
_REFS = re.compile(r"(\s*\[Task \d+\])+\s*$")
_CWD = re.compile(r"cwd=([^;]+)")


def find(folder: Path, project: Path) -> tuple[list[Store], list[Path]]:
    """``memories_v2`` (Codex 0.171), else ``memories``, of ``$CODEX_HOME`` (else ``~/.codex``),
    the first that is a store, and the places looked at. Codex keeps one store for every
    project; :func:`read` leaves out other projects' blocks."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()
    places = [home / name for name in FOLDERS]
    for place in places:
        if place.is_dir() and recognise(place):
            return [Store("codex-memories", place)], places
    return [], places


def _root_of_note(path: Path) -> Path | None:
    """The store folder of an ad-hoc note (or of the notes folder), or None when ``path`` is neither."""
    folder = path if path.is_dir() else path.parent
    if folder.parts[-3:] == NOTES.parts:
        return folder.parents[2]
    return None


def recognise(path: Path) -> Store | None:
    """The store ``path`` is (the folder, an ad-hoc note or the notes folder, or a file in it), or None."""
    root = _root_of_note(path)
    if root is not None:
        if path.is_dir():
            return Store("codex-memories", root)
        return Store("codex-memories", root, path) if path.suffix == ".md" else None
    folder = path if path.is_dir() else path.parent
    markers = [folder / SUMMARY, folder / INPUTS[0], folder / INPUTS[1], folder / NOTES.parent]
    index = folder / INDEX
    is_store = any(p.exists() for p in markers) or (index.is_file() and _has_task_groups(index))
    if not is_store:
        return None
    if path.is_dir():
        return Store("codex-memories", folder)
    return Store("codex-memories", folder, path) if path.name in (INDEX, SUMMARY) else None


def _has_task_groups(index: Path) -> bool:
    try:
        return "# Task Group:" in read_text(index)
    except OSError:
        return False


def _inside(folder: str, project: Path) -> bool:
    try:
        given = Path(folder.strip()).expanduser()
    except (ValueError, RuntimeError):
        return True
    if not given.is_absolute():
        return True  # a cwd family ("any repo"), not one folder
    return given == project or project in given.parents or given in project.parents


def read(store: Store, project: Path | None = None) -> Reading:
    """The ad-hoc notes, and the block bullets of MEMORY.md (memory_summary.md's when MEMORY.md
    is missing); lines a consolidation took from a note are read from the note."""
    root = store.root
    entries: list[Entry] = []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    unknown: list[tuple[str, str]] = []
    invalid: list[tuple[str, str]] = []
    index, summary = root / INDEX, root / SUMMARY
    if store.file is not None and store.file.name not in (INDEX, SUMMARY):  # one ad-hoc note
        files.append(store.file)
        entries.extend(_note(store.file, root, skipped, invalid))
        return Reading("codex-memories", root, entries, files, skipped, tuple(unknown), tuple(invalid))
    notes = sorted(p for p in (root / NOTES).glob("*.md") if p.is_file()) if store.file is None else []
    for note in notes:
        files.append(note)
        entries.extend(_note(note, root, skipped, invalid))
    for name in INPUTS:
        if (root / name).exists():
            skipped.append((name, "the consolidation's inputs, skills and Codex's own files: not memories"
                            + (f" (the ad-hoc notes of {NOTES} are read)" if name == "extensions" and notes else "")))
    use_summary = store.file == summary or (store.file is None and not index.is_file())
    path = summary if use_summary else index
    if store.file is None and index.is_file() and summary.is_file():
        skipped.append((SUMMARY, f"a digest of {INDEX}, whose entries are read instead"))
    if not path.is_file():
        return Reading("codex-memories", root, entries, files, skipped, tuple(unknown), tuple(invalid))
    files.append(path)
    try:
        text, exported = without_export(read_text(path))
    except OSError as err:
        invalid.append((path.name, f"not imported: {why_unread(err)}"))
        return Reading("codex-memories", root, entries, files, skipped, tuple(unknown), tuple(invalid))
    if exported:
        skipped.append((path.name, "memcli's exported section: not read back"))
    found = _summary(path, text, skipped, unknown) if use_summary else _blocks(path, text, project, skipped, unknown)
    if notes:  # the note is the source: its consolidated line would come in twice
        taken = [e for e in found if NOTE_TAG in e.text]
        if taken:
            skipped.append((path.name, f"{len(taken)} lines a consolidation took from ad-hoc notes (tagged "
                                       f"{NOTE_TAG}): read from the notes themselves"))
        found = [e for e in found if NOTE_TAG not in e.text]
    entries.extend(found)
    return Reading("codex-memories", root, entries, files, skipped, tuple(unknown), tuple(invalid))


def _note(path: Path, root: Path, skipped: list[tuple[str, str]], invalid: list[tuple[str, str]]) -> list[Entry]:
    """One ad-hoc note as one entry (its whole text: an addition, a correction or a request to
    forget, as the user asked for it)."""
    try:
        text = read_text(path)
    except OSError as err:
        invalid.append((path.relative_to(root).as_posix(), f"not imported: {why_unread(err)}"))
        return []
    if MARK in "\n".join(text.split("\n")[:12]):
        skipped.append((path.relative_to(root).as_posix(), "written by memcli's export: not read back"))
        return []
    body = text.strip()
    if not body:
        skipped.append((path.relative_to(root).as_posix(), "no text"))
        return []
    first = text[:len(text) - len(text.lstrip())].count("\n") + 1
    return [Entry(path, path.name, body, first, "fact", ("codex", "ad-hoc-note"), stable=True)]


def _blocks(path: Path, text: str, project: Path | None, skipped: list[tuple[str, str]],
            unknown: list[tuple[str, str]]) -> list[Entry]:
    """The memories of MEMORY.md's ``# Task Group`` blocks."""
    out: list[Entry] = []
    group, cwd, outside = "", "", False
    lines = text.split("\n")
    starts = [n for n, line in enumerate(lines) if line.startswith("# Task Group:")]
    if not starts:
        if any(line.strip() for line in lines):
            unknown.append((path.name, "no `# Task Group:` block, the layout of Codex's MEMORY.md memcli reads"))
        return out
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        block = lines[start:end]
        group = block[0].removeprefix("# Task Group:").strip()
        applies = next((line for line in block[:6] if line.strip().startswith("applies_to:")), "")
        match = _CWD.search(applies)
        cwd = match.group(1).strip() if match else ""
        outside = bool(project is not None and cwd and not _inside(cwd, project))
        found = [(line + start, heading, item) for line, heading, item in bullets("\n".join(block))
                 if heading.lower() in SECTIONS]
        if outside:
            if found:
                skipped.append((path.name, f"{len(found)} entries of task group {group!r}: they apply to {cwd}, "
                                           "another project"))
            continue
        for line, heading, item in found:
            item = _REFS.sub("", item).strip()
            if not item:
                continue
            category, tag = SECTIONS[heading.lower()]
            tags = tuple(t for t in ("codex", tag, slug(group)) if t)
            out.append(Entry(path, f"{slug(group)}/{tag}", item, line, category, tags))
    return out


def _summary(path: Path, text: str, skipped: list[tuple[str, str]],
             unknown: list[tuple[str, str]]) -> list[Entry]:
    """memory_summary.md's profile paragraph and its preference and tip bullets; its routing
    lines are said in ``skipped``, lines in sections memcli does not know in ``unknown``."""
    out: list[Entry] = []
    section, para_line = "", 0
    paragraph: list[str] = []
    routes = 0
    strange: dict[str, int] = {}
    lines = text.split("\n")
    first = next((line.strip() for line in lines if line.strip()), "")
    if re.fullmatch(r"v\d+", first) and first != VERSION:
        unknown.append((path.name, f"its layout is {first}; memcli reads {VERSION}"))
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if line.startswith("## ") or (line.startswith("# ") and not line.startswith("##")):
            section = line.lstrip("#").strip().lower()
            if section not in SUMMARY_SECTIONS and section != ROUTING:
                strange.setdefault(line.strip(), 0)
            continue
        if not stripped or (stripped == first and re.fullmatch(r"v\d+", first)) or stripped.startswith("#"):
            continue
        if section == ROUTING:
            routes += stripped.startswith(("-", "*"))
        elif section not in SUMMARY_SECTIONS:
            key = next((k for k in strange if k.lstrip("#").strip().lower() == section), "(before any section)")
            strange[key] = strange.get(key, 0) + 1
        elif section == "user profile" and not stripped.startswith(("-", "*")):
            if not paragraph:
                para_line = number
            paragraph.append(stripped)
    if paragraph:
        out.append(Entry(path, "user-profile", " ".join(paragraph), para_line, "fact", ("codex", "about-user"),
                         stable=True))
    for at, head, item in bullets(text):
        found = SUMMARY_SECTIONS.get(head.lower())
        if found and item.strip():
            out.append(Entry(path, found[1], item.strip(), at, found[0], ("codex", found[1])))
    if routes:
        skipped.append((path.name, f"{routes} routing lines (## What's in Memory): not memories"))
    for heading, count in strange.items():
        if count:
            unknown.append((path.name, f"{count} lines under {heading!r}, a section memcli does not know (it reads "
                                       "## User Profile, ## User preferences and ## General Tips)"))
    return out
