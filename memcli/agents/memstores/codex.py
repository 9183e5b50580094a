"""Codex Memories (``$CODEX_HOME/memories_v2``, earlier ``memories``; default under ``~/.codex``).
Pure but for reading files.

Codex 0.171 (recorded in tests/fixtures/agent_memory/codex) keeps them in ``memories_v2/``, a
git work tree of its own, with ``memory_summary.md`` (``v1``, then ``## User Profile``, ``##
User preferences``, ``## General Tips`` and ``## What's in Memory``, whose ``### <project>`` /
``#### <date>`` pointer lines to ``rollout_summaries/…`` are routing, not memories),
``rollout_summaries/`` and ``extensions/`` (its ad-hoc notes extension); no ``MEMORY.md``.
There, the profile paragraph and the preference and tip bullets of memory_summary.md are the
memories. The consolidation prompt of the same binary also describes a ``MEMORY.md``:
``MEMORY.md`` is "the durable, retrieval-oriented handbook", made of blocks that start with
``# Task Group: <…>``, ``scope: …`` and ``applies_to: cwd=<folder>; reuse_rule=…``, then
``## Task <n>: …`` sections (``### rollout_summary_files``, ``### keywords``: routing, not
memories) and the block-level ``## User preferences``, ``## Reusable knowledge`` and
``## Failures and how to do differently`` bullets: those bullets are the memories (the
trailing ``[Task 1]`` references are dropped). ``memory_summary.md`` starts with the line
``v1`` and digests MEMORY.md (``## User Profile``, ``## User preferences``, ``## General
Tips``, ``## What's in Memory``): read only when MEMORY.md is missing, else its bullets would
come in twice. ``raw_memories.md`` and ``rollout_summaries/`` are the consolidation's inputs
and are not read. Codex keeps one store for every project: a block whose ``applies_to: cwd=``
names a folder outside the project being imported for is left out (said in ``skipped``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memcli.agents.memstores import Entry, Reading, Store, bullets, read_text, slug, without_export

INDEX = "MEMORY.md"
SUMMARY = "memory_summary.md"
#: Files of the store that are not memories (the consolidation's inputs).
INPUTS = ("raw_memories.md", "rollout_summaries", "extensions")
#: The store's folders under ``$CODEX_HOME``, newest layout first.
FOLDERS = ("memories_v2", "memories")
#: MEMORY.md block sections -> memcli's category and tag.
SECTIONS = {"user preferences": ("preference", "user-preferences"),
            "reusable knowledge": ("fact", "reusable-knowledge"),
            "failures and how to do differently": ("fact", "pitfall")}
#: memory_summary.md sections read when MEMORY.md is missing.
SUMMARY_SECTIONS = {"user profile": ("fact", "about-user"), "user preferences": ("preference", "user-preferences"),
                    "general tips": ("procedure", "general-tips")}
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


def recognise(path: Path) -> Store | None:
    """The store ``path`` is (the folder, or a file in it), or None."""
    folder = path if path.is_dir() else path.parent
    markers = [folder / SUMMARY, folder / INPUTS[0], folder / INPUTS[1]]
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
    """The block bullets of MEMORY.md (memory_summary.md's when MEMORY.md is missing)."""
    root = store.root
    entries: list[Entry] = []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for name in INPUTS:
        if (root / name).exists():
            skipped.append((name, "the consolidation's inputs and extensions, summarised in its output: "
                                  "not memories"))
    index, summary = root / INDEX, root / SUMMARY
    use_summary = store.file == summary or (store.file is None and not index.is_file())
    path = summary if use_summary else index
    if store.file is None and index.is_file() and summary.is_file():
        skipped.append((SUMMARY, f"a digest of {INDEX}, whose entries are read instead"))
    if not path.is_file():
        return Reading("codex-memories", root, entries, files, skipped)
    files.append(path)
    try:
        text, exported = without_export(read_text(path))
    except OSError as err:
        skipped.append((path.name, f"not read: {err}"))
        return Reading("codex-memories", root, entries, files, skipped)
    if exported:
        skipped.append((path.name, "memcli's exported section: not read back"))
    if use_summary:
        entries.extend(_summary(path, text))
        routes = sum(1 for _, head, _ in bullets(text) if head.lower() not in SUMMARY_SECTIONS)
        if routes:
            skipped.append((path.name, f"{routes} routing lines (## What's in Memory): not memories"))
    else:
        entries.extend(_blocks(path, text, project, skipped))
    return Reading("codex-memories", root, entries, files, skipped)


def _blocks(path: Path, text: str, project: Path | None, skipped: list[tuple[str, str]]) -> list[Entry]:
    """The memories of MEMORY.md's ``# Task Group`` blocks."""
    out: list[Entry] = []
    group, cwd, outside = "", "", False
    lines = text.split("\n")
    starts = [n for n, line in enumerate(lines) if line.startswith("# Task Group:")] or [0]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        block = lines[start:end]
        group = block[0].removeprefix("# Task Group:").strip() if block and block[0].startswith("#") else ""
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


def _summary(path: Path, text: str) -> list[Entry]:
    """memory_summary.md's profile paragraph and its preference and tip bullets."""
    out: list[Entry] = []
    heading, para_line = "", 0
    paragraph: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            heading = line[3:].strip().lower()
            continue
        if heading == "user profile" and line.strip() and not line.lstrip().startswith(("-", "*")):
            if not paragraph:
                para_line = number
            paragraph.append(line.strip())
    if paragraph:
        out.append(Entry(path, "user-profile", " ".join(paragraph), para_line, "fact", ("codex", "about-user"),
                         stable=True))
    for at, head, item in bullets(text):
        section = SUMMARY_SECTIONS.get(head.lower())
        if section and item.strip():
            out.append(Entry(path, section[1], item.strip(), at, section[0], ("codex", section[1])))
    return out
