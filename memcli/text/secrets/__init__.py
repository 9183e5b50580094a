"""The sensitive-data gate: find secrets in memory text before it is written, and cut them out at read.

Three sources of rules, merged:

* detect-secrets' pattern plugins (``detector.py``): the maintained rule set, with its own
  test corpus upstream, two of them widened by memcli's subclasses (``plugins.py``: PuTTY
  key files of any version, Azure storage keys after any spelling of ``AccountKey``);
  loaded only by a full scan (``full=True``, the default);
* provider tokens with a documented prefix and credentials on command lines (``tokens.py``);
* memcli's own rules (``own_rules.py``): AWS secret keys by context, cards (Luhn), national
  ids, passwords and assignments in prose, in English and Chinese.

Before any rule runs, a prefilter (``prefilter.py``) looks for the parts every match of a
rule contains (a token's prefix, an assignment's keyword, a run of digits): only the rules
that can match are run, and their modules imported, so ordinary memory text compiles no
rule and never imports detect-secrets.  It only skips rules that cannot match: a scan finds
what it would find without it (``tests/test_secrets_prefilter.py``).

Every scan runs over :func:`memcli.text.hidden.scan_view` of the text: NFKC-normalised,
with zero-width and other hidden characters, ANSI escapes and combining marks removed, so a
token split by U+200B or written in full-width letters is found; a full scan also folds
look-alike letters to the ASCII ones they imitate (``text/confusables.py``, UTS #39), so a
``ghр_`` token with a Cyrillic ``р`` is found.  A span found there covers, in the original
text, every character from the first to the last one it was made of.

A finding never carries the secret itself, only its kind and where it starts, so it is
safe to print, log or put in an error message.  Known public test values pass: Stripe's
test card 4242 4242 4242 4242 and the SSA's example SSNs 078-05-1120 and 219-09-9999.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import cache, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from memcli.text.secrets.kinds import (
    ANTHROPIC,
    AWS_KEY_ID,
    AWS_SECRET,
    BEARER,
    CARD,
    CN_ID,
    GENERIC,
    GITHUB,
    GOOGLE,
    JWT,
    OPENAI,
    PASSWORD,
    PEM,
    SLACK,
    SSN,
    STRIPE,
    URL_PASSWORD,
)

__all__ = ["ANTHROPIC", "AWS_KEY_ID", "AWS_SECRET", "BEARER", "CARD", "CN_ID", "GENERIC", "GITHUB", "GOOGLE",
           "JWT", "KINDS", "OPENAI", "PASSWORD", "PEM", "SLACK", "SSN", "STRIPE", "URL_PASSWORD", "SecretFinding",
           "find_secrets", "marker", "redact", "secret_spans", "shown", "slug_of"]

_OWN_SLUGS = {
    PEM: "private-key", AWS_KEY_ID: "aws-key-id", AWS_SECRET: "aws-secret-key", GITHUB: "github-token",
    SLACK: "slack-token", OPENAI: "openai-key", ANTHROPIC: "anthropic-key", GOOGLE: "google-api-key",
    STRIPE: "stripe-key", JWT: "jwt", CN_ID: "cn-resident-id", CARD: "payment-card", SSN: "us-ssn",
    PASSWORD: "password", URL_PASSWORD: "url-password", BEARER: "bearer-token", GENERIC: "generic-secret",
}


@cache
def _all_slugs() -> dict[str, str]:
    from memcli.text.secrets import tokens
    from memcli.text.secrets.detector import kinds as detector_kinds

    out = dict(_OWN_SLUGS)
    for kind, slug, _ in tokens.TOKEN_RULES:
        out.setdefault(kind, slug)
    for kind, slug in tokens.COMMAND_KINDS:
        out.setdefault(kind, slug)
    for kind, slug in detector_kinds():
        out.setdefault(kind, slug)
    return out


if TYPE_CHECKING:
    #: kind -> slug (``"GitHub token"`` -> ``"github-token"``), for markers and ``--allow-secret``.
    SLUGS: dict[str, str]
    #: Every kind ``find_secrets`` can report (human names, as error messages use them).
    KINDS: tuple[str, ...]


def __getattr__(name: str) -> object:
    """``SLUGS`` and ``KINDS``, made on first use (they need ``tokens.py``'s table, whose rules compile)."""
    if name == "SLUGS":
        return _all_slugs()
    if name == "KINDS":
        return tuple(_all_slugs())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: Public test values that are not secrets: Stripe's documented test card, and the SSA's
#: example numbers (078-05-1120, printed on a 1938 wallet insert; 219-09-9999, in an ad).
PUBLIC_TEST_VALUES: dict[str, frozenset[str]] = {
    CARD: frozenset(("4242424242424242",)),
    SSN: frozenset(("078051120", "219099999")),
}

_DETECTOR_PRIORITY = 0.5  # after memcli's token rules, whose spans are tighter; before digit rules


class SecretFinding(NamedTuple):
    """Where a secret starts: ``kind`` (one of ``KINDS``), 1-based ``line`` and ``column``.

    The secret itself is deliberately not stored, so ``str``/``repr`` are safe to show.
    A ``(kind, line, column)`` triple: immutable, compared by value.
    """

    kind: str
    line: int
    column: int

    @property
    def slug(self) -> str:
        """The kind's short name (``github-token``)."""
        return slug_of(self.kind)

    def __str__(self) -> str:
        return f"{self.kind} at line {self.line}, column {self.column}"


def slug_of(kind: str) -> str:
    """The short name of a kind (``"GitHub token"`` -> ``"github-token"``)."""
    return _all_slugs().get(kind) or "-".join(kind.lower().split())


def marker(kind: str) -> str:
    """What replaces a secret at read: ``[secret removed: github-token]``."""
    return f"[secret removed: {slug_of(kind)}]"


def _public_test_value(text: str, start: int, end: int, kind: str) -> bool:
    allowed = PUBLIC_TEST_VALUES.get(kind)
    if not allowed:
        return False
    return "".join(c for c in text[start:end] if c.isdigit()) in allowed


def _detector_placeholder(value: str) -> bool:
    from memcli.text.secrets import own_rules

    return own_rules._placeholder(value, value)  # one placeholder rule for every source


def secret_spans(text: str, *, full: bool = True) -> list[tuple[int, int, str]]:
    """Where the secrets of ``text`` are: ``(start, end, kind)`` offsets into ``text``, sorted, not overlapping.

    Args:
        text: any text; it is scanned as :func:`memcli.text.hidden.scan_view` gives it.
        full: also run detect-secrets' plugins and fold look-alike letters (a write; a
            read of a text never scanned).  ``False`` runs only memcli's own rules on the
            NFKC view: no import cost, for hot-path redaction as a second line of defence.

    Returns:
        Spans in ``text``'s own offsets; when findings overlap, the most specific kind
        wins (a token's own rule over the digit rules over the generic assignment rules).
        A private key's span is its ``-----BEGIN`` line only, not the whole block.
    """
    return list((_cached_scan if len(text) <= _CACHED_CHARS else _scan)(text, full))


#: Texts up to this many characters keep their scan in a per-process cache (a write's gate
#: and its scan memo ask about the same text; a render neutralises the same lines again).
_CACHED_CHARS = 20_000


def _scan(text: str, full: bool, screen: bool = True) -> tuple[tuple[int, int, str], ...]:
    """:func:`secret_spans` as a tuple; ``screen=False`` runs every rule, as if the prefilter
    (``prefilter.py``) let every text through (the reference its tests compare with)."""
    from memcli.text.hidden import original_span, scan_view
    from memcli.text.secrets.prefilter import screen as prefilter

    view, offsets = scan_view(text, fold=full)
    own, plugins = prefilter(view, plugins=full) if screen else (True, None)
    cands: list[tuple[float, int, int, str]] = []
    if own:
        from memcli.text.secrets import own_rules, tokens

        cands.extend(own_rules.candidates(view))
        for kind, _slug, regex in tokens.TOKEN_RULES:
            cands.extend((0, m.start(), m.end(), kind) for m in regex.finditer(view))
        cands.extend((4, start, end, kind) for start, end, kind in tokens.command_spans(view))
    if full and (plugins is None or plugins):
        from memcli.text.secrets import detector

        cands.extend((_DETECTOR_PRIORITY, s, e, k) for s, e, k in detector.spans(view, _detector_placeholder, plugins))
    if not cands:
        return ()
    # Kept spans never overlap, so sorted by start they are sorted by end too: a new span
    # overlaps a kept one iff it overlaps the last kept span starting before its end.
    starts: list[int] = []
    kept: list[tuple[int, int, str]] = []
    for _, start, end, kind in sorted(cands):
        i = bisect_left(starts, end)
        if i and kept[i - 1][1] > start:
            continue
        if i < len(kept) and kept[i][0] < end:
            continue
        starts.insert(i, start)
        kept.insert(i, (start, end, kind))
    out = []
    for start, end, kind in kept:
        if _public_test_value(view, start, end, kind):
            continue
        out.append((*original_span(offsets, start, end), kind))
    return tuple(out)


_cached_scan = lru_cache(maxsize=256)(_scan)


def find_secrets(text: str, *, full: bool = True) -> list[SecretFinding]:
    """All secrets in ``text``, sorted by (line, column), at most one finding per (kind, span).

    Args:
        text: the text to scan (a memory body, title or label); lines split on ``\\n``,
            columns count characters (code points) of ``text`` itself, both 1-based.
        full: see :func:`secret_spans`.

    Returns:
        A list of ``SecretFinding``; empty when the text is clean.
    """
    spans = secret_spans(text, full=full)
    if not spans:
        return []
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    findings = []
    for start, _end, kind in spans:
        line = bisect_right(line_starts, start)
        findings.append(SecretFinding(kind, line, start - line_starts[line - 1] + 1))
    return sorted(findings, key=lambda f: (f.line, f.column, f.kind))


def redact(text: str, spans: list[tuple[int, int, str]] | None = None, *, full: bool = True,
           allow: tuple[str, ...] = ()) -> str:
    """``text`` with each secret replaced by :func:`marker` of its kind.

    Args:
        text: the text to show.
        spans: the spans of :func:`secret_spans` when the caller has them (a memo), else
            they are computed (``full`` as there).
        allow: slugs of kinds a person let through at write (``remember --allow-secret``).
    """
    if spans is None:
        spans = secret_spans(text, full=full)
    out, last = [], 0
    for start, end, kind in spans:
        if slug_of(kind) in allow or start < last:
            continue
        if kind in _KEY_BLOCK_KINDS:  # the key material too, not only its BEGIN line
            end = _key_block_end(text, end)
        out.append(text[last:start])
        out.append(marker(kind))
        last = end
    out.append(text[last:])
    return "".join(out)


_KEY_BLOCK_KINDS = frozenset((PEM, "private key", "PuTTY private key", "SSH2 private key"))
# RFC 7468 / RFC 4716 end lines, and the last line of a PuTTY key file (Private-MAC).
# Any case and spacing, as the BEGIN lines are found (own_rules.py, plugins.py).
_KEY_END_RE = re.compile(r"-{4,5}[ \t]*(?i:end)[ \t]+[^\n]{0,60}?-{4,5}|(?i:private-mac)[ \t]*:[^\n]*")


def _key_block_end(text: str, end: int) -> int:
    """Where the private key that starts before ``end`` ends: its END line, else the text's end."""
    m = _KEY_END_RE.search(text, end)
    return m.end() if m else len(text)


def shown(value: object, limit: int = 24, *, full: bool = True) -> str:
    """A safe form of a value a user gave, for an error message: never a secret, never long.

    Secrets are replaced by their marker, hidden characters removed, and the result is
    quoted (``repr``) and cut to ``limit`` characters with ``…``.  ``full=False`` skips
    detect-secrets (for a hot-path message such as ``recall``'s table title).
    """
    from memcli.text.hidden import strip_hidden

    text = value if isinstance(value, str) else str(value)
    text = strip_hidden(redact(text[:400], full=full))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)
