"""The names of the kinds of secret memcli's own rules report (plain strings, no rule loaded).

Kept apart from ``rules.py`` so that naming a kind (``secrets.PEM``, a marker's slug) does not
compile the rules: a read of text that the prefilter (``prefilter.py``) clears never loads them.
"""

from __future__ import annotations

PEM = "private key (PEM)"
AWS_KEY_ID = "AWS access key id"
AWS_SECRET = "AWS secret access key"
GITHUB = "GitHub token"
SLACK = "Slack token"
OPENAI = "OpenAI API key"
ANTHROPIC = "Anthropic API key"
GOOGLE = "Google API key"
STRIPE = "Stripe key"
JWT = "JSON web token"
CN_ID = "Chinese resident ID number"
CARD = "payment card number"
SSN = "US social security number"
PASSWORD = "password"
URL_PASSWORD = "password in a URL"
BEARER = "bearer token"
GENERIC = "generic API key/token assignment"
