"""The guard a memory's text suggests (issue 24 point 1): "never X", "don't run X", "always
use Y, not X", 不要 X, 禁止 X, where X looks like a command.

``remember`` prints the option that would add it (``--deny 'Bash(npm install:*)'``) and
never adds it by itself. The cues, the programs that make X a command and the words that
end it are data (``policy/words/guards.toml``). Pure: reads only that file (its patterns compiled once
per machine, ``text.recache``).
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
#: Words of a command after its program: a subcommand or argument (``push``, ``build/``, ``/``), or an
#: option (``-rf``, ``--force``, ``--env=prod``).
_ARGUMENT = re.compile(r"^(?:[a-z0-9/~.][a-z0-9:._/@+~-]*|--?[A-Za-z0-9][A-Za-z0-9_-]*(?:=[^\s]+)?)$")
#: Words taken after the program at most.
MAX_WORDS = 5
#: ASCII punctuation that ends a command written in the text when it ends a word (``npm publish.``).
_END = ".,;:!?"
#: A command's words are ASCII (:data:`_ARGUMENT`): the first other character ends the word it is
#: in and the command, as ASCII punctuation does. Chinese and Japanese text puts full-width (CJK)
#: punctuation (，。；：！？、, blocks U+3000 and U+FF00) or its own words right after a command,
#: with no space (``不要运行 npm publish，发布由 CI 完成。``).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@lru_cache(maxsize=1)
def _words() -> tuple[list[re.Pattern[str]], frozenset[str], frozenset[str]]:
    from memcli.text.recache import compiled  # once per machine, not per write

    data = tomllib.loads(WORDS.read_text(encoding="utf-8"))
    return ([compiled(c, re.IGNORECASE) for c in data["cues"]], frozenset(p.lower() for p in data["programs"]),
            frozenset(w.lower() for w in data["stop"]))


def suggest(text: str) -> list[str]:
    """The guard patterns ``text`` suggests, in order of mention (at most ``MAX_SUGGESTIONS``).

    A command in backticks is taken whole (``never `git push --force` `` gives
    ``Bash(git push --force:*)``); otherwise the program and the words after it as the text
    wrote them, up to the first that is not a command's (a stop word, prose, punctuation that
    ends the clause): ``never run rm -rf on the build folder`` gives ``Bash(rm -rf:*)``, never
    the broader ``Bash(rm:*)``; ``never npm, for packages`` gives ``Bash(npm:*)``.
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
                words = _command_words(text, first, stop)
            if not words or words[0].lower() not in programs:
                continue
            rule = f"Bash({' '.join(words).rstrip('.,;:')}:*)"
            if rule not in found:
                found.append(rule)
    return found[:MAX_SUGGESTIONS]


def _command_words(text: str, first: re.Match[str], stop: frozenset[str]) -> list[str]:
    """The program ``first`` found in ``text`` and the words that follow it while they read as
    its subcommands, options and arguments (:data:`_ARGUMENT`, not in ``stop``, at most
    :data:`MAX_WORDS`); punctuation ending a word (``npm publish.``) ends the command."""
    raw = first["word"]
    words = [raw.rstrip(_END)]
    at = first.end()
    ended = _NON_ASCII.match(text, at) is not None  # ``npm，…``: punctuation right after the program
    while len(words) <= MAX_WORDS and raw == raw.rstrip(_END) and not ended:
        nxt = re.match(r"[ \t]+(\S+)", text[at:])
        if nxt is None:
            break
        raw = nxt.group(1)
        other = _NON_ASCII.search(raw)
        if other is not None:  # ``publish，发布由``: the word ends at the full-width comma, and so does the command
            raw, ended = raw[: other.start()], True
        word = raw.rstrip(_END)
        if not word or word.lower() in stop or not _ARGUMENT.match(word):
            break
        words.append(word)
        at += nxt.end()
    return words
