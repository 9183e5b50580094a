"""Text preparation for the FTS5 index, and safe FTS5 queries built from user text.

The FTS5 table stores text that this module has already tokenized: normalised (NFKC,
case-folded), split into words, English words reduced to their Snowball (Porter2) stem
by PyStemmer, CJK runs as bigrams, joined by spaces; the table's own ``unicode61``
tokenizer then only splits on those spaces. Stemming here rather than with FTS5's
``porter`` wrapper keeps index and query identical and lets the vocabulary (used for
typo correction) be quoted back into a query exactly; Porter1 also stems ``deploy`` to
``deploi`` but ``deployments`` to ``deploy``, so one would not find the other.

Two gaps of ``unicode61`` are closed (measured with SQLite 3.40, SPEC.md section 5):

* ``unicode61`` keeps a whole run of Chinese, Japanese or Korean characters as one
  token, so a word inside it is never found. Before indexing (and before querying),
  every such run is rewritten as its overlapping character bigrams
  (``用户身份`` -> ``用户 户身 身份``); a run of one character stays as it is. Any CJK
  word of two or more characters is then a phrase of bigrams. (The ``trigram``
  tokenizer was measured too: it cannot find two-character words such as ``缓存``.)
* User text never reaches FTS5 query syntax raw: each query word becomes a quoted
  string (``"`` doubled), which FTS5 tokenizes as a phrase with the same tokenizer,
  so ``pre-edit``, ``src/hooks``, ``don't``, ``20.04``, ``AND``, ``NEAR(``, ``*`` and
  ``title:foo`` are all matched literally as words in order.

Identifiers with separators (``pre-edit``) thus match as adjacent words; English words
match in any form (``deploy`` finds ``deployed`` and ``deployments``, ``migrations``
finds ``migrate``).
"""

from __future__ import annotations

import re
import unicodedata

from memcli.text.recache import compiled

#: Han (with extensions A and compatibility), Hiragana, Katakana (with the prolonged
#: sound mark), Hangul syllables and jamo.
_CJK = ("\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
        "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
        "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f")  # Hangul
CJK_RUN = compiled(f"[{_CJK}]+")  # 2 ms to compile: the charset's 65,536-entry map
_TOKEN = compiled(r"[^\W_]+")
_ASCII_WORD = compiled(r"^[a-z]+$")
_STEMS: dict[str, str] = {}
_STEMMER = None


def stem(token: str) -> str:
    """The Snowball English stem of a lower-case ASCII word; other tokens unchanged (cached)."""
    global _STEMMER
    if not _ASCII_WORD.match(token) or len(token) < 3:
        return token
    cached = _STEMS.get(token)
    if cached is None:
        if _STEMMER is None:
            import Stemmer

            _STEMMER = Stemmer.Stemmer("english")
        cached = _STEMS[token] = _STEMMER.stemWord(token)
    return cached


_LATIN_MARKS = compiled("[\u0300-\u036f]")
_CAMEL = compiled(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def normalise(text: str) -> str:
    """The form both indexed text and queries go through: NFKC, case-folded, Latin
    accents dropped (``café`` -> ``cafe``, ``İstanbul`` -> ``istanbul``; marks of other
    scripts, such as Japanese dakuten, are kept)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    return unicodedata.normalize("NFC", _LATIN_MARKS.sub("", unicodedata.normalize("NFD", folded)))


def _camel_parts(text: str) -> str:
    """Spell out camelCase identifiers beside themselves: ``getUserName`` -> ``getUserName get User Name``."""
    return re.sub(r"\b[a-z]+(?:[A-Z][a-z0-9]*)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b",
                  lambda m: m.group(0) + " " + " ".join(_CAMEL.findall(m.group(0))), text)


def _bigrams(match: re.Match) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def tokens(text: str) -> list[str]:
    """The index tokens of a text, in order: stems, numbers, CJK bigrams."""
    return [stem(t) for t in _TOKEN.findall(CJK_RUN.sub(_bigrams, normalise(_camel_parts(text))))]


def prepare(text: str) -> str:
    """The text as it is stored in the FTS5 table: its tokens joined by spaces."""
    return " ".join(tokens(text))


#: Bumped whenever :func:`prepare` gives other tokens for some text (see :func:`fingerprint`).
REVISION = 1


def fingerprint() -> str:
    """What the tokens of :func:`prepare` depend on: this module's :data:`REVISION`, Python's
    Unicode tables (``unicodedata.unidata_version``) and the stemmer's version. The index's
    FTS5 table keeps no copy of what it was given, so a row is removed by giving FTS5 the same
    tokens again (``memcli.index.db``): when this changes, the table is filled again."""
    import Stemmer

    return f"{REVISION} unicode {unicodedata.unidata_version} stemmer {Stemmer.version()}"


def has_cjk(text: str) -> bool:
    """True when the text holds any Chinese, Japanese or Korean character."""
    return CJK_RUN.search(text) is not None


def surface_words(text: str) -> list[str]:
    """The words of an already normalised text as written (not stemmed, CJK runs whole)."""
    return _TOKEN.findall(text)


def match_expression(groups: list[list[str]], operator: str = "AND") -> str:
    """An FTS5 MATCH expression: each group is OR-ed alternatives, groups joined by ``operator``.

    Args:
        groups: per query word, the quoted alternatives (its phrases, or vocabulary terms).
        operator: ``AND`` (every word) or ``OR`` (any word).
    """
    parts = []
    for alternatives in groups:
        unique = list(dict.fromkeys(alternatives))
        parts.append(unique[0] if len(unique) == 1 else "(" + " OR ".join(unique) + ")")
    return f" {operator} ".join(parts)


def quote_term(term: str) -> str:
    """A vocabulary term (already tokenized) as a quoted FTS5 string."""
    return '"' + term.replace('"', '""') + '"'
