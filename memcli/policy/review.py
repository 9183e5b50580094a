"""The review rules ``memcli check`` applies to a memory's git history (SPEC.md section 10; issue 22 point 3).

Pure: no I/O. ``service.check`` reads each version of a file and the identities of the
commits that wrote them, and asks these functions what is wrong:

* :func:`provenance_changes`: ``provenance`` is written once, by the first version; any later
  change of one of its fields (``sourceType: model_derived`` edited to ``user_said``, another
  ``actor``) is a violation.
* :func:`judge_activation`: a memory that needs review (an agent's or a tool's write in a shared
  scope, ``gates.review_required``) becomes ``active`` only by an approval: from
  ``pending_review``, in a commit whose author is its committer, by a person other than its
  proposer, and with a ``review`` record (``decision: approved``) whose ``by`` names that
  commit's author. Without commit signing these identities are what git records, which a person
  can set; docs/teams.md says what can still be forged. With signing on (``[review] signing``,
  ``service.signing``) a version that had to be signed is by its signer, the principal of a
  good signature of an allowed key, and by nobody when it has none: author and committer no
  longer count.
"""

from __future__ import annotations

from dataclasses import dataclass

from memcli.model import Memory

#: The ``provenance`` fields that may never change after a memory's first version.
PROVENANCE_FIELDS = (("sourceType", "source_type"), ("actor", "actor"), ("runId", "run_id"), ("at", "at"),
                     ("source", "source"), ("line", "line"), ("sha256", "sha256"),
                     ("idempotencyKey", "idempotency_key"), ("allowSecret", "allow_secret"))


@dataclass(frozen=True)
class Identity:
    """A git identity as a commit records it: ``name`` and ``email`` (either may be empty)."""

    name: str
    email: str

    def same_person(self, other: "Identity") -> bool:
        """True when both carry the same e-mail address (case ignored), else the same name."""
        if self.email and other.email:
            return self.email.lower() == other.email.lower()
        return self.name.strip().lower() == other.name.strip().lower()

    def named_by(self, label: object) -> bool:
        """True when ``label`` (a ``review.by`` value, a memcli actor) names this identity: it is
        the e-mail address, the name, or the e-mail's part before ``@`` (case ignored). memcli's
        actor defaults to git's ``user.email``, else ``user.name`` (SPEC.md section 1)."""
        if not isinstance(label, str) or not label.strip():
            return False
        said = _plain(label)
        email = _plain(self.email)
        return bool(said) and said in (email, _plain(self.name), email.split("@", 1)[0])

    def show(self) -> str:
        """``name <email>``, as git prints it."""
        return f"{self.name} <{self.email}>" if self.name else f"<{self.email}>"


@dataclass(frozen=True)
class Version:
    """One committed (or staged) version of a memory file.

    Attributes:
        commit: the commit id (``"staged"`` for the index's version).
        memory: the record as read, or None when the version cannot be read.
        author, committer: who git says wrote and committed it.
        signed: the commit had to be signed (signing on); then only ``signer`` counts.
        signer: the person whose allowed key made a good signature of the commit, or None.
        signature: the signature in words (``not signed``, ``signed by a key allowed_signers
            does not list`` …), for messages.
    """

    commit: str
    memory: Memory | None
    author: Identity
    committer: Identity
    signed: bool = False
    signer: Identity | None = None
    signature: str = ""

    def person(self) -> Identity | None:
        """Who made this version: its signer when it had to be signed (None: nobody
        verified), else its author."""
        return self.signer if self.signed else self.author

    def where(self) -> str:
        """``commit 0123456789ab`` or ``the staged change``, for a message."""
        return "the staged change" if self.commit == "staged" else f"commit {self.commit[:12]}"


def _plain(value: str) -> str:
    """``value`` as memcli makes an actor of it (``service.default_actor``: characters a scope name
    cannot hold become ``-``, at most 64), in lower case."""
    import re

    return re.sub(r"[^A-Za-z0-9._@-]+", "-", value.strip()).strip("-.")[:64].lower()


def provenance_changes(first: Memory, later: Memory) -> list[str]:
    """The ``provenance`` fields (their file names, e.g. ``sourceType``) whose value differs
    between a memory's first version and a later one; empty when none does."""
    return [key for key, attr in PROVENANCE_FIELDS
            if getattr(first.provenance, attr) != getattr(later.provenance, attr)]


def judge_activation(version: Version, previous: str | None, proposer: Identity, allow_self: bool) -> str | None:
    """Why ``version``, which made a memory needing review ``active``, is not a valid approval;
    None when it is one.

    Args:
        version: the version that is ``active`` where the one before it was not.
        previous: the status of the version before (None: this is the first version).
        proposer: who made the memory's first version (:meth:`Version.person`, else its author).
        allow_self: ``[review] allow_self_approve``.
    """
    memory = version.memory
    assert memory is not None, "an unreadable version has no status"
    kind = memory.provenance.source_type
    if previous is None:
        return f"a memory of provenance {kind} in the shared scope {memory.scope!r} arrived active without review"
    if previous != "pending_review":
        return (f"became active from {previous} in {version.where()} without an approval (only an approval "
                "of a pending_review memory makes it active)")
    if version.signed:
        if version.signer is None:
            return (f"approved in {version.where()}, which is {version.signature or 'not signed'}; with signing "
                    "on an approval counts only when a key in allowed_signers signed its commit")
        approver = version.signer
        said = f"signed by {approver.email or approver.name}"
    else:
        if not version.author.same_person(version.committer):
            return (f"approved in {version.where()} authored by {version.author.show()} but committed by "
                    f"{version.committer.show()}; an approval must be committed by its approver")
        approver = version.author
        said = f"by {approver.show()}"
    if approver.same_person(proposer) and not allow_self:
        return (f"approved in {version.where()} by its own proposer ({proposer.email or proposer.name}); "
                "a second person must approve it")
    review = memory.review or {}
    if review.get("decision") != "approved" or not review.get("by"):
        return f"made active in {version.where()} without a review record (review.by, decision: approved)"
    if not approver.named_by(review.get("by")):
        return (f"review.by says {str(review.get('by'))[:80]!r}, but {version.where()} is {said}; the "
                "reviewer must be the approving commit's " + ("signer" if version.signed else "author"))
    return None


def restores_approved(memory: Memory, previous: str | None, approved: Memory | None) -> bool:
    """True when a return to ``active`` (from ``archived`` or ``superseded``: a rollback of a
    forget or a supersede) restores a memory that was validly approved before (``approved``, its
    version at that approval), with the same text."""
    return approved is not None and previous in ("archived", "superseded") and memory.body == approved.body
