"""Scope isolation and the write gates (SPEC.md section 3), as pure functions.

The order of the gates is fixed by the spec and applied by ``service.write``:
validation, sensitive data, idempotency, duplicates, conflict, review.
"""

from __future__ import annotations

import sys

from memcli.errors import ScopeViolation, SecretDetected
from memcli.model import Memory, check_scope, normalise_text


def personal_owner(scope: str) -> str | None:
    """The owner of a personal scope (``user:alice`` -> ``alice``), else None."""
    kind, _, name = scope.partition(":")
    return name if kind == "user" else None


def readable_scopes(patterns: list[str], actor: str, requested: list[str] | None = None) -> list[str]:
    """The scopes a query may read (SPEC.md section 3: a query carries a list of scopes).

    Args:
        patterns: ``[scopes] read`` from the configuration; ``{actor}`` is replaced.
        actor: the caller's name.
        requested: ``--scope`` values, if the caller named scopes.

    Raises:
        ScopeViolation: a requested scope is another user's personal scope.
        ValidationFailed: a requested scope is malformed.
    """
    if not requested:
        return [p.replace("{actor}", actor) for p in patterns]
    out = []
    for scope in requested:
        check_scope(scope)
        owner = personal_owner(scope)
        if owner is not None and owner != actor:
            raise ScopeViolation(f"scope {scope} is personal to {owner}; you are {actor}",
                                 hint=f"read your own scope with --scope user:{actor}")
        out.append(scope)
    return out


def visible(memory: Memory, scopes: list[str], actor: str | None = None) -> bool:
    """True when the memory's scope is one of ``scopes`` (patterns like ``channel:*`` allowed).

    With ``actor``, another person's personal memory (``user:bob``, or a session of
    bob's: ``policy.owner``) is never visible, whatever the patterns say
    (``[scopes] read = ["*"]`` must not open ``user:bob`` to alice).
    """
    from fnmatch import fnmatchcase

    from memcli.policy.owner import may_see

    if actor is not None and not may_see(memory, actor):
        return False
    return any(memory.scope == s or fnmatchcase(memory.scope, s) for s in scopes)


def check_write_scope(scope: str, actor: str) -> str:
    """A write may not go into another user's personal scope.

    Raises:
        ScopeViolation: ``scope`` is ``user:X`` with X not ``actor``.
    """
    owner = personal_owner(check_scope(scope))
    if owner is not None and owner != actor:
        raise ScopeViolation(f"cannot write to {scope}: it is personal to {owner}, and you are {actor}",
                             hint=f"write to user:{actor} or a shared scope")
    return scope


def review_required(scope: str, source_type: str, shared: list[str]) -> bool:
    """Whether a write waits in ``pending_review``: a shared scope and an agent or tool source."""
    from fnmatch import fnmatchcase

    return source_type in ("model_derived", "tool_result") and any(fnmatchcase(scope, p) for p in shared)


def article(phrase: str) -> str:
    """The indefinite article for ``phrase``: "an" before a vowel sound ("an AWS key", "an OpenAI
    key"), else "a" ("a GitHub token", "a US social security number")."""
    word = phrase.split(" ", 1)[0]
    if word.isupper() and word.isalpha():  # an initialism, read letter by letter
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in ("a", "e", "i", "o") else "a"


def check_secrets(*texts: str, allow: tuple[str, ...] = ()) -> None:
    """The sensitive-data gate: refuse any text that holds a secret, never echoing it.

    Args:
        texts: the memory text first, then its labels (subject, tags, paths); see
            :func:`check_memory` for every value of a record, each named.
        allow: slugs of kinds a person let through (``remember --allow-secret KIND``).

    Raises:
        SecretDetected: naming the kind and the line and column of the first finding.
        HiddenText: a text holds an invisible character (checked after the secrets, so a
            token split by a zero-width space is reported as the secret it is).
    """
    for index, text in enumerate(texts):
        if index == 0 and text.startswith("\ufeff"):  # a byte order mark from stdin: model.check_text drops it
            text = text[1:]
        _refuse(text, "the text" if index == 0 else "a label", allow)


def written_values(memory: Memory) -> list[tuple[str, str]]:
    """Every text value of ``memory`` that memcli writes to its file, its path or a commit message.

    Returns:
        ``(field, value)`` pairs, the text first; ``field`` names the value for a person
        (``"the run id"``, ``"a tag"``). Unset values are left out; dates, numbers and
        hashes are not texts and never hold a secret.
    """
    prov = memory.provenance
    review = memory.review or {}
    values = [("the text", memory.text), ("the id", memory.id), ("the scope", memory.scope),
              ("the category", memory.category), ("the subject", memory.subject),
              ("the source", prov.source), ("the run id", prov.run_id),
              ("the idempotency key", prov.idempotency_key), ("the actor", prov.actor),
              ("the review reason", review.get("reason")), ("the reviewer", review.get("by")),
              *(("a tag", t) for t in memory.tags), *(("a path", p) for p in memory.paths),
              *(("a merged memory's run id", m.get("runId")) for m in memory.merged)]
    return [(name, str(value)) for name, value in values if value]


def check_memory(memory: Memory, *more: tuple[str, str | None], allow: tuple[str, ...] = ()) -> None:
    """The sensitive-data and hidden-text gate over a whole record: every value :func:`written_values` lists.

    A secret in ``--run-id``, ``--idempotency-key``, ``--scope`` (a folder name and a
    commit trailer), the import source or a hand-edited key is refused like one in the text.

    Args:
        memory: the record to be written (or rewritten).
        more: other ``(field, value)`` pairs the write puts in its commit (``("the actor", actor)``).
        allow: slugs of secret kinds a person let through in the text (``--allow-secret``);
            never in the other fields. Default: the record's ``provenance.allowSecret``,
            honoured only for a person's write (``user_said``, ``admin_edit``).

    Raises:
        SecretDetected: naming the field, the kind and where in the value (never the secret).
        HiddenText: a value holds an invisible character (:mod:`memcli.text.hidden`).
    """
    person = memory.provenance.source_type in ("user_said", "admin_edit")
    allow = (allow or tuple(memory.provenance.allow_secret)) if person else ()
    for name, value in [*written_values(memory), *more]:
        _refuse(value, name, allow if name == "the text" else ())


def check_values(*pairs: tuple[str, str | None]) -> None:
    """The same gate over single values a write adds (``("the actor", actor)``); see :func:`check_memory`.

    Raises:
        SecretDetected, HiddenText: as :func:`check_memory`.
    """
    for name, value in pairs:
        _refuse(value, name)


def _where(text: str, where: str, line: int, column: int) -> str:
    return f"line {line}, column {column}" if where == "the text" or "\n" in text else f"column {column}"


def _refuse(text: str | None, where: str, allow: tuple[str, ...] = ()) -> None:
    """Raise SecretDetected or HiddenText for ``text``; ``where`` names the value (``"the run id"``)."""
    from memcli.errors import HiddenText
    from memcli.text.hidden import find_hidden
    from memcli.text.secrets import find_secrets

    text = text or ""
    findings = [f for f in find_secrets(text) if f.slug not in allow]
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        override = f"; if it is a public test value, a person can pass it with --allow-secret {first.slug}" \
            if where == "the text" else ""
        raise SecretDetected(
            f"refused: {where} holds {article(first.kind)} {first.kind} at "
            f"{_where(text, where, first.line, first.column)}{more}",
            hint=f"remove the secret and store where it lives instead (e.g. 'the key is in the vault'){override}")
    hidden = find_hidden(text)
    if hidden is not None:
        raise HiddenText(
            f"refused: {where} holds an invisible character, {hidden.name}, at "
            f"{_where(text, where, hidden.line, hidden.column)}",
            hint="remove it: invisible characters can hide text from the person reading the memory")


class Duplicate:
    """A duplicate found by the duplicate gate: the existing memory's id, the ratio (0–100)
    and whether the normalised texts are the same."""

    __slots__ = ("memory_id", "ratio", "exact")

    def __init__(self, memory_id: str, ratio: float, exact: bool) -> None:
        self.memory_id = memory_id
        self.ratio = ratio
        self.exact = exact


def ratio_lengths(length: int, threshold: float) -> tuple[int, int]:
    """The lengths (characters, bounds included) a text can have and still reach a rapidfuzz
    ``fuzz.ratio`` of ``threshold`` (0-100) against a text of ``length`` characters.

    ``fuzz.ratio`` is the normalised Indel similarity, ``200 * LCS / (l1 + l2)`` (rapidfuzz's
    documentation of ``Indel.normalized_similarity``); the longest common subsequence is at
    most the shorter length, so a ratio of at least ``T`` needs ``l2`` within
    ``[l1 * T / (200 - T), l1 * (200 - T) / T]``. Rounded outwards: a text outside can never
    reach the threshold, so a gate that compares only these misses nothing.
    """
    import math

    if threshold <= 0:
        return 0, sys.maxsize
    low = math.floor(length * threshold / (200 - threshold))
    high = math.ceil(length * (200 - threshold) / threshold) if threshold < 200 else length
    return low, high


def find_duplicates(text: str, candidates: dict[str, str], threshold: int) -> list[Duplicate]:
    """Exact (same normalised text) and near (rapidfuzz ratio >= threshold) duplicates.

    Args:
        text: the new memory's text.
        candidates: ``id -> normalised text`` of the live (active or pending) memories of
            the new memory's scope; other scopes are never compared.
        threshold: 0–100; ``[gates] near_duplicate``.

    Returns:
        Exact matches first, then at most five near ones by falling ratio.
    """
    from rapidfuzz import fuzz, process

    wanted = normalise_text(text)
    exact = [Duplicate(i, 100.0, True) for i, other in candidates.items() if other == wanted]
    if exact:
        return exact
    near = process.extract(wanted, candidates, scorer=fuzz.ratio, score_cutoff=threshold, limit=5)
    return [Duplicate(key, ratio, False) for _, ratio, key in near]
