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
from memcli.model import Memory, check_id, check_scope
from memcli.policy.gates import personal_owner, readable_scopes
from memcli.store.files import Loaded
from memcli.store.workspace import Workspace, open_workspace
from memcli.timeutil import now as clock_now

MIN_PREFIX = 4
#: Unreadable files named on stderr by one command, at most; `memcli doctor` lists all.
MAX_PROBLEM_WARNINGS = 5


def check_ref(value: str) -> str:
    """Normalise an id argument (a whole id, or a prefix of one) and check its characters.

    An id is 1-64 characters ``a-z 0-9 - _`` (``model.check_id``); a prefix needs
    ``MIN_PREFIX`` or more, and a shorter well-formed one is returned for the caller to
    refuse with a hint (exit 4, see ``Ctx.resolve``).

    Raises:
        ValidationFailed: empty, or not made of id characters (exit 5), with a message that
            fits a whole id and a prefix alike.
    """
    ref = value.strip().lower()
    if ref and len(ref) < MIN_PREFIX and ref.isascii() and ref.replace("-", "").replace("_", "").isalnum():
        return ref
    try:
        return check_id(ref)
    except ValidationFailed:
        raise ValidationFailed(
            f"invalid id {value[:70]!r}: give a whole id (1-64 characters a-z, 0-9, '-' or '_') "
            f"or its first {MIN_PREFIX} or more characters",
            hint="list ids with `memcli list`; ids are file names, so no dots, slashes or spaces") from None


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
    _catalog: object | None = None
    _warned: bool = False

    @classmethod
    def open(cls, workspace: str | None = None, actor: str | None = None) -> "Ctx":
        """Open the workspace and read the clock.

        Raises:
            WorkspaceNotFound, WorkspaceInvalid: no usable workspace.
            ValidationFailed: ``$MEMCLI_NOW`` or the actor name is malformed.
        """
        ws = open_workspace(workspace)
        name = actor or default_actor()
        try:
            check_scope(f"user:{name}")  # the actor owns user:<actor>, so the name must make a valid scope
        except ValidationFailed:
            raise ValidationFailed(f"invalid actor name {name[:60]!r}: use letters, digits, '.', '_', '@' or '-'",
                                   hint="set --actor or $MEMCLI_ACTOR to a plain name, e.g. alice") from None
        try:
            now = clock_now()
        except ValueError:
            raise ValidationFailed(f"$MEMCLI_NOW is not a date or RFC 3339 time: {os.environ.get('MEMCLI_NOW')!r}") \
                from None
        return cls(ws=ws, actor=name, now=now)

    def catalog(self, refresh: bool = False, progress=None):  # noqa: ANN001, ANN201 - memcli.index.catalog.Catalog
        """The memories of the workspace: the synced index, or a scan when the index is unusable.

        Opened once per command; ``refresh`` syncs again (writers call it under the lock).
        Unreadable files the caller may hear about become warnings, once per command;
        read problems with ``catalog().problems(actor=ctx.actor)`` (another user's
        personal folder is neither counted nor named).
        """
        from memcli.errors import WorkspaceInvalid
        from memcli.index.catalog import ScanCatalog, open_catalog

        if self._catalog is None or refresh:
            try:
                self._catalog = open_catalog(self.ws.files, self.ws.cache, self.warnings, progress)
            except WorkspaceInvalid as err:  # no usable cache folder: serve from the files
                self.warnings.append(f"search index unavailable ({err.message}); searching the files directly")
                self._catalog = ScanCatalog(self.ws.files.scan())
            if not self._warned:
                self._warned = True
                problems = self._catalog.problems(actor=self.actor)
                self.warnings.extend(f"skipped {p.line()}" for p in problems[:MAX_PROBLEM_WARNINGS])
                if len(problems) > MAX_PROBLEM_WARNINGS:
                    self.warnings.append(f"skipped {len(problems) - MAX_PROBLEM_WARNINGS} more unreadable files; "
                                         "list them with `memcli doctor`")
        return self._catalog

    def load(self, memory: Memory) -> Loaded:
        """Read a memory's file fresh from disk (for a rewrite).

        Raises:
            InvalidMemoryFile: the file changed and no longer parses; memcli never rewrites it.
        """
        return self.ws.files.load(self.ws.root / memory.path)

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
            ValidationFailed: ``ref`` is empty or not made of id characters (see :func:`check_ref`).
        """
        ref = check_ref(ref)  # a malformed id (path characters, '..', NUL) is a validation error, exit 5
        hint = "list ids with `memcli list` or search with `memcli recall WORDS`"
        items = [m for m in self.catalog().by_prefix(ref) if self.may_see(m)]
        if len(ref) < MIN_PREFIX:  # a short hand-written id (ci.md) is found by its whole value only
            items = [m for m in items if m.id == ref]
            if not items:
                raise MemoryNotFound(f"no memory {ref!r}: give at least {MIN_PREFIX} characters of the id", hint=hint)
        exact = [m for m in items if m.id == ref]
        if exact:
            return self.load(exact[0])
        if not items:
            problems = self.catalog().problems(actor=self.actor)
            broken = [p for p in problems if Path(p.path).stem.lower().startswith(ref)]
            if len(broken) == 1:  # the id names a file that cannot be read: say why, never rewrite it
                raise broken[0]
            raise MemoryNotFound(f"no memory {ref!r}", hint=hint)
        if len(items) > 1:
            ids = ", ".join(m.id for m in sorted(items, key=lambda m: m.id, reverse=True)[:5])
            more = f" and {len(items) - 5} more" if len(items) > 5 else ""
            raise AmbiguousId(f"id prefix {ref!r} matches {len(items)} memories: {ids}{more}",
                              hint="give more characters of the id (8 tell apart memories a second apart)")
        return self.load(items[0])

    def git(self) -> gitlog.GitRepo:
        """The repository holding the workspace."""
        return gitlog.GitRepo(self.ws.root)

    def history(self):  # noqa: ANN201 - memcli.githistory.History, imported lazily
        """The repository holding the workspace, with its history readers (old versions, commits per path)."""
        from memcli.githistory import History

        return History(self.ws.root)

