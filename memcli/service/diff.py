"""``memcli diff``: memory changes between two revisions, explained in words for a reviewer.

The commits of the range are walked one by one (``git.history.History.commits``), so each
change is named with the commit, operation and actor that made it; every version is
parsed with memcli's own parsers (``service.audit.read_version``) and each pair handed to
:func:`memcli.changes.classify`. Another user's personal memories stay out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memcli.changes import Change, Step, Version, classify, expired_between, expiry, purged_from_history
from memcli.errors import UsageProblem
from memcli.git.history import History
from memcli.git.log import Touched
from memcli.policy.owner import scope_in_commit_is_mine
from memcli.service import Ctx
from memcli.service.audit import is_memory_path, read_disk, read_version, step_of, visible_path
from memcli.store.files import MEMORIES
from memcli.timeutil import format_instant, parse_instant

WORKING_TREE = "working tree"


@dataclass
class DiffResult:
    """``memcli diff``: the two ends and the memory changes between them, grouped by memory.

    Attributes:
        to_commit: None for the working tree.
        changes: grouped by memory (in order of each memory's first change), each group in time order.
        other_files: workspace files changed that are not memories (``memcli.toml`` …).
    """

    from_rev: str
    from_commit: str
    from_at: datetime
    to_rev: str
    to_commit: str | None
    to_at: datetime
    changes: list[Change] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"from", "to", "changes": [...]}`` plus the times and other files."""
        return {"from": self.from_commit, "to": self.to_commit or WORKING_TREE, "from_rev": self.from_rev,
                "to_rev": self.to_rev, "from_at": format_instant(self.from_at), "to_at": format_instant(self.to_at),
                "changes": [c.to_dict() for c in self.changes], "other_files": self.other_files}


def parse_range(spec: str | None) -> tuple[str, str | None]:
    """``None`` -> (HEAD, working tree); ``REV`` -> (REV, working tree); ``A..B`` -> (A, B); an empty side is HEAD.

    Raises:
        UsageProblem: ``A...B`` or more than one ``..``.
    """
    if spec is None or not spec.strip():
        return "HEAD", None
    spec = spec.strip()
    if "..." in spec or spec.count("..") > 1:
        from memcli.text.secrets import shown

        raise UsageProblem(f"cannot read the range {shown(spec)}", hint="give REV or FROM..TO, e.g. HEAD~3..HEAD")
    if ".." not in spec:
        return spec, None
    old, new = spec.split("..")
    return old or "HEAD", new or "HEAD"


@dataclass
class _Track:
    """One memory file followed through the commits of a range (renames included)."""

    start: str
    steps: list[tuple[Step, str, bool]] = field(default_factory=list)  # (step, path, deleted)


def diff(ctx: Ctx, spec: str | None = None) -> DiffResult:
    """Explain the memory changes between two revisions, in words, for a reviewer.

    Args:
        spec: ``None`` (uncommitted changes: working tree against HEAD), ``REV`` (REV to
            the working tree) or ``A..B`` (commits reachable from B and not from A, as git's
            ``A..B``, each named by its own commit, then the working tree if B is absent).

    Expired: a memory that stayed active and whose ``expireAt`` fell between the two ends'
    times (the working tree's time is memcli's clock), or was edited to a past date.

    Raises:
        RevisionNotFound: a revision names no commit.
        UsageProblem: the range cannot be read.
    """
    old_rev, new_rev = parse_range(spec)
    repo = ctx.history()
    start = repo.entry(old_rev)
    end = repo.entry(new_rev) if new_rev else None
    head = end.commit if end else repo.resolve("HEAD")
    result = DiffResult(old_rev, start.commit, parse_instant(start.at), new_rev or WORKING_TREE,
                        end.commit if end else None, parse_instant(end.at) if end else ctx.now)
    tracks: dict[str, _Track] = {}
    others: dict[str, None] = {}

    def follow(step: Step, touched: list[Touched]) -> None:
        for t in touched:
            if not is_memory_path(t.path):
                others[t.path] = None
                continue
            source = t.old_path if t.kind in "RC" and t.old_path else t.path
            track = tracks.pop(source, None) if t.kind != "C" else None
            track = track or _Track(source)
            track.steps.append((step, t.path, t.kind == "D"))
            tracks[t.path] = track

    if start.commit != head:
        for entry in repo.commits(["."], rev_range=f"{start.commit}..{head}"):
            follow(step_of(entry, repo), entry.touched)
        result.changes += _emptied_purges(ctx, repo, f"{start.commit}..{head}")
    if end is None:
        follow(Step(None, None, None, ctx.now), repo.changed(head))
    # Every version needed, read in one batch: the start of each track, then each step's.
    wanted: list[tuple[str, str]] = []
    for track in tracks.values():
        wanted.append((start.commit, track.start))
        wanted += [(s.commit, p) for s, p, gone in track.steps if s.commit and not gone]
    datas = iter(repo.blobs(wanted))
    spans: dict[str, list[tuple[Version | None, datetime, datetime]]] = {}  # path -> (version, from, until)
    for path, track in tracks.items():
        before = read_version(ctx, track.start, next(datas), result.from_at)
        since = result.from_at
        for step, spath, gone in track.steps:
            data = None if gone else next(datas) if step.commit else read_disk(ctx, spath)
            after = None if gone else read_version(ctx, spath, data, step.at)
            result.changes += [c for c in classify(before, after, step) if _shown(ctx, c, before, after)]
            spans.setdefault(path, []).append((before, since, step.at))
            before, since = after, step.at
        spans.setdefault(path, []).append((before, since, result.to_at))
    _expiries(ctx, repo, result, spans)
    result.changes = _grouped(result.changes)
    _redacted(ctx, result.changes)
    result.other_files = list(others)
    return result


def _redacted(ctx: Ctx, changes: list[Change]) -> None:
    """Replace the secrets in each change's text and old text by markers (in place): the
    versions a diff shows never passed today's gate, or passed it by an override."""
    from memcli.service.redact import cache_of, redact_texts

    texts = [c.text for c in changes] + [c.old_text or "" for c in changes]
    done = redact_texts(texts, cache_of(ctx))
    for change, text, old in zip(changes, done, done[len(changes):]):
        change.text = text
        if change.old_text is not None:
            change.old_text = old


def _emptied_purges(ctx: Ctx, repo: History, rev_range: str) -> list[Change]:
    """A ``purged`` change for each purge in ``rev_range`` that ``purge --history`` emptied.

    Such a commit no longer deletes its memory's file (it may change no file at all, which
    a path-limited ``git log`` skips): its trailers still name the memory. Purges of
    another user's personal memories stay out.
    """
    out: list[Change] = []
    for entry in repo.commits([], rev_range=rev_range, grep="Memcli-Op: purge"):
        scopes = entry.trailers.get("scope", "").split()
        if not all(scope_in_commit_is_mine(s, entry.trailers.get("actor") or entry.author, ctx.actor)
                   for s in scopes):
            continue
        out += purged_from_history(step_of(entry, repo), entry.trailers.get("id", "").split(), scopes,
                                   [t.path for t in entry.touched])
    return out


def _shown(ctx: Ctx, change: Change, before: Version | None, after: Version | None) -> bool:
    """Leave out changes to another user's personal memories."""
    return all(visible_path(ctx, v.path, v.memory) for v in (before, after) if v is not None)


def _expiries(ctx: Ctx, repo: History, result: DiffResult,
              spans: dict[str, list[tuple[Version | None, datetime, datetime]]]) -> None:
    """Add an ``expired`` change for each memory whose ``expireAt`` passed while a version of it was active.

    Args:
        spans: for each changed file, its versions and the time each one held, in order;
            files the range did not change are read at its end and held throughout.
    """
    if result.to_at <= result.from_at:
        return
    said = {c.id for c in result.changes if c.change == "expired"}
    paths = [p for p in repo.grep_paths("expireAt", result.to_commit, MEMORIES)
             if is_memory_path(p) and p not in spans and visible_path(ctx, p)]
    if result.to_commit:
        datas = repo.blobs([(result.to_commit, p) for p in paths])
    else:
        datas = [read_disk(ctx, p) for p in paths]
    held = [span for versions in spans.values() for span in versions]
    held += [(read_version(ctx, p, d, result.to_at), result.from_at, result.to_at) for p, d in zip(paths, datas)]
    for version, since, until in held:
        if version is None:  # the file did not exist then
            continue
        memory = version.memory
        if memory and memory.id not in said and ctx.may_see(memory) and expired_between(memory, since, until):
            said.add(memory.id)
            result.changes.append(expiry(memory, version.path))


def _time_of(change: Change) -> datetime:
    """When a change of a diff happened: each has a time (its commit's, or its ``expireAt``)."""
    assert change.at is not None, change
    return change.at


def _grouped(changes: list[Change]) -> list[Change]:
    """Changes grouped by memory, groups in order of their first change, each group in time order."""
    groups: dict[str, list[Change]] = {}
    for change in changes:
        groups.setdefault(change.id, []).append(change)
    ordered = [sorted(group, key=_time_of) for group in groups.values()]  # stable: commit order on ties
    ordered.sort(key=lambda group: _time_of(group[0]))
    return [c for group in ordered for c in group]
