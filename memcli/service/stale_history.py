"""The code's first-parent history as ``memcli stale`` reads it: what each commit did to which
path, kept in the cache and extended as ``HEAD`` moves (issue 23: "computed incrementally").

A commit's changes never change, so the events read once (``git.code.path_events``: one
``git log --first-parent -M --name-status``, the costliest step of judging 10k memories
against 10k commits) are kept in ``.cache/stale-history.json`` and only the commits after the
cached ``HEAD`` are read the next time, as long as that ``HEAD`` is on the new one's
first-parent history (a rebase or a switch to another branch reads it again).

:class:`History` answers, for a path and an anchor on that history, what became of it
(:meth:`History.fate`) and how many commits touched it since (:meth:`History.touched`);
:class:`Moved` says which memories a move of ``HEAD`` from ``old`` to ``new`` may concern:
the others keep the verdict they had at ``old``.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

from memcli.service import Ctx

HISTORY_FILE = "stale-history.json"
VERSION = 1
#: A move of ``HEAD`` touching more paths than this is judged whole (the delta would be as dear).
MAX_MOVED_PATHS = 20_000


class History:
    """The path events of the first-parent commits after ``base`` up to ``head``.

    Attributes:
        order: ``{hash: position}`` of every first-parent commit of ``head`` (0: the root).
        events: ``{path: [(position, kind, new path | None, short hash)]}``, oldest first;
            kind ``A`` (added), ``M`` (modified, type changes included), ``D`` (deleted),
            ``R`` (renamed to the new path).
    """

    def __init__(self, order: dict[str, int], commits: list[tuple[str, list[tuple[str, str, str | None]]]]) -> None:
        self.order = order
        self.events: dict[str, list[tuple[int, str, str | None, str]]] = {}
        for commit, changes in commits:
            n = order.get(commit)
            if n is None:
                continue
            for kind, path, new in changes:
                self.events.setdefault(path, []).append((n, kind, new, commit[:7]))
                if kind == "R" and new:
                    self.events.setdefault(new, []).append((n, "A", None, commit[:7]))
        self._positions: dict[str, list[int]] = {}

    def fate(self, anchor: str, path: str) -> tuple[str, str | None, str | None] | None:
        """``("renamed", new path, commit)``, ``("deleted", None, commit)``, ``("kept", path,
        None)``, or None when ``anchor`` is not on the first-parent history read."""
        at = self.order.get(anchor)
        if at is None:
            return None
        current, commit, moved = path, None, False
        while True:
            later = [e for e in self.events.get(current, []) if e[0] > at and e[1] in ("R", "D")]
            if not later:
                break
            at, kind, new, commit = later[0]
            if kind == "D":
                return "deleted", None, commit
            current, moved = str(new), True
        return ("renamed", current, commit) if moved and current != path else ("kept", path, None)

    def positions(self, path: str) -> list[int]:
        """The sorted first-parent positions of the commits that touched ``path``."""
        if path not in self._positions:
            self._positions[path] = sorted({e[0] for e in self.events.get(path, [])})
        return self._positions[path]

    def touched(self, anchor: str, paths: list[str]) -> tuple[int, str | None]:
        """(how many commits after ``anchor`` touched any of ``paths``, the short hash of the
        last of them); ``(0, None)`` when ``anchor`` is not on the history read."""
        at = self.order.get(anchor)
        if at is None or not paths:
            return 0, None
        after: set[int] = set()
        for path in paths:
            places = self.positions(path)
            after.update(places[bisect.bisect_right(places, at):])
        if not after:
            return 0, None
        last = max(after)
        short = next(e[3] for p in paths for e in self.events.get(p, []) if e[0] == last)
        return len(after), short

    def paths(self) -> list[str]:
        """Every path some commit of the history read touched."""
        return list(self.events)


def _load(ctx: Ctx) -> dict | None:
    try:
        data = json.loads((ctx.ws.root / ".cache" / HISTORY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("commits"), list)
    return data if ok else None


def _save(ctx: Ctx, base: str | None, head: str, commits: list) -> None:
    from memcli.store.files import atomic_write

    try:
        (ctx.ws.root / ".cache").mkdir(mode=0o700, exist_ok=True)
        atomic_write(ctx.ws.root / ".cache" / HISTORY_FILE, json.dumps(
            {"version": VERSION, "head": head, "base": base, "commits": commits}, ensure_ascii=False).encode())
    except OSError:
        pass


def history(ctx: Ctx, top: Path, head: str, order: dict[str, int], oldest: str | None) -> History:
    """The events of the first-parent commits after ``oldest`` (None: from the root) up to
    ``head``, from the cache where it holds them, the rest read from git and the cache
    extended.

    Args:
        top: the code repository.
        order: ``{hash: position}`` of ``head``'s first-parent history (``History.order``).
        oldest: the oldest anchor asked about, on that history.
    """
    from memcli.git.code import path_events

    cached = _load(ctx)
    want = order.get(oldest, 0) if oldest else -1
    commits: list = []
    if cached is not None:
        base, then = cached.get("base"), cached.get("head")
        covers = (base is None or (base in order and order[base] <= want)) and then in order
        if covers:
            commits = [(c, [tuple(x) for x in changes]) for c, changes in cached["commits"]]
            if then != head:
                commits += path_events(top, str(then), head, every=True)
                _save(ctx, base, head, commits)
            return History(order, commits)
    commits = path_events(top, oldest, head, every=True)
    _save(ctx, oldest, head, commits)
    return History(order, commits)


class Moved:
    """What a move of the code's ``HEAD`` from ``old`` to ``new`` (``old`` on ``new``'s
    first-parent history) touched: the paths of its commits, the whole words of those files
    at both ends, and whether a file declaring commands changed. A memory none of whose
    names it touched keeps its verdict (:meth:`concerns`)."""

    def __init__(self, top: Path, old: str, new: str, events: list[tuple[str, list[tuple[str, str, str | None]]]],
                 declaring: tuple[tuple[str, ...], ...]) -> None:
        from memcli.git.code import blobs, tokens

        self.paths: set[str] = set()
        for _, changes in events:
            for _kind, path, moved in changes:
                self.paths.add(path)
                if moved:
                    self.paths.add(moved)
        self.suffixes = {p.split("/", i)[-1] for p in self.paths for i in range(p.count("/") + 1)}
        self.folders = {p.rsplit("/", i)[0] for p in self.paths for i in range(1, p.count("/") + 1)}
        names, ends = declaring
        self.declaring = any(p.rsplit("/", 1)[-1] in names or p.endswith(ends) for p in self.paths)
        words: set[bytes] = set()
        for rev in (old, new):
            for data in blobs(top, rev, sorted(self.paths)).values():
                words |= tokens(data)
        self.words = {w.decode("utf-8", "replace") for w in words}
        self._globs: dict[str, bool] = {}

    def concerns(self, files: list[str], globs: list[str], identifiers: list[str], commands: list[str]) -> bool:
        """True when the move may change a verdict about these names: a file or folder it
        names (as a whole path, the end of one, or a folder of one) or a glob it gives was
        touched, an identifier occurs in a touched file, or it runs commands and a file
        declaring them changed."""
        from memcli.index import paths_match

        for name in files:
            clean = name.strip("/")
            if clean in self.paths or clean in self.suffixes or clean in self.folders:
                return True
        for glob in globs:
            if glob not in self._globs:
                self._globs[glob] = any(paths_match([glob], p) for p in self.paths)
            if self._globs[glob]:
                return True
        return bool(commands and self.declaring) or any(w in self.words for w in identifiers)


def moved(top: Path, old: str, new: str, order: dict[str, int],
          declaring: tuple[tuple[str, ...], ...]) -> Moved | None:
    """:class:`Moved` for ``old``..``new``, or None when ``old`` is not on ``new``'s first-parent
    history (``order``) or the move touched more than ``MAX_MOVED_PATHS`` paths: then every
    memory is judged again."""
    from memcli.git.code import path_events

    if old not in order:
        return None
    events = path_events(top, old, new, every=True)
    if sum(len(changes) for _, changes in events) > MAX_MOVED_PATHS:
        return None
    return Moved(top, old, new, events, declaring)
