"""Look-alike letters folded to the ASCII ones they imitate, for the secret gate's scan.

A token typed with a Cyrillic ``р`` (U+0440) in ``ghр_…``, or a Greek ``ο`` in its body,
looks like the real one to a person and works as a paste-able credential for whoever reads
it back, but no rule written for ASCII matches it.  :func:`fold` maps such a character to its
ASCII prototype, as Unicode Technical Standard #39 ("Unicode Security Mechanisms", section 4,
the *skeleton* of a string) does with its ``confusables.txt`` table.

The table is the one the ``confusable_homoglyphs`` package (PyPI, MIT) builds from
``confusables.txt``; it is loaded on the first character that may be in it (about 35 ms,
once per process), never for ASCII text, CJK ideographs, kana, Hangul or symbols and emoji.
Only targets that are ASCII letters, digits, ``_`` or ``-`` are kept (what tokens are made
of), so a character confusable only with other non-ASCII ones is left as it is.
"""

from __future__ import annotations

import re

_TARGET_RE = re.compile(r"[A-Za-z0-9_-]+")
#: Scripts with no ASCII look-alike in the table, by block: CJK ideographs and radicals,
#: kana, bopomofo, Hangul, and the planes past the BMP's ideographs.
_NO_LATIN_LOOKALIKE = ((0x2E80, 0x2FDF), (0x3040, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x10FFFF))
_FOLDS: dict[str, str] = {}  # char -> its ASCII fold ("" when none), filled as characters are met


def candidate(ch: str) -> bool:
    """Whether ``ch`` (one character, already NFKC) may have an ASCII look-alike: a non-ASCII
    letter, digit or dash/connector outside the scripts that have none.  Cheap; no table."""
    if ch.isascii():
        return False
    code = ord(ch)
    if any(lo <= code <= hi for lo, hi in _NO_LATIN_LOOKALIKE):
        return False
    return ch.isalnum() or ch in "\u2010\u2011\u2012\u2013\u2212"  # hyphens, figure and en dash, minus


def fold(ch: str) -> str:
    """The ASCII prototype of ``ch`` (``"р"`` -> ``"p"``, ``"О"`` -> ``"O"``, ``"ǁ"`` -> ``"ll"``), or ``ch``.

    Args:
        ch: one character, already NFKC-normalised (full-width forms are ASCII by then).

    Returns:
        One or more ASCII characters of ``[A-Za-z0-9_-]``, or ``ch`` itself when the table
        has no such look-alike.  When it lists several, one of the same case as ``ch`` is
        preferred, then a letter over a digit, then the shortest.
    """
    if not candidate(ch):
        return ch
    done = _FOLDS.get(ch)
    if done is None:
        from confusable_homoglyphs.confusables import is_confusable

        found = is_confusable(ch, greedy=True, preferred_aliases=[]) or []
        targets = [g["c"] for entry in found for g in entry["homoglyphs"]
                   if g["c"].isascii() and _TARGET_RE.fullmatch(g["c"])]
        upper = ch.isupper()
        targets.sort(key=lambda t: (t.isupper() != upper if t.isalpha() else True, not t.isalpha(), len(t), t))
        done = _FOLDS[ch] = targets[0] if targets else ""
    return done or ch
