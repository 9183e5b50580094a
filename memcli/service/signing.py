"""Commit signing as the review gate's source of identity (issue 22 point 2; docs/teams.md).

A team turns it on with one setting in the store's ``memcli.toml``, ``[review] signing =
"ssh"``, and keeps the public keys in ``allowed_signers`` at the store's root
(``policy.signers``). From then on a commit's person is the principal its good SSH signature
names (``git.signatures``), never its author, its committer or a ``Memcli-Actor`` trailer.

Which commits must be signed: a commit whose first parent's ``memcli.toml`` has it on, or
any commit of a checked range (:meth:`Trust.range_problems`) whose base has it on (so a push
that turns it off changes nothing for its own commits). Each such commit is verified against ``allowed_signers`` as its
first parent had it (the file at the commit itself for a root commit); when a change of the
file in the range breaks its rules, every commit of the range is verified against the base's
file instead. :class:`Trust` answers for any commit and reports, for a range:

* rule ``signature``: a commit that must be signed and has no good signature of an allowed key
  (every memory file it changed is named; on arrival they are quarantined);
* rule ``signers``: a change of ``allowed_signers`` against ``policy.signers.change_problems``;
* rule ``signing``: a commit of the range that turns signing off.

``check`` judges approvals by :meth:`Trust.signer`, verify on arrival takes "this person's own
commit" and a review trailer's actor from it, and ``history`` and ``log`` show a
``Memcli-Actor`` that no signature backs as a claim (:func:`attribute`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memcli.policy.review import Identity
from memcli.policy.signers import SIGNERS_NAME, change_problems, signing_of

if TYPE_CHECKING:
    from memcli.git.log import Entry
    from memcli.git.repo import GitRepo
    from memcli.git.signatures import Signature
    from memcli.service import Ctx

CONFIG_NAME = "memcli.toml"


@dataclass
class RangeProblem:
    """A rule of signing broken by a commit of a range: the files it names, the rule, the message."""

    commit: str
    rule: str
    message: str
    paths: list[str]


def principal_identity(principal: str) -> Identity:
    """An allowed signers principal as an :class:`Identity` (an address, else a name)."""
    return Identity("", principal) if "@" in principal else Identity(principal, "")


class Trust:
    """Who signed which commit, for the commits of one repository (module docstring).

    Args:
        repo: the repository holding the store.
        base: the trusted commit a checked range starts from (None: no range).
        tip: the newest commit of interest (``HEAD`` when None), to tell whether signing
            was ever on.

    Raises:
        GitFailed: git cannot read the repository.
    """

    def __init__(self, repo: "GitRepo", base: str | None, tip: str | None) -> None:
        self.repo = repo
        self.config_path = f"{repo.prefix}{CONFIG_NAME}"
        self.signers_path = f"{repo.prefix}{SIGNERS_NAME}"
        self._data: dict[str, bytes] = {}
        self._on: dict[str | None, bool] = {None: False}  # config blob -> signing on
        self._parent_on: dict[str, bool] = {}  # commit -> signing on at its first parent
        self._in_range: set[str] = set()  # the commits of the range (range_problems)
        self._parent: dict[str, str | None] = {}
        self._sig: dict[str, "Signature"] = {}
        self._signers_of: dict[str, str | None] = {}
        self.base = base
        self.base_on = bool(base) and self._on_blob(self._blob_ids([f"{base}:{self.config_path}"])[0])
        self.active = self.base_on or self._ever_on(tip or "HEAD")
        self._fallback: str | None = None  # the base's signers blob, once a change of the file was refused

    # --- git reads -----------------------------------------------------------------------

    def _blob_ids(self, specs: list[str]) -> list[str | None]:
        """The blob id of each ``REV:PATH`` (None: absent), by one ``git cat-file --batch-check``."""
        if not specs:
            return []
        status, out, _ = self.repo.raw("cat-file", "--batch-check", input="".join(f"{s}\n" for s in specs).encode())
        rows = out.decode("utf-8", "replace").splitlines() if status == 0 else []
        found: list[str | None] = []
        for row in rows[:len(specs)]:
            parts = row.split()
            found.append(parts[0] if len(parts) == 3 and parts[1] == "blob" else None)
        return found + [None] * (len(specs) - len(found))

    def _read(self, oids: set[str | None]) -> None:
        """Load the bytes of the blobs ``oids`` not read yet (one ``git cat-file --batch``)."""
        wanted = sorted(o for o in oids if o and o not in self._data)
        if not wanted:
            return
        status, out, _ = self.repo.raw("cat-file", "--batch", input="".join(f"{o}\n" for o in wanted).encode())
        from memcli.git.run import batch_blobs

        for oid, data in zip(wanted, batch_blobs(out if status == 0 else b"", len(wanted))):
            if data is not None:
                self._data[oid] = data

    def _on_blob(self, oid: str | None) -> bool:
        if oid not in self._on:
            self._read({oid})
            self._on[oid] = signing_of(self._data.get(oid or "")) == "ssh"
        return self._on[oid]

    def _ever_on(self, tip: str) -> bool:
        """Whether any version of ``memcli.toml`` up to ``tip`` turns signing on."""
        status, out, _ = self.repo.raw("log", "--format=%H", tip, "--", CONFIG_NAME)
        commits = out.decode().split() if status == 0 else []
        oids = set(self._blob_ids([f"{c}:{self.config_path}" for c in commits]))
        self._read(oids)
        return any(self._on_blob(o) for o in oids)

    # --- per commit --------------------------------------------------------------------------

    def prepare(self, commits: list[str]) -> None:
        """Verify the signatures of ``commits`` (full hashes) not verified yet, in a few git processes."""
        from memcli.git.signatures import verify

        todo = list(dict.fromkeys(c for c in commits if c not in self._sig))
        if not todo or not self.active:
            return
        status, out, _ = self.repo.raw("log", "--no-walk=unsorted", "--stdin", "--format=%H %P",
                                       input="".join(f"{c}\n" for c in todo).encode())
        for row in out.decode().splitlines() if status == 0 else []:
            sha, *parents = row.split()
            self._parent[sha] = parents[0] if parents else None
        todo = [c for c in todo if c in self._parent]
        specs = []
        for c in todo:
            at = self._parent[c] or c
            specs += [f"{at}:{self.config_path}", f"{at}:{self.signers_path}"]
        oids = self._blob_ids(specs)
        groups: dict[str | None, list[str]] = {}
        for i, c in enumerate(todo):
            config, signers = oids[2 * i], oids[2 * i + 1]
            self._parent_on[c] = self._parent[c] is not None and self._on_blob(config)
            used = self._fallback if self._fallback is not None else signers
            self._signers_of[c] = used
            groups.setdefault(used, []).append(c)
        self._read(set(groups))
        for oid, group in groups.items():
            self._sig.update(verify(self.repo, group, self._data.get(oid) if oid else None))

    def required(self, commit: str) -> bool:
        """Must ``commit`` be signed? (module docstring; :meth:`prepare` it first)."""
        return self.active and (self._parent_on.get(commit, False) or (self.base_on and commit in self._in_range))

    def signature(self, commit: str) -> "Signature | None":
        """What git said of ``commit``'s signature (None when not verified)."""
        return self._sig.get(commit)

    def signer(self, commit: str) -> Identity | None:
        """The person whose allowed key signed ``commit`` (a good signature), else None."""
        sig = self._sig.get(commit)
        return principal_identity(sig.principal) if sig is not None and sig.good else None

    def words(self, commit: str) -> str:
        """``commit``'s signature in words: ``signed by alice@example.com``, ``not signed`` …"""
        sig = self._sig.get(commit)
        if sig is None:
            return "not verified"
        return f"signed by {sig.principal}" if sig.good else sig.words()

    # --- a range -------------------------------------------------------------------------------

    def range_problems(self, old: str | None, new: str) -> list[RangeProblem]:
        """The signing rules over the commits of ``old..new`` (all of ``new``'s history when
        ``old`` is None) that changed the store; see the module docstring."""
        if not self.active:
            return []
        span = f"{old}..{new}" if old else new
        status, out, _ = self.repo.raw("log", "--diff-merges=first-parent", "--name-only", "--no-renames",
                                       "--format=%x00%H%x00%an <%ae>", span, "--", ".")
        touched: dict[str, list[str]] = {}
        authors: dict[str, str] = {}
        current = ""
        for line in out.decode("utf-8", "replace").splitlines() if status == 0 else []:
            if line.startswith("\x00"):
                _, current, author = (line.split("\x00", 2) + ["", ""])[:3]
                authors[current] = author
                touched.setdefault(current, [])
            elif line.strip() and current:
                touched[current].append(line.strip().removeprefix(self.repo.prefix))
        commits = list(reversed(list(touched)))  # oldest first
        self._in_range.update(commits)
        self.prepare(commits)
        problems = self._signers_changes(commits, touched)
        if problems and old:  # a refused change of the file: verify the range against the base's file
            self._fallback = self._blob_ids([f"{old}:{self.signers_path}"])[0] or ""
            self._sig = {}
            self.prepare(commits)
        for c in commits:
            if self.required(c) and self.signer(c) is None:
                problems.append(RangeProblem(c, "signature", (
                    f"commit {c[:12]} by {authors.get(c, 'unknown')} is {self.words(c)}; with [review] signing = "
                    "\"ssh\" a commit counts only when a key in allowed_signers signed it"), touched[c]))
            if old and self._parent_on.get(c) and CONFIG_NAME in touched[c] and not self._on_blob(
                    self._blob_ids([f"{c}:{self.config_path}"])[0]):
                problems.append(RangeProblem(c, "signing", (
                    f"commit {c[:12]} by {authors.get(c, 'unknown')} turns commit signing off ([review] signing); "
                    "a team turns it off past its gate on purpose, never in an ordinary push"), [CONFIG_NAME]))
        return problems

    def _signers_changes(self, commits: list[str], touched: dict[str, list[str]]) -> list[RangeProblem]:
        """Rule ``signers`` for each commit of ``commits`` that changed ``allowed_signers``."""
        changed = [c for c in commits if SIGNERS_NAME in touched[c] and self.required(c)]
        if not changed:
            return []
        specs = []
        for c in changed:
            specs += [f"{self._parent[c] or c}:{self.signers_path}", f"{c}:{self.signers_path}"]
        oids = self._blob_ids(specs)
        self._read(set(oids))
        problems = []
        for i, c in enumerate(changed):
            signer = self._sig.get(c)
            if signer is None or not signer.good:
                continue  # rule signature says so
            before, after = (self._data.get(o) if o else None for o in oids[2 * i:2 * i + 2])
            for said in change_problems(before, after, signer.principal):
                problems.append(RangeProblem(c, "signers", f"commit {c[:12]}: {said}", [SIGNERS_NAME]))
        return problems


def attribute(trust: Trust | None, entries: list["Entry"]) -> None:
    """Mark each entry's ``Memcli-Actor`` (else its author) as verified or a claim, in place.

    With ``trust`` (signing on) a commit that had to be signed is by its signer: the actor
    is verified only when the signature is good and names it. Otherwise (signing off, or a
    commit from before it was on) the actor is verified when it names the commit's author,
    which is what git records (docs/teams.md says what that cannot prove).
    """
    if trust is not None:
        trust.prepare([e.commit for e in entries])
    for entry in entries:
        actor = entry.trailers.get("actor") or entry.author
        if trust is not None and trust.required(entry.commit):
            signer = trust.signer(entry.commit)
            entry.signer = signer.email or signer.name if signer else None
            if signer is None or not signer.named_by(actor):
                entry.claim = f"unverified: {trust.words(entry.commit)}"
        elif entry.trailers.get("actor") and not Identity(entry.author, entry.email).named_by(actor):
            entry.claim = f"unverified: committed by {Identity(entry.author, entry.email).show()}"


def trust_for_reading(ctx: Ctx) -> Trust | None:
    """A :class:`Trust` for ``history`` and ``log`` when the store has signing on, else None."""
    if ctx.ws.config.signing != "ssh":
        return None
    return Trust(ctx.git(), None, None)
