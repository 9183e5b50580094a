"""The guard a memory's text suggests (issue 24 point 1): "never X", "don't run X", "always
use Y, not X", 不要 X, 禁止 X, where X looks like a command.

``remember`` prints the option that would add it (``--deny 'Bash(npm install:*)'``) and
never adds it by itself. The cues, the programs that make X a command and the words that
end it are data (``policy/words/guards.toml``). Pure: reads only that file.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

WORDS = Path(__file__).parent / "words" / "guards.toml"
#: Suggestions made for one text at most.
MAX_SUGGESTIONS = 3
_WORD = re.compile(r"\s*(?:`(?P<quoted>[^`\n]+)`|(?P<word>[A-Za-z0-9_./:@=+-]+))")
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9:-]*$")


@lru_cache(maxsize=1)
def _words() -> tuple[list[re.Pattern[str]], frozenset[str], frozenset[str]]:
    data = tomllib.loads(WORDS.read_text(encoding="utf-8"))
    return ([re.compile(c, re.IGNORECASE) for c in data["cues"]], frozenset(p.lower() for p in data["programs"]),
            frozenset(w.lower() for w in data["stop"]))


def suggest(text: str) -> list[str]:
    """The guard patterns ``text`` suggests, in order of mention (at most ``MAX_SUGGESTIONS``).

    A command in backticks is taken whole (``never `git push --force` `` gives
    ``Bash(git push --force:*)``); otherwise the program and, when one follows it after a
    space, its subcommand (``never run npm install here`` gives ``Bash(npm install:*)``;
    ``never npm, for packages`` gives ``Bash(npm:*)``).
    """
    cues, programs, stop = _words()
    found: list[str] = []
    for cue in cues:
        for hit in cue.finditer(text):
            first = _WORD.match(text, hit.end())
            if first is None:
                continue
            if first["quoted"]:
                words = first["quoted"].split()
            else:
                words = [first["word"].rstrip(".,;:")]
                after = text[first.end():]
                nxt = re.match(r"[ \t]+([a-z][a-z0-9:-]*)(?![\w.-])", after)
                if nxt and nxt.group(1) not in stop and _SUBCOMMAND.match(nxt.group(1)):
                    words.append(nxt.group(1))
            if not words or words[0].lower() not in programs:
                continue
            rule = f"Bash({' '.join(words).rstrip('.,;:')}:*)"
            if rule not in found:
                found.append(rule)
    return found[:MAX_SUGGESTIONS]
