"""``memcli check``: the review gate where it cannot be spoofed (SPEC.md section 10).

Locally, ``--actor`` and ``$MEMCLI_ACTOR`` are labels anyone can set, so the review gate
of ``approve`` is a courtesy. ``check`` enforces it over what git records — commit
authors — for CI, ``pre-commit`` and server-side hooks. For each memory file changed in
the checked range it asks:

* is the file valid (it parses and fits the schema, as every read path would take it)?
* is it free of secrets (the write gate's ``gates.check_memory``)?
* is it safely named (a regular file ``memories/<scope path>/…/<id>[-slug].md``, the
  folder matching its scope; no symbolic link)?
* if it is in a shared scope (``[scopes] shared``) and became ``active`` from
  ``pending_review``, was that done in a commit whose git author differs from the author
  of the commit that proposed it (unless ``[review] allow_self_approve``)? And a memory
  written by an agent or a tool (``model_derived``, ``tool_result``) into a shared scope
  may not arrive ``active`` without review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from memcli.errors import CheckFailed, InvalidMemoryFile, MemcliError, RevisionNotFound

#: Provenance of writes that must pass review in a shared scope (SPEC.md section 3, gate 6).
NEEDS_REVIEW = ("model_derived", "tool_result")


@dataclass
class Problem:
    """One broken rule: the file (relative to the workspace) and what is wrong."""

    path: str
    rule: str
    message: str

    def line(self) -> str:
        return f"{self.path}: {self.message}"

    def to_dict(self) -> dict:
        return {"path": self.path, "rule": self.rule, "message": self.message}


@dataclass
class CheckResult:
    """What ``check`` looked at: the range, the files, and the problems found."""

    range: str
    files: int = 0
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"range": self.range, "files": self.files, "problems": [p.to_dict() for p in self.problems]}


class _Git:
    def __init__(self, ctx) -> None:  # noqa: ANN001
        self.repo = ctx.git()
        self.root = ctx.ws.root

    def lines(self, *args: str) -> list[str]:
        status, out, err = self.repo.raw(*args)
        if status != 0:
            from memcli.git.run import first_line

            said = first_line(err)
            named = next((a for a in reversed(args[1:]) if not a.startswith("-")), "").removesuffix("^{commit}")
            what = f"git {args[0]} failed: {said}" if said else f"no such revision: {named}"
            raise RevisionNotFound(what, hint="give a range such as origin/main..HEAD")
        return out.decode("utf-8", "replace").splitlines()

    def blob(self, spec: str) -> bytes | None:
        status, out, _ = self.repo.raw("cat-file", "blob", spec)
        return out if status == 0 else None

    def mode(self, rev: str | None, path: str) -> str:
        if rev is None:  # the staged version
            rows = self.lines("ls-files", "-s", "--", path)
        else:
            rows = self.lines("ls-tree", rev, "--", path)
        return rows[0].split()[0] if rows else ""


def _range(git: _Git, spec: str | None, staged: bool) -> tuple[str | None, str | None, str]:
    """``(old, new, label)``: ``new`` None means the staged versions; ``old`` None: no parent."""
    if staged:
        head = git.repo.raw("rev-parse", "-q", "--verify", "HEAD")[0] == 0
        return ("HEAD" if head else None), None, "staged changes"
    if not spec:
        return None, "HEAD", "every memory file at HEAD"
    if ".." in spec:
        old, _, new = spec.partition("..")
        old, new = old or "HEAD", new or "HEAD"
    else:
        old, new = f"{spec}^", spec
    for rev in (old, new):
        git.lines("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return old, new, f"{old}..{new}"


def _changed(git: _Git, old: str | None, new: str | None) -> list[str]:
    """Memory files (paths relative to the workspace) added or changed from ``old`` to ``new``."""
    if old is None and new is not None:
        return git.lines("ls-tree", "-r", "--name-only", new, "--", "memories")
    args = ["diff", "--name-only", "--no-renames", "--diff-filter=AMRTC", "--relative"]
    if new is None:
        args += ["--cached", old] if old else ["--cached"]
    elif old is not None:  # (old None with a new commit: the ls-tree above)
        args += [old, new]
    return git.lines(*args, "--", "memories")


def check(ctx, spec: str | None = None, staged: bool = False) -> CheckResult:  # noqa: ANN001
    """Check the memory files changed in a range (see the module docstring).

    Args:
        ctx: the service context.
        spec: ``OLD..NEW`` (either side may be empty for HEAD), or one revision (its own
            changes); None checks every memory file at HEAD and its whole history.
        staged: check the staged versions against HEAD (for a ``pre-commit`` hook); the
            approving author is then the git identity about to commit.

    Returns:
        A :class:`CheckResult`; the CLI exits with :class:`CheckFailed` when it holds problems.

    Raises:
        RevisionNotFound: a revision of the range is unknown.
    """
    git = _Git(ctx)
    old, new, label = _range(git, spec, staged)
    result = CheckResult(label)
    prefix = PurePosixPath(next(iter(git.lines("rev-parse", "--show-prefix")), ""))
    for rel in _changed(git, old, new):
        if not rel.endswith(".md"):
            continue
        result.files += 1
        full = (prefix / rel).as_posix()
        spec_new = f":{full}" if new is None else f"{new}:{full}"
        result.problems.extend(_check_file(ctx, git, rel, spec_new, git.mode(new, rel), old, new, full))
    return result


def _check_file(ctx, git: _Git, rel: str, spec_new: str, mode: str, old: str | None,  # noqa: ANN001
                new: str | None, full: str) -> list[Problem]:
    from memcli.policy import gates

    if mode == "120000":
        return [Problem(rel, "path", "a symbolic link; memory files must be regular files")]
    parts = PurePosixPath(rel).parts
    if parts[0] != "memories" or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return [Problem(rel, "path", "not a safe memory path (memories/<scope>/…/<id>.md)")]
    data = git.blob(spec_new)
    if data is None:
        return []
    try:
        loaded = ctx.ws.files.load(ctx.ws.root / rel, data=data, mtime=0)
    except InvalidMemoryFile as err:
        return [Problem(rel, "valid", err.reason + (f" (line {err.lineno})" if err.lineno else ""))]
    memory = loaded.memory
    problems = []
    try:
        gates.check_memory(memory)
    except MemcliError as err:
        problems.append(Problem(rel, "secret", err.message.removeprefix("refused: ")))
    if not PurePosixPath(rel).name.startswith(memory.id):
        problems.append(Problem(rel, "path", f"the file name does not start with its id {memory.id}"))
    config = ctx.ws.config
    if memory.status == "active" and gates.review_required(memory.scope, memory.provenance.source_type,
                                                           config.shared_scopes):
        problems.extend(_review_problems(ctx, git, rel, full, memory, old, new))
    return problems


def _status_at(git: _Git, rev: str, full: str) -> str | None:
    data = git.blob(f"{rev}:{full}")
    if data is None:
        return None
    from memcli import frontmatter

    try:
        meta = frontmatter.parse(data, full, round_trip=False).meta
    except MemcliError:
        return None
    return str(meta.get("status", "active")) if isinstance(meta, dict) else None


def _review_problems(ctx, git: _Git, rel: str, full: str, memory, old: str | None,  # noqa: ANN001
                     new: str | None) -> list[Problem]:
    """An agent's shared-scope memory is active: it must have been approved by someone else."""
    history = git.lines("log", "--format=%H%x00%ae", "--reverse", *([new] if new else ["HEAD"]), "--", rel)
    commits = [tuple(row.split("\x00", 1)) for row in history if "\x00" in row]
    if new is None:  # the staged version is about to be committed by the current git identity
        email = git.lines("var", "GIT_AUTHOR_IDENT")[0].rsplit(">", 1)[0].split("<", 1)[-1]
        commits.append(("staged", email))
    if not commits:
        return []
    proposer = commits[0][1]
    approver = None
    previous = None
    for sha, email in commits:
        status = _status_at(git, sha, full) if sha != "staged" else memory.status
        if status == "active" and previous == "pending_review":
            approver = (sha, email)
        elif status == "active" and previous is None and sha == commits[0][0]:
            return [Problem(rel, "review", f"an {memory.provenance.source_type} memory in the shared scope "
                            f"{memory.scope!r} arrived active without review")]
        previous = status
    if approver is None:
        return []
    if approver[1].lower() == proposer.lower() and not ctx.ws.config.allow_self_approve:
        where = "the staged change" if approver[0] == "staged" else f"commit {approver[0][:12]}"
        return [Problem(rel, "review", f"approved in {where} by its own proposer ({proposer}); "
                        "a second person must approve it")]
    return []


def raise_if_failed(result: CheckResult) -> None:
    """Raise :class:`CheckFailed` summarising ``result`` when it holds problems."""
    if result.problems:
        count = len(result.problems)
        raise CheckFailed(f"{count} problem{'s' if count != 1 else ''} in the memory files of {result.range}",
                          hint="fix them, or see each one above")
