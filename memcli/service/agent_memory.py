"""The agents' own memories, governed: import Claude Code's, Codex's and Gemini CLI's stores
(``import PATH`` / ``import --agent NAME``), harvest them at session end, and ``share``.

What an import does (docs/commands.md, "The agents' own memories"):

* Each entry of the store (``agents.memstores``) goes through the write gates of
  ``remember`` (``write.write_batch``: validation, secrets and hidden text, idempotency,
  duplicates, contradictions, review) as ``sourceType: model_derived`` with the agent as
  actor (``claude-code``, ``codex``, ``gemini-cli``) and ``provenance.source`` the entry's
  sourceRef: the store file, home as ``~``, with ``#<section>`` for a bullet
  (``~/.codex/memories/MEMORY.md#group/user-preferences``), and ``provenance.line`` its line.
* Scope: the person's own ``user:<actor>`` (active: the agent already keeps it for them)
  unless ``--scope`` names another; a shared scope (``project``) makes every entry wait for
  review, and so does an entry the agent itself holds for review (Gemini's inbox).
* Idempotency key ``agentmem:<scope>:<sha256 of the sourceRef, 12 hex>:<sha256 of the text,
  16 hex>``: a repeat import writes nothing, and an entry forgotten or rejected in memcli
  does not come back.
* Changes in the store since the last import: an entry whose text changed (same topic file;
  for bullets, the same section and a text at least :data:`EDIT_SIMILARITY` % alike) is an
  edit; a memory imported earlier whose entry is gone is a deletion. Both are *offered*: the
  result lists them with the command that applies them (``--apply-changes``), as a plan
  before an apply. Applied, an edit is a ``supersede`` through the same gates (waiting for
  review in a shared scope, the old memory active until then), a deletion a ``forget`` (an
  active memory) or a ``reject`` (one still waiting).
* Harvest (``[agents] harvest = true``): the session-end hook imports its agent's stores for
  the session's project into ``user:<actor>``, edits applied, deletions left as offers, and
  leaves a note that the next session-start context says once (:func:`take_note`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.agents import memstores
from memcli.errors import MemcliError, SecretDetected, UnknownStore, UsageProblem
from memcli.model import STATUSES, Memory, normalise_text
from memcli.service import Ctx

#: rapidfuzz ratio from which a new bullet of a section is taken as the edit of a gone one.
EDIT_SIMILARITY = 60
#: Memories of one scope looked at to find earlier imports.
PRIOR_LIMIT = 1_000_000


def label(path: Path) -> str:
    """``path`` with the home folder written as ``~`` (a sourceRef is the same on every machine)."""
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return path.as_posix()


def _h(text: str, n: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def source_ref(entry: memstores.Entry) -> str:
    """An entry's sourceRef: its file (``label``), with ``#key`` when the file holds many entries."""
    base = label(entry.file)
    return base if entry.stable and entry.key == entry.file.name else f"{base}#{entry.key}"


def entry_key(scope: str, ref: str, text: str) -> str:
    """The idempotency key of an entry imported into ``scope``."""
    return f"agentmem:{scope}:{_h(ref, 12)}:{_h(normalise_text(text), 16)}"


def _ref_hash(memory: Memory) -> tuple[str, str] | None:
    key = memory.provenance.idempotency_key or ""
    parts = key.split(":")
    if not key.startswith("agentmem:") or len(parts) < 4:
        return None
    return parts[-2], parts[-1]


@dataclass
class AgentItem:
    """What became of one entry, or one offer.

    Attributes:
        outcome: ``created``, ``pending_review``, ``noop``, ``refused``, ``offered`` (an edit
            or a deletion not applied), ``superseded``, ``forgotten``, ``rejected`` (applied).
        change: for an offer or an applied change: ``edit`` or ``delete``; else None.
        id: the memory written, or the one a no-op or an offer is about.
        old: for an edit, the memory it replaces.
        command: for an offer, the command that applies it.
    """

    store: str
    source: str
    line: int
    outcome: str
    message: str
    gate: str | None = None
    id: str | None = None
    text: str | None = None
    category: str | None = None
    change: str | None = None
    old: str | None = None
    command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``source`` is the sourceRef)."""
        out = dict(self.__dict__)
        out["sourceRef"] = out.pop("source")
        return out


@dataclass
class StoreReport:
    """One store of an import: its kind, folder, what was read and skipped."""

    kind: str
    root: str
    files: list[str]
    entries: int
    skipped: list[tuple[str, str]]
    unknown: list[tuple[str, str]] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The store's name in messages (``Claude Code's auto memory``)."""
        return memstores.title_of(self.kind)


@dataclass
class AgentImportResult:
    """The result of :func:`import_stores`.

    Attributes:
        scope: where the entries went.
        stores: one per store read.
        items: per entry its outcome, then the offers.
        commits: the commits made (the import's one, then one per applied change).
        apply_command: the command that applies the offers, for messages.
    """

    scope: str
    stores: list[StoreReport] = field(default_factory=list)
    items: list[AgentItem] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    apply_command: str = ""

    def counts(self, kind: str | None = None) -> dict[str, int]:
        """How many items had each outcome (of one store kind, or all)."""
        out = {k: 0 for k in ("created", "pending_review", "noop", "refused", "offered", "superseded", "forgotten",
                              "rejected")}
        for item in self.items:
            if kind is None or item.store == kind:
                out[item.outcome] += 1
        return out

    def new(self) -> int:
        """Memories written (or, in a dry run, that would be)."""
        c = self.counts()
        return c["created"] + c["pending_review"] + c["superseded"]

    def message(self) -> str:
        """One line per store, for a person."""
        lines = []
        verb = "would import" if self.dry_run else "imported"
        for store in self.stores:
            c = self.counts(store.kind)
            offers = [i for i in self.items if i.store == store.kind and i.outcome == "offered"]
            edits = sum(1 for i in offers if i.change == "edit")
            line = (f"{store.title} ({store.root}): {store.entries} {'entry' if store.entries == 1 else 'entries'} "
                    f"read, {verb} "
                    f"{c['created'] + c['pending_review']} into {self.scope} ({c['pending_review']} waiting for "
                    f"review), {c['noop']} already present, {c['refused']} refused")
            if store.invalid:
                count = len(store.invalid)
                line += f"; {count} {'file' if count == 1 else 'files'} not readable, not imported (see the warnings)"
            applied = c["superseded"] + c["forgotten"] + c["rejected"]
            if applied:
                line += f"; applied {applied} changes the agent made ({c['superseded']} edits as supersedes, " \
                        f"{c['forgotten'] + c['rejected']} deletions)"
            if offers:
                line += (f"; {edits} edits and {len(offers) - edits} deletions offered: apply with "
                         f"`{self.apply_command} --apply-changes`")
            lines.append(line)
        return "\n".join(lines) or f"no agent memory store read into {self.scope}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"dry_run": self.dry_run, "scope": self.scope, "commits": self.commits, "counts": self.counts(),
                "stores": [{"kind": s.kind, "title": s.title, "root": s.root, "files": s.files, "entries": s.entries,
                            "counts": self.counts(s.kind),
                            "skipped": [{"file": f, "why": w} for f, w in s.skipped],
                            "unknown": [{"file": f, "why": w} for f, w in s.unknown],
                            "invalid": [{"file": f, "why": w} for f, w in s.invalid]} for s in self.stores],
                "items": [i.to_dict() for i in self.items]}


def _project(cwd: Path | None) -> Path:
    """The project an agent runs in: git's top level above ``cwd`` (else ``cwd`` itself)."""
    folder = (cwd or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def stores_for(agent: str, cwd: Path | None = None) -> list[memstores.Store]:
    """The stores ``agent`` keeps for the project at ``cwd`` (default: the current folder) that
    exist on disk (each agent's reader says where: ``agents.memstores.find``).

    Raises:
        UsageProblem: ``agent`` is not a known agent.
        UnknownStore: the agent keeps no store for this project (the message says where it looked).
    """
    from memcli.agents.registry import require

    title = require(agent).title
    folder = (cwd or Path.cwd()).resolve()
    found, looked = memstores.find(agent, folder, _project(folder))
    if not found:
        raise UnknownStore(f"{title} keeps no memory for {folder} (looked in "
                           f"{', '.join(label(p) for p in looked)})",
                           hint=f"nothing to import until {title} has written some; from another folder, run "
                                "it in the project's folder or give the store's path")
    return found


def _prior(ctx: Ctx, scope: str) -> list[Memory]:
    """Every memory of ``scope`` an agent-store import wrote, whatever its status."""
    from memcli.index import Query
    from memcli.service.read import retriever

    query = Query(text="", scopes=[scope], now=ctx.now, statuses=STATUSES, include_expired=True, limit=PRIOR_LIMIT,
                  order="newest", actor=ctx.actor)
    return [h.memory for h in retriever(ctx).search(query) if _ref_hash(h.memory) is not None]


def _pair(gone: list[Memory], new: list[tuple[memstores.Entry, str]], stable: bool) -> list[tuple[Memory, int]]:
    """Which gone memory each new entry of one sourceRef edits: ``(memory, index in new)``."""
    if stable:
        return [(gone[0], 0)] if gone and new else []
    from rapidfuzz import fuzz

    pairs = []
    free = list(range(len(new)))
    for memory in gone:
        scored = [(fuzz.ratio(normalise_text(memory.text), normalise_text(new[n][0].text)), n) for n in free]
        best = max(scored, default=(0.0, -1))
        if best[0] >= EDIT_SIMILARITY:
            pairs.append((memory, best[1]))
            free.remove(best[1])
    return pairs


def import_stores(ctx: Ctx, stores: list[memstores.Store], scope: str | None = None, apply: bool = True,
                  apply_changes: bool = False, apply_deletions: bool = True, command: str = "memcli import",
                  cwd: Path | None = None, deadline: float | None = None, strict: bool = True) -> AgentImportResult:
    """Import agents' memory stores through the write gates (see the module docstring).

    Args:
        stores: what ``agents.memstores.recognise`` or :func:`stores_for` found.
        scope: where the entries go (default ``user:<actor>``).
        apply: False for a dry run: every gate runs, nothing is written.
        apply_changes: apply the edits and deletions the agent made since the last import
            (else they are offered); ``apply_deletions`` False leaves deletions offered even then.
        command: the command line that repeats this import, for the offers' hint.
        cwd: the project folder (Codex blocks of other projects are left out).
        deadline: a ``time.monotonic()`` instant for the gates (a hook's budget).
        strict: refuse stores that hold text in a layout no reader knows and no entry
            (``UnknownStore``); False (a harvest) says it in ``warnings`` instead.

    Text in a layout the reader does not know (``Reading.unknown``) is never read: beside
    entries it is a warning; when no store gave an entry it is the error, never a silent 0.

    Raises:
        UnknownStore: ``strict`` and the stores hold nothing but text in an unknown layout.
        ValidationFailed, ScopeViolation: ``scope`` is malformed or another user's.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
    """
    from memcli.policy.gates import check_write_scope
    from memcli.service import write

    scope = scope or f"user:{ctx.actor}"
    check_write_scope(scope, ctx.actor)
    result = AgentImportResult(scope=scope, dry_run=not apply, apply_command=command)
    project = _project(cwd)
    prior = _prior(ctx, scope)
    by_ref: dict[str, list[Memory]] = {}
    for memory in prior:
        hashes = _ref_hash(memory)
        assert hashes is not None, "_prior keeps agent imports only"
        by_ref.setdefault(hashes[0], []).append(memory)
    drafts: list[tuple[AgentItem, Any]] = []
    edits: list[tuple[AgentItem, Memory, str, Any]] = []
    deletions: list[tuple[AgentItem, Memory]] = []
    readings = [memstores.read(store, project) for store in stores]
    odd = [(r, file, why) for r in readings for file, why in r.unknown]
    if strict and odd and not any(r.entries for r in readings):
        reading, file, why = odd[0]
        more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
        raise UnknownStore(f"{memstores.title_of(reading.kind)} at {label(reading.root)}: {file}: {why}"
                                     f"{more}; nothing read",
                                     hint="the agent may have changed its format: see the layouts memcli reads in "
                                          "docs/commands.md (The agents' own memories), and report this one")
    result.warnings.extend(f"{label(r.root)}/{file}: not read, a layout memcli does not know: {why}"
                           for r, file, why in odd)
    result.warnings.extend(f"{label(r.root)}/{file}: {why}" for r in readings for file, why in r.invalid)
    for store, reading in zip(stores, readings):
        actor = memstores.actor_of(reading.kind)
        result.stores.append(StoreReport(reading.kind, label(reading.root), [label(f) for f in reading.files],
                                         len(reading.entries), reading.skipped, list(reading.unknown),
                                         list(reading.invalid)))
        groups: dict[str, list[memstores.Entry]] = {}
        for entry in reading.entries:
            groups.setdefault(source_ref(entry), []).append(entry)
        refs_here = {_h(ref, 12): ref for ref in groups}
        for ref, entries in groups.items():
            earlier = by_ref.get(_h(ref, 12), [])
            held = {h[1] for m in earlier if (h := _ref_hash(m))}
            fresh = [(e, entry_key(scope, ref, e.text)) for e in entries if entry_key(scope, ref, e.text).split(":")[-1]
                     not in held]
            present = {entry_key(scope, ref, e.text).split(":")[-1] for e in entries}
            gone = [m for m in earlier if m.status in ("active", "pending_review")
                    and (h := _ref_hash(m)) and h[1] not in present]
            paired = _pair(gone, fresh, entries[0].stable)
            edited = {id(fresh[n][0]) for _, n in paired}
            for memory, n in paired:
                entry, key = fresh[n]
                item = AgentItem(reading.kind, ref, entry.line, "offered", "", id=memory.id, text=entry.text,
                                 category=entry.category, change="edit", old=memory.id)
                edits.append((item, memory, entry.text, _options(scope, entry, actor, ref, key)))
            paired_ids = {m.id for m, _ in paired}
            deletions.extend((_offer(reading.kind, memory), memory) for memory in gone if memory.id not in paired_ids)
            for entry in entries:
                if id(entry) in edited:
                    continue
                item = AgentItem(reading.kind, ref, entry.line, "", "", text=entry.text, category=entry.category)
                key = entry_key(scope, ref, entry.text)
                drafts.append((item, (entry.text, _options(scope, entry, actor, ref, key))))
        # Earlier imports from this store whose sourceRef is gone altogether (a deleted topic file, section).
        for ref_hash, memories in by_ref.items():
            if ref_hash in refs_here:
                continue
            deletions.extend((_offer(reading.kind, memory), memory) for memory in memories
                             if memory.status in ("active", "pending_review") and memory.provenance.actor == actor
                             and _owns(store, reading, memory.provenance.source or ""))
    from memcli.service.import_export import _anchor, planned_id

    anchor = _anchor(ctx)  # ids a dry run shows are the ids the real run writes, as for rule files
    for number, (_, (_, opts)) in enumerate(drafts):
        opts.memory_id = planned_id(anchor, number, opts.idempotency_key)
    outcomes, commit = write.write_batch(ctx, "import", [d for _, d in drafts], dry_run=not apply, deadline=deadline)
    if commit:
        result.commits.append(commit)
    for (item, _), outcome in zip(drafts, outcomes):
        if isinstance(outcome, MemcliError):
            _refused(item, outcome)
        else:
            item.outcome, item.gate, item.message, item.id = outcome.outcome, outcome.gate, outcome.message, \
                outcome.memory.id
            result.warnings.extend(f"{item.source}:{item.line}: {w}" for w in outcome.warnings)
        result.items.append(item)
    for item, memory, text, opts in edits:
        item.command = f"{command} --apply-changes"
        item.message = f"the agent edited it: offered as a supersede of {memory.id}"
        refusal = _content_refusal(text)
        if refusal is not None:  # an offer is shown: its text passes the gates a write would, first
            _refused(item, refusal)
            item.command = None
        elif apply and apply_changes:
            _apply_edit(ctx, item, memory, text, opts, result)
        result.items.append(item)
    for item, memory in deletions:
        item.command = f"{command} --apply-changes"
        item.message = f"the agent deleted it from its store: offered as a forget of {memory.id}"
        if apply and apply_changes and apply_deletions:
            _apply_delete(ctx, item, memory, result)
        result.items.append(item)
    result.warnings.extend(f"{i.source}:{i.line}: refused by the {i.gate} gate: {i.message}"
                           for i in result.items if i.outcome == "refused")
    return result


def _refused(item: AgentItem, err: MemcliError) -> None:
    """Mark ``item`` refused by the gate that raised ``err``; a secret's text is never kept (nor shown)."""
    item.outcome, item.message = "refused", err.line()
    item.gate = "sensitive_data" if isinstance(err, SecretDetected) else err.code  # hidden_text, validation_failed
    if isinstance(err, SecretDetected):
        item.text = None


def _content_refusal(text: str) -> MemcliError | None:
    """The error the text gates (validation, secrets, hidden text) raise for ``text``, or None
    when it passes: an edit is checked before it is offered, so an offer never shows a secret."""
    from memcli.model import check_text
    from memcli.policy.gates import check_secrets

    try:
        check_secrets(check_text(text))
    except MemcliError as err:
        return err
    return None


def _options(scope: str, entry: memstores.Entry, actor: str, ref: str, key: str) -> Any:
    """The ``WriteOptions`` of one entry."""
    from memcli.service.write import WriteOptions

    return WriteOptions(scope=scope, category=entry.category, tags=list(entry.tags), source_type="model_derived",
                        actor=actor, source=ref, line=entry.line, idempotency_key=key, review=entry.hold)


def _offer(kind: str, memory: Memory) -> AgentItem:
    """The offer to retire ``memory``, whose entry the agent deleted."""
    return AgentItem(kind, memory.provenance.source or "", memory.provenance.line or 0, "offered", "", id=memory.id,
                     text=memory.text, category=memory.category, change="delete")


def _owns(store: memstores.Store, reading: memstores.Reading, source: str) -> bool:
    """Whether an earlier import's sourceRef ``source`` is of a file this read covers."""
    file = source.split("#", 1)[0]
    if store.file is not None:
        return file == label(store.file)
    inbox = reading.root / ".inbox"
    if reading.kind == "gemini-inbox":
        return file.startswith(label(inbox) + "/")
    if reading.kind == "gemini-project" and not inbox.is_dir() and file.startswith(label(inbox) + "/"):
        return True  # the whole inbox is gone: its proposals are retired with the project memory's changes
    return file.rsplit("/", 1)[0] == label(reading.root)


def _apply_edit(ctx: Ctx, item: AgentItem, memory: Memory, text: str, opts: Any, result: AgentImportResult) -> None:
    from memcli.service import write

    try:
        if memory.status == "active":
            done = write.supersede(ctx, memory.id, text, opts)
            item.outcome, item.id, item.message = "superseded", done.memory.id, done.message
        else:  # still waiting for review: the new text waits instead
            write.reject(ctx, memory.id, "the agent edited it in its own store")
            outcomes, _ = write.write_batch(ctx, "import", [(text, opts)])
            done = outcomes[0]
            if isinstance(done, MemcliError):
                raise done
            item.outcome, item.id, item.message = "superseded", done.memory.id, done.message
        if done.commit:
            result.commits.append(done.commit)
    except MemcliError as err:
        _refused(item, err)


def _apply_delete(ctx: Ctx, item: AgentItem, memory: Memory, result: AgentImportResult) -> None:
    from memcli.service import write

    try:
        if memory.status == "active":
            done = write.forget(ctx, memory.id)
            item.outcome = "forgotten"
        else:
            done = write.reject(ctx, memory.id, "the agent deleted it from its own store")
            item.outcome = "rejected"
        item.message = done.message
        if done.commit:
            result.commits.append(done.commit)
    except MemcliError as err:
        item.outcome, item.message = "refused", err.line()


# --- harvest ---------------------------------------------------------------------------


def harvest(ctx: Ctx, agent: str, cwd: Path | None, deadline: float | None = None) -> AgentImportResult | None:
    """The session-end harvest: import ``agent``'s stores for the project at ``cwd`` into
    ``user:<actor>``, edits applied, deletions offered; note what came in for the next
    session start. None when the agent keeps no store there.

    Raises:
        the errors of :func:`import_stores`.
    """
    try:
        stores = stores_for(agent, cwd)
    except UnknownStore:
        return None
    result = import_stores(ctx, stores, None, apply=True, apply_changes=True, apply_deletions=False,
                           command=f"memcli import --agent {agent}", cwd=cwd, deadline=deadline, strict=False)
    counts: dict[str, list] = {}  # store title -> [new, waiting for review, the agent's tag]
    for item in result.items:
        if item.outcome in ("created", "pending_review", "superseded"):
            held = counts.setdefault(memstores.title_of(item.store), [0, 0, memstores.actor_of(item.store)])
            held[0] += 1
            held[1] += item.outcome == "pending_review"
    offered = sum(1 for i in result.items if i.outcome == "offered")
    if counts or offered:
        from memcli.service.harvest_note import add_note

        add_note(ctx, counts, offered, agent)
    return result


# --- share -----------------------------------------------------------------------------


@dataclass
class ShareResult:
    """What :func:`share` did: per memory given, the proposal (a ``WriteResult``) or the error."""

    scope: str
    results: list[tuple[str, Any]] = field(default_factory=list)

    def message(self) -> str:
        """One line per memory."""
        out = []
        for ref, done in self.results:
            if isinstance(done, MemcliError):
                out.append(f"{ref}: not shared: {done.line()}")
            elif done.outcome == "noop":
                out.append(f"{ref}: already proposed or present in {self.scope}: {done.memory.id}")
            else:
                out.append(f"{ref}: proposed to {self.scope} as {done.memory.id} ({done.memory.status}); "
                           f"`memcli approve {done.memory.id}` shares it")
        return "\n".join(out)


def share(ctx: Ctx, refs: list[str], scope: str = "project") -> ShareResult:
    """Propose personal memories to a shared scope: a copy there waits for review, with the
    original's provenance (its ``sourceType``, actor, source and line), its category, tags,
    paths and importance, tagged ``shared``, and the idempotency key ``share:<scope>:<original
    id>`` that links it to the original (so sharing it again is a no-op). The original stays.

    Raises:
        UsageProblem: no id given, or ``scope`` is a personal scope.
        MemoryNotFound, AmbiguousId: for an id that names no one memory (raised before anything is written).
    """
    from memcli.service.write import WriteOptions, write_batch

    if not refs:
        raise UsageProblem("give the ids of the memories to share", hint="find them with `memcli list`")
    if scope.startswith(("user:", "session:")):
        raise UsageProblem(f"{scope} is a personal scope; share proposes memories to a shared one",
                           hint="use --scope project (the default) or another shared scope")
    result = ShareResult(scope)
    items = []
    originals = []
    for ref in refs:
        memory = ctx.owner(ref).resolve(ref).memory
        if not memory.scope.startswith(("user:", "session:")):
            result.results.append((ref, UsageProblem(f"{memory.id} is in {memory.scope}, not a personal scope",
                                                     hint="share memories of user:YOU")))
            continue
        if memory.status != "active":
            result.results.append((ref, UsageProblem(f"{memory.id} is {memory.status}; only an active memory "
                                                     "is shared")))
            continue
        prov = memory.provenance
        opts = WriteOptions(scope=scope, category=memory.category, importance=memory.importance,
                            tags=list(dict.fromkeys([*memory.tags, "shared"])), paths=list(memory.paths),
                            source_type=prov.source_type, actor=prov.actor, source=prov.source, line=prov.line,
                            idempotency_key=f"share:{scope}:{memory.id}", review=True, subject=memory.subject)
        items.append((memory.text, opts))
        originals.append(ref)
    outcomes, _ = write_batch(ctx, "share", items) if items else ([], None)
    result.results.extend(zip(originals, outcomes))
    order = {ref: n for n, ref in enumerate(refs)}
    result.results.sort(key=lambda pair: order.get(pair[0], 0))
    return result


# --- export into the agents' own places ------------------------------------------------

#: ``export --format`` values that write into an agent's own memory.
NATIVE_FORMATS = ("claude-memory", "gemini-memory")


@dataclass
class NativeExport:
    """What :func:`export_native` wrote.

    Attributes:
        files: ``(path, state)`` with state ``written``, ``unchanged`` or ``removed`` (an
            earlier export of a memory no longer exported).
        memories: how many memories the export holds.
        left_out: memories left out because they came from that same store.
        scopes: the scopes exported.
    """

    format: str
    place: str
    files: list[tuple[str, str]] = field(default_factory=list)
    memories: int = 0
    left_out: int = 0
    scopes: list[str] = field(default_factory=list)

    def message(self) -> str:
        """One line for a person. With nothing to export and nothing changed it says so: the
        agent's own index (``MEMORY.md``), read and left as it was, is no exported file."""
        written = sum(1 for _, state in self.files if state != "unchanged")
        if not self.memories and not written:
            held = ", ".join(self.scopes)
            if self.left_out:
                came = _count(self.left_out, "active memory", "active memories")
                return f"nothing to export ({self.format}): the {came} in {held} came from {self.place} itself; " \
                       "it is left as it was"
            return f"nothing to export ({self.format}): no active memory in {held}; {self.place} is left as it was"
        extra = f"; left out {self.left_out} that came from this store" if self.left_out else ""
        return (f"exported ({self.format}) {_count(self.memories, 'memory', 'memories')} to {self.place}: "
                f"{_count(written, 'file', 'files')} changed, {len(self.files) - written} unchanged{extra}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"format": self.format, "place": self.place, "memories": self.memories, "left_out": self.left_out,
                "scopes": self.scopes, "files": [{"path": p, "state": s} for p, s in self.files]}


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _put(path: Path, text: str, out: NativeExport) -> None:
    from memcli.store.files import atomic_write

    try:
        held = path.read_bytes() if path.is_file() else None
        if held == text.encode("utf-8"):
            out.files.append((label(path), "unchanged"))
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    except OSError as err:
        raise UsageProblem(f"cannot write {path}: {err.strerror or err}",
                           hint="check the folder's permissions") from None
    out.files.append((label(path), "written"))


def _held(path: Path) -> str:
    """The text of an agent's file an export rewrites (``''`` when there is none).

    Raises:
        UsageProblem: it cannot be read as text (not UTF-8, too large): rewritten, what is
            not memcli's in it would be lost.
    """
    from memcli.agents.memstores import read_text, why_unread

    try:
        return read_text(path) if path.is_file() else ""
    except OSError as err:
        raise UsageProblem(f"cannot rewrite {label(path)}: {why_unread(err)}",
                           hint="fix or move that file, then export again") from None


def export_native(ctx: Ctx, fmt: str, scopes: list[str] | None = None, cwd: Path | None = None) -> NativeExport:
    """Write the caller's memories (default: ``user:<actor>``) into an agent's own memory, so an
    agent without memcli's hooks still sees them; idempotent, and marked so an import of
    that store never reads them back (``agents.memstores.MARK``).

    ``claude-memory``: one topic file ``memcli_<id>.md`` per memory in the auto-memory folder
    of the project at ``cwd`` (the one Claude Code has, else the folder's own), and their
    pointer lines in a marked section of ``MEMORY.md`` (the CLI's own lines kept); earlier
    exported files of memories no longer exported are removed. ``gemini-memory``: a marked
    section of bullets in the project's private memory ``~/.gemini/tmp/<id>/memory/MEMORY.md``
    (loaded in every Gemini CLI session of that project only), and the person's cross-project
    memories (``remember --all-projects``) in one of ``~/.gemini/GEMINI.md`` (loaded in every
    project), the rest of each file kept; a project memory never goes to the global file.
    Memories that came from that same store are left out (they are there already).

    Raises:
        ValidationFailed, ScopeViolation: a scope is malformed or another user's.
        UsageProblem: a file cannot be written; ``gemini-memory`` with project memories for a
            project Gemini CLI has not registered yet (nothing is written).
    """
    from memcli.agents.memstores import MARK, claude_store, gemini_store, read_text
    from memcli.service.import_export import export_memories

    memories = export_memories(ctx, False, scopes or [f"user:{ctx.actor}"])
    folder = (cwd or Path.cwd()).resolve()
    if fmt == "claude-memory":
        found, looked = claude_store.find(folder, _project(folder))
        place = found[0].root if found else looked[0]
    else:
        place = gemini_store.home()
    own = label(place) + "/"
    kept = [m for m in memories if not (m.provenance.source or "").startswith(own)]
    out = NativeExport(fmt, label(place), memories=len(kept), left_out=len(memories) - len(kept),
                       scopes=list(scopes or [f"user:{ctx.actor}"]))
    if fmt == "gemini-memory":
        from memcli.store.personal import cross_project_store

        everywhere = cross_project_store()
        wide = [m for m in kept if everywhere in Path(m.path or "").parents]
        narrow = [m for m in kept if m not in wide]
        memory = gemini_store.project_memory(place, folder) or gemini_store.project_memory(place, _project(folder))
        if narrow and memory is None:
            raise UsageProblem(f"Gemini CLI has not registered {_project(folder)} yet (it is not in "
                               f"{label(place / 'projects.json')}), so its project memory has no folder",
                               hint="start `gemini` in the project once, then export again")
        targets = [(place / gemini_store.GLOBAL, wide)]
        if memory is not None:
            targets.append((memory / gemini_store.INDEX, narrow))
            out.place = f"{label(memory / gemini_store.INDEX)} and {label(place / gemini_store.GLOBAL)}"
        texts = [(path, gemini_store.render_global(_held(path), [f"- {' '.join(m.text.split())}" for m in chosen]))
                 for path, chosen in targets]  # every file read before one is written
        for path, text in texts:
            if text or path.is_file():
                _put(path, text, out)
        return out
    index = place / claude_store.INDEX
    held = _held(index)  # before any file is written
    wanted: dict[str, str] = {}
    pointers = []
    for m in kept:
        name = f"{claude_store.EXPORT_PREFIX}{m.id}.md"
        wanted[name] = claude_store.render_topic(m.id, m.scope, m.category, list(m.tags), m.text)
        hook = " ".join(m.text.split())
        pointers.append(f"- [{m.category}: {hook[:60]}]({name}) — {hook[:90]}")
    for name, text in wanted.items():
        _put(place / name, text, out)
    for stale in sorted(place.glob(f"{claude_store.EXPORT_PREFIX}*.md")) if place.is_dir() else []:
        try:
            mine = any(MARK in line for line in read_text(stale).split("\n")[:12])
        except OSError:
            continue
        if stale.name not in wanted and mine:
            stale.unlink()
            out.files.append((label(stale), "removed"))
    text = claude_store.render_index(held, pointers)
    if text or index.is_file():
        _put(index, text, out)
    return out
