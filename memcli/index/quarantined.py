"""A catalog that never serves quarantined memories (issue 22 point 1; ``service.arrival``).

:class:`QuarantinedCatalog` wraps any ``Catalog`` of one store and drops, from every
look-up and search, the memories whose file is quarantined (by workspace-relative path, or
by id: the file name starts with it). It filters where the index is read, so the index
itself stays a plain cache of the files: quarantining or accepting a file needs no rebuild.
A search asks the store for ``limit`` plus the number of quarantined files, so a
quarantined hit never pushes an honest one out of the top ``limit``. The semantic side
(``index.hybrid``) reaches the index only through ``hybrid._parts``, which carries the
quarantine: the vectors of quarantined ids are never scored, and every hit, whoever
scored it (this process or a warm one), is checked against it before it is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import InvalidMemoryFile
from memcli.index import Hit, Query, Retriever
from memcli.model import Memory

if TYPE_CHECKING:
    from datetime import datetime

    from memcli.index.catalog import Catalog


class QuarantinedCatalog:
    """The ``Catalog`` interface over ``inner`` without the quarantined files.

    Args:
        inner: the store's catalog (``memcli.index.catalog.Catalog``).
        paths: workspace-relative paths (``memories/…/ID-slug.md``) of the quarantined files.
        ids: their memory ids.
    """

    def __init__(self, inner: Catalog, paths: set[str], ids: set[str]) -> None:
        self.inner = inner
        self.paths = paths
        self.ids = ids

    def __getattr__(self, name: str) -> Any:
        """The inner catalog's report, scan… but never its index or connection: a read of the
        rows themselves would bypass the quarantine. The semantic side gets the index through
        ``hybrid._parts``, which carries the quarantine with it; ``index status`` asks
        :attr:`inner`."""
        if name in ("index", "db"):
            raise AttributeError(f"a quarantined catalog does not lend its {name} (see hybrid._parts)")
        return getattr(self.inner, name)

    def held(self, memory: Memory) -> bool:
        """True when ``memory`` is quarantined (its path or its id)."""
        return memory.id in self.ids or memory.path in self.paths

    def _free(self, memories: list[Memory]) -> list[Memory]:
        return [m for m in memories if not self.held(m)]

    def retriever(self) -> Retriever:
        """A retriever over the same memories without the quarantined ones."""
        return _Retriever(self)

    def problems(self, *, actor: str | None, limit: int | None = None) -> list[InvalidMemoryFile]:
        """See ``Catalog``: the inner catalog's unreadable files."""
        return self.inner.problems(actor=actor, limit=limit)

    def problem_count(self, *, actor: str | None) -> int:
        """See ``Catalog``: the inner catalog's."""
        return self.inner.problem_count(actor=actor)

    def by_prefix(self, prefix: str) -> list[Memory]:
        """See ``Catalog``."""
        return self._free(self.inner.by_prefix(prefix))

    def by_idempotency_key(self, key: str, scope: str) -> Memory | None:
        """See ``Catalog``."""
        found = self.inner.by_idempotency_key(key, scope)
        return None if found is None or self.held(found) else found

    def live_texts(self, scope: str, include_pending: bool = True,
                   lengths: tuple[int, int] | None = None) -> dict[str, str]:
        """See ``Catalog``."""
        return {k: v for k, v in self.inner.live_texts(scope, include_pending, lengths).items() if k not in self.ids}

    def active_with_subject(self, scope: str, subject: str) -> list[Memory]:
        """See ``Catalog``."""
        return self._free(self.inner.active_with_subject(scope, subject))

    def with_status(self, status: str) -> list[Memory]:
        """See ``Catalog``."""
        return self._free(self.inner.with_status(status))

    def guarded(self) -> list[Memory]:
        """See ``Catalog``."""
        return self._free(self.inner.guarded())

    def record_access(self, ids: list[str], at: datetime) -> None:
        """See ``Catalog``."""
        self.inner.record_access([i for i in ids if i not in self.ids], at)

    def refresh(self, paths: list[Path]) -> None:
        """See ``Catalog``."""
        self.inner.refresh(paths)


class _Retriever:
    """Searches the inner catalog and drops quarantined hits (see the module docstring)."""

    def __init__(self, catalog: QuarantinedCatalog) -> None:
        self.catalog = catalog

    def search(self, query: Query) -> list[Hit]:
        """See ``Retriever.search``."""
        limit = query.limit
        query.limit = limit + len(self.catalog.paths)
        try:
            hits = self.catalog.inner.retriever().search(query)
        finally:
            query.limit = limit
        return [h for h in hits if not self.catalog.held(h.memory)][:limit]

    def count(self, query: Query) -> int:
        """See ``Retriever.count`` (the quarantined ones that pass the filters are not counted)."""
        from memcli.index import passes

        held = {m.id: m for i in self.catalog.ids for m in self.catalog.inner.by_prefix(i) if self.catalog.held(m)}
        return self.catalog.inner.retriever().count(query) - sum(1 for m in held.values() if passes(m, query))
