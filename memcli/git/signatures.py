"""Commit signatures as git verifies them (SSH signing: ``gpg.format = ssh``).

git verifies an SSH signature with ``ssh-keygen -Y verify`` against an *allowed signers*
file (``gpg.ssh.allowedSignersFile``, the format of ssh-keygen(1)'s "ALLOWED SIGNERS"
section) and reports, through ``git log``'s placeholders, the result letter ``%G?``
(``G`` good, ``U`` good but from a key the file does not list, ``B`` bad, ``N`` none,
``E`` cannot be checked, e.g. no ``ssh-keygen``), the signer's principal ``%GS`` (the
file's first field for that key) and the key's fingerprint ``%GF``. memcli trusts a
signature only when the letter is ``G``: a good signature by a key the file lists.

The allowed signers file memcli uses is the one kept in the memory store, as a given
version of it (bytes): :func:`verify` writes it to a private temporary file and points git
at it with ``-c``, so no clone's own settings are read or changed. Without the setting,
git 2.39 aborts on an SSH-signed commit ("BUG: invalid trust level"), so it is always set.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memcli.errors import GitFailed
from memcli.git.run import first_line

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo

#: ``%G?`` letters in words, for messages (git-log(1), "PRETTY FORMATS").
STATUS_WORDS = {"G": "a good signature", "U": "signed by a key allowed_signers does not list",
                "B": "a bad signature", "N": "not signed", "E": "a signature that cannot be checked",
                "X": "an expired signature", "Y": "a signature by an expired key", "R": "a revoked key's signature"}


def signing_args(ssh: bool) -> tuple[list[str], list[str]]:
    """``(global options, command options)`` that make a committing git command (``commit``,
    ``commit-tree``, ``merge``) SSH-sign its commit when ``ssh`` (the store's ``[review]
    signing = "ssh"``): ``-c gpg.format=ssh`` and ``-S``, with the person's own
    ``user.signingkey``; nothing otherwise."""
    return (["-c", "gpg.format=ssh"], ["-S"]) if ssh else ([], [])


#: The hint for a commit git could not sign.
SIGNING_HINT = ("this store signs its commits ([review] signing = \"ssh\"): give git your SSH key, "
                "`git config --global user.signingkey ~/.ssh/id_ed25519.pub`, and list it in allowed_signers "
                "(docs/teams.md)")


@dataclass(frozen=True)
class Signature:
    """What git says of one commit's signature.

    Attributes:
        status: git's ``%G?`` letter (``G`` is the only one memcli trusts).
        principal: the allowed signers file's principal for the key (``%GS``); '' unless ``G``.
        key: the signing key's fingerprint (``%GF``), '' when unsigned.
    """

    status: str
    principal: str
    key: str

    @property
    def good(self) -> bool:
        """A good signature by a key the allowed signers file lists, with a principal."""
        return self.status == "G" and bool(self.principal)

    def words(self) -> str:
        """The status in words: ``not signed``, ``a good signature`` …"""
        return STATUS_WORDS.get(self.status, f"signature status {self.status!r}")


def verify(repo: "GitRepo", commits: list[str], signers: bytes | None) -> dict[str, Signature]:
    """Verify the SSH signatures of ``commits`` against the allowed signers file ``signers``.

    Args:
        repo: the repository holding the commits.
        commits: full commit hashes.
        signers: the allowed signers file's bytes; None or empty: no key is allowed (every
            signature is at best ``U``).

    Returns:
        ``{commit: Signature}`` for each commit given.

    Raises:
        GitFailed: git cannot read the commits.
    """
    if not commits:
        return {}
    fd, name = tempfile.mkstemp(prefix="memcli-signers-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(signers or b"")
        status, out, err = repo.raw(
            "-c", f"gpg.ssh.allowedSignersFile={name}", "-c", "gpg.format=ssh",
            "log", "--no-walk=unsorted", "--stdin", "--format=%H%x00%G?%x00%GS%x00%GF%x1e",
            input="".join(f"{c}\n" for c in commits).encode())
    finally:
        os.unlink(name)
    if status != 0:
        raise GitFailed(f"git cannot verify the commits' signatures: {first_line(err) or status}",
                        hint="install OpenSSH's ssh-keygen (git verifies SSH signatures with it)")
    found = {}
    for record in out.decode("utf-8", "replace").split("\x1e"):
        parts = record.strip("\n").split("\x00")
        if len(parts) == 4:
            sha, letter, principal, key = parts
            found[sha] = Signature(letter, principal if letter == "G" else "", key)
    return found
