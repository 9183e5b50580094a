"""One catalog over several stores: the project store and the person's own (issue 12).

Reads merge the stores transparently (SPEC.md section 1, Stores): every look-up asks each
store's catalog and joins the answers; a search asks each store's retriever with the
same query and keeps the best ``limit`` hits. A memory of another store carries its
absolute file path in ``Memory.path`` (``Path(root) / path`` is then that path), so the
service reads, shows and routes it without knowing where it came from; the project
store's memories keep their workspace-relative paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memcli.errors import InvalidMemoryFile
from memcli.index import Hit, Query, Retriever, browse_key, rank_key
from memcli.model import Memory

if TYPE_CHECKING:
    from datetime import datetime

    from memcli.index.catalog import Catalog


class Part:
    """One store in a merged catalog.

    Args:
        root: the store's workspace folder (absolute), or None for the project store.
        catalog: its ``memcli.index.catalog.Catalog``.
    """

    __slots__ = ("root", "catalog")

    def __init__(self, root: Path | None, catalog: Catalog) -> None:
        self.root = root
        self.catalog = catalog

    def placed(self, memory: Memory) -> Memory:
        """``memory`` with its path made absolute when it belongs to another store (idempotent)."""
        if self.root is not None and memory.path and not Path(memory.path).is_absolute():
            memory.path = str(self.root / memory.path)
        return memory


class MergedCatalog:
    """The ``Catalog`` interface over the project store's catalog and the person's stores'.

    Args:
        own: the project store's catalog (statistics, index status and problems of the
            workspace are its).
        others: ``(root, catalog)`` of each personal store that exists.
    """

    def __init__(self, own: Catalog, others: list[tuple[Path, Catalog]]) -> None:
        self.own = own
        self.parts = [Part(None, own)] + [Part(root, catalog) for root, catalog in others]
        self._home: dict[str, Part] = {}

    def _placed(self, part: Part, memories: list[Memory]) -> list[Memory]:
        for memory in memories:
            part.placed(memory)
            self._home.setdefault(memory.id, part)
        return memories

    def retriever(self) -> Retriever:
        """A retriever that searches every store (see :class:`MergedRetriever`)."""
        return MergedRetriever(self)

    def problems(self, *, actor: str | None, limit: int | None = None) -> list[InvalidMemoryFile]:
        """Every store's unreadable files (the first ``limit``); a personal store's with their absolute paths."""
        found: list[InvalidMemoryFile] = []
        for part in self.parts:
            left = None if limit is None else limit - len(found)
            if left is not None and left <= 0:
                break
            for problem in part.catalog.problems(actor=actor, limit=left):
                if part.root is not None and not Path(problem.path).is_absolute():
                    problem = InvalidMemoryFile(str(part.root / problem.path), problem.reason, problem.lineno)
                found.append(problem)
        return found

    def problem_count(self, *, actor: str | None) -> int:
        """See ``Catalog``: every store's."""
        return sum(part.catalog.problem_count(actor=actor) for part in self.parts)

    def by_prefix(self, prefix: str) -> list[Memory]:
        """See ``Catalog``: the project store's first, then each personal store's."""
        return [m for part in self.parts for m in self._placed(part, part.catalog.by_prefix(prefix))]

    def by_idempotency_key(self, key: str, scope: str) -> Memory | None:
        """See ``Catalog``."""
        for part in self.parts:
            found = part.catalog.by_idempotency_key(key, scope)
            if found is not None:
                return self._placed(part, [found])[0]
        return None

    def live_texts(self, scope: str, include_pending: bool = True,
                   lengths: tuple[int, int] | None = None) -> dict[str, str]:
        """See ``Catalog``."""
        texts: dict[str, str] = {}
        for part in self.parts:
            texts.update(part.catalog.live_texts(scope, include_pending, lengths))
        return texts

    def active_with_subject(self, scope: str, subject: str) -> list[Memory]:
        """See ``Catalog``."""
        return [m for part in self.parts for m in self._placed(part, part.catalog.active_with_subject(scope, subject))]

    def with_status(self, status: str) -> list[Memory]:
        """See ``Catalog``."""
        return [m for part in self.parts for m in self._placed(part, part.catalog.with_status(status))]

    def guarded(self) -> list[Memory]:
        """See ``Catalog``."""
        return [m for part in self.parts for m in self._placed(part, part.catalog.guarded())]

    def record_access(self, ids: list[str], at: datetime) -> None:
        """Count a recall of ``ids`` in the statistics of the store each came from."""
        for part in self.parts:
            mine = [i for i in ids if self._home.get(i, self.parts[0]) is part]
            if mine:
                part.catalog.record_access(mine, at)

    def refresh(self, paths: list[Path]) -> None:
        """Take in written or deleted files (absolute paths), each in the store that holds it."""
        for part in reversed(self.parts):  # a personal store's folder is never inside the project's
            mine = [p for p in paths if part.root is None or part.root in p.parents]
            paths = [p for p in paths if p not in mine]
            if mine:
                part.catalog.refresh(mine)


class MergedRetriever:
    """Searches every store of a :class:`MergedCatalog` with one query.

    Ranked, fuzzy and regex hits are merged by tier, then score (each store scores its own
    hits with the same formula, SPEC.md section 5; ``index.rank_key``), an empty query's by its browse order
    (``index.browse_key``); at most ``query.limit`` are kept.
    """

    def __init__(self, merged: MergedCatalog) -> None:
        self.merged = merged

    def search(self, query: Query) -> list[Hit]:
        """See ``Retriever.search``."""
        hits: list[Hit] = []
        for part in self.merged.parts:
            found = part.catalog.retriever().search(query)
            self.merged._placed(part, [h.memory for h in found])
            hits += found
        if not query.text.strip() and query.mode != "grep":
            key = browse_key(query)
            hits.sort(key=lambda h: key(h.memory))
        else:
            hits.sort(key=rank_key)  # tiers first (an exact hit of one store above a typo of another); stable
        return hits[:query.limit]

    def count(self, query: Query) -> int:
        """See ``Retriever.count``."""
        return sum(part.catalog.retriever().count(query) for part in self.merged.parts)
