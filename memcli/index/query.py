"""Query analysis for ranked search: stop words, and unsegmented CJK split into words.

A ranked query is split into :class:`Word` objects before it is matched (SPEC.md section 5):

* Words are the query's white-space words, normalised as the index is
  (:func:`memcli.index.tokenize.normalise`); a word that mixes scripts is cut where a CJK
  run begins or ends (``TLS证书`` -> ``tls``, ``证书``).
* Stop words never make a match on their own: when the query has any content word, its
  stop words are left out of matching altogether; a query of stop words only (``AND``,
  ``don't``) is matched as typed, so that it still finds its literal text. The lists are
  data files beside this module (``words/stop-en.txt``, ``stop-zh.txt``, ``stop-ja.txt``),
  each naming its published source: the Snowball English list, and a selection from Stopwords ISO
  for Chinese and Japanese. Stop words are removed from queries only, never from the index.
* A few short forms match their long form and back (``db`` and ``database``, ``k8s`` and
  ``kubernetes``: ``words/abbreviations.txt``), as exact matches.
* A CJK run is split into words (SPEC.md section 5, "an unsegmented Chinese query is split
  into words"): stop words are cut out of it first (longest first; single particles such
  as 的, 了, 吗), then each remaining piece is split at every character bigram that the
  index has never seen (the vocabulary decides, through ``known``): such a bigram spans a
  word boundary of the query, since no memory holds it. So ``证书续期`` becomes ``证书`` and
  ``续期`` (``书续`` occurs nowhere) and finds "TLS 证书每 60 天自动续期一次". A piece of one
  character left over is dropped when the query has other content. Without ``known``, a
  piece stays whole. This scheme was measured against jieba and rjieba (bench/README.md,
  "CJK segmentation"): the same recall on the evaluation set, no start-up cost, no change to
  the index, and it serves Japanese too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from memcli.index.tokenize import CJK_RUN, normalise, stem, tokens

_DATA = Path(__file__).with_name("words")
_LISTS: dict[str, frozenset[str]] = {}
_EDGE = "\"'`.,;:!?()[]{}<>«»“”‘’…"


def stop_words(language: str) -> frozenset[str]:
    """The stop words of ``en``, ``zh`` or ``ja`` (normalised), read once from ``words/stop-*.txt``.

    Raises:
        OSError: the data file is missing (a broken installation).
    """
    found = _LISTS.get(language)
    if found is None:
        found = _LISTS[language] = frozenset(normalise(w) for w in _lines(f"stop-{language}.txt"))
    return found


def prompt_words() -> frozenset[str]:
    """Stems of the words of everyday prompts that say what to do, not what about
    (``words/prompt-en.txt``: ``add``, ``fix``, ``thanks``), read once; for the prompt hook only."""
    found = _LISTS.get("prompt")
    if found is None:
        found = _LISTS["prompt"] = frozenset(stem(normalise(w)) for w in _lines("prompt-en.txt"))
    return found


def _lines(name: str) -> list[str]:
    lines = (_DATA / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


_ABBREVIATIONS: dict[str, list[str]] = {}
_CJK_STOPS: tuple[frozenset[str], int] | None = None


def other_forms(word: str) -> list[str]:
    """The other side of ``word`` in ``words/abbreviations.txt`` (``db`` -> ``database``), or []."""
    if not _ABBREVIATIONS:
        for line in _lines("abbreviations.txt"):
            short, _, long = (normalise(p.strip()) for p in line.partition("="))
            _ABBREVIATIONS.setdefault(short, []).append(long)
            _ABBREVIATIONS.setdefault(long, []).append(short)
    return _ABBREVIATIONS.get(word.strip(_EDGE), [])


class Word:
    """One query word.

    Attributes:
        text: the normalised word (for a CJK word, the characters of one segment).
        stop: a stop word (English, Chinese or Japanese list).
        cjk: made of CJK characters.
        weak: a single CJK character left over from splitting (dropped when other words remain).
    """

    __slots__ = ("text", "stop", "cjk", "weak")

    def __init__(self, text: str, stop: bool = False, cjk: bool = False, weak: bool = False) -> None:
        self.text = text
        self.stop = stop
        self.cjk = cjk
        self.weak = weak

    @property
    def tokens(self) -> list[str]:
        """The index tokens of the word (stems, CJK bigrams)."""
        return tokens(self.text)


def _english_stop(part: str) -> bool:
    words = stop_words("en")
    bare = part.strip(_EDGE).replace("\u2019", "'")
    if not bare or bare in words:
        return bool(bare)
    pieces = re.findall(r"[^\W_]+", bare)
    return bool(pieces) and all(p in words for p in pieces)


def _cjk_stop_spans(run: str) -> list[bool]:
    """Per character of ``run``: inside a stop word (longest match first, left to right)."""
    global _CJK_STOPS
    if _CJK_STOPS is None:
        both = stop_words("zh") | stop_words("ja")
        _CJK_STOPS = (both, max((len(w) for w in both), default=1))
    lists, longest = _CJK_STOPS
    marks = [False] * len(run)
    i = 0
    while i < len(run):
        for size in range(min(longest, len(run) - i), 0, -1):
            if run[i:i + size] in lists:
                marks[i:i + size] = [True] * size
                i += size
                break
        else:
            i += 1
    return marks


def _split_piece(piece: str, known: Callable[[str], bool] | None) -> list[Word]:
    """One stop-free CJK piece as words: chains of bigrams the index knows (see the module)."""
    if len(piece) == 1:
        return [Word(piece, cjk=True, weak=True)]
    if known is None:
        return [Word(piece, cjk=True)]
    kept = [known(piece[i:i + 2]) for i in range(len(piece) - 1)]
    if not any(kept):
        return [Word(piece, cjk=True)]  # nothing the index knows: it will fall back to a substring
    covered = [False] * len(piece)
    words, start = [], None
    for i, ok in enumerate(kept + [False]):
        if ok:
            covered[i] = covered[i + 1] = True
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            words.append((start, Word(piece[start:i + 1], cjk=True)))
            start = None
    # characters no known bigram covers stay a word of their own (one no memory holds): a
    # query about 客户退款流程 where only 流程 is known must not read as an exact match on 流程
    run = ""
    for i, char in enumerate(piece + " "):
        if i < len(piece) and not covered[i]:
            run += char
        elif run:
            words.append((i - len(run), Word(run, cjk=True, weak=len(run) == 1)))
            run = ""
    return [w for _, w in sorted(words, key=lambda pair: pair[0])]


def _cjk_words(run: str, known: Callable[[str], bool] | None) -> list[Word]:
    marks = _cjk_stop_spans(run)
    if all(marks):
        return [Word(run, stop=True, cjk=True)]
    words: list[Word] = []
    piece = ""
    for char, stop in zip(run + " ", marks + [True]):
        if not stop:
            piece += char
        elif piece:
            words += _split_piece(piece, known)
            piece = ""
    return words


def analyse(query: str, known: Callable[[str], bool] | None = None) -> list[Word]:
    """The words of a ranked query, in order (see the module docstring).

    Args:
        query: the user's query text.
        known: ``known(bigram)`` is true when the index holds that CJK bigram; used to split
            unsegmented CJK text. None keeps each stop-free CJK piece whole.

    Returns:
        Every word, stop words marked; single leftover CJK characters are already dropped
        when the query has other content words.
    """
    words: list[Word] = []
    for chunk in normalise(query).split():
        at = 0
        for match in CJK_RUN.finditer(chunk):
            if match.start() > at:
                part = chunk[at:match.start()]
                words.append(Word(part, stop=_english_stop(part)))
            words += _cjk_words(match.group(0), known)
            at = match.end()
        if at < len(chunk):
            part = chunk[at:]
            words.append(Word(part, stop=_english_stop(part)))
    words = [w for w in words if w.tokens]
    if any(not w.stop and not w.weak for w in words):
        words = [w for w in words if not w.weak]
    return words


def content(words: list[Word]) -> tuple[list[Word], bool]:
    """The words that make matches, and whether the query was stop words only.

    A query with content words matches on those alone; one of stop words only matches on
    all of them, as typed (``AND``, ``don't``, ``什么``).
    """
    kept = [w for w in words if not w.stop]
    return (kept, False) if kept else (list(words), bool(words))
