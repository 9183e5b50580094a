"""Literal screens: skip a large regular expression on a text that holds none of the words
every one of its matches must contain.

CPython's ``re`` tries each alternative of a pattern such as ``\\bignore\\s+…|\\byou\\s+are
\\s+now\\b|…`` at every position of the text, and with ``IGNORECASE`` and a ``\\b`` in front
of each it has no fast way to skip a position: 80 alternatives cost about 0.3 ms on a text
of 120 characters, more than the rest of a context line. A :class:`Screen` reads, once, the
literal runs that each alternative requires (``ignore`` or ``disregard`` …, then
``instructions`` or ``rules`` …), and answers with ``in`` tests on the text's case fold
whether the pattern *can* match; only then does the caller run it. It is a necessary
condition, never a sufficient one: ``may_match(text)`` is False only when no alternative
can match, so a screened search finds exactly what the unscreened one finds
(``tests/test_literals.py`` checks it on generated texts).

Case: the words are compared after folding both sides the way ``re`` compares a literal
under ``IGNORECASE`` (the simple lower-case mapping, and the extra equivalences of
``re._casefix`` such as ``ı``/``i`` and ``ſ``/``s``), so a case-insensitive match is never
missed; a case-sensitive pattern is screened case-insensitively, which only lets more
texts through. An alternative without a usable literal (a character class, ``\\d{6}``) is
kept in a small remainder pattern that runs on every text.

What a pattern requires is read from ``re``'s own parser (``re._parser``); an interpreter
without it gives a screen that lets every text through.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any  # a parsed item's argument: a tuple or a re._parser.SubPattern, by its op

#: Bumped whenever what :func:`required` finds changes, so that no cached screen of an older
#: memcli is used.
VERSION = 1
#: A required literal shorter than this (after folding) does not screen well ("<", "to"):
#: its alternative goes to the remainder, unless a longer literal of it is found. Two
#: characters are enough for a word with a letter outside ASCII (``忽略``, ``無視``).
MIN_WORD = 3


def _usable(word: str) -> bool:
    return len(word) >= MIN_WORD or (len(word) == MIN_WORD - 1 and not word.isascii())


def _fold_table() -> dict[int, int | None]:
    """Code point -> its class representative under ``re``'s extra case equivalences, and the
    combining dot above (U+0307) deleted: ``str.lower`` turns ``İ`` into ``i`` + U+0307 where
    ``re`` lowers it to ``i``, the only character whose full and simple lower case differ."""
    try:
        from re import _casefix  # type: ignore[attr-defined]

        extra: dict[int, tuple[int, ...]] = _casefix._EXTRA_CASES
    except (ImportError, AttributeError):
        extra = {}
    parent: dict[int, int] = {}

    def root(c: int) -> int:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for low, others in extra.items():
        for other in others:
            a, b = root(low), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    table: dict[int, int | None] = {c: root(c) for c in parent if root(c) != c}
    table[0x307] = None
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """``text`` folded as the screen compares it (see the module docstring)."""
    return text.lower().translate(_FOLD)


def screen(patterns: Iterable[str], flags: int = 0) -> Screen:
    """The :class:`Screen` of ``patterns`` (the alternatives of the pattern the caller runs,
    ``"|".join(f"(?:{p})" …)``, compiled with ``flags``), read from the machine's cache of
    compiled patterns when an earlier process made it (``text.recache.kept``).

    Raises:
        re.error: a pattern is invalid.
    """
    from memcli.text.recache import kept

    patterns, flags = tuple(patterns), int(flags)
    found = kept(f"screen{VERSION}\0{flags}\0" + "\0".join(patterns), lambda: _split(patterns, flags))
    if not _sound(found):  # a damaged cache entry: made again here
        found = _split(patterns, flags)
    needs, rest = found
    return Screen(needs, rest, flags)


def _sound(found: object) -> bool:
    """Whether ``found`` has the shape :func:`_split` gives."""
    if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], tuple)
            and isinstance(found[1], tuple) and all(isinstance(p, str) for p in found[1])):
        return False
    return all(isinstance(sets, tuple) and sets and all(
        isinstance(words, tuple) and words and all(isinstance(w, str) and w for w in words) for words in sets)
        for sets in found[0])


def _split(patterns: tuple[str, ...], flags: int) -> tuple[tuple, tuple[str, ...]]:
    needs, rest = [], []
    for pattern in patterns:
        sets = required(pattern, flags)
        if sets is None:
            rest.append(pattern)
        else:
            needs.append(sets)
    return tuple(needs), tuple(rest)


class Screen:
    """Whether any of a pattern's alternatives can match a text, from the literals each one
    requires (made by :func:`screen`).

    Args:
        needs: per alternative with literals, the word sets it requires (:func:`required`).
        rest: the alternatives without (run as one pattern on every text).
        flags: the flags the caller compiles the alternatives with.
    """

    def __init__(self, needs: tuple[tuple[tuple[str, ...], ...], ...], rest: tuple[str, ...], flags: int) -> None:
        from memcli.text.recache import compiled

        self.needs = needs
        self.rest = compiled("|".join(f"(?:{p})" for p in rest), flags) if rest else None

    def may_match(self, text: str) -> bool:
        """False only when no pattern can match ``text``."""
        folded = fold(text)
        for sets in self.needs:  # plain loops: twice as fast as all() over any() here
            for words in sets:
                for word in words:
                    if word in folded:
                        break
                else:
                    break  # none of this set: this alternative cannot match
            else:
                return True
        return self.rest is not None and self.rest.search(text) is not None


def required(pattern: str, flags: int = 0) -> tuple[tuple[str, ...], ...] | None:
    """The word sets every match of ``pattern`` contains: for each set, one of its words
    (folded) occurs in the match; None when no set has words of ``MIN_WORD`` characters or
    more (or ``re``'s parser is not there).

    Raises:
        re.error: ``pattern`` is invalid.
    """
    try:
        from re import _parser  # type: ignore[attr-defined]
    except ImportError:
        return None
    parsed = _parser.parse(pattern, flags)
    try:
        sets = [s for s in _sequence(list(parsed.data)) if all(map(_usable, s))]
    except (AttributeError, TypeError, ValueError):  # internals not as expected
        return None
    if not sets:
        return None
    sets.sort(key=lambda s: -min(map(len, s)))
    return tuple(tuple(sorted(s)) for s in sets)


def _sequence(items: list) -> list[frozenset[str]]:
    """The word sets a sequence of parsed items requires: each run of literals, and what each
    required item requires."""
    from re import _constants as c  # type: ignore[attr-defined]

    out: list[frozenset[str]] = []
    run: list[str] = []
    for op, av in items:
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        if run:
            out.append(frozenset((fold("".join(run)),)))
            run = []
        best = _item(op, av)
        if best is not None:
            out.append(best)
    if run:
        out.append(frozenset((fold("".join(run)),)))
    return out


def _best(sets: list[frozenset[str]]) -> frozenset[str] | None:
    """The set of ``sets`` whose shortest word is longest (None for none)."""
    return max(sets, key=lambda s: min(map(len, s)), default=None)


def _item(op: object, av: Any) -> frozenset[str] | None:
    """One word set a parsed item (not a literal) requires, or None."""
    from re import _constants as c  # type: ignore[attr-defined]

    if op is c.SUBPATTERN:
        return _best(_sequence(list(av[3].data)))
    if op is c.ATOMIC_GROUP:
        return _best(_sequence(list(av.data)))
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        low, _high, body = av
        return _best(_sequence(list(body.data))) if low >= 1 else None
    if op is c.BRANCH:
        words: set[str] = set()
        for alternative in av[1]:
            found = _best(_sequence(list(alternative.data)))
            if found is None:
                return None
            words |= found
        return frozenset(words)
    return None  # a class, an anchor, a lookaround, a group reference: nothing required
