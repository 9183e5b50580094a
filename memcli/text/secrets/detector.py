"""detect-secrets (Yelp, PyPI ``detect-secrets`` 1.5) as the maintained part of the secret gate.

Its pattern plugins are called on each line directly (``plugin.analyze_string(line)``, the
documented plugin interface), each kind mapped to a memcli kind.  Left out on purpose:

* the entropy plugins (``Base64HighEntropyString``, ``HexHighEntropyString``): they flag git
  hashes, UUIDs and content digests, which memories quote all the time;
* ``KeywordDetector``: memcli's own assignment rules (``rules.py``) cover its keywords with
  placeholder and prose checks tuned to memory text;
* ``IPPublicDetector``: a public IP address is not a credential;
* ``BasicAuthDetector``: memcli's ``password in a URL`` rule finds the same and passes
  placeholders and local defaults (``postgres://user:password@``, ``postgres:postgres``).

Importing detect-secrets costs about 0.1 s (it imports ``requests``), so this module is
loaded only by a full scan (a write, or the first read of a text, see ``service/redact.py``),
and a plugin is imported only when ``prefilter.py`` says it can match the text: most memory
text loads none.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

#: ``(module, class)`` of each plugin used, and the memcli kind and slug of what it finds; a module
#: without a dot is one of ``detect_secrets.plugins``; memcli's own widen two of them (``plugins.py``).
PLUGINS: tuple[tuple[str, str, str, str], ...] = (
    ("memcli.text.secrets.plugins", "PrivateKeyDetector", "private key", "private-key"),  # + PuTTY v3, lax SSH2
    ("aws", "AWSKeyDetector", "AWS access key id", "aws-key-id"),
    ("artifactory", "ArtifactoryDetector", "Artifactory credentials", "artifactory-token"),
    ("memcli.text.secrets.plugins", "AzureStorageKeyDetector", "Azure storage account key",
     "azure-storage-key"),  # + any spelling of AccountKey
    ("cloudant", "CloudantDetector", "Cloudant credentials", "cloudant-credentials"),
    ("discord", "DiscordBotTokenDetector", "Discord bot token", "discord-token"),
    ("github_token", "GitHubTokenDetector", "GitHub token", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "GitLab token", "gitlab-token"),
    ("ibm_cloud_iam", "IbmCloudIamDetector", "IBM Cloud IAM key", "ibm-cloud-iam-key"),
    ("ibm_cos_hmac", "IbmCosHmacDetector", "IBM COS HMAC credentials", "ibm-cos-hmac"),
    ("jwt", "JwtTokenDetector", "JSON web token", "jwt"),
    ("mailchimp", "MailchimpDetector", "Mailchimp API key", "mailchimp-key"),
    ("npm", "NpmDetector", "npm access token", "npm-token"),
    ("openai", "OpenAIDetector", "OpenAI API key", "openai-key"),
    ("pypi_token", "PypiTokenDetector", "PyPI token", "pypi-token"),
    ("sendgrid", "SendGridDetector", "SendGrid API key", "sendgrid-key"),
    ("slack", "SlackDetector", "Slack token", "slack-token"),
    ("softlayer", "SoftlayerDetector", "SoftLayer credentials", "softlayer-credentials"),
    ("square_oauth", "SquareOAuthDetector", "Square OAuth secret", "square-oauth-secret"),
    ("stripe", "StripeDetector", "Stripe key", "stripe-key"),
    ("telegram_token", "TelegramBotTokenDetector", "Telegram bot token", "telegram-token"),
    ("twilio", "TwilioKeyDetector", "Twilio API key", "twilio-key"),
)
#: Sub-kinds of the private-key plugin, by what its match starts with.
PUTTY, SSH2 = "PuTTY private key", "SSH2 private key"
_SLACK_WEBHOOK = "Slack webhook URL"


@cache
def _plugin(index: int) -> tuple[object, str]:
    """Plugin ``index`` of ``PLUGINS``, instantiated, with its memcli kind (imported on first use)."""
    from importlib import import_module

    module, name, kind, _slug = PLUGINS[index]
    cls = getattr(import_module(module if "." in module else f"detect_secrets.plugins.{module}"), name)
    return cls(), kind


def _plugins(names: frozenset[str] | None = None) -> list[tuple[object, str]]:
    """The plugin instances with their memcli kind, in ``PLUGINS`` order: all, or those whose class is in ``names``."""
    return [_plugin(i) for i, entry in enumerate(PLUGINS) if names is None or entry[1] in names]


def _kind(kind: str, match: str) -> str:
    """A finer kind for some plugin matches (PuTTY and SSH2 keys, Slack webhooks)."""
    if kind == "private key":
        if match.lower().startswith("putty"):
            return PUTTY
        if "SSH2" in match.upper():
            return SSH2
        return "private key (PEM)"
    if kind == "Slack token" and match.lower().startswith("https://"):
        return _SLACK_WEBHOOK
    return kind


def spans(text: str, placeholder: Callable[[str], bool],
          only: frozenset[str] | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every plugin match in ``text`` (already normalised for scanning).

    A span is the whole match of the plugin's pattern that produced the value it reports.

    Args:
        text: the text to scan; lines split on ``\\n``.
        placeholder: ``value -> bool``; values it accepts (``${TOKEN}``, ``<key>``) are dropped.
        only: class names of the plugins to run (those ``prefilter.screen`` says can match);
            None runs them all. A plugin left out is not imported.
    """
    plugins = _plugins(only)
    if not plugins:
        return []
    out: list[tuple[int, int, str]] = []
    offset = 0
    for line in text.split("\n"):
        if len(line.strip()) >= 8:
            for plugin, kind in plugins:
                values = {v for v in plugin.analyze_string(line) if v and not placeholder(v)}  # type: ignore[attr-defined]
                if not values:
                    continue
                for regex in plugin.denylist:  # type: ignore[attr-defined]
                    for m in regex.finditer(line):
                        start, end = m.span()
                        hit = next((v for v in values if v in m.group()), None)
                        if hit is None:
                            continue
                        out.append((offset + start, offset + end, _kind(kind, m.group())))
        offset += len(line) + 1
    return out


def kinds() -> list[tuple[str, str]]:
    """``(kind, slug)`` of everything :func:`spans` can report."""
    extra = [(PUTTY, "putty-private-key"), (SSH2, "ssh2-private-key"), (_SLACK_WEBHOOK, "slack-webhook")]
    return [(kind, slug) for *_, kind, slug in PLUGINS if kind != "private key"] + extra


def available() -> bool:
    """Whether detect-secrets can be imported (it is a dependency; a broken install says so)."""
    try:
        _plugins()
    except ImportError:
        return False
    return True

