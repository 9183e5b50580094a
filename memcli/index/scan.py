"""The scanning retriever: reads every memory and matches by substring and rapidfuzz.

Fine for hundreds of memories; the FTS5 index replaces it for large workspaces. Also
the fallback when an index cannot be used.

Scoring (higher is better): for a query of terms ``t1..tn`` (split on white space,
case-folded), ``coverage`` is the share of terms found as substrings of the memory's
text, subject and tags. A memory with ``coverage > 0`` scores ``coverage * 10``;
otherwise, in ranked mode, the best rapidfuzz ``partial_ratio`` of a term against the
text counts as ``ratio / 100`` (always below any substring match) when it reaches 80.
Ties break by importance, then by newer ``updatedAt``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memcli.errors import UsageProblem
from memcli.index import Hit, Query, browse_key, passes
from memcli.model import Memory

FUZZY_CUTOFF = 80
#: The most time one ``--grep`` query may spend matching, all memories together (seconds of
#: processor time, as ``regex`` measures its ``timeout``; on a busy machine the wall time is longer).
GREP_BUDGET = 2.0


class Grep:
    """A ``--grep`` pattern with a time budget, shared by both retrievers.

    Uses the ``regex`` package (imported here, so only in grep mode) in its ``V0`` mode,
    which accepts Python ``re`` syntax, for its ``timeout`` argument: a pattern such as
    ``(a|aa)+$`` backtracks exponentially and would otherwise never return. The pattern is
    first compiled by the standard ``re`` module, so that only Python ``re`` syntax is taken:
    ``regex``'s own extensions include recursion (``(?R)``, ``(?1)``, ``(?&name)``), and a
    pattern that recurses before it consumes a character grows ``regex``'s stack to 1.5 GB
    before it fails with ``MemoryError``, on the first memory it looks at.

    Args:
        pattern: the regular expression.
        budget: seconds of processor time all ``search`` calls together may take.

    Raises:
        UsageProblem: the pattern does not compile (here), or the budget is spent (``search``).
    """

    def __init__(self, pattern: str, budget: float = GREP_BUDGET) -> None:
        import re

        import regex

        try:
            re.compile(pattern)  # Python re syntax only (see above); cached by re
            self._regex = regex.compile(pattern, flags=regex.V0)
        except (re.error, regex.error, ValueError, OverflowError, RecursionError, MemoryError) as err:
            from memcli.text.secrets import shown

            raise UsageProblem(f"invalid regular expression {shown(pattern, 60)}: {err}",
                               hint="check the pattern (Python re syntax)") from None
        self._budget = budget
        self._deadline = time.process_time() + budget

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in ``text``.

        Raises:
            UsageProblem: the query's budget is spent.
        """
        left = self._deadline - time.process_time()
        try:
            if left <= 0:
                raise TimeoutError
            return self._regex.search(text, timeout=left) is not None
        except TimeoutError:
            raise UsageProblem(f"the regular expression took too long (over {self._budget:g} s) and was stopped",
                               hint="simplify it, e.g. avoid nested quantifiers like (a+)+") from None
        except (MemoryError, RecursionError):
            raise UsageProblem("the regular expression cannot be run: matching it ran out of memory",
                               hint="simplify it, e.g. avoid nested quantifiers like (a+)+") from None


def _haystack(memory: Memory) -> str:
    return " ".join([memory.text, memory.subject or "", *memory.tags]).casefold()


def _tiebreak(hit: Hit) -> tuple:
    return (-hit.score, -hit.memory.importance, -(hit.memory.updated_at.timestamp() if hit.memory.updated_at else 0))


class ScanRetriever:
    """Search a list of memories in memory.

    Args:
        memories: every loaded memory; filters are applied per query.
    """

    def __init__(self, memories: list[Memory]) -> None:
        self.memories = memories

    def search(self, query: Query) -> list[Hit]:
        """See :class:`memcli.index.Retriever`.

        Raises:
            UsageProblem: ``grep`` mode with a regular expression that does not compile or
                takes over ``GREP_BUDGET`` seconds.
        """
        pool = [m for m in self.memories if passes(m, query)]
        if query.mode == "grep":
            hits = self._grep(pool, query.text, query.served)
        elif not query.text.strip():
            return [Hit(m, 0.0, "all") for m in sorted(pool, key=browse_key(query))][: query.limit]
        elif query.mode == "exact":  # every word in the text, as written (the index's exact tier, roughly)
            terms = query.text.casefold().split()
            return [Hit(m, 1.0, "exact") for m in sorted(pool, key=browse_key(query))
                    if all(t in m.text.casefold() for t in terms)][: query.limit]
        else:
            hits = self._match(pool, query.text, fuzzy_only=query.mode == "fuzzy")
        return sorted(hits, key=_tiebreak)[: query.limit]

    def count(self, query: Query) -> int:
        """See :class:`memcli.index.Retriever`."""
        return sum(1 for m in self.memories if passes(m, query))

    @staticmethod
    def _grep(pool: list[Memory], pattern: str, served: Callable[[list[str]], list[str]] | None) -> list[Hit]:
        grep = Grep(pattern)
        texts = [m.text for m in pool]
        if served is not None:
            texts = served(texts)
        return [Hit(m, 1.0, "regex") for m, text in zip(pool, texts) if grep.search(text)]

    @staticmethod
    def _match(pool: list[Memory], text: str, fuzzy_only: bool) -> list[Hit]:
        from rapidfuzz import fuzz

        terms = text.casefold().split()
        hits = []
        for memory in pool:
            hay = _haystack(memory)
            if not fuzzy_only:
                found = sum(1 for t in terms if t in hay)
                if found:
                    coverage = found / len(terms)
                    hits.append(Hit(memory, coverage * 10, "exact" if found == len(terms) else "partial",
                                    {"coverage": coverage}))
                    continue
            ratio = max(fuzz.partial_ratio(t, hay) for t in terms)
            if ratio >= FUZZY_CUTOFF:
                hits.append(Hit(memory, ratio / 100, "fuzzy", {"fuzzy": ratio}))
        return hits
