"""Memories whose code moved: anchors, verdicts and the marks reads show (SPEC.md section 11).

Every write anchors the memory it makes (``service.anchor.anchor_for``): the code repository's ``HEAD``
and what the text points at (``policy.pointers``). ``verdicts`` compares, for each active
memory, the code at its anchor with the code at ``HEAD`` now:

* a file or folder it names that existed at the anchor and is gone: renamed (git's rename
  detection, with the new path and the commit) or deleted;
* a ``paths`` glob that matched files at the anchor and matches none now;
* an identifier that occurred in the tracked tree at the anchor and occurs nowhere now;
* a command (``make X``, ``just X``, ``npm run X`` / ``pnpm X`` …) whose target or script
  existed at the anchor and is gone: no file that declared it then (a Makefile, justfile or
  package.json in the same folder; any ``*.mk`` fragment) declares it now, nor does the top
  folder's (``make X`` at the top still works). Explicit targets only: a pattern rule
  (``%: Makefile``, Sphinx's catch-all) keeps no name alive.

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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.model import Memory
from memcli.service import Ctx
from memcli.service.anchor import code_of
from memcli.service.stale_history import History, Moved
from memcli.service.stale_notes import CHECKED_FILE, STALE_FILE, VERSION, load_head

#: Files whose targets ``make``, ``just`` and the package managers' scripts name.
MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
JUSTFILES = ("justfile", "Justfile", ".justfile")
#: Where ``_targets`` keeps the targets of ``*.mk`` fragments (not a folder name: no path has a NUL).
FRAGMENTS = "\0fragments"
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
class Change:
    """Weaker news about one memory, listed apart (never a mark): a file or folder it names,
    or a ``paths`` glob, that commits touched since its anchor; it may still hold.

    Attributes:
        name: the file, folder or glob as the memory names it.
        commits: how many first-parent commits after the anchor touched it (at least one).
        last: the short hash of the last of them.
    """

    name: str
    commits: int
    last: str | None = None

    def line(self) -> str:
        """``src/a.py changed in 3 commits since (last 3f2c1a9)``."""
        noun = "commit" if self.commits == 1 else "commits"
        return f"{self.name} changed in {self.commits} {noun} since" + (f" (last {self.last})" if self.last else "")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"name": self.name, "commits": self.commits, "last": self.last, "line": self.line()}


@dataclass
class Verdict:
    """One memory's verdict: anchored where, stale why (no reasons: still true as far as
    the code tells), and the weaker ``changes`` (files it names touched since)."""

    id: str
    anchor: str | None
    lazy: bool = False
    reasons: list[Reason] = field(default_factory=list)
    key: str = ""
    changes: list[Change] = field(default_factory=list)

    @classmethod
    def cached(cls, memory_id: str, anchor: str, lazy: bool, entry: dict[str, Any], key: str) -> "Verdict":
        """The verdict kept in ``stale-checked.json`` (``entry``: its ``reasons`` and ``changes``)."""
        reasons = [Reason(str(r.get("kind")), str(r.get("name")), r.get("now"), r.get("commit"))
                   for r in entry.get("reasons", []) if isinstance(r, dict)]
        changes = [Change(str(c.get("name")), int(c.get("commits") or 0), c.get("last"))
                   for c in entry.get("changes", []) if isinstance(c, dict)]
        return cls(memory_id, anchor, lazy, reasons, key, changes)

    def note(self) -> str:
        """The mark a read shows: ``may be outdated: …`` (the first two reasons)."""
        shown = "; ".join(r.line() for r in self.reasons[:2])
        more = f" (+{len(self.reasons) - 2} more)" if len(self.reasons) > 2 else ""
        return f"may be outdated: {shown}{more}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"id": self.id, "anchor": self.anchor, "lazy": self.lazy, "stale": bool(self.reasons),
                "reasons": [r.to_dict() for r in self.reasons], **({"note": self.note()} if self.reasons else {}),
                "changes": [c.to_dict() for c in self.changes]}


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

    def changed(self) -> list[Verdict]:
        """The verdicts without reasons but with changes (the weaker news, listed apart), the
        most touched first."""
        found = [v for v in self.verdicts if v.changes and not v.reasons]
        return sorted(found, key=lambda v: (-max(c.commits for c in v.changes), v.id))

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` data."""
        return {"code": self.code, "head": self.head, "memories": len(self.verdicts), "checked": self.checked,
                "reused": self.reused, "stale": [v.to_dict() for v in self.stale()],
                "changed": [{"id": v.id, "anchor": v.anchor, "changes": [c.to_dict() for c in v.changes]}
                            for v in self.changed()]}


# --- verdicts --------------------------------------------------------------------------------


def _key(memory: Memory, anchor: str) -> str:
    """What a verdict depends on besides ``HEAD``: the anchor, the text, the paths."""
    import hashlib

    raw = repr((anchor, memory.text, memory.paths, memory.anchor))  # the anchor as read: its keys in file order
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]


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


def _targets(top: Path, rev: str, tree: _Tree) -> dict[str, dict[str, set[str]]]:
    """``{"make": {folder: targets}, "just": {folder: recipes}, "npm": {folder: scripts}}``
    declared in the tracked files of ``rev``, by the folder of the file that declares them
    (``""``: the top folder). The targets of ``*.mk`` files (fragments some Makefile includes,
    wherever it is) are kept under :data:`FRAGMENTS`."""
    from memcli.git.code import blobs

    makefiles = [p for p in tree.paths if p.rsplit("/", 1)[-1] in MAKEFILES or p.endswith(".mk")]
    justfiles = [p for p in tree.paths if p.rsplit("/", 1)[-1] in JUSTFILES]
    packages = [p for p in tree.paths if p.rsplit("/", 1)[-1] == "package.json" and "node_modules/" not in p]
    contents = blobs(top, rev, [*makefiles, *justfiles, *packages][:400])
    out: dict[str, dict[str, set[str]]] = {"make": {}, "just": {}, "npm": {}}
    for path, data in contents.items():
        folder, _, name = path.rpartition("/")
        if name in JUSTFILES:
            recipes = _JUST_RECIPE.findall(data)
            out["just"].setdefault(folder, set()).update(m.decode("utf-8", "replace") for m in recipes)
        elif name == "package.json":
            try:
                scripts = json.loads(data.decode("utf-8", "replace")).get("scripts") or {}
            except (ValueError, AttributeError):
                continue
            if isinstance(scripts, dict):
                out["npm"].setdefault(folder, set()).update(str(k) for k in scripts)
        else:
            where = out["make"].setdefault(FRAGMENTS if name.endswith(".mk") else folder, set())
            for names in _MAKE_TARGET.findall(data):
                where.update(n.decode("utf-8", "replace") for n in names.split())
    return out


def _runs_now(declared: dict[str, set[str]], target: str) -> bool:
    """True when ``target`` runs from the top folder at this revision: its Makefile, justfile or
    package.json declares it, or (make) a ``*.mk`` fragment does."""
    return target in declared.get("", set()) or target in declared.get(FRAGMENTS, set())


def _gone_since(then: dict[str, set[str]], now: dict[str, set[str]], target: str) -> bool:
    """True when ``target`` was declared at the anchor (``then``: one tool's ``{folder: names}``)
    and no file that declared it there (same folder; a fragment: any fragment) declares it now,
    nor does the top folder's (``_runs_now``)."""
    folders = [f for f, names in then.items() if target in names]
    if not folders or _runs_now(now, target):
        return False
    return not any(target in now.get(f, set()) for f in folders)


def _command_kind(command: str) -> tuple[str, str]:
    """(``make`` | ``just`` | ``npm``, target) of a command as written."""
    words = command.split()
    tool = words[0]
    return ("make" if tool == "make" else "just" if tool == "just" else "npm"), words[-1]


class _Code:
    """The code at ``HEAD`` and at each anchor asked about, read once each; with ``ctx``, the
    first-parent history's events come from the cache (``service.stale_history``)."""

    def __init__(self, top: Path, head: str, ctx: Ctx | None = None) -> None:
        from memcli.git.code import files

        self.top = top
        self.head = head
        self.ctx = ctx
        self.trees: dict[str, _Tree] = {head: _Tree(files(top, head))}
        self.targets: dict[str, dict[str, dict[str, set[str]]]] = {}
        self.words: dict[str, set[str]] = {}
        self.times: dict[str, int] | None = None  # first-parent position of each commit, read once
        self._history: History | None = None
        self._first_parent: list[tuple[int, str]] | None = None

    def first_parent(self) -> list[tuple[int, str]]:
        """``(committer time, hash)`` of ``HEAD``'s first-parent history, oldest first, read once."""
        from memcli.git.code import first_parent_times

        if self._first_parent is None:
            self._first_parent = first_parent_times(self.top, self.head)
        return self._first_parent

    def order(self) -> dict[str, int]:
        """``{hash: position}`` of ``HEAD``'s first-parent history (0: the root), read once."""
        if self.times is None:
            self.times = {sha: n for n, (_, sha) in enumerate(self.first_parent())}
        return self.times

    def oldest(self, anchors: list[str]) -> str:
        """The oldest of ``anchors`` on ``HEAD``'s first-parent history (the first when none is)."""
        order = self.order()
        ranked = sorted((order[a], a) for a in set(anchors) if a in order)
        return ranked[0][1] if ranked else anchors[0]

    def history(self, anchors: list[str]) -> History:
        """The path events of the first-parent history since the oldest of ``anchors``."""
        if self._history is None:
            from memcli.git.code import path_events
            from memcli.service.stale_history import history

            oldest = self.oldest(anchors)
            if self.ctx is not None:
                self._history = history(self.ctx, self.top, self.head, self.order(), oldest)
            else:
                self._history = History(self.order(), path_events(self.top, oldest, self.head, every=True))
        return self._history

    def tree(self, rev: str) -> _Tree:
        if rev not in self.trees:
            from memcli.git.code import files

            self.trees[rev] = _Tree(files(self.top, rev))
        return self.trees[rev]

    def declared(self, rev: str) -> dict[str, dict[str, set[str]]]:
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


def _judge_all(code: _Code, items: list[tuple[Memory, str]], changes: bool = False
               ) -> tuple[dict[str, list[Reason]], dict[str, list[Change]]]:
    """The reasons each memory of ``items`` (``(memory, anchor)``) may be outdated at
    ``code.head`` and, with ``changes``, the weaker news of each (:func:`_changes`), in a
    fixed number of git processes for the whole batch: the tree, the identifiers and the
    declared targets at ``HEAD``; which names existed at their anchors (one ``cat-file
    --batch-check``); what became of the gone ones and what touched the others (one ``git log``
    of the first-parent history, or the cache of it); which missing identifiers occurred at
    their anchors (one ``git grep`` over those anchors). Anchors with a glob or a command to
    check are read one by one (a tree, the Makefiles)."""
    from memcli.git.code import existing, last_change, moves

    now = code.tree(code.head)
    pointed = {m.id: _pointed(m) for m, _ in items}
    changed = _changes(code, items, pointed) if changes and items else {}
    present = code.present(code.head, {w for _, words, _ in pointed.values() for w in words})
    declared_now = code.declared(code.head)
    todo: list[tuple[Memory, str, list[str], list[str], set[str], list[str]]] = []
    for memory, anchor in items:
        if anchor == code.head:
            continue
        files, identifiers, commands = pointed[memory.id]
        gone = [f for f in files if not now.exact(f)]  # checked below: suffix matches and the anchor
        globs = [g for g in memory.paths if any(c in g for c in "*?[{") and not now.matches(g)]
        missing_words = set(identifiers) - present
        missing_commands = [c for c in commands if not _runs_now(declared_now[_command_kind(c)[0]],
                                                                  _command_kind(c)[1])]
        if gone or globs or missing_words or missing_commands:
            todo.append((memory, anchor, gone, globs, missing_words, missing_commands))
    if not todo:
        return {}, changed
    there = existing(code.top, [(a, f.strip("/")) for _, a, gone, _, _, _ in todo for f in gone])
    out: dict[str, list[Reason]] = {}
    anchors = [a for _, a in items]
    history: History | None = None
    words_then = _words_then(code, todo, pointed)
    for memory, anchor, gone, globs, missing_words, missing_commands in todo:
        reasons: list[Reason] = []
        for name in gone:
            clean = name.strip("/")
            if (anchor, clean) in there:
                path = clean  # that very path existed at the anchor and is not there now
            elif now.resolve(name):
                continue  # written as the end of a path, and some path still ends so
            else:
                found = code.tree(anchor).resolve(name)  # the end of a path at the anchor
                if not found:
                    continue  # never resolved: never judged
                path = found[0].rstrip("/")
            folder = there.get((anchor, path)) == "tree" or (
                (anchor, path) not in there and path in code.tree(anchor).folders)
            inside = next((f for f in sorted(code.tree(anchor).paths) if f.startswith(path + "/")), None) \
                if folder else None
            probe = inside or path  # a folder's fate is the fate of a file it held
            if history is None:
                history = code.history(anchors)
            fate = history.fate(anchor, probe)
            if fate is None:  # an anchor off the first-parent history: one diff from it
                kind, new = moves(code.top, anchor, code.head, [probe]).get(probe, ("deleted", None))
                fate = (kind, new, last_change(code.top, anchor, code.head, probe))
            if inside is not None:
                rest = inside[len(path) + 1:]
                if fate[0] == "renamed" and fate[1]:
                    moved_to = fate[1][:-len(rest) - 1] if fate[1].endswith("/" + rest) else fate[1].rsplit("/", 1)[0]
                    fate = ("renamed", moved_to + "/", fate[2])
                elif fate[0] == "kept":
                    fate = ("deleted", None, None)
            if fate[0] != "kept":
                reasons.append(Reason(fate[0], name, fate[1], fate[2]))
        if globs:
            reasons += [Reason("no-match", g) for g in globs if code.tree(anchor).matches(g)]
        reasons += [Reason("identifier", w) for w in sorted(missing_words & words_then.get(anchor, set()))]
        if missing_commands:
            declared_then = code.declared(anchor)
            reasons += [Reason("command", c) for c in missing_commands
                        if _gone_since(declared_then[_command_kind(c)[0]], declared_now[_command_kind(c)[0]],
                                       _command_kind(c)[1])]
        if reasons:
            out[memory.id] = reasons
    return out, changed


def _changes(code: _Code, items: list[tuple[Memory, str]], pointed: dict[str, tuple[list[str], list[str], list[str]]]
             ) -> dict[str, list[Change]]:
    """The weaker news (listed apart, never a mark): for each memory, each file or folder it
    names that is still there and each ``paths`` glob, with the number of first-parent commits
    after its anchor that touched it (at least one), from the history's events."""
    now = code.tree(code.head)
    history = code.history([a for _, a in items])
    touched = history.paths()
    under: dict[str, list[str]] = {}

    def paths_of(name: str, glob: bool) -> list[str]:
        key = ("g:" if glob else "f:") + name
        if key not in under:
            if glob:
                from memcli.index import paths_match

                under[key] = [p for p in touched if paths_match([name], p)]
            else:
                found = now.resolve(name)
                folders = tuple(f.rstrip("/") + "/" for f in found if f.endswith("/"))
                under[key] = [f for f in found if not f.endswith("/")] + (
                    [p for p in touched if p.startswith(folders)] if folders else [])
        return under[key]

    out: dict[str, list[Change]] = {}
    for memory, anchor in items:
        files = pointed[memory.id][0]
        names = [(f, False) for f in files] + [(g, True) for g in memory.paths if any(c in g for c in "*?[{")]
        found = []
        for name, glob in names:
            commits, last = history.touched(anchor, paths_of(name, glob))
            if commits:
                found.append(Change(name, commits, last))
        if found:
            out[memory.id] = found
    return out


def _words_then(code: _Code, todo: list, pointed: dict[str, tuple[list[str], list[str], list[str]]]
                ) -> dict[str, set[str]]:
    """Which of each anchor's missing identifiers occurred there: first looked up in the files
    the memories themselves name (one ``cat-file --batch`` for all anchors: where a memory's
    identifier usually lives), then, for what is still unknown, one ``git grep`` over the
    anchors that need it."""
    from memcli.git.code import words_at, words_in

    needed: dict[str, set[str]] = {}
    named: dict[str, set[str]] = {}
    for memory, anchor, _, _, words, _ in todo:
        if words:
            needed.setdefault(anchor, set()).update(words)
            named.setdefault(anchor, set()).update(f.strip("/") for f in pointed[memory.id][0] if f.strip("/"))
    pairs = [(anchor, path) for anchor in sorted(named) for path in sorted(named[anchor])]
    found = words_in(code.top, pairs, {w for words in needed.values() for w in words})
    unknown = {a: words - found.get(a, set()) for a, words in needed.items()}
    rest = sorted(a for a, words in unknown.items() if words)
    grepped = words_at(code.top, rest, sorted({w for a in rest for w in unknown[a]})) if rest else {}
    return {a: found.get(a, set()) | (grepped.get(a, set()) & needed[a]) for a in needed}


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
    from memcli.git.code import commits_known

    then, checked = (None, {}) if refresh else load_head(ctx, CHECKED_FILE)
    code = _Code(top, head, ctx)
    move: Moved | None | bool = then == head or None  # True: same HEAD; a Moved: HEAD moved along its history
    if then is not None and then != head and checked:
        from memcli.service.stale_history import moved

        move = moved(top, then, head, code.order(), (MAKEFILES + JUSTFILES + ("package.json",), (".mk",)))
    report = Report(str(top), head, [])
    judged: list[tuple[Memory, str, bool, str]] = []
    for memory in memories:
        anchor = (memory.anchor or {}).get("commit")
        lazy = anchor is None
        if lazy:
            anchor = _lazy_anchor(code.first_parent(), memory)
        if anchor is None:
            report.verdicts.append(Verdict(memory.id, None, lazy))
            continue
        key = _key(memory, anchor)
        cached = checked.get(memory.id)
        if cached is not None and cached.get("key") == key and move is not None and (
                move is True or not _concerns(move, memory, cached)):
            report.reused += 1
            report.verdicts.append(Verdict.cached(memory.id, anchor, lazy, cached, key))
            continue
        judged.append((memory, anchor, lazy, key))
    known = commits_known(top, sorted({a for _, a, _, _ in judged}))
    reasons, changes = _judge_all(code, [(m, a) for m, a, _, _ in judged if a in known], changes=True)
    for memory, anchor, lazy, key in judged:
        report.checked += 1
        report.verdicts.append(Verdict(memory.id, anchor, lazy, reasons.get(memory.id, []), key,
                                       changes.get(memory.id, [])))
    report.verdicts.sort(key=lambda v: v.id)
    unchanged = then == head and not report.checked and {v.id for v in report.verdicts if v.anchor} == set(checked)
    if not ids and not unchanged:
        _save(ctx, report)
    return report


def _concerns(move: Moved | bool, memory: Memory, cached: dict[str, Any]) -> bool:
    """True when the move of ``HEAD`` may change ``memory``'s cached verdict (``Moved.concerns``
    over its names, and the new paths its renamed files went to)."""
    if not isinstance(move, Moved):
        return False
    files, identifiers, commands = _pointed(memory)
    moved_to = [str(r["now"]) for r in cached.get("reasons", []) if isinstance(r, dict) and r.get("now")]
    globs = [g for g in memory.paths if any(c in g for c in "*?[{")]
    return move.concerns([*files, *moved_to], globs, identifiers, commands)


def to_review(ctx: Ctx) -> tuple[Report, list[tuple[Verdict, Memory, list[Memory]]]]:
    """``memcli review --stale``: the stale verdicts (judged again where the code or a memory
    changed), each with its memory and the replacements proposed for it that wait for review
    (a ``pending_review`` memory that supersedes it: an agent's mend through MCP, or a
    person's in a shared scope), oldest first.

    Raises:
        GitFailed: git cannot be started.
    """
    report = verdicts(ctx)
    stale = report.stale()
    if not stale:
        return report, []
    catalog = ctx.catalog()
    proposed: dict[str, list[Memory]] = {}
    for memory in sorted(catalog.with_status("pending_review"), key=lambda m: m.id):
        if ctx.may_see(memory):
            for old in memory.supersedes:
                proposed.setdefault(old, []).append(memory)
    return report, [(v, ctx.resolve(v.id).memory, proposed.get(v.id, [])) for v in stale]


def became_stale(ctx: Ctx, old: str | None, new: str) -> list[Verdict]:
    """The active memories outdated at the code revision ``new`` that were not at ``old``
    (``memcli check --stale OLD..NEW``: a CI run fails on the memories a change made stale).

    A memory anchored after ``old`` (its anchor is not on ``old``'s first-parent history)
    was not stale there. With ``old`` None, every memory outdated at ``new`` is listed. The
    verdicts are judged afresh (not read from the cache, which holds ``HEAD``'s) and not saved.

    Args:
        old, new: revisions of the code repository (``origin/main``, ``HEAD``, a hash).

    Raises:
        RevisionNotFound: a revision names no commit of the code repository.
        GitFailed: git cannot be started.
    """
    from memcli.errors import RevisionNotFound
    from memcli.git.code import commits_known, first_parent_times, resolve
    from memcli.policy.gates import visible

    found = code_of(ctx)
    if found is None or found[1] is None:
        return []
    top = found[0]
    shas = {}
    for rev in (old, new):
        if rev is None:
            continue
        sha = resolve(top, rev)
        if sha is None:
            raise RevisionNotFound(f"no such revision in the code repository: {rev}",
                                   hint="give a range such as origin/main..HEAD")
        shas[rev] = sha
    scopes = ctx.scopes()
    memories = sorted((m for m in ctx.catalog().with_status("active") if visible(m, scopes, ctx.actor)
                       and not Path(m.path).is_absolute()), key=lambda m: m.id)
    times = first_parent_times(top, shas[new])
    items = []
    for memory in memories:
        anchor = (memory.anchor or {}).get("commit") or _lazy_anchor(times, memory)
        if anchor is not None:
            items.append((memory, anchor))
    known = commits_known(top, sorted({a for _, a in items}))
    items = [(m, a) for m, a in items if a in known]
    at_new, _ = _judge_all(_Code(top, shas[new]), items)
    if old is None or not at_new:
        before: dict[str, list[Reason]] = {}
    else:
        history = {sha for _, sha in first_parent_times(top, shas[old])}
        before, _ = _judge_all(_Code(top, shas[old]), [(m, a) for m, a in items if m.id in at_new and a in history])
    anchors = dict((m.id, a) for m, a in items)
    return [Verdict(i, anchors[i], False, reasons) for i, reasons in sorted(at_new.items()) if i not in before]


# --- the cache -------------------------------------------------------------------------------


def _short(entry: dict[str, Any]) -> dict[str, Any]:
    """A reason or change as the cache keeps it: without its ``line`` (made again when read)."""
    return {k: v for k, v in entry.items() if k != "line"}


def _save(ctx: Ctx, report: Report) -> None:
    """Write both cache files (atomically; a failure leaves the old ones)."""
    from memcli.store.files import atomic_write

    checked = {v.id: {"key": v.key, **({"reasons": [_short(r.to_dict()) for r in v.reasons]} if v.reasons else {}),
                      **({"changes": [_short(c.to_dict()) for c in v.changes]} if v.changes else {})}
               for v in report.verdicts if v.anchor}
    # what the reads show, only: the note, and the renames (the before-tool hook finds a memory
    # about a file under the file's new name: stale_notes.renamed)
    stale = {v.id: {"note": v.note(), **({"renamed": moves} if (moves := [[r.name, r.now] for r in v.reasons
                                                                           if r.kind == "renamed" and r.now]) else {})}
             for v in report.verdicts if v.reasons}
    cache = ctx.ws.root / ".cache"
    try:
        cache.mkdir(mode=0o700, exist_ok=True)
        for name, memories in ((CHECKED_FILE, checked), (STALE_FILE, stale)):
            atomic_write(cache / name, json.dumps({"version": VERSION, "head": report.head, "memories": memories},
                                                  ensure_ascii=False).encode())
    except OSError:
        pass
