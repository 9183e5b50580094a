"""Team commands: ``sync`` with a git remote, ``check`` for CI, and git's merge driver."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memcli.cli.app import JsonOpt, app, ctx, flush_warnings
from memcli.cli.output import emit

if TYPE_CHECKING:
    from memcli.service.check import CheckResult


@app.command()
def sync(
    remote: Annotated[Optional[str], typer.Argument(help="The git remote (default: the branch's upstream, "
                                                         "else the only remote, else origin).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing when it succeeds (for hooks).")] = False,
    deadline: Annotated[Optional[float], typer.Option(
        "--deadline", min=0.1, help="Seconds the whole sync may take; past it, stop cleanly (for hooks).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Fetch, merge (memory files field by field) and push the store; never force-pushes."""
    from memcli.service.sync import sync as do_sync

    context = ctx()
    result = do_sync(context, remote, deadline)
    flush_warnings(context)
    emit(result.to_dict(), None if quiet else result.message())


@app.command()
def check(
    targets: Annotated[Optional[list[str]], typer.Argument(
        metavar="[REV..REV | FILE...]", help="Commits to check (default: every memory file at HEAD); with --staged, "
                                             "the staged files pre-commit passes (their stores are found from them).")]
    = None,
    staged: Annotated[bool, typer.Option("--staged", help="Check the staged changes (for pre-commit).")] = False,
    stale: Annotated[bool, typer.Option(
        "--stale", help="Also fail on active memories the range's code commits made outdated (files renamed "
                        "or deleted, identifiers or targets removed); without a range, on any outdated at HEAD.")]
    = False,
    install_hook: Annotated[bool, typer.Option(
        "--install-hook", help="Install a git pre-commit hook running `check --staged` for this store's commits "
                               "only (the memory branch: scoped to its worktree; never the code's hooks).")] = False,
    uninstall_hook: Annotated[bool, typer.Option(
        "--uninstall-hook", help="Remove the hook --install-hook installed.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Check changed memory files for CI: valid, secret-free, safely named, approved by another author."""
    from memcli.errors import UsageProblem
    from memcli.service.check import check as do_check
    from memcli.service.check import raise_if_failed

    if install_hook or uninstall_hook:
        from memcli.service import precommit

        if targets or staged or stale or (install_hook and uninstall_hook):
            raise UsageProblem("--install-hook and --uninstall-hook take no range, file or other option",
                               hint="run `memcli check --install-hook` in the store")
        context = ctx()
        done = precommit.install(context) if install_hook else precommit.uninstall(context)
        flush_warnings(context)
        verb = ("installed" if install_hook else "removed") if done.changed else \
            ("already installed" if install_hook else "not installed")
        emit(done.to_dict(), f"pre-commit hook {verb}: {done.path} ({done.layout}; runs `memcli check --staged` "
                             "for this store's commits only)")
        return
    if targets and not staged and len(targets) > 1:
        raise UsageProblem("check takes one range (REV..REV or REV); file names only with --staged",
                           hint="memcli check origin/main..HEAD, or memcli check --staged FILE...")
    if staged and targets:  # pre-commit passes the staged memory files: check the store(s) holding them
        _check_files(targets, stale, json_)
        return
    context = ctx(tolerant=True)  # a range is judged by its base's settings; a broken memcli.toml is rule config
    result = do_check(context, targets[0] if targets else None, staged, stale)
    flush_warnings(context)
    _report(result, json_)
    raise_if_failed(result)


def _report(result: CheckResult, json_: bool) -> None:
    if result.problems and not json_:
        for problem in result.problems:
            print(f"memcli: {problem.line()}", file=sys.stderr)
    if result.problems and json_:
        from memcli.cli.output import STATE

        STATE.warnings.extend(p.line() for p in result.problems)
    if not result.problems:
        emit(result.to_dict(), f"ok: {result.files} file{'' if result.files == 1 else 's'} checked ({result.range})")


def _check_files(files: list[str], stale: bool, json_: bool) -> None:
    """``check --staged FILE...``: the staged changes of each store holding one of ``files``
    (files in no store are not memcli's: named and passed)."""
    from memcli.cli.state import GLOBALS
    from memcli.service import Ctx
    from memcli.service.check import CheckResult, raise_if_failed
    from memcli.service.check import check as do_check
    from memcli.service.precommit import stores_of

    roots, outside = stores_of(files)
    if outside:
        print(f"memcli: not in a memcli store, not checked: {', '.join(outside[:5])}", file=sys.stderr)
    total = CheckResult("staged changes")
    for root in roots:
        context = Ctx.open(str(root), GLOBALS.actor)
        result = do_check(context, None, True, stale)
        flush_warnings(context)
        total.files += result.files
        total.problems += result.problems
    _report(total, json_)
    raise_if_failed(total)


@app.command("merge-file", hidden=True)
def merge_file(
    base: Annotated[Path, typer.Argument()], ours: Annotated[Path, typer.Argument()],
    theirs: Annotated[Path, typer.Argument()], path: Annotated[str, typer.Argument()] = "",
) -> None:
    """git's merge driver for memory files (%O %A %B %P); registered by `memcli init`."""
    from memcli.service.sync import merge_driver

    result = merge_driver(base, ours, theirs, path or str(ours))
    for line in result.lines:
        print(line, file=sys.stderr)
    raise typer.Exit(0 if result.merged else 16)


@app.command()
def resolve(
    take: Annotated[Optional[str], typer.Option(
        "--take", metavar="ours|theirs", help="Take this side of every conflicted file, without asking.")] = None,
    keep: Annotated[Optional[tuple[str, str]], typer.Option(
        "--keep", metavar="ID OTHER", help="Two active memories for one subject: keep ID, retire OTHER "
                                          "(superseded by ID).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Finish what sync could not: a true conflict, two stores started apart, or two active memories for one subject.

    With a blocked sync, shows both sides of each conflicted file and asks which to keep (or takes
    --take's side), then commits the merge; `memcli sync` sends it. Exit 4 when nothing is
    blocked, 8 when an agent's tool runs it, 130 when a question is left unanswered."""
    from memcli.errors import UsageProblem

    context = ctx()
    if keep:
        from memcli.service.resolve import keep as do_keep

        if take:
            raise UsageProblem("--keep and --take are two different resolutions; give one",
                               hint="memcli resolve --keep ID OTHER")
        kept, retired, commit = do_keep(context, keep[0], keep[1])
        flush_warnings(context)
        emit({"kept": kept, "retired": retired, "commit": commit}, f"kept {kept}; {retired} is superseded by it")
        return
    from memcli.service.resolve import SIDES, finish, pending

    if take is not None and take not in SIDES:
        raise UsageProblem(f"--take is ours or theirs, not {take[:20]!r}", hint="memcli resolve --take theirs")
    _person_only()
    found = pending(context)
    choices: dict[str, str] = {}
    for conflict in found.files:
        if take is not None:
            choices[conflict.path] = take
            continue
        print(f"{conflict.path}: {'; '.join(conflict.reasons)}", file=sys.stderr)
        for side in ("ours", "theirs"):
            shown = getattr(conflict, side)
            said = "(no such file)" if shown is None else ", ".join(f"{k}: {v}" for k, v in shown.items() if v)
            print(f"  {side} ({'this store' if side == 'ours' else found.ref}): {said}", file=sys.stderr)
        answer = typer.prompt("keep [o]urs or [t]heirs (Ctrl-C leaves everything as it is)", err=True)
        choice = {"o": "ours", "ours": "ours", "t": "theirs", "theirs": "theirs"}.get(answer.strip().lower())
        if choice is None:
            raise UsageProblem(f"{answer.strip()[:20]!r} is neither ours nor theirs; nothing changed",
                               hint="run `memcli resolve` again, or `memcli resolve --take ours|theirs`")
        choices[conflict.path] = choice
    done = finish(context, choices)
    flush_warnings(context)
    text = [f"resolved: merged {found.ref} as {done.commit[:10]}"
            + (f" ({', '.join(f'{p}: {s}' for p, s in done.taken.items())})" if done.taken else ""),
            *done.lines, "run `memcli sync` to send it"]
    emit({**done.to_dict(), "pending": found.to_dict()}, "\n".join(text))


def _person_only() -> None:
    """An agent's tool may not choose a side of a review conflict (exit 8)."""
    import os

    from memcli.agents.callers import calling_agent
    from memcli.errors import ReviewRefused

    found = calling_agent(os.environ)
    if found is not None:
        raise ReviewRefused(f"{found[0]}'s tool runs memcli ({found[1]}): only a person resolves a sync; nothing "
                            "was written", hint="run `memcli resolve` yourself in a terminal, outside the agent")
