"""Scope isolation and the write gates (SPEC.md section 3), as pure functions.

The order of the gates is fixed by the spec and applied by ``service.write``:
validation, sensitive data, idempotency, duplicates, conflict, review.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def check_secrets(*texts: str) -> None:
    """The sensitive-data gate: refuse any text that holds a secret, never echoing it.

    Args:
        texts: the memory text first, then its labels (subject, tags, paths); see
            :func:`check_memory` for every value of a record, each named.

    Raises:
        SecretDetected: naming the kind and the line and column of the first finding.
    """
    for index, text in enumerate(texts):
        _refuse(text, "the text" if index == 0 else "a label")


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


def check_memory(memory: Memory, *more: tuple[str, str | None]) -> None:
    """The sensitive-data gate over a whole record: every value :func:`written_values` lists.

    A secret in ``--run-id``, ``--idempotency-key``, ``--scope`` (a folder name and a
    commit trailer), the import source or a hand-edited key is refused like one in the text.

    Args:
        memory: the record to be written (or rewritten).
        more: other ``(field, value)`` pairs the write puts in its commit (``("the actor", actor)``).

    Raises:
        SecretDetected: naming the field, the kind and where in the value (never the secret).
    """
    for name, value in [*written_values(memory), *more]:
        _refuse(value, name)


def _refuse(text: str | None, where: str) -> None:
    """Raise SecretDetected when ``text`` holds a secret; ``where`` names the value (``"the run id"``)."""
    from memcli.policy.secrets import find_secrets

    findings = find_secrets(text or "")
    if not findings:
        return
    first = findings[0]
    at = f"line {first.line}, column {first.column}" if where == "the text" or "\n" in (text or "") \
        else f"column {first.column}"
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    raise SecretDetected(
        f"refused: {where} holds {article(first.kind)} {first.kind} at {at}{more}",
        hint="remove the secret and store where it lives instead (e.g. 'the key is in the vault')")


@dataclass
class Duplicate:
    """A duplicate found by the duplicate gate: the existing memory's id and the ratio (0–100)."""

    memory_id: str
    ratio: float
    exact: bool


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
