"""Which files an agent's tool call is about to read or edit, from a PreToolUse hook's input.

Pure: no I/O. Sources:

* Claude Code (hooks reference, PreToolUse): ``tool_name`` and ``tool_input``; the file
  tools are ``Read``, ``Edit``, ``MultiEdit`` and ``Write`` (``tool_input.file_path``,
  an absolute path) and ``NotebookEdit`` (``tool_input.notebook_path``).
* Codex CLI 0.171 (the ``pre-tool-use.command.input`` schema embedded in the binary;
  openai/codex ``codex-rs/hooks``): file edits go through ``apply_patch``, matched by
  hooks also as ``Edit`` and ``Write``, whose input holds the patch text; each file it
  touches is named on a ``*** Add File: PATH``, ``*** Update File: PATH``,
  ``*** Delete File: PATH`` or ``*** Move to: PATH`` line, relative to the working folder.
"""

from __future__ import annotations

import re

#: Claude Code's file tools and the ``tool_input`` keys that name their file.
CLAUDE_FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
                     "NotebookEdit": "notebook_path"}
#: Codex's editing tool (its hook matcher aliases are ``Edit`` and ``Write``).
CODEX_PATCH_TOOLS = ("apply_patch",)
#: Files taken from one patch at most.
MAX_FILES = 20
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)


def files_of(tool_name: str, tool_input: object) -> list[str]:
    """The files a tool call reads or edits, as the agent named them (absolute or relative
    to its working folder); empty for any other tool or a malformed input.

    Args:
        tool_name: the hook input's ``tool_name``.
        tool_input: the hook input's ``tool_input`` (any JSON value).
    """
    if not isinstance(tool_input, dict):
        return []
    key = CLAUDE_FILE_TOOLS.get(tool_name)
    if key is not None:
        value = tool_input.get(key)
        return [value] if isinstance(value, str) and value.strip() and "\0" not in value else []
    if tool_name in CODEX_PATCH_TOOLS:
        texts = [v for v in tool_input.values() if isinstance(v, str)]
        found = [m.group(1) for text in texts for m in _PATCH_FILE.finditer(text)]
        return [f for f in dict.fromkeys(found) if "\0" not in f][:MAX_FILES]
    return []
