"""``purge``: delete a memory for good (SPEC.md section 4: "hard, asks for --yes; can also strip it from history").

A plain purge deletes the memory's file in one commit whose message holds no text; old
commits still hold it (``git log -p``), which is what makes it reversible with ``undo``.
``--history`` then rewrites every commit of the repository so that neither the file nor
the text remain anywhere (see ``memcli.git.rewrite``). Its record
(``.cache/unfinished-purge.json``: the id, its paths, texts and old blob hashes, so the
text is kept there until the erasure is done, and only there) lives from before the first
step until history no longer holds the text, so a purge a kill stopped is finished by the
same purge again, or by ``doctor --fix``.

A session summary (``compact --transcript``) names its raw transcript in its provenance
(``source: archive/transcripts/<sha256>.jsonl.gz``, git-ignored, secrets and all).
``--history`` deletes that file too: it is the raw source of the memory being erased, and
only this summary points at it (the archive is content-addressed and one transcript makes
one summary; should another memory name it all the same, it is kept and a warning says
why). A plain purge keeps it (``undo`` may bring the summary back) and warns where it stays.

Supersede links that other memories hold to the purged one are pruned in the same
commit: a link to a memory that no longer exists would be a dangling reference in
``show`` and in the files. Their status is left alone (a memory it had superseded stays
superseded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli import model, testpoint
from memcli.errors import MemcliError, UsageProblem
from memcli.model import Memory
from memcli.service import Ctx, journal
from memcli.service.write import apply, rewrite

if TYPE_CHECKING:
    from memcli.git.rewrite import Rewritten


@dataclass
class PurgeResult:
    """What ``purge`` did.

    Attributes:
        memory: the purged memory (as it was).
        changed: ids of memories whose links to it were pruned.
        commit: the purge commit (after a history rewrite, the new ``HEAD``), or None
            with ``autocommit = false``.
        history: whether history was rewritten.
        removed_paths: with ``history``, the paths removed from every commit (relative to the top folder).
        transcript: the raw session transcript the memory was made from (``archive/transcripts/…``,
            relative to the workspace) when it was in the archive, else None.
        transcript_deleted: whether that file was deleted (``history`` only).
        warnings: what the user must know (history rewritten, forced push, old clones).
        message: one line for a person.
    """

    memory: Memory
    message: str
    changed: list[str] = field(default_factory=list)
    commit: str | None = None
    history: bool = False
    removed_paths: list[str] = field(default_factory=list)
    transcript: str | None = None
    transcript_deleted: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, now: datetime | None = None) -> dict[str, Any]:
        """JSON-ready form (the text is not repeated: it is what was purged)."""
        return {"op": "purge", "outcome": "deleted", "message": self.message, "id": self.memory.id,
                "scope": self.memory.scope, "path": self.memory.path, "changed": self.changed, "commit": self.commit,
                "history": self.history, "removedPaths": self.removed_paths, "transcript": self.transcript,
                "transcriptDeleted": self.transcript_deleted}


def purge(ctx: Ctx, ref: str, history: bool = False) -> PurgeResult:
    """Delete a memory's file in one commit (op ``purge``); with ``history``, also from every commit.

    With ``history``, a record of the purge (``.cache/unfinished-purge.json``: id, paths, the
    texts and old blob hashes to remove) is written before the first step and removed only
    when history no longer holds the text (``gitrewrite.still_held``). A purge a kill
    interrupted is finished by running it again with the same id, even though the memory's
    file is gone by then, or by ``memcli doctor --fix`` (``service.doctor.unfinished``).

    Args:
        ref: id or unique prefix of a visible memory, whatever its status; with ``history``,
            also the id of a purge a kill interrupted.
        history: rewrite the repository's history (every ref) to remove the file and the
            text from all commits and messages; expire reflogs and garbage-collect; and
            delete the raw session transcript a summary was made from (module docstring).

    Raises:
        MemoryNotFound, AmbiguousId: ``ref`` names no visible memory (nor an unfinished purge).
        UsageProblem: ``history`` with ``[git] autocommit = false``.
        HistoryConflict: ``history`` while tracked files have uncommitted changes, with a
            stash, or with several work trees (nothing is written).
        GitFailed: git-filter-repo is missing (nothing written) or failed, or history still
            holds the text afterwards (the purge commit stays and so does the record:
            running the purge again finishes it).
        WorkspaceLocked, GitLocked: nothing is written.
    """
    from memcli.git import rewrite as gitrewrite
    from memcli.service.session import transcript_archive

    found = pending(ctx, ref) if history else None
    interrupted = pending(ctx) if history and found is None else None
    if interrupted is not None:  # another purge a kill interrupted: it goes first,
        earlier = purge(ctx, interrupted[1]["id"], history=True)  # its record would be overwritten otherwise
        ctx.warnings += [earlier.message, *earlier.warnings]
    if history:
        if found is not None:
            store, record = found
            with store.ws.lock():
                store.catalog(refresh=True)  # a purge commit a kill interrupted is completed or undone first
                if pending_line(record) in ctx.warnings:  # it is being finished now
                    ctx.warnings.remove(pending_line(record))
                current = journal.load(store, journal.PURGE)  # read again under the lock: its writer may have
                gone = not any(m.id == record["id"] for m in store.catalog().by_prefix(record["id"]))  # finished
                if current is not None and current.get("id") == record["id"] and gone:
                    return _finish(ctx, store, current)
            # the memory is still there: the kill came before the purge commit; purge it from the start
    workspace, ctx = ctx, ctx.owner(ref)  # a personal memory is purged in the person's own store
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        if found is not None and pending_line(found[1]) in ctx.warnings:  # this purge takes it over
            ctx.warnings.remove(pending_line(found[1]))
        item = ctx.resolve(ref)
        memory = item.memory
        transcript = transcript_archive(ctx.ws.root, memory.provenance)
        sharers = _also_from(ctx, memory) if transcript else []
        if history:
            if not ctx.ws.config.autocommit:
                raise UsageProblem("purge --history rewrites git history and needs [git] autocommit = true",
                                   hint="commit your changes, set autocommit = true in memcli.toml, and retry")
            repo = ctx.history()
            gitrewrite.check_rewritable(repo)
            paths = gitrewrite.paths_of(repo, memory.id, item.file)
            texts = gitrewrite.texts_of(repo, paths) | {memory.text}
            record = {"op": "purge", "id": memory.id, "scope": memory.scope, "path": memory.path, "paths": paths,
                      "texts": sorted(texts), "blobs": sorted(gitrewrite.blobs_of(repo, paths)),
                      "transcript": [transcript[0], str(transcript[1])] if transcript and not sharers else None,
                      "workspace": _workspace_part(workspace, memory, texts) if ctx is not workspace else None}
            journal.save(ctx, journal.PURGE, record)
            testpoint.reached("purge:journaled")
        writes: dict[Path, bytes | None] = {item.file: None}
        changed = _prune_links(ctx, memory, writes)
        try:
            commit = apply(ctx, writes, "purge", [memory], changed, with_text=False)
        except MemcliError:
            if history:  # nothing was written: there is no purge to finish
                journal.drop(ctx, journal.PURGE)
            raise
        result = PurgeResult(memory, f"purged {memory.id} ({memory.scope}): its file is deleted", changed, commit)
        if changed:
            result.message += f"; links pruned in {', '.join(changed)}"
        if history:
            testpoint.reached("purge:committed")
            _erase(workspace, ctx, record, result)
        else:
            result.message += " (old commits still hold it; `--history` removes it from them)"
        if transcript:
            result.transcript = transcript[0]
            if history and not sharers:
                result.transcript_deleted = True
                result.message += f"; its raw session transcript {transcript[0]} is deleted"
            elif history:
                result.warnings.append(f"the raw session transcript {transcript[0]} is kept: "
                                       f"{', '.join(sharers)} also names it as its source")
            else:
                result.warnings.append(f"the raw session transcript this summary was made from stays at "
                                       f"{transcript[0]} (secrets included, if it held any): `purge --history` "
                                       f"deletes it with the memory, or delete it by hand")
    return result


def pending(ctx: Ctx, ref: str | None = None) -> tuple[Ctx, dict] | None:
    """The record of an unfinished ``purge --history`` in the workspace or one of the person's
    own stores, as ``(store, record)``; with ``ref``, only one whose id is ``ref`` or starts
    with it (4 characters or more). None when there is none."""
    from memcli.service import check_ref

    wanted = None
    if ref is not None:
        try:
            wanted = check_ref(ref)
        except MemcliError:
            return None
    for store in (ctx, *ctx.personal_stores()):
        record = journal.load(store, journal.PURGE)
        if not record or not isinstance(record.get("id"), str):
            continue
        if wanted is None or record["id"] == wanted or (len(wanted) >= 4 and record["id"].startswith(wanted)):
            return store, record
    return None


def pending_line(record: dict) -> str:
    """One line naming an unfinished purge, for ``doctor`` and the warnings of other writes."""
    from memcli.git.commit import alive as _alive

    if _alive(int(record.get("pid", 0))):
        return f"a `purge --history` of {record['id']} is in progress (process {record.get('pid')})"
    return (f"an unfinished `purge --history` of {record['id']} (started {record.get('at', 'at an unknown time')}, "
            f"stopped before it finished): git history may still hold its text; "
            f"`memcli purge {record['id']} --history --yes` or `memcli doctor --fix` finishes it")


def _finish(workspace: Ctx, store: Ctx, record: dict) -> PurgeResult:
    """Finish a purge a kill interrupted after its purge commit; the caller holds ``store``'s lock."""
    from memcli.git import rewrite as gitrewrite

    repo = store.history()
    gitrewrite.check_rewritable(repo)
    memory = Memory(record["id"], str(record.get("scope", "")), "", path=str(record.get("path", "")))
    result = PurgeResult(memory, f"finished the purge of {memory.id} that was interrupted "
                                 f"({record.get('at', 'at an unknown time')}): its file was deleted",
                         commit=repo.run("rev-parse", "HEAD"))
    _erase(workspace, store, record, result)
    if record.get("transcript"):
        result.transcript, result.transcript_deleted = record["transcript"][0], True
        result.message += f"; its raw session transcript {record['transcript'][0]} is deleted"
    return result


def _erase(workspace: Ctx, ctx: Ctx, record: dict, result: PurgeResult) -> None:
    """The history part of a purge (from the record): rewrite, drop the index, delete the raw transcript,
    rewrite the workspace's history too when the memory lay there; check that nothing holds the text;
    remove the record. The caller holds ``ctx``'s lock.

    Raises:
        HistoryConflict, GitFailed: the record stays; running the purge again finishes it.
    """
    from memcli.errors import GitFailed
    from memcli.git import rewrite as gitrewrite

    memory_id, texts, repo = record["id"], set(record["texts"]), ctx.history()
    paths = sorted(set(record["paths"]) | set(gitrewrite.paths_of(repo, memory_id, None)))
    blobs = set(record["blobs"]) | gitrewrite.blobs_of(repo, paths)
    done = gitrewrite.rewrite(repo, paths, memory_id, texts | gitrewrite.texts_of(repo, paths), ctx.ws.root)
    testpoint.reached("purge:rewritten")
    _drop_index(ctx)
    result.history, result.commit, result.removed_paths = True, done.head, done.paths
    result.message += "; removed from every commit and commit message"
    result.warnings = _warnings(done)
    if record.get("transcript"):
        Path(record["transcript"][1]).unlink(missing_ok=True)
    checks = [(repo, blobs)]
    part = record.get("workspace")
    if part:  # moved out of the workspace by `doctor --fix`: its history held it
        result.message += _from_workspace_history(workspace, memory_id, part["paths"], texts | set(part["texts"]),
                                                  result)
        checks.append((workspace.history(), set(part["blobs"])))
    for held_in, old in checks:
        what = gitrewrite.still_held(held_in, memory_id, texts, old)
        if what:
            raise GitFailed(f"the purge of {memory_id} is not finished: {held_in.toplevel()} still holds {what}",
                            hint=f"run `memcli purge {memory_id} --history --yes` again (`memcli doctor --fix` "
                                 "finishes it too)")
    journal.drop(ctx, journal.PURGE)


def _workspace_part(workspace: Ctx, memory: Memory, texts: set[str]) -> dict | None:
    """What the project workspace's history holds of a personal memory that ``doctor --fix`` moved
    out of it (``service.move``): ``{"paths", "texts", "blobs"}``, or None when it never lay there."""
    from memcli.git import rewrite as gitrewrite

    repo = workspace.history()
    held = gitrewrite.paths_of(repo, memory.id, None)
    if not held:
        return None
    return {"paths": held, "texts": sorted(gitrewrite.texts_of(repo, held) - texts),
            "blobs": sorted(gitrewrite.blobs_of(repo, held))}


def _from_workspace_history(workspace: Ctx, memory_id: str, paths: list[str], texts: set[str],
                            result: PurgeResult) -> str:
    """Remove a personal memory from the project workspace's history too, where it lay (at ``paths``,
    and wherever else its id's files are) before ``doctor --fix`` moved it to the person's store
    (``service.move``)."""
    from memcli.git import rewrite as gitrewrite

    repo = workspace.history()
    held = sorted(set(paths) | set(gitrewrite.paths_of(repo, memory_id, None)))
    with workspace.ws.lock():
        gitrewrite.check_rewritable(repo)
        done = gitrewrite.rewrite(repo, held, memory_id, texts | gitrewrite.texts_of(repo, held), workspace.ws.root)
        _drop_index(workspace)
    result.removed_paths += done.paths
    result.warnings += _warnings(done)
    return "; removed from the project workspace's history as well (it lay there before it moved)"


def _also_from(ctx: Ctx, memory: Memory) -> list[str]:
    """Ids of the other memories (any status) whose provenance names the same source file."""
    catalog = ctx.catalog()
    return sorted(m.id for status in model.STATUSES for m in catalog.with_status(status)
                  if m.id != memory.id and m.provenance.source == memory.provenance.source)


def _drop_index(ctx: Ctx) -> None:
    """Delete the search index: SQLite may keep a deleted row's text in free pages.

    It is derived data; the next command rebuilds it from the files.
    """
    from memcli.index.catalog import remove_index
    from memcli.index.db import INDEX_NAME

    remove_index(ctx.ws.cache / INDEX_NAME)
    ctx._catalog = None


def _prune_links(ctx: Ctx, memory: Memory, writes: dict[Path, bytes | None]) -> list[str]:
    """Drop ``memory.id`` from other memories' ``supersedes``/``supersededBy``; add their files to ``writes``."""
    catalog = ctx.catalog()
    holders = {m.id: m for status in model.STATUSES for m in catalog.with_status(status)
               if memory.id in m.supersedes or memory.id in m.superseded_by}
    for ref in (*memory.supersedes, *memory.superseded_by):  # its own links, should the index lag
        holders.update({m.id: m for m in catalog.by_prefix(ref) if m.id == ref})
    changed = []
    for holder in holders.values():
        item = ctx.load(holder)
        changes: dict[str, Any] = {}
        for key, values in (("supersedes", item.memory.supersedes), ("supersededBy", item.memory.superseded_by)):
            if memory.id in values:
                changes[key] = [v for v in values if v != memory.id] or None
        if changes:
            writes[item.file] = rewrite(item, {**changes, "updatedAt": ctx.now})
            changed.append(holder.id)
    return changed


def _warnings(done: Rewritten) -> list[str]:
    remotes = ", ".join(done.remotes)
    push = (f"the remotes ({remotes}) need a forced push (`git push --force --all` and `--tags`)"
            if done.remotes else "any remote you push to needs a forced push")
    out = [f"history was rewritten: every commit hash from the memory's first commit on changed; {push}; "
           "existing clones and forks "
           "still hold the old text until they are deleted or re-cloned"]
    if done.project:
        out.append("the workspace lives inside a larger project repository: the whole project's history "
                   "was rewritten, not only memcli's")
    return out
