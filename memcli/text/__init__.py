"""Text rules below the record: secrets (detection and redaction) and hidden characters.

Pure functions over strings, used by the record (``model.py``), git (``memcli/git/``), the
write gates and every read channel.  The package imports nothing else of memcli
(``tests/test_layers.py``).
"""
