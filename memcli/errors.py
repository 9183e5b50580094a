"""Errors a user can cause, each with a stable code and exit status.

One class per condition (STYLE.md habit 4). The exit-code table below is frozen: a
status, once published, is never renumbered; new conditions take new numbers. The
README's exit-code table is generated from ``EXIT_CODES`` and a test keeps them equal.

Every message is one line a person can act on: what is wrong, and what to try next.
"""

from __future__ import annotations

#: Exit statuses, frozen. ``(status, meaning)``; the CLI and the docs read this table.
EXIT_CODES: dict[int, str] = {
    0: "success (including a no-op such as an exact duplicate or a repeated idempotency key)",
    1: "internal error (a bug: run again with MEMCLI_DEBUG=1 and report the traceback)",
    2: "usage error: unknown command or option, missing argument, a value of the wrong type, "
       "an empty query or an invalid regular expression",
    3: "no workspace found, or the workspace is not usable",
    4: "memory not found (unknown id, or not visible in your scopes)",
    5: ("validation failed: a well-formed value memcli does not accept (scope, category, id or an id prefix "
        "under 4 characters, date, size, range, text)"),
    6: "sensitive data (a secret or personal number) refused by the write gate",
    7: "conflict: an ambiguous id prefix, or a subject already held by an active memory",
    8: "review gate refused the action (self-approval, not pending, wrong status)",
    9: "locked: the workspace lock or git's index.lock is held by another process",
    10: "git failed (the files were restored; nothing was written)",
    11: "a memory file cannot be parsed (path, line and reason are given)",
    12: "unknown git revision (a commit, branch or tag that the workspace's repository does not hold)",
    13: "history conflict: a write, undo or rollback refused because later commits or uncommitted edits touch the "
        "same files",
    14: "unsafe git state: a detached HEAD, or a rebase, merge, cherry-pick, revert, bisect or `git am` in progress "
        "(nothing was written)",
    15: "the disk refused a write (no space left, read-only, over quota or no permission); nothing was written",
    16: "sync stopped: a true conflict with the remote, a remote that refused or could not be reached, or a passed "
        "deadline (nothing is left half-merged)",
    17: "check failed: a memory file in the checked range breaks a rule (one line per problem)",
    18: "a hook check failed: an installed memcli hook did not run cleanly as its agent would run it",
    19: ("the warm server's process that ran the command ended without an exit status (killed); run it again, "
         "or with MEMCLI_NO_SERVER=1 (a hook is never left so: it runs again in-process)"),
    130: "interrupted: Ctrl-C (SIGINT), or a confirmation prompt aborted (128 + the signal's number, as shells say)",
    141: "the output pipe was closed by its reader (`memcli recall X | head -1`): nothing more is printed "
         "(128 + SIGPIPE's 13, as git)",
    143: "ended by SIGTERM (128 + 15), as an agent ends its MCP server",
}


class MemcliError(Exception):
    """Base class for every error a user can cause.

    Attributes:
        code: stable machine-readable name (``snake_case``), used in the ``--json``
            error envelope.
        exit_code: process exit status, a key of ``EXIT_CODES``.
    """

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        """Args: message: what is wrong; hint: the next command or step to try."""
        self.message = message
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        """The one-line form: ``message; hint`` (hint optional)."""
        return f"{self.message}; {self.hint}" if self.hint else self.message


class UsageProblem(MemcliError):
    """An option or argument is malformed in a way the parser could not catch."""

    code = "usage"
    exit_code = 2


class UnknownStore(UsageProblem):
    """A path given as an agent's memory store is none memcli knows (``import``; exit 2)."""

    code = "unknown_store"


class WorkspaceNotFound(MemcliError):
    """No ``memcli.toml`` in the given path, ``$MEMCLI_WORKSPACE`` or any parent."""

    code = "workspace_not_found"
    exit_code = 3


class WorkspaceInvalid(MemcliError):
    """The workspace exists but cannot be used (bad ``memcli.toml``, not writable)."""

    code = "workspace_invalid"
    exit_code = 3


class MemoryNotFound(MemcliError):
    """No memory with that id (or prefix) is visible in the caller's scopes."""

    code = "memory_not_found"
    exit_code = 4


class ValidationFailed(MemcliError):
    """A value fails the schema of SPEC.md section 2 or the validation gate (section 3)."""

    code = "validation_failed"
    exit_code = 5


class ScopeViolation(ValidationFailed):
    """A write or read names a scope the actor may not use (another user's scope)."""

    code = "scope_violation"


class HiddenText(ValidationFailed):
    """A value holds invisible characters (tag characters, zero-width or bidirectional
    controls, stray variation selectors): refused at write, naming the code point and place."""

    code = "hidden_text"


class SecretDetected(MemcliError):
    """The sensitive-data gate found a secret; the message names its kind, never its text."""

    code = "secret_detected"
    exit_code = 6


class AmbiguousId(MemcliError):
    """An id prefix matches more than one memory."""

    code = "ambiguous_id"
    exit_code = 7


class SubjectConflict(MemcliError):
    """An active memory already holds this scope and subject and the caller asked to fail."""

    code = "subject_conflict"
    exit_code = 7


class ReviewRefused(MemcliError):
    """The review gate refused: self-approval, or the memory is not in a reviewable state."""

    code = "review_refused"
    exit_code = 8


class WrongStatus(MemcliError):
    """The memory's status does not allow this action (e.g. forgetting a superseded one)."""

    code = "wrong_status"
    exit_code = 8


class WorkspaceLocked(MemcliError):
    """Another memcli process held the workspace lock past the wait limit."""

    code = "workspace_locked"
    exit_code = 9


class GitLocked(MemcliError):
    """git's ``index.lock`` is held (or stale); nothing was committed or left written."""

    code = "git_locked"
    exit_code = 9


class GitFailed(MemcliError):
    """A git command failed; the files memcli wrote were restored."""

    code = "git_failed"
    exit_code = 10


class InvalidMemoryFile(MemcliError):
    """A memory file cannot be parsed or fails the schema.

    Attributes:
        path: the file, relative to the workspace where possible.
        lineno: 1-based line of the problem, or ``None`` when not known.
        reason: what is wrong, in a few words.
    """

    code = "invalid_memory_file"
    exit_code = 11

    def __init__(self, path: str, reason: str, lineno: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.lineno = lineno
        where = f"{path}:{lineno}" if lineno else path
        super().__init__(f"{where}: {reason}", hint="fix or remove the file; `memcli doctor` lists every such file")


class FileOverLimit(InvalidMemoryFile):
    """A memory file over one of the reader's bounds (size, YAML aliases, nesting, values;
    issue 22 point 9): never parsed further, never merged field by field (the merge driver
    calls it a conflict), quarantined when it arrives by a pull. Exit 11, as any unreadable file."""

    code = "file_over_limit"


class RevisionNotFound(MemcliError):
    """A git revision (``--at``, ``--to``, ``diff A..B``) names nothing in the repository."""

    code = "revision_not_found"
    exit_code = 12


class HistoryConflict(MemcliError):
    """``undo`` or ``rollback`` would overwrite changes made after the commit it reverses, or a
    write would commit a person's uncommitted edits of a file under memcli's name."""

    code = "history_conflict"
    exit_code = 13


class SyncStopped(MemcliError):
    """``memcli sync`` stopped before the store and its remote agreed: a true conflict (the
    merge was aborted, nothing half-merged), a remote that refused or could not be reached,
    or the ``--deadline`` passed."""

    code = "sync_stopped"
    exit_code = 16


class CheckFailed(MemcliError):
    """``memcli check`` found memory files that break a rule (invalid, a secret, an unsafe
    path, or an approval by the memory's own proposer)."""

    code = "check_failed"
    exit_code = 17


class SettingsUnmergeable(ValidationFailed):
    """An agent's settings file has a shape memcli cannot merge into safely (``hook install``)."""

    code = "settings_unmergeable"


class HookCheckFailed(MemcliError):
    """``hook check`` found no memcli hook to run, or an installed hook that failed."""

    code = "hook_check_failed"
    exit_code = 18


class TranscriptFormatUnknown(ValidationFailed):
    """A session transcript in none of the formats memcli reads (Claude Code, Codex rollout,
    Gemini CLI chat log); the message names them. Exit 5, as every other value memcli does
    not accept."""

    code = "transcript_format_unknown"


class UnsafeGitState(GitFailed):
    """The repository is in a state where a commit would be lost or mixed into another operation:
    a detached HEAD, or a rebase, ``am``, merge, cherry-pick, revert or bisect in progress."""

    code = "unsafe_git_state"
    exit_code = 14


class StorageFailed(MemcliError):
    """The operating system refused to write (``ENOSPC``, ``EDQUOT``, ``EROFS``, ``EACCES``, ``EPERM``)."""

    code = "storage_failed"
    exit_code = 15


def refused_write(err: OSError) -> bool:
    """Whether ``err`` is the operating system refusing a write (:class:`StorageFailed`'s errnos,
    and ``EFBIG``), not a fault of what memcli asked."""
    import errno

    return err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG)


class ModelUnavailable(WorkspaceInvalid):
    """The embedding model of the semantic retriever cannot be found, fetched or loaded
    (``[search] model``, ``$MEMCLI_EMBED_MODEL``, or the ``semantic`` extra is missing).
    Exit 3, as every other unusable setting of the workspace; where the model is optional
    (``[search] semantic = "auto"``) it is a reason in ``memcli doctor``, never a failure."""

    code = "model_unavailable"
