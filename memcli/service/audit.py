"""The read side of the audit trail: ``history`` and ``show --at`` (SPEC.md section 4); ``diff`` is in ``service.diff``.

Old versions come from git (``git.history.History.commits``, ``blobs``) and are parsed with
memcli's own parsers (``MemoryFiles.load`` with the bytes), so a past version reads
exactly as it would have been read then; :mod:`memcli.changes` names each change.
Another user's personal memories stay out, as everywhere else (``Ctx.may_see``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memcli.changes import Change, Step, Version, classify, field_changes, first_line
from memcli.errors import AmbiguousId, GitFailed, InvalidMemoryFile, MemoryNotFound, RevisionNotFound
from memcli.git.history import History as Repo
from memcli.git.log import Entry
from memcli.model import Memory
from memcli.policy.owner import scope_in_commit_is_mine
from memcli.service import MIN_PREFIX, Ctx, check_ref
from memcli.store.files import MEMORIES, Loaded, others_folder
from memcli.timeutil import format_instant, parse_instant


def is_memory_path(path: str) -> bool:
    """True for a workspace-relative path of a memory file (``memories/**/*.md``, nothing hidden)."""
    parts = path.split("/")
    return parts[0] == MEMORIES and path.endswith(".md") and not any(p.startswith(".") for p in parts[1:])


def visible_path(ctx: Ctx, path: str, memory: Memory | None = None) -> bool:
    """False for a file in another user's personal folder, or (given) a memory the caller may not see."""
    return not others_folder(path, ctx.actor) and (memory is None or ctx.may_see(memory))


def step_of(entry: Entry, repo: Repo | None = None) -> Step:
    """Who made a commit: its hash, ``Memcli-Op``, ``Memcli-Actor`` (else the git author) and time.

    For an ``undo`` commit, also the commit it reversed (``Memcli-Undoes``) and, given
    ``repo``, that commit's operation (None when it is no longer in the repository).
    """
    undoes = entry.trailers.get("undoes") or None
    undone_op = None
    if undoes and repo is not None:
        try:
            undone_op = repo.entry(undoes).trailers.get("op")
        except (RevisionNotFound, GitFailed):
            pass
    return Step(entry.commit, entry.trailers.get("op"), entry.trailers.get("actor") or entry.author,
                parse_instant(entry.at), undoes, undone_op)


def read_version(ctx: Ctx, path: str, data: bytes | None, at: datetime) -> Version | None:
    """Parse one version of a memory file; None when ``data`` is None (the file did not exist).

    Args:
        path: workspace-relative path.
        data: the file's bytes at that version.
        at: when that version was made, the default ``createdAt`` of a hand-written file.
    """
    if data is None:
        return None
    try:
        loaded = ctx.ws.files.load(ctx.ws.root / path, data=data, mtime=at.timestamp(), round_trip=False)
    except InvalidMemoryFile as err:
        return Version(path, error=err.reason)
    return Version(path, loaded.memory)


def read_disk(ctx: Ctx, path: str) -> bytes | None:
    """The bytes of a workspace-relative file in the working tree; None when it is not there."""
    try:
        return (ctx.ws.root / path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def find_id(ctx: Ctx, ref: str) -> tuple[str, Loaded | None]:
    """The memory ``ref`` names: its current file, or (file deleted) its id from history.

    Returns:
        ``(id, loaded)``; ``loaded`` is None when the file is gone or cannot be parsed now.

    Raises:
        MemoryNotFound: no visible memory, now or in the history of any branch, has that id.
        AmbiguousId: the prefix matches several.
        ValidationFailed: ``ref`` is not a well-formed id.
    """
    try:
        item = ctx.resolve(ref)
        return item.memory.id, item
    except (MemoryNotFound, InvalidMemoryFile) as err:
        missing = err
    ref = check_ref(ref)
    if len(ref) < MIN_PREFIX:
        raise missing
    repo = ctx.history()
    last = {t.path: (f"{e.commit}^" if t.kind == "D" else e.commit)  # the last version of each path
            for e in repo.commits([f"{MEMORIES}/*{ref}*"], all_refs=True) for t in e.touched
            if Path(t.path).name.lower().startswith(ref) and visible_path(ctx, t.path)}
    ids: dict[str, None] = {}
    wanted = [(rev, path) for path, rev in last.items()]
    for (rev, path), data in zip(wanted, repo.blobs(wanted)):
        version = read_version(ctx, path, data, ctx.now)
        if version and version.memory and ctx.may_see(version.memory) and version.memory.id.startswith(ref):
            ids[version.memory.id] = None
        elif version and not version.memory and Path(path).stem.lower().startswith(ref):
            ids[Path(path).stem.lower()] = None
    if not ids:  # no file anywhere (purged with --history): the commits' trailers still name it
        ids = dict.fromkeys(named_in_trailers(ctx, repo, ref))
    if len(ids) > 1:
        raise AmbiguousId(f"id prefix {ref!r} matches {len(ids)} memories in history ({', '.join(list(ids)[:5])})",
                          hint="give more characters of the id")
    if not ids:
        raise missing
    return next(iter(ids)), None


def named_in_trailers(ctx: Ctx, repo: Repo, ref: str) -> list[str]:
    """Ids starting with ``ref`` that a ``Memcli-Id`` trailer names, in any ref's history.

    A commit counts only when every scope in its ``Memcli-Scope`` trailer is one the caller
    may see: another user's purged personal memory stays unknown to them.
    """
    found: dict[str, None] = {}
    for entry in repo.commits([], all_refs=True, grep=ref):
        scopes = entry.trailers.get("scope", "").split()
        if not all(scope_in_commit_is_mine(s, entry.trailers.get("actor") or entry.author, ctx.actor)
                   for s in scopes):
            continue
        found.update(dict.fromkeys(i for i in entry.trailers.get("id", "").split() if i.startswith(ref)))
    return list(found)


# --- history ----------------------------------------------------------------------------


@dataclass
class HistoryVersion:
    """One version of a memory's file: who made it, in which commit, and what it changed.

    ``claim`` is set when the actor is only claimed (``service.signing.attribute``).
    """

    commit: str | None
    at: datetime
    actor: str | None
    op: str | None
    status: str | None
    path: str
    changes: list[str]
    text: str = ""
    claim: str | None = None

    def shown_actor(self) -> str | None:
        """The actor, with ``(unverified: …)`` when no signature or authorship backs it."""
        return f"{self.actor} ({self.claim})" if self.claim and self.actor else self.actor

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``verified``: the actor is what the commit's signature, or with
        signing off its author, says; ``claim`` says why not)."""
        return {"commit": self.commit, "at": format_instant(self.at), "actor": self.actor, "op": self.op,
                "by_hand": self.op is None, "status": self.status, "path": self.path, "changes": self.changes,
                "text": self.text, "verified": self.claim is None, "claim": self.claim}


@dataclass
class History:
    """``memcli history``: the versions, oldest first, and the supersede chain (oldest first)."""

    id: str
    current: Memory | None
    versions: list[HistoryVersion] = field(default_factory=list)
    chain: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"id": self.id, "current": self.current.to_dict() if self.current else None,
                "versions": [v.to_dict() for v in self.versions], "chain": self.chain}


def history(ctx: Ctx, ref: str) -> History:
    """Every version of a memory's file, oldest first, and its supersede chain both ways.

    A memory whose file was deleted (purged) is found by its id in the history of every
    branch. Uncommitted changes to the file come last, as version ``uncommitted``.

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` names no visible memory, now or in history.
    """
    ctx = ctx.owner(ref)  # a personal memory's versions are in the person's own store
    memory_id, item = find_id(ctx, ref)
    repo = ctx.history()
    specs = [f"{MEMORIES}/*{memory_id}*"] + ([item.memory.path] if item else [])
    steps: list[tuple[Step, str, str, bool]] = []  # (step, its commit, path, deleted)
    claims: dict[str, str] = {}  # commit -> why its actor is only claimed
    entries = repo.commits(specs, all_refs=item is None)
    from memcli.service.signing import attribute, trust_for_reading

    attribute(trust_for_reading(ctx), entries)
    for entry in entries:
        if entry.claim:
            claims[entry.commit] = entry.claim
        for t in entry.touched:
            if (t.path == (item.memory.path if item else None) or memory_id in Path(t.path).name.lower()) \
                    and visible_path(ctx, t.path):  # a namesake in another user's folder is not this memory
                steps.append((step_of(entry, repo), entry.commit, t.path, t.kind == "D"))
    datas = repo.blobs([(commit, p) for _, commit, p, gone in steps if not gone])
    versions: list[tuple[Step, Version | None]] = []
    found = iter(datas)
    for step, _, path, gone in steps:
        versions.append((step, None if gone else read_version(ctx, path, next(found), step.at)))
    if item is not None:  # uncommitted edits (or a file never committed, with autocommit = false)
        on_disk = read_disk(ctx, item.memory.path)
        head = repo.blobs([("HEAD", item.memory.path)])[0]
        if on_disk != head:
            versions.append((Step(None, None, None, ctx.now), read_version(ctx, item.memory.path, on_disk, ctx.now)))
    out = History(memory_id, item.memory if item else None)
    before: Version | None = None
    for step, version in versions:
        words = [_short(c) for c in classify(before, version, step)]
        if before and before.memory and version and version.memory:
            said = " ".join(words)
            words += [w for w in field_changes(before.memory, version.memory)
                      if _unsaid(w, said) and not w.startswith(("superseded by ", "review: ", "status "))]
        shown = version or before
        out.versions.append(HistoryVersion(
            step.commit, step.at, step.actor, step.op, version.memory.status if version and version.memory else
            ("deleted" if version is None else "unreadable"), shown.path if shown else "", words,
            version.memory.text if version and version.memory else "",  # its first line once redacted
            claims.get(step.commit or "")))
        before = version
    if not out.versions and item is None:  # only commit trailers name it: purged with --history
        raise MemoryNotFound(f"no version of {memory_id} is left in history (purged with --history)",
                             hint=f"see the commits that name it with `memcli log {memory_id}`")
    latest = item.memory if item else next((v.memory for _, v in reversed(versions) if v and v.memory), None)
    out.chain = chain(ctx, latest) if latest else []
    from memcli.service.redact import cache_of, for_reader, redact_texts

    for shown_version, text in zip(out.versions, redact_texts([v.text for v in out.versions], cache_of(ctx))):
        shown_version.text = first_line(text)  # old versions never passed today's gate; cut only once redacted
    if out.current is not None:
        (out.current,) = for_reader(ctx, [out.current])
    return out


def _unsaid(word: str, said: str) -> bool:
    """False when ``word`` (from ``field_changes``) repeats what ``said`` already names:
    the same words, or ``KEYS changed`` whose keys ``said`` names (``merged``: said as took in / gave back)."""
    if word in said:
        return False
    if word.endswith(" changed"):
        return any(k != "merged" and k not in said for k in word.removesuffix(" changed").split(", "))
    return True


def _short(change: Change) -> str:
    words = change.change + (f" by {change.by}" if change.change in ("approved", "rejected") and change.by else "")
    words += f": {'; '.join(change.details)}" if change.details else ""
    return words + (f" (reason: {change.reason})" if change.reason else "")


def chain(ctx: Ctx, start: Memory) -> list[dict[str, Any]]:
    """The supersede chain through ``start``, oldest first: ``supersedes`` and ``supersededBy``, recursively.

    "Oldest" follows the links, not creation times: a memory comes after every memory it
    supersedes (a rollback can make an older memory replace a newer one), ties broken by
    ``createdAt`` then id. Links that run in a circle (old data, hand edits) do not loop:
    the walk visits each memory once, and a cycle is entered at its earliest-created member.

    Each link is ``{"id", "status", "text"}`` (first line); an id no file holds any more
    has status ``missing``; ids the caller may not see are left out.
    """
    catalog = ctx.catalog()
    seen: dict[str, Memory | None] = {start.id: start}
    todo = [start]
    while todo:
        memory = todo.pop()
        for other in (*memory.supersedes, *memory.superseded_by):
            if other in seen:
                continue
            found = [m for m in catalog.by_prefix(other) if m.id == other]
            seen[other] = found[0] if found else None
            if found:
                todo.append(found[0])
    if len(seen) == 1:
        return []
    links = [(i, m) for i, m in seen.items() if m is None or ctx.may_see(m)]
    links.sort(key=lambda pair: (format_instant(pair[1].created_at) if pair[1] and pair[1].created_at else "", pair[0]))
    from memcli.service.redact import cache_of, redact_texts

    known = [(i, m) for i, m in links if m]
    texts = dict(zip((i for i, _ in known), redact_texts([m.text for _, m in known], cache_of(ctx))))
    return [{"id": i, "status": m.status if m else "missing", "text": first_line(texts[i]) if m else ""}
            for i, m in _replaced_first(links)]  # each text redacted whole, then cut to its first line


def _replaced_first(links: list[tuple[str, Memory | None]]) -> list[tuple[str, Memory | None]]:
    """``links`` (sorted by creation) reordered so that each memory follows those it supersedes.

    Kahn's topological sort, taking the earliest-created ready memory each time; when none
    is ready (a cycle), the earliest-created one left is taken.
    """
    ids = [i for i, _ in links]
    after: dict[str, set[str]] = {i: set() for i in ids}  # i comes after these
    for i, memory in links:
        if memory is None:
            continue
        after[i].update(s for s in memory.supersedes if s in after and s != i)
        for newer in memory.superseded_by:
            if newer in after and newer != i:
                after[newer].add(i)
    placed: dict[str, None] = {}
    while len(placed) < len(ids):
        left = [i for i in ids if i not in placed]
        placed[next((i for i in left if after[i] <= placed.keys()), left[0])] = None
    by_id = dict(links)
    return [(i, by_id[i]) for i in placed]


# --- show --at --------------------------------------------------------------------------


@dataclass
class ShownAt:
    """A memory as it was at a revision: the record, expired at that time, raw file text."""

    memory: Memory
    expired: bool
    raw: str
    rev: str
    commit: str
    at: datetime

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the memory's fields plus ``expired`` and ``revision``."""
        return {**self.memory.to_dict(), "expired": self.expired,
                "revision": {"rev": self.rev, "commit": self.commit, "at": format_instant(self.at)}}


def file_at(ctx: Ctx, repo: Repo, memory_id: str, path: str | None, commit: str) -> tuple[str, bytes | None]:
    """Where a memory's file was at ``commit``, and its bytes there.

    Its current ``path`` first; when that path did not exist then (the file was moved,
    renamed by hand or deleted since), the file of that commit's tree whose name starts
    with ``memory_id`` (outside other users' personal folders).

    Args:
        memory_id: the full id.
        path: the file's workspace-relative path now, or None (no file now).
        commit: a resolved revision.

    Returns:
        ``(workspace-relative path, bytes)``; bytes None when no such file existed at ``commit``.
    """
    data = repo.blobs([(commit, path)])[0] if path else None
    if data is None:  # moved or deleted since: look for the id in that revision's tree
        paths = [p for p in repo.files(commit, MEMORIES) if Path(p).name.lower().startswith(memory_id)
                 and visible_path(ctx, p)]
        if paths:
            return paths[0], repo.blobs([(commit, paths[0])])[0]
    return path or "", data


def show_at(ctx: Ctx, ref: str, rev: str) -> ShownAt:
    """The memory ``ref`` as it was at revision ``rev`` (``git show REV:path``).

    Raises:
        RevisionNotFound: ``rev`` names no commit.
        MemoryNotFound: no such visible memory, or its file did not exist at ``rev``.
        AmbiguousId: the prefix matches several.
        InvalidMemoryFile: the version at ``rev`` cannot be parsed.
    """
    ctx = ctx.owner(ref)  # a personal memory's revisions are those of the person's own store
    repo = ctx.history()
    entry = repo.entry(rev)
    memory_id, item = find_id(ctx, ref)
    path, data = file_at(ctx, repo, memory_id, item.memory.path if item else None, entry.commit)
    if data is None:
        raise MemoryNotFound(f"memory {memory_id} did not exist at {rev} (commit {entry.commit[:10]})",
                             hint=f"see its versions with `memcli history {memory_id}`")
    at = parse_instant(entry.at)
    loaded = ctx.ws.files.load(ctx.ws.root / path, data=data, mtime=at.timestamp(), round_trip=False)
    if not ctx.may_see(loaded.memory):
        raise MemoryNotFound(f"no memory {ref!r}", hint="list ids with `memcli list`")
    from memcli.service.redact import cache_of, for_reader, redact_text

    raw = redact_text(data.decode("utf-8-sig", "replace"), cache_of(ctx))  # an old version's secrets stay out
    (memory,) = for_reader(ctx, [loaded.memory])
    return ShownAt(memory, loaded.memory.is_expired(at), raw, rev, entry.commit, at)
