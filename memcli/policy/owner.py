"""Who a memory belongs to, and so who may see it (SPEC.md sections 1 and 3: personal scopes).

Two kinds of scope are personal:

* ``user:NAME`` belongs to NAME (the name is in the scope);
* ``session:ID`` belongs to the person whose session it was. The scope name is the
  agent's session id, which says nothing about the person, so the owner is recorded in
  each memory: its ``provenance.actor`` (the actor of the write that made it, e.g. the
  ``compact --transcript`` or pre-compact hook run that wrote the session's summary). A
  session memory written by hand without a provenance actor has the default actor
  ``unknown`` and is shown to nobody else.

Every other scope (``project``, ``global``, ``channel:*``, ``agent:*``, ``task:*``) is shared.

Pure: no I/O. Commits are judged by their trailers: a ``session:*`` scope named in a
commit is the commit's actor's (``Memcli-Actor``), since only the owner may write there
(``service.write`` refuses the others).
"""

from __future__ import annotations

from memcli.model import Memory
from memcli.policy.gates import personal_owner as user_owner

SESSION = "session:"


def is_session(scope: str) -> bool:
    """True for a ``session:*`` scope."""
    return scope.startswith(SESSION)


def owner_of(memory: Memory) -> str | None:
    """The person ``memory`` belongs to: NAME for ``user:NAME``, the provenance actor for
    ``session:*``, None for a shared scope."""
    if is_session(memory.scope):
        return memory.provenance.actor or "unknown"
    return user_owner(memory.scope)


def may_see(memory: Memory, actor: str) -> bool:
    """True when ``actor`` may see ``memory`` at all: it is shared, or ``actor`` owns it."""
    owner = owner_of(memory)
    return owner is None or owner == actor


def scope_in_commit_is_mine(scope: str, commit_actor: str | None, actor: str) -> bool:
    """True when a scope named in a commit's ``Memcli-Scope`` trailer is one ``actor`` may see.

    Args:
        scope: one scope of the trailer.
        commit_actor: the commit's ``Memcli-Actor`` (else its git author).
        actor: the reader.
    """
    if is_session(scope):
        return commit_actor == actor
    owner = user_owner(scope)
    return owner is None or owner == actor
