"""SHA-256 and BLAKE2b without loading OpenSSL: CPython's own modules where there are some.

``import hashlib`` loads OpenSSL's ``_hashlib`` first, about 3 ms, on every read that
redacts a hit or finds its store's socket. CPython builds its own implementations of both
functions into modules of their own (``_sha256``, or ``_sha2`` from 3.12; ``_blake2``): the
digests are the same (FIPS 180-4; RFC 7693). Another interpreter gets ``hashlib``'s.
"""

from __future__ import annotations

from typing import Any, Callable


def _first(candidates: tuple[tuple[str, str], ...], fallback: str) -> Callable[..., Any]:
    for module, name in candidates:
        try:
            return getattr(__import__(module), name)
        except (ImportError, AttributeError):
            continue
    import hashlib

    return getattr(hashlib, fallback)


#: ``sha256(data)``: a hash object as ``hashlib.sha256`` makes (``.digest()``, ``.hexdigest()``).
sha256 = _first((("_sha256", "sha256"), ("_sha2", "sha256")), "sha256")
#: ``blake2b(data, digest_size=N)``: as ``hashlib.blake2b``.
blake2b = _first((("_blake2", "blake2b"),), "blake2b")
