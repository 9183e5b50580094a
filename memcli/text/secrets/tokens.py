"""Provider tokens with a documented prefix, and credentials on a command line or in a header.

A table of data: ``(kind, slug, regex)``.  Each regex is the provider's published token
shape (its prefix and the length of the random part), matched standing alone (not glued to
a longer identifier).  The shapes follow the providers' documentation as gathered in
gitleaks' rule set (``config/gitleaks.toml``, MIT), re-written here for Python's ``re``.
They complement detect-secrets' plugins (see ``detector.py``), which do not know these.

Command lines and headers (RFC 7617 ``Authorization: Basic``; ``mysql -pPASS``;
``curl -u user:pass``; Docker's ``config.json`` ``"auth": "base64(user:pass)"``) are
matched with a check that the value is not a placeholder.
"""

from __future__ import annotations

import re

from memcli.text.recache import compiled

# A token stands alone: no identifier character right before it or right after it.
_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"

#: ``(kind, slug, regex)`` for tokens recognised by their prefix.
TOKEN_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, slug, compiled(pattern)) for kind, slug, pattern in (
        ("GitLab token", "gitlab-token",
         _B + r"(?:glpat|gldt|glft|glsoat|glrt|glptt|glagent|gloas)-[A-Za-z0-9_-]{20,64}" + r"(?![A-Za-z0-9_-])"),
        ("npm access token", "npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
        # hf_ and 34 or more letters and digits (gitleaks: letters, 34; the tokens seen since hold digits
        # too); not one case of letters alone (hf_ followed by a word run together is no token).
        ("Hugging Face token", "huggingface-token",
         _B + r"hf_(?![a-z]+" + _E + r"|[A-Z]+" + _E + r")[A-Za-z0-9]{34,}" + _E),
        ("HashiCorp Vault token", "vault-token", _B + r"(?:hvs|hvb|hvr)\.[A-Za-z0-9_-]{24,}" + _E),
        ("Google OAuth client secret", "google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_-]{28}" + r"(?![A-Za-z0-9_-])"),
        ("PyPI token", "pypi-token", _B + r"pypi-AgE[A-Za-z0-9_-]{50,}"),
        ("SendGrid API key", "sendgrid-key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + r"(?![A-Za-z0-9_-])"),
        ("Shopify token", "shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E),
        ("DigitalOcean token", "digitalocean-token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E),
        ("Databricks token", "databricks-token", _B + r"dapi[a-f0-9]{32}(?:-[0-9])?" + _E),
        ("Linear API key", "linear-key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E),
        ("Postman API key", "postman-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E),
        ("age secret key", "age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
        ("Grafana token", "grafana-token",
         _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})" + _E),
        ("New Relic key", "newrelic-key", _B + r"NR(?:AK|AA|II)-[A-Z0-9]{27}" + _E),
        ("Doppler token", "doppler-token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E),
        ("Atlassian API token", "atlassian-token", _B + r"ATATT3[A-Za-z0-9_=-]{150,}"),
        ("Sentry token", "sentry-token", _B + r"(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_-]{60,})"),
        ("Pulumi token", "pulumi-token", _B + r"pul-[a-f0-9]{40}" + _E),
        ("Terraform Cloud token", "terraform-token", _B + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}"),
        ("Alibaba Cloud access key id", "alibaba-key-id", _B + r"LTAI[A-Za-z0-9]{20}" + _E),
        ("Fly.io token", "flyio-token", _B + r"(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})"),
        ("PlanetScale token", "planetscale-token", _B + r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_.=-]{32,64}"),
        ("Mapbox secret token", "mapbox-token", _B + r"sk\.eyJ[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{20,}"),
        ("Figma token", "figma-token", _B + r"figd_[A-Za-z0-9_-]{40}" + r"(?![A-Za-z0-9_-])"),
        ("Supabase token", "supabase-token", _B + r"sbp_[a-f0-9]{40}" + _E),
        ("Heroku API key", "heroku-key", _B + r"HRKU-AA[A-Za-z0-9_-]{58}"),
        ("Discord webhook URL", "discord-webhook",
         r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{10,20}/[A-Za-z0-9_-]{60,}"),
        ("Microsoft Teams webhook URL", "teams-webhook",
         r"https://[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/-]{40,}"),
        ("Slack webhook URL", "slack-webhook",
         r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"),
    ))

# Authorization: Basic base64(user:password) (RFC 7617).
_BASIC_RE = compiled(r"(?<![A-Za-z0-9_])(?i:basic)[ \t]+(?P<tok>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
# Docker's ~/.docker/config.json: "auths": {"host": {"auth": "base64(user:password)"}}.
_DOCKER_RE = compiled(r"[\"']auth[\"'][ \t]*:[ \t]*[\"'](?P<tok>[A-Za-z0-9+/]{8,}={0,2})[\"']")
# mysql -pPASS / --password=PASS; sshpass -p PASS; PGPASSWORD=...; redis-cli -a PASS.
_CMD_PASSWORD_RE = compiled(
    r"(?<![A-Za-z0-9_-])(?:(?:mysql|mysqldump|mariadb|mysqladmin)\b[^\n]*?[ \t]-p(?P<glued>[^\s'\"]{3,}|'[^'\n]{3,}'"
    r"|\"[^\"\n]{3,}\")"
    r"|(?:sshpass[ \t]+-p|redis-cli\b[^\n]*?[ \t]-a)[ \t]+(?P<sep>[^\s'\"]{3,}|'[^'\n]{3,}'|\"[^\"\n]{3,}\")"
    r"|--password[= ](?P<long>[^\s'\"]{3,}|'[^'\n]{3,}'|\"[^\"\n]{3,}\"))")
# curl -u user:password / --user user:password (and wget --http-password).
_CMD_USER_RE = compiled(
    r"(?<![A-Za-z0-9_-])(?:-u|--user)(?:=|[ \t]+)(?P<q>['\"]?)(?P<user>[^\s:'\"]{1,64}):(?P<pw>[^\s'\"]{3,})(?P=q)")
_PLACEHOLDER_RE = compiled(r"(?i)<.*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*+|x{3,}|\.\.\.|%[A-Za-z_]+%"
                             r"|(?:your|my)[-_]?(?:password|pass|secret|token)|password|pass|secret|pwd|changeme")


def _placeholder(value: str) -> bool:
    """Whether a command-line value is a stand-in (``$PASS``, ``<password>``, ``***``, ``password``)."""
    return _PLACEHOLDER_RE.fullmatch(value.strip("'\"")) is not None


def _basic_ok(token: str) -> bool:
    """Whether a ``Basic`` token decodes to ``user:password`` (RFC 7617 section 2)."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep) and bool(password) and decoded.isprintable() and not _placeholder(password)


def command_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of credentials in headers, Docker auth entries and command lines."""
    out: list[tuple[int, int, str]] = []
    for m in _BASIC_RE.finditer(text):
        if _basic_ok(m.group("tok")):
            out.append((m.start("tok"), m.end("tok"), BASIC))
    for m in _DOCKER_RE.finditer(text):
        if _basic_ok(m.group("tok")):
            out.append((m.start("tok"), m.end("tok"), DOCKER))
    for m in _CMD_PASSWORD_RE.finditer(text):
        group = next(g for g in ("glued", "sep", "long") if m.group(g) is not None)
        if not _placeholder(m.group(group)):
            out.append((m.start(group), m.end(group), CMD_PASSWORD))
    for m in _CMD_USER_RE.finditer(text):
        if not _placeholder(m.group("pw")) and m.group("pw") != m.group("user"):
            out.append((m.start("pw"), m.end("pw"), CMD_PASSWORD))
    return out


BASIC = "basic auth credentials"
DOCKER = "Docker registry auth"
CMD_PASSWORD = "password on a command line"
#: ``(kind, slug)`` of the kinds :func:`command_spans` reports.
COMMAND_KINDS = ((BASIC, "basic-auth"), (DOCKER, "docker-auth"), (CMD_PASSWORD, "command-line-password"))
