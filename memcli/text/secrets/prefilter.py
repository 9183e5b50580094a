"""A cheap prefilter in front of the secret rules: which rules can possibly match a text.

Compiling the rules is most of what a scan costs (detect-secrets' plugins import
``requests`` and compile their patterns, about 0.1-0.3 s; memcli's own rules about 20 ms),
and almost every memory text holds no secret.  So a scan first asks this module, on the
same scan view the rules see (``text.hidden.scan_view``), which rules can match at all:

* :data:`OWN_ANCHORS`: one pattern per rule of ``rules.py`` and ``tokens.py``, each a
  part that every match of that rule contains (a literal prefix such as ``ghp_``, the
  keyword of an assignment, ``[0-9]{6}`` for an 18-digit id);
* :data:`PLUGIN_ANCHORS`: for each detect-secrets plugin (``detector.PLUGINS``), one
  factor per pattern of its ``denylist``: a piece of that very pattern, copied from its
  source, that every match of the pattern contains, searched with the pattern's flags.

A text none of whose anchors occur gets no rule run and no rule module imported; a text
that holds one runs memcli's own rules (all of them, when any own anchor occurs) and the
plugins whose anchors occur.  An anchor is a necessary condition, never a sufficient one:
the rules still decide.  So the prefilter can only make a scan cheaper, never miss what the
full scan finds.  ``tests/test_secrets_prefilter.py`` proves it: every denylist pattern of
the installed detect-secrets is pinned (an upgrade that changes one fails until its anchor
is checked again), each factor is a substring of its pattern, and for every corpus text and
for generated texts (every corpus secret embedded in random text, strings generated from
each rule's own pattern) a prefiltered scan equals the full one.
"""

from __future__ import annotations

import re
from functools import cache

from memcli.text.recache import compiled

#: Parts that every match of one of memcli's own rules contains (``rules.py``, ``tokens.py``);
#: a rule's name, then the alternatives that cover its pattern(s).
OWN_ANCHORS: tuple[tuple[str, str], ...] = (
    # rules._TOKEN_RULES
    ("PEM armour", r"-----"),
    ("AWS key id", r"AKIA|ASIA|ABIA|ACCA"),
    ("GitHub", r"gh[pousr]_|github_pat_"),
    ("Slack", r"xox[abposr]-"),
    ("OpenAI, Anthropic", r"sk-"),
    ("Google", r"AIza"),
    ("Stripe", r"(?:sk|rk)_(?:live|test)_"),
    ("JWT", r"eyJ"),
    # AWS secret keys (named, next to a key id, or alone with context): 40 characters of base64
    ("AWS secret", r"[A-Za-z0-9/+]{40}"),
    # Chinese resident id: 17 digits and a check character, or grouped 6-8-4
    ("CN id", r"[0-9]{6}"),
    # cards: 13-19 digits, or 4-digit-led groups split by a space or hyphen
    ("card", r"[0-9]{13}|[0-9]{4}[ -][0-9]{4}"),
    ("SSN", r"[0-9]{3}-[0-9]{2}-[0-9]{4}"),
    ("SSN labelled", r"(?i:ssn|ss\#|social)"),
    # assignments (rules._ASSIGN_RE's keys) and passwords in prose (rules._PROSE_PASSWORD_RE)
    ("assignment, prose", r"(?i:pass|pwd|secret|api[_-]?key|token)|密码|口令"),
    # secrets in prose (rules._PROSE_SECRET_RE) beyond those keys
    ("prose secret", r"(?i:(?:api|access|secret|private|signing)[ _-]?key|credential)|密钥|秘钥|令牌|私钥"),
    # NAME=value lines: rules._env_line keeps a name only with one of these parts (ASCII names)
    ("env line", r"(?i:pw|pass|secret|token|credential|private|salt|signing|key)[A-Za-z0-9_.-]*="),
    ("URL password, webhooks", r"://"),
    ("bearer", r"(?i:bearer)"),
    # tokens.TOKEN_RULES: each provider's prefix
    ("GitLab", r"(?:glpat|gldt|glft|glsoat|glrt|glptt|glagent|gloas)-"),
    ("npm", r"npm_"),
    ("Hugging Face", r"hf_"),
    ("Vault", r"(?:hvs|hvb|hvr)\."),
    ("Google OAuth", r"GOCSPX-"),
    ("PyPI", r"pypi-AgE"),
    ("SendGrid", r"SG\."),
    ("Shopify", r"shp(?:at|ca|pa|ss)_"),
    ("DigitalOcean", r"do[opr]_v1_"),
    ("Databricks", r"dapi"),
    ("Linear", r"lin_api_"),
    ("Postman", r"PMAK-"),
    ("age", r"AGE-SECRET-KEY-1"),
    ("Grafana", r"glsa_|glc_"),
    ("New Relic", r"NR(?:AK|AA|II)-"),
    ("Doppler", r"dp\.(?:pt|st|sa|ct|scim|audit)\."),
    ("Atlassian", r"ATATT3"),
    ("Sentry", r"sntryu_|sntrys_eyJ"),
    ("Pulumi", r"pul-"),
    ("Terraform", r"\.atlasv1\."),
    ("Alibaba", r"LTAI"),
    ("Fly.io", r"fo1_|fm[12][ar]?_"),
    ("PlanetScale", r"pscale_"),
    ("Mapbox", r"sk\.eyJ"),
    ("Figma", r"figd_"),
    ("Supabase", r"sbp_"),
    ("Heroku", r"HRKU-AA"),
    # tokens.command_spans
    ("Basic auth", r"(?i:basic)"),
    ("Docker auth", r"auth[\"']"),
    ("command-line password", r"mysql|mariadb|sshpass|redis-cli|--password[= ]"),
    ("curl -u", r"-u[= \t]|--user[= \t]"),
)

#: For each plugin of ``detector.PLUGINS`` (by class name), one entry per pattern of its
#: ``denylist``, in order: factors of that pattern, each a substring of the pattern's source
#: that every match contains (a factor of its top-level sequence), all of which must occur,
#: searched with that pattern's flags (``IGNORECASE`` where the plugin compiles it so).
PLUGIN_ANCHORS: dict[str, tuple[tuple[str, ...], ...]] = {
    "PrivateKeyDetector": (
        *(("PRIVATE KEY",),) * 7, ("PuTTY-User-Key-File-2",), ("(?i:PuTTY-User-Key-File-[0-9]+)",), ("(?i:ssh2)",)),
    "AWSKeyDetector": (("(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",), ("aws", "[0-9a-zA-Z/+]{40}")),
    "ArtifactoryDetector": (("AKC[a-zA-Z0-9]{10,}",), (r"AP[\dABCDEF][a-zA-Z0-9]{8,}",)),
    "AzureStorageKeyDetector": (("AccountKey=",), ("(?i:account[_-]?key|--account-key)", "[A-Za-z0-9+/]{86}==")),
    "CloudantDetector": (
        ("(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)", "[0-9a-f]{64}"),
        ("(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)", "[a-z]{24}"),
        (r"\.cloudant\.com",), (r"\.cloudant\.com",)),
    "DiscordBotTokenDetector": ((r"[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}",),),
    "GitHubTokenDetector": (("(ghp|gho|ghu|ghs|ghr)_",),),
    "GitLabTokenDetector": (("(glpat|gldt|glft|glsoat|glrt)-",), ("GR1348941",), ("glcbt-",), ("glimt-",), ("glptt-",),
                            ("glagent-",), ("gloas-",)),
    "IbmCloudIamDetector": (("(?:key|pwd|password|pass|token)", r"[a-zA-Z0-9_\-]{44}"),),
    "IbmCosHmacDetector": (("(?:secret[-_]?(?:access)?[-_]?key)", "[a-f0-9]{48}"),),
    "JwtTokenDetector": (("eyJ",),),
    "MailchimpDetector": (("-us[0-9]{1,2}", "[0-9a-z]{32}"),),
    "NpmDetector": ((":_authToken=",),),
    "OpenAIDetector": (("T3BlbkFJ",),),
    "PypiTokenDetector": (("pypi-AgEIcHlwaS5vcmc",), ("pypi-AgENdGVzdC5weXBpLm9yZw",)),
    "SendGridDetector": ((r"SG\.",),),
    "SlackDetector": (("xox(?:a|b|p|o|s|r)-",), (r"https://hooks\.slack\.com/services/",)),
    "SoftlayerDetector": (
        ("(?:softlayer|sl)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)", "[a-z0-9]{64}"),
        ("api.softlayer.com/soap/",)),
    "SquareOAuthDetector": (("sq0csp-",),),
    "StripeDetector": (("k_live_",),),
    "TelegramBotTokenDetector": ((r"\d{8,10}:[0-9A-Za-z_-]{35}",),),
    "TwilioKeyDetector": (("AC[a-z0-9]{32}",), ("SK[a-z0-9]{32}",)),
}

#: The flags each plugin compiles its patterns with where they are not the default; a plugin
#: not named here uses none (``re.UNICODE`` is implied for text patterns).  Checked against
#: the installed plugins by the tests.
PLUGIN_FLAGS: dict[str, tuple[int, ...]] = {
    "AWSKeyDetector": (0, re.IGNORECASE),
    "CloudantDetector": (re.IGNORECASE,) * 4,
    "IbmCloudIamDetector": (re.IGNORECASE,),
    "IbmCosHmacDetector": (re.IGNORECASE,),
    "SlackDetector": (re.IGNORECASE, re.IGNORECASE | re.VERBOSE),
    "SoftlayerDetector": (re.IGNORECASE, re.IGNORECASE),
}


def _flags(name: str) -> tuple[int, ...]:
    return PLUGIN_FLAGS.get(name, (0,) * len(PLUGIN_ANCHORS[name]))


def _alternative(factor: str, flags: int) -> str:
    # VERBOSE only changes how whitespace and # in a pattern read; no factor holds either (tested)
    return f"(?i:{factor})" if flags & re.IGNORECASE else f"(?:{factor})"


@cache
def _any() -> re.Pattern[str]:
    """One pattern for "some anchor occurs" (the common answer, no, in one search)."""
    parts = [f"(?:{pattern})" for _, pattern in OWN_ANCHORS]
    for name, entries in PLUGIN_ANCHORS.items():
        parts += [_alternative(factors[0], flags) for factors, flags in zip(entries, _flags(name))]
    return compiled("|".join(parts))


@cache
def _own() -> re.Pattern[str]:
    return compiled("|".join(f"(?:{pattern})" for _, pattern in OWN_ANCHORS))


@cache
def _plugins() -> tuple[tuple[str, tuple[tuple[re.Pattern[str], ...], ...]], ...]:
    """Each plugin's name and, per pattern of its denylist, its factors compiled."""
    return tuple((name, tuple(tuple(compiled(_alternative(f, flags)) for f in factors)
                              for factors, flags in zip(entries, _flags(name))))
                 for name, entries in PLUGIN_ANCHORS.items())


def _possible(view: str, entries: tuple[tuple[re.Pattern[str], ...], ...]) -> bool:
    return any(all(f.search(view) is not None for f in factors) for factors in entries)


def screen(view: str, *, plugins: bool = True) -> tuple[bool, frozenset[str]]:
    """Which rules can match ``view`` (a text as ``text.hidden.scan_view`` gives it).

    Args:
        view: the scan view of a text (the rules are run on that same view).
        plugins: also say which detect-secrets plugins can match (a full scan).

    Returns:
        ``(own, names)``: whether any of memcli's own rules can match, and the class names
        (``detector.PLUGINS``) of the plugins that can; ``(False, frozenset())`` for most texts.
    """
    if not plugins:  # memcli's own anchors alone: one search of half the alternatives
        return _own().search(view) is not None, frozenset()
    if _any().search(view) is None:
        return False, frozenset()
    own = _own().search(view) is not None
    return own, frozenset(name for name, entries in _plugins() if _possible(view, entries))
