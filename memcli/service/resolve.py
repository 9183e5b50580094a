"""``memcli resolve``: finish what ``memcli sync`` could not (issue 22 point 4; docs/teams.md).

``sync`` merges memory files field by field (``policy.merge``) and settles one review race
itself (a rejection beats a concurrent approval, both recorded). What is left stops the sync
(``service.conflicts`` records it; every session start says so) and is finished here:

* **a true conflict**: :func:`pending` names each file both sides changed that does not merge,
  with what each side holds, without touching the work tree; :func:`finish` then merges the
  remote ref once more (``git merge --no-commit``: every other file is merged by the driver as
  in a sync), takes the side the person chose for each conflicted file, and commits the merge
  (``Memcli-Op: resolve``; signed where the store signs). The merge is recorded before it starts
  (``service.sync_recover``'s record), so a kill half-way is rolled back by the next command;
* **two stores started apart** (no common commit): the same, with the histories joined
  (``--allow-unrelated-histories``). ``memcli.toml`` is the remote's (its workspace id is the one
  its other clones use), and the person's own store of this clone's former id comes along
  (:func:`carry_personal`), so none of their personal memories is hidden;
* **two active memories for one subject** after a merge (:func:`after_merge` finds them):
  :func:`keep` retires one for the other (``superseded``, linked both ways), one commit.

After a merge (``sync`` and :func:`finish`), :func:`after_merge` also puts back what a memory
whose approval lost to a rejection had retired: the approval's side marked the memories it
replaced ``superseded``; with the rejection winning they are ``active`` again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memcli.errors import MemoryNotFound, ReviewRefused, UsageProblem, WrongStatus
from memcli.service import Ctx

if TYPE_CHECKING:
    from memcli.git.history import History
    from memcli.git.repo import GitRepo
    from memcli.index.catalog import Catalog

#: The sides a person chooses between.
SIDES = ("ours", "theirs")


@dataclass
class FileConflict:
    """One file both sides changed that does not merge: why, and each side in short
    (``None``: the side has no such file)."""

    path: str
    reasons: list[str]
    ours: dict[str, Any] | None
    theirs: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reasons": self.reasons, "ours": self.ours, "theirs": self.theirs}


@dataclass
class Pending:
    """What a blocked sync left: ``kind`` (``conflict`` or ``apart``), the remote ref, the files."""

    kind: str
    ref: str
    files: list[FileConflict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "ref": self.ref, "files": [f.to_dict() for f in self.files]}


@dataclass
class Resolved:
    """What :func:`finish` did: the merge commit, the side taken per file, and lines to report."""

    commit: str
    taken: dict[str, str]
    lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "taken": self.taken, "notes": self.lines}


def _blocked(ctx: Ctx) -> dict:
    from memcli.service.conflicts import load

    blocked = load(ctx).get("blocked")
    if not isinstance(blocked, dict) or not blocked.get("ref"):
        raise MemoryNotFound("no blocked sync to resolve in this store",
                             hint="`memcli sync` says when one stops; two active memories for one subject are "
                                  "resolved with `memcli resolve --keep ID OTHER`")
    return blocked


def _summary(ctx: Ctx, path: str, data: bytes | None) -> dict[str, Any] | None:
    """A side of a file in short: status, review, text's first line (or what is wrong with it)."""
    if data is None:
        return None
    if not path.endswith(".md"):
        return {"text": data.decode("utf-8", "replace")[:200]}
    try:
        memory = ctx.ws.files.load(ctx.ws.root / path, data=data, mtime=0).memory
    except Exception as err:  # noqa: BLE001 - any unreadable version is shown as such
        return {"unreadable": str(getattr(err, "reason", err))[:200]}
    review = memory.review or {}
    return {"status": memory.status, "review": f"{review.get('decision')} by {review.get('by')}" if review else None,
            "text": memory.text.splitlines()[0][:200] if memory.text else ""}


def pending(ctx: Ctx) -> Pending:
    """The files of the blocked sync that do not merge, each side in short; the work tree is
    not touched.

    Raises:
        MemoryNotFound: no blocked sync is recorded (exit 4).
        RevisionNotFound: the remote ref is gone (run ``memcli sync`` again).
    """
    from memcli.policy.merge import merge_file

    blocked = _blocked(ctx)
    repo = ctx.history()
    ref = repo.resolve(str(blocked["ref"]))
    status, out, _ = repo.raw("merge-base", "HEAD", ref)
    base = out.decode().strip() if status == 0 else None
    mine = set(_changed(repo, base, "HEAD"))
    theirs = set(_changed(repo, base, ref))
    result = Pending(str(blocked.get("kind", "conflict")), str(blocked["ref"]))
    for path in sorted(mine & theirs):
        if result.kind == "apart" and path == "memcli.toml":
            continue  # the remote's, whose workspace id its other clones use (finish)
        datas = repo.blobs([(base, path)] if base else []) or [None]
        old = datas[0]
        ours, their = repo.blobs([("HEAD", path), (ref, path)])
        if ours == their:
            continue
        reasons: list[str] = []
        if path.endswith(".md") and ours is not None and their is not None:
            try:
                merged = merge_file(old, ours, their, path)
                reasons = merged.conflicts
            except Exception:  # noqa: BLE001 - a version that does not parse: a textual conflict
                reasons = ["a version does not read as a memory"]
        elif old not in (ours, their):
            reasons = ["both sides changed it" if ours is not None and their is not None else
                       "one side changed it and the other removed it"]
        if reasons:
            result.files.append(FileConflict(path, reasons, _summary(ctx, path, ours), _summary(ctx, path, their)))
    return result


def _changed(repo: History, base: str | None, rev: str) -> list[str]:
    """Workspace-relative files that differ from ``base`` to ``rev`` (every file of ``rev`` when no base)."""
    if base is None:
        return repo.files(rev)
    status, out, _ = repo.raw("diff", "--name-only", "--no-renames", "--relative", base, rev, "--", ".")
    return out.decode("utf-8", "replace").splitlines() if status == 0 else []


def finish(ctx: Ctx, choices: dict[str, str]) -> Resolved:
    """Merge the blocked sync's remote ref, taking the chosen side of each conflicted file.

    Args:
        choices: workspace-relative path -> ``ours`` or ``theirs`` for every file :func:`pending`
            listed (and any other git cannot merge); ``memcli.toml`` of two stores started apart is
            always the remote's.

    Raises:
        MemoryNotFound: no blocked sync (exit 4).
        UsageProblem: a conflicted file has no choice (exit 2; the merge is aborted, nothing changed).
        UnsafeGitState: a merge or rebase is already in progress (exit 14).
        GitFailed: git cannot merge or commit (aborted, nothing changed).
    """
    from memcli.errors import GitFailed
    from memcli.git import commit as gitcommit
    from memcli.git import log as gitlog
    from memcli.git.signatures import SIGNING_HINT, signing_args
    from memcli.service import journal
    from memcli.service.conflicts import set_blocked

    bad = sorted(set(choices.values()) - set(SIDES))
    if bad:
        raise UsageProblem(f"a side is ours or theirs, not {bad[0]!r}", hint="memcli resolve --take theirs")
    blocked = _blocked(ctx)
    apart = blocked.get("kind") == "apart"
    with ctx.ws.lock():
        repo = ctx.git()
        gitcommit.check_state(repo)
        ref = repo.run("rev-parse", "--verify", f"{blocked['ref']}^{{commit}}")
        before = repo.run("rev-parse", "HEAD")
        former_id = ctx.ws.config.workspace_id
        journal.save(ctx, journal.SYNC, {"op": "resolve", "branch": blocked.get("branch", ""),
                                         "incomingRef": blocked["ref"], "head": before, "incoming": ref})
        pre, sign = signing_args(repo.sign_ssh)
        message = gitlog.message("resolve", f"merge {blocked['ref']}", {"Op": "resolve", "Actor": ctx.actor})
        joining = ["--allow-unrelated-histories"] if apart else []
        status, _, err = repo.raw("merge", "--no-commit", "--no-ff", *joining, ref)
        taken: dict[str, str] = {}
        try:
            unmerged = [p.removeprefix(repo.prefix) for p in repo.run("diff", "--name-only", "--diff-filter=U",
                                                                      "--relative").splitlines()]
            if status != 0 and not repo.git_path("MERGE_HEAD").exists():
                raise GitFailed(f"git merge failed: {err.strip().splitlines()[0] if err.strip() else status}")
            for path in unmerged:
                side = "theirs" if apart and path == "memcli.toml" else choices.get(path)
                if side is None:
                    raise UsageProblem(f"{path} conflicts and no side was chosen for it; nothing changed",
                                       hint="run `memcli resolve` and choose, or `memcli resolve --take ours|theirs`")
                _take(repo, path, "HEAD" if side == "ours" else ref)
                taken[path] = side
            proc = repo.raw(*pre, "commit", *sign, "--no-verify", "-q", "-F", "-", input=message.encode("utf-8"))
            if proc[0] != 0:
                said = proc[2].strip().splitlines()[0] if proc[2].strip() else str(proc[0])
                raise GitFailed(f"git commit failed: {said}",
                                hint=SIGNING_HINT if sign else "set your git identity (`git config user.email`)")
        except BaseException:
            repo.raw("merge", "--abort")
            journal.drop(ctx, journal.SYNC)
            raise
        journal.drop(ctx, journal.SYNC)
        commit = repo.run("rev-parse", "HEAD")
        set_blocked(ctx, None)
        ctx = Ctx.open(str(ctx.ws.root), ctx.actor)  # memcli.toml may be the remote's now (the lock is held)
        out = Resolved(commit, taken)
        from memcli.service import arrival

        held, in_force = arrival.after_sync(ctx, before)
        out.lines += [f"quarantined on arrival (not served; `memcli quarantine accept|revert ID`): {e.line()}"
                      for e in held] + in_force
        if apart and former_id and ctx.ws.config.workspace_id and former_id != ctx.ws.config.workspace_id:
            out.lines.append(carry_personal(former_id, ctx.ws.config.workspace_id))
        out.lines += after_merge(ctx, before)
    return out


def _take(repo: GitRepo, path: str, rev: str) -> None:
    """Put ``path`` as ``rev`` has it (removed when ``rev`` has none) in the work tree and index."""
    full = f"{repo.prefix}{path}"
    if repo.raw("cat-file", "-e", f"{rev}:{full}")[0] == 0:
        repo.run("--literal-pathspecs", "checkout", rev, "--", path)
    else:
        repo.run("--literal-pathspecs", "rm", "-q", "--force", "--ignore-unmatch", "--", path)


def carry_personal(former: str, joined: str) -> str:
    """Carry the person's own store of workspace id ``former`` over to ``joined`` (the id the
    joined store took): renamed when ``joined`` has no store yet, else its memory files missing
    there are copied in and committed. Returns one line saying what was done."""
    from memcli.store import personal

    old, new = personal.project_store(former), personal.project_store(joined)
    if not (old / "memcli.toml").is_file():
        return f"the store took the workspace id {joined} (you had no personal memories under {former})"
    if not (new / "memcli.toml").is_file():
        new.parent.mkdir(parents=True, exist_ok=True)
        os.replace(old, new)
        return f"the store took the workspace id {joined}; your personal store moved with it ({old} -> {new})"
    writes: dict[Path, bytes | None] = {}
    for path in sorted((old / "memories").rglob("*.md")):
        target = new / path.relative_to(old)
        if not target.exists() and not path.is_symlink():
            writes[target] = path.read_bytes()
    if writes:
        from memcli.git import log as gitlog
        from memcli.service.write import apply

        store = Ctx.open(str(new), None)
        with store.ws.lock():
            apply(store, writes, "import", [], [], edits_checked=True,
                  message=gitlog.message("resolve", f"carry {len(writes)} memories from {former}", {"Op": "resolve"}))
    return (f"the store took the workspace id {joined}; {len(writes)} of your personal memories under {former} "
            f"were copied into your store of it ({new}); {old} is left as it was")


# --- after a merge ----------------------------------------------------------------------------

def after_merge(ctx: Ctx, before: str | None) -> list[str]:
    """What a merge that brought ``before..HEAD`` left to settle (module docstring): restore the
    memories a rejected-over-approval memory had retired (one commit), and record each pair of
    active memories for one subject (``service.conflicts``). Returns lines for the person.
    The caller holds the workspace lock (``sync``, :func:`finish`)."""
    from memcli.service.conflicts import load, save

    if not before:
        return []
    repo = ctx.git()
    status, out, _ = repo.raw("diff", "--name-only", "--no-renames", "--relative", before, "HEAD", "--", "memories")
    arrived = {PurePosixPath(p).name.removesuffix(".md").split("-", 1)[0]
               for p in (out.decode("utf-8", "replace").splitlines() if status == 0 else [])}
    if not arrived:
        return []
    catalog = ctx.catalog(refresh=True)
    lines = _restore_after_rejection(ctx, catalog, arrived)
    pairs = _duplicates(ctx.catalog(), arrived)
    if pairs:
        data = load(ctx)
        known = [p for p in data.get("duplicates", []) if isinstance(p, list)]
        data["duplicates"] = known + [list(p) for p in pairs if list(p) not in known]
        save(ctx, data)
    lines += [f"two active memories for one subject after the merge: {a} and {b}; keep one: "
              f"`memcli resolve --keep {a} {b}` (or --keep {b} {a})" for a, b in pairs]
    return lines


def _restore_after_rejection(ctx: Ctx, catalog: Catalog, arrived: set[str]) -> list[str]:
    from memcli.git import log as gitlog
    from memcli.service.write import apply, rewrite

    rejected = {m.id: m for m in catalog.with_status("rejected") if m.id in arrived
                and isinstance(m.review, dict) and m.review.get("overruled")}
    if not rejected:
        return []
    active = {m.id for m in catalog.with_status("active")}
    writes: dict[Path, bytes | None] = {}
    restored = []
    for old in catalog.with_status("superseded"):
        losers = [i for i in old.superseded_by if i in rejected]
        if not losers:
            continue
        left = [i for i in old.superseded_by if i not in rejected]
        item = ctx.load(old)
        changes: dict[str, Any] = {"supersededBy": left, "updatedAt": ctx.now}
        if not any(i in active for i in left):
            changes["status"] = "active"
            restored.append(old)
        writes[item.file] = rewrite(item, changes)
    if not writes:
        return []
    apply(ctx, writes, "resolve", restored, [], edits_checked=True, message=gitlog.message(
        "resolve", f"{len(restored)} memories active again", {"Op": "resolve", "Actor": ctx.actor},
        body="a rejection beat a concurrent approval of what replaced them"))
    return [f"{', '.join(rejected)}: approved on one side and rejected on the other: the rejection wins (both are "
            f"recorded in its review)" + (f"; {', '.join(m.id for m in restored)} active again" if restored else "")]


def _duplicates(catalog: Catalog, arrived: set[str]) -> list[tuple[str, str]]:
    """Pairs of active memories for one subject, one of them changed by the merge: the same
    ``subject`` in one scope, or two active replacements of one memory."""
    active = catalog.with_status("active")
    by_id = {m.id: m for m in active}
    pairs: list[tuple[str, str]] = []
    groups: dict[tuple[str, str], list[str]] = {}
    for memory in active:
        if memory.subject:
            groups.setdefault((memory.scope, memory.subject), []).append(memory.id)
        for old in memory.supersedes:
            groups.setdefault(("supersedes", old), []).append(memory.id)
    for ids in groups.values():
        ids = sorted(dict.fromkeys(i for i in ids if i in by_id))
        for i, first in enumerate(ids):
            for second in ids[i + 1:]:
                if (first in arrived or second in arrived) and (first, second) not in pairs:
                    pairs.append((first, second))
    return pairs


def keep(ctx: Ctx, keep_ref: str, other_ref: str) -> tuple[str, str, str | None]:
    """Retire ``other_ref`` for ``keep_ref``: two active memories for one subject become one
    (``other`` is ``superseded`` by ``keep``, linked both ways), in one commit.

    Returns:
        ``(kept id, retired id, commit)``.

    Raises:
        MemoryNotFound, AmbiguousId: a reference names no memory, or several.
        WrongStatus: either is not active, or they are one memory (exit 8).
        ReviewRefused: an agent's tool runs memcli (exit 8): a person decides.
    """
    from memcli.agents.callers import calling_agent
    from memcli.git import log as gitlog
    from memcli.service.conflicts import load, save
    from memcli.service.write import apply, rewrite

    found = calling_agent(os.environ)
    if found is not None:
        raise ReviewRefused(f"{found[0]}'s tool runs memcli ({found[1]}): only a person chooses which memory to keep; "
                            "nothing was written", hint="run the command yourself in a terminal, outside the agent")
    with ctx.ws.lock():
        ctx.catalog(refresh=True)
        kept, other = ctx.resolve(keep_ref), ctx.resolve(other_ref)
        if kept.memory.id == other.memory.id:
            raise WrongStatus("the two ids name one memory", hint="give the memory to keep, then the one to retire")
        for item in (kept, other):
            if item.memory.status != "active":
                raise WrongStatus(f"{item.memory.id} is {item.memory.status}; resolve --keep takes two active memories",
                                  hint=f"see it with `memcli show {item.memory.id}`")
        writes: dict[Path, bytes | None] = {
            other.file: rewrite(other, {"status": "superseded", "updatedAt": ctx.now,
                                        "supersededBy": [*other.memory.superseded_by, kept.memory.id]}),
            kept.file: rewrite(kept, {"supersedes": [*kept.memory.supersedes, other.memory.id], "updatedAt": ctx.now})}
        commit = apply(ctx, writes, "resolve", [kept.memory], [other.memory.id], edits_checked=True,
                       message=gitlog.message("resolve", f"keep {kept.memory.id} over {other.memory.id}", {
                           "Op": "resolve", "Id": kept.memory.id, "Related": other.memory.id, "Actor": ctx.actor}))
    data = load(ctx)
    pair = {kept.memory.id, other.memory.id}
    data["duplicates"] = [p for p in data.get("duplicates", []) if isinstance(p, list) and set(p[:2]) != pair]
    save(ctx, data)
    return kept.memory.id, other.memory.id, commit
