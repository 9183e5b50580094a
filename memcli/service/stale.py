"""Memories whose code moved: anchors, verdicts and the marks reads show (SPEC.md section 11).

Every write anchors the memory it makes (``anchor_for``): the code repository's ``HEAD``
and what the text points at (``policy.pointers``). ``verdicts`` compares, for each active
memory, the code at its anchor with the code at ``HEAD`` now:

* a file or folder it names that existed at the anchor and is gone: renamed (git's rename
  detection, with the new path and the commit) or deleted;
* a ``paths`` glob that matched files at the anchor and matches none now;
* an identifier that occurred in the tracked tree at the anchor and occurs nowhere now;
* a command (``make X``, ``just X``, ``npm run X`` / ``pnpm X`` …) whose target or script
  existed at the anchor and is gone.

A name that did not resolve at the anchor is never judged (a product name, a word that looks
like a file, a store with no code), so a verdict is always evidence, never a guess. A memory
written before anchors existed is anchored lazily at the last code commit before it was
created. The verdicts are kept in the cache (``.cache/stale.json``: the stale ones, read by
every context block and hook in one small file read; ``stale-checked.json``: what was
checked at which ``HEAD``, so an unchanged memory at an unchanged ``HEAD`` is not judged
again). A session start whose code ``HEAD`` moved since starts ``memcli stale --refresh``
in the background.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.model import Memory
from memcli.service import Ctx
from memcli.service.stale_notes import CHECKED_FILE, STALE_FILE, STORE_ENTRIES, VERSION, load

#: Files whose targets ``make``, ``just`` and the package managers' scripts name.
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
JUSTFILES = ("justfile", "Justfile", ".justfile")
_MAKE_TARGET = re.compile(rb"^([A-Za-z0-9_.%/-]+(?:[ \t]+[A-Za-z0-9_.%/-]+)*)[ \t]*::?(?!=)", re.MULTILINE)
_JUST_RECIPE = re.compile(rb"^@?([A-Za-z0-9_-]+)(?:[ \t]+[^:\n=]*)?:(?!=)", re.MULTILINE)


@dataclass
class Reason:
    """Why one memory may be outdated.

    Attributes:
        kind: ``renamed``, ``deleted``, ``no-match`` (a ``paths`` glob), ``identifier`` or
            ``command``.
        name: what the memory names (a path, a glob, an identifier, a command).
        now: the new path of a renamed file, else None.
        commit: the short hash of the commit that removed or renamed it, when known.
    """

    kind: str
    name: str
    now: str | None = None
    commit: str | None = None

    def line(self) -> str:
        """The reason in words: ``src/a.py was renamed to src/b.py in 3f2c1a9``."""
        at = f" in {self.commit}" if self.commit else ""
        if self.kind == "renamed":
            return f"{self.name} was renamed to {self.now}{at}"
        if self.kind == "deleted":
            return f"{self.name} was deleted{at}"
        if self.kind == "no-match":
            return f"paths {self.name} match no file now"
        if self.kind == "identifier":
            return f"{self.name} occurs nowhere in the code now"
        return f"`{self.name}`: its target is gone"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"kind": self.kind, "name": self.name, "now": self.now, "commit": self.commit, "line": self.line()}


@dataclass
class Verdict:
    """One memory's verdict: anchored where, stale why (no reasons: still true as far as
    the code tells)."""

    id: str
    anchor: str | None
    lazy: bool = False
    reasons: list[Reason] = field(default_factory=list)
    key: str = ""

    def note(self) -> str:
        """The mark a read shows: ``may be outdated: …`` (the first two reasons)."""
        shown = "; ".join(r.line() for r in self.reasons[:2])
        more = f" (+{len(self.reasons) - 2} more)" if len(self.reasons) > 2 else ""
        return f"may be outdated: {shown}{more}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "anchor": self.anchor, "lazy": self.lazy, "stale": bool(self.reasons),
                "reasons": [r.to_dict() for r in self.reasons], **({"note": self.note()} if self.reasons else {})}


@dataclass
class Report:
    """The verdicts of one ``memcli stale`` run."""

    code: str | None
    head: str | None
    verdicts: list[Verdict]
    checked: int = 0
    reused: int = 0

    def stale(self) -> list[Verdict]:
        """The verdicts with reasons."""
        return [v for v in self.verdicts if v.reasons]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` data."""
        return {"code": self.code, "head": self.head, "memories": len(self.verdicts), "checked": self.checked,
                "reused": self.reused, "stale": [v.to_dict() for v in self.stale()]}


# --- anchoring -------------------------------------------------------------------------------


def code_of(ctx: Ctx) -> tuple[Path, str | None] | None:
    """The code repository of ``ctx``'s store and its ``HEAD`` (``git.code.code_of``), or None
    for a store with no code of its own: the person's own store, a store in a repository that
    holds only memcli's files (one folder listing tells), or outside git."""
    if ctx.ws.config.kind != "project":
        return None
    from memcli.errors import GitFailed
    from memcli.git.code import code_of as find

    try:
        found = find(ctx.ws.root)
    except GitFailed:
        return None
    if found is not None:
        try:
            entries = set(os.listdir(found[0]))
        except OSError:
            return None
        if entries <= STORE_ENTRIES:
            return None
    return found


def anchor_for(ctx: Ctx, text: str, paths: list[str]) -> dict[str, Any] | None:
    """The ``anchor`` of a memory written now: the code's ``HEAD`` and what ``text`` and
    ``paths`` point at; None when there is no code commit to anchor to."""
    found = code_of(ctx)
    if found is None or found[1] is None:
        return None
    from memcli.policy.pointers import find as pointers

    return {"commit": found[1], **pointers(text, paths).to_dict()}


# --- verdicts --------------------------------------------------------------------------------


def _key(memory: Memory, anchor: str) -> str:
    """What a verdict depends on besides ``HEAD``: the anchor, the text, the paths."""
    import hashlib

    raw = json.dumps([anchor, memory.text, memory.paths, memory.anchor], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _pointed(memory: Memory) -> tuple[list[str], list[str], list[str]]:
    """(files, identifiers, commands) of ``memory``: as its anchor recorded them, else read from its text."""
    recorded = memory.anchor or {}
    if any(k in recorded for k in ("files", "symbols", "commands")):
        return (list(recorded.get("files", [])), list(recorded.get("symbols", [])),
                list(recorded.get("commands", [])))
    from memcli.policy.pointers import find

    found = find(memory.text, memory.paths)
    return found.files, found.identifiers, found.commands


class _Tree:
    """The tracked files of one commit, their suffixes indexed (a memory may name
    ``importer.py`` or ``ledger/importer.py`` for ``api/ledger/importer.py``)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = set(paths)
        self.folders = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
        self.by_name: dict[str, list[str]] = {}
        for path in paths:
            self.by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def resolve(self, name: str) -> list[str]:
        """The tracked paths ``name`` may mean: itself, a folder, or the files ending in ``/name``."""
        clean = name.strip("/")
        if clean in self.paths:
            return [clean]
        if clean in self.folders:
            return [clean + "/"]
        last = clean.rsplit("/", 1)[-1]
        return [p for p in self.by_name.get(last, []) if p == clean or p.endswith("/" + clean)]

    def exact(self, name: str) -> bool:
        """True when ``name`` is itself a tracked path or folder (not only the end of one)."""
        clean = name.strip("/")
        return clean in self.paths or clean in self.folders

    def matches(self, glob: str) -> bool:
        """True when ``glob`` (a ``paths`` entry) matches some tracked file."""
        from memcli.index import paths_match

        return any(paths_match([glob], p) for p in self.paths)


def _targets(top: Path, rev: str, tree: _Tree) -> dict[str, set[str]]:
    """``{"make": targets, "just": recipes, "npm": scripts}`` declared in the tracked files of ``rev``."""
    from memcli.git.code import blobs

    makefiles = [p for p in tree.paths if p.rsplit("/", 1)[-1] in MAKEFILES or p.endswith(".mk")]
    justfiles = [p for p in tree.paths if p.rsplit("/", 1)[-1] in JUSTFILES]
    packages = [p for p in tree.paths if p.rsplit("/", 1)[-1] == "package.json" and "node_modules/" not in p]
    contents = blobs(top, rev, [*makefiles, *justfiles, *packages][:400])
    out: dict[str, set[str]] = {"make": set(), "just": set(), "npm": set()}
    for path, data in contents.items():
        name = path.rsplit("/", 1)[-1]
        if name in JUSTFILES:
            out["just"].update(m.decode("utf-8", "replace") for m in _JUST_RECIPE.findall(data))
        elif name == "package.json":
            try:
                scripts = json.loads(data.decode("utf-8", "replace")).get("scripts") or {}
            except (ValueError, AttributeError):
                continue
            if isinstance(scripts, dict):
                out["npm"].update(str(k) for k in scripts)
        else:
            for names in _MAKE_TARGET.findall(data):
                out["make"].update(n.decode("utf-8", "replace") for n in names.split())
    return out


def _command_kind(command: str) -> tuple[str, str]:
    """(``make`` | ``just`` | ``npm``, target) of a command as written."""
    words = command.split()
    tool = words[0]
    return ("make" if tool == "make" else "just" if tool == "just" else "npm"), words[-1]


class _Code:
    """The code at ``HEAD`` and at each anchor asked about, read once each."""

    def __init__(self, top: Path, head: str) -> None:
        from memcli.git.code import files

        self.top = top
        self.head = head
        self.trees: dict[str, _Tree] = {head: _Tree(files(top, head))}
        self.targets: dict[str, dict[str, set[str]]] = {}
        self.words: dict[str, set[str]] = {}

    def tree(self, rev: str) -> _Tree:
        if rev not in self.trees:
            from memcli.git.code import files

            self.trees[rev] = _Tree(files(self.top, rev))
        return self.trees[rev]

    def declared(self, rev: str) -> dict[str, set[str]]:
        if rev not in self.targets:
            self.targets[rev] = _targets(self.top, rev, self.tree(rev))
        return self.targets[rev]

    def present(self, rev: str, words: set[str]) -> set[str]:
        from memcli.git.code import words_present

        known = self.words.setdefault(rev, set())
        asked = self.words.setdefault(rev + "?", set())
        todo = sorted(words - asked)
        if todo:
            known |= words_present(self.top, rev, todo)
            asked |= set(todo)
        return known & words


def _judge(code: _Code, memory: Memory, anchor: str) -> list[Reason]:
    """The reasons ``memory`` (anchored at ``anchor``) may be outdated at ``code.head``."""
    from memcli.git.code import follow, last_change, moves

    if anchor == code.head:
        return []
    files, identifiers, commands = _pointed(memory)
    now = code.tree(code.head)
    reasons: list[Reason] = []
    exact_now = [f for f in files if now.exact(f)]
    gone = [f for f in files if f not in exact_now and not now.resolve(f)]
    loose = [f for f in files if f not in exact_now and f not in gone]  # only the end of some path now
    if loose:  # "Makefile" was the top folder's at the anchor; a docs/Makefile now does not make it still there
        gone += [f for f in loose if code.tree(anchor).exact(f)]
    globs = [g for g in memory.paths if any(c in g for c in "*?[{") and not now.matches(g)]
    missing_words = set(identifiers) - code.present(code.head, set(identifiers))
    declared_now = code.declared(code.head)
    missing_commands = [c for c in commands if _command_kind(c)[1] not in declared_now[_command_kind(c)[0]]]
    if not (gone or globs or missing_words or missing_commands):
        return []
    then = code.tree(anchor)
    old_paths = {f: then.resolve(f) for f in gone}
    wanted = [p.rstrip("/") for ps in old_paths.values() for p in ps[:1]]
    moved = moves(code.top, anchor, code.head, wanted)
    unpaired = [p for p in wanted if moved.get(p, ("deleted",))[0] == "deleted"]
    if unpaired:  # renamed long ago and much edited since: follow it commit by commit
        moved.update(follow(code.top, anchor, code.head, unpaired))
    for name in gone:
        for path in old_paths[name][:1]:
            kind, new = moved.get(path.rstrip("/"), ("deleted", None))
            reasons.append(Reason(kind, name, new, last_change(code.top, anchor, code.head, path.rstrip("/"))))
    reasons += [Reason("no-match", g) for g in globs if then.matches(g)]
    for word in sorted(code.present(anchor, missing_words) if missing_words else set()):
        reasons.append(Reason("identifier", word))
    if missing_commands:
        declared_then = code.declared(anchor)
        reasons += [Reason("command", c) for c in missing_commands
                    if _command_kind(c)[1] in declared_then[_command_kind(c)[0]]]
    return reasons


def _lazy_anchor(times: list[tuple[int, str]], memory: Memory) -> str | None:
    """The last code commit (first-parent) at or before the memory was created, or None."""
    if memory.created_at is None or not times:
        return None
    import bisect

    stamp = int(memory.created_at.timestamp())
    at = bisect.bisect_right(times, (stamp, "\uffff")) - 1
    return times[at][1] if at >= 0 else None


def verdicts(ctx: Ctx, ids: list[str] | None = None, refresh: bool = False) -> Report:
    """Judge the active memories the caller may read (or those of ``ids``) against the code.

    Args:
        ids: memory ids or unique prefixes; all active memories when None.
        refresh: judge again even what the cache says was judged at this ``HEAD``.

    Returns:
        A :class:`Report`; with no code repository or no code commit yet, every verdict is
        empty (nothing can have moved).

    Raises:
        NotFound, AmbiguousId: an id names no memory, or several.
        GitFailed: git cannot be started.
    """
    from memcli.policy.gates import visible

    if ids:
        memories = [ctx.resolve(ref).memory for ref in ids]
    else:
        scopes = ctx.scopes()
        memories = sorted((m for m in ctx.catalog().with_status("active") if visible(m, scopes, ctx.actor)),
                          key=lambda m: m.id)
    # the person's own stores (absolute paths) have no code of their own: never judged
    memories = [m for m in memories if m.status == "active" and not Path(m.path).is_absolute()]
    found = code_of(ctx)
    top, head = found if found is not None else (None, None)
    if top is None or head is None:
        return Report(None if top is None else str(top), None, [Verdict(m.id, None) for m in memories])
    from memcli.git.code import first_parent_times, is_commit

    checked = {} if refresh else load(ctx, CHECKED_FILE, head)
    code = _Code(top, head)
    times: list[tuple[int, str]] | None = None
    report = Report(str(top), head, [])
    known_commits: dict[str, bool] = {}
    for memory in memories:
        anchor = (memory.anchor or {}).get("commit")
        lazy = anchor is None
        if lazy:
            times = first_parent_times(top, head) if times is None else times
            anchor = _lazy_anchor(times, memory)
        if anchor is None:
            report.verdicts.append(Verdict(memory.id, None, lazy))
            continue
        key = _key(memory, anchor)
        cached = checked.get(memory.id)
        if cached is not None and cached.get("key") == key:
            report.reused += 1
            report.verdicts.append(Verdict(memory.id, anchor, lazy, [Reason(**{k: r.get(k) for k in (
                "kind", "name", "now", "commit")}) for r in cached.get("reasons", [])], key))
            continue
        if anchor not in known_commits:
            known_commits[anchor] = is_commit(top, anchor)
        reasons = _judge(code, memory, anchor) if known_commits[anchor] else []
        report.checked += 1
        report.verdicts.append(Verdict(memory.id, anchor, lazy, reasons, key))
    if not ids:
        _save(ctx, report)
    return report


# --- the cache -------------------------------------------------------------------------------


def _save(ctx: Ctx, report: Report) -> None:
    """Write both cache files (atomically; a failure leaves the old ones)."""
    from memcli.store.files import atomic_write

    checked = {v.id: {"key": v.key, "reasons": [r.to_dict() for r in v.reasons]} for v in report.verdicts
               if v.anchor}
    stale = {v.id: {"note": v.note(), "reasons": [r.to_dict() for r in v.reasons]} for v in report.verdicts
             if v.reasons}
    cache = ctx.ws.root / ".cache"
    try:
        cache.mkdir(mode=0o700, exist_ok=True)
        for name, memories in ((CHECKED_FILE, checked), (STALE_FILE, stale)):
            atomic_write(cache / name, json.dumps({"version": VERSION, "head": report.head, "memories": memories},
                                                  ensure_ascii=False).encode())
    except OSError:
        pass
