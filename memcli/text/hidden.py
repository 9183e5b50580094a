"""Hidden text: characters a person cannot see but an agent reads (SPEC.md section 8).

Three uses, one definition of "hidden":

* :func:`find_hidden` is the write gate's check: the first invisible character that a memory
  may not hold, with where it is (never the text around it).
* :func:`strip_hidden` is the read side: removes them all, for text shown to an agent.
* :func:`scan_view` is what the secret gate scans: the text with hidden characters, ANSI
  escapes, controls and combining marks removed and each character NFKC-normalised
  (Unicode UAX #15), with a map back to the original offsets, so that a token split by a
  zero-width space or written in full-width letters (``ＡＫＩＡ…``) is found, and a
  secret's span in the original text covers the characters hidden inside it.

Hidden means (Unicode 15 character properties):

* every format character (general category ``Cf``): zero-width space, joiners and
  non-joiner, direction marks, bidirectional embeddings, overrides and isolates (UAX #9,
  "Trojan Source", CVE-2021-42574), word joiner, invisible operators, soft hyphen, the BOM,
  interlinear annotation marks, and the tag characters U+E0000-U+E007F ("ASCII smuggling":
  each tag mirrors an ASCII character and renders as nothing);
* variation selectors U+FE00-U+FE0F and U+E0100-U+E01EF, the combining grapheme joiner
  U+034F, the Mongolian free variation selectors U+180B-U+180F, and the Hangul fillers
  U+115F, U+1160, U+3164, U+FFA0 (letters that draw nothing).

Allowed at write, as emoji need them (Unicode TS #51): a zero-width joiner between two
emoji (``👩‍💻``), and VS15/VS16 (U+FE0E, U+FE0F) right after an emoji or a keycap base
(``❤️``, ``1️⃣``). Everything else hidden is refused.
"""

from __future__ import annotations

import unicodedata

from memcli.text import confusables
from memcli.text.recache import compiled

#: Every hidden character in one class: the Cf ranges of Unicode 15 (U+00AD, U+0600-0605,
#: U+061C, U+06DD, U+070F, U+0890-0891, U+08E2, U+180E, U+200B-200F, U+202A-202E,
#: U+2060-2064, U+2066-206F, U+FEFF, U+FFF9-FFFB, U+110BD, U+110CD, U+13430-1343F,
#: U+1BCA0-1BCA3, U+1D173-1D17A, U+E0000-E007F) and the extras above, written out so that
#: importing this module costs nothing.
_HIDDEN_RE = compiled(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
#: ANSI (ECMA-48) escapes, as agents/context_block.py removes them at read.
_ANSI_RE = compiled(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -~]?)")
_CONTROL_RE = compiled(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ZWJ, _VS15, _VS16, _KEYCAP = 0x200D, 0xFE0E, 0xFE0F, 0x20E3
_KEYCAP_BASES = frozenset("0123456789#*")


class HiddenChar:
    """An invisible character refused at write: its code point, name, 1-based line and column."""

    __slots__ = ("code", "line", "column")

    def __init__(self, code: int, line: int, column: int) -> None:
        self.code = code
        self.line = line
        self.column = column

    @property
    def name(self) -> str:
        """``U+200B ZERO WIDTH SPACE`` (the Unicode name, or ``TAG`` for the tag block)."""
        if 0xE0000 <= self.code <= 0xE007F:
            label = "TAG CHARACTER"
        else:
            label = unicodedata.name(chr(self.code), "FORMAT CHARACTER")
        return f"U+{self.code:04X} {label}"

    def __str__(self) -> str:
        return f"{self.name} at line {self.line}, column {self.column}"


def _emoji(ch: str) -> bool:
    """Whether ``ch`` is an emoji (Extended_Pictographic, or a skin-tone modifier)."""
    import regex  # already a dependency; loaded only when text holds a hidden character

    return regex.match(r"[\p{Extended_Pictographic}\p{Emoji_Modifier}]", ch) is not None


def _allowed_in_emoji(text: str, i: int) -> bool:
    """Whether the hidden character at ``text[i]`` is part of an emoji sequence (TS #51)."""
    code = ord(text[i])
    before = text[i - 1] if i else ""
    if code in (_VS15, _VS16):
        return bool(before) and (_emoji(before) or before in _KEYCAP_BASES)
    if code == _ZWJ and before and i + 1 < len(text):
        if ord(before) in (_VS16,) and i >= 2:
            before = text[i - 2]
        return _emoji(before) and _emoji(text[i + 1])
    return False


def find_hidden(text: str) -> HiddenChar | None:
    """The first invisible character of ``text`` that a memory may not hold, or None.

    Args:
        text: a value to be written (memory text, a label); columns count code points.

    Returns:
        A :class:`HiddenChar` (never the text around it), or None when the text is clean.
    """
    for m in _HIDDEN_RE.finditer(text):
        if _allowed_in_emoji(text, m.start()):
            continue
        line = text.count("\n", 0, m.start()) + 1
        return HiddenChar(ord(m.group()), line, m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1)
    return None


def strip_hidden(text: str) -> str:
    """``text`` without any hidden character (for text shown to an agent or a person)."""
    return _HIDDEN_RE.sub("", text)


def printable(text: str) -> str:
    """``text`` as a terminal or a rule file may show it: ANSI escape sequences, C0 and C1
    control characters (but tab and newline; a carriage return becomes a newline) and every
    hidden character (:func:`strip_hidden`) removed. Plain clean ASCII is returned as it is."""
    if text.isascii() and "\x1b" not in text and not _CONTROL_RE.search(text):
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return strip_hidden(_CONTROL_RE.sub("", _ANSI_RE.sub("", text)))


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds any hidden character, allowed emoji joiners included."""
    return _HIDDEN_RE.search(text) is not None


def scan_view(text: str, *, fold: bool = False) -> tuple[str, list[int] | None]:
    """The text the secret gate scans, and a map from its offsets to ``text``'s.

    Hidden characters, ANSI escapes, C0/C1 controls (but tab and newline, a carriage
    return becomes a newline) and combining marks (categories Mn, Me) are dropped; every
    other character is replaced by its NFKC form (full-width ``Ａ`` -> ``A``, ``ﬁ`` -> ``fi``).
    With ``fold``, each look-alike letter is then replaced by the ASCII one it imitates
    (Cyrillic ``р`` -> ``p``; :func:`memcli.text.confusables.fold`, UTS #39 skeleton).

    Returns:
        ``(view, offsets)``: ``offsets[j]`` is the index in ``text`` of the character that
        produced ``view[j]``, with ``offsets[len(view)] == len(text)``; ``offsets`` is None
        when the view is ``text`` itself (the common case: plain ASCII or already clean).
    """
    if text.isascii():
        if "\x1b" not in text and not _CONTROL_RE.search(text):
            return text, None
    elif (unicodedata.is_normalized("NFKC", text) and not _HIDDEN_RE.search(text)
          and not _CONTROL_RE.search(text) and not any(unicodedata.combining(c) for c in text)
          and not (fold and any(map(confusables.candidate, text)))):
        return text, None
    drop = [False] * len(text)
    for m in _ANSI_RE.finditer(text):
        for k in range(m.start(), m.end()):
            drop[k] = True
    out: list[str] = []
    offsets: list[int] = []
    normalize, category = unicodedata.normalize, unicodedata.category
    for i, ch in enumerate(text):
        if drop[i]:
            continue
        if ch == "\r":
            ch = "\n"
        elif ch.isascii():
            if _CONTROL_RE.match(ch):
                continue
        elif _HIDDEN_RE.match(ch) or _CONTROL_RE.match(ch) or category(ch) in ("Mn", "Me"):
            continue
        else:
            ch = normalize("NFKC", ch)
            ch = "".join(confusables.fold(c) if fold else c for c in ch if category(c) not in ("Mn", "Me"))
        out.append(ch)
        offsets.extend([i] * len(ch))
    offsets.append(len(text))
    return "".join(out), offsets


def original_span(offsets: list[int] | None, start: int, end: int) -> tuple[int, int]:
    """Map a ``[start, end)`` span of :func:`scan_view`'s view back to the original text.

    The span covers every original character from the first to the last one that
    produced it, hidden characters between them included.
    """
    if offsets is None:
        return start, end
    return offsets[start], (offsets[end - 1] + 1 if end > start else offsets[start])
