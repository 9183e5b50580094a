"""Planning a workspace consolidation (``memcli compact``, SPEC.md sections 3-4). Pure: no I/O.

Given memories, settings and the clock, :func:`plan` says what compaction would do:

* **archive** an ``active`` memory whose ``expireAt`` has passed;
* **retire** (archive) a ``superseded`` or ``rejected`` memory last updated at least
  ``retention`` ago;
* **merge** duplicates among the active, unexpired memories of one scope into the
  oldest, the *keeper*: the first by ``createdAt``, then by id. Ids are ULIDs whose time
  part is the creation time to the millisecond, so within one ``createdAt`` second the
  one written first is kept, except for memories created in the same millisecond
  (e.g. under a frozen ``MEMCLI_NOW``): their order is arbitrary but stable. A merge
  folds only memories that say the same thing:

  - **exact duplicates** (same ``model.normalise_text``) merge unless both have a subject
    and the subjects differ (case aside);
  - **near duplicates** (rapidfuzz ratio >= ``near_duplicate``, via
    ``gates.find_duplicates``) merge only when, besides the ratio, they have the same
    subject (case aside; both unset counts as the same), the same multiset of
    *number-bearing tokens* (any token with a digit: ``5432``, ``v1.2``, ``python3.11``,
    ``2026-01-01``), the same multiset of *code-like tokens* (paths ``a/b``, flags
    ``--apply``, dotted names ``x.y`` and ``.cache``, ``snake_case``, ``camelCase``,
    calls ``f()``, ```backticked``` spans), both compared after NFKC and case folding,
    and the same count of *negations* (the words not, no, never, none, nothing, nobody,
    nowhere, neither, nor, cannot, without, avoid, any ``n't``; the characters
    不 没 沒 别 別 勿 非 无 無 未 莫 毋 否, except in 非常 无论 無論 不过 不過), and
    the same set of *content words* (:func:`content_words`: every other word, case and
    punctuation aside, but for a short list of function words, each reduced to its
    Snowball English stem, word order and repetition ignored; in Chinese and Japanese,
    every character but a few particles). A near duplicate that fails a check other
    than "both subjects set and different" is a **possible conflict**: reported, never
    merged ("98% similar but one negates the other", "96% similar but the words differ
    (enable / disable)"), since the two may say opposite things. A bag of words cannot
    see order: "from A to B" and "from B to A" still merge.

  The others become ``superseded`` by the keeper; the keeper lists them in
  ``supersedes`` and keeps their provenance in ``merged``, takes the highest importance,
  the union of tags and paths, ``pinned`` if any was, the subject if it had none (an
  exact duplicate's), and the latest expiry (none if any had none);
* report **conflicts**: two or more memories of one scope left active by the plan that
  share a subject (case-insensitive), and the possible conflicts above (unless both
  memories share a subject: then they are a subject conflict already). They are not
  changed: the person chooses with ``supersede``. Duplicates that share a subject are
  merged, which resolves their conflict.

``pending_review`` memories are never planned for: they are neither active nor retired.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memcli.model import Memory, normalise_text

#: Statuses that ``retire`` archives once they are older than the retention.
RETIRED = ("superseded", "rejected")

#: Negating words (whole words, any case) and the English contraction ``n't``.
NEGATION_WORDS = re.compile(r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|cannot|without|"
                            r"avoid(?:s|ed|ing)?)\b|n't\b", re.IGNORECASE)
#: Negating CJK characters, each occurrence counted ...
NEGATION_CHARS = "不没沒别別勿非无無未莫毋否"
#: ... except inside these words, which do not negate ("very", "regardless", "however").
NOT_NEGATIONS = ("非常", "无论", "無論", "不过", "不過")
#: A token: a run of ASCII letters, digits and the characters of paths, flags and names.
_TOKEN = re.compile(r"[A-Za-z0-9_.\-/\\:@#~=+%$]+(?:\(\))?")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
#: Function words left out of :func:`content_words`: articles and determiners, the
#: forms of *be*, *do* and *have*, *will*/*shall*, pronouns, the prepositions and
#: conjunctions that do not carry a direction or a condition. A word whose opposite is
#: also a function word is not one: *from*, *out*, *off*, *or*, *if*, *unless*, *before*,
#: *after*, *until*, *above*, *below*, *over*, *under*, *up*, *down*, the modals *can*, *may*,
#: *must*, *should* … stay content words, so ``to``/``from`` or ``and``/``or`` still differ.
STOP_WORDS = frozenset("""
    a an the this that these those it its there which who whom whose
    be is are was were been being am do does did doing done have has had having will shall
    i me my we us our you your he him his she her they them their
    of in on at to by for with into onto via as about than
    and but so because since while also then
    """.split())
#: Han and kana particles left out of :func:`content_words` (each other character is a word).
CJK_PARTICLES = "的了地得是在和与着过吗呢吧啊也这那个把被のはがをにでともへやねよ"
#: How many differing words a ``the words differ (… / …)`` reason names per side.
SHOWN_WORDS = 3
_HAN_KANA = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff]+")
_CJK_SKIP = frozenset(CJK_PARTICLES + NEGATION_CHARS)
_WORD = re.compile(r"[^\W\d_]+")
_CONTRACTIONS = re.compile(r"\b(?:(\w+)n't|(can)not)\b", re.IGNORECASE)
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}
_STEMMER = None
_CODE_LIKE = re.compile(r"[/\\_=@$]|\(\)$|\w\.\w|^-+[A-Za-z]|^\.[A-Za-z]|[a-z][A-Z]")


@dataclass
class Settings:
    """What a consolidation is allowed to do.

    Attributes:
        retention: how long a superseded or rejected memory stays as it is (``[compact] retention``).
        retention_text: the same as written in the configuration (``"90d"``), for messages.
        near_duplicate: rapidfuzz ratio 0-100 at or over which two texts are merged (``[compact] near_duplicate``).
    """

    retention: timedelta
    retention_text: str = "90d"
    near_duplicate: int = 95


@dataclass
class Action:
    """One planned change.

    Attributes:
        action: ``archive``, ``retire`` or ``merge``.
        ids: the memories it changes (for a merge: the ones merged, not the keeper).
        keeper: for a merge, the memory the others are merged into; else None.
        scope: the scope of every memory involved.
        reason: why, in a few words (``expired 2026-10-01``, ``exact duplicate``, ``97% similar``).
        text: the (keeper's) text.
    """

    action: str
    ids: list[str]
    scope: str
    reason: str
    text: str
    keeper: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"action": self.action, "ids": list(self.ids), "keeper": self.keeper, "scope": self.scope,
                "reason": self.reason, "text": self.text}


@dataclass
class Conflict:
    """Memories of one scope that may contradict each other; reported, never changed.

    Attributes:
        kind: ``subject`` (active with the same subject) or ``possible`` (near duplicates
            that differ in numbers, code-like tokens, negation, content words or subject).
        ids: the memories (for ``possible``: the older first).
        scope: their scope.
        subject: the shared subject (``subject``), else None.
        reason: in words: ``both active with subject "x"``, ``98% similar but the numbers differ``.
    """

    ids: list[str]
    scope: str
    subject: str | None
    reason: str = ""
    kind: str = "subject"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "ids": list(self.ids), "scope": self.scope, "subject": self.subject,
                "reason": self.reason}


@dataclass
class Plan:
    """What a consolidation would do.

    Attributes:
        actions: archives, then retirements, then merges, each in id (or keeper) order.
        conflicts: subject conflicts left for the person to resolve.
        changes: memory id -> the front-matter keys to change (``status``, ``updatedAt``,
            ``supersededBy``, ``supersedes``, ``merged`` …), ready for ``fileformat.update``.
        waiting: ``(id, when)`` of each superseded or rejected memory younger than the
            retention, with the instant (aware UTC) it becomes due, soonest first: why a
            compaction may have nothing to do yet.
        retention_text: the retention as configured (``"90d"``), for messages.
    """

    actions: list[Action] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    waiting: list[tuple[str, datetime]] = field(default_factory=list)
    retention_text: str = "90d"


def plan(memories: list[Memory], settings: Settings, now: datetime) -> Plan:
    """Plan the consolidation of ``memories`` at ``now`` (aware UTC).

    Args:
        memories: every memory to consider (the caller has filtered scopes and unreadable
            files); memories of any status may be given, only those named above are changed.
        settings: retention and near-duplicate threshold.
        now: the clock.

    Returns:
        The :class:`Plan`; empty ``actions`` when there is nothing to do.
    """
    result = Plan(retention_text=settings.retention_text)
    ordered = sorted(memories, key=_age)
    stamp = {"status": "archived", "updatedAt": now}
    for memory in ordered:
        if memory.status == "active" and memory.expire_at is not None and memory.is_expired(now):
            result.actions.append(Action("archive", [memory.id], memory.scope,
                                         f"expired {memory.expire_at.date().isoformat()}", memory.text))
            result.changes[memory.id] = dict(stamp)
    for memory in ordered:
        age = now - (memory.updated_at or memory.created_at or now)
        if memory.status in RETIRED and age >= settings.retention:
            reason = f"{memory.status} {age.days} days ago (retention {settings.retention_text})"
            result.actions.append(Action("retire", [memory.id], memory.scope, reason, memory.text))
            result.changes[memory.id] = dict(stamp)
        elif memory.status in RETIRED:
            try:
                result.waiting.append((memory.id, (memory.updated_at or memory.created_at or now) + settings.retention))
            except OverflowError:  # due after the end of the calendar: never
                pass
    result.waiting.sort(key=lambda pair: pair[1])
    live = [m for m in ordered if m.served(now)]
    merged: set[str] = set()
    possible: list[Conflict] = []
    for scope in sorted({m.scope for m in live}):
        groups, doubtful = _groups([m for m in live if m.scope == scope], settings.near_duplicate)
        for keeper, group in groups:
            _merge(result, keeper, group, now)
            merged.update(m.id for m, _ in group)
        possible.extend(doubtful)
    result.conflicts = _conflicts([m for m in live if m.id not in merged], result.changes)
    result.conflicts += [c for c in possible if not merged & set(c.ids)]
    return result


def _age(memory: Memory) -> tuple:
    """Sort key: oldest first (``createdAt``, then id)."""
    return (memory.created_at is None, memory.created_at or datetime.min, memory.id)


def _compatible(subjects: list[str | None], other: str | None) -> bool:
    """True when ``other`` does not differ from any subject already in a group (unset subjects match any)."""
    return other is None or all(s is None or s.casefold() == other.casefold() for s in subjects)


def _fold(subject: str | None) -> str | None:
    return subject.casefold() if subject else None


def _tokens(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split out the number-bearing and code-like tokens: ``(the rest of the text, [(kind, token), …])``.

    ``text`` is NFKC-normalised already; ``kind`` is ``number`` or ``code``; tokens are
    case-folded. Backticked spans are code tokens whole; the rest keeps every other word.
    """
    found = [("code", " ".join(span.split()).casefold()) for span in _CODE_SPAN.findall(text)]

    def take(match: re.Match) -> str:
        raw = match.group(0)
        token = (raw.rstrip(".,:;") if not raw.endswith("()") else raw).lstrip(":")
        if any(c.isdigit() for c in token):
            found.append(("number", token.casefold()))
        elif token and _CODE_LIKE.search(token):
            found.append(("code", token.casefold()))
        else:
            return raw
        return " "

    return _TOKEN.sub(take, _CODE_SPAN.sub(" ", text)), found


def markers(text: str) -> tuple[Counter, Counter, int]:
    """What two near duplicates must share to be merged: ``(numbers, code-like tokens, negations)``.

    Args:
        text: a memory's text.

    Returns:
        The multiset of number-bearing tokens, the multiset of the other code-like tokens
        (paths, flags, ``x.y``, ``snake_case``, ``camelCase``, ``f()``, backticked spans),
        both NFKC and case-folded, and the count of negations (see the module docstring).
    """
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    _, found = _tokens(text)
    numbers = Counter(token for kind, token in found if kind == "number")
    code = Counter(token for kind, token in found if kind == "code")
    cjk = text
    for word in NOT_NEGATIONS:
        cjk = cjk.replace(word, "")
    negations = len(NEGATION_WORDS.findall(text)) + sum(cjk.count(c) for c in NEGATION_CHARS)
    return numbers, code, negations


def content_words(text: str) -> dict[str, str]:
    """The content words of a text: Snowball English stem -> the first word (case-folded) with that stem.

    What is left of the NFKC-normalised, case-folded text once the number-bearing and
    code-like tokens (compared by :func:`markers`), the negations (counted there:
    ``can't`` and ``cannot`` leave ``can``) and the :data:`STOP_WORDS` are taken out,
    split into words at anything that is not a letter; each word reduced to its stem by
    PyStemmer's Snowball English stemmer (the one ``memcli.index.tokenize`` uses), so
    ``dashboard``/``dashboards`` and ``live``/``lives`` are one word. Han and kana have no
    spaces between words: each of their characters is a word of its own, except the
    particles in :data:`CJK_PARTICLES` and the negating characters. Order and repetition
    do not count: the result is a set.
    """
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    rest, _ = _tokens(text)
    rest = _CONTRACTIONS.sub(lambda m: _CONTRACTED.get((m.group(1) or m.group(2)).casefold(), m.group(1) or m.group(2))
                             + " not", rest).casefold()
    for word in NOT_NEGATIONS:
        rest = rest.replace(word, " ")
    rest = _HAN_KANA.sub(lambda m: " " + " ".join(c for c in m.group(0) if c not in _CJK_SKIP) + " ",
                         NEGATION_WORDS.sub(" ", rest))
    words = [w for w in _WORD.findall(rest) if w not in STOP_WORDS]
    out: dict[str, str] = {}
    for word, stem in zip(words, _stems(words)):
        out.setdefault(stem, word)
    return out


def _stems(words: list[str]) -> list[str]:
    """The Snowball English stem of each word (PyStemmer, loaded on first use); non-English words unchanged."""
    global _STEMMER
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("english")
    return _STEMMER.stemWords(words)


def differences(text: str, other: str) -> list[str]:
    """Why two near-duplicate texts may say different things, in words; empty when they may merge.

    The reasons, in this order: ``the numbers differ``, ``the names, paths or flags
    differ``, ``one negates the other`` (see :func:`markers`), and ``the words differ
    (enable / disable)`` when the :func:`content_words` differ: those only in ``text``,
    then those only in ``other`` (``—`` for none), at most :data:`SHOWN_WORDS` each.
    """
    mine, theirs = markers(text), markers(other)
    why = []
    if mine[0] != theirs[0]:
        why.append("the numbers differ")
    if mine[1] != theirs[1]:
        why.append("the names, paths or flags differ")
    if mine[2] != theirs[2]:
        why.append("one negates the other")
    words, other_words = content_words(text), content_words(other)
    if words.keys() != other_words.keys():
        sides = [_shown([word for stem, word in a.items() if stem not in b])
                 for a, b in ((words, other_words), (other_words, words))]
        why.append(f"the words differ ({sides[0]} / {sides[1]})")
    return why


def _shown(words: list[str]) -> str:
    """At most :data:`SHOWN_WORDS` words joined by commas, ``…`` when there were more, ``—`` for none."""
    if not words:
        return "—"
    return ", ".join(words[:SHOWN_WORDS]) + (", …" if len(words) > SHOWN_WORDS else "")


def _groups(memories: list[Memory], threshold: int
            ) -> tuple[list[tuple[Memory, list[tuple[Memory, str]]]], list[Conflict]]:
    """Duplicate groups of one scope: ``(keeper, [(memory, reason), …])``, keeper the oldest; and possible conflicts.

    Each memory, oldest first, that no earlier one claimed takes every later duplicate of
    its own text (exact first, then near by falling ratio) that fits the group: an exact
    duplicate whose subject does not differ from any in the group, a near duplicate with
    the group's subject (the keeper's, else an exact duplicate's) and no
    :func:`differences`. A near duplicate with differences is a possible conflict.
    """
    from memcli.policy.gates import find_duplicates

    by_id = {m.id: m for m in memories}
    free = {m.id: normalise_text(m.text) for m in memories}
    out, doubtful = [], []
    for keeper in memories:
        if keeper.id not in free:
            continue
        del free[keeper.id]
        candidates = dict(free)
        group: list[tuple[Memory, str]] = []
        while candidates:
            found = find_duplicates(keeper.text, candidates, threshold)
            if not found:
                break
            for dup in found:
                del candidates[dup.memory_id]
                other = by_id[dup.memory_id]
                subjects = [keeper.subject, *(m.subject for m, _ in group)]
                if dup.exact:
                    if _compatible(subjects, other.subject):
                        group.append((other, "exact duplicate"))
                        del free[other.id]
                    continue
                subject = next((s for s in subjects if s), None)
                if other.subject and subject and _fold(other.subject) != _fold(subject):
                    continue  # about different things
                why = differences(keeper.text, other.text)
                if _fold(other.subject) != _fold(subject):
                    why.append("only one has a subject")
                if not why:
                    group.append((other, f"{int(dup.ratio)}% similar"))
                    del free[other.id]
                elif not (other.subject and _fold(other.subject) == _fold(subject)):  # else: a subject conflict
                    doubtful.append(Conflict([keeper.id, other.id], keeper.scope, None,
                                             f"{int(dup.ratio)}% similar but {' and '.join(why)}", "possible"))
        if group:
            out.append((keeper, sorted(group, key=lambda pair: _age(pair[0]))))
    return out, doubtful


def _merge(result: Plan, keeper: Memory, group: list[tuple[Memory, str]], now: datetime) -> None:
    """Add one merge to ``result``: the others superseded by ``keeper``, the keeper enriched."""
    others = [m for m, _ in group]
    members = [keeper, *others]
    for other in others:
        result.changes[other.id] = {"status": "superseded", "supersededBy": [*other.superseded_by, keeper.id],
                                    "updatedAt": now}
    changes: dict[str, Any] = {"updatedAt": now}
    importance = max(m.importance for m in members)
    if importance != keeper.importance:
        changes["importance"] = importance
    if any(m.pinned for m in others) and not keeper.pinned:
        changes["pinned"] = True
    subject = next((m.subject for m in others if m.subject), None)
    if keeper.subject is None and subject is not None:
        changes["subject"] = subject
    expiries = [m.expire_at for m in members if m.expire_at is not None]
    expiry = max(expiries) if len(expiries) == len(members) else None
    if expiry != keeper.expire_at:
        changes["expireAt"] = expiry  # None removes the key
    for key, attr in (("tags", "tags"), ("paths", "paths")):
        union = list(dict.fromkeys(v for m in members for v in getattr(m, attr)))
        if union != getattr(keeper, attr):
            changes[key] = union
    changes["supersedes"] = list(dict.fromkeys([*keeper.supersedes, *(m.id for m in others)]))
    changes["merged"] = [*keeper.merged, *(entry for m in others for entry in [*m.merged, _provenance(m)])]
    result.changes[keeper.id] = changes
    reasons = ", ".join(dict.fromkeys(reason for _, reason in group))
    result.actions.append(Action("merge", [m.id for m in others], keeper.scope, reasons, keeper.text,
                                 keeper=keeper.id))


def _provenance(memory: Memory) -> dict[str, Any]:
    """The ``merged`` entry of one memory: its id and provenance."""
    prov = memory.provenance
    return {"id": memory.id, "sourceType": prov.source_type, "actor": prov.actor, "runId": prov.run_id,
            "at": prov.at or memory.created_at}


def _conflicts(memories: list[Memory], changes: dict[str, dict[str, Any]]) -> list[Conflict]:
    """Subjects held by more than one memory of a scope after the plan (keepers may take a subject)."""
    holders: dict[tuple[str, str], list[Memory]] = {}
    for memory in memories:
        subject = changes.get(memory.id, {}).get("subject", memory.subject)
        if subject:
            holders.setdefault((memory.scope, subject.casefold()), []).append(memory)
    out = []
    for (scope, _), held in sorted(holders.items()):
        if len(held) > 1:
            subject = held[0].subject or changes[held[0].id]["subject"]
            both = "both" if len(held) == 2 else "all"
            out.append(Conflict([m.id for m in held], scope, subject, f'{both} active with subject "{subject}"'))
    return out
