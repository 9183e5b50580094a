"""Possible contradictions between two memories of a scope: "Enable strict mode" against
"Disable strict mode" (SPEC.md section 3, gate 5; issue 14).

Two texts contradict each other, for this check, when they say the same thing once each
opposite word is replaced by its pair's first word and negations are dropped, but the
number of flips (an opposite word, a negation) differs in parity: "always use X" and
"never use X" flip once against zero times; "don't disable X" and "enable X" do not
contradict. A text of several clauses (split at ``;``, ``,`` and ``.``) is also compared clause
by clause: "Never rebase main; always merge." against "Always rebase main; never merge." flips
twice each, but each clause once against zero (stop 34: no warning). The opposites are data
(:data:`OPPOSITES`), in English and Chinese.

Pure: strings in, a reason or None out (the patterns compiled once per machine, ``text.recache``).
"""

from __future__ import annotations

import re

#: Pairs of opposite words; the first of each pair is the canonical form.
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("enable", "disable"), ("enabled", "disabled"), ("enables", "disables"),
    ("always", "never"), ("allow", "forbid"), ("allow", "deny"), ("allowed", "forbidden"),
    ("allowed", "denied"), ("include", "exclude"), ("on", "off"), ("start", "stop"),
    ("use", "avoid"), ("must", "mustn't"), ("required", "optional"), ("with", "without"),
    ("add", "remove"), ("turn on", "turn off"), ("opt in", "opt out"), ("true", "false"),
    ("yes", "no"), ("before", "after"), ("show", "hide"), ("accept", "reject"),
    ("启用", "禁用"), ("开启", "关闭"), ("打开", "关闭"), ("允许", "禁止"), ("总是", "从不"),
    ("总是", "永远不"), ("要", "不要"), ("使用", "避免"), ("包含", "排除"),
)
#: Words that negate what follows; dropped before comparing, counted as one flip each.
NEGATIONS = ("not", "don't", "do not", "doesn't", "does not", "no longer", "cannot", "can't", "isn't", "aren't",
             "won't", "shouldn't", "should not", "不", "别", "勿")
#: rapidfuzz ratio (0-100) the canonical texts must reach to be "the same statement".
SAME = 90

_WORD = r"(?<![\w'])({})(?![\w'])"


def _canonical(text: str) -> tuple[str, int]:
    """``(text with opposites canonical and negations removed, number of flips)``."""
    flat = " ".join(text.lower().replace("’", "'").split())
    flips = 0
    for pattern, replacement in _patterns():
        flat, count = pattern.subn(replacement, flat)
        flips += count
    return " ".join(flat.split()), flips


_PATTERNS: list[tuple[re.Pattern[str], str]] = []


def _patterns() -> list[tuple[re.Pattern[str], str]]:
    """The negations (replaced by a space), then the opposites (by their pair's first word),
    longest first, compiled once (``text.recache``: once per machine)."""
    if not _PATTERNS:
        from memcli.text.recache import compiled

        for word in sorted(NEGATIONS, key=len, reverse=True):
            _PATTERNS.append((compiled(re.escape(word) if not word.isascii() else _WORD.format(re.escape(word))),
                              " "))
        for first, second in sorted(OPPOSITES, key=lambda pair: -len(pair[1])):
            _PATTERNS.append((compiled(re.escape(second) if not second.isascii()
                                       else _WORD.format(re.escape(second))), first))
    return _PATTERNS


_CLAUSE = re.compile(r"[;,.。；，]+")


def _clauses(text: str) -> list[tuple[str, int]]:
    """:func:`_canonical` of each clause of ``text`` (split at ``;``, ``,``, ``.``), empty ones left out."""
    return [_canonical(part) for part in _CLAUSE.split(text) if part.strip()]


def contradiction(text: str, other: str) -> str | None:
    """Why ``text`` may contradict ``other`` (``"enable / disable"``), or None.

    Args:
        text, other: two memory texts (any case and spacing).

    Returns:
        The words that differ, ``mine / theirs``, when the two say one thing and its
        opposite; None when they agree or are about different things.
    """
    from rapidfuzz import fuzz

    mine, flips = _canonical(text)
    theirs, other_flips = _canonical(other)
    if fuzz.ratio(mine, theirs) < SAME:
        return None
    if flips % 2 == other_flips % 2:
        parts, other_parts = _clauses(text), _clauses(other)
        if len(parts) < 2 or len(parts) != len(other_parts) or not any(
                a[1] % 2 != b[1] % 2 for a, b in zip(parts, other_parts)) or any(
                fuzz.ratio(a[0], b[0]) < SAME for a, b in zip(parts, other_parts)):
            return None
    words, other_words = text.lower().split(), other.lower().split()
    only_mine = [w for w in words if w not in other_words]
    only_theirs = [w for w in other_words if w not in words]
    if not only_mine and not only_theirs:  # Chinese: no spaces between words
        return "one says the opposite of the other"
    return f"{' '.join(only_mine) or '—'} / {' '.join(only_theirs) or '—'}"
