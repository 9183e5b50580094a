"""Choosing what goes into an agent's context (SPEC.md section 6).

Only ``active``, unexpired memories in the caller's scopes. The order, best first:

0. what the caller puts first (``lead``: the session-start hook's summary of the session
   after a compaction or resume, cut to ``LEAD_SHARE`` of the budget);
1. pinned memories;
2. memories relevant to the query (``--query``, or the prompt of a hook), by recall rank;
3. memories about the files in play (``files_in_play``): their ``paths`` globs match a
   file git tracks under the current folder, or, at a repository's root, a file with
   uncommitted changes (at the root every file is "under the folder", and a path-scoped
   memory must not outrank a general one for that alone);
4. the rest, by importance, then by recency of ``updatedAt``;
5. after all of them, those whose code moved (``memcli stale``), then the unvetted
   instruction-like ones (``agents.injection.unvetted``: another person's, unreviewed),
   pinned or not.

The rendering (fence, budget, neutralising) is ``memcli.agents.context_block``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.agents.context_block import FOOTER_RESERVE, Block, render
from memcli.errors import MemcliError, UsageProblem, ValidationFailed
from memcli.index import Query
from memcli.model import Memory, check_choice
from memcli.service import Ctx
from memcli.service.read import MAX_QUERY, retriever, served_matches
from memcli.service.redact import for_reader

if TYPE_CHECKING:
    import subprocess

    from memcli.git.run import Started

#: Memories considered for the block at most; 8,000 characters hold far fewer.
POOL = 400
#: Memories redacted (secret-scanned) at a time: the block is rendered after each chunk and
#: the scan stops once it is full, so a fresh clone's cold scan memo costs what is shown.
REDACT_CHUNK = 48
#: Characters a context line takes at least (its label, a short text and its id); a block with
#: less room than this besides the footer's reserve takes no more memories.
MIN_LINE = 60
#: Smallest budget accepted (characters): the fence and its header take about 200.
MIN_BUDGET = 200
#: Tracked files looked at when matching ``paths`` globs against the current folder.
MAX_FILES = 20_000
#: Pathspecs ``changed_files`` names at most (the root's entries besides memcli's own); past
#: that it asks about ``.`` with exclusions.
MAX_PATHSPECS = 1_000
#: The share of the budget a ``lead`` memory may take; a longer one is cut at a line.
LEAD_SHARE = 0.6
#: What memcli keeps in a workspace folder, left out of ``paths`` matching when the
#: workspace is the project itself (``memcli init`` at the repository root).
OWN_ENTRIES = ("memories", ".cache", "archive", "memcli.toml", ".memcli")


def own_paths(folder: Path, workspace: Path) -> list[str]:
    """The pathspecs of the workspace's own files, for ``tracked_files`` to leave out.

    A workspace in a folder of its own (``project/mem``, ``.memcli``) is left out whole. A
    workspace that holds ``folder`` (one made at the project's root) holds the code too:
    then only memcli's own entries (``OWN_ENTRIES``) are left out, never the whole tree.
    """
    try:
        folder, workspace = folder.resolve(), workspace.resolve()
    except OSError:
        return [str(workspace)]
    if folder == workspace or workspace in folder.parents:
        return [str(workspace / name) for name in OWN_ENTRIES]
    return [str(workspace)]


def tracked_files(folder: Path, workspace: Path) -> list[str]:
    """Files git tracks under ``folder``, relative to the repository root, leaving out the
    workspace's own files (memories are not what memories are about, see ``own_paths``);
    empty outside git."""
    return [f for f in _git_fields(folder, ["ls-files", "--full-name", "-z"], workspace) if f][:MAX_FILES]


def _git_fields(folder: Path, args: list[str], workspace: Path) -> list[str]:
    """The NUL-separated fields git prints for ``git ARGS -- .`` in ``folder``, the workspace's
    own files left out (:func:`_excludes`); empty outside git or when git fails."""
    from memcli.errors import GitFailed
    from memcli.git import run as runner

    try:
        proc = runner.run((*args, "--", ".", *_excludes(folder, workspace)), folder, timeout=5)
    except GitFailed:  # no git, or past the deadline (GitTimedOut)
        return []
    return proc.stdout.decode("utf-8", "replace").split("\0") if proc.returncode == 0 else []


def _excludes(folder: Path, workspace: Path) -> list[str]:
    """``:(exclude)`` pathspecs of the workspace's own files that lie under ``folder``.

    Only those: git 2.39 lists nothing at all for ``-- . ':(exclude)PATH'`` when PATH lies
    outside the current folder (seen with ``../mem`` and with an absolute path), and files
    outside the folder are not listed anyway.
    """
    try:
        here = folder.resolve()
    except OSError:
        return []
    return [f":(exclude){p}" for p in own_paths(folder, workspace) if Path(p) == here or here in Path(p).parents]


def changed_files(folder: Path, workspace: Path) -> list[str]:
    """Files with uncommitted changes in the work tree holding ``folder`` (modified, added,
    renamed, deleted, untracked), relative to the repository root, leaving out the workspace's
    own files (``own_paths``); empty outside git. The files "in play" at a repository's root.

    One ``git status`` over the pathspecs of :func:`_beside_own` (never ``-- . ':(exclude)memories'``:
    git 2.39 still reads every folder of an excluded tree for untracked files, 0.2-0.5 s at
    100,000 memories), with ``--no-optional-locks``: a read never rewrites git's index (a
    concurrent commit would find it locked).
    """
    return InPlay.changed(folder, workspace).files()


def _status_args(folder: Path, workspace: Path, specs: list[str] | None) -> tuple[str, ...]:
    return ("--no-optional-locks", "status", "--porcelain=v1", "-z", "--",
            *(specs or [".", *_excludes(folder, workspace)]))


def _changed(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The files of ``git status --porcelain=v1 -z`` output (see :func:`changed_files`)."""
    fields = proc.stdout.decode("utf-8", "replace").split("\0") if proc.returncode == 0 else []
    files = []
    i = 0
    while i < len(fields):  # "XY PATH", and after a rename or copy the old path as a field of its own
        entry = fields[i]
        i += 1
        if len(entry) > 3:
            files.append(entry[3:])
            if entry[0] in "RC":
                i += 1
    return files[:MAX_FILES]


def _beside_own(folder: Path, workspace: Path) -> list[str] | None:
    """Literal pathspecs (relative to ``folder``, a repository's root) that name everything in
    the work tree except the workspace's own entries under it (``own_paths``): each entry of
    ``folder`` and of every folder on the way to an own entry, as listed now and as ``HEAD``
    holds it (a deleted file is in play too), but the own entries themselves and ``.git``.

    So git's search for untracked files never enters ``memories/``. None when no own entry
    lies under ``folder`` or the folders cannot be listed (the caller then asks about ``.``
    with ``:(exclude)`` pathspecs); ``[]`` when ``folder`` itself is one of them. At most
    ``MAX_PATHSPECS`` (a root of more entries: None).
    """
    listing = _listing(folder, workspace)
    if not isinstance(listing, _Listing):
        return listing
    return listing.specs(_head_entries(folder, listing.folders()))


class _Listing:
    """The folders on the way from a repository's root to the workspace's own entries, as
    listed now (:func:`_listing`); :meth:`specs` adds what ``HEAD`` holds there."""

    def __init__(self, here: Path, own: set[Path], chain: set[Path], names: dict[Path, set[str]]) -> None:
        self.here, self.own, self.chain, self.names = here, own, chain, names

    def folders(self) -> list[str]:
        """The folders of the chain relative to the root (``.`` for the root), sorted."""
        return sorted(d.relative_to(self.here).as_posix() for d in self.chain)

    def specs(self, held: dict[str, set[str]]) -> list[str] | None:
        """The pathspecs of :func:`_beside_own` for ``held`` (:func:`_head_entries`; ``{}``: the
        listing alone); None past ``MAX_PATHSPECS``."""
        specs: list[str] = []
        for folder_on_chain in sorted(self.chain):
            rel = folder_on_chain.relative_to(self.here).as_posix()
            prefix = "" if rel == "." else rel + "/"
            for name in sorted(self.names[folder_on_chain] | held.get(rel, set())):
                path = folder_on_chain / name
                if (prefix == "" and name == ".git") or path in self.own or path in self.chain:
                    continue
                specs.append(f":(literal){prefix}{name}")
                if len(specs) > MAX_PATHSPECS:
                    return None
        return specs  # [] when only memcli's own entries are there: nothing to ask about

    def holds(self, held: dict[str, set[str]]) -> bool:
        """Whether every entry ``held`` names is listed already (nothing deleted on the chain)."""
        return all(names <= self.names.get(self.here / rel, set()) for rel, names in held.items())


def _listing(folder: Path, workspace: Path) -> _Listing | list[str] | None:
    """The :class:`_Listing` of :func:`_beside_own`, or what it answers without one (None, ``[]``)."""
    import os

    try:
        here = folder.resolve()
        own = {Path(p) for p in own_paths(folder, workspace)}
    except OSError:
        return None
    own = {p for p in own if p == here or here in p.parents}
    if not own:
        return None
    if here in own:
        return []
    chain = {parent for p in own for parent in p.parents if parent == here or here in parent.parents}
    names: dict[Path, set[str]] = {}
    for folder_on_chain in chain:
        try:
            names[folder_on_chain] = set(os.listdir(folder_on_chain))
        except OSError:
            return None
    return _Listing(here, own, chain, names)


def _head_entries(folder: Path, folders: list[str]) -> dict[str, set[str]]:
    """``{folder: names}``: the entries ``HEAD`` holds in each of ``folders`` (``.`` for the
    root, else ``a/b``) of the repository whose root is ``folder``; empty on an unborn
    branch or when git fails. One ``git ls-tree`` (reads the trees on the way, not git's index)."""
    from memcli.errors import GitFailed
    from memcli.git import run as runner

    args = [f if f == "." else f + "/" for f in folders]
    try:
        proc = runner.run(("ls-tree", "-z", "--name-only", "--full-name", "HEAD", "--", *args), folder, timeout=5)
    except GitFailed:
        return {}
    return _held(proc)


def _held(proc: subprocess.CompletedProcess[bytes]) -> dict[str, set[str]]:
    """``{folder: names}`` from ``git ls-tree -z --name-only --full-name`` (see :func:`_head_entries`)."""
    found: dict[str, set[str]] = {}
    if proc.returncode != 0:
        return found
    for name in proc.stdout.decode("utf-8", "replace").split("\0"):
        if name:
            parent, _, base = name.rpartition("/")
            found.setdefault(parent or ".", set()).add(base)
    return found


def files_in_play(folder: Path, workspace: Path) -> list[str]:
    """The files whose memories come forward in a session started in ``folder``.

    In a subfolder of a repository, the files git tracks there (``tracked_files``): working
    in ``web/`` is working on those. At a repository's root every file is under the folder,
    so "every file" would put every path-scoped memory above every general one; there, only
    the files with uncommitted changes (``changed_files``) are in play.
    """
    return InPlay.start(folder, workspace).files()


class InPlay:
    """:func:`files_in_play` begun: its git processes start at once and run on another core
    while the caller searches the index; :meth:`files` collects them, :meth:`cancel` ends them
    unasked. One of the two must be called.

    At a repository's root, ``git ls-tree HEAD`` (the entries deleted on the way to the
    workspace) and ``git status`` over the entries listed now run side by side; in the rare
    case ``HEAD`` holds an entry no longer listed, ``git status`` runs again with it.
    """

    def __init__(self, folder: Path, workspace: Path) -> None:
        self.folder, self.workspace = folder, workspace
        self.known: list[str] | None = None  # the answer, when no git process is needed
        self.listing: _Listing | None = None
        self.tracked = False  # ls-files (a subfolder), not status (a root)
        self.started: list[Started] = []  # ls-files; or ls-tree (when listed) and status

    @classmethod
    def start(cls, folder: Path, workspace: Path) -> InPlay:
        """Start what :func:`files_in_play` asks git about ``folder``."""
        if (folder / ".git").exists():
            return cls.changed(folder, workspace)
        made = cls(folder, workspace)
        made.tracked = True
        made._begin(("ls-files", "--full-name", "-z", "--", ".", *_excludes(folder, workspace)))
        return made

    @classmethod
    def changed(cls, folder: Path, workspace: Path) -> InPlay:
        """Start what :func:`changed_files` asks git."""
        made = cls(folder, workspace)
        listing = _listing(folder, workspace)
        if listing == []:
            made.known = []  # the folder is memcli's own: nothing else in it
            return made
        if isinstance(listing, _Listing):
            specs = listing.specs({})
            if specs is not None:
                made.listing = listing
                made._begin(("ls-tree", "-z", "--name-only", "--full-name", "HEAD", "--",
                             *(f if f == "." else f + "/" for f in listing.folders())))
                made._begin(_status_args(folder, workspace, specs))
                return made
        made._begin(_status_args(folder, workspace, None))  # no listing, or past MAX_PATHSPECS: `.` and exclusions
        return made

    def _begin(self, args: tuple[str, ...]) -> None:
        from memcli.errors import GitFailed
        from memcli.git import run as runner

        if self.known is not None:
            return
        try:
            self.started.append(runner.start(args, self.folder, timeout=5))
        except GitFailed:  # no git: nothing in play
            self.cancel()
            self.known = []

    def files(self) -> list[str]:
        """The files in play (see :func:`files_in_play`); empty outside git or when git fails."""
        from memcli.errors import GitFailed
        from memcli.git import run as runner

        if self.known is not None:
            return self.known
        try:
            done = [p.result() for p in self.started]
        except GitFailed:  # past the deadline (GitTimedOut)
            self.cancel()
            return []
        finally:
            self.started = [p for p in self.started if p.proc.returncode is None]
        if self.listing is None:
            (proc,) = done
            if self.tracked:
                return [f for f in proc.stdout.decode("utf-8", "replace").split("\0") if f][:MAX_FILES]
            return _changed(proc)
        tree, status = done
        held = _held(tree)
        if self.listing.holds(held):
            return _changed(status)
        specs = self.listing.specs(held)  # HEAD holds an entry the folder no longer does: ask again with it
        try:
            return _changed(runner.run(_status_args(self.folder, self.workspace, specs), self.folder, timeout=5))
        except GitFailed:
            return []

    def cancel(self) -> None:
        """End the git processes still running, unasked. Never raises."""
        for proc in self.started:
            proc.cancel()
        self.started = []


def project_path(name: str, cwd: Path | None, workspace: Path) -> str | None:
    """A file an agent names (absolute, or relative to its working folder ``cwd``) as the
    ``/``-separated path relative to its project's root, the form ``paths`` globs take.

    The root is git's top level of the file's nearest existing folder (else of ``cwd``);
    outside git, ``cwd``. None for a file outside that root, a relative name without
    ``cwd``, or one of the workspace's own files (``own_paths``: memories are not what
    memories are about).
    """
    import os

    path = Path(name)
    if not path.is_absolute():
        if cwd is None:
            return None
        path = cwd / path
    path = Path(os.path.realpath(path))
    start = next((p for p in path.parents if p.is_dir()), None)
    root = _toplevel(start) or _toplevel(cwd) or (Path(os.path.realpath(cwd)) if cwd else None)
    if root is None or root not in path.parents:
        return None
    if any(path == Path(own) or Path(own) in path.parents for own in own_paths(path.parent, workspace)):
        return None
    return path.relative_to(root).as_posix()


def _toplevel(folder: Path | None) -> Path | None:
    """git's top level of the work tree holding ``folder`` (resolved), or None."""
    if folder is None:
        return None
    from memcli.errors import GitFailed
    from memcli.git import run as runner

    # sealed: a hook run inside another repository's git hook asks about the agent's project
    try:
        proc = runner.run(("rev-parse", "--show-toplevel"), folder, timeout=5)
    except GitFailed:
        return None
    text = proc.stdout.decode("utf-8", "replace").strip()
    return Path(text).resolve() if proc.returncode == 0 and text else None


def about_files(memories: list[Memory], files: list[str]) -> list[Memory]:
    """The memories whose ``paths`` globs match at least one of ``files`` (each glob set compiled once)."""
    if not files:
        return []
    from wcmatch import glob

    matchers: dict[tuple[str, ...], object] = {}
    found = []
    for memory in memories:
        key = tuple(memory.paths)
        if key not in matchers:
            matcher = glob.compile(list(key), flags=glob.GLOBSTAR | glob.DOTGLOB)
            matchers[key] = any(matcher.match(f) for f in files)
        if matchers[key]:
            found.append(memory)
    return found


def candidates(ctx: Ctx, query: str | None = None, folder: Path | None = None,
               exclude: set[str] | None = None, lead: list[Memory] | None = None) -> tuple[list[Memory], int]:
    """Memories for the block, best first, and how many are eligible in all.

    Args:
        query: words that pull relevant memories forward.
        folder: the agent's working folder; memories whose ``paths`` match files there come forward.
        exclude: ids already given to this session (left out, not counted).
        lead: memories to put before all others (counted as eligible).
    """
    # git (the files in play) runs on the other core: started before the index is opened,
    # checked and read when the last block's pool held a path-scoped memory (at 100,000
    # in-tree memories git reads a 15 MB index: 60-90 ms, as long as all the rest), else once
    # this pool is known to hold one; git is not asked at all when none of it has paths
    early = folder is not None and _paths_hint(ctx)
    playing = InPlay.start(folder, ctx.ws.root) if folder is not None and early else None
    try:
        search = retriever(ctx)
        base = Query(text="", scopes=ctx.scopes(), now=ctx.now, limit=POOL, actor=ctx.actor)
        pool = [h.memory for h in search.search(base)]
        paths = any(m.paths for m in pool)
        if folder is not None and paths != early:
            _paths_hint(ctx, paths)
        if playing is not None and not paths:
            playing.cancel()
            playing = None
        elif playing is None and folder is not None and paths:
            playing = InPlay.start(folder, ctx.ws.root)
        first: list[Memory] = [*(lead or ()), *(m for m in pool if m.pinned)]
        if query and query.strip():
            base.text = query
            hits = search.search(base)  # as recall: a query matches what is served, never a hidden secret
            first += [h.memory for h in served_matches(base, hits, for_reader(ctx, [h.memory for h in hits]))]
        if playing is not None:
            first += about_files([m for m in pool if m.paths], playing.files())
    finally:
        if playing is not None:
            playing.cancel()
    seen = set(exclude or ())
    ordered = []
    for memory in [*first, *pool]:
        if memory.id not in seen:
            seen.add(memory.id)
            ordered.append(memory)
    extra = sum(1 for m in lead or () if m.id not in (exclude or ()))
    return ordered, max(len(ordered), search.count(base) - len(exclude or ()) + extra)


#: In the workspace's cache folder: present when the last context block's pool held a
#: memory with ``paths`` (git is then started before the index's work, see ``candidates``).
PATHS_HINT = "context-paths"


def _paths_hint(ctx: Ctx, value: bool | None = None) -> bool:
    """Whether the last block's pool held a path-scoped memory; with ``value``, record it.
    A hint only (it decides when git starts, never what is shown): an error reads as False
    and records nothing."""
    try:
        hint = ctx.ws.cache / PATHS_HINT
        if value is None:
            return hint.exists()
        if value:
            hint.touch()
        else:
            hint.unlink(missing_ok=True)
    except (OSError, MemcliError):
        return False
    return value


def fitted(memory: Memory, room: int) -> Memory:
    """``memory`` with its text cut at a line to at most ``room`` characters (``room`` > 0),
    ending with a line that names the whole one (``memcli show ID``); unchanged when it fits."""
    if len(memory.text) <= room:
        return memory
    tail = f"\n[cut to fit the context; the whole text: memcli show {memory.id}]"
    keep = memory.text[:max(0, room - len(tail))]
    keep = keep.rsplit("\n", 1)[0] if "\n" in keep else keep
    return memory.with_(body=keep.rstrip() + tail + "\n")


def _leading(memory: Memory, size: int, fmt: str) -> Memory:
    """``memory`` cut (:func:`fitted`) to ``LEAD_SHARE`` of the budget ``size``, or less when
    the block's own lines (fence, header, footer reserve, the memory's line prefix) leave
    less: a lead that does not fit would be dropped whole, and after a compaction the
    session's summary is the one memory that must come back."""
    room = int(size * LEAD_SHARE)
    while room >= MIN_LINE:
        cut = fitted(memory, room)
        if render([cut], size, fmt, 2).included:  # total 2: the footer's room is kept as for a full block
            return cut
        room -= max(MIN_LINE // 2, len(render([cut], 10 ** 9, fmt, 2).text) - size)
    return fitted(memory, MIN_LINE)


def context(ctx: Ctx, query: str | None, budget: int | None, fmt: str, folder: Path | None = None,
            exclude: set[str] | None = None, lead: list[Memory] | None = None) -> Block:
    """The context block for an agent session.

    Args:
        query: optional words that pull relevant memories forward.
        budget: characters the block may take; default ``[context] budget``.
        fmt: ``text``, ``markdown`` or ``json``.
        folder: the working folder (for ``paths`` relevance); default: none.
        exclude: ids to leave out (already in this session's context).
        lead: memories to put first (the session's summary after a compaction), each cut
            to ``LEAD_SHARE`` of the budget (:func:`fitted`).

    Raises:
        ValidationFailed: budget below ``MIN_BUDGET`` characters or format unknown.
        UsageProblem: ``query`` is longer than ``service.read.MAX_QUERY`` characters (as for ``recall``).
    """
    if query is not None and len(query) > MAX_QUERY:
        raise UsageProblem(f"the query is {len(query):,} characters long; context takes at most {MAX_QUERY:,}",
                           hint="pass the few words that matter")
    size = ctx.ws.config.context_budget if budget is None else budget
    if size < MIN_BUDGET:
        raise ValidationFailed(f"budget {size} is too small: use at least {MIN_BUDGET} characters")
    check_choice("format", fmt, ("text", "markdown", "json"))
    from memcli.service.stale_notes import notes as stale_notes

    lead = [_leading(m, size, fmt) for m in lead or ()]
    pool, total = candidates(ctx, query, folder, exclude, lead)
    notes = stale_notes(ctx)  # memories whose code moved: marked, and after the others
    leading = {m.id for m in lead}
    if notes:  # after every fresh candidate, not only those of the chunks read so far
        pool = [m for m in pool if m.id not in notes or m.id in leading] + [
            m for m in pool if m.id in notes and m.id not in leading]
    from memcli.service.read import partial_note

    partial = partial_note(ctx)
    from memcli.service.arrived import take_notices

    arrived = "\n".join(take_notices(ctx))  # a mass change by another person: said once, in the next block
    from memcli.service.conflicts import notes as conflict_notes

    broken = [ctx.ws.config.broken] if ctx.ws.config.broken else []  # memcli.toml does not load: until fixed
    standing = "\n".join(broken + conflict_notes(ctx))  # a blocked sync, two active for one subject: until fixed
    room = size - sum(len(n) + 40 * (n.count("\n") + 1) for n in (partial, arrived, standing) if n)
    from memcli.service.unbacked import notes as unbacked

    unverified: dict[str, str] = {}  # an actor no commit backs (a file dropped in by hand): labelled
    shown: list[Memory] = []
    block: Block | None = None
    for chunk in _vetted_chunks(pool, ctx.actor, leading):  # secrets of hand-written files cut out first
        unverified.update(unbacked(ctx, chunk))  # the files of what may be shown: 48 stats, not 400
        shown += for_reader(ctx, chunk)
        block = render(shown, room, fmt, total, notes, unverified, reader=ctx.actor)
        if room - len(block.text) < FOOTER_RESERVE + MIN_LINE:
            break  # full: no later memory would fit, so none needs its secret scan
    if block is None:
        block = render(shown, room, fmt, total, notes, unverified, reader=ctx.actor)
    if arrived:
        block = with_note(block, arrived, fmt, key="arrival")
    if standing:
        block = with_note(block, standing, fmt, key="conflict")
    return with_note(block, partial, fmt) if partial else block


def _vetted_chunks(pool: list[Memory], reader: str | None, leading: set[str]) -> Iterator[list[Memory]]:
    """``pool`` in chunks of at most ``REDACT_CHUNK``, with the unvetted instruction-like
    memories (``agents.injection.unvetted``; none of ``leading``) held back to the end, pinned
    or not: a teammate's unreviewed instruction comes after every other memory. Each chunk is
    screened only when the block asks for it (a full block stops at its first chunks)."""
    from memcli.agents.injection import unvetted

    later: list[Memory] = []
    for start in range(0, len(pool), REDACT_CHUNK):
        chunk = pool[start:start + REDACT_CHUNK]
        doubt = {m.id for m in chunk if m.id not in leading and unvetted(m, reader)}
        later += [m for m in chunk if m.id in doubt]
        kept = [m for m in chunk if m.id not in doubt]
        if kept:
            yield kept
    for start in range(0, len(later), REDACT_CHUNK):
        yield later[start:start + REDACT_CHUNK]


def with_note(block: Block, note: str, fmt: str, key: str = "partial") -> Block:
    """``block`` with ``note`` after its header (issue 21 point 5: an answer from a partial
    index says so in the block the agent reads), each of its lines (``\\n``-separated notes) a
    line of its own; a block with no memory becomes the header and the note alone. ``fmt``:
    ``text``, ``markdown`` or ``json`` (the note under ``key``: ``partial``, ``arrival`` for a
    mass change reported once, ``service.arrival``, or ``conflict`` for what a sync left to
    finish, ``service.conflicts``).
    Adds at most ``len(note) + 40`` characters a line."""
    import json

    from memcli.agents.context_block import HEADER, TAG

    lines = [f"memcli: {n}" for n in note.split("\n") if n]
    if fmt == "json":
        data = json.loads(block.text) if block.text else {"memories": [], "omitted": block.omitted}
        data[key] = note
        return Block(json.dumps(data, ensure_ascii=False) + "\n", block.included, block.omitted)
    if fmt == "markdown":
        opening = f"## Memories from memcli\n\n_{HEADER}_\n\n"
        text = block.text or opening
        said = "".join(f"_{line}_\n\n" for line in lines)
        return Block(text.replace(opening, f"{opening}{said}", 1), block.included, block.omitted)
    opening, closing = f"<{TAG}>\n{HEADER}\n", f"</{TAG}>\n"
    text = block.text or opening + closing
    said = "".join(f"{line}\n" for line in lines)
    return Block(text.replace(opening, f"{opening}{said}", 1), block.included, block.omitted)
