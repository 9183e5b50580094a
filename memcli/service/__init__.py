"""The operations of memcli: the only layer that combines store, policy, git and index.

Each operation takes a :class:`Ctx` and plain arguments, returns a result object (data,
messages, warnings) and raises ``MemcliError`` subclasses; it never prints.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, overload

from memcli.errors import AmbiguousId, MemoryNotFound, ValidationFailed, WorkspaceNotFound
from memcli.model import Memory, check_id, check_scope
from memcli.policy.gates import readable_scopes
from memcli.store.files import PARTIAL, Loaded
from memcli.store.workspace import Workspace, open_workspace
from memcli.timeutil import OutOfCalendar
from memcli.timeutil import now as clock_now

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.git.history import History
    from memcli.git.repo import GitRepo
    from memcli.index.catalog import Catalog

MIN_PREFIX = 4
#: Share of ``[hooks] deadline`` the index sync of a hook may take; the answer needs the rest.
SYNC_SHARE = 0.35
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


#: Set in a child of the warm fork server (``memcli.cli.zygote``): when its client process
#: started, a ``time.monotonic()`` instant (the child's own start is later).
STARTED: float | None = None


def process_started() -> float:
    """When this process started, as a ``time.monotonic()`` instant (``memcli.process_started``);
    in a child of the warm fork server: when the client that handed it the command started
    (:data:`STARTED`)."""
    if STARTED is not None:
        return STARTED
    from memcli import process_started as started

    return started()


def default_actor(root: Path | None = None) -> str:
    """The caller's name: ``$MEMCLI_ACTOR``, else git's ``user.email``, else ``user.name``
    (as git would read them in the workspace ``root``: repository, global and
    ``includeIf`` settings alike), else the login name (SPEC.md section 1, Identity).

    Characters a scope name cannot hold (``+``, spaces …) become ``-``, so the name always
    makes a valid ``user:<name>`` scope. The git lookup is one ``git config`` process
    (a few milliseconds), run only when no ``--actor`` or ``$MEMCLI_ACTOR`` is given and
    git's config files or environment changed since the last command (``memcli.git.identity``).
    """
    name = os.environ.get("MEMCLI_ACTOR")
    if name:
        return name
    if root is not None:
        identity = _git_identity(root)
        if identity:
            return identity
    import getpass  # the last resort only (it imports termios, pwd): most actors come from above

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


#: The file in a workspace's ``.cache`` keeping git's identity and commit settings (``memcli.git.identity``).
IDENTITY_CACHE = "git-identity.json"


def _git_identity(root: Path) -> str | None:
    """git's name for the caller in ``root`` (``memcli.git.identity``), cached in the workspace's ``.cache``."""
    from memcli.git.identity import configured
    from memcli.store.workspace import CACHE

    cache = root / CACHE
    # only into a real folder of the workspace (``store.workspace.cache_folder`` refuses links; a read creates none)
    usable = cache.is_dir() and not cache.is_symlink()
    return configured(root, cache / IDENTITY_CACHE if usable else None)


def _clock() -> datetime:
    """The command's clock (``timeutil.now``).

    Raises:
        ValidationFailed: ``$MEMCLI_NOW`` is malformed or out of the calendar.
    """
    try:
        return clock_now()
    except OutOfCalendar as err:
        raise ValidationFailed(f"$MEMCLI_NOW: {err}", hint="give a time from 0001-01-01 to 9999-12-31 in UTC") \
            from None
    except ValueError:
        raise ValidationFailed(f"$MEMCLI_NOW is not a date or RFC 3339 time: {os.environ.get('MEMCLI_NOW')!r}") \
            from None


def _config_notes(ws: Workspace) -> list[str]:
    """The warnings about the configuration: a file that does not load (``Config.broken``: the
    settings used instead), unknown keys (a typo would otherwise be silently
    ignored), and an empty ``[scopes] read`` (every read without ``--scope`` would find nothing)."""
    notes = [ws.config.broken] if ws.config.broken else []
    if ws.config.unknown:
        notes.append(f"{ws.root / 'memcli.toml'}: unknown {', '.join(ws.config.unknown[:5])} (ignored; "
                     "the keys are listed in docs/reference/configuration.md)")
    if not ws.config.read_scopes:
        notes.append(f"{ws.root / 'memcli.toml'}: [scopes] read is empty, so list, recall, context and the hooks "
                     "read no memory unless --scope names one (the default is "
                     "[\"global\", \"project\", \"user:{actor}\"])")
    return notes


class Ctx:
    """Who is asking, where, and when.

    Attributes:
        ws: the opened workspace.
        actor: the caller's name (provenance ``actor``, owner of ``user:<actor>``).
        now: the clock (aware UTC), fixed for the whole command.
        warnings: messages for stderr gathered while working (bad files, near duplicates);
            a fresh empty list when None.
        deadline: a ``time.monotonic()`` instant for the index sync (hooks, ``context``):
            what it does not reach by then is left to one background build
            (``memcli.index.build``); None: no deadline.
    """

    __slots__ = ("ws", "actor", "now", "warnings", "deadline", "kept", "tolerant", "before_arrival", "_catalog",
                 "_warned", "_stores", "_history")

    def __init__(self, ws: Workspace, actor: str, now: datetime, warnings: list[str] | None = None,
                 deadline: float | None = None) -> None:
        self.ws = ws
        self.actor = actor
        self.now = now
        self.warnings = [] if warnings is None else warnings
        self.deadline = deadline
        #: A long-lived process's opened indexes (index path -> ``IndexDB``), reused by
        #: :meth:`catalog` instead of opened anew (the MCP server); None: one per command.
        self.kept: dict | None = None
        #: Whether a ``memcli.toml`` that stops loading while this command runs (a pull it
        #: verifies removed or broke it) gives the fallback settings (:meth:`open`'s ``tolerant``)
        #: or stops the command, as it would have stopped it at the start.
        self.tolerant = True
        #: Called with the index as it stands when what arrived must be verified before it is
        #: served (``service.arrived.unverified``), before that starts: the pre-tool hook's
        #: answer should the verification outlast its deadline (``service.hooks._guard``).
        self.before_arrival: Callable[[Catalog], None] | None = None
        self._catalog: Catalog | None = None  # opened by catalog(), once per command
        self._warned = False  # the catalog's unreadable files were reported
        self._stores: list | None = None  # the person's own stores, found by personal_stores()
        self._history: History | None = None  # the workspace's repository, found by history()

    @classmethod
    def open(cls, workspace: str | None = None, actor: str | None = None, tolerant: bool = False) -> "Ctx":
        """Open the workspace and read the clock.

        Args:
            tolerant: a ``memcli.toml`` that does not load gives the settings of its last
                committed version that loads, said in a warning (``service.settings``: the
                hooks and the commands that mend it); else it is an error.

        Raises:
            WorkspaceNotFound, WorkspaceInvalid: no usable workspace.
            ValidationFailed: ``$MEMCLI_NOW`` or the actor name is malformed.
        """
        from memcli.service.settings import settle as settled

        def settle(root: Path) -> Config:
            return settled(root, tolerant)

        notes: list[str] = []
        try:
            ws = open_workspace(workspace, settle)  # a held-back or broken memcli.toml: service.settings
        except WorkspaceNotFound:  # a fresh clone of a project whose store is on a memory branch
            from memcli.service.branch import locate

            found, note = locate(workspace)
            ws = open_workspace(found, settle)
            notes.append(note) if note else None
        name = actor or default_actor(ws.root)
        try:
            check_scope(f"user:{name}")  # the actor owns user:<actor>, so the name must make a valid scope
        except ValidationFailed:
            raise ValidationFailed(f"invalid actor name {name[:60]!r}: use letters, digits, '.', '_', '@' or '-'",
                                   hint="set --actor or $MEMCLI_ACTOR to a plain name, e.g. alice") from None
        now = _clock()
        opened = cls(ws=ws, actor=name, now=now, warnings=notes + _config_notes(ws))
        opened.tolerant = tolerant
        return opened

    def again(self) -> "Ctx":
        """A context for the next operation of a long-lived process (the MCP server): the same
        workspace, configuration, actor and kept indexes (:attr:`kept`), the clock read again,
        no warning carried over.

        Raises:
            ValidationFailed: ``$MEMCLI_NOW`` is malformed.
        """
        again = Ctx(ws=self.ws, actor=self.actor, now=_clock(), warnings=_config_notes(self.ws))
        again.tolerant = self.tolerant
        again.kept = self.kept
        return again

    def catalog(self, refresh: bool = False, progress: Callable[[int, int], None] | None = None,
                wait: float | None = None, full: bool = False) -> Catalog:
        """The memories of the workspace (a ``memcli.index.catalog.Catalog``): the synced index,
        or a scan when the index is unusable.

        Opened once per command; ``refresh`` syncs again (writers call it under the lock), after
        completing or rolling back a write a kill interrupted (``service.journal``).
        ``wait``: seconds to wait for another process's index build (default
        ``memcli.index.db.LOCK_WAIT``); the sync stops at ``deadline`` when one is set,
        except for a writer's ``refresh``: the write gates need every file.
        ``full`` (``index status``, ``index rebuild``, ``doctor``) walks every file; a read and
        a writer's ``refresh`` check the folders and the racy files instead, and owe the full
        walk once they have answered (``memcli.index.fresh``: docs/search.md, "Freshness"); a
        writer re-reads from disk every file it rewrites (``service.write``).
        Unreadable files the caller may hear about become warnings, once per command;
        read problems with ``catalog().problems(actor=ctx.actor)`` (another user's
        personal folder is neither counted nor named).
        """
        from memcli.errors import WorkspaceInvalid
        from memcli.index.catalog import ScanCatalog, open_catalog

        if refresh and self.ws.config.autocommit and (self.ws.root / ".cache" / "unfinished-write.json").exists():
            from memcli.errors import MemcliError
            from memcli.service import journal  # a writer killed half-way: finish or undo it before reading

            try:
                done = journal.recover(self)  # refresh=True callers hold the workspace lock
            except MemcliError as err:
                done = f"an unfinished write could not be finished yet ({err.message}); `memcli doctor` retries"
            if done:
                self.warnings.append(done)
        if refresh:
            self._settle()
        if self._catalog is None or refresh:
            try:
                self._catalog = open_catalog(self.ws.files, self.ws.cache, self.warnings, progress,
                                             deadline=None if refresh else self.deadline, wait=wait,
                                             reader=self.actor, full=full, kept=self.kept)
            except WorkspaceInvalid as err:  # no usable cache folder: serve from the files
                self.warnings.append(f"search index unavailable ({err.message}); searching the files directly")
                self._catalog = ScanCatalog(self.ws.files.scan())
            from memcli.service import arrived as arrival

            if self.before_arrival is not None and arrival.unverified(self):
                self.before_arrival(self._catalog)
            held_paths, held_ids = arrival.held(self)  # what arrived unverified is checked first (issue 22)
            if held_paths or held_ids:
                from memcli.index.quarantined import QuarantinedCatalog

                self._catalog = QuarantinedCatalog(self._catalog, held_paths, held_ids)
            for store in self.personal_stores():
                store.deadline = None if refresh else self.deadline  # a hook's deadline bounds every store's sync
            others = [(c.ws.root, c.catalog(progress=progress, wait=wait, full=full))
                      for c in self.personal_stores()]
            if others:  # reads merge the person's own stores (issue 12)
                from memcli.index.merged import MergedCatalog

                self._catalog = MergedCatalog(self._catalog, others)
            if not self._warned:
                self._warned = True
                # the first few are named; the rest counted without making each one (10,000 rows
                # of problems made 13 MB of exceptions on every read of a 100,000-memory store)
                # a file held in quarantine is not served and `sync`, `quarantine list` and `doctor`
                # say so: no warning on every command (newcomer LOW, stops 33 and 34)
                problems = self._catalog.problems(actor=self.actor, limit=MAX_PROBLEM_WARNINGS + 1 + len(held_paths))
                held = sum(p.path in held_paths for p in problems)
                problems = [p for p in problems if p.path not in held_paths]
                self.warnings.extend(p.line() if p.reason.startswith(PARTIAL) else f"skipped {p.line()}"
                                     for p in problems[:MAX_PROBLEM_WARNINGS])
                if len(problems) > MAX_PROBLEM_WARNINGS:
                    more = self._catalog.problem_count(actor=self.actor) - held - MAX_PROBLEM_WARNINGS
                    self.warnings.append(f"skipped {more} more unreadable files; list them with `memcli doctor`")
        return self._catalog

    def _settle(self) -> None:
        """Before a writer reads (it holds the workspace lock): roll back a ``sync`` merge a kill
        interrupted (``service.sync_recover``), and name a ``purge --history`` left unfinished
        (finishing it rewrites history, which only that purge or ``doctor --fix`` may do).
        Two ``stat`` calls when there is nothing to do."""
        cache = self.ws.root / ".cache"
        from memcli.service import journal

        if (cache / journal.SYNC).exists():
            from memcli.errors import MemcliError
            from memcli.service.sync_recover import roll_back

            try:
                done = roll_back(self)
            except MemcliError as err:
                done = f"an interrupted sync could not be rolled back yet ({err.message}); `memcli doctor --fix` " \
                    "retries"
            if done:
                self.warnings.append(done)
        if (cache / journal.PURGE).exists():
            from memcli.service.purge import pending_line

            record = journal.load(self, journal.PURGE)
            if record and isinstance(record.get("id"), str) and pending_line(record) not in self.warnings:
                self.warnings.append(pending_line(record))

    def bound(self, started: float | None = None) -> None:
        """Give this command's index sync a deadline (hooks, ``context``): ``SYNC_SHARE`` of
        ``[hooks] deadline`` seconds after ``started`` (a ``time.monotonic()`` instant; default:
        when this process started, interpreter start-up included), so the answer comes within
        the deadline; the files not reached go to a background build."""
        self.deadline = (started or process_started()) + self.ws.config.hook_deadline * SYNC_SHARE

    def load(self, memory: Memory) -> Loaded:
        """Read a memory's file fresh from disk (for a rewrite); a memory of a personal store
        (an absolute ``path``, ``index.merged``) from that store, keeping the absolute path.

        Raises:
            InvalidMemoryFile: the file changed and no longer parses; memcli never rewrites it.
        """
        path = Path(memory.path)
        if path.is_absolute():
            store = next((c for c in self.personal_stores() if c.ws.root in path.parents), None)
            if store is not None:
                loaded = store.ws.files.load(path)
                loaded.memory.path = str(path)
                return loaded
        return self.ws.files.load(self.ws.root / memory.path)

    def personal_stores(self) -> list["Ctx"]:
        """The person's own stores this workspace reads (``store.personal``) that exist: the
        one of this workspace (by ``[workspace] id``) and the cross-project one. None for a
        personal store itself, or for a workspace without an id (it keeps personal scopes)."""
        if self._stores is None:
            self._stores = []
            config = self.ws.config
            if config.kind == "project" and config.workspace_id:
                from memcli.errors import WorkspaceInvalid
                from memcli.store import personal

                for root in (personal.project_store(config.workspace_id), personal.cross_project_store()):
                    if (root / "memcli.toml").is_file():
                        try:
                            self._stores.append(self._on(root))
                        except WorkspaceInvalid as err:  # one broken store never stops the others
                            self.warnings.append(f"your personal store is not read: {err.message}")
        return self._stores

    @overload
    def store_for(self, scope: str, cross_project: bool = False, create: Literal[True] = True) -> "Ctx": ...
    @overload
    def store_for(self, scope: str, cross_project: bool = False, *, create: bool) -> "Ctx | None": ...

    def store_for(self, scope: str, cross_project: bool = False, create: bool = True) -> "Ctx | None":
        """The context whose store holds ``scope``: this one, or for a personal scope
        (``user:*``, ``session:*``) of a workspace with an id, the person's own store of
        this workspace (``cross_project``: their cross-project store), created on first use
        (``create`` False: None when it does not exist yet). A store whose own repository
        is gone gets a new one, so its commits never land in an enclosing repository (a
        home folder kept in git).

        Raises:
            WorkspaceInvalid, GitFailed: the personal store cannot be created.
        """
        from memcli.store import personal

        config = self.ws.config
        if not personal.is_personal(scope.strip().lower()) or config.kind != "project" or not config.workspace_id:
            return self
        root = personal.cross_project_store() if cross_project else personal.project_store(config.workspace_id)
        found = next((c for c in self.personal_stores() if c.ws.root == root), None)
        if found is not None or not create:
            if found is not None and create and not (root / ".git").exists():
                from memcli.git.repo import GitRepo

                GitRepo.init(root, own=True)
                self.warnings.append(f"your personal store {root} had lost its git repository; it has a new one "
                                     "(its earlier history is not in it)")
            return found
        from memcli.service.stores import create_store

        create_store(root)
        store = self._on(root)
        self.personal_stores().append(store)
        self._catalog = None  # the next read merges the new store too
        return store

    def owner(self, ref: str) -> "Ctx":
        """The context whose store holds the memory ``ref`` names (see :meth:`store_for`):
        a personal store's when the merged catalog finds it there, else this one (whose own
        look-up then reports a missing or ambiguous id)."""
        if not self.personal_stores():
            return self
        from memcli.errors import MemcliError

        try:
            path = Path(self.resolve(ref).memory.path)
        except MemcliError:
            return self
        return next((c for c in self.personal_stores() if path.is_absolute() and c.ws.root in path.parents), self)

    def _on(self, root: Path) -> "Ctx":
        """This context (actor, clock, warnings, deadline) on the store at ``root``."""
        from memcli.config import CONFIG_NAME, load_config

        store = Ctx(ws=Workspace(root=root, config=load_config(root / CONFIG_NAME)), actor=self.actor, now=self.now,
                    warnings=self.warnings, deadline=self.deadline)
        store.kept = self.kept
        store._warned = True  # its unreadable files reach the reader through the merged catalog
        return store

    def scopes(self, requested: list[str] | None = None) -> list[str]:
        """The scopes a query reads; see ``policy.gates.readable_scopes``."""
        return readable_scopes(self.ws.config.read_scopes, self.actor, requested)

    def may_see(self, memory: Memory) -> bool:
        """Id-based access (show, approve, …): every memory but other people's personal ones
        (``user:<other>``, and sessions another person owns: ``policy.owner``)."""
        from memcli.policy.owner import may_see

        return may_see(memory, self.actor)

    def resolve(self, ref: str) -> Loaded:
        """Find one visible memory by its id or a unique prefix of at least 4 characters.

        Raises:
            MemoryNotFound: no visible memory matches (another user's is reported the same way).
            AmbiguousId: the prefix matches several.
            ValidationFailed: ``ref`` is empty or not made of id characters (see :func:`check_ref`),
                or shorter than ``MIN_PREFIX`` and no whole id (README, "Ids are ULIDs").
        """
        ref = check_ref(ref)  # a malformed id (path characters, '..', NUL) is a validation error, exit 5
        hint = "list ids with `memcli list` or search with `memcli recall WORDS`"
        items = [m for m in self.catalog().by_prefix(ref) if self.may_see(m)]
        if len(ref) < MIN_PREFIX:  # a short hand-written id (ci.md) is found by its whole value only
            items = [m for m in items if m.id == ref]
            if not items:  # not an id and too short to be a prefix: a value memcli refuses (exit 5)
                raise ValidationFailed(f"the id prefix {ref!r} is too short: give at least {MIN_PREFIX} "
                                       "characters of the id (a shorter id only whole)", hint=hint)
        exact = [m for m in items if m.id == ref]
        if exact:
            return self.load(exact[0])
        if not items:
            problems = self.catalog().problems(actor=self.actor)
            broken = [p for p in problems if Path(p.path).stem.lower().startswith(ref)]
            if len(broken) == 1:  # the id names a file that cannot be read: say why, never rewrite it
                raise broken[0]
            from memcli.service.arrived import load as arrival_record

            held = [e for e in arrival_record(self).get("entries", []) if isinstance(e, dict)
                    and str(e.get("memory") or "").startswith(ref) and e.get("id")]
            if len(held) == 1:  # held back on arrival: not served, but not unknown either
                entry = held[0]
                raise MemoryNotFound(f"memory {entry['memory']} is quarantined on arrival ({entry.get('reason', '')}): "
                                     "not served until a person decides",
                                     hint=f"see it with `memcli quarantine list`; `memcli quarantine accept "
                                          f"{entry['id']}` serves it, `memcli quarantine revert {entry['id']}` "
                                          "puts back the verified version")
            raise MemoryNotFound(f"no memory {ref!r}", hint=hint)
        if len(items) > 1:
            ids = ", ".join(m.id for m in sorted(items, key=lambda m: m.id, reverse=True)[:5])
            more = f" and {len(items) - 5} more" if len(items) > 5 else ""
            raise AmbiguousId(f"id prefix {ref!r} matches {len(items)} memories: {ids}{more}",
                              hint="give more characters of the id (8 tell apart memories a second apart)")
        return self.load(items[0])

    def git(self) -> GitRepo:
        """The repository holding the workspace (``memcli.git`` is imported now, not on the read path)."""
        return self.history()

    def reconfigure(self, config: Config) -> None:
        """Work by ``config`` from now on (verify on arrival held back or let through a
        ``memcli.toml``: ``service.arrival``); the repository's signing follows it."""
        self.ws.config = config
        if self._history is not None:
            self._history.sign_ssh = config.signing == "ssh"

    def history(self) -> History:
        """The repository holding the workspace, with its history readers (old versions, commits per path).

        Opened once per command (one ``git rev-parse``; what it asks does not change while
        the command runs) and kept; a workspace outside git raises each time.

        Raises:
            GitFailed: the workspace is not inside a git work tree.
        """
        if self._history is None:
            from memcli.git.history import History

            repo = History(self.ws.root)
            repo.sign_ssh = self.ws.config.signing == "ssh"
            repo.config_cache = self.git_config_cache()
            self._history = repo
        return self._history

    def git_config_cache(self) -> Path | None:
        """The file keeping what git's settings say here (``memcli.git.identity``): the actor and
        the settings a commit reads; None without a usable cache folder (git is then asked)."""
        from memcli.store.workspace import CACHE

        cache = self.ws.root / CACHE
        # only into a real folder of the workspace (``store.workspace.cache_folder`` refuses links; a read creates none)
        return cache / IDENTITY_CACHE if cache.is_dir() and not cache.is_symlink() else None

