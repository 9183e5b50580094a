"""The command line: ``main`` runs the typer app and turns every outcome into an exit status.

Errors become exits here and nowhere else (STYLE.md habit 3): a ``MemcliError`` prints
one line (or the JSON envelope) and exits with its documented status; a usage error
exits 2; anything unexpected prints one line, writes the traceback to
``.cache/last-error.log`` in the workspace (or the terminal with ``MEMCLI_DEBUG=1``)
and exits 1.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: this module starts every command
if TYPE_CHECKING:
    from typing import Callable, NoReturn

    from memcli.errors import StorageFailed

#: Commands that must never fail an agent's session: they exit 0 whatever happens.
NEVER_FAIL = ("context",)
#: Command groups: how many leading words name the command in the event log
#: (``index status``, ``hook claude session-start``); every other command is one word.
GROUP_WORDS = {"index": 2, "hook": 3}


def _words(argv: list[str]) -> list[str]:
    """The arguments that are not global options or their values (the command comes first)."""
    words, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-w", "--workspace", "--actor"):
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


#: Global options that take a value; accepted before or after the command, as git and
#: ripgrep users expect (``memcli recall pnpm -w DIR``).
VALUED_GLOBALS = ("-w", "--workspace", "--actor")
#: The environment variable a shell's completion script sets (click's shell-completion protocol).
COMPLETE_VAR = "_MEMCLI_COMPLETE"
#: The setting that turns the warm fork server off (``1``; empty or ``0``: on): ``memcli.cli.zygote_client``.
SERVER_OFF_ENV = "MEMCLI_NO_SERVER"


def hoist_globals(argv: list[str]) -> list[str]:
    """``argv`` with every global option found after the command moved before it.

    ``-w DIR``, ``--workspace DIR``, ``--workspace=DIR`` and ``--actor NAME`` may come
    anywhere before a ``--`` (after it everything is an argument); the word after such an
    option is always its value, as with git. ``--json`` needs no moving: every command
    takes it too.
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    seen_command = False
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if seen_command and name in VALUED_GLOBALS:
            if "=" in arg or i + 1 >= len(argv):
                front.append(arg)
                i += 1
            else:
                front.extend(argv[i:i + 2])
                i += 2
            continue
        if not seen_command and name in VALUED_GLOBALS and "=" not in arg:
            front.extend(argv[i:i + 2])
            i += 2
            continue
        if not arg.startswith("-"):
            seen_command = True
        (rest if seen_command else front).append(arg)
        i += 1
    return front + rest


def _command_name(argv: list[str]) -> str:
    words = _words(argv)
    return words[0] if words else "memcli"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``memcli`` console script (and of ``python -m memcli``, every hook).

    A Ctrl-C at any instant, even while the first modules load, prints ``memcli: interrupted``
    and exits 130 (``memcli/__init__.py`` covers the imports before this function runs).

    Run as a program (``argv`` None), a hot command (``context``, ``recall``, ``hook AGENT
    EVENT``) is first offered to this user's warm fork server (``memcli.cli.zygote_client``;
    off with ``MEMCLI_NO_SERVER=1``), and runs here when none answers in time.

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).
    """
    try:
        if argv is None:
            _served()
        _main(argv)
    except KeyboardInterrupt:
        print("memcli: interrupted", file=sys.stderr)
        sys.exit(130)


#: Set when this process offered its command to the warm fork server and none took it: a
#: server is started once the command has answered.
_START_SERVER: list[bool] = []
#: Called with the exit status just before the process ends without the interpreter's exit
#: work (:func:`exit_now`): a child of the warm fork server sends the status to its client.
ENDING: list[Callable[[int], None]] = []


def _served() -> None:
    """Hand a hot command to the warm fork server and exit with its status; return when the
    command is not a hot one, the server is off, or none took it (the command then runs here)."""
    if os.environ.get(COMPLETE_VAR) or os.environ.get(SERVER_OFF_ENV, "") not in ("", "0"):
        return
    from memcli.cli import zygote_client

    words = _words(hoist_globals(sys.argv[1:]))
    if not zygote_client.hot(words):
        return
    from memcli import process_started

    status = zygote_client.run(sys.argv[1:], process_started(), hook=words[0] == "hook")
    if status is None:
        _START_SERVER.append(True)
        return
    os._exit(status)


def exit_now(status: int) -> NoReturn:
    """End the process with ``status`` at once (``os._exit``: no interpreter teardown), after
    the :data:`ENDING` hooks."""
    for hook in list(ENDING):
        hook(status)
    os._exit(status)


def _main(argv: list[str] | None) -> None:
    """:func:`main`, without its guard against a Ctrl-C before the command's own (``_guarded``)."""
    started = time.perf_counter()
    from memcli.cli import fast, output
    from memcli.store.personal import private_umask

    _fresh_state()
    private_umask()  # the person's stores, indexes and git objects are theirs alone (issue 22 point 6)

    args = hoist_globals(list(sys.argv[1:] if argv is None else argv))
    if not _words(args) and "--version" not in args and not os.environ.get(COMPLETE_VAR):
        args = [*args, "--help"]  # bare `memcli` (or only global options): the overview, exit 0
    head = args[: args.index("--")] if "--" in args else args
    output.STATE.json = "--json" in head
    output.STATE.command = _command_name(head)

    def run() -> int:
        if not os.environ.get("MEMCLI_NO_FAST") and fast.run(args):
            return 0
        return _run_typer(args)

    status = _guarded(run)
    if output.STATE.command in NEVER_FAIL and status not in (0, 2):
        status = 0
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # what was left in the buffer met a closed pipe
        status = 0 if output.STATE.command in NEVER_FAIL else _pipe_closed()
    finally:
        _record(head, started, status)
        if "memcli.index.fresh" in sys.modules:  # a read answered: record it, start the walk it owes
            sys.modules["memcli.index.fresh"].run_after_answer()
        if "memcli.text.recache" in sys.modules:  # patterns compiled here, for the next processes
            sys.modules["memcli.text.recache"].save()
        if _START_SERVER:  # no warm server took this command: start one for the next
            from memcli.cli import zygote_client

            zygote_client.start()
    if output.STATE.fast_exit:  # a read hook has answered and the event is logged
        try:
            sys.stderr.flush()
        except OSError:  # the agent closed the pipe: nothing more to say
            pass
        exit_now(status)
    sys.exit(status)


def _fresh_state() -> None:
    """Forget what an earlier ``main`` call in this process left behind: the output settings
    (an earlier command's warnings would join this one's envelope), the global options and
    the workspace it opened (a command that opens none would be logged in it). One process
    runs one command, but ``main`` may be called again (the tests' in-process runner)."""
    from memcli.cli import output
    from memcli.cli.state import GLOBALS

    output.STATE.reset()
    GLOBALS.workspace = GLOBALS.actor = None
    workspace = sys.modules.get("memcli.store.workspace")
    if workspace is not None:
        workspace.OPENED = None  # type: ignore[attr-defined]
    interrupts = sys.modules.get("memcli.interrupts")
    if interrupts is not None:  # an earlier command's write held Ctrl-C to its end
        interrupts.release()


def _record(head: list[str], started: float, status: int) -> None:
    """Append this command to the workspace's event log, if this process opened a workspace.

    Costs one small import and one append; never raises (see ``memcli.store.events``).
    """
    opened = getattr(sys.modules.get("memcli.store.workspace"), "OPENED", None)
    if opened is None:
        return
    try:
        from memcli.store import events

        words = _words(head)
        name = events.safe_name(words[: GROUP_WORDS.get(words[0], 1) if words else 0])
        events.append(opened, name, (time.perf_counter() - started) * 1000, status)
    except Exception:  # noqa: BLE001 - statistics never fail a command
        pass


def _run_typer(args: list[str]) -> int:
    """Parse and run with typer; typer's own outcomes (help, usage errors) become a status."""
    import typer

    from memcli.cli import output
    from memcli.cli.app import app

    if os.environ.get(COMPLETE_VAR):  # a shell asks for completions (`memcli completion SHELL`)
        from typer._completion_classes import completion_init

        completion_init()
    try:
        result = app(args=_optional_values(args), prog_name="memcli", standalone_mode=False)
        if result == 130:  # typer's (core._main) silent answer to a KeyboardInterrupt: raise Exit(130)
            print("memcli: interrupted", file=sys.stderr)
        return result if isinstance(result, int) else 0
    except typer.Exit as err:
        return err.exit_code
    except typer.Abort:
        print("memcli: aborted", file=sys.stderr)
        return 130
    except SystemExit:
        # typer's (its vendored click's) answer to a closed pipe: stdout wrapped, then exit 1
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            return _pipe_closed()
        raise
    except typer.TyperException as err:
        message, hint = _usage_line(err)
        output.error("usage", message, hint, 2)
        return 2


#: Options whose value may be left out (``init --branch [NAME]``) -> the value then used.
#: typer 0.2x does not pass click's ``flag_value`` on, so the default is put in here
#: (``service.branch.DEFAULT_BRANCH``, written out: this module is on every command's start-up path).
OPTIONAL_VALUES = {"--branch": "memcli/memory"}


def _optional_values(args: list[str]) -> list[str]:
    """``args`` with the default value inserted after an :data:`OPTIONAL_VALUES` option given
    without one (last, or followed by another option)."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg in OPTIONAL_VALUES and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append(OPTIONAL_VALUES[arg])
    return out


#: What a usage message shows instead of an argument that looks like a secret.
HIDDEN = "<value not shown: it looks like a secret>"
#: The most characters a usage message shows (its first line only).
USAGE_MESSAGE_CHARS = 200


def _usage_line(err: Exception) -> tuple[str, str]:
    """``(message, hint)`` for a usage error, in memcli's style: lower case, no final stop,
    a suggestion in parentheses, and the help of the command that was being parsed."""
    import re

    message = _usage_message(err)
    message = re.sub(r"^No such command '([^']*)'\.?", r"unknown command '\1'", message)
    message = re.sub(r"^No such option:? ", "unknown option ", message)
    message = re.sub(r"\.?\s*Did you mean (.+?)\??$", r" (did you mean \1?)", message)
    message = re.sub(r"\s*\(Possible options: (.+)\)$", r" (did you mean one of \1?)", message)
    message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    message = message.rstrip(".")
    ctx = getattr(err, "ctx", None)
    path = getattr(ctx, "command_path", "") or "memcli"
    if path == "memcli hook" and message.startswith("unknown command"):  # `hook AGENT EVENT`: an agent's name
        from memcli.agents.registry import names

        return (f"unknown agent or subcommand {message.removeprefix('unknown command ')}",
                f"agents: {', '.join(names())}; subcommands: install, uninstall, check")
    if message.startswith("unknown command") or path == "memcli":
        return message, "see `memcli --help`"
    return message, f"see `{path} --help`"


def _usage_message(err: Exception) -> str:
    """The parser's message for ``err``, safe to print: secrets hidden, one line, at most 200 characters.

    A mistyped command line often holds what the user meant to store (``memcli remember
    "$PEM"`` reads a PEM block as an option), so the offending text is replaced by
    ``HIDDEN`` when ``find_secrets`` finds anything in it; failing that, the message is
    cut where the first secret starts.
    """
    import re

    from memcli.text.secrets import find_secrets

    message = getattr(err, "format_message", err.__str__)()
    offending = getattr(err, "option_name", None)
    if isinstance(offending, str) and offending and find_secrets(offending):
        # click shows the name with control characters escaped as \xNN
        escaped = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m[0]):02x}", offending)
        message = message.replace(offending, HIDDEN).replace(escaped, HIDDEN)
    findings = find_secrets(message)
    if findings:
        first = findings[0]
        lines = message.split("\n")
        start = sum(len(line) + 1 for line in lines[: first.line - 1]) + first.column - 1
        start = max(message.rfind(" ", 0, start), message.rfind("(", 0, start), message.rfind("'", 0, start)) + 1
        message = message[:start] + HIDDEN
    first_line = message.split("\n", 1)[0]
    return first_line if len(first_line) <= USAGE_MESSAGE_CHARS else first_line[: USAGE_MESSAGE_CHARS - 1] + "…"


def _guarded(run: Callable[[], int]) -> int:
    """Call ``run`` and turn every error into its exit status (the only such place)."""
    from memcli.cli import output
    from memcli.errors import MemcliError

    try:
        return run()
    except MemcliError as err:
        from memcli.text.secrets import redact

        # The last guard: whatever a message quotes, no secret-looking span is printed.
        output.error(err.code, redact(err.message), redact(err.hint) if err.hint else err.hint, err.exit_code)
        return err.exit_code
    except KeyboardInterrupt:
        print("memcli: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _pipe_closed()
    except OSError as err:
        refused = _storage_refusal(err)
        if refused is None:
            return _internal(err)
        output.error(refused.code, refused.message, refused.hint, refused.exit_code)
        return refused.exit_code
    except RecursionError:
        output.error("validation_failed", "the input is nested too deeply to process",
                     "give flatter input (JSON, YAML or a pattern with fewer nested levels)", 5)
        return 5
    except Exception as err:  # noqa: BLE001 - the one place that turns bugs into exit 1
        return _internal(err)


def _pipe_closed() -> int:
    """The reader of stdout went away (``memcli recall X | head -1``): end quietly with 141,
    the status a shell gives git killed by SIGPIPE. stdout is pointed at /dev/null first, so
    the interpreter's last flush raises nothing more (Python's documentation, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def _storage_refusal(err: OSError) -> StorageFailed | None:
    """The ``StorageFailed`` for an OS refusal to write (disk full, quota, read-only, no
    permission, file too large), or None for any other ``OSError`` (a bug: exit 1)."""
    import errno

    from memcli.errors import StorageFailed

    codes = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "the disk quota is exceeded",
             errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
             errno.EPERM: "operation not permitted", errno.EFBIG: "the file is too large for this system"}
    if err.errno not in codes:
        return None
    where = f" ({err.filename})" if err.filename else ""
    return StorageFailed(f"the disk refused a write{where}: {codes[err.errno]}; nothing was written",
                         hint="free some space or fix the permissions, then retry")


def _internal(err: Exception) -> int:
    """Exit 1 for a bug: one line, the traceback in the log (or on the terminal with ``MEMCLI_DEBUG``)."""
    from memcli.cli import output

    where = _log_traceback()  # called inside the caller's except block: the traceback is still there
    output.error("internal", f"internal error: {type(err).__name__}: {err}",
                 f"details in {where}" if where else "run again with MEMCLI_DEBUG=1 for the traceback", 1)
    return 1


def _log_traceback() -> str | None:
    import traceback

    if os.environ.get("MEMCLI_DEBUG"):
        traceback.print_exc()
        return None
    try:
        from memcli.store.workspace import find_root

        path = find_root(os.environ.get("MEMCLI_WORKSPACE")) / ".cache" / "last-error.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(traceback.format_exc(), encoding="utf-8")
        return str(path)
    except Exception:  # noqa: BLE001 - best effort only
        return None
