"""Commands that write: init, remember, supersede, approve, reject, forget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memcli.cli import writing
from memcli.cli.app import JsonOpt, app, ctx, memory_ref
from memcli.cli.output import emit

if TYPE_CHECKING:
    pass

Scope = Annotated[Optional[str], typer.Option("--scope", "-s", help="global, project, user:NAME, agent:NAME, …")]
Category = Annotated[Optional[str], typer.Option("--category", "-c", help="preference, fact, decision, procedure, … "
                                                  "(a gotcha or pitfall: fact, tagged so).")]
Subject = Annotated[Optional[str], typer.Option(
    "--subject", help="Conflict key: one active memory per scope and subject.")]
Importance = Annotated[Optional[int], typer.Option("--importance", "-i", help="1 (low) to 5 (high); default 3.")]
Tags = Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="A label; repeat for several.")]
Paths = Annotated[Optional[list[str]], typer.Option(
    "--path", help="A file glob the memory is about, relative to the project's top folder (src/**/*.py); repeatable.")]
Ttl = Annotated[Optional[str], typer.Option("--ttl", help="Time to live: 30d, 12h, 2w, 1y.")]
ExpireAt = Annotated[Optional[str], typer.Option("--expire-at", help="Expiry: a date (00:00 UTC) or RFC 3339 time.")]
Source = Annotated[Optional[str], typer.Option(
    "--source-type", help="user_said, tool_result, model_derived, admin_edit. Default: user_said, or model_derived "
                          "when an agent's shell tool runs memcli (CLAUDECODE, CODEX_THREAD_ID, GEMINI_CLI).")]
RunId = Annotated[Optional[str], typer.Option("--run-id", help="Session or run that produced it (provenance).")]
IdemKey = Annotated[Optional[str], typer.Option("--idempotency-key", help="A repeat with the same key writes nothing.")]
Pinned = Annotated[Optional[bool], typer.Option(
    "--pinned/--no-pinned", help="Always inject it first in `context` (supersede keeps the old setting).")]
Deny = Annotated[Optional[list[str]], typer.Option(
    "--deny", metavar="PATTERN",
    help="A guard: the agents' pre-tool hooks deny calls matching PATTERN, in Claude Code's permission-rule syntax "
         "(Bash(npm install:*), Edit(migrations/**), Read(.env), WebFetch(domain:example.com)); repeatable "
         "(docs/guards.md).")]
Ask = Annotated[Optional[list[str]], typer.Option(
    "--ask", metavar="PATTERN", help="A guard: the pre-tool hooks ask the person before a matching call; repeatable.")]
WarnGuard = Annotated[Optional[list[str]], typer.Option(
    "--warn", metavar="PATTERN",
    help="A guard that lets a matching call through and counts it as a violation (memcli stats); repeatable.")]
OnConflict = Annotated[Optional[str], typer.Option(
    "--on-conflict", help="When the subject is held: supersede (default) or fail.")]


# The typer-free bodies (``writing``), under the names the other command modules import.
_read_text, _options, _report, _early = writing.read_text, writing.options, writing.report, writing.early


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Folder for the workspace (default: here).")] = Path("."),
    hidden: Annotated[bool, typer.Option("--hidden", help="Keep it in PATH/.memcli/ inside a project.")] = False,
    branch: Annotated[Optional[str], typer.Option(
        "--branch", metavar="[NAME]",
        help="In a code repository: keep the store on its own orphan branch NAME (default memcli/memory), "
             "checked out in .memcli/, so memory never follows code branches.")] = None,
    in_tree: Annotated[bool, typer.Option(
        "--in-tree",
        help="At a code repository's root: keep the store as a folder of the code repository, not on a memory "
             "branch.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Create a workspace: memcli.toml, memories/, a git repository when PATH is not in one.

    At the root of a code repository the store goes on its own branch (as --branch) unless
    --in-tree or --hidden is given."""
    from memcli.errors import UsageProblem
    from memcli.service.setup import empty_repository
    from memcli.service.setup import init as do_init

    if in_tree and branch is not None:
        raise UsageProblem("--in-tree and --branch exclude each other", hint="give one of them")

    empty = branch is None and not (in_tree or hidden) and empty_repository(path)
    root, created, commit, on_branch, taken = do_init(path, hidden, branch, in_tree)
    text = f"initialised memcli workspace in {root}" if created else f"already a memcli workspace: {root}"
    standalone = bool(created and empty and not on_branch)
    said = ""
    if standalone:  # a fresh `git init`: a store of its own, not memory beside code (README, "Where memory lives")
        said = ("memcli: this repository had no commit and no file, so it is a memory store of its own: memcli's "
                 "commit is its first, on its current branch; for memory beside code on its own branch "
                 "(memcli/memory in .memcli/), make the code's first commit before `memcli init`, or run "
                 "`memcli init --branch` in a fresh repository")
    if taken:
        text = f"took the project's memory: {taken}; workspace {root} (nothing new was created)"
    if not created and (branch is not None or in_tree or hidden):
        text += "; the layout options change nothing for a workspace that exists (move its files by hand)"
    if created and on_branch:
        text += (f" on its own branch {on_branch} (ignored by the code's git; memory never follows code branches"
                 + ("; `memcli init --in-tree` keeps it as a folder of the code instead)" if branch is None else ")"))
    emit({"root": str(root), "created": created, "commit": commit, "branch": on_branch, "taken": taken,
          "standalone": standalone}, text)
    from memcli.cli.output import STATE

    if said and not STATE.json:
        print(said, file=sys.stderr)


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="The memory text; '-' reads it from stdin.")],
    scope: Scope = None, category: Category = None, subject: Subject = None, importance: Importance = None,
    tag: Tags = None, path: Paths = None, ttl: Ttl = None, expire_at: ExpireAt = None,
    source_type: Source = None, run_id: RunId = None, idempotency_key: IdemKey = None,
    pinned: Pinned = None, on_conflict: OnConflict = None,
    deny: Deny = None, ask: Ask = None, warn_guard: WarnGuard = None,
    allow_secret: Annotated[Optional[list[str]], typer.Option(
        "--allow-secret", metavar="KIND",
        help="Let one kind of secret through the gate (a public test value); recorded in provenance. "
             "Repeatable.")] = None,
    all_projects: Annotated[bool, typer.Option(
        "--all-projects",
        help="Keep this personal memory (--scope user:NAME) in your cross-project store, read in every "
             "workspace.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Write a memory through the gates: validation, secrets, idempotency, duplicates, conflict, review.

    Personal scopes (user:NAME, session:ID) go to your own store outside the project repository."""
    writing.remember(text, scope=scope, category=category, subject=subject, importance=importance, tag=tag,
                     path=path, ttl=ttl, expire_at=expire_at, source_type=source_type, run_id=run_id,
                     idempotency_key=idempotency_key, pinned=pinned, on_conflict=on_conflict, deny=deny, ask=ask,
                     warn_guard=warn_guard, allow_secret=allow_secret, all_projects=all_projects)


@app.command()
def supersede(
    old: Annotated[str, typer.Argument(
        callback=memory_ref, help="Id (or unique prefix) of the active memory to replace.")],
    text: Annotated[Optional[str], typer.Argument(
        help="The replacement text; '-' reads stdin; left out, the old text (to change its guards or labels).")] = None,
    scope: Scope = None, category: Category = None, subject: Subject = None, importance: Importance = None,
    tag: Tags = None, path: Paths = None, ttl: Ttl = None, expire_at: ExpireAt = None,
    source_type: Source = None, run_id: RunId = None, idempotency_key: IdemKey = None,
    pinned: Pinned = None, deny: Deny = None, ask: Ask = None, warn_guard: WarnGuard = None,
    json_: JsonOpt = False,
) -> None:
    """Replace a memory: write the new one and mark the old superseded, linked both ways, in one commit.

    Guards (--deny, --ask, --warn) given replace the old memory's; left out, they are kept."""
    from memcli.service.write import supersede as do_supersede

    context = ctx()
    opts = _options(scope, category, subject, importance, tag, path, ttl, expire_at, source_type, run_id,
                    idempotency_key, pinned, None, deny, ask, warn_guard)
    said = None if text is None else _read_text(text)
    early = _early(context, said, opts)
    result = do_supersede(context, old, said, opts)
    _report(context, result, early.result(context, result))


@app.command()
def approve(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix of a pending memory.")],
    reason: Annotated[Optional[str], typer.Option("--reason", help="Why (kept in review.reason).")] = None,
    json_: JsonOpt = False,
) -> None:
    """Approve a memory waiting in review: it becomes active (CI enforces who may: memcli check)."""
    from memcli.service.write import approve as do_approve

    context = ctx()
    _report(context, do_approve(context, memory_id, reason))
    _enforcement_note()


def _enforcement_note() -> None:
    from memcli.cli.output import STATE

    if not STATE.json:
        print("memcli: note: the reviewer's name here is a label; `memcli check` in CI enforces that "
              "someone other than the proposer (by git author) approved it", file=sys.stderr)


@app.command()
def reject(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix of a pending memory.")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is rejected (required).")],
    json_: JsonOpt = False,
) -> None:
    """Reject a memory waiting in review, with a reason."""
    from memcli.service.write import reject as do_reject

    context = ctx()
    _report(context, do_reject(context, memory_id, reason))


@app.command()
def forget(
    memory_id: Annotated[str, typer.Argument(
        metavar="ID", callback=memory_ref, help="Id or unique prefix of an active memory.")],
    json_: JsonOpt = False,
) -> None:
    """Archive a memory (soft, reversible): it is no longer served; the file and history stay."""
    from memcli.service.write import forget as do_forget

    context = ctx()
    _report(context, do_forget(context, memory_id))
