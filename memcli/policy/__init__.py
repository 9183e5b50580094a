"""The write gates of SPEC.md section 3: scopes, review, sensitive data, duplicates."""
