"""Files on disk: safe paths, atomic writes, the workspace and its lock."""
