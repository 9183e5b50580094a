"""memcli: long-term memory for coding agents, kept as Markdown files under git."""

__version__ = "0.1.0"
