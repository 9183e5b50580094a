"""memcli's commit records: the ``Memcli-*`` trailers, messages, and commits read from ``git log``.

Pure: nothing here runs git. :meth:`memcli.git.repo.GitRepo.log` and
:class:`memcli.git.history.History` read commits with :data:`ENTRY_FORMAT` and parse them
with :func:`parse_entry`; the writers build messages with :func:`message`.
"""

from __future__ import annotations

TRAILER_PREFIX = "Memcli-"


class Touched:
    """A file a commit (or the working tree) changed: ``kind`` is git's letter (A, M, D, R, C, T).

    ``path`` and ``old_path`` (renames and copies) are relative to the workspace. (A plain
    class, not a dataclass: ``dataclasses`` and the ``inspect`` it imports cost every write
    about 10 ms; equality and ``repr`` are a dataclass's.)
    """

    __slots__ = ("kind", "path", "old_path")

    def __init__(self, kind: str, path: str, old_path: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.old_path = old_path

    def __eq__(self, other: object) -> bool:
        return type(other) is Touched and _fields(self) == _fields(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: as a dataclass

    def __repr__(self) -> str:
        return _repr(self)


class Entry:
    """One commit in ``git log``: hash, time, author, subject, ``Memcli-*`` trailers, message text.

    ``trailers`` keys are lower case without the prefix (``op``, ``id``, ``actor`` …); empty
    for a commit memcli did not make. ``text`` is the message body without its trailers
    (memcli puts the memory's text there). ``touched`` is filled by ``History.commits``
    (a fresh empty list when None).
    ``email`` is the author's address. ``signer`` (the principal of a good signature) and
    ``claim`` (why the actor is only claimed: ``unverified: not signed`` …) are filled by
    ``service.signing.attribute`` for ``history`` and ``log``; ``claim`` None: verified.
    """

    __slots__ = ("commit", "at", "author", "subject", "trailers", "text", "touched", "email", "signer", "claim")

    def __init__(self, commit: str, at: str, author: str, subject: str, trailers: dict[str, str], text: str = "",
                 touched: list[Touched] | None = None, email: str = "", signer: str | None = None,
                 claim: str | None = None) -> None:
        self.commit = commit
        self.at = at
        self.author = author
        self.subject = subject
        self.trailers = trailers
        self.text = text
        self.touched = [] if touched is None else touched
        self.email = email
        self.signer = signer
        self.claim = claim

    def __eq__(self, other: object) -> bool:
        return type(other) is Entry and _fields(self) == _fields(other)

    def replaced(self, **changes: object) -> Entry:
        """A copy with ``changes`` (field name -> value), as ``dataclasses.replace`` gives one."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return Entry(**values)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _repr(self)

    def actor(self) -> str:
        """The ``Memcli-Actor`` trailer, else the author."""
        return self.trailers.get("actor") or self.author

    def shown_actor(self) -> str:
        """The actor as ``log`` prints it: with ``(unverified: …)`` when no signature or
        authorship backs it (:attr:`claim`)."""
        return f"{self.actor()} ({self.claim})" if self.claim else self.actor()

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"commit": self.commit, "at": self.at, "author": self.author, "email": self.email,
                "subject": self.subject, "trailers": self.trailers, "text": self.text,
                "verified": self.claim is None, "signer": self.signer, "claim": self.claim}


#: ``git log`` format of an :class:`Entry`: seven fields split by ``\x1f`` (the author's
#: address last, after the body, so a reader of the first six needs no change).
ENTRY_FORMAT = "%H%x1f%aI%x1f%an%x1f%s%x1f%(trailers:only,unfold)%x1f%b%x1f%ae"
#: How many fields ``ENTRY_FORMAT`` has.
ENTRY_FIELDS = 7


def parse_entry(fields: list[str]) -> Entry:
    """An :class:`Entry` from the fields of ``ENTRY_FORMAT``."""
    fields = [f.strip("\n") for f in fields] + [""] * (ENTRY_FIELDS - len(fields))
    trailers = {}
    for line in fields[4].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.startswith(TRAILER_PREFIX):
            trailers[key[len(TRAILER_PREFIX):].lower()] = value.strip()
    body = [line for line in fields[5].splitlines() if not line.startswith(TRAILER_PREFIX)]
    return Entry(fields[0], fields[1], fields[2], fields[3], trailers, "\n".join(body).strip(), email=fields[6])


def summary(ids: list[str], scopes: list[str], actor: str) -> str:
    """A commit subject's words after the operation: ``ID (SCOPES) by ACTOR``, or ``N memories (SCOPES) by ACTOR``."""
    what = ids[0] if len(ids) == 1 else f"{len(ids)} memories"
    return f"{what} ({' '.join(scopes)}) by {actor}"


def message(op: str, summary: str, trailers: dict[str, str | None], body: str = "") -> str:
    """A commit message: ``memcli: OP SUMMARY``, an optional body, then ``Memcli-*`` trailers."""
    lines = [f"memcli: {op} {summary}".strip()]
    if body.strip():
        lines += ["", body.strip()]
    lines += [""] + [f"{TRAILER_PREFIX}{k}: {v}" for k, v in trailers.items() if v]
    return "\n".join(lines) + "\n"


def _fields(record: Touched | Entry) -> tuple:
    return tuple(getattr(record, name) for name in record.__slots__)


def _repr(record: Touched | Entry) -> str:
    return f"{type(record).__name__}({', '.join(f'{n}={getattr(record, n)!r}' for n in record.__slots__)})"
