"""Agent-facing formats: the context block, hook payloads, transcripts, rule files."""
