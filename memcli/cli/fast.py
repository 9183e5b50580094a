"""A fast path for the hot commands: parse their arguments without importing typer.

An agent's session start and every prompt run ``memcli hook …``, ``memcli context`` or
``memcli recall`` (``memcli --version``, ``memcli index status`` and ``memcli remember``
take it too);
importing typer (and click inside it) costs about 40 ms, a third of such a run on a
10,000-memory workspace. For these two commands, ``main`` first tries this small
parser. It accepts exactly the options the typer commands define (a test compares the
two lists) and gives up, returning None, on anything else (``--help``, an unknown
option, a malformed number, ``--``), so typer then parses and reports as usual. Both
paths call the same functions in ``memcli.cli.hot``.
"""

from __future__ import annotations

from typing import Any  # an option's value: str, bool, int or list[str], by its kind in the table

from memcli.filters import FILTERS

#: Global options: name -> takes a value.
GLOBAL_OPTIONS = {"--workspace": True, "-w": True, "--actor": True, "--json": False}

#: Per command: option -> (keyword, kind), kind one of flag, str, int, list.
COMMANDS: dict[str, dict[str, tuple[str, str]]] = {
    "recall": {
        "--fuzzy": ("fuzzy", "flag"), "--grep": ("grep", "flag"), "--explain": ("explain", "flag"),
        **{option: (f.keyword, f.kind) for f in FILTERS for option in f.options},  # the read filters
        "--json": ("json", "flag"),
    },
    "context": {
        "--query": ("query", "str"), "-q": ("query", "str"), "--budget": ("budget", "int"),
        "--format": ("fmt", "str"), "--json": ("json", "flag"),
    },
    "hook": {},  # `hook AGENT EVENT`; `hook install|uninstall AGENT` goes to typer
    "remember": {
        "--scope": ("scope", "str"), "-s": ("scope", "str"), "--category": ("category", "str"),
        "-c": ("category", "str"), "--subject": ("subject", "str"), "--importance": ("importance", "int"),
        "-i": ("importance", "int"), "--tag": ("tag", "list"), "-t": ("tag", "list"), "--path": ("path", "list"),
        "--ttl": ("ttl", "str"), "--expire-at": ("expire_at", "str"), "--source-type": ("source_type", "str"),
        "--run-id": ("run_id", "str"), "--idempotency-key": ("idempotency_key", "str"),
        "--pinned": ("pinned", "flag"), "--no-pinned": ("pinned", "off"), "--on-conflict": ("on_conflict", "str"),
        "--deny": ("deny", "list"), "--ask": ("ask", "list"), "--warn": ("warn_guard", "list"),
        "--allow-secret": ("allow_secret", "list"), "--all-projects": ("all_projects", "flag"),
        "--json": ("json", "flag"),
    },
}
POSITIONALS = {"recall": 1, "context": 0, "hook": 2, "remember": 1}
#: Option kinds that take no value: ``flag`` sets True, ``off`` sets False (``--no-pinned``).
NO_VALUE = ("flag", "off")


def parse(argv: list[str]) -> tuple[str, dict[str, Any], dict[str, Any], list[str]] | None:
    """Split ``argv`` into (command, global options, command options, positionals), or None.

    None means "not for the fast path": typer must parse it.
    """
    lead = _globals(argv)
    if lead is None:
        return None
    globals_, i = lead
    if i >= len(argv) or argv[i] not in COMMANDS:
        return None
    command, table = argv[i], COMMANDS[argv[i]]
    options: dict[str, Any] = {}
    positionals: list[str] = []
    i += 1
    while i < len(argv):
        if argv[i].startswith("-") and argv[i] != "-":
            spec = {k: v[1] not in NO_VALUE for k, v in table.items()}
            name, value, i = _take(argv, i, spec)
            if name is None:
                return None
            keyword, kind = table[name]
            if kind == "off":
                value = False
            if kind == "int":
                try:
                    value = int(value)
                except ValueError:
                    return None
            if kind == "list":
                options.setdefault(keyword, []).append(value)
            else:
                options[keyword] = value
        else:
            positionals.append(argv[i])
            i += 1
    wanted = POSITIONALS[command]
    if len(positionals) != wanted and not (command == "recall" and positionals):
        return None
    if command == "recall":
        positionals = [" ".join(positionals)]
    return command, globals_, options, positionals


def _globals(argv: list[str]) -> tuple[dict[str, Any], int] | None:
    """The global options at the start of ``argv`` and the index of the first other word, or
    None when one of them is not a global option this parser knows."""
    globals_: dict[str, Any] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, value, i = _take(argv, i, GLOBAL_OPTIONS)
        if name is None:
            return None
        globals_[name] = value
    return globals_, i


def _take(argv: list[str], i: int, spec: dict[str, bool]) -> tuple[str | None, Any, int]:
    """Read one option at ``argv[i]``: ``--name``, ``--name value`` or ``--name=value``."""
    arg = argv[i]
    name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
    if name not in spec:
        return None, None, i
    if not spec[name]:
        return (name, True, i + 1) if not eq else (None, None, i)
    if eq:
        return name, inline, i + 1
    if i + 1 >= len(argv):
        return None, None, i
    return name, argv[i + 1], i + 2


def _index_status(argv: list[str]) -> dict[str, Any] | None:
    """The global options of ``[GLOBAL OPTIONS] index status [--json]``, or None for anything else."""
    lead = _globals(argv)
    if lead is None:
        return None
    globals_, i = lead
    rest = [a for a in argv[i:] if a != "--json"]
    return globals_ if rest == ["index", "status"] else None


def run(argv: list[str]) -> bool:
    """Run a hot command from ``argv`` if the fast path can; True when it did.

    Raises:
        MemcliError: as the command would through typer (``main`` handles it the same way).
    """
    from memcli.cli import hot
    from memcli.cli.state import GLOBALS

    if "--version" in argv and set(argv) <= {"--version", "--json"}:
        hot.version()
        return True
    plain = _index_status(argv)
    if plain is not None:
        GLOBALS.workspace = plain.get("--workspace", plain.get("-w"))
        GLOBALS.actor = plain.get("--actor")
        hot.index_status()
        return True
    parsed = parse(argv)
    if parsed is None:
        return False

    command, globals_, options, positionals = parsed
    if command == "hook":
        from memcli.agents.registry import known

        if not known(positionals[0]):  # `hook install AGENT`, `hook check`, a typo: typer's
            return False
    GLOBALS.workspace = globals_.get("--workspace", globals_.get("-w"))
    GLOBALS.actor = globals_.get("--actor")
    options.pop("json", None)  # already read by main from argv
    if command == "recall":
        hot.recall(positionals[0], **options)
    elif command == "remember":
        from memcli.cli import writing

        writing.remember(positionals[0], **options)
    elif command == "hook":
        hot.hook(*positionals)
    else:
        hot.context(**options)
    return True
