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


def _command_name(argv: list[str]) -> str:
    words = _words(argv)
    return words[0] if words else "memcli"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``memcli`` console script.

    Args:
        argv: arguments without the program name (default ``sys.argv[1:]``).
    """
    started = time.perf_counter()
    from memcli.cli import fast, output

    args = list(sys.argv[1:] if argv is None else argv)
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
    finally:
        _record(head, started, status)
    sys.exit(status)


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

    try:
        result = app(args=_optional_values(args), prog_name="memcli", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except typer.Exit as err:
        return err.exit_code
    except typer.Abort:
        print("memcli: aborted", file=sys.stderr)
        return 130
    except typer.TyperException as err:
        output.error("usage", _usage_message(err), "see `memcli --help` or `memcli COMMAND --help`", 2)
        return 2


#: Options whose value may be left out (``init --branch [NAME]``) -> the value then used.
#: typer 0.2x does not pass click's ``flag_value`` on, so the default is put in here.
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


def _usage_message(err: Exception) -> str:
    """The parser's message for ``err``, safe to print: secrets hidden, one line, at most 200 characters.

    A mistyped command line often holds what the user meant to store (``memcli remember
    "$PEM"`` reads a PEM block as an option), so the offending text is replaced by
    ``HIDDEN`` when ``find_secrets`` finds anything in it; failing that, the message is
    cut where the first secret starts.
    """
    import re

    from memcli.policy.secrets import find_secrets

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


def _guarded(run) -> int:  # noqa: ANN001
    """Call ``run`` and turn every error into its exit status (the only such place)."""
    from memcli.cli import output
    from memcli.errors import MemcliError

    try:
        return run()
    except MemcliError as err:
        from memcli.policy.secrets import redact

        # The last guard: whatever a message quotes, no secret-looking span is printed.
        output.error(err.code, redact(err.message), redact(err.hint) if err.hint else err.hint, err.exit_code)
        return err.exit_code
    except KeyboardInterrupt:
        print("memcli: interrupted", file=sys.stderr)
        return 130
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


def _storage_refusal(err: OSError):  # noqa: ANN202 - StorageFailed | None
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
