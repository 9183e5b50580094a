"""Redaction at read: no secret in a memory file reaches an agent's context or any other output.

Files that never passed the write gate (written by hand, pulled from a teammate, restored
from an old revision) can hold secrets. Every read channel (``context``, the hooks,
``recall``, ``list``, ``show``, ``export``, the MCP tools built on them) passes the memories
it returns through :func:`redact_memories`, which replaces each secret-looking span of the
text with ``[secret removed: KIND]`` (``text.secrets.marker``), before anything strips the
hidden characters, so the parts of a split token are never joined back together; then
ANSI escapes, control characters and hidden characters are removed
(``text.hidden.printable``), so a hand-written file cannot drive the terminal or reach a
rule file (``export``) with invisible text.

A full scan loads detect-secrets (about 0.1 s, see ``text/secrets/detector.py``), too
slow for every hook. The result of a scan is a pure function of the text, so it is kept in
a memo in the workspace's cache folder (``secret-scan.sqlite``): SHA-256 of the text and of
the rule-set version -> the spans. A text is scanned in full once; later reads look it up.
The context block's neutraliser (``agents/context_block.py``) still runs memcli's own rules (no
import cost) on every line it renders, as a second line of defence.
A value a person let through at write (``remember --allow-secret``) is in the file but is
still cut out of every read channel: the override opens the write gate, not the context.
The memo is derived data: deleting it costs one full scan per text; if it cannot be read
or written, every text is simply scanned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.digests import sha256
from memcli.model import Memory

if TYPE_CHECKING:
    from memcli.service import Ctx

#: Bumped whenever the rules change, so old memo entries are not trusted.
RULESET_VERSION = "2"  # 2: PuTTY v3, lax PEM armour, SSN forms, hf_ with digits, AccountKey spellings, look-alikes
MEMO_FILE = "secret-scan.sqlite"
_CHUNK = 500  # digests per SELECT (SQLite's default limit on host parameters is 999 before 3.32)


def _digest(text: str) -> bytes:
    return bytes(sha256(f"{RULESET_VERSION}\0{text}".encode("utf-8", "surrogatepass")).digest())


class ScanMemo:
    """The memo of full scans: text digest -> secret spans (``[]`` for a clean text).

    Args:
        folder: the workspace's cache folder; None keeps nothing (every text scanned).
    """

    def __init__(self, folder: Path | None) -> None:
        self.db = None
        if folder is None:
            return
        import sqlite3

        try:
            self.db = sqlite3.connect(str(folder / MEMO_FILE), timeout=0.5, isolation_level=None)
            self.db.execute("CREATE TABLE IF NOT EXISTS scan (digest BLOB PRIMARY KEY, spans TEXT NOT NULL)")
        except sqlite3.Error:
            self.db = None

    def get(self, digests: list[bytes]) -> dict[bytes, list[tuple[int, int, str]]]:
        """The spans known for ``digests`` (unknown ones are left out)."""
        import sqlite3

        found: dict[bytes, list[tuple[int, int, str]]] = {}
        if self.db is None:
            return found
        try:
            for i in range(0, len(digests), _CHUNK):
                part = digests[i:i + _CHUNK]
                rows = self.db.execute(
                    f"SELECT digest, spans FROM scan WHERE digest IN ({','.join('?' * len(part))})", part)
                for digest, spans in rows:
                    found[bytes(digest)] = [tuple(s) for s in json.loads(spans)]
        except (sqlite3.Error, ValueError, TypeError):
            return {}
        return found

    def put(self, entries: dict[bytes, list[tuple[int, int, str]]]) -> None:
        """Remember new scans; a locked or read-only memo is skipped (they are rescanned next time)."""
        import sqlite3

        if self.db is None or not entries:
            return
        try:
            self.db.executemany("INSERT OR REPLACE INTO scan VALUES (?, ?)",
                                [(d, json.dumps(s)) for d, s in entries.items()])
        except sqlite3.Error:
            pass

    def close(self) -> None:
        """Close the database (idempotent)."""
        if self.db is not None:
            self.db.close()
            self.db = None


def text_spans(texts: list[str], folder: Path | None) -> list[list[tuple[int, int, str]]]:
    """The secret spans of each of ``texts`` (full scan, through the memo in ``folder``)."""
    from memcli.text.secrets import secret_spans

    if not texts:
        return []
    digests = [_digest(t) for t in texts]
    memo = ScanMemo(folder)
    try:
        known = memo.get(digests)
        new: dict[bytes, list[tuple[int, int, str]]] = {}
        out = []
        for text, digest in zip(texts, digests):
            spans = known.get(digest)
            if spans is None:
                spans = new.get(digest)
            if spans is None:
                spans = new[digest] = secret_spans(text, full=True)
            out.append(spans)
        memo.put(new)
    finally:
        memo.close()
    return out


def redact_texts(texts: list[str], folder: Path | None) -> list[str]:
    """``texts`` with every secret replaced by a marker (one batch through the memo in ``folder``).

    For what the audit trail shows (``log``, ``history``, ``diff``, ``show --at``): old
    versions and commit messages never passed today's gate, or passed it by an override.
    """
    from memcli.text.hidden import printable
    from memcli.text.secrets import redact

    return [printable(redact(t, spans) if spans else t) for t, spans in zip(texts, text_spans(texts, folder))]


def redact_text(text: str, folder: Path | None, allow: tuple[str, ...] = ()) -> str:
    """One text with its secrets replaced by markers (see :func:`redact_memories`)."""
    from memcli.text.hidden import printable
    from memcli.text.secrets import redact

    (spans,) = text_spans([text], folder)
    return printable(redact(text, spans, allow=allow) if spans else text)


def redact_memories(memories: list[Memory], folder: Path | None) -> list[Memory]:
    """``memories`` with every secret in their text, subject, tags and paths replaced by a marker,
    and escapes, control and hidden characters removed (``text.hidden.printable``).

    Args:
        memories: records about to be shown; they are not changed (redacted copies are
            returned in their place, the others as they are).
        folder: the workspace's cache folder (``ctx.ws.cache``) for the scan memo, or None.

    Returns:
        A list as long as ``memories``, in the same order.
    """
    from memcli.text.hidden import printable
    from memcli.text.secrets import redact

    def label(value: str) -> str:  # a short field: memcli's own rules only (no import cost)
        return printable(redact(value, full=False))

    all_spans = text_spans([m.text for m in memories], folder)
    out = []
    for memory, spans in zip(memories, all_spans):
        changes: dict[str, object] = {}
        body = printable(redact(memory.text, spans) if spans else memory.text)
        if body != memory.text:
            changes["body"] = body
        subject = label(memory.subject) if memory.subject else memory.subject
        if subject != memory.subject:
            changes["subject"] = subject
        for name in ("tags", "paths"):
            values = getattr(memory, name)
            cleaned = [label(v) for v in values]
            if cleaned != values:
                changes[name] = cleaned
        out.append(memory.with_(**changes) if changes else memory)
    return out


def cache_of(ctx: Ctx) -> Path | None:
    """The workspace's cache folder for the memo, or None when it cannot be used (read-only)."""
    from memcli.errors import MemcliError

    try:
        return ctx.ws.cache
    except (MemcliError, OSError):
        return None


def for_reader(ctx: Ctx, memories: list[Memory]) -> list[Memory]:
    """:func:`redact_memories` with the memo in ``ctx``'s workspace cache."""
    return redact_memories(memories, cache_of(ctx)) if memories else memories
