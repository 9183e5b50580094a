"""Verify on arrival (issue 22 point 1): what a pull brings is checked before it is served.

Every store keeps, in ``.cache/arrival.json``, the commit it has verified up to
(``verified``) and the ``stat`` of the file that moves whenever ``HEAD`` does (git's
``logs/HEAD`` reflog; the index file when there is no reflog). Then:

* ``memcli sync`` verifies the commits it merged in (``verified..HEAD``) right after the merge;
* the first read after any other move of ``HEAD`` (a ``git pull``, ``merge``, ``checkout``,
  ``reset``) verifies the commits from ``verified`` (or its merge base with ``HEAD``) to
  ``HEAD``; a read whose ``stat`` matches the record does nothing more (one ``stat`` and one
  small read: no git process);
* memcli's own writes move the record along with ``HEAD`` (:func:`advance`), so they are
  never checked again; a store never verified before trusts its first ``HEAD`` (trust on first
  use, docs/teams.md).

Verifying runs the rules of ``memcli check`` (``service.check``) over the range, plus two of
its own: a commit whose ``Memcli-Op`` is a review decision (approve, reject) with a
``Memcli-Actor`` that does not name the commit's author is a forged trailer (rule
``trailer``). Each file that fails is **quarantined**: kept in git and on disk, but never
served (``index.quarantined``: dropped wherever a catalog is read, so context, hooks, MCP and
recall never see it), listed by ``memcli review`` and ``memcli doctor`` with its reason, until
a person runs ``memcli quarantine accept ID`` (an empty commit recording the acceptance by
the person's git identity) or ``memcli quarantine revert ID`` (the file back as the last
verified commit had it, or removed, in one commit).

A change of ``memcli.toml`` by another person (:func:`_settings_arrival`) is judged against the
settings the clone last verified (``policy.trust_settings``): one that loosens a setting that
guards trust, or that does not load, is a quarantine entry of kind ``config`` and is **held
back** (``heldConfig`` in the record: the verified text and the SHA-256 of the file that
arrived; ``service.settings.settle`` then serves the verified settings while the file is the
one that arrived), until a person accepts it (it must load) or reverts it (the verified text
back, in one commit). A tightening or neutral change is in force at once and named (sync's
output, once in the next context block). ``check`` runs over the arrival with the verified
settings, so the arrival cannot vouch for itself.

A **mass change**: more than :data:`MASS_SHARE` of the memory files active at ``verified``
removed, retired or rewritten by another person's commits in one arrival, with at least
:data:`MASS_MIN` of them removed or retired or at least :data:`MASS_EDITS_MIN` in all, is
recorded as a quarantine entry of kind ``mass`` (``revert`` restores them all, and every other
memory file the arrival removed: a superseded or archived one is not counted but comes back too),
reported by ``sync`` and once in the next session's context block. A file the arrival leaves
as one of this person's own commits wrote it (:func:`_own_versions`: a merge or a teammate's
``resolve --take theirs`` that keeps their side) is not counted: the change is theirs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memcli.config import CONFIG_NAME
from memcli.errors import MemcliError, MemoryNotFound
from memcli.service import Ctx
from memcli.service.arrived import _save, _stat_key, load

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo
    from memcli.service.signing import Trust

#: A pull that removes or rewrites more than this share of the active memory files is a mass change.
MASS_SHARE = 0.30
#: ... and at least this many of them removed or retired (no longer ``active``) ...
MASS_MIN = 3
#: ... or at least this many removed, retired or rewritten. Edits that keep memories active are
#: a teammate's ordinary work: in a small store one person may well touch every memory (a
#: ``resolve`` of a conflict over a few files, a rename), each of them read in ``memcli log``.
MASS_EDITS_MIN = 10
#: A pull that adds at least this many memory files, more than the store held active, is a mass
#: addition (:func:`_mass_addition`).
FLOOD_MIN = 50
#: ``Memcli-Op`` values that record a review decision: their ``Memcli-Actor`` must be the commit's author.
REVIEW_OPS = ("approve", "reject")


@dataclass
class Entry:
    """One quarantined change.

    Attributes:
        id: a short handle for ``memcli quarantine accept|revert`` (``q`` and 8 hex digits).
        kind: ``file`` (one memory file failed a rule), ``mass`` (a mass change) or ``config``
            (an arriving ``memcli.toml`` held back).
        path: the file (workspace-relative), or for ``mass`` the first of ``paths``.
        rule: the rule it broke (``review``, ``provenance``, ``actor``, ``scope``, ``valid``,
            ``size``, ``secret``, ``path``, ``trailer``, ``mass``, ``config``).
        reason: what is wrong, one line.
        commit: the arriving commit that last wrote it.
        author: that commit's author, ``name <email>``.
        before: the verified commit the arrival started from (what ``revert`` goes back to).
        memory: the memory id (the file name's first part) for the read filter.
        paths: for ``mass``: every file to restore: each active one removed, retired or rewritten, and
            every other memory file removed (superseded, archived, pending, rejected).
    """

    id: str
    kind: str
    path: str
    rule: str
    reason: str
    commit: str
    author: str
    before: str
    memory: str = ""
    paths: list[str] = field(default_factory=list)

    def line(self) -> str:
        """``qID path: reason (commit, author)``, for review and doctor."""
        from memcli.text.hidden import printable

        where = f"{self.commit[:12]} by {self.author}" if self.commit else self.author
        return printable(f"{self.id} {self.path}: {self.reason} ({where})")  # a teammate's name: no escapes




def entries(ctx: Ctx) -> list[Entry]:
    """The quarantined changes of the store, oldest first."""
    found = []
    for raw in load(ctx).get("entries", []):
        try:
            found.append(Entry(**raw))
        except TypeError:
            continue
    return found


def _key_path(repo: GitRepo) -> str:
    """The file whose ``stat`` moves with ``HEAD``: the reflog of ``HEAD``, else the index."""
    reflog = repo.git_path("logs/HEAD")
    return str(reflog if reflog.exists() else repo.index_path)


def catch_up(ctx: Ctx, who: str = "a pull, merge or checkout", said: list[str] | None = None) -> dict:
    """Verify the commits from the verified one to ``HEAD`` and record ``HEAD`` as verified;
    the settings ``ctx`` works by follow a ``memcli.toml`` held back or let through.

    Args:
        who: what moved ``HEAD`` (for the mass-change line).
        said: where to add the lines naming a teammate's change of the settings that is in force.

    Returns:
        The record after it.

    Raises:
        GitFailed: git cannot be run.
    """
    repo = ctx.git()
    state = load(ctx)
    key_path = _key_path(repo)
    status, out, _ = repo.raw("rev-parse", "-q", "--verify", "HEAD^{commit}")
    head = out.decode().strip() if status == 0 else ""
    verified = str(state.get("verified", ""))
    if not verified:  # the clone's first record: a clone read before any `memcli init` or sync
        _register_merge_driver(ctx)
    if verified and head and verified != head:
        if os.environ.get("MEMCLI_TEST_STALL_AT"):  # tests only (memcli.testpoint)
            from memcli import testpoint

            testpoint.stall("arrival:verifying")
        old = _base(repo, verified, head)
        lines = _verify(ctx, repo, state, old, head, who)[1]
        if said is not None:
            said.extend(lines)
    state.update(verified=head, keyPath=key_path, key=_stat_key(key_path))
    _record_settings(repo, state, head)
    _save(ctx, state)
    _follow_settings(ctx, state)
    return state


def _register_merge_driver(ctx: Ctx) -> None:
    """Register memcli's merge driver in this clone's git config (``sync.ensure_merge_driver``,
    the committed ``.gitattributes`` left as it is): a fresh clone read with ``list`` or a hook
    before any ``memcli init`` or sync would otherwise merge memory files line by line on its
    first plain ``git pull``. A failure is left for ``init`` or ``sync`` to report."""
    from memcli.service.sync import ensure_merge_driver

    try:
        ensure_merge_driver(ctx.ws.root, write=False)
    except MemcliError:
        pass


def _record_settings(repo: GitRepo, state: dict, head: str) -> None:
    """Keep ``memcli.toml`` as the verified ``head`` has it (``verifiedConfig``: its SHA-256 and
    text), the settings a command works by while a later move of ``HEAD`` is not verified yet
    (``service.settings.settle``)."""
    from memcli.service.settings import bytes_at, digest

    data = bytes_at(repo, head) if head else None
    if data is None:
        state.pop("verifiedConfig", None)
    else:
        state["verifiedConfig"] = {"sha256": digest(data), "text": data.decode("utf-8", "replace")}


def _follow_settings(ctx: Ctx, state: dict) -> None:
    """Settle ``ctx``'s settings again when a ``memcli.toml`` was held back or let through since
    they were read (or when they are a broken file's fallback: the file may be fixed now).

    Raises:
        settings.Unloadable: the file let through does not load and ``ctx`` is not ``tolerant``: the
            command stops as the next one would (the record is saved first).
    """
    hold = state.get("heldConfig")
    held = str(hold.get("id", "")) if isinstance(hold, dict) else ""
    if ctx.ws.config.held != held or ctx.ws.config.broken:
        from memcli.service.settings import settle

        config = settle(ctx.ws.root, ctx.tolerant)
        if config.broken and config.broken not in ctx.warnings:
            ctx.warnings.append(config.broken)
        ctx.reconfigure(config)


def _base(repo: GitRepo, verified: str, head: str) -> str | None:
    """Where the arrival starts: the verified commit, or its merge base with ``HEAD`` (a
    checkout or reset elsewhere); None when they share nothing (everything at ``HEAD`` arrived)."""
    if repo.raw("merge-base", "--is-ancestor", verified, head)[0] == 0:
        return verified
    status, out, _ = repo.raw("merge-base", verified, head)
    return out.decode().strip() if status == 0 and out.strip() else None


# --- verifying a range ---------------------------------------------------------------------

def _qid(*parts: str) -> str:
    return "q" + hashlib.sha1("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _memory_id(path: str) -> str:
    name = PurePosixPath(path).name.removesuffix(".md")
    return name.split("-", 1)[0] if name else ""


def _lines(repo: GitRepo, *args: str) -> list[str]:
    status, out, _ = repo.raw(*args)
    return out.decode("utf-8", "replace").splitlines() if status == 0 else []


def committer_email(repo: GitRepo) -> str:
    """This clone's committer e-mail (lower case), or '' when git has none."""
    line = next(iter(_lines(repo, "var", "GIT_COMMITTER_IDENT")), "")
    return line.rsplit(">", 1)[0].partition("<")[2].strip().lower() if "<" in line else ""


def _verify(ctx: Ctx, repo: GitRepo, state: dict, old: str | None, new: str,
            who: str) -> tuple[list[Entry], list[str]]:
    """Run the rules over ``old..new`` and add what fails to ``state["entries"]``.

    Returns:
        ``(the new entries, lines naming a teammate's change of the settings now in force)``.
    """
    from memcli.service.check import check
    from memcli.service.settings import from_text
    from memcli.service.signing import Trust

    span = f"{old}..{new}" if old else new
    if not Trust(repo, old, new).active and not _foreign_paths(repo, span):
        return [], []  # every commit is this person's own (their hand commits, their other machine)
    trusted_text = _trusted_text(repo, state, old)
    trusted = from_text(trusted_text) if trusted_text is not None else None
    # nothing shared: every file at HEAD; a range is judged by the settings this clone verified
    result = check(ctx, f"{old}..{new}" if old else None, settings=trusted or ctx.ws.config)
    theirs = _foreign_paths(repo, span, result.trust)  # with signing on: not signed by this person's key
    if not theirs:
        return [], []
    found: dict[str, Entry] = {}
    for problem in result.problems:
        if problem.path in found or problem.path not in theirs or problem.path == CONFIG_NAME:
            continue  # memcli.toml: judged against the verified settings below
        last = next(iter(_lines(repo, "log", "-1", "--format=%H%x00%an <%ae>", span, "--", problem.path)), "")
        commit, _, author = last.partition("\x00")
        found[problem.path] = Entry(_qid("file", problem.path, commit), "file", problem.path, problem.rule,
                                    problem.message, commit, author or "unknown", old or "",
                                    _memory_id(problem.path))
    for entry in _forged_trailers(repo, span, old or "", result.trust):
        if found.get(entry.path) is None or found[entry.path].rule == "actor":  # the forged trailer says more
            found[entry.path] = entry
    added = list(found.values())
    said: list[str] = []
    if CONFIG_NAME in theirs and old and trusted_text is not None and trusted is not None:
        held, said = _settings_arrival(repo, state, span, old, new, trusted_text, result.trust)
        if held is not None:
            added.append(held)
            state.setdefault("notices", []).append(f"{CONFIG_NAME}: {held.reason} ({held.commit[:12]})")
        state.setdefault("notices", []).extend(said)
    active, raw, me = set(), [], committer_email(repo)  # read once for both mass rules
    if old:
        found_active = _lines(repo, "grep", "-l", "-E", "^status: *['\"]?active", old, "--", "memories")
        active = {p.split(":", 1)[1] if p.startswith(old + ":") else p for p in found_active}
        raw = _lines(repo, "diff", "--raw", "--no-abbrev", "--no-renames", old, new, "--", "memories")
    mass = _mass_change(repo, old, new, who, active, raw, me, result.trust)
    if mass is not None:
        added.append(mass)
        state.setdefault("notices", []).append(mass.reason + f" (`memcli quarantine revert {mass.id}` restores "
                                                             "them)")
    flood = _mass_addition(repo, old, new, who, len(active), raw, me, result.trust)
    if flood is not None:
        added.append(flood)
        state.setdefault("notices", []).append(flood.reason + f" (not served until a person decides: `memcli "
                                                              f"quarantine accept {flood.id}` or `revert {flood.id}`)")
    kept = [e for e in state.get("entries", []) if isinstance(e, dict) and e.get("id") not in {a.id for a in added}
            and not (e.get("kind") == "file" and e.get("path") in found)
            and not (e.get("kind") == "config" and _held_id(state) != e.get("id"))]
    state["entries"] = kept + [asdict(e) for e in added]
    return added, said


def _held_id(state: dict) -> str:
    """The id of the entry whose ``memcli.toml`` is held back ('' when none is)."""
    hold = state.get("heldConfig")
    return str(hold.get("id", "")) if isinstance(hold, dict) else ""


def _trusted_text(repo: GitRepo, state: dict, old: str | None) -> str | None:
    """The ``memcli.toml`` this clone last verified: the held-back arrival's verified text, else
    the file at ``old``; None when there is none."""
    from memcli.service.settings import text_at

    hold = state.get("heldConfig")
    if isinstance(hold, dict) and isinstance(hold.get("text"), str):
        return str(hold["text"])
    return text_at(repo, old) if old else None


def _settings_arrival(repo: GitRepo, state: dict, span: str, old: str, new: str, trusted_text: str,
                      trust: Trust | None) -> tuple[Entry | None, list[str]]:
    """Judge another person's change of ``memcli.toml`` in ``span`` against the verified text
    (module docstring): ``(the entry that holds it back, or None; lines naming a change in force)``.
    Sets or clears ``state["heldConfig"]``."""
    from memcli.policy.trust_settings import compare
    from memcli.service.settings import bytes_at, digest, from_text, problem

    me = committer_email(repo)
    rows = [r.split("\x00") for r in _lines(repo, "log", "--format=%H%x00%ce%x00%an <%ae>", span, "--", CONFIG_NAME)]
    if trust is not None:
        trust.prepare([r[0] for r in rows if len(r) == 3])
    foreign = [(sha, author) for sha, committer, author in (r for r in rows if len(r) == 3)
               if not _is_mine(trust, sha, committer.strip().lower(), me)]
    if not foreign:
        return None, []  # this person's own change (their hand commit, their other machine)
    commit = foreign[0][0]  # the newest
    who = ", ".join(sorted({a for _, a in foreign})[:3])
    data = bytes_at(repo, new)
    broken = problem(data)
    trusted = from_text(trusted_text)
    assert trusted is not None  # the caller checked it loads
    hold = state.get("heldConfig") if isinstance(state.get("heldConfig"), dict) else None
    before = str(hold.get("before", old)) if hold else old
    if broken is None and data is not None:
        after = from_text(data.decode("utf-8-sig"))
        assert after is not None
        changes = compare(trusted, after)
        loosened = [c for c in changes if c.loosens]
        if not loosened:  # as verified, or tighter: in force
            state.pop("heldConfig", None)
            return None, [f"{CONFIG_NAME} changed by {who} (in force): " + "; ".join(c.words() for c in changes)
                          ] if changes else []
    qid = _qid("config", before, new)
    what = f"as {who} left it, it does not load ({broken})" if broken is not None else \
        f"{who} loosened " + "; ".join(c.words() for c in loosened)
    reason = (f"{what}; held back: this clone keeps the settings it verified until a person runs "
              f"`memcli quarantine accept {qid}` (or `revert {qid}`)")
    state["heldConfig"] = {"id": qid, "sha256": digest(data) if data is not None else "", "text": trusted_text,
                           "before": before}
    return Entry(qid, "config", CONFIG_NAME, "config", reason, commit, who, before), []


def _is_mine(trust: Trust | None, commit: str, committer: str, me: str) -> bool:
    """Is ``commit`` this person's own? With signing on (a commit that had to be signed): its
    good signature names their address; otherwise its committer is their git identity."""
    if trust is not None and trust.required(commit):
        signer = trust.signer(commit)
        return bool(me) and signer is not None and signer.named_by(me)
    return bool(me) and committer == me


def _foreign_paths(repo: GitRepo, span: str, trust: Trust | None = None) -> set[str]:
    """Memory files and ``memcli.toml`` (workspace-relative) that commits of ``span`` not made
    by this person (:func:`_is_mine`) touched: what arrived. A commit under the person's own identity is
    theirs (a hand commit, a second machine); without signing that is what git says, with
    signing their key's signature."""
    me = committer_email(repo)
    prefix = repo.prefix
    found: set[str] = set()
    # a merge's own changes too (``-c``: the files it leaves unlike every parent): an "evil
    # merge" that edits a memory neither side changed was never looked at (red team, stop 36)
    for kind in ("--no-merges", "--merges"):
        mine = False
        status, out, _ = repo.raw("log", kind, *(["-c"] if kind == "--merges" else []), "--no-renames",
                                  "--format=%x00%H%x00%ce", "--name-only", span, "--", "memories", CONFIG_NAME)
        for line in out.decode("utf-8", "replace").splitlines() if status == 0 else []:
            if line.startswith("\x00"):
                _, sha, committer = (line.split("\x00", 2) + ["", ""])[:3]
                mine = _is_mine(trust, sha, committer.strip().lower(), me)
            elif line.strip() and not mine:
                found.add(line.strip().removeprefix(prefix))
    return found


def _forged_trailers(repo: GitRepo, span: str, before: str, trust: Trust | None = None) -> list[Entry]:
    """Files of commits whose review trailer (``Memcli-Op: approve|reject``) names an actor who
    is not the commit's author (with signing on: its signer): rule ``trailer``."""
    from memcli.policy.review import Identity

    me = committer_email(repo)
    fmt = "%H%x00%ce%x00%an%x00%ae%x00%(trailers:key=Memcli-Op,valueonly,separator=%x2C)%x00" \
          "%(trailers:key=Memcli-Actor,valueonly,separator=%x2C)%x1e"
    status, out, _ = repo.raw("log", "--no-merges", f"--format={fmt}", span, "--", "memories")
    records = [p for p in (r.strip("\n").split("\x00") for r in out.decode("utf-8", "replace").split("\x1e")
                           if status == 0) if len(p) == 6]
    if trust is not None:
        trust.prepare([p[0] for p in records])
    found = []
    for parts in records:
        sha, committer, name, email, ops, actors = parts
        if _is_mine(trust, sha, committer.strip().lower(), me):  # this person's own commit
            continue
        if not any(op.strip() in REVIEW_OPS for op in ops.split(",")):
            continue
        verifier = trust if trust is not None and trust.required(sha) else None  # its signature names its author
        signed = verifier is not None
        author = verifier.signer(sha) if verifier is not None else Identity(name, email)
        claimed = [a.strip() for a in actors.split(",") if a.strip()]
        if author is not None and claimed and all(author.named_by(a) for a in claimed):
            continue
        who = author.show() if author else f"{Identity(name, email).show()} ({verifier.words(sha) if verifier else ''})"
        said = ", ".join(claimed) or "nobody"
        for path in _lines(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha, "--", "memories"):
            if path.endswith(".md"):
                found.append(Entry(_qid("trailer", path, sha), "file", path, "trailer",
                                   f"commit {sha[:12]} by {who} records Memcli-Op: {ops.strip()} by "
                                   f"Memcli-Actor: {said[:60]}; a review decision's actor must be its commit's "
                                   + ("signer" if signed else "author"), sha, who, before, _memory_id(path)))
    return found


def _mass_change(repo: GitRepo, old: str | None, new: str, who: str, active: set[str], raw: list[str],
                 me: str, trust: Trust | None = None) -> Entry | None:
    """A mass change by another person in ``old..new`` (module docstring), or None. ``active``:
    the memory files active at ``old``; ``raw``: ``git diff --raw`` of the range's memory files;
    ``me``: this clone's committer e-mail; ``trust``: whose signature makes a commit this
    person's when signing is on (:func:`_is_mine`; red team, stop 35: a teammate committing
    under the person's e-mail, signed by their own key, deleted 46 of 78 memories unflagged)."""
    if not old or len(active) < MASS_MIN:
        return None
    changed: dict[str, tuple[str, str]] = {}  # path -> (kind, blob at new; zeros when removed)
    gone: dict[str, str] = {}  # every memory file removed, whatever its status (blob: zeros)
    for row in raw:
        fields, _, path = row.partition("\t")
        parts = fields.split()
        if len(parts) >= 5 and path in active:
            changed[path] = (parts[4], parts[3])
        elif len(parts) >= 5 and parts[4].startswith("D") and path.endswith(".md"):
            gone[path] = parts[3]
    if len(changed) < MASS_MIN:
        return None
    own = _own_versions(repo, f"{old}..{new}", me, list(changed) + list(gone), trust)
    theirs = {p: kind for p, (kind, blob) in changed.items() if (p, blob) not in own}
    kept = [p for p, kind in theirs.items() if not kind.startswith("D")]
    still = set(_lines(repo, "grep", "-l", "-E", "^status: *['\"]?active", new, "--", *kept)) if kept else set()
    still = {p.split(":", 1)[1] if p.startswith(new + ":") else p for p in still}
    removed = sorted(p for p, kind in theirs.items() if kind.startswith("D") or p not in still)  # gone or retired
    rewritten = sorted(p for p in kept if p in still)
    hit = removed + rewritten
    if len(hit) <= MASS_SHARE * len(active) or (len(removed) < MASS_MIN and len(hit) < MASS_EDITS_MIN):
        return None
    authors = _others(repo, trust, me, f"{old}..{new}", hit)
    if not authors:
        return None  # the person's own commits (another machine of theirs)
    share = round(100 * len(hit) / len(active))
    reason = (f"mass change by {', '.join(authors[:3])} in {who}: {len(removed)} removed or retired and "
              f"{len(rewritten)} "
              f"rewritten of {len(active)} active memory files ({share}%, over {round(MASS_SHARE * 100)}%)")
    also = [p for p, blob in gone.items() if (p, blob) not in own]  # superseded, archived …: not counted, restored
    return Entry(_qid("mass", old, new), "mass", hit[0], "mass", reason, new, ", ".join(authors[:3]), old,
                 "", sorted({*hit, *also}))


def _mass_addition(repo: GitRepo, old: str | None, new: str, who: str, active: int, raw: list[str],
                   me: str, trust: Trust | None = None) -> Entry | None:
    """A mass addition by another person in ``old..new``: at least :data:`FLOOD_MIN` new memory
    files, more than the store held active at ``old`` (it at least doubles), or None.

    A newcomer's trial (stop 33) pushed 3,000 hand-written files from one clone: on the other
    they took 56 of the session start's 58 lines (undated files date from their checkout, so
    they read as the newest), and every team convention and enforced guard fell out of the
    block. Such an arrival is recorded as a quarantine entry of kind ``mass`` and rule
    ``mass-add``: its files are not served (``arrived.held``) until a person accepts it, or
    reverts it (the files removed in one commit). A teammate's ordinary work (an ``import`` of
    a few dozen rules into a store of hundreds) stays under it. ``active``: how many memory files
    were active at ``old``; ``raw``, ``me`` and ``trust``: as :func:`_mass_change`."""
    if not old:
        return None
    fresh = {path: parts[3] for parts, path in ((f.split(), p) for f, _, p in (r.partition("\t") for r in raw))
             if path.endswith(".md") and len(parts) >= 5 and parts[4].startswith("A")}
    if len(fresh) < FLOOD_MIN or len(fresh) <= active:
        return None
    own = _own_versions(repo, f"{old}..{new}", me, list(fresh), trust)
    theirs = sorted(p for p, blob in fresh.items() if (p, blob) not in own)
    if len(theirs) < FLOOD_MIN or len(theirs) <= active:
        return None
    authors = _others(repo, trust, me, f"{old}..{new}", ["memories"], added=True)
    reason = (f"mass addition by {', '.join(authors[:3]) or 'another person'} in {who}: {len(theirs)} memory files "
              f"added to {active} active (more than the store held)")
    return Entry(_qid("mass-add", old, new), "mass", theirs[0], "mass-add", reason, new, ", ".join(authors[:3]), old,
                 "", theirs)


def _others(repo: GitRepo, trust: Trust | None, me: str, span: str, paths: list[str],
            added: bool = False) -> list[str]:
    """``name <e-mail>`` of the authors of the commits of ``span`` that touched ``paths`` (that
    added them, with ``added``) and are not this person's own (:func:`_is_mine`), sorted."""
    rows = _lines(repo, "log", *(["--diff-filter=A"] if added else []), "--format=%H%x00%ce%x00%an <%ae>", span,
                  "--", *paths)
    return sorted({author for sha, committer, author in (r.split("\x00") for r in rows if r.count("\x00") == 2)
                   if not _is_mine(trust, sha, committer.strip().lower(), me)})


def _own_versions(repo: GitRepo, span: str, me: str, paths: list[str],
                  trust: Trust | None = None) -> set[tuple[str, str]]:
    """``(path, blob)`` of each version of ``paths`` that a commit of this person's in ``span``
    wrote (its committer is their git identity; a removal's blob is all zeros).

    A file the arrival leaves as this person's own commit had it is not another person's
    change: a merge or ``memcli resolve --take theirs`` that keeps their side, or their own
    commits that arrive back with a teammate's merge."""
    if not me or not paths:
        return set()
    found: set[tuple[str, str]] = set()
    mine = False
    for line in _lines(repo, "log", "--raw", "--no-abbrev", "--no-renames", "--format=%x00%H%x00%ce", span, "--",
                       *paths):
        if line.startswith("\x00"):
            _, sha, committer = (line.split("\x00", 2) + ["", ""])[:3]
            mine = _is_mine(trust, sha, committer.strip().lower(), me)
        elif mine and line.startswith(":") and "\t" in line:
            fields, _, path = line.partition("\t")
            parts = fields.split()
            if len(parts) >= 4:
                found.add((path, parts[3]))
    return found


def after_sync(ctx: Ctx, before: str | None) -> tuple[list[Entry], list[str]]:
    """Verify what a ``sync`` merged in (the sync holds the workspace lock).

    Args:
        before: ``HEAD`` before the merge (used when the store has no verified commit yet).

    Returns:
        ``(the new quarantine entries, lines naming a teammate's change of the settings now in
        force)``: the sync reports both.

    Raises:
        GitFailed: git cannot be run.
    """
    state = load(ctx)
    if not state.get("verified") and before:
        state["verified"] = before
        _save(ctx, state)
    already = {e.get("id") for e in state.get("entries", []) if isinstance(e, dict)}
    said: list[str] = []
    catch_up(ctx, who="this sync", said=said)
    return [e for e in entries(ctx) if e.id not in already], said


# --- accept and revert -------------------------------------------------------------------

def _find(ctx: Ctx, ref: str) -> Entry:
    ref = ref.strip().lower()
    matches = [e for e in entries(ctx) if e.id == ref or (len(ref) >= 4 and e.id.startswith(ref))]
    if len(matches) != 1:
        raise MemoryNotFound(f"no quarantined change {ref[:20]!r} in this store" if not matches else
                             f"{ref[:20]!r} names {len(matches)} quarantined changes",
                             hint="list them with `memcli quarantine list` (or `memcli review`)")
    return matches[0]


def _person_only(action: str) -> None:
    from memcli.agents.callers import person_only

    person_only(os.environ, f"{action} a quarantined change")


def _drop(ctx: Ctx, entry: Entry, commit: str | None) -> None:
    state = load(ctx)
    state["entries"] = [e for e in state.get("entries", []) if not (isinstance(e, dict) and e.get("id") == entry.id)]
    if _held_id(state) == entry.id:
        state.pop("heldConfig", None)
    if commit:
        repo = ctx.git()
        key_path = state.get("keyPath") or _key_path(repo)
        state.update(verified=commit, keyPath=key_path, key=_stat_key(key_path))
        _record_settings(repo, state, commit)
    _save(ctx, state)
    _follow_settings(ctx, state)


def accept(ctx: Ctx, ref: str) -> tuple[Entry, str]:
    """A person accepts a quarantined change: an empty commit by their git identity records it
    (``Memcli-Op: quarantine-accept``), and the file is served again.

    Returns:
        ``(entry, commit)``.

    Raises:
        MemoryNotFound: no such entry (exit 4).
        ReviewRefused: an agent's tool runs memcli (exit 8).
        WorkspaceInvalid: a held-back ``memcli.toml`` that does not load (exit 3); nothing changed.
        UnsafeGitState, GitFailed: git cannot commit (exit 14, 10); nothing changed.
    """
    from memcli.errors import GitFailed
    from memcli.git import commit as gitcommit
    from memcli.git import log as gitlog
    from memcli.git.run import first_line

    _person_only("accept")
    entry = _find(ctx, ref)
    with ctx.ws.lock():
        repo = ctx.git()
        gitcommit.check_state(repo)
        if entry.kind == "config":
            _loads_or_refuse(ctx, entry)
        message = gitlog.message("quarantine", f"accept {entry.path}", {
            "Op": "quarantine-accept", "Quarantine": entry.id, "Rule": entry.rule, "Commit": entry.commit,
            "Path": entry.path, "Actor": ctx.actor}, body=entry.reason)
        from memcli.git.signatures import signing_args

        pre, sign = signing_args(repo.sign_ssh)
        status, _, err = repo.raw(*pre, "commit", *sign, "--allow-empty", "--no-verify", "-q", "-F", "-",
                                  input=message.encode("utf-8"))
        if status != 0:
            raise GitFailed(f"git commit failed: {first_line(err) or status}; the change stays quarantined",
                            hint="set your git identity (`git config user.email`), then try again")
        commit = repo.raw("rev-parse", "HEAD")[1].decode().strip()
        _drop(ctx, entry, commit)
    return entry, commit


def _loads_or_refuse(ctx: Ctx, entry: Entry) -> None:
    """A held-back ``memcli.toml`` is accepted only when the file loads.

    Raises:
        WorkspaceInvalid: it does not (exit 3).
    """
    from memcli.errors import WorkspaceInvalid
    from memcli.service.settings import problem

    path = ctx.ws.root / CONFIG_NAME
    try:
        data: bytes | None = path.read_bytes()
    except OSError:
        data = None
    broken = problem(data)
    if broken is not None:
        raise WorkspaceInvalid(f"{CONFIG_NAME} does not load ({broken}), so {entry.id} cannot be accepted; nothing "
                               "was changed", hint=f"`memcli quarantine revert {entry.id}` puts the verified settings "
                               f"back, or correct {path} and commit it")


def revert(ctx: Ctx, ref: str) -> tuple[Entry, str | None]:
    """A person reverts a quarantined change: its files back as the verified commit before the
    arrival had them (removed when it had none), in one memcli commit by the person.

    Returns:
        ``(entry, commit)``.

    Raises:
        MemoryNotFound, ReviewRefused: as :func:`accept`.
        UnsafeGitState, GitFailed, GitLocked: git cannot commit; nothing changed.
    """
    from memcli.git import log as gitlog
    from memcli.service.write import apply

    _person_only("revert")
    entry = _find(ctx, ref)
    paths = entry.paths or [entry.path]
    with ctx.ws.lock():
        repo = ctx.git()
        prefix = repo.prefix
        writes: dict[Path, bytes | None] = {}
        for rel in paths:
            status, data, _ = repo.raw("cat-file", "blob", f"{entry.before}:{prefix}{rel}") if entry.before \
                else (1, b"", "")
            writes[ctx.ws.root / rel] = data if status == 0 else None
        hold = load(ctx).get("heldConfig")
        if entry.kind == "config" and isinstance(hold, dict) and hold.get("id") == entry.id:
            writes[ctx.ws.root / CONFIG_NAME] = str(hold.get("text", "")).encode("utf-8")  # the verified text
        if entry.kind == "config" and writes.get(ctx.ws.root / CONFIG_NAME) is None:
            from memcli.errors import WorkspaceInvalid

            raise WorkspaceInvalid(f"no verified {CONFIG_NAME} to put back for {entry.id}; nothing was changed",
                                   hint=f"correct {ctx.ws.root / CONFIG_NAME} by hand and commit it")
        message = gitlog.message("quarantine", f"revert {entry.path}" + (f" and {len(paths) - 1} more"
                                                                        if len(paths) > 1 else ""), {
            "Op": "quarantine-revert", "Quarantine": entry.id, "Rule": entry.rule, "Commit": entry.commit,
            "Actor": ctx.actor}, body=entry.reason)
        commit = apply(ctx, writes, "quarantine", [], [], edits_checked=True, message=message)
        _drop(ctx, entry, commit)
        ctx.catalog(refresh=True)
    return entry, commit
