"""A rule-based summary of a session transcript, for ``compact --transcript``. Pure: no I/O.

The conversation is what the person and the assistant wrote, in order, as
``agents.transcript.parse`` reads it for every format (Claude Code, Codex, Gemini CLI):
only the person's own words (no meta or sidechain entries, compaction summaries, tool
results, subagent results, injected context — memcli's ``<memcli-context>`` block
included — nor a rewound branch), and of the assistant only its text (no ``thinking``,
no ``tool_use``, no reply the client made up). Lines of one assistant message (same
``message.id``) are joined. The characters a memory may not hold are removed
(``model.FORBIDDEN_CHARS``: control characters such as a terminal's escape codes).

Secrets never get past :func:`read_conversation`: in a line of a message that holds a
secret (``text.secrets.secret_spans``, run on the whole message, so that an AWS secret
key found through the key id on its line counts even when the two sit in different
sentences), each sentence that holds one is replaced, in place, by ``[withheld: KIND]``;
the other sentences stay as they were. Only a private key goes further: from its
``-----BEGIN`` to its ``-----END`` line, the block is dropped and one marker stands for
it. A line whose secret cannot be placed in a sentence (a ``>`` quote, say) becomes its
marker. ``Conversation.withheld`` counts the secrets found.

The summary (:func:`summarise`) sorts the sentences (``agents.extraction_rules.split_sentences``:
code fences and ``>`` quotes are not sentences) of every message by the rule tables
:data:`DECISIONS`, :data:`CONCLUSIONS` and :data:`OPEN` (English and Chinese), in that
order of precedence, except that an open-question marker wins. A question (ending in
``?``, ``？`` or ``吗``) is open unless the other side wrote a later message sharing at
least half of its content words (English words of four or more letters, Chinese
character pairs); a question asking leave ("shall I", "do you want me to") is not a
question the session leaves open.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from memcli.agents.extraction_rules import MAX_SENTENCE_CHARS, split_sentences
from memcli.agents.transcript import parse, parse_text
from memcli.model import FORBIDDEN_CHARS, MAX_BODY_CHARS

#: Characters of one item (a decision, a quoted message) in the summary; longer ones are cut.
ITEM_CHARS = 300
#: Items of one section, at most (the first ones in the session).
MAX_ITEMS = 20
#: Characters of the conversation the summary falls back on when no rule matched.
BEGINNING_CHARS = 500


def _rules(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


#: A decision the session took.
DECISIONS = _rules(
    r"\bwe(?:'ve|\s+have)?\s+(?:decided|agreed|settled\s+on)\b", r"\bI(?:'ve|\s+have)?\s+decided\b",
    r"\blet'?s\s+(?:go|stick)\s+with\b", r"\blet'?s\s+use\b", r"\b(?:I|we)(?:'ll|\s+will)\s+(?:go|stick)\s+with\b",
    r"\buse\s+\S.*?\b(?:instead\s+of|rather\s+than)\b", r"\bswitch(?:ed|ing)?\s+(?:over\s+)?to\b",
    r"\bdecision\s*:", r"决定|定下来|改用|换成|就用|选用")
#: A conclusion the session reached: a cause found, a fix that works.
CONCLUSIONS = _rules(
    r"\bthe\s+fix\s+(?:was|is)\b", r"\broot\s+cause\b", r"\bturn(?:s|ed)\s+out\b", r"\bworks\s+now\b",
    r"\bnow\s+(?:it\s+)?works\b", r"\bthe\s+(?:problem|issue|bug|cause|culprit)\s+(?:was|is)\b",
    r"\bthe\s+reason\s+(?:was|is)\b", r"\bconclusion\b", r"\bcaused\s+by\b",
    r"\b(?:is|was|are|were|now)\s+(?:fixed|resolved|solved)\b", r"\b(?:that|this)\s+fixed\b",
    r"原因是|根本原因|根因|结论|解决了|修好了|问题(?:出)?在于|原来是|已修复")
#: A question or task the session leaves open.
OPEN = _rules(
    r"\bTODO\b", r"\bTBD\b", r"\bstill\s+(?:need|have)\s+to\b", r"\bnot\s+sure\s+(?:whether|if|how|why|what|which)\b",
    r"\bopen\s+question\b", r"\bremains?\s+to\s+be\s+(?:seen|decided|done|checked)\b",
    r"\bhaven't\s+(?:yet\s+)?(?:decided|figured|checked|tested|found)\b", r"\bunresolved\b",
    r"待定|还没|尚未|不确定|待办|有待|还需要")
_QUESTION = re.compile(r"(?:[?？]|吗)[\s\"'”’」』)）*_]*$")
_ASKING_LEAVE = re.compile(r"^(?:shall\s+I|should\s+I|do\s+you\s+want|would\s+you\s+like|want\s+me\s+to|"
                           r"does\s+(?:that|this)\s+(?:look|sound)|sound\s+good|make\s+sense|ok(?:ay)?\b|"
                           r"要不要我|需要我)", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = frozenset("that this with from have what when where which will would could should there their about "
                  "into also just then than them they your more some been were does done make want need "
                  "like know think sure here".split())
_LEADING_MARKERS = re.compile(r"^(?:\[withheld: [^\]\n]*\]\s*)+")


@dataclass(frozen=True)
class Message:
    """One message of the conversation.

    Attributes:
        role: ``user`` or ``assistant``.
        text: its words, injected blocks and secrets removed; never empty.
        line: 1-based line of the transcript where it starts.
        timestamp: the line's ``timestamp`` as written, or None.
    """

    role: str
    text: str
    line: int
    timestamp: str | None = None


@dataclass
class Conversation:
    """What :func:`read_conversation` found.

    Attributes:
        messages: user and assistant messages, in file order.
        session_id: the session's id, or None.
        format: the transcript's format (``agents.registry.transcript_formats``), or None.
        lines: non-blank lines read; objects: those that held a JSON object; skipped_lines:
            those that are not a JSON object.
        withheld: secrets found in the messages (and kept out of ``messages``).
        warnings: lines the reader could not read (too deep, too long).
    """

    messages: list[Message] = field(default_factory=list)
    session_id: str | None = None
    lines: int = 0
    skipped_lines: int = 0
    withheld: int = 0
    format: str | None = None
    objects: int = 0
    warnings: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The plain conversation: ``user: …`` and ``assistant: …`` paragraphs, blank lines between."""
        return "\n\n".join(f"{m.role}: {m.text}" for m in self.messages)


@dataclass
class RuleSummary:
    """What the rules found: each item is ``(role, sentence)``, in session order."""

    decisions: list[tuple[str, str]] = field(default_factory=list)
    conclusions: list[tuple[str, str]] = field(default_factory=list)
    open_questions: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when no rule matched."""
        return not (self.decisions or self.conclusions or self.open_questions)


def withhold(text: str) -> tuple[str, int]:
    """``text`` without its secrets (see the module docstring), and how many were found."""
    from memcli.text.secrets import PEM, secret_spans

    spans = secret_spans(text)
    if not spans:
        return text, 0
    out: list[str] = []
    in_key = False
    lo = k = 0  # start of the current line; first span not yet placed
    for line in text.split("\n"):
        hi = lo + len(line)
        here = []
        while k < len(spans) and spans[k][0] <= hi:
            start, end, kind = spans[k]
            here.append((start - lo, end - lo, kind))
            k += 1
        lo = hi + 1
        if in_key:
            in_key = "-----END" not in line
            continue
        if not here:
            out.append(line)
            continue
        pem = next((start for start, _end, kind in here if kind == PEM), None)
        if pem is None:
            out.append(_withhold_line(line, here))
            continue
        in_key = "-----END" not in line[pem:]
        before = [span for span in here if span[1] <= pem]
        head = (_withhold_line(line[:pem], before) if before else line[:pem]).rstrip()
        out.append(f"{head} [withheld: {PEM}]" if head else f"[withheld: {PEM}]")
    return "\n".join(out), len(spans)


def _withhold_line(line: str, spans: list[tuple[int, int, str]]) -> str:
    """``line`` with each sentence that holds one of ``spans`` (offsets in ``line``) replaced
    by ``[withheld: KIND]``; the marker alone when a secret cannot be placed in a sentence."""
    from memcli.text.secrets import find_secrets

    cut: list[tuple[int, int, str]] = []  # (start, end, kind) of the sentences withheld
    at = 0
    for sentence in split_sentences(line):
        start = line.find(sentence, at)
        if start < 0:
            break
        at = end = start + len(sentence)
        kinds = [kind for s, e, kind in spans if s < end and e > start] or \
            [finding.kind for finding in find_secrets(sentence)]
        if kinds:
            cut.append((start, end, kinds[0]))
    placed = all(any(a <= s and e <= b for a, b, _ in cut) for s, e, _ in spans)
    parts, at = [], 0
    for start, end, kind in cut:
        parts.append(f"{line[at:start]}[withheld: {kind}]")
        at = end
    kept = "".join(parts) + line[at:]
    return kept if placed and not find_secrets(kept) else f"[withheld: {spans[0][2]}]"


def read_conversation(lines: Iterable[str] | str, deadline: float | None = None) -> Conversation:
    """The conversation in transcript lines (see the module docstring). Never raises on bad input.

    Args:
        lines: the transcript's lines, as read (trailing newlines are fine), or its whole text
            (then a transcript that is one JSON document is read too, ``agents.transcript.parse_text``).
        deadline: as for ``agents.transcript.parse`` (which raises ``DeadlineReached``).
    """
    parsed = parse_text(lines, deadline) if isinstance(lines, str) else parse(lines, deadline)
    out = Conversation(session_id=parsed.session_id, lines=parsed.lines, skipped_lines=parsed.skipped_lines,
                       format=parsed.format, objects=parsed.objects, warnings=list(parsed.warnings))
    last_id: str | None = None  # message.id of the assistant message that ends ``out.messages``
    for turn in parsed.messages:
        text = FORBIDDEN_CHARS.sub("", turn.text).strip()
        if not text:
            continue
        text, found = withhold(text)
        out.withheld += found
        message_id = turn.message_id if turn.role == "assistant" else None
        if message_id and message_id == last_id and out.messages:
            previous = out.messages[-1]
            out.messages[-1] = Message(turn.role, f"{previous.text}\n\n{text}", previous.line, previous.timestamp)
            continue
        out.messages.append(Message(turn.role, text, turn.line, turn.timestamp))
        last_id = message_id
    return out


def _words(text: str) -> set[str]:
    """Content words: English words of 4+ letters (first five, lower case), Chinese character pairs."""
    words = {w.lower()[:5] for w in _WORD.findall(text) if w.lower() not in _STOP}
    for run in _CJK.findall(text):
        words.update(run[i:i + 2] for i in range(max(1, len(run) - 1)))
    return words


def _answered(question: str, role: str, later: list[Message]) -> bool:
    """True when the other side wrote a later message that shares half the question's content words."""
    asked = _words(question)
    if not asked:
        return any(m.role != role for m in later)
    return any(m.role != role and 2 * len(asked & _words(m.text)) >= len(asked) for m in later)


def summarise(conversation: Conversation) -> RuleSummary:
    """Decisions, conclusions and open questions of a conversation, by the rule tables.

    Sentences longer than ``agents.extraction_rules.MAX_SENTENCE_CHARS`` are pastes and are
    skipped; a sentence seen before (same words, any case) is not repeated; each section
    keeps its first :data:`MAX_ITEMS`.
    """
    out = RuleSummary()
    seen: set[str] = set()
    messages = conversation.messages
    for index, message in enumerate(messages):
        for sentence in split_sentences(message.text):
            sentence = _LEADING_MARKERS.sub("", sentence)  # a withheld sentence before this one
            if not sentence or len(sentence) > MAX_SENTENCE_CHARS:
                continue
            key = " ".join(sentence.casefold().split())
            if key in seen:
                continue
            if any(r.search(sentence) for r in OPEN):
                section = out.open_questions
            elif _QUESTION.search(sentence):
                if _ASKING_LEAVE.match(sentence) or _answered(sentence, message.role, messages[index + 1:]):
                    continue
                section = out.open_questions
            elif any(r.search(sentence) for r in DECISIONS):
                section = out.decisions
            elif any(r.search(sentence) for r in CONCLUSIONS):
                section = out.conclusions
            else:
                continue
            seen.add(key)
            if len(section) < MAX_ITEMS:
                section.append((message.role, sentence))
    return out


def cut(text: str, limit: int = ITEM_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def beginning(conversation: Conversation, limit: int = BEGINNING_CHARS) -> str:
    """The first ``limit`` characters of the plain conversation (``Conversation.text``)."""
    text = conversation.text()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render(rules: RuleSummary, conversation: Conversation, keep_recent: int, header: str = "") -> str:
    """The Markdown body: ``header``, then "## Decisions", "## Conclusions", "## Open questions"
    (empty ones left out) and "## Recent messages" (the last ``keep_recent`` messages, each
    cut to :data:`ITEM_CHARS`), within ``model.MAX_BODY_CHARS`` characters: the oldest
    recent messages, then the last items, give way first.

    Args:
        keep_recent: messages to quote; 0 leaves the section out.
        header: lines to put first (may be empty).
    """
    parts = [header.strip()] if header.strip() else []
    for title, items in (("Decisions", rules.decisions), ("Conclusions", rules.conclusions),
                         ("Open questions", rules.open_questions)):
        if items:
            parts.append(f"## {title}\n\n" + "\n".join(f"- {cut(text)} ({role})" for role, text in items))
    body = "\n\n".join(parts)
    while len(body) > MAX_BODY_CHARS - 1000:  # leave room for a few recent messages
        body = body[: body.rfind("\n")]
    recent = conversation.messages[-keep_recent:] if keep_recent > 0 else []
    quoted: list[str] = []
    for message in reversed(recent):
        line = f"> **{message.role}**: {cut(message.text)}"
        if len(body) + len("\n\n## Recent messages\n\n") + sum(len(q) + 2 for q in quoted) + len(line) \
                > MAX_BODY_CHARS - 10:
            break
        quoted.insert(0, line)
    if quoted:
        body += ("\n\n" if body else "") + "## Recent messages\n\n" + "\n>\n".join(quoted)
    return scrub(body)[0]


def scrub(text: str) -> tuple[str, int]:
    """``text`` without the lines that hold a secret, and how many lines went (a last check:
    what :func:`read_conversation` kept is already free of them, but joining lines can
    make a pattern, such as an AWS key id and its secret, meet)."""
    from memcli.text.secrets import find_secrets

    dropped = 0
    while True:
        findings = find_secrets(text)
        if not findings:
            return text, dropped
        lines = text.split("\n")
        bad = {f.line for f in findings}
        dropped += len(bad)
        text = "\n".join(line for n, line in enumerate(lines, start=1) if n not in bad)
