"""memcli's own secret rules (the kinds detect-secrets does not know, or knows too loosely).

Rules, and where each pattern comes from:

* ``private key (PEM)``: the RFC 7468 encapsulation boundary
  ``-----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]-----``
  (the PGP form is RFC 4880's armor header), read as lax parsers read it (OpenSSL, Go's
  ``encoding/pem`` take it only exact, but a key pasted through a chat or a word processor
  keeps its body whatever its armour became): letters in any case, spaces or tabs around
  and between the words (``----- BEGIN  RSA PRIVATE KEY -----``), up to three words before
  ``PRIVATE KEY`` (``ENCRYPTED``, ``ED25519``, ``X25519``...).
* ``AWS access key id``: AWS's documented unique-id prefixes AKIA (long-term),
  ASIA (STS temporary), ABIA and ACCA, followed by 16 of ``[0-9A-Z]``.
* ``AWS secret access key``: 40 characters of ``[A-Za-z0-9/+]`` (base64 of 30 random
  bytes), reported when assigned to a name containing ``aws`` or ``secret``, on the same
  line as an AWS access key id, or standing alone (not glued to an identifier, a path or
  a longer base64 run) with a context word (``aws``, ``secret``, ``key``, ``credential``,
  as a word or a camelCase part, plural too) on its line at most 80 characters before it
  or 40 after.  That is how detect-secrets' ``AWSKeyDetector`` and gitleaks' old
  ``AWS Secret Key`` rule find one: a keyword near a 40-character token.  A bare token
  with context must also look random (upper- and lowercase letters and a digit, ``/`` or
  ``+``) and be none of: hex (a git SHA-1, any case), a camelCase identifier, a path
  (``/``-separated words in lowercase, digits or Capitalised), base64 of printable
  text.  Without context a bare 40-character token is not reported (it is too often an
  id or a digest).
* ``GitHub token``: GitHub's documented prefixes ``ghp_`` ``gho_`` ``ghu_`` ``ghs_``
  ``ghr_`` (+36 or more alphanumerics) and fine-grained ``github_pat_``.
* ``Slack token`` (``xoxa-/xoxb-/xoxp-/xoxo-/xoxs-/xoxr-``), ``OpenAI API key``
  (``sk-``, ``sk-proj-``), ``Anthropic API key`` (``sk-ant-``), ``Google API key``
  (``AIza`` + 35), ``Stripe key`` (``sk_live_``/``sk_test_``/``rk_...``) and
  ``JSON web token`` (three base64url segments, header and payload starting ``eyJ``,
  i.e. a JSON object).
* ``password`` / ``generic API key/token assignment``: a key such as ``password``,
  ``passwd``, ``pwd``, ``密码``, ``口令`` (password) or ``secret``, ``api_key``,
  ``token``, ``access_token``, ``client_secret`` (generic), then ``:``, ``=``, ``：``,
  ``是`` or ``为`` and a value that looks like a credential: not a placeholder
  (``<...>``, ``***``, ``xxx``, ``${VAR}``, ``$VAR``, ``%VAR%``, ``REDACTED``,
  ``your-...``), not code (``os.environ[...]``, ``settings.KEY``) or a path, and
  holding a digit or symbol; a letters-only value counts only if quoted or in a
  ``KEY=value`` line, or if it is a well-known weak password such as ``changeme``.
* ``password in a URL``: RFC 3986 userinfo ``scheme://user:password@host`` with a
  non-empty password that is not a placeholder (``${PASS}``, ``<password>``, ``***``,
  ``xxx``, the word ``password``) nor the user name repeated (``postgres:postgres``, a
  local default).
* ``bearer token``: RFC 6750's ``Bearer`` scheme and a b64token that looks random (a
  digit, or upper- and lowercase): 20 or more characters, or 8 or more in an
  ``Authorization:`` header, or a JSON web token's start (``eyJ``).
* ``password`` in prose: "my password is hunter2", "the password for staging was X",
  "密码是 X": the word after ``is``/``was`` when it has no spaces, is not a placeholder
  or a common word ("required", "set", "stored", "in", "managed", an ``-ed``/``-ive``...
  adjective), and either mixes letters with digits or symbols, or ends its clause
  (``is swordfish.``), or is quoted.
* ``generic API key/token`` in prose: "the staging deploy secret is X", "the API token for
  prod was X", "密钥是 X" (a secret, token, API/access/secret/private/signing key or
  credential, then ``is``/``was``): a value of 16 or more characters with a digit and
  mixed-case letters or a base64 symbol (``+ / = _ -``) among letters, or 32 or more hex
  digits; not a placeholder, code, a dotted name, a URL or a path (newcomer, stop 34: a
  41-character AWS-style secret after "secret is" passed, being no AWS key's length).
* ``payment card number``: 13-19 digits (plain or in 4-digit-led groups split by one
  space or hyphen) with a card-network IIN prefix and length (Visa 4; Mastercard
  51-55, 2221-2720; Amex 34/37; Discover 6011/65; JCB 35; Diners 36/38/39;
  UnionPay 62) and a valid Luhn (ISO/IEC 7812-1) check digit.
* ``US social security number``: ``AAA-GG-SSSS`` without the SSA's never-issued
  values (area 000, 666, 900-999; group 00; serial 0000).  Written ``AAA-GG-SSSS`` it
  is found anywhere; written ``AAA GG SSSS``, ``AAA.GG.SSSS`` or as nine bare digits
  (as forms and payroll exports write them) only when labelled: ``SSN``, ``SSNs``,
  ``SS#``, ``social security (number|no|#)`` up to 30 characters before it on its line.
* ``Chinese resident ID number``: 18 characters per GB 11643-1999: a province code,
  a real birth date (1900-2099) and the ISO 7064 MOD 11-2 check character; plain, or
  grouped 6-8-4 by spaces or hyphens (``110105 19880412 123X``), as forms print it.

Digit rules never match inside a longer run of digits or letters (ids, hashes,
version strings, timestamps).  When findings overlap, the most specific one wins
(a token's own rule over the digit rules over the generic assignment rules).
"""

from __future__ import annotations

import re

from memcli.text.recache import compiled
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

KINDS: tuple[str, ...] = (PEM, AWS_KEY_ID, AWS_SECRET, GITHUB, SLACK, OPENAI, ANTHROPIC, GOOGLE,
                          STRIPE, JWT, CN_ID, CARD, SSN, PASSWORD, URL_PASSWORD, BEARER, GENERIC)
"""Every kind ``find_secrets`` can report."""


def _mixed(token: str) -> bool:
    """Whether a key body looks random: a digit, or both upper- and lowercase letters."""
    body = token[3:]
    return any(c.isdigit() for c in body) or (body.lower() != body and body.upper() != body)


_TOKEN_RULES = (
    (PEM, compiled(r"(?<!-)-----[ \t]*(?i:begin)[ \t]+(?:[A-Za-z0-9]+[ \t]+){0,3}?(?i:private)[ \t]+(?i:key)"
                     r"(?:[ \t]+(?i:block))?[ \t]*-----(?!-)"), None),
    (AWS_KEY_ID, compiled(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"), None),
    (GITHUB, compiled(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
     None),
    (SLACK, compiled(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}"), None),
    (ANTHROPIC, compiled(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"), _mixed),
    (OPENAI, compiled(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-)?[A-Za-z0-9_-]{20,}"), _mixed),
    (GOOGLE, compiled(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), None),
    (STRIPE, compiled(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"), None),
    (JWT, compiled(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
     None),
)

_AWS_SECRET_TOKEN = r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_AWS_SECRET_BARE_RE = compiled(_AWS_SECRET_TOKEN)
# The name is matched whole (possessive, from its start) and checked for aws/secret after,
# so a long identifier is scanned once rather than once per "aws" inside it.
_AWS_SECRET_NAMED_RE = compiled(
    r"(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]++)[\"'`]?[ \t]*[=:：][ \t]*[\"'`]?(" + _AWS_SECRET_TOKEN + ")")
_AWS_KEY_ID_RE = _TOKEN_RULES[1][1]
# A token standing alone: not part of an identifier, slug, file name, path or longer base64 run
# (a sentence's full stop after it is fine).
_AWS_SECRET_ALONE_RE = compiled(
    r"(?<![A-Za-z0-9/+_.~\\-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_~\\-]|\.[A-Za-z0-9])")
# Context words: aws, secret(s), key(s), credential(s), whole or as a camelCase part (awsKey,
# accessKey, clientSecret), never inside a lowercase word (laws, monkey, secretary).
_AWS_CONTEXT_RE = compiled(
    r"(?<![a-z])(?i:aws|secrets?|keys?|credentials?)(?![a-z])|(?<=[a-z])(?:Aws|AWS|Secrets?|Keys?|Credentials?)(?![a-z])")
_CONTEXT_BEFORE, _CONTEXT_AFTER = 80, 40  # characters of the token's line searched for a context word
_PATH_SEGMENT_RE = compiled(r"[a-z0-9]*|[A-Z][a-z0-9]*")
_CAMEL_CASE_RE = compiled(r"[a-z]*(?:[A-Z]+[a-z]{2,})+[0-9]*")  # an identifier made of words

# Cards: plain 13-19 digits, or 4-digit-led groups with one consistent separator.  Never
# part of a longer run of digits/letters; a grouped number also not of a longer run of
# groups (a list of small numbers), though a following ``MM/YY`` expiry is fine.
_CARD_RE = compiled(
    r"(?<![0-9A-Za-z_.])(?:[0-9]{13,19}(?![0-9A-Za-z_]|[.,][0-9])"
    r"|(?<![0-9][ -])[0-9]{4}(?P<sep>[ -])[0-9]{4,6}(?:(?P=sep)[0-9]{3,5}){1,3}"
    r"(?![0-9A-Za-z_]|[.,][0-9]|(?P=sep)[0-9](?![0-9]?/)))")
_SSN_RE = compiled(r"(?<![0-9A-Za-z_.-])([0-9]{3})-([0-9]{2})-([0-9]{4})(?![0-9A-Za-z_]|[-.][0-9])")
# The label first (SSN, SS#, social security number/no/#), then up to 30 characters of its line, then the
# number grouped by one space or dot, or bare.
_SSN_LABELLED_RE = compiled(
    r"(?<![A-Za-z0-9_])(?i:ssns?|ss\#|social[ \t]+security(?:[ \t]+(?:number|no\.?|\#))?)(?![A-Za-z0-9_])"
    r"[^\n0-9]{0,30}?(?<![0-9A-Za-z_.-])([0-9]{3})(?P<sep>[ .]?)([0-9]{2})(?P=sep)([0-9]{4})"
    r"(?![0-9A-Za-z_]|[-. ][0-9])")
_CN_ID_RE = compiled(r"(?<![0-9A-Za-z_])(?:[0-9]{17}[0-9Xx]|[0-9]{6}(?P<sep>[ -])[0-9]{8}(?P=sep)[0-9]{3}[0-9Xx])"
                       r"(?![0-9A-Za-z_])")
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_PROVINCES = frozenset((11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43,
                              44, 45, 46, 50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 91))

# Assignments.  The value class is printable ASCII minus quotes and backtick.
_ASSIGN_RE = compiled(
    r"(?P<key>(?i:password|passwd|pwd|secret(?:[_-]?(?:access[_-]?)?key)?|api[_-]?key|token)"
    r"(?![A-Za-z0-9_])|密码|口令)"
    r"(?P<pre>[\"'`]?[ \t]*)(?P<sep>:=|=>|==|=|:|：|是|为)(?P<gap>[ \t]*)"
    r"(?P<q>[\"'`]?)(?P<val>[\x21\x23-\x26\x28-\x5f\x61-\x7e]+)")
_PASSWORD_KEYS = frozenset(("password", "passwd", "pwd", "密码", "口令"))
_PLACEHOLDER_RE = compiled(
    r"<.*|\{.*|\[.*|\$[{(].*|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%|[*xX#?._-]+")
_CODE_RE = compiled(r"[A-Za-z_][A-Za-z0-9_.]*[(\[]")
_DOTTED_RE = compiled(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PATH_CHARS_RE = compiled(r"[A-Za-z0-9_./-]+")
_FILE_EXT_RE = compiled(r"\.[A-Za-z][A-Za-z0-9]{0,4}\Z")
_ENV_PREFIX_RE = compiled(r"[ \t]*(?:export[ \t]+)?[A-Za-z0-9_.-]*")
_LINE_END_RE = compiled(r"[ \t\r]*(?:#[^\n]*)?(?:\n|\Z)")
_WEAK_PASSWORDS = frozenset((
    "changeme", "password", "passw0rd", "letmein", "qwerty", "qwertyuiop", "iloveyou", "welcome",
    "admin", "administrator", "secret", "trustno1"))
_PROSE_VALUES = frozenset((
    "required", "optional", "string", "boolean", "integer", "number", "missing", "invalid", "expired",
    "provided", "configured", "disabled", "enabled", "rotated", "redacted", "hidden", "omitted",
    "removed", "encrypted", "hashed", "placeholder", "undefined", "unchanged", "unknown", "generated",
    "default", "nullable", "authorization", "bearer", "notset", "unset", "none", "null", "empty"))

# scheme://user:password@host (RFC 3986 3.1, 3.2.1).  The password may hold "@": the
# greedy class backs off to the last "@" before the host.
_URL_CRED_RE = compiled(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://(?P<user>[^\s:/?#@]*+):(?P<pw>[^\s/?#]+)@[^\s/?#@]")
_URL_PLACEHOLDERS = frozenset(("password", "passwd", "pass", "pwd", "pw", "secret", "mypassword",
                               "yourpassword", "changeme"))
# RFC 6750 2.1: credentials = "Bearer" 1*SP b64token.
_BEARER_RE = compiled(
    r"(?<![A-Za-z0-9_])(?P<auth>(?i:authorization)[\"'`]?[ \t]*[:=][ \t]*[\"'`]?)?(?i:bearer)[ \t]+"
    r"(?P<tok>[A-Za-z0-9._~+/-]+=*)")
# "my password is hunter2", "the password for the staging db was X", "密码是 X".
_PROSE_PASSWORD_RE = compiled(
    r"(?:(?<![A-Za-z0-9_])(?i:password|passwd|passphrase)"
    r"(?:[ \t]+(?i:for|of|to|on)(?:[ \t]+[^\s.,;:!?]{1,30}){1,4}?)?[ \t]+(?i:is|was)(?![A-Za-z0-9_])[ \t]*[:：]?"
    r"|(?:密码|口令)(?:是|为)[:：]?)[ \t]*"
    r"(?P<q>[\"'`]?)(?P<val>[\x21\x23-\x26\x28-\x5f\x61-\x7e]+)")
# "the staging deploy secret is X", "the API token for prod was X", "密钥是 X": a secret, token,
# API/access/secret/private/signing key or credential named in prose, and a value that looks
# random (``_prose_secret``).
_PROSE_SECRET_RE = compiled(
    r"(?:(?<![A-Za-z0-9_])(?i:secret|token|(?:api|access|secret|private|signing)[ _-]?key|credential)s?"
    r"(?:[ \t]+(?i:for|of|to|on)(?:[ \t]+[^\s.,;:!?]{1,30}){1,4}?)?[ \t]+(?i:is|was|are|were)(?![A-Za-z0-9_])"
    r"[ \t]*[:：]?|(?:密钥|秘钥|令牌|私钥)(?:是|为)[:：]?)[ \t]*"
    r"(?P<q>[\"'`]?)(?P<val>[\x21\x23-\x26\x28-\x5f\x61-\x7e]+)")
_HEX_RE = compiled(r"[0-9A-Fa-f]+")
_PROSE_WORDS = frozenset((
    "set", "stored", "in", "managed", "kept", "saved", "not", "never", "the", "a", "an", "now", "still",
    "being", "also", "too", "only", "just", "always", "blank", "wrong", "incorrect", "correct", "right",
    "valid", "weak", "strong", "long", "short", "reset", "secret", "secure", "insecure", "same", "mandatory",
    "needed", "necessary", "masked", "defined", "given", "known", "available", "unavailable", "sent",
    "shared", "lost", "locked", "case-sensitive", "sensitive", "used", "stale", "old", "new", "temporary",
    "random", "read", "visible", "bad", "good", "fine", "ok", "okay", "there", "here", "mine", "yours",
    "his", "hers", "theirs", "ours", "what", "which", "whatever", "it", "that", "this", "at", "on",
    "under", "via", "from", "by", "for", "with", "to", "of", "inside", "within", "somewhere", "elsewhere",
    "very", "pretty", "quite", "rather", "really", "so", "usually", "typically", "normally", "probably",
    "likely", "maybe", "either", "neither", "both", "all", "any", "each", "every", "your", "my", "our",
    "their", "its", "one", "unique", "per-user", "per-host", "auto-generated", "same-as", "different",
    "unchanged", "temp", "too-short", "too-long", "anything", "something", "nothing"))
_PROSE_SUFFIXES = ("ed", "ing", "ly", "ble", "ive", "ous", "ful", "less", "al", "ent", "ant", "ic", "ure",
                   "ise", "ize", "ary", "ory", "ial")


def _luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn (mod 10) check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        k = ord(ch) - 48
        if i % 2:
            k = k * 2 - 9 if k > 4 else k * 2
        total += k
    return total % 10 == 0


def _card_network_ok(d: str) -> bool:
    """Whether a digit string has a known card-network IIN prefix and a length it issues."""
    n, p2, p4 = len(d), int(d[:2]), int(d[:4])
    if d[0] == "4":
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p4 == 6011 or p2 in (65, 35, 62):
        return 16 <= n <= 19
    if p2 in (36, 38, 39):
        return 14 <= n <= 19
    return False


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    """Whether an SSN's parts are ones the SSA issues (not area 000, 666 or 9xx; group 00; serial 0000)."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _cn_id_ok(s: str) -> bool:
    """Whether an 18-character string is a plausible GB 11643-1999 resident ID number."""
    if int(s[:2]) not in _CN_ID_PROVINCES:
        return False
    year, month, day = int(s[6:10]), int(s[10:12]), int(s[12:14])
    if not (1900 <= year <= 2099 and 1 <= month <= 12):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]:
        return False
    total = sum(int(c) * w for c, w in zip(s, _CN_ID_WEIGHTS))
    return "10X98765432"[total % 11] == s[17].upper()


def _aws_secret_ok(token: str) -> bool:
    """Whether a 40-character token could be an AWS secret key (mixed classes, not a git SHA)."""
    if re.fullmatch(r"[0-9a-f]{40}", token):
        return False
    classes = (any(c.isupper() for c in token), any(c.islower() for c in token),
               any(c.isdigit() or c in "/+" for c in token))
    return sum(classes) >= 2


def _aws_secret_alone_ok(token: str) -> bool:
    """Whether a bare 40-character token found near a context word looks like an AWS secret key.

    It must look random (upper- and lowercase letters, and a digit, ``/`` or ``+``) and be
    neither hex (a SHA-1, any case), nor a camelCase identifier, nor a path of plain words,
    nor base64 of printable text.
    """
    import base64
    import binascii

    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)
            and any(c.isdigit() or c in "/+" for c in token)):
        return False
    if re.fullmatch(r"[0-9A-Fa-f]{40}", token) or _CAMEL_CASE_RE.fullmatch(token):
        return False
    if "/" in token and all(_PATH_SEGMENT_RE.fullmatch(part) for part in token.split("/")):
        return False
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return True
    return not all(c.isprintable() or c in "\t\n\r" for c in decoded)


def _aws_context(text: str, start: int, end: int) -> bool:
    """Whether a context word sits on the line of ``text[start:end]``, close before or after it."""
    lo = max(text.rfind("\n", 0, start) + 1, start - _CONTEXT_BEFORE)
    hi = text.find("\n", end)
    hi = min(len(text) if hi < 0 else hi, end + _CONTEXT_AFTER)
    return bool(_AWS_CONTEXT_RE.search(text, lo, start) or _AWS_CONTEXT_RE.search(text, end, hi))


def _placeholder(raw: str, value: str) -> bool:
    """Whether a value is a stand-in (``<...>``, ``${VAR}``, ``***``, ``xxx``, ``your-...``)."""
    if _PLACEHOLDER_RE.fullmatch(raw) or _PLACEHOLDER_RE.fullmatch(value):
        return True
    norm = re.sub(r"[^a-z0-9]", "", value.lower())
    return ("***" in value or "..." in value or not norm or norm.startswith(("xxx", "your"))
            or norm.endswith("here") or "redacted" in norm or "placeholder" in norm)


def _url_password(m: re.Match[str]) -> bool:
    """Whether the password of a ``scheme://user:password@host`` match is a real one."""
    pw = m.group("pw")
    return not (_placeholder(pw, pw) or pw.lower() in _URL_PLACEHOLDERS or pw == m.group("user"))


def _bearer(m: re.Match[str]) -> bool:
    """Whether the b64token of a ``Bearer`` match looks like a real token (RFC 6750)."""
    tok = m.group("tok")
    if _placeholder(tok, tok):
        return False
    if tok.startswith("eyJ") and len(tok) >= 13:
        return True
    random = any(c.isdigit() for c in tok) or (tok.lower() != tok and tok.upper() != tok)
    return random and len(tok) >= (8 if m.group("auth") else 20)


def _prose_password(m: re.Match[str], text: str) -> bool:
    """Whether the word after "password is" (match ``m`` of ``_PROSE_PASSWORD_RE``) is a password."""
    raw, quote = m.group("val"), m.group("q")
    end = m.end("val")
    quoted = bool(quote) and text.startswith(quote, end)
    value = raw if quoted else raw.rstrip(".,;:!?)]}")
    low = value.lower()
    if (len(value) < 4 or _placeholder(raw, value) or low in _PROSE_WORDS or low in _PROSE_VALUES
            or _CODE_RE.match(value) or _DOTTED_RE.fullmatch(value) or "://" in value
            or value.startswith(("/", "./", "../", "~/", "$"))):
        return False
    if low in _WEAK_PASSWORDS:
        return True
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    if (letters and digits) or any(not (c.isalnum() or c in "-_.") for c in value):
        return True
    if value == low and low.endswith(_PROSE_SUFFIXES):  # "is encrypted", "is sensitive"
        return False
    # Letters only, or digits only: a password when quoted or when it ends the clause.
    return quoted or value != raw or _LINE_END_RE.match(text, end) is not None


def _prose_secret(m: re.Match[str]) -> bool:
    """Whether the word after "secret is", "token was", "密钥是" (match ``m`` of
    ``_PROSE_SECRET_RE``) is a credential: at least 16 characters with a digit, and mixed-case
    letters or a base64/URL-safe symbol (``+ / = _ -``) among letters, or 32 or more hex digits
    (an API token); never a placeholder, code, a dotted name, a URL or a path."""
    raw = m.group("val")
    value = raw.rstrip(".,;:!?)]}\"'`")
    if (len(value) < 16 or _placeholder(raw, value) or _CODE_RE.match(value) or _DOTTED_RE.fullmatch(value)
            or "://" in value or value.startswith(("/", "./", "../", "~/", "$"))):
        return False
    if not any(c.isdigit() for c in value):
        return False
    if _HEX_RE.fullmatch(value):
        return len(value) >= 32
    letters = any(c.isalpha() for c in value)
    mixed = value.lower() != value and value.upper() != value
    return mixed or (letters and any(c in "+/=_-" for c in value))


def _credential_like(raw: str, value: str, *, password: bool, strong: bool) -> bool:
    """Whether an assigned ``value`` (``raw`` before trailing punctuation was cut) is a credential.

    ``password`` says the key is a password key; ``strong`` says the value is quoted or
    in a ``KEY=value`` line, i.e. plainly data and not prose.
    """
    if len(value) < 6 or _PLACEHOLDER_RE.fullmatch(raw) or _PLACEHOLDER_RE.fullmatch(value):
        return False
    low = value.lower()
    norm = re.sub(r"[^a-z0-9]", "", low)
    if ("***" in value or "..." in value or not norm or norm.startswith(("xxx", "your"))
            or norm.endswith("here") or "redacted" in norm or "placeholder" in norm):
        return False
    if (_CODE_RE.match(value) or _DOTTED_RE.fullmatch(value) or "://" in value
            or value.startswith(("/", "./", "../", "~/"))
            or ("/" in value and _PATH_CHARS_RE.fullmatch(value) and _FILE_EXT_RE.search(value))):
        return False
    if password and low in _WEAK_PASSWORDS:
        return True
    if any(c.isdigit() or not (c.isalpha() or c in "-_.") for c in value):
        return True
    # Letters (and - _ .) only: a prose word unless plainly data.
    return (strong and len(value) >= 8 and not value.isupper() and "_" not in value
            and "." not in value and norm not in _PROSE_VALUES)


# A .env / shell assignment: NAME=value (tight "="), NAME holding a credential word (DB_PASS, SECRET_KEY_BASE,
# ENCRYPTION_KEY, GITHUB_TOKEN): the 12-factor app's config-in-the-environment form.
_ENV_LINE_RE = compiled(
    r"(?<![^\s;'\"`])(?:export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)="
    r"(?P<q>[\"']?)(?P<val>[\x21\x23-\x26\x28-\x7e]+)"
    r"(?P=q)(?=[ \t]*(?:#[^\n]*)?$|[ \t;,])", re.MULTILINE)
_ENV_PASSWORD_PARTS = frozenset(("pass", "password", "passwd", "pwd", "passphrase", "pw"))
_ENV_SECRET_PARTS = frozenset(("secret", "secrets", "token", "credential", "credentials", "apikey", "private",
                               "salt", "signing"))


def _env_line(m: re.Match[str]) -> tuple[int, int, str] | None:
    """The (start, end, kind) of a credential in a ``NAME=value`` line, or None."""
    parts = [p for p in re.split(r"[_.-]+", m.group("name").lower()) if p]
    if not parts:
        return None
    password = any(p in _ENV_PASSWORD_PARTS for p in parts)
    if not (password or parts[-1] in ("key", "keys") or any(p in _ENV_SECRET_PARTS for p in parts)):
        return None
    raw = m.group("val")
    if not password and not any(p in _ENV_SECRET_PARTS for p in parts) and len(raw) < 16:
        return None  # NAME_KEY=short: a cache key or a sort key, not a key
    if not _credential_like(raw, raw, password=password, strong=True):
        return None
    return m.start("val"), m.end("val"), PASSWORD if password else GENERIC


def _assignment(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    """The (start, end, kind) of a credential assigned in match ``m``, or None."""
    key, raw, quote = m.group("key"), m.group("val"), m.group("q")
    end = m.end("val")
    quoted = bool(quote) and text.startswith(quote, end)
    value = raw if quoted else raw.rstrip(".,;:!?)]}")
    # A KEY=value line: tight "=", unquoted, nothing but a comment after, only a name before.
    # Checked lazily and cheaply: at most one match per line gets to the prefix scan.
    env_line = (m.group("sep") == "=" and not m.group("pre") and not m.group("gap") and not quote
                and value == raw and _LINE_END_RE.match(text, end) is not None
                and _ENV_PREFIX_RE.fullmatch(text, text.rfind("\n", 0, m.start()) + 1, m.start())
                is not None)
    password = key.lower() in _PASSWORD_KEYS
    if not _credential_like(raw, value, password=password, strong=quoted or env_line):
        return None
    return m.start("val"), end, PASSWORD if password else GENERIC


def candidates(text: str) -> list[tuple[int, int, int, str]]:
    """Every match of memcli's own rules in ``text``: ``(priority, start, end, kind)``, overlapping.

    A lower priority wins an overlap (a token's own rule 0, Chinese ids 1, cards 2, SSNs 3,
    assignments and prose 4); ``memcli.text.secrets`` merges these with the other sources.
    """
    # (priority, start, end, kind): lower priority wins an overlap.
    cands: list[tuple[int, int, int, str]] = []
    for kind, regex, check in _TOKEN_RULES:
        for m in regex.finditer(text):
            if check is None or check(m.group()):
                cands.append((0, m.start(), m.end(), kind))
    for m in _AWS_SECRET_NAMED_RE.finditer(text):
        name = m.group(1).lower()
        if ("aws" in name or "secret" in name) and _aws_secret_ok(m.group(2)):
            cands.append((0, m.start(2), m.end(2), AWS_SECRET))
    line_done = -1  # end of the last line already scanned for a key id's secret
    for m in _AWS_KEY_ID_RE.finditer(text):
        if m.start() < line_done:
            continue
        lo = text.rfind("\n", 0, m.start()) + 1
        hi = text.find("\n", m.end())
        line_done = hi = hi if hi >= 0 else len(text)
        for s in _AWS_SECRET_BARE_RE.finditer(text, lo, hi):
            if _aws_secret_ok(s.group()):
                cands.append((0, s.start(), s.end(), AWS_SECRET))
    for m in _AWS_SECRET_ALONE_RE.finditer(text):
        if _aws_context(text, m.start(), m.end()) and _aws_secret_alone_ok(m.group()):
            cands.append((0, m.start(), m.end(), AWS_SECRET))
    for m in _CN_ID_RE.finditer(text):
        if _cn_id_ok(m.group().replace(" ", "").replace("-", "")):
            cands.append((1, m.start(), m.end(), CN_ID))
    for m in _CARD_RE.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and _card_network_ok(digits) and _luhn_ok(digits):
            cands.append((2, m.start(), m.end(), CARD))
    for m in _SSN_RE.finditer(text):
        if _ssn_ok(*m.groups()):
            cands.append((3, m.start(), m.end(), SSN))
    for m in _SSN_LABELLED_RE.finditer(text):
        if _ssn_ok(m.group(1), m.group(3), m.group(4)):
            cands.append((3, m.start(1), m.end(4), SSN))
    for m in _ASSIGN_RE.finditer(text):
        found = _assignment(m, text)
        if found:
            cands.append((4, *found))
    for m in _ENV_LINE_RE.finditer(text):
        found = _env_line(m)
        if found:
            cands.append((4, *found))
    for m in _URL_CRED_RE.finditer(text):
        if _url_password(m):
            cands.append((4, m.start("pw"), m.end("pw"), URL_PASSWORD))
    for m in _BEARER_RE.finditer(text):
        if _bearer(m):
            cands.append((4, m.start("tok"), m.end("tok"), BEARER))
    for m in _PROSE_PASSWORD_RE.finditer(text):
        if _prose_password(m, text):
            cands.append((4, m.start("val"), m.end("val"), PASSWORD))
    for m in _PROSE_SECRET_RE.finditer(text):
        if _prose_secret(m):
            cands.append((4, m.start("val"), m.start("val") + len(m.group("val").rstrip(".,;:!?)]}\"'`")), GENERIC))
    return cands
