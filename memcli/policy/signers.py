"""The allowed signers file kept in a memory store, and the rules for changing it (issue 22 point 2).

The file is ssh-keygen(1)'s "ALLOWED SIGNERS" format, one key a line::

    alice@example.com namespaces="git" ssh-ed25519 AAAAC3Nza... alice's laptop

(principals, comma-separated; optional options; the key type and its base64; a comment).
git verifies commit signatures against it (``memcli.git.signatures``). Whoever may edit it
could list their own key under a teammate's name, so with signing on a change to it is
judged like an approval (``service.signing``), by these rules:

* the changing commit carries a good signature of a key the file *before* it lists;
* a key added to a principal that already had keys is added by that principal (its own
  commit, signed by one of its old keys): nobody else can give themselves a teammate's name;
* no principal is a pattern (``*``, ``?``, ``!``: ssh-keygen matches them against any name);
* no key is listed under two principals.

Pure: no I/O.
"""

from __future__ import annotations

import shlex

#: The file's name at the store's root.
SIGNERS_NAME = "allowed_signers"
#: The ``[review] signing`` values: off, or SSH signatures checked against ``allowed_signers``.
SIGNING_VALUES = ("off", "ssh")
#: Key types of ssh-keygen(1)'s allowed signers format.
KEY_PREFIXES = ("ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-")


def parse(data: bytes | None) -> dict[str, set[str]]:
    """``{principal: {"TYPE BASE64", …}}`` of an allowed signers file (None: no file).

    Lines that are empty, comments, or without a recognisable key are skipped, as
    ssh-keygen skips what it cannot use; a certificate authority line is kept under its
    principals like any key.
    """
    found: dict[str, set[str]] = {}
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=False, posix=True)
        except ValueError:
            continue
        at = next((i for i, w in enumerate(words) if i and w.startswith(KEY_PREFIXES)), None)
        if at is None or at + 1 >= len(words):
            continue
        key = f"{words[at]} {words[at + 1]}"
        for principal in words[0].split(","):
            if principal:
                found.setdefault(principal, set()).add(key)
    return found


def change_problems(before: bytes | None, after: bytes | None, signer: str) -> list[str]:
    """What is wrong with a change of the allowed signers file from ``before`` to ``after``
    made by a commit whose good signature names ``signer`` (module docstring); empty when
    nothing is. A commit without a good signature is refused before this is asked."""
    old, new = parse(before), parse(after)
    problems = []
    for principal, keys in sorted(new.items()):
        if any(c in principal for c in "*?!"):
            problems.append(f"the principal {principal!r} is a pattern: each line must name one person")
            continue
        added = keys - old.get(principal, set())
        if added and old.get(principal) and principal != signer:
            problems.append(f"{signer} adds a key to {principal}; only {principal} may add a key to their own "
                            "name (a commit signed by one of their listed keys)")
    owners: dict[str, set[str]] = {}
    for principal, keys in new.items():
        for key in keys:
            owners.setdefault(key, set()).add(principal)
    for key, principals in sorted(owners.items()):
        if len(principals) > 1:
            problems.append(f"one key is listed under {', '.join(sorted(principals))}: a key names one person")
    return problems


def signing_of(config_text: bytes | None) -> str:
    """``[review] signing`` of a ``memcli.toml``'s bytes: ``"ssh"`` or ``"off"`` (the file's
    absence, a syntax error or an unknown value read as ``"off"``; the workspace's own
    configuration reports those when it is loaded)."""
    import tomllib

    if not config_text:
        return "off"
    try:
        data = tomllib.loads(config_text.decode("utf-8-sig", "replace"))
    except tomllib.TOMLDecodeError:
        return "off"
    review = data.get("review")
    value = review.get("signing") if isinstance(review, dict) else None
    return value if value in SIGNING_VALUES else "off"
