"""What a memory points at in the code: files, identifiers and commands (SPEC.md section 11).

A memory about code names it: "Payment retries go through `retry_with_backoff` in
src/payments/retry.py; run `make e2e` after changing it". The rules that find those names
are data (``policy/words/pointers.toml``: regular expressions over ASCII, so they work inside
Chinese text as well as English); this module applies them. Pure: text in, names out. Whether
a name still holds is ``service.stale``'s question, asked of the code repository: a pointer
is only ever judged against the commit the memory was anchored to, so a name that never
resolved there (a product name, a word that looks like a file) is never called stale.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

RULES = Path(__file__).parent / "words" / "pointers.toml"
#: The most pointers of each kind kept for one memory (a memory listing 200 files is a list,
#: not a claim about each).
MAX_EACH = 20


class Pointers:
    """The names one memory points at.

    Attributes:
        files: paths and file names as written (``src/payments/retry.py``, ``Makefile``,
            ``web/src/api/`` for a folder), in order of first mention.
        identifiers: code names (``retry_with_backoff``, ``PaymentClient``, ``DATABASE_URL``).
        commands: the commands as written, spaces normalised (``make e2e``, ``npm run build``,
            ``just lint``, ``pnpm test``): a make target, a just recipe, or a package.json
            script (npm, pnpm, yarn, bun); the target is the last word.
        A list left None becomes a fresh empty list. (A plain class: a write anchors its memory
        with it, and ``dataclasses`` costs a write about 10 ms to import.)
    """

    __slots__ = ("files", "identifiers", "commands")

    def __init__(self, files: list[str] | None = None, identifiers: list[str] | None = None,
                 commands: list[str] | None = None) -> None:
        self.files = [] if files is None else files
        self.identifiers = [] if identifiers is None else identifiers
        self.commands = [] if commands is None else commands

    def __eq__(self, other: object) -> bool:
        return type(other) is Pointers and (self.files, self.identifiers, self.commands) == \
            (other.files, other.identifiers, other.commands)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Pointers(files={self.files!r}, identifiers={self.identifiers!r}, commands={self.commands!r})"

    def empty(self) -> bool:
        """True when the memory points at nothing."""
        return not (self.files or self.identifiers or self.commands)

    def to_dict(self) -> dict[str, list[str]]:
        """The non-empty lists, as front-matter keys (``files``, ``symbols``, ``commands``)."""
        out = {"files": self.files, "symbols": self.identifiers, "commands": self.commands}
        return {k: list(v) for k, v in out.items() if v}


@lru_cache(maxsize=1)
def _rules() -> dict:
    from memcli.text.recache import compiled  # once per machine: compiling them cost every anchored write ~10 ms

    data = tomllib.loads(RULES.read_text(encoding="utf-8"))
    files, names, commands = data["files"], data["identifiers"], data["commands"]
    return {
        "extensions": frozenset(e.lower() for e in files["extensions"]),
        "names": frozenset(files["names"]),
        "file": [compiled(files[k]) for k in ("url", "path", "name", "dotfile")],
        "identifier": [compiled(names[k]) for k in ("backticked", "camel", "snake", "call")],
        "ignore": frozenset(names["ignore"]),
        "command": [(tool, compiled(commands[tool])) for tool in ("make", "just", "npm", "short")],
        "builtins": frozenset(commands["builtins"]),
    }


def _is_file(name: str, rules: dict) -> bool:
    if name in rules["names"] or (name.startswith(".") and len(name.strip("./")) >= 2):
        return True  # a well-known bare name, a dotfile or dot-folder
    last = name.rstrip("/").rsplit("/", 1)[-1]
    if name.endswith("/") and "/" in name.rstrip("/"):
        return True  # a folder written with its trailing slash: web/src/api/
    stem, dot, extension = last.rpartition(".")
    return bool(dot and stem.strip(".") and extension.lower() in rules["extensions"])


def _add(into: list[str], value: str) -> None:
    if value not in into and len(into) < MAX_EACH:
        into.append(value)


def find(text: str, paths: list[str] | None = None) -> Pointers:
    """The files, identifiers and commands ``text`` names (see :class:`Pointers`).

    Args:
        text: a memory's text (any language; the names themselves are ASCII).
        paths: the memory's ``paths`` globs; a glob without wildcards is also a file pointer.

    Returns:
        At most ``MAX_EACH`` of each kind, in order of first mention; names inside a URL other
        than a forge's file link are not taken.
    """
    rules = _rules()
    found = Pointers()
    cut = re.sub(r"https?://\S+", lambda m: " " * len(m.group(0)), text)  # no names from inside links
    for match in rules["file"][0].finditer(text):
        _add(found.files, match.group("x").rstrip(".,;:"))
    for pattern in rules["file"][1:]:
        for match in pattern.finditer(cut):
            name = match.group("x").rstrip(".,;:").removeprefix("./")
            if _is_file(name, rules):
                _add(found.files, name)
    for name in sorted(rules["names"]):
        if re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w./-])", cut):
            _add(found.files, name)
    for glob in paths or []:
        if not any(c in glob for c in "*?[{") and _is_file(glob, rules):
            _add(found.files, glob)
    in_files = {part for f in found.files for part in re.split(r"[/.]", f)}
    for pattern in rules["identifier"]:
        for match in pattern.finditer(cut):
            for name in match.group("x").split("."):  # `Client.refund`: the class and the method
                if name in rules["ignore"] or name in in_files or len(name) < 3:
                    continue
                _add(found.identifiers, name)
    for tool, pattern in rules["command"]:
        for match in pattern.finditer(cut):
            if tool == "short" and match.group("x") in rules["builtins"]:
                continue
            _add(found.commands, " ".join(match.group(0).split()))
    return found
