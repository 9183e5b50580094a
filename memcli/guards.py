"""Guards: the tool calls a memory forbids (``deny``), asks about (``ask``) or counts (``warn``).

Pure: no file or process I/O. A memory's front-matter may hold ``guards``, a list of
one-key mappings ``{deny: PATTERN}``, ``{ask: PATTERN}`` or ``{warn: PATTERN}``; PATTERN
is a rule in Claude Code's permission-rule syntax, whatever the agent (docs/guards.md;
source: Claude Code's "Configure permissions" page, code.claude.com/docs/en/permissions,
"Permission rule syntax" and "Tool-specific permission rules"):

* ``Tool`` or ``Tool(*)`` matches every use of the tool.
* ``Bash(npm run build)`` matches that exact command; ``Bash(npm run test:*)`` (the older
  prefix form, ``:*`` only at the end) matches ``npm run test`` and ``npm run test …`` at a
  word boundary; ``*`` anywhere is a wildcard over any characters, spaces included, and a
  space before it keeps a word boundary (``Bash(ls *)`` matches ``ls -la`` and ``ls``, not
  ``lsof``; ``Bash(ls*)`` matches both). A compound command is split on its shell operators
  (``&&``, ``||``, ``;``, ``|``, ``&``, newlines, ``(``, ``)``, backticks, ``<(``, ``>(``) and each part is
  matched on its own, so ``Bash(npm install:*)`` matches ``cd web && npm install x`` but a
  prefix never reaches across an operator. Before matching a part, leading variable
  assignments (``FOO=1 npm install``), the shell's reserved words a command may follow
  (:data:`KEYWORDS`: ``do``, ``then``, ``!``, ``{`` …) and the wrappers of :data:`WRAPPERS`
  (``timeout``, ``sudo -u bob``, ``command``, ``exec``, ``xargs -n 1`` …) with their options
  are removed (a part is matched with and without them; a ``for NAME in …`` or ``case`` head
  is no command), a path-qualified program is matched by its base name too
  (``/usr/bin/npm``), redirections are dropped, and ``sh -c STRING`` / ``bash -c STRING`` /
  ``eval ARGS`` is matched on its script as well.
* ``Read(PATH)``, ``Edit(PATH)``, ``Write(PATH)``: gitignore-style patterns (``**`` spans
  folders; a pattern without ``/`` matches a name at any depth; a folder matches the files
  in it). ``//path`` is an absolute path, ``~/path`` is under the home folder, ``/path`` is
  relative to the project's root, ``path`` and ``./path`` relative to the agent's working
  folder. ``Edit`` rules apply to every tool that edits files (Edit, MultiEdit, Write,
  NotebookEdit, and the other agents' equivalents).
* ``WebFetch(domain:example.com)`` matches fetches of that host; ``domain:*.example.com``
  its subdomains.

A pattern that could never match a call (bad syntax, a tool memcli does not map, an empty
specifier) is refused when the memory is written (:func:`parse`).
"""

from __future__ import annotations

import re
from typing import Iterator, TypeVar

from memcli.errors import ValidationFailed

#: Guard kinds, strongest first: the first kind with a matching guard decides a call.
KINDS = ("deny", "ask", "warn")
#: The tool names a pattern may use (Claude Code's), and what each specifier is.
TOOLS = {"Bash": "command", "Read": "path", "Edit": "path", "Write": "path", "MultiEdit": "path",
         "NotebookEdit": "path", "WebFetch": "domain"}
#: The tools an agent cannot do its work without: a ``deny`` or ``ask`` guard on every use of
#: one of them (``Bash``, ``Edit(*)``) takes the tool away (:func:`takes_tool_away`).
WORKING_TOOLS = ("Bash", "Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
#: The tools an ``Edit(...)`` rule covers (Claude Code: "Edit rules apply to all built-in tools that edit files").
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
#: Write bounds (as those of tags, ``model.MAX_TAGS``): guards per memory, characters per pattern.
MAX_GUARDS, MAX_GUARD_CHARS = 20, 500
#: Simple commands of one shell command read at most, and its characters: a command over
#: either cannot be fully checked, and the pre-tool hook refuses it while a ``deny`` or ``ask``
#: guard on the shell is in force (docs/guards.md, "Limits").
MAX_PARTS = 1000
MAX_COMMAND_CHARS = 100_000
#: Wrappers that run the command after them, removed before matching (a command is matched with
#: and without them): each with the letters of its short options that take a value, its long
#: options that take one, and how many operands come before the command (timeout's duration).
#: Sources: the GNU coreutils manual (timeout, nice, nohup, stdbuf, env), GNU time, sudo(8),
#: doas(1), GNU findutils' xargs(1), and bash(1) SHELL BUILTIN COMMANDS (command, builtin, exec).
WRAPPERS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "timeout": ("sk", ("signal", "kill-after"), 1),
    "time": ("fo", ("format", "output"), 0),
    "nice": ("n", ("adjustment",), 0),
    "nohup": ("", (), 0),
    "stdbuf": ("ioe", ("input", "output", "error"), 0),
    "env": ("uCS", ("unset", "chdir", "split-string"), 0),
    "sudo": ("ugCDhprtTUR", ("user", "group", "close-from", "chdir", "host", "prompt", "role", "type",
                             "command-timeout", "other-user", "chroot"), 0),
    "doas": ("uCa", (), 0),
    "command": ("", (), 0),
    "builtin": ("", (), 0),
    "exec": ("a", (), 0),
    "xargs": ("adEILnPs", ("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs",
                           "max-chars", "process-slot-var"), 0),
    # util-linux: ionice(1), setsid(1), flock(1) (its lock file first), chrt(1) (its priority
    # first), taskset(1) (its CPU mask first), runuser(1), su(1), script(1); coreutils chroot (its
    # new root first); procps watch(1); strace(1), ltrace(1); polkit pkexec(1); expect's unbuffer;
    # macOS caffeinate(8); proxychains
    "ionice": ("cn", ("class", "classdata"), 0),
    "setsid": ("", (), 0),
    "flock": ("wE", ("timeout", "conflict-exit-code"), 1),
    "chrt": ("TPD", ("sched-runtime", "sched-period", "sched-deadline"), 1),
    "taskset": ("", (), 1),
    "chroot": ("", ("userspec", "groups"), 1),
    "runuser": ("ugGcsw", ("user", "group", "supp-group", "command", "shell", "whitelist-environment"), 0),
    "su": ("gGcsw", ("group", "supp-group", "command", "shell", "whitelist-environment"), 0),
    "script": ("cEmoBIOT", ("command", "echo", "logging-format", "output-limit", "log-io", "log-in", "log-out",
                            "log-timing"), 0),
    "watch": ("nqs", ("interval", "equexit", "shotsdir"), 0),
    "strace": ("abeEIoOpPsSuUX", (), 0),
    "ltrace": ("aAeFlnopsuwxD", (), 0),
    "pkexec": ("", ("user",), 0),
    "unbuffer": ("", (), 0),
    "caffeinate": ("tw", (), 0),
    "proxychains": ("f", (), 0),
    "proxychains4": ("f", (), 0),
    # package and environment runners that run the command after them (npm-exec(1), pnpm, yarn,
    # bun, uv, pipx, poetry, pipenv, pdm, bundler, 1Password op, Doppler, aws-vault): the program is
    # the package's binary, so ``npx prisma migrate reset`` runs ``prisma migrate reset``
    "npx": ("pc", ("package", "call"), 0),
    "bunx": ("p", ("package",), 0),
    "uvx": ("pw", ("from", "with", "python", "index", "index-url", "extra-index-url", "find-links"), 0),
    "npm exec": ("pc", ("package", "call", "workspace", "prefix"), 0),
    "pnpm exec": ("C", ("dir", "filter"), 0),
    "pnpm dlx": ("p", ("package",), 0),
    "yarn dlx": ("p", ("package",), 0),
    "yarn exec": ("", (), 0),
    "bun x": ("p", ("package",), 0),
    "uv run": ("p", ("with", "with-editable", "with-requirements", "python", "directory", "project", "package",
                     "extra", "group", "only-group", "env-file", "index", "default-index", "index-url",
                     "extra-index-url", "find-links", "config-file", "cache-dir"), 0),
    "pipx run": ("", ("spec", "python", "index-url", "pip-args"), 0),
    "poetry run": ("C", ("directory", "project"), 0),
    "pipenv run": ("", (), 0),
    "pdm run": ("p", ("project",), 0),
    "bundle exec": ("", (), 0),
    "op run": ("", ("env-file", "account"), 0),
    "doppler run": ("pc", ("project", "config", "token", "command"), 0),
    "aws-vault exec": ("", ("duration", "region", "mfa-token"), 1),
}
#: The wrappers whose ``-c STRING`` (``--command``, ``--call``) is a script a shell runs
#: (su(1), runuser(1), script(1), npm-exec(1), doppler run; flock(1)'s comes after its lock file).
SCRIPT_OPTIONS = frozenset(("su", "runuser", "script", "npx", "npm exec", "doppler run"))
#: The wrappers that join the words after their options into one script a shell runs (watch(1)).
JOINED_SCRIPT = frozenset(("watch",))
#: ``find``'s actions that run a command, up to a word ``;`` or ``+`` (GNU findutils, find(1)).
FIND_ACTIONS = frozenset(("-exec", "-execdir", "-ok", "-okdir"))
_VERSIONED = re.compile(r"^(@?[^@/\s]+(?:/[^@/\s]+)?)@[^@/\s]+$")
#: Reserved words a simple command may follow in the shell's grammar (bash(1), SHELL GRAMMAR and
#: RESERVED WORDS; POSIX.1-2017 XCU 2.4 and 2.9.4): removed before matching as wrappers are.
KEYWORDS = frozenset(("!", "{", "}", "do", "done", "then", "else", "elif", "fi", "if", "while", "until", "esac",
                      "coproc", "function"))
#: Reserved words that start a head which is no command: ``for NAME in WORDS``, ``select NAME in
#: WORDS``, ``case WORD in``.
HEADS = frozenset(("for", "select", "case"))
#: Wrappers and reserved words read in front of one command at most, and shell scripts (``sh -c``,
#: ``eval``) read inside each other: a command over either is refused as one over MAX_PARTS is.
MAX_PREFIXES = 16
MAX_DEPTH = 4
_RULE = re.compile(r"^(?P<tool>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<spec>.*)\))?$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$")
_SHELLS = ("sh", "bash", "zsh", "dash", "ksh")
_OPERATORS = set("&|;()`\n")
T = TypeVar("T")


class Rule:
    """One parsed pattern: ``tool`` (a key of :data:`TOOLS`) and ``spec`` (None: every use)."""

    __slots__ = ("tool", "spec", "text")

    def __init__(self, tool: str, spec: str | None, text: str) -> None:
        self.tool = tool
        self.spec = spec
        self.text = text

    def __repr__(self) -> str:
        return f"Rule({self.text!r})"


class Guard:
    """One guard of a memory: ``kind`` (``deny``, ``ask`` or ``warn``) and its :class:`Rule`."""

    __slots__ = ("kind", "rule")

    def __init__(self, kind: str, rule: Rule) -> None:
        self.kind = kind
        self.rule = rule

    @property
    def pattern(self) -> str:
        """The pattern as written (``Bash(npm install:*)``)."""
        return self.rule.text

    def to_mapping(self) -> dict[str, str]:
        """The front-matter form: ``{kind: pattern}``."""
        return {self.kind: self.rule.text}


def parse(pattern: object) -> Rule:
    """Read one pattern in Claude Code's permission-rule syntax (module docstring).

    Raises:
        ValidationFailed: not a string, too long, bad syntax, a tool memcli does not map, or
            a specifier that cannot match (empty, ``:*`` not at the end, a bad domain).
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValidationFailed("a guard pattern must be a non-empty string",
                               hint="write it as Claude Code's permission rules: Bash(npm install:*)")
    text = pattern.strip()
    if len(text) > MAX_GUARD_CHARS:
        raise ValidationFailed(f"a guard pattern has {len(text)} characters, over the limit of {MAX_GUARD_CHARS}")
    if "\n" in text or "\0" in text:
        raise ValidationFailed("a guard pattern must be one line")
    found = _RULE.match(text)
    if found is None:
        raise ValidationFailed(f"bad guard pattern {text!r}: expected Tool or Tool(specifier)",
                               hint="for example Bash(npm install:*), Edit(migrations/**), Read(.env)")
    tool, spec = found["tool"], found["spec"]
    if tool not in TOOLS:
        raise ValidationFailed(f"bad guard pattern {text!r}: unknown tool {tool!r}",
                               hint=f"use one of: {', '.join(TOOLS)}")
    if spec is None or spec.strip() == "*":
        return Rule(tool, None, text)
    if not spec.strip():
        raise ValidationFailed(f"bad guard pattern {text!r}: the specifier in parentheses is empty",
                               hint=f"write {tool} alone to match every use")
    kind = TOOLS[tool]
    if kind == "command":
        body = spec[:-2] if spec.endswith(":*") else spec
        if ":*" in body:
            raise ValidationFailed(f"bad guard pattern {text!r}: ':*' may only end the pattern",
                                   hint="use '*' for a wildcard inside it: Bash(git * main)")
        if spec.endswith(":*") and not body.strip():
            raise ValidationFailed(f"bad guard pattern {text!r}: nothing before ':*'")
    elif kind == "domain":
        host = spec.removeprefix("domain:")
        if not spec.startswith("domain:") or not _HOST.match(host):
            raise ValidationFailed(f"bad guard pattern {text!r}: WebFetch takes domain:HOST",
                                   hint="for example WebFetch(domain:example.com)")
    elif spec.strip() in ("/", "//", "~", "~/"):
        pass  # a whole tree: matches everything under it
    return Rule(tool, spec.strip() if kind != "command" else spec, text)


#: Ordinary calls of a working tool: a pattern that matches every one of its tool's takes that
#: tool away (:func:`takes_tool_away`): ``Bash(* *)``, ``Edit(**)``, ``Read(/**)`` as well as
#: the tool alone (red team, stop 36).
ORDINARY_COMMANDS = ("git status", "make test", "npm run build", "python3 -m pytest -q", "cat README.md")
ORDINARY_PATHS = ("src/main.py", "README.md", "docs/guide/intro.md", "Makefile", "tests/test_app.py")
_PROBE_ROOT = "/probe/project"


def takes_tool_away(guard: Guard) -> bool:
    """Whether ``guard`` denies or asks about every ordinary use of a tool the agent works with
    (:data:`WORKING_TOOLS`): the tool alone (``Bash``, ``Bash(*)``, ``Edit``), or a pattern that
    matches each of :data:`ORDINARY_COMMANDS` (a shell tool) or :data:`ORDINARY_PATHS` in a
    project (a file tool), such as ``Bash(* *)``, ``Edit(**)`` or ``Read(/**)``. Such a guard
    stops the agent from working at all, so the pre-tool hook enforces it only from the
    reader's own memories (:func:`in_force`; docs/guards.md, red team, stops 35 and 36)."""
    if guard.kind not in ("deny", "ask") or guard.rule.tool not in WORKING_TOOLS:
        return False
    if guard.rule.spec is None:
        return True
    where = Where(cwd=_PROBE_ROOT, root=_PROBE_ROOT, home="/probe/home")
    tool = guard.rule.tool
    if tool == "Bash":
        calls = [Call("Bash", command=c) for c in ORDINARY_COMMANDS]
    else:
        calls = [Call(tool, paths=[f"{_PROBE_ROOT}/{p}"], writes=tool == "Write") for p in ORDINARY_PATHS]
    return all(matches(guard.rule, call, where) for call in calls)


def in_force(guard: Guard, own: bool) -> Guard:
    """``guard`` as the pre-tool hook enforces it for a reader: as written when the memory is
    the reader's ``own``, else a guard that :func:`takes_tool_away` counts as ``warn`` (a
    teammate's memory may forbid a command, not the shell)."""
    return guard if own or not takes_tool_away(guard) else Guard("warn", guard.rule)


def check_guards(value: object) -> list[Guard]:
    """Validate the front-matter ``guards``: a list of one-key mappings ``{deny|ask|warn: PATTERN}``.

    None is an empty list. Bounds (:data:`MAX_GUARDS`) are checked on write only
    (:func:`check_bounds`), as for tags.

    Raises:
        ValidationFailed: anything else, or a pattern :func:`parse` refuses.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationFailed("expected a list of {deny: PATTERN} or {ask: PATTERN} mappings")
    out = []
    for item in value:
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in KINDS:
            raise ValidationFailed("each guard is one mapping {deny: PATTERN}, {ask: PATTERN} or {warn: PATTERN}")
        kind, pattern = next(iter(item.items()))
        out.append(Guard(kind, parse(pattern)))
    return out


def check_bounds(guards: list[Guard]) -> None:
    """The write bound: at most :data:`MAX_GUARDS` guards.

    Raises:
        ValidationFailed: more, giving the count and the limit.
    """
    if len(guards) > MAX_GUARDS:
        raise ValidationFailed(f"too many guards: {len(guards)}, over the limit of {MAX_GUARDS}",
                               hint=f"keep the {MAX_GUARDS} that matter most")


def build(deny: list[str] | None = None, ask: list[str] | None = None, warn: list[str] | None = None) -> list[Guard]:
    """Guards from the options of ``remember`` (``--deny``, ``--ask``, ``--warn``), in that order,
    each pattern once.

    Raises:
        ValidationFailed: a pattern :func:`parse` refuses, or too many (:func:`check_bounds`).
    """
    out: list[Guard] = []
    seen = set()
    for kind, patterns in (("deny", deny), ("ask", ask), ("warn", warn)):
        for pattern in patterns or ():
            rule = parse(pattern)
            if (kind, rule.text) not in seen:
                seen.add((kind, rule.text))
                out.append(Guard(kind, rule))
    check_bounds(out)
    return out


def to_list(guards: list[Guard]) -> list[dict[str, str]]:
    """The front-matter (and JSON) form of ``guards``."""
    return [g.to_mapping() for g in guards]


def widened(before: list[Guard], after: list[Guard]) -> list[Guard]:
    """The guards of ``after`` that ``before`` did not hold (same kind and pattern): added or widened."""
    held = {(g.kind, g.rule.text) for g in before}
    return [g for g in after if (g.kind, g.rule.text) not in held]


# --- matching -------------------------------------------------------------------------


class Call:
    """One tool call in Claude Code's terms: ``tool`` (``Bash``, ``Read``, ``Edit``, ``Write``,
    ``MultiEdit``, ``NotebookEdit``, ``WebFetch``) and what it acts on: ``command`` (Bash),
    ``paths`` (the file tools; as the agent named them) or ``urls`` (WebFetch). ``malformed``:
    its input was in no form its agent sends, so what it acts on could not be read (``cut`` says why).
    ``writes``: the call also writes whole files as a ``Write`` does, so ``Write(...)`` rules cover
    it besides ``Edit(...)`` ones (Codex's ``apply_patch``, which its hooks match as both)."""

    __slots__ = ("tool", "command", "paths", "urls", "cut", "malformed", "writes")

    def __init__(self, tool: str, command: str = "", paths: list[str] | None = None,
                 urls: list[str] | None = None, cut: str = "", malformed: bool = False,
                 writes: bool = False) -> None:
        self.tool = tool
        self.writes = writes
        self.command = command
        self.paths = [] if paths is None else paths
        self.urls = [] if urls is None else urls
        self.cut = cut  # why ``paths`` or ``urls`` are not all the call acts on ("" when they are)
        self.malformed = malformed

    def __repr__(self) -> str:
        return f"Call({self.tool!r}, {self.command or self.paths or self.urls!r})"


class Where:
    """The folders a path pattern is read against (absolute POSIX paths, or empty when unknown):
    the agent's working folder, the project's root and the home folder."""

    __slots__ = ("cwd", "root", "home")

    def __init__(self, cwd: str = "", root: str = "", home: str = "") -> None:
        self.cwd = cwd
        self.root = root
        self.home = home


def covers(rule: Rule, tool: str, writes: bool = False) -> bool:
    """Whether ``rule`` is about calls of ``tool`` (Claude Code's name): its own tool, any
    editing tool for an ``Edit`` rule, and a call that also ``writes`` whole files
    (``Call.writes``) for a ``Write`` rule."""
    if rule.tool == "Write" and writes:
        return True
    return tool in EDIT_TOOLS if rule.tool == "Edit" else rule.tool == tool


def matches(rule: Rule, call: Call, where: Where | None = None) -> bool:
    """Whether ``rule`` matches ``call`` (module docstring); never raises."""
    if not covers(rule, call.tool, call.writes):
        return False
    if rule.spec is None:
        return True
    kind = TOOLS[rule.tool]
    if kind == "command":
        return any(command_matches(rule.spec, part) for part in commands_of(call.command))
    if kind == "domain":
        return any(_host_matches(rule.spec.removeprefix("domain:"), url) for url in call.urls)
    return any(path_matches(rule.spec, p, where or Where()) for p in call.paths)


def decide(guards: list[tuple[T, Guard]], call: Call, where: Where | None = None) -> list[tuple[T, Guard]]:
    """The guards that match ``call``, strongest kind first (``deny``, ``ask``, ``warn``),
    each with the owner it came with (a memory)."""
    found = [(owner, g) for owner, g in guards if matches(g.rule, call, where)]
    return sorted(found, key=lambda pair: KINDS.index(pair[1].kind))


def command_matches(spec: str, command: str) -> bool:
    """Whether the Bash specifier ``spec`` matches one simple command (already split and
    normalised, :func:`commands_of`); whitespace runs count as one space."""
    command = " ".join(command.split())
    if spec.endswith(":*") and "*" not in spec[:-2].replace("\\*", ""):
        prefix = " ".join(spec[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in spec.replace("\\*", ""):
        return command == " ".join(spec.replace("\\*", "*").split())
    return _star_match(spec, command)


def _star_match(spec: str, command: str) -> bool:
    """Whether ``command`` matches a specifier with ``*`` wildcards (``\\*`` is a literal star),
    a single trailing `` *`` being optional (``ls *`` matches ``ls``). Each star matches any
    characters: the literal pieces between stars are found left to right (the leftmost place of
    each is always the best one), so the work is at most the command's length times the pieces',
    however many stars the pattern has (a regular expression backtracks exponentially on them)."""
    spec = " ".join(spec.split())
    pieces = [""]
    for piece in re.split(r"(\\\*|\\\\|\*)", spec):
        if piece == "*":
            pieces.append("")
        else:
            pieces[-1] += {"\\*": "*", "\\\\": "\\"}.get(piece, piece)
    if len(pieces) == 2 and pieces[1] == "" and pieces[0].endswith(" ") and command == pieces[0][:-1]:
        return True
    first, last = pieces[0], pieces[-1]
    end = len(command) - len(last)
    if end < len(first) or not command.startswith(first) or not command.endswith(last):
        return False
    at = len(first)
    for piece in pieces[1:-1]:
        found = command.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


#: Shell syntax, one token per match (linear: no backtracking across a token): blanks, a run of
#: operator or redirection characters, a quoted string (``$'…'`` is bash's ANSI-C quoting,
#: ``$"…"`` its locale quoting, read as ``"…"``), an escaped character, plain text, or an
#: opening quote that is never closed (``other``: :data:`_BALANCED` reads such a line first).
_TOKEN = re.compile(r"""(?P<blank>[ \t\r]+)|(?P<op>[&|;()<>`\n]+)|\$'(?P<ansi>[^'\\]*(?:\\.[^'\\]*)*)'"""
                    r"""|'(?P<single>[^']*)'|\$?"(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"|\\(?P<escaped>.)"""
                    r"""|(?P<plain>(?:[^ \t\r&|;()<>`\n'"\\$]|\$(?!['"]))+)|(?P<other>['"\\$])""", re.DOTALL)
#: A line whose quotes all close (possessive: linear, no backtracking), read with the same
#: grammar as :data:`_TOKEN` (so no quoted token there fails to close), and the plain-text split.
_BALANCED = re.compile(r"""(?:(?:[^'"\\$]|\$(?!['"]))++|\$'[^'\\]*+(?:\\.[^'\\]*+)*+'|'[^']*+'"""
                       r"""|\$?"[^"\\]*+(?:\\.[^"\\]*+)*+"|\\.)*+""", re.DOTALL)
#: bash's ANSI-C escapes (bash(1), QUOTING): \a \b \e \E \f \n \r \t \v \\ \' \" \? \nnn \xHH
#: \uHHHH \UHHHHHHHH \cX.
_ANSI_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL)
_ANSI_NAMED = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
               "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str) -> str:
    """The text of a ``$'…'`` string, its escapes decoded as bash decodes them."""
    def one(found: re.Match[str]) -> str:
        code = found[1]
        if code[0] in "xuU" and len(code) > 1:
            value = int(code[1:], 16)
            return chr(value) if value <= 0x10FFFF else ""
        if code[0] in "01234567":
            return chr(int(code, 8))
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1]) & 0x1F)
        return _ANSI_NAMED.get(code, "\\" + code)

    return _ANSI_ESCAPE.sub(one, text)


_PLAIN = re.compile(r"[&|;()<>`\n]+|[^\s&|;()<>`\n]+")
_DOUBLE_ESCAPE = re.compile(r"\\([\\\"$`])")


def _tokens(command: str) -> Iterator[str]:
    """The words and operator runs of ``command``, as ``shlex`` in POSIX mode with
    ``punctuation_chars`` reads them (quotes removed, a quoted operator kept as text), in one
    linear pass, lazily; a line with an unclosed quote is split on the operators as plain text."""
    if _BALANCED.fullmatch(command) is None:  # an open quote: operators are all memcli can read
        yield from (m.group() for m in _PLAIN.finditer(command))
        return
    word: list[str] = []
    in_word = False
    for found in _TOKEN.finditer(command):
        kind = found.lastgroup
        if kind in ("blank", "op"):
            if in_word:
                yield "".join(word)
                word, in_word = [], False
            if kind == "op":
                yield found.group()
            continue
        in_word = True
        if kind == "double":
            word.append(_DOUBLE_ESCAPE.sub(r"\1", found["double"]))
        elif kind == "ansi":
            word.append(_ansi_c(found["ansi"]))
        elif kind == "escaped":
            if found["escaped"] != "\n":  # a backslash-newline joins two lines
                word.append(found["escaped"])
        else:
            word.append(found.group(kind or 0))
    if in_word:
        yield "".join(word)


def split(command: str, depth: int = 0) -> tuple[list[str], str]:
    """The simple commands of a shell command line, each normalised for matching, and the
    limit that cut them short ("" when every part was read): split on the shell's operators
    (``&&``, ``||``, ``;``, ``|``, ``&``, newline, ``(``, ``)``, backticks, process substitutions), each in the forms
    :func:`_forms` gives (with and without its leading assignments, reserved words and
    wrappers), redirections dropped, words joined by one space; ``sh -c STRING`` and
    ``eval ARGS`` also give their script's commands. Linear in the command's length; never
    raises. A command over :data:`MAX_COMMAND_CHARS` characters is not read at all, reading
    stops at :data:`MAX_PARTS` simple commands, at :data:`MAX_PREFIXES` words in front of
    one, and at scripts :data:`MAX_DEPTH` deep: a caller that must not let an unread part
    through (the pre-tool hook's guards) decides on the limit returned.
    """
    if not isinstance(command, str) or not command.strip():
        return [], ""
    if len(command) > MAX_COMMAND_CHARS:
        return [], f"it has {len(command):,} characters, over the limit of {MAX_COMMAND_CHARS:,}"
    over = f"it has more than {MAX_PARTS:,} simple commands, the limit"
    parts: list[list[str]] = [[]]
    cut = ""
    skip_next = full = False
    for token in _tokens(command):
        if skip_next:
            skip_next = False
            if not (token and set(token) <= _OPERATORS | set("<>")):  # the target; an operator is no target
                continue
        if token and set(token) <= _OPERATORS | set("<>"):
            # a redirection: drop it and its target (and a file descriptor before it); "<(" and ">("
            # open a process substitution, whose commands run: a separator, as "(" is
            if set(token) & set("<>") and not set(token) & set("()"):
                if parts[-1] and parts[-1][-1].isdigit():
                    parts[-1].pop()
                skip_next = not token.endswith("&") or token in ("<&", ">&")
                continue
            if parts[-1]:
                full = len(parts) >= MAX_PARTS
                if not full:
                    parts.append([])
            continue
        if full:  # a word after the last part memcli reads
            cut = over
            break
        parts[-1].append(token)
    out: list[str] = []
    for raw in parts:  # grows by the commands of find's -exec actions, each shorter than its find
        forms, program, why, scripts = _forms(raw)
        out.extend(forms)
        cut = cut or why
        actions = _find_actions(program)
        if len(parts) + len(actions) > MAX_PARTS:
            cut = cut or over
        else:
            parts.extend(actions)
        script = _script_of(program)
        for script in [*scripts, *([] if script is None else [script])]:
            if depth + 1 >= MAX_DEPTH:
                cut = cut or f"it nests shell scripts (sh -c, eval) more than {MAX_DEPTH - 1} deep, the limit"
                break
            inner, inner_cut = split(script, depth + 1)
            out.extend(inner)
            cut = cut or inner_cut
    if len(out) > (MAX_PREFIXES + 2) * MAX_PARTS:
        return out[: (MAX_PREFIXES + 2) * MAX_PARTS], cut or over
    return out, cut


def commands_of(command: str, depth: int = 0) -> list[str]:
    """The simple commands :func:`split` reads of ``command`` (at most :data:`MAX_PARTS`; the
    rest is not read). Never raises."""
    return split(command, depth)[0]


def unchecked(call: Call) -> str:
    """Why ``call`` cannot be matched in full against guards ("" when it can): a shell
    command over :data:`MAX_COMMAND_CHARS` characters or :data:`MAX_PARTS` simple commands
    (:func:`split`), or more files or URLs than the hook reads (``call.cut``)."""
    if call.cut:
        return call.cut
    return split(call.command)[1] if call.tool == "Bash" else ""


def _forms(words: list[str]) -> tuple[list[str], list[str], str, list[str]]:
    """The forms one simple command is matched in, its program's words, the limit that cut
    its reading ("" when none), and the scripts its wrappers run: the command without its leading
    assignments, reserved words (:data:`KEYWORDS`) and wrappers (:data:`WRAPPERS`) with their
    options, and also each form with them still in front (``sudo npm install`` is matched as that
    and as ``npm install``), a path-qualified program by its base name too (``/usr/bin/npm install``
    as ``npm install``) and a versioned package by its name too (``npx prisma@5 migrate`` as
    ``prisma migrate``). The scripts: a ``-c STRING`` of the wrappers of :data:`SCRIPT_OPTIONS`
    (``su -c 'npm install'``), the words after ``watch`` (:data:`JOINED_SCRIPT`).
    A ``for``/``select``/``case`` head (``for NAME in WORDS``) holds no command: it is matched as written only;
    reading stops after :data:`MAX_PREFIXES` words in front of a command."""
    forms: list[str] = []
    scripts: list[str] = []
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        name = word.rsplit("/", 1)[-1]
        if word in HEADS:
            if word == "case" or i + 2 >= n or words[i + 2] != "do":
                # "for NAME in WORDS", "case WORD in": no command inside, matched as written only
                return [*forms, " ".join(words[i:])], [], "", scripts
            i += 2  # "for NAME do ...": the loop's body follows
            continue
        key = name if name in WRAPPERS else f"{name} {words[i + 1]}" if i + 1 < n else ""
        if word not in KEYWORDS and key not in WRAPPERS:
            break
        if len(forms) >= MAX_PREFIXES:
            return forms, [], (f"it has more than {MAX_PREFIXES} wrappers or reserved words before one command,"
                               " the limit"), scripts
        forms.append(" ".join(words[i:]))
        if word in KEYWORDS:
            i += 1
            if word in ("coproc", "function") and i < n and (word == "function" or (i + 1 < n and words[i + 1] == "{")):
                i += 1  # "coproc NAME {", "function NAME": the name is no command
            continue
        if name == "command" and i + 1 < n and words[i + 1] in ("-v", "-V"):
            break  # "command -v npm" looks npm up, it does not run it
        i += key.count(" ") + 1
        if key == "env":
            words = _env_split(words, i)
            n = len(words)
        if key in SCRIPT_OPTIONS:
            scripts.extend(_option_scripts(words, i, options_only=key in ("npx", "npm exec", "doppler run")))
        i = _after_options(words, i, *WRAPPERS[key])
        if key in JOINED_SCRIPT and i < n:
            scripts.append(" ".join(words[i:]))
        if key == "flock" and i + 1 < n and words[i] in ("-c", "--command"):  # flock FILE -c SCRIPT
            scripts.append(words[i + 1])
            i = n
    program = words[i:]
    if program:
        forms.append(" ".join(program))
        unversioned = _VERSIONED.match(program[0])
        if unversioned:  # npx prisma@5.1 migrate: matched as prisma migrate too
            program = [unversioned[1], *program[1:]]
            forms.append(" ".join(program))
        base = program[0].rsplit("/", 1)[-1]
        if base and base != program[0]:  # /usr/bin/npm, ./node_modules/.bin/npm: matched as npm too
            program = [base, *program[1:]]
            forms.append(" ".join(program))
    return [f for f in dict.fromkeys(forms) if f.strip()], program, "", scripts


def _option_scripts(words: list[str], i: int, options_only: bool) -> list[str]:
    """The values of ``-c`` / ``--command`` / ``--call`` in ``words`` from ``i`` (a cluster ending
    in ``c`` takes the next word: ``su -lc CMD``), up to ``--``; with ``options_only``, up to the
    first word that is no option too (``npx pkg -c x``: the ``-c`` is the package's)."""
    found: list[str] = []
    k = i
    while k < len(words) and words[k] != "--":
        word = words[k]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if name in ("command", "call"):
                if eq:
                    found.append(value)
                elif k + 1 < len(words):
                    found.append(words[k + 1])
                    k += 1
        elif word.startswith("-") and "c" in word[1:]:
            rest = word[word.index("c", 1) + 1:]
            if rest:
                found.append(rest)
            elif k + 1 < len(words):
                found.append(words[k + 1])
                k += 1
        elif options_only and not word.startswith("-"):
            break
        k += 1
    return found


def _find_actions(program: list[str]) -> list[list[str]]:
    """The commands ``find``'s ``-exec``/``-execdir``/``-ok``/``-okdir`` actions run
    (:data:`FIND_ACTIONS`), each up to its word ``;`` or ``+``; none for another program."""
    if not program or program[0].rsplit("/", 1)[-1] != "find":
        return []
    found: list[list[str]] = []
    k = 1
    while k < len(program):
        if program[k] in FIND_ACTIONS:
            end = k + 1
            while end < len(program) and program[end] not in (";", "+"):
                end += 1
            if end > k + 1:
                found.append(program[k + 1:end])
            k = end
        k += 1
    return found


def _env_split(words: list[str], i: int) -> list[str]:
    """``words`` with the string of env's ``-S STRING`` (``--split-string``, GNU coreutils) among
    the options from ``i`` split into the words it stands for: env runs them as the command."""
    k = i
    while k < len(words) and (words[k].startswith("-") or _ASSIGNMENT.match(words[k])) and words[k] != "--":
        word = words[k]
        if word in ("-S", "--split-string") and k + 1 < len(words):
            return [*words[:k], *words[k + 1].split(), *words[k + 2:]]
        if word.startswith(("--split-string=", "-S")):
            value = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            return [*words[:k], *value.split(), *words[k + 1:]]
        k += 2 if word in ("-u", "-C", "--unset", "--chdir") else 1
    return words


def _after_options(words: list[str], i: int, takes: str, long_takes: tuple[str, ...], positional: int) -> int:
    """Where the command a wrapper runs starts in ``words``: past the wrapper's options from
    ``i`` (getopt's rules: ``-abc`` clusters, a letter in ``takes`` takes the rest of its word or
    the next word, ``--name=value``, ``--name value`` for a name in ``long_takes``, ``--`` ends
    them; assignments as ``env`` takes them), then ``positional`` operands (timeout's duration) and
    a ``--`` after them."""
    n = len(words)
    while i < n:
        word = words[i]
        if word == "--":
            i += 1
            break
        if _ASSIGNMENT.match(word):
            i += 1
        elif word.startswith("--"):
            i += 2 if "=" not in word and word[2:] in long_takes else 1
        elif word.startswith("-"):  # "-" alone is env's -i
            letters = word[1:]
            at = next((k for k, c in enumerate(letters) if c in takes), -1)
            i += 2 if 0 <= at == len(letters) - 1 else 1  # the value is the next word if nothing follows its letter
        else:
            break
    if not positional or i >= n:
        return i
    i = min(i + positional, n)
    return i + 1 if i < n and words[i] == "--" else i  # aws-vault exec PROFILE -- COMMAND


def _script_of(words: list[str]) -> str | None:
    """The script a command runs as a shell would, or None: ``sh -c SCRIPT``, ``bash -lc SCRIPT``,
    ``bash -e -o pipefail -c SCRIPT`` (bash(1): with ``-c`` the script is the first argument that
    is no option), and ``eval ARGS`` (the ARGS joined by spaces, as ``eval`` does)."""
    if not words:
        return None
    if words[0] == "eval":
        return " ".join(words[1:]) or None
    if words[0].rsplit("/", 1)[-1] not in _SHELLS:
        return None
    k, command = 1, False
    while k < len(words):
        word = words[k]
        if word in ("-o", "+o", "-O", "+O"):  # a shell option by name: its name follows
            k += 2
        elif word == "--":
            return words[k + 1] if command and k + 1 < len(words) else None
        elif len(word) > 1 and word[0] in "-+":  # -e, +x, -lc, --norc, --login
            command = command or (word[0] == "-" and not word.startswith("--") and "c" in word[1:])
            k += 1
        else:
            return word if command else None
    return None


def path_matches(spec: str, path: str, where: Where) -> bool:
    """Whether the path pattern ``spec`` (module docstring) matches ``path`` (absolute, or
    relative to ``where.cwd``). A pattern relative to a folder memcli does not know matches nothing."""
    from posixpath import isabs, join, normpath

    if not path or "\0" in path:
        return False
    if not isabs(path):
        if not where.cwd:
            return False
        path = join(where.cwd, path)
    path = normpath(path)
    if spec.startswith("//"):
        base, pattern = "/", spec[2:]
    elif spec.startswith("~/") or spec == "~":
        base, pattern = where.home, spec[2:]
    elif spec.startswith("/"):
        base, pattern = where.root, spec[1:]
    else:
        base, pattern = where.cwd or where.root, spec.removeprefix("./")
    if not base:
        return False
    base = normpath(base)
    if base != "/" and not path.startswith(base.rstrip("/") + "/"):
        return False
    rel = path[len(base.rstrip("/")) + 1:] if base != "/" else path[1:]
    pattern = pattern.strip("/") if pattern.endswith("/") else pattern
    if not pattern or pattern in ("*", "**"):
        return True
    if "/" not in pattern:
        pattern = "**/" + pattern  # gitignore: a name without a slash matches at any depth
    from wcmatch import glob

    return glob.globmatch(rel, [pattern, pattern + "/**"], flags=glob.GLOBSTAR | glob.DOTGLOB)


def _host_matches(host: str, url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        found = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return False
    found, host = found.lower().rstrip("."), host.lower()
    if host.startswith("*."):
        return found.endswith(host[1:])
    return found == host
