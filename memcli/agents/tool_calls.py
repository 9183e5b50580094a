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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.guards import Call

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


# --- tool calls in Claude Code's terms, for guards (``memcli.guards``) ----------------------

#: Each agent's tool names -> Claude Code's (the names guard patterns use). Claude Code's own
#: map to themselves. Codex 0.171: its hooks name the shell tool ``Bash`` (``tool_input.command``)
#: and the patch tool ``apply_patch``; the model-facing names of its shell tools (``shell``,
#: ``local_shell``, ``exec_command``, ``unified_exec``, ``container.exec``) are taken too, with a
#: ``command`` that is a string or an argument list. Gemini CLI 0.61 (its bundled tool names,
#: ``*_TOOL_NAME``, and parameter names): ``run_shell_command`` (``command``), ``read_file``,
#: ``read_many_files``, ``write_file``, ``replace`` (``file_path``), ``web_fetch`` (URLs inside
#: ``prompt``).
TOOL_NAMES: dict[str, dict[str, str]] = {
    "claude": {"Bash": "Bash", "Read": "Read", "Edit": "Edit", "MultiEdit": "MultiEdit", "Write": "Write",
               "NotebookEdit": "NotebookEdit", "WebFetch": "WebFetch"},
    "codex": {"Bash": "Bash", "shell": "Bash", "local_shell": "Bash", "exec_command": "Bash",
              "unified_exec": "Bash", "container.exec": "Bash", "apply_patch": "Edit", "Edit": "Edit",
              "Write": "Write", "Read": "Read", "WebFetch": "WebFetch"},
    "gemini": {"run_shell_command": "Bash", "read_file": "Read", "read_many_files": "Read", "write_file": "Write",
               "replace": "Edit", "web_fetch": "WebFetch"},
}
_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
#: Why a tool call whose input is not in the form its agent sends cannot be matched against
#: guards (``Call.cut``): while a ``deny`` or ``ask`` guard on its tool is in force, the
#: pre-tool hook refuses (or asks about) it instead of letting it through unread.
MALFORMED = "{what}, so memcli cannot read what it acts on"
_SHELLS = ("sh", "bash", "zsh", "dash")


def _command_text(value: object) -> str:
    """A shell command as one line: a string as is; an argument list (Codex's ``["bash", "-lc",
    "npm i"]``) as its script when it is a shell's ``-c``, else its words joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
        if len(value) >= 3 and value[0].rsplit("/", 1)[-1] in _SHELLS and value[1] in ("-c", "-lc"):
            return value[2]
        import shlex

        return shlex.join(value)
    return ""


def call_of(agent: str, tool_name: str, tool_input: object) -> Call | None:
    """The tool call a pre-tool hook was told of, in Claude Code's terms (``memcli.guards.Call``),
    or None for a tool no guard pattern names (memcli has nothing to check or add then).

    Args:
        agent: the agent's name (``claude``, ``codex``, ``gemini``); an unknown one reads as Claude Code.
        tool_name: the hook input's ``tool_name``.
        tool_input: the hook input's ``tool_input`` (any JSON value).
    """
    from memcli.guards import Call

    tool = TOOL_NAMES.get(agent, TOOL_NAMES["claude"]).get(tool_name)
    if tool is None:
        return None
    if not isinstance(tool_input, dict):  # no agent sends this: never let it through a guard unread
        return Call(tool, cut=MALFORMED.format(what="its tool_input is not a JSON object"), malformed=True)
    if tool == "Bash":
        # every agent sends its shell command as "command" (Codex's exec_command: "cmd"); neither
        # (missing, or null) is no form an agent sends, and what the call runs cannot be read
        value = next((tool_input[k] for k in ("command", "cmd") if tool_input.get(k) not in (None, "")), None)
        if value is None and "" not in (tool_input.get("command"), tool_input.get("cmd")):
            return Call("Bash", cut=MALFORMED.format(what="it has no command"), malformed=True)
        command = _command_text(value)
        if value is not None and not command:
            return Call("Bash", cut=MALFORMED.format(what="its command is neither a string nor a list of strings"),
                        malformed=True)
        return Call("Bash", command=command)
    over = f"it names more than {MAX_FILES} files or addresses, the limit"
    if tool == "WebFetch":
        urls = [tool_input["url"]] if isinstance(tool_input.get("url"), str) else []
        urls += _URL.findall(tool_input.get("prompt") or "") if isinstance(tool_input.get("prompt"), str) else []
        return Call("WebFetch", urls=urls[:MAX_FILES], cut=over if len(urls) > MAX_FILES else "")
    paths = files_of(tool_name, tool_input)
    cut = ""
    if tool_name in CODEX_PATCH_TOOLS and len(paths) == MAX_FILES:
        texts = [v for v in tool_input.values() if isinstance(v, str)]
        if len({m.group(1) for text in texts for m in _PATCH_FILE.finditer(text)}) > MAX_FILES:
            cut = over
    if not paths:
        for key in ("file_path", "absolute_path", "path", "notebook_path"):
            if isinstance(tool_input.get(key), str) and tool_input[key].strip() and "\0" not in tool_input[key]:
                paths = [tool_input[key]]
                break
        else:
            listed = tool_input.get("paths") or tool_input.get("include")
            if isinstance(listed, list):
                paths = [p for p in listed if isinstance(p, str) and p and "\0" not in p]
                cut = over if len(paths) > MAX_FILES else ""
                paths = paths[:MAX_FILES]
    malformed = not paths and any(tool_input.get(k) not in (None, "") for k in (
        "file_path", "absolute_path", "path", "notebook_path", "paths", "include"))
    if malformed:
        cut = MALFORMED.format(what="its file path is not one memcli can read (a string without NUL)")
    # apply_patch is Edit (TOOL_NAMES), and Write too: it adds and replaces whole files, and Codex's hooks
    # match it by either name, so a Write(...) guard holds for the files a patch adds
    return Call(tool, paths=paths, cut=cut, malformed=malformed, writes=tool_name in CODEX_PATCH_TOOLS)


def call_key(call: Call) -> str:
    """A short fingerprint of a tool call in Claude Code's terms (16 hex digits of a SHA-256 of
    its tool and what it acts on, as the agent named it): the same for the call a pre-tool
    hook is told of and the one the agent's transcript records, so that the usage journal can
    tell a call its hook saw from one it never saw (``service.violations``). It holds no text."""
    import hashlib

    parts = [call.tool, call.command, *call.paths, "\0", *call.urls]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:16]
