"""Rules that find candidate memories in what a person typed, in English and Chinese. Pure.

SPEC.md section 7. A turn is split into sentences (at ``. ! ?`` followed by a space or
the end, at ``。！？``, and at line breaks; fenced code blocks and ``>`` quoted lines are
not the person's words and are dropped). A sentence is a candidate when a rule of
:data:`RULES` matches it and it is not a question: it ends with ``?`` or ``？``, ends
with ``吗``, or starts with what, how, why, can you, could you, would you, 能不能, 能否,
怎么 or 为什么. Sentences longer than :data:`MAX_SENTENCE_CHARS` are pastes, not
instructions, and are skipped.

Category: that of the first rule in :data:`RULES` that matches. The table lists the
rules that say what a memory is about (preferences, decisions) before the ones that
only say it should be kept (corrections, "remember", "always", "from now on", "don't"),
so "不对，我们不用 pandas，以后一律用 csv" is a preference, not feedback.

Importance (1–5), the highest of the matching rules:

* 4: explicit memory and standing instructions — "remember", "always", "never", "from
  now on", 记住, 以后/今后/从现在起, 一律, 务必, 一定要; and corrections — "no, …",
  "actually, …", "that's wrong", 不对, 不是…而是;
* 3: plain preferences, decisions and prohibitions — "I prefer", "I like", "we use",
  "please use X", "use X instead of Y", "we decided", "don't …", 我喜欢, 我们用, 请用,
  改用, 决定, 不要, 别;
* 2: any of these hedged — "maybe", "perhaps", "probably", "I think", "I guess",
  "not sure", 可能, 也许, 大概, 或许, 我觉得 (:data:`HEDGES`);
* 5 and 1 are never guessed: 5 is for a person to give (``remember --importance 5``).

A correction that is only a marker ("No.", "That's wrong.", "不对。") takes the next
sentence as its content. The candidate's text is the sentence cleaned: leading list
markers, "remember (that|to)", "keep in mind (that)", correction markers ("no,",
"actually,", "that's wrong,", 不对，, 记住) and wrapping quotes are removed, and the
first letter is capitalised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

#: Longer sentences are taken for pasted text (logs, code), not instructions.
MAX_SENTENCE_CHARS = 400


class Rule(NamedTuple):
    """One extraction rule: a name, a compiled pattern, a category guess and an importance (1–5)."""

    name: str
    pattern: re.Pattern[str]
    category: str
    importance: int


def _rule(name: str, regex: str, category: str, importance: int) -> Rule:
    return Rule(name, re.compile(regex, re.IGNORECASE), category, importance)


#: The rules, in order of precedence for the category guess (see the module docstring).
#: Patterns run on one sentence, stripped, list markers removed; ``^`` is its start.
RULES: tuple[Rule, ...] = (
    # what the memory is about: preferences and decisions
    _rule("en_prefer", r"\b(?:I|we)\s+(?:really\s+|strongly\s+|much\s+|generally\s+)?"
                       r"(?:prefer|like|love|dislike|hate)\b", "preference", 3),
    _rule("en_we_use", r"\bwe\s+(?:(?:always|only|usually|now)\s+)?"
                       r"(?:use|don't\s+use|do\s+not\s+use|never\s+use|stick\s+(?:with|to)|go\s+with)\b",
          "preference", 3),
    _rule("en_please_use", r"\bplease\s+(?:always\s+|only\s+)?use\b", "preference", 3),
    _rule("en_use_instead", r"\buse\s+\S.*?\b(?:instead\s+of|rather\s+than)\b", "preference", 3),
    _rule("en_decided", r"\bwe(?:'ve|\s+have)?\s+(?:decided|agreed|settled\s+on)\b|\blet's\s+(?:go|stick)\s+with\b",
          "decision", 3),
    _rule("zh_like", r"我(?:很|挺|比较|更|最|不太|不)?(?:喜欢|偏好|偏爱|倾向|习惯用)", "preference", 3),
    _rule("zh_we_use", r"(?:我们|咱们|团队|项目里?)(?:都|一直|统一|只|现在)?不?(?:用|使用|采用)", "preference", 3),
    _rule("zh_please_use", r"请(?:统一|一律|务必)?(?:用|使用|改用)|改用|换成", "preference", 3),
    _rule("zh_decided", r"决定了?(?:用|使用|采用|不)|定下来", "decision", 3),
    # corrections
    _rule("en_correction", r"^(?:no|nope)\s*[,.!:;—-](?!\s*(?:thanks|thank\s+you|problem|worries))|^actually\b"
                           r"|\bthat(?:'s|\s+is)\s+(?:wrong|not\s+right|incorrect|not\s+what\s+I\s+(?:asked|meant|wanted))"
                           r"|^wrong\b", "feedback", 4),
    _rule("zh_correction", r"^(?:不对|不是的|错了|不行)|不是.{1,40}?而是", "feedback", 4),
    # explicit memory and standing instructions
    _rule("en_remember_to", r"^(?:please\s+)?(?:remember|don't\s+forget)\s+to\b", "procedure", 4),
    _rule("en_remember", r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|don't\s+forget)\b", "fact", 4),
    _rule("zh_remember", r"记住|^(?:请|要)?记得", "fact", 4),
    _rule("en_from_now_on",
          r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|henceforth|in\s+(?:the\s+)?future)\b",
          "procedure", 4),
    _rule("en_always_never", r"(?:^|[,;:]\s*|\b(?:you|we|please|should|must|to)\s+)(?:always|never)\b(?!\s+mind)",
          "procedure", 4),
    _rule("zh_from_now_on", r"从现在(?:起|开始)|(?:^|[，,；;：:]|我们|你|您|请)\s*(?:以后|今后|往后)"
                            r"|(?:以后|今后)(?:都|一律|要|请|别|不要|必须|统一)", "procedure", 4),
    _rule("zh_always", r"一律|务必|一定要|永远(?:不要|别|不|都|用)|每次都?(?:要|先|记得)", "procedure", 4),
    _rule("en_dont", r"(?:^|[,;:]\s*)(?:please\s+)?(?:don't|do\s+not|dont)\b(?!\s+(?:worry|bother|mind))",
          "feedback", 3),
    _rule("zh_dont", r"(?:^|[，,；;：:]|你|您|请|我们|咱们|都|也|就|千万|以后|今后|一定)\s*"
                     r"(?:不要|别|不许|不准|禁止)(?!的|人|处|紧|担心|客气|着急)", "feedback", 3),
)

#: Words that make a candidate tentative: its importance becomes 2.
HEDGES = re.compile(r"\b(?:maybe|perhaps|probably|possibly|might|I\s+think|I\s+guess|I\s+suppose|not\s+sure)\b"
                    r"|(?<![尽不])可能|也许|大概|或许|我觉得|好像", re.IGNORECASE)
HEDGED_IMPORTANCE = 2
CORRECTIONS = frozenset({"en_correction", "zh_correction"})

_QUESTION_START = re.compile(r"^(?:(?:what|how|why|can\s+you|could\s+you|would\s+you)\b|能不能|能否|怎么|为什么)",
                             re.IGNORECASE)
_QUESTION_END = re.compile(r"(?:[?？]|吗)[\s\"'”’」』)）]*$")
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_LIST_MARKER = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)、])\s+")
#: Where a sentence ends: CJK marks anywhere; ``. ! ?`` before a space or the end of the line.
_END = re.compile(r"[。！？]+[”’」』）)]*|[.!?]+[\"'”’)\]]*(?=\s|$)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "ms", "dr", "approx", "incl"})
_LEADING = re.compile(
    r"^(?:(?:please\s+)?(?:remember|keep\s+in\s+mind|don't\s+forget)(?:\s+(?:that|to)\b)?\s*[:,]?\s*"
    r"|(?:no|nope)\s*[,.!:;—-]+\s*"
    r"|actually\b\s*[,:]?\s*"
    r"|that(?:'s|\s+is)\s+(?:wrong|not\s+right|incorrect)\s*[,.:;!—-]*\s*"
    r"|wrong\s*[,.:;!—-]+\s*"
    r"|请?记住\s*[，,：:]?\s*"
    r"|(?:请|要)?记得\s*[，,：:]?\s*"
    r"|(?:不对|不是的|错了|不行)\s*[，,。！!：:；;]*\s*)", re.IGNORECASE)
_QUOTED = re.compile(r"^[\"'“‘「『]+(.+?)[\"'”’」』]+([.!。！]?)$", re.DOTALL)
_QUOTES = "\"'“”‘’「」『』"
_WORDS = re.compile(r"[A-Za-z0-9_]+|[\u3400-\u9fff]")


@dataclass(frozen=True)
class Candidate:
    """A candidate memory found in one turn.

    Attributes:
        text: the cleaned sentence(s).
        category: the guess, one of preference, procedure, feedback, decision, fact.
        importance: 1–5, see the module docstring.
        rules: names of the rules that matched, in table order.
        hedged: a hedge word lowered the importance.
    """

    text: str
    category: str
    importance: int
    rules: tuple[str, ...]
    hedged: bool = False


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped and without list markers; code fences and ``>`` quotes dropped."""
    text = _FENCE.sub("\n", text.replace("\r\n", "\n"))
    out: list[str] = []
    for line in text.split("\n"):
        if line.lstrip().startswith(">"):
            continue
        start = 0
        for end in _END.finditer(line):
            word = line[start:end.start()].rsplit(None, 1)[-1:] or [""]
            if line[end.start()] == "." and end.group().rstrip("\"'”’)]") == "." \
                    and word[0].lower().lstrip("(") in _ABBREVIATIONS:
                continue
            out.append(line[start:end.end()])
            start = end.end()
        out.append(line[start:])
    sentences = (_LIST_MARKER.sub("", s).strip() for s in out)
    return [s for s in sentences if s]


def is_question(sentence: str) -> bool:
    """True for a question (see the module docstring): questions are never memories."""
    return bool(_QUESTION_END.search(sentence) or _QUESTION_START.match(sentence))


def matching_rules(sentence: str) -> list[Rule]:
    """The rules of :data:`RULES` that match ``sentence`` (wrapping quotes aside), in table order."""
    sentence = sentence.strip(_QUOTES)
    return [rule for rule in RULES if rule.pattern.search(sentence)]


def clean(sentence: str) -> str:
    """The candidate text of a sentence: leading markers and wrapping quotes removed (module docstring)."""
    text = sentence.strip()
    while True:
        shorter = _LEADING.sub("", text, count=1).strip()
        if shorter == text:
            break
        text = shorter
    quoted = _QUOTED.match(text)
    if quoted:
        text = (quoted.group(1) + quoted.group(2)).strip()
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


def _size(text: str) -> int:
    """Words in ``text``: Latin words and numbers, and CJK characters one by one."""
    return len(_WORDS.findall(text))


def find_candidates(text: str) -> list[Candidate]:
    """The candidate memories in one turn's text, in order, without repeats.

    Args:
        text: what the person typed (already free of injected blocks; see
            ``memcli.agents.transcript``).
    """
    sentences = [s for s in split_sentences(text) if len(s) <= MAX_SENTENCE_CHARS]
    found: list[Candidate] = []
    seen: set[str] = set()
    i = 0
    while i < len(sentences):
        sentence, i = sentences[i], i + 1
        if is_question(sentence):
            continue
        rules = matching_rules(sentence)
        if not rules:
            continue
        body = clean(sentence)
        hedged = bool(HEDGES.search(sentence))
        if _size(body) < 2 and {r.name for r in rules} <= CORRECTIONS:
            if i >= len(sentences) or is_question(sentences[i]):
                continue
            nxt, i = sentences[i], i + 1  # "That's wrong. The API is under /v2." -> the second sentence
            more = matching_rules(nxt)
            rules = [r for r in RULES if r in rules or r in more]
            body, hedged = clean(nxt), hedged or bool(HEDGES.search(nxt))
        key = " ".join(body.casefold().split())
        if _size(body) < 2 or key in seen:
            continue
        seen.add(key)
        importance = HEDGED_IMPORTANCE if hedged else max(r.importance for r in rules)
        found.append(Candidate(body, rules[0].category, importance, tuple(r.name for r in rules), hedged))
    return found
