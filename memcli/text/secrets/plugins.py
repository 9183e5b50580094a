"""memcli's detect-secrets plugins: two of its maintained plugins, with the forms they miss.

Each class subclasses the detect-secrets plugin it widens and keeps that plugin's own
``denylist`` first (so a new upstream pattern comes with an upgrade), adding patterns in the
plugin interface detect-secrets documents for custom plugins (``RegexBasedDetector``: a
``secret_type`` and a ``denylist`` of compiled patterns; ``docs/plugins.md`` upstream).  They
can be given to detect-secrets' own CLI as they are
(``detect-secrets scan --plugin memcli/text/secrets/plugins.py``); memcli calls them from
``detector.py`` like the upstream plugins, only in a full scan, so importing this module
costs nothing more than detect-secrets itself.

* :class:`PrivateKeyDetector`: upstream knows ``PuTTY-User-Key-File-2`` only; PuTTY 0.75
  (2021) writes version 3 (``PuTTY-User-Key-File-3: ssh-ed25519``, with ``Key-Derivation:
  Argon2id``), PuTTY's manual, appendix C "PPK file format": the header line is
  ``PuTTY-User-Key-File-<version>: <algorithm>``.  Any version is taken, in any case, when
  an algorithm name follows (prose naming the format, "PuTTY-User-Key-File-3 files",
  is not a key).  The RFC 4716 SSH2 armour (``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``)
  in any case and spacing as well.  PEM armour in any case and spacing is memcli's own
  rule (``rules.py``), which the hot path runs too.
* :class:`AzureStorageKeyDetector`: upstream takes ``AccountKey=`` and 88 characters,
  exactly so spelled.  A storage account key is 64 random bytes, 88 characters of base64
  ending ``==`` (Azure Storage documentation, "Manage storage account access keys"); also
  found after ``accountkey``, ``account_key``, ``AccountKey :``, ``"AccountKey": "``, and the
  Azure CLI's ``--account-key`` flag, with spaces or quotes between.
"""

from __future__ import annotations

import re

from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector as _UpstreamAzure
from detect_secrets.plugins.private_key import PrivateKeyDetector as _UpstreamPrivateKey


class PrivateKeyDetector(_UpstreamPrivateKey):
    """detect-secrets' ``PrivateKeyDetector`` plus PuTTY key files of any version and lax SSH2 armour."""

    denylist = [
        *_UpstreamPrivateKey.denylist,
        re.compile(r"(?i:PuTTY-User-Key-File-[0-9]+)[ \t]*:[ \t]*[A-Za-z0-9][A-Za-z0-9@.+-]*"),
        re.compile(r"(?<!-)----[ \t]*(?i:begin)[ \t]+(?i:ssh2)[ \t]+(?:(?i:encrypted)[ \t]+)?(?i:private)[ \t]+"
                   r"(?i:key)[ \t]*----(?!-)"),
    ]


class AzureStorageKeyDetector(_UpstreamAzure):
    """detect-secrets' ``AzureStorageKeyDetector`` plus the key after any spelling of its name."""

    denylist = [
        *_UpstreamAzure.denylist,
        re.compile(r"(?<![A-Za-z0-9_])(?i:account[_-]?key|--account-key)[\"']?[ \t]*[=:]?[ \t]*[\"']?"
                   r"[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])"),
    ]
