"""The operations of memcli: the only layer that combines store, policy, git and index.

Each operation takes a :class:`Ctx` and plain arguments, returns a result object (data,
messages, warnings) and raises ``MemcliError`` subclasses; it never prints.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memcli import gitlog
from memcli.errors import AmbiguousId, MemoryNotFound, ValidationFailed
from memcli.model import Memory
from memcli.policy.gates import personal_owner, readable_scopes
from memcli.store.files import Loaded, Scan
from memcli.store.workspace import Workspace, open_workspace
from memcli.timeutil import now as clock_now

MIN_PREFIX = 4


def default_actor() -> str:
    """The caller's name: ``$MEMCLI_ACTOR``, else the login name."""
    name = os.environ.get("MEMCLI_ACTOR")
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@dataclass
class Ctx:
    """Who is asking, where, and when.

    Attributes:
        ws: the opened workspace.
        actor: the caller's name (provenance ``actor``, owner of ``user:<actor>``).
        now: the clock (aware UTC), fixed for the whole command.
        warnings: messages for stderr gathered while working (bad files, near duplicates).
    """

    ws: Workspace
    actor: str
    now: datetime
    warnings: list[str] = field(default_factory=list)
    _scan: Scan | None = None

    @classmethod
    def open(cls, workspace: str | None = None, actor: str | None = None) -> "Ctx":
        """Open the workspace and read the clock.

        Raises:
            WorkspaceNotFound, WorkspaceInvalid: no usable workspace.
            ValidationFailed: ``$MEMCLI_NOW`` or the actor name is malformed.
        """
        ws = open_workspace(workspace)
        name = actor or default_actor()
        if not name.strip() or any(c in name for c in "\n\r\x00"):
            raise ValidationFailed(f"invalid actor name {name!r}", hint="set --actor or $MEMCLI_ACTOR to a plain name")
        try:
            now = clock_now()
        except ValueError:
            raise ValidationFailed(f"$MEMCLI_NOW is not a date or RFC 3339 time: {os.environ.get('MEMCLI_NOW')!r}") \
                from None
        return cls(ws=ws, actor=name, now=now)

    def scan(self, refresh: bool = False) -> Scan:
        """Every memory file, read once per command; unreadable files become warnings once."""
        if self._scan is None or refresh:
            self._scan = self.ws.files.scan()
            if not refresh:
                self.warnings.extend(f"skipped {p.line()}" for p in self._scan.problems)
        return self._scan

    def scopes(self, requested: list[str] | None = None) -> list[str]:
        """The scopes a query reads; see ``policy.gates.readable_scopes``."""
        return readable_scopes(self.ws.config.read_scopes, self.actor, requested)

    def may_see(self, memory: Memory) -> bool:
        """Id-based access (show, approve, …): every scope but other users' personal ones."""
        owner = personal_owner(memory.scope)
        return owner is None or owner == self.actor

    def resolve(self, ref: str) -> Loaded:
        """Find one visible memory by its id or a unique prefix of at least 4 characters.

        Raises:
            MemoryNotFound: no visible memory matches (another user's is reported the same way).
            AmbiguousId: the prefix matches several.
        """
        ref = ref.strip().lower()
        hint = "list ids with `memcli list` or search with `memcli recall WORDS`"
        if len(ref) < MIN_PREFIX:
            raise MemoryNotFound(f"no memory {ref!r}: give at least {MIN_PREFIX} characters of the id", hint=hint)
        items = [i for i in self.scan().loaded if i.memory.id.startswith(ref) and self.may_see(i.memory)]
        exact = [i for i in items if i.memory.id == ref]
        if exact:
            return exact[0]
        if not items:
            raise MemoryNotFound(f"no memory {ref!r}", hint=hint)
        if len(items) > 1:
            ids = ", ".join(i.memory.id for i in items[:5])
            raise AmbiguousId(f"id prefix {ref!r} matches {len(items)} memories ({ids})",
                              hint="give more characters of the id")
        return items[0]

    def git(self) -> gitlog.GitRepo:
        """The repository holding the workspace."""
        return gitlog.GitRepo(self.ws.root)


def relpath(ctx: Ctx, path: Path) -> str:
    """``path`` relative to the workspace, for messages."""
    return ctx.ws.files.rel(path)
