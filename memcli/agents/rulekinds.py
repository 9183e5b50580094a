"""What one item of a rule file is: a memory of which category and importance, or not a memory. Pure.

``memcli import`` splits a rule file into items (``agents.rule_files.parse_markdown``: a bullet or
a paragraph each); this module reads one item with the cues of ``words/rule-lines.txt`` (data,
English and Chinese, with its sources):

* **Not a memory.** A sentence that introduces the file to the agent (``[boilerplate]``: "This
  file provides guidance to Claude Code when working with code in this repository.") and a
  sentence that only points at another file (a *pointer*: "See ``docs/architecture.md`` for
  details.", "@docs/specs/arch.md for full architecture details.", "- **Testing**: @docs/TESTING.md")
  are left out: they are true of every session, or say nothing but where to look, and as
  memories they would take the session-start slots of real rules. A pointer sentence names a
  file (an ``@import``, a Markdown link, a code span or word that looks like a path), starts
  with a ``[pointer]`` cue or with the ``@import`` itself (or ends with an import that a
  label or "… lives in" leads to), has at most :data:`POINTER_WORDS` words besides the names,
  no emphasis, and no ``[condition]`` word ("Read X *before* changing Y" is an instruction). An
  item made only of such sentences is skipped, with the reason; from a one-line item that also
  holds other sentences, only those are kept. (The ``@import`` itself is followed by the
  service, as Claude Code does.)
* **Category**, one of SPEC.md's: ``preference`` (rules and conventions: "Use pnpm", "Type hints
  on every public function", "NEVER commit secrets"), ``fact`` ("The API is a small Flask
  app"), ``decision`` ("We chose SQLite because …"), ``procedure`` (commands and steps: "Run
  ``make test``", "``pnpm dev`` - start the dev server"), ``glossary`` ("**Entry**: a single
  piece of content"), ``goal``. Each cue of a category's section that matches adds
  :data:`START_WEIGHT` (a ``^`` cue or anchored regular expression) or :data:`ANY_WEIGHT`; each
  cue of its ``heading`` section found in an enclosing heading adds :data:`HEADING_WEIGHT`. The
  highest total wins, ties in the order of :data:`ORDER`; with no cue at all (or only
  headings that disagree) the item is a ``preference``: a line of a rule file is a rule
  unless it reads otherwise; a table is then a ``fact`` (reference data).
* **Importance**: :data:`BASE_IMPORTANCE`; 4 with an ``[emphasis]`` cue in the item (all-caps
  MUST, NEVER, ALWAYS, DO NOT …; 必须, 禁止, 务必 …) or an ``[emphasis heading]`` cue in a
  heading ("## Important"); 5 with a ``[strong]`` cue (IMPORTANT, CRITICAL; 重要, 关键). Claude
  Code's own guidance names "IMPORTANT" and "YOU MUST" as the way to make a rule weigh more.

Cues are matched on the sentence with Markdown emphasis (``**``, ``__``) removed; a ``^`` cue
after a leading "IMPORTANT:" and a short bold or plain ``Label:`` ("**Formatting**: Follow
PEP 8" is matched as "Follow PEP 8").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The categories an item may get, in the order that breaks a tie.
ORDER = ("decision", "procedure", "glossary", "goal", "preference", "fact")
#: The category of an item no cue speaks for.
DEFAULT_CATEGORY = "preference"
BASE_IMPORTANCE = 3
START_WEIGHT, ANY_WEIGHT, HEADING_WEIGHT = 3, 2, 1
#: A pointer sentence has at most this many words besides the names of files.
POINTER_WORDS = 12
_DATA = Path(__file__).with_name("words") / "rule-lines.txt"
_CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")
_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@[^\s`]+")
_PATHLIKE = re.compile(r"(?<![\w@])(?:[\w.~-]*/[\w./*~-]*"
                       r"|[\w.-]+\.(?:md|mdc|markdown|txt|ya?ml|json|toml|rst))(?![\w])")
_EMPHASIS_MARKS = re.compile(r"\*\*|__|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")
_LEAD = re.compile(r"^(?:(?:IMPORTANT|CRITICAL|WARNING|NOTE|重要|注意)\s*[:：!！]\s*)?"
                   r"(?:[^\s:：`]{1,30}(?: [^\s:：`]{1,30}){0,3}\s*[:：]\s+)?")
_SENTENCE_END = re.compile(r"(?:(?<!e\.g)(?<!i\.e)(?<!\betc)(?<!\bvs)[.!?]+(?=\s)|[。！？]+)\s*")
#: Text before an ``@import`` that makes the sentence a pointer: it names where something is.
_TOWARDS = re.compile(r"(?:\b(?:in|at|under|from|see|into|to|by)|[:：\-—–→=>])\s*$", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_][\w'-]*|\d[\w.-]*|[\u3400-\u9fff]{1,2}")


@dataclass(frozen=True)
class Kind:
    """What an item is.

    Attributes:
        category: one of :data:`ORDER`; None when the item is not a memory.
        importance: 3–5 (module docstring).
        text: the text to keep (the item, or its sentences left after boilerplate and pointers).
        skipped: ``boilerplate`` or ``pointer`` when the item is not a memory, else None.
        cues: the sections whose cues decided (for ``--json`` and tests), in order.
    """

    category: str | None
    importance: int
    text: str
    skipped: str | None = None
    cues: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Cue:
    pattern: re.Pattern[str]
    start: bool
    regex: bool = False


def _compile(cue: str) -> _Cue:
    if cue.startswith("/") and cue.endswith("/") and len(cue) > 2:
        body = cue[1:-1]
        return _Cue(re.compile(body), body.startswith(("^", "(?i)^")), True)
    start = cue.startswith("^")
    cue = cue.lstrip("^")
    flags = 0 if cue.startswith("=") else re.IGNORECASE
    cue = cue.lstrip("=")
    if _CJK.search(cue):
        body = ".{0,20}?".join(re.escape(p.strip()) for p in cue.split("..."))
    else:
        parts = [r"\s+".join(re.escape(w) for w in p.split()) for p in cue.split("...")]
        body = r"(?:\s+\S+){0,10}?\s+".join(parts)
        if cue[:1].isalnum() or cue[:1] == "_":
            body = r"(?<![\w'])" + body
        if cue[-1:].isalnum():
            body += r"(?![\w])"
    return _Cue(re.compile(("^" if start else "") + body, flags), start)


@lru_cache(maxsize=1)
def sections() -> dict[str, tuple[_Cue, ...]]:
    """The cues of ``words/rule-lines.txt`` by section, compiled once.

    Raises:
        OSError: the data file is missing (a broken installation).
        re.error: a regular expression in it does not compile (a broken edit).
    """
    out: dict[str, list[_Cue]] = {}
    current = None
    for raw in _DATA.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1].strip(), [])
            continue
        if current is not None:
            current.append(_compile(line))
    return {name: tuple(cues) for name, cues in out.items()}


def _plain(text: str) -> str:
    """``text`` without Markdown emphasis marks, one line."""
    return " ".join(_EMPHASIS_MARKS.sub("", text).split())


def _lead_cut(text: str) -> str:
    """``text`` after an "IMPORTANT:" prefix and a short ``Label:`` (for ``^`` cues)."""
    cut = _LEAD.match(text)
    rest = text[cut.end():] if cut else text
    return rest if rest.strip() else text


def _matches(cue: _Cue, text: str, lead: str, raw: str = "") -> bool:
    """``cue`` in ``text`` (a ``^`` cue: at the start of ``lead`` or of ``text``; a regular
    expression also in ``raw``, the line with its Markdown marks)."""
    if cue.pattern.search(lead if cue.start else text) or (cue.start and cue.pattern.search(text)):
        return True
    return bool(raw) and cue.pattern.search(raw) is not None


def _any(section: str, text: str) -> bool:
    lead = _lead_cut(text)
    return any(_matches(cue, text, lead) for cue in sections().get(section, ()))


def _headings(tags: list[str]) -> str:
    return " ".join(tag.replace("-", " ") for tag in tags)


def split_sentences(text: str) -> list[str]:
    """The sentences of one line of Markdown (code spans and links are never split)."""
    masked = _LINK.sub(lambda m: "x" * len(m.group(0)), _CODE.sub(lambda m: "x" * len(m.group(0)), text))
    out, at = [], 0
    for end in _SENTENCE_END.finditer(masked):
        out.append(text[at:end.end()].strip())
        at = end.end()
    out.append(text[at:].strip())
    return [s for s in out if s]


def _references(text: str) -> tuple[str, bool]:
    """``text`` with the names of files taken out, and whether it named one."""
    found = False

    def gone(match: re.Match[str]) -> str:
        nonlocal found
        found = True
        return " "

    def code(match: re.Match[str]) -> str:
        inner = match.group(0).strip("`")
        return gone(match) if _PATHLIKE.search(inner) or inner.startswith("@") else match.group(0)

    text = _LINK.sub(gone, text)
    text = _CODE.sub(code, text)
    text = _IMPORT.sub(gone, text)
    text = _PATHLIKE.sub(gone, text)
    return text, found


def is_boilerplate(sentence: str) -> bool:
    """True for a sentence that introduces the rule file to the agent (``[boilerplate]``)."""
    return _any("boilerplate", _plain(sentence))


def is_pointer(sentence: str) -> bool:
    """True for a sentence that only sends the reader to another file (module docstring)."""
    plain = _plain(sentence)
    rest, named = _references(plain)
    if not named or emphasis(sentence) > BASE_IMPORTANCE or _any("condition", rest):
        return False
    words = len(_WORD.findall(rest))
    if words > POINTER_WORDS:
        return False
    lead = _lead_cut(plain).lstrip()
    if lead.startswith("@") or plain.lstrip().startswith("@"):
        return True
    imported = _IMPORT.search(plain)
    if imported and _TOWARDS.search(plain[:imported.start()]) and not plain[imported.end():].strip(" .;,"):
        return True  # "Shared rules live in @docs/shared.md", "Testing: @docs/TESTING.md"
    return _any("pointer", plain)


def emphasis(text: str, tags: list[str] | None = None) -> int:
    """The importance the emphasis of ``text`` (and of its headings, ``tags``) gives: 3, 4 or 5."""
    plain = _plain(text)
    if _any("strong", plain):
        return 5
    if _any("emphasis", plain) or (tags and _any("emphasis heading", _headings(tags))):
        return 4
    return BASE_IMPORTANCE


def category(text: str, tags: list[str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The category of a memory taken from a rule file, and the sections whose cues decided.

    Args:
        text: the item (Markdown).
        tags: slugs of its enclosing headings (``code-style``), outermost first.
    """
    raw = text.split("\n", 1)[0]
    plain = _plain(raw)
    lead = _lead_cut(plain)
    heads = _headings(tags or [])
    scores = dict.fromkeys(ORDER, 0)
    for name in ORDER:
        for cue in sections().get(name, ()):
            if _matches(cue, plain, lead, raw if cue.regex else ""):
                scores[name] += START_WEIGHT if cue.start else ANY_WEIGHT
        if heads and any(cue.pattern.search(heads) for cue in sections().get(f"{name} heading", ())):
            scores[name] += HEADING_WEIGHT
    if "```" in text or "~~~" in text:  # "Run the tests with:" and its fence
        scores["procedure"] += START_WEIGHT
    best = max(ORDER, key=lambda name: (scores[name], -ORDER.index(name)))
    tied = [name for name in ORDER if scores[name] == scores[best]]
    if not scores[best] or (scores[best] <= HEADING_WEIGHT and len(tied) > 1):  # headings alone disagree
        return ("fact" if raw.lstrip().startswith("|") else DEFAULT_CATEGORY), ()  # a table is reference data
    return best, tuple(name for name in ORDER if scores[name] == scores[best])


def _skipped(sentence: str) -> str | None:
    return "boilerplate" if is_boilerplate(sentence) else "pointer" if is_pointer(sentence) else None


def _outside_fences(text: str) -> list[str]:
    """The non-blank lines of ``text`` outside fenced code, list markers removed."""
    out, fence = [], None
    for line in text.split("\n"):
        mark = re.match(r"^\s*(`{3,}|~{3,})", line)
        if mark and (fence is None or mark.group(1)[0] == fence[0]):
            fence = mark.group(1) if fence is None else None
            continue
        if fence is None and line.strip():
            out.append(re.sub(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+", "", line).strip())
    return out


def classify(text: str, tags: list[str] | None = None) -> Kind:
    """What one item of a rule file is (module docstring).

    Args:
        text: the item as ``agents.rule_files.parse_markdown`` gives it (Markdown, may hold lines).
        tags: slugs of its enclosing headings.

    Returns:
        A :class:`Kind`: its category and importance, or ``skipped`` and why.
    """
    if "\n" not in text:
        sentences = split_sentences(text)
        dropped = [_skipped(s) for s in sentences]
        kept = [s for s, why in zip(sentences, dropped) if why is None]
        if not kept:
            return Kind(None, BASE_IMPORTANCE, text, next((r for r in dropped if r), "pointer"))
        if len(kept) < len(sentences):
            text = " ".join(kept)
    else:  # nested items, a table, a fence: skipped only when every line outside fences is
        lines = _outside_fences(text)
        reasons = [_skipped(line) if len(split_sentences(line)) == 1 else None for line in lines]
        if lines and all(reasons):
            return Kind(None, BASE_IMPORTANCE, text, reasons[0])
    name, cues = category(text, tags)
    return Kind(name, emphasis(text, tags), text, None, cues)
