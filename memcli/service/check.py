"""``memcli check``: the review gate where it cannot be spoofed (SPEC.md section 10).

Locally, ``--actor`` and ``$MEMCLI_ACTOR`` are labels anyone can set, so the review gate
of ``approve`` is a courtesy. ``check`` enforces it over what git records — commit
authors — for CI, ``pre-commit`` and server-side hooks. For each memory file changed in
the checked range it asks:

* is the file valid (it parses and fits the schema, as every read path would take it) and
  within the reader's bounds (at most ``MAX_FILE_BYTES``, YAML aliases, nesting and values
  as ``fileformat`` limits them)?
* is it free of secrets (the write gate's ``gates.check_memory``)?
* is it safely named (a regular file ``memories/<scope path>/…/<id>[-slug].md``, the
  folder matching its scope; no symbolic link)?
* is its scope shared? A personal scope (``user:*``, ``session:*``) in a project's tree is
  refused: it belongs in its owner's own store, and a teammate must not plant one;
* is its ``provenance`` the one its first version wrote (it never changes)?
* does a person's memory (``user_said``, ``admin_edit``) name, as its first version's
  ``provenance.actor``, the person who committed it, when the actor names anyone git knows
  (rule ``actor``: ``_actor_problems``)?
* if it is an agent's or a tool's write (``model_derived``, ``tool_result``) in a shared
  scope (``[scopes] shared``) and is ``active``: did it become active, whatever its status
  before, only by a valid approval (``policy.review.judge_activation``: from
  ``pending_review``, author = committer, another person than its proposer unless
  ``[review] allow_self_approve``, ``review.by`` naming the approving commit's author)? A
  return from ``archived``/``superseded`` to a validly approved text (a rollback) is one.
* in a shared scope, does a later version add or widen a guard (``guards``: a new
  ``deny``/``ask``/``warn`` pattern, ``memcli.guards.widened``)? A guard is more power than a
  sentence, so that is refused unless the version is a valid approval of a pending memory
  (from ``pending_review`` to ``active``, judged as above); memcli itself never edits a
  memory's guards in place (``supersede --deny`` writes a new memory, reviewed as any write);
  and does a later version by someone other than the memory's writer remove a ``deny`` or
  ``ask`` guard that the memory held (:func:`_lifted`), take an active guarded memory out of
  force by its status (:func:`_retired`), or delete its file (:func:`_deleted_guards`)? Lifting
  a guard is its writer's, or a supersede's, reviewed as any write.

A range ``OLD..NEW`` is judged by the settings ``OLD`` has (``[scopes] shared``, ``[review]
allow_self_approve``, ``[workspace] kind``), never by those the range brings, so a push cannot
vouch for itself by loosening them; and a change of ``memcli.toml`` in the range that loosens a
setting that guards trust (``policy.trust_settings``) or does not load is a problem of its own
(rule ``config``). Verify on arrival gives the settings the clone last verified instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memcli.errors import CheckFailed, InvalidMemoryFile, MemcliError, RevisionNotFound

if TYPE_CHECKING:
    from collections.abc import Callable

    from memcli.config import Config
    from memcli.git.repo import GitRepo
    from memcli.guards import Guard
    from memcli.model import Memory
    from memcli.policy.review import Identity, Version
    from memcli.service import Ctx

#: Provenance of writes that must pass review in a shared scope (SPEC.md section 3, gate 6).
NEEDS_REVIEW = ("model_derived", "tool_result")
#: Files judged per batch of git processes (their paths are arguments of ``git ls-tree`` and
#: ``git log``: 200 keeps those well under the system's argument limit).
CHUNK = 200


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
    """What ``check`` looked at: the range, the files, and the problems found.

    ``trust`` is the ``service.signing.Trust`` the check judged signatures with (verify on
    arrival reads who signed what from it); not part of the JSON.
    """

    range: str
    files: int = 0
    problems: list[Problem] = field(default_factory=list)
    trust: Any = None

    def to_dict(self) -> dict:
        return {"range": self.range, "files": self.files, "problems": [p.to_dict() for p in self.problems]}


class _Git:
    def __init__(self, ctx: Ctx, staged: bool = False) -> None:
        from memcli.store.files import MemoryFiles

        self.repo = ctx.git()
        self.root = ctx.ws.root
        self.files = MemoryFiles(ctx.ws.root)  # every file as written, personal scopes included: check judges them
        self.trust: Any = None  # service.signing.Trust, set by check()
        self.settings: Config = ctx.ws.config  # the settings the range is judged by, set by check()
        self._people: list[Identity] | None = None
        self._ids: set[str] | None = None
        self._held: dict[str, str] | None = None
        self.old: str | None = None  # the range's base, set by check(): versions reachable from it are vouched for
        self.new = "HEAD"  # the range's end (HEAD for the staged versions), set by check()
        self.env = {"GIT_INDEX_FILE": index} if staged and (index := _hook_index(self.repo)) else None

    def people(self) -> list[Identity]:
        """Every author and committer of the history of the range's end, each once; read once."""
        if self._people is None:
            from memcli.policy import review

            status, out, _ = self.repo.raw("log", "--format=%an%x00%ae%n%cn%x00%ce", self.new, env=self.env)
            rows = set(out.decode("utf-8", "replace").splitlines()) if status == 0 else set()
            self._people = [review.Identity(*row.split("\x00", 1)) for row in sorted(rows) if "\x00" in row]
        return self._people

    def lines(self, *args: str) -> list[str]:
        status, out, err = self.repo.raw(*args, env=self.env)
        if status != 0:
            from memcli.git.run import first_line

            said = first_line(err)
            named = next((a for a in reversed(args[1:]) if not a.startswith("-")), "").removesuffix("^{commit}")
            what = f"git {args[0]} failed: {said}" if said else f"no such revision: {named}"
            raise RevisionNotFound(what, hint="give a range such as origin/main..HEAD")
        return out.decode("utf-8", "replace").splitlines()

    def paths(self, *args: str) -> list[str]:
        """``git ARGS -z`` as paths: NUL-separated, never quoted (a name with a line break or a
        quote is one path, as written; ``--name-only`` without ``-z`` quotes it, so a file named
        ``x\\nnotes.md`` ended in ``md"`` and was skipped as not a memory file)."""
        status, out, _ = self.repo.raw(args[0], "-z", *args[1:], env=self.env)
        if status != 0:
            self.lines(*args)  # the same failure, said as lines() says it
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]

    def ids_at(self) -> set[str]:
        """The ids (file names' first parts) of the memories at the range's end that are
        ``active`` or ``superseded`` (a chain of supersedes goes on): what a ``supersededBy``
        may name. An archived or rejected memory carries no guard on, so naming one retired a
        teammate's guarded memory past rule ``guard`` (red team, stop 36). Read once."""
        if self._ids is None:
            from memcli.model import id_from_stem

            where = ("--cached",) if self.env else (self.new,)
            found = self.paths("grep", "-l", "-E", "^status: *[\"']?(active|superseded)[\"']? *$", *where,
                               "--", "memories")
            self._ids = {id_from_stem(PurePosixPath(p.split(":", 1)[1] if not self.env else p).name.removesuffix(".md"))
                         for p in found}
        return self._ids

    def held_before(self) -> dict[str, str]:
        """``{id: path}`` of the memory files at the range's start that are still there at its
        end (file names' first parts; a file moved in the range is not held): what a file added
        in the range must not take. Empty for a check of a whole tree. Read once."""
        if self._held is None:
            self._held = {}
            if self.old is not None:
                from memcli.model import id_from_stem

                now = set(self.paths(*(("ls-files",) if self.env else ("ls-tree", "-r", "--name-only", self.new)),
                                     "--", "memories"))
                for path in self.paths("ls-tree", "-r", "--name-only", self.old, "--", "memories"):
                    if path in now and path.endswith(".md"):
                        self._held.setdefault(id_from_stem(PurePosixPath(path).name.removesuffix(".md")), path)
        return self._held

    def blob(self, spec: str) -> bytes | None:
        status, out, _ = self.repo.raw("cat-file", "blob", spec, env=self.env)
        return out if status == 0 else None

    def blobs(self, specs: list[str]) -> list[bytes | None]:
        """The bytes of each ``REV:PATH`` (None where absent or not a blob), one ``git cat-file --batch``."""
        if not specs:
            return []
        status, out, _ = self.repo.raw("cat-file", "--batch", input="".join(f"{s}\n" for s in specs).encode(),
                                       env=self.env)
        from memcli.git.run import batch_blobs

        return batch_blobs(out if status == 0 else b"", len(specs))

    def modes(self, rev: str | None, paths: list[str]) -> dict[str, str]:
        """The git mode (``100644``, ``120000`` …) of each of ``paths`` (relative to the workspace)
        at ``rev`` (None: the staged versions), keyed by its path from the repository's root; one
        git process."""
        if rev is None:  # the staged version
            args = ["ls-files", "-s", "-z", "--full-name", "--", *paths]
        else:
            args = ["ls-tree", "-z", "--full-name", rev, "--", *paths]
        status, out, _ = self.repo.raw(*args, env=self.env)
        rows = out.decode("utf-8", "surrogateescape").split("\0") if status == 0 else []
        return {name: meta.split()[0] for meta, _, name in (row.partition("\t") for row in rows) if name}

    def single_commits(self, rev: str, fulls: list[str]) -> dict[str, list[str]]:
        """For each of ``fulls`` (paths from the repository's root) that exactly one commit
        reachable from ``rev`` ever touched, and not a merge: that commit's ``[sha, author,
        committer, parents]`` (the row ``git log -- PATH`` alone would give); one git process for
        them all. A file left out takes its own ``git log`` (:func:`_versions`). With
        ``--full-history --diff-merges=separate --root`` every commit that changed any of the paths
        against any parent (or made it in a root commit) is listed, so one that lists a file once,
        and no merge listing it, is its whole history whatever the single-path simplification
        would prune."""
        status, out, _ = self.repo.raw(
            "-c", "core.quotePath=false", "log", "--full-history", "--diff-merges=separate", "--root", "--no-renames",
            "--name-only", "--format=%x01%H%x00%an <%ae>%x00%cn <%ce>%x00%P", rev, "--",
            *(f":(top,literal){f}" for f in fulls), env=self.env)
        if status != 0:
            return {}
        touched: dict[str, dict[str, list[str]]] = {}
        row: list[str] = []
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            if line.startswith("\x01"):
                row = line[1:].split("\x00")
            elif line.startswith('"'):  # a name git had to quote: not read, every file takes its own log
                return {}
            elif line and len(row) == 4:
                touched.setdefault(line, {})[row[0]] = row
        found = {}
        for full, commits in touched.items():
            if len(commits) == 1:
                only = next(iter(commits.values()))
                if len(only[3].split()) <= 1:
                    found[full] = only
        return found


def _hook_index(repo: GitRepo) -> str | None:
    """The index git is committing from, when memcli runs in its pre-commit hook: git gives the
    hook ``GIT_INDEX_FILE`` (``index.lock`` for ``git commit -a``, ``next-index-*.lock`` for
    ``git commit PATH``), and only that index holds what is about to be committed. Taken only
    when it lies in this worktree's own git folder (a hook of another repository's commit
    says nothing of this one)."""
    from pathlib import Path

    from memcli.git.run import INHERITED

    index = INHERITED.get("GIT_INDEX_FILE")
    if not index or Path(index).parent.resolve() != repo.git_dir.resolve():
        return None
    return index


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
        return git.paths("ls-tree", "-r", "--name-only", new, "--", "memories")
    args = ["diff", "--name-only", "--no-renames", "--diff-filter=AMRTC", "--relative"]
    if new is None:
        args += ["--cached", old] if old else ["--cached"]
    elif old is not None:  # (old None with a new commit: the ls-tree above)
        args += [old, new]
    return git.paths(*args, "--", "memories")


def check(ctx: Ctx, spec: str | None = None, staged: bool = False, stale: bool = False,
          settings: Config | None = None) -> CheckResult:
    """Check the memory files changed in a range (see the module docstring).

    Args:
        ctx: the service context.
        spec: ``OLD..NEW`` (either side may be empty for HEAD), or one revision (its own
            changes); None checks every memory file at HEAD and its whole history.
        staged: check the staged versions against HEAD (for a ``pre-commit`` hook); the
            approving author is then the git identity about to commit.
        stale: also fail on the active memories the range made outdated in the code
            (``service.stale.became_stale``: a file renamed or deleted, an identifier or a
            target removed by the range's code commits); without a range, on every memory
            outdated at ``HEAD``. Opt-in: a CI job of the code repository turns it on.
        settings: the settings to judge by (verify on arrival: those the clone last verified);
            default: those of the range's base ``OLD`` (the workspace's own when it has none
            that load, for staged changes, and without a range).

    Returns:
        A :class:`CheckResult`; the CLI exits with :class:`CheckFailed` when it holds problems.

    Raises:
        RevisionNotFound: a revision of the range is unknown.
        UsageProblem: ``stale`` with ``staged`` (staleness comes with code commits, not a stage).
    """
    if stale and staged:
        from memcli.errors import UsageProblem

        raise UsageProblem("--stale judges code commits, not staged changes",
                           hint="give a range instead: memcli check --stale origin/main..HEAD")
    from memcli.service.signing import Trust

    git = _Git(ctx, staged)
    old, new, label = _range(git, spec, staged)
    git.old, git.new = old, new or "HEAD"
    result = CheckResult(label)
    git.trust = result.trust = Trust(git.repo, old, new)
    if settings is None and old is not None and new is not None:
        from memcli.service.settings import from_text, text_at

        base = text_at(git.repo, old)
        settings = from_text(base) if base is not None else None
    git.settings = settings or ctx.ws.config
    if new is not None:
        for found in git.trust.range_problems(old, new):
            result.problems += [Problem(path, found.rule, found.message) for path in found.paths or ["."]]
        if old is not None:
            result.problems += config_problems(git, old, new, any(p.rule == "signing" for p in result.problems))
    prefix = PurePosixPath(next(iter(git.lines("rev-parse", "--show-prefix")), ""))
    result.problems += _tree_problems(git, old, new, prefix)
    changed = []
    for rel in _changed(git, old, new):
        if any(ord(c) < 32 or ord(c) == 127 for c in rel):
            result.problems.append(Problem(rel.encode("unicode_escape").decode("ascii"), "path",
                                           "the file name holds a control character (a line break, a tab, an "
                                           "escape); memcli never writes one: rename the file"))
        elif rel.endswith(".md"):
            changed.append(rel)
    for at in range(0, len(changed), CHUNK):  # a few git processes a chunk, not four a file
        chunk = changed[at:at + CHUNK]
        fulls = [(prefix / rel).as_posix() for rel in chunk]
        specs = [f":{full}" if new is None else f"{new}:{full}" for full in fulls]
        modes = git.modes(new, chunk)
        datas = git.blobs(specs)
        single = git.single_commits(new, fulls) if new is not None else {}
        git.trust.prepare([row[0] for row in single.values()])
        for rel, full, data in zip(chunk, fulls, datas):
            result.files += 1
            result.problems.extend(_check_file(ctx, git, rel, data, modes.get(full, ""), new, full, single.get(full)))
    result.problems.extend(_deleted_guards(ctx, git, old, new, prefix))
    if stale and new is not None:
        result.problems.extend(_stale_problems(ctx, old if spec else None, new))
    return result


#: Attributes of ``.gitattributes`` that make git rewrite a file's bytes on checkout or commit
#: (gitattributes(5)): a teammate's ``memories/** working-tree-encoding=UTF-16LE`` turned every
#: memory file on a clone's disk into UTF-16, whose front-matter then no longer read (red team,
#: stop 35). A store's files are UTF-8 as committed; nothing is to rewrite them.
REWRITING_ATTRIBUTES = ("working-tree-encoding", "filter", "ident")


def _tree_problems(git: _Git, old: str | None, new: str | None, prefix: PurePosixPath) -> list[Problem]:
    """Rule ``tree``: files of the range outside the memories that change how a clone reads
    its store (red team, stop 35): anything under the workspace's ``.cache/`` (a clone's own
    state, never shared: a tracked ``arrival.json`` replaced what the clone had verified), a
    ``.gitattributes`` that sets one of :data:`REWRITING_ATTRIBUTES`, and an
    ``allowed_signers`` that is not a regular file (a link to ``/dev/zero`` locked every
    signer out). Paths are the repository's own (``--full-name``)."""
    from memcli.policy.signers import SIGNERS_NAME

    if old is None and new is not None:
        touched = git.paths("ls-tree", "-r", "--name-only", "--full-tree", new)
    else:
        args = ["diff", "--name-only", "--no-renames", "--diff-filter=AMRTC"]
        args += (["--cached", old] if old else ["--cached"]) if new is None else [str(old), new]
        touched = git.paths(*args, "--", ":/")
    signers = (prefix / SIGNERS_NAME).as_posix()
    out = []
    for path in touched:
        said = checkout_hazard(path, prefix, lambda p: git.blob(f":{p}" if new is None else f"{new}:{p}") or b"")
        if said:
            out.append(Problem(path, "tree", said))
        elif path == signers:
            mode = git.modes(new, [SIGNERS_NAME]).get(signers, "")
            if mode and mode != "100644":
                out.append(Problem(path, "tree", f"{SIGNERS_NAME} is not a regular file (mode {mode}); it must "
                                   "be the file itself"))
    return out


def checkout_hazard(path: str, prefix: PurePosixPath, read: Callable[[str], bytes]) -> str | None:
    """What is wrong with a file at ``path`` (from the repository's root) that a checkout or
    merge would let act on a clone before any rule ran, or None: one under the store's
    ``.cache/`` (``prefix``: the store's folder), or a ``.gitattributes`` whose content
    (``read(path)``) sets one of :data:`REWRITING_ATTRIBUTES` on the memory files. Rule
    ``tree`` of :func:`check`, and what ``sync`` refuses to merge."""
    cache = (prefix / ".cache").as_posix()
    if path.startswith(cache + "/"):
        return ("a file under .cache/ is a clone's own state (its index, what it has verified), never shared: "
                "remove it from git (`git rm --cached`)")
    if path == cache:  # a link or a file in its place: git would replace the clone's folder (red team, stop 36)
        return (".cache is a clone's own folder (its index, what it has verified), never shared: git would put "
                "this in its place; remove it from git (`git rm --cached .cache`)")
    if path == ".gitattributes" or path.endswith("/.gitattributes"):
        found = rewriting_attributes(read(path).decode("utf-8", "replace"), path, prefix)
        if found:
            return (f"sets {', '.join(found)}: git would rewrite the memory files' bytes on a clone's disk; "
                    "remove those attributes")
    return None


def rewriting_attributes(text: str, path: str, prefix: PurePosixPath) -> list[str]:
    """Which of :data:`REWRITING_ATTRIBUTES` the ``.gitattributes`` file at ``path`` (from the
    repository's root; its content ``text``) sets on a pattern that can match a memory file of
    the store at ``prefix``, sorted (empty: none)."""
    folder = path.rpartition("/")[0]
    return sorted({a for line in text.splitlines() if line.split() and not line.lstrip().startswith("#")
                   and _reaches_memories(line.split()[0], folder, prefix)
                   for word in line.split()[1:] for a in REWRITING_ATTRIBUTES
                   if word.lstrip("-!").split("=", 1)[0] == a})


def _reaches_memories(pattern: str, folder: str, prefix: PurePosixPath) -> bool:
    """Whether a ``.gitattributes`` line's ``pattern``, in the file of ``folder`` (from the
    repository's root), can match a memory file of the store at ``prefix`` (gitattributes(5):
    a pattern without a slash matches a file name at any depth; one with a slash, a path from
    its file's folder). A project's ``*.png filter=lfs`` is not about the memories."""
    from fnmatch import fnmatchcase

    sample = (prefix / "memories" / "project" / "2026-01" / "01jdxq5k7m2vaaaaaaaaaaaaaa-note.md").as_posix()
    if folder and not sample.startswith(folder + "/"):
        return False
    below = sample[len(folder) + 1:] if folder else sample
    if "/" not in pattern.strip("/"):
        return fnmatchcase(PurePosixPath(below).name, pattern.strip("/")) or pattern.strip("/") in ("*", "**")
    from memcli.index import paths_match

    return paths_match([pattern.lstrip("/")], below) or paths_match([pattern.lstrip("/").rstrip("/") + "/**"], below)


def _stale_problems(ctx: Ctx, old: str | None, new: str) -> list[Problem]:
    """One problem per memory the code range ``old..new`` made outdated (rule ``stale``)."""
    from memcli.service.stale import became_stale

    problems = []
    for verdict in became_stale(ctx, old, new):
        memory = ctx.resolve(verdict.id).memory
        problems.append(Problem(str(memory.path), "stale",
                                f"{verdict.id} {verdict.note()} (after checking it: `memcli confirm {verdict.id}` "
                                f"or `memcli supersede {verdict.id} TEXT`)"))
    return problems


def _check_file(ctx: Ctx, git: _Git, rel: str, data: bytes | None, mode: str, new: str | None, full: str,
                single: list[str] | None) -> list[Problem]:
    """The problems of one file: ``data`` its version at ``new`` (None: absent, or not a blob),
    ``mode`` its git mode there, ``single`` its history when one commit made it
    (:meth:`_Git.single_commits`; None: read with its own ``git log``)."""
    from memcli.policy import gates

    if mode == "120000":
        return [Problem(rel, "path", "a symbolic link; memory files must be regular files")]
    parts = PurePosixPath(rel).parts
    if parts[0] != "memories" or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return [Problem(rel, "path", "not a safe memory path (memories/<scope>/…/<id>.md)")]
    if data is None:
        return []
    from memcli.store.files import MAX_FILE_BYTES

    if len(data) > MAX_FILE_BYTES:  # read only in part, so its rules cannot be judged: refused whole
        return [Problem(rel, "size", f"{len(data):,} bytes, over the {MAX_FILE_BYTES // 1024} KiB a memory file "
                        "may hold")]
    try:
        loaded = git.files.load(ctx.ws.root / rel, data=data, mtime=0)
    except InvalidMemoryFile as err:
        return [Problem(rel, "valid", err.reason + (f" (line {err.lineno})" if err.lineno else ""))]
    memory = loaded.memory
    problems = []
    if loaded.warning:  # over what a write may hold (files.cut_text): every read serves it cut
        problems.append(Problem(rel, "size", loaded.warning.removeprefix("served in part: ")))
    try:
        gates.check_memory(memory)
    except MemcliError as err:
        problems.append(Problem(rel, "secret", err.message.removeprefix("refused: ")))
    if not PurePosixPath(rel).name.startswith(memory.id):
        problems.append(Problem(rel, "path", f"the file name does not start with its id {memory.id}"))
    problems.extend(_scope_problems(git, rel, memory))
    held = git.held_before().get(memory.id)
    if held is not None and held != rel:  # red team, stop 36 (F3): the store served it under that id
        problems.append(Problem(rel, "id", f"takes the id {memory.id} of the memory in {held}, which the range "
                                "leaves in place: two files, one id; a new memory gets an id of its own "
                                "(`memcli remember`), a change goes to that file (`memcli supersede`)"))
    problems.extend(_history_problems(ctx, git, rel, full, memory, new, single))
    return problems


def _scope_problems(git: _Git, rel: str, memory: Memory) -> list[Problem]:
    """A personal scope (``user:*``, ``session:*``) in a project's shared tree: refused (its
    owner's memory lives in their own store; a teammate's commit must not plant one)."""
    from memcli.store.personal import is_personal

    parts = PurePosixPath(rel).parts
    if git.settings.kind != "project" or not (is_personal(memory.scope) or parts[1:2] in (("user",), ("session",))):
        return []
    return [Problem(rel, "scope", f"a personal scope ({memory.scope}) in the shared tree: personal memory belongs "
                    "in its owner's own store, never in the project repository (remove it with git rm)")]


def _identity(text: str) -> "Identity":
    from memcli.policy import review

    name, _, rest = text.partition("<")
    return review.Identity(name.strip(), rest.split(">", 1)[0].strip())


def _load(ctx: Ctx, git: _Git, rel: str, data: bytes | None) -> Memory | None:
    if data is None:
        return None
    try:
        return git.files.load(ctx.ws.root / rel, data=data, mtime=0).memory
    except MemcliError:
        return None


def _versions(ctx: Ctx, git: _Git, rel: str, full: str, memory: Memory, new: str | None,
              single: list[str] | None = None) -> list[tuple[Version, list[Memory | None]]]:
    """Every version of the file up to ``new`` (oldest first; the staged one last when ``new`` is
    None), each as ``(review.Version, [the memory as each of its commit's parents had it])``: a
    change is judged against the commit's own parents, so a merge that only carries a change
    made on one side (an approval merged beside an edit) is not taken for making it. ``single``:
    the one commit that made the file, when known (:meth:`_Git.single_commits`; never for the
    staged versions): its version is ``memory``, the one at ``new`` (no later commit changed it)
    and its parents had none (no earlier commit made one), so nothing more is read."""
    from memcli.policy import review

    trust = git.trust
    if single is not None and new is not None:
        sha, author, committer, parents = single
        return [(review.Version(sha, memory, _identity(author), _identity(committer), trust.required(sha),
                                trust.signer(sha), trust.words(sha)), [None for _ in parents.split()])]
    history = git.lines("log", "--no-renames", "--format=%H%x00%an <%ae>%x00%cn <%ce>%x00%P", "--reverse",
                        *([new] if new else ["HEAD"]), "--", rel)
    rows = [parts for parts in (row.split("\x00") for row in history) if len(parts) == 4]
    trust.prepare([sha for sha, _, _, _ in rows])
    specs = [f"{sha}:{full}" for sha, _, _, _ in rows] + [f"{p}:{full}" for _, _, _, ps in rows for p in ps.split()]
    datas = dict(zip(specs, git.blobs(specs)))
    out = []
    for sha, author, committer, parents in rows:
        before = [_load(ctx, git, rel, datas.get(f"{p}:{full}")) for p in parents.split()]
        out.append((review.Version(sha, _load(ctx, git, rel, datas.get(f"{sha}:{full}")), _identity(author),
                                   _identity(committer), trust.required(sha), trust.signer(sha), trust.words(sha)),
                    before))
    if new is None:  # the staged version is about to be committed by the current git identity
        author = git.lines("var", "GIT_AUTHOR_IDENT")[0].rsplit(">", 1)[0] + ">"
        committer = git.lines("var", "GIT_COMMITTER_IDENT")[0].rsplit(">", 1)[0] + ">"
        head = git.blobs([f"HEAD:{full}"])[0]
        out.append((review.Version("staged", memory, _identity(author), _identity(committer)),
                    [_load(ctx, git, rel, head)] if head is not None else []))
    return out


def _history_problems(ctx: Ctx, git: _Git, rel: str, full: str, memory: Memory,
                      new: str | None, single: list[str] | None = None) -> list[Problem]:
    """The rules over the file's history (``policy.review``): provenance never changes after the
    first version, and a memory that needs review became active only by a valid approval. A
    version became active when it is ``active`` and none of its commit's parents had it active
    (a merge that brings an approval from one side is not an approval of its own)."""
    from memcli.policy import gates, review

    walked = [(v, [b for b in before if b is not None]) for v, before in _versions(ctx, git, rel, full, memory, new,
                                                                                    single) if v.memory is not None]
    if not walked:
        return []
    first = walked[0][0]
    assert first.memory is not None
    proposer = first.person() or first.author  # an unsigned first version where signing applies: rule signature
    problems = []
    for version, _ in walked[1:]:
        assert version.memory is not None
        changed = review.provenance_changes(first.memory, version.memory)
        if changed:
            problems.append(Problem(rel, "provenance", f"provenance ({', '.join(changed)}) changed in "
                                    f"{version.where()}; provenance is written once, by the first version"))
            break
    problems.extend(_actor_problems(git, rel, first))
    shared = git.settings.shared_scopes
    problems.extend(_guard_problems(git, rel, walked, proposer))
    if memory.status != "active" or not any(gates.review_required(v.memory.scope, v.memory.provenance.source_type,
                                                                  shared) for v, _ in walked if v.memory):
        return problems
    approved = None  # the version at the last valid approval
    verdict: str | None = None
    for index, (version, before) in enumerate(walked):
        assert version.memory is not None
        if version.memory.status != "active" or any(b.status == "active" for b in before):
            continue
        prior = walked[index - 1][0].memory if index else None  # every walked version has its memory
        previous = before[0].status if before else (prior.status if prior is not None else None)
        verdict = review.judge_activation(version, previous, proposer, git.settings.allow_self_approve)
        if verdict is None:
            approved = version.memory
        elif review.restores_approved(version.memory, previous, approved):
            verdict = None
    if verdict is not None:
        problems.append(Problem(rel, "review", verdict))
    return problems


#: Source types whose ``provenance.actor`` names a person (the one who said or wrote it); an
#: agent's or a tool's write names the agent and is judged by the review rule instead.
PERSON_SOURCES = ("user_said", "admin_edit")
#: An actor that names nobody (a hand-written file without provenance reads as this).
NOBODY = ("", "unknown")


def _actor_problems(git: _Git, rel: str, first: Version) -> list[Problem]:
    """Rule ``actor``: the first version of a memory that a person said or wrote
    (:data:`PERSON_SOURCES`) names, in ``provenance.actor``, the person who committed it.

    memcli's own write path records ``provenance.actor`` as the caller (``--actor``,
    ``$MEMCLI_ACTOR``, else git's ``user.email``) and commits as git's identity, so an honest
    first version's actor is named by its commit's author (``Identity.named_by``: the
    e-mail, the name, or the e-mail's part before ``@``); with signing on, by its signer. Later
    versions keep the provenance (rule ``provenance``), so an approval, a rollback or a
    teammate's edit is never judged here. What is not judged: an agent's or a tool's write
    (``model_derived``, ``tool_result``: its actor is the agent, the person's commit carries
    it; the review rule judges its activation), and a file that names nobody (``unknown``).
    A first version older than the checked range was vouched for when it arrived.

    ``--actor`` and ``$MEMCLI_ACTOR`` are labels anyone can set, so a label that names no one
    (``bot``, a first name no commit carries) is not judged: it impersonates nobody, and
    ``history`` already shows it as a claim. What is refused is a label that is someone's
    identity: an e-mail address, or a name that names an author or committer of the
    repository's history (``_Git.people``), on a commit by someone else.
    """
    memory = first.memory
    if memory is None or memory.provenance.source_type not in PERSON_SOURCES:
        return []
    claimed = (memory.provenance.actor or "").strip()
    if claimed.lower() in NOBODY:
        return []
    person = first.person()
    if person is not None and person.named_by(claimed):
        return []
    if "@" not in claimed and not any(known.named_by(claimed) for known in git.people()):
        return []  # a label that names nobody git knows (``--actor bot``): it impersonates no one
    if first.commit != "staged" and git.old is not None and git.repo.raw(
            "merge-base", "--is-ancestor", first.commit, git.old)[0] == 0:
        return []  # written before the range: judged when it arrived
    who = person.show() if person is not None else f"{first.author.show()} ({first.signature or 'not signed'})"
    return [Problem(rel, "actor", f"provenance.actor says {claimed[:60]!r}, but {first.where()} that wrote it is "
                    f"{who}; a memory's actor must be the person who committed it "
                    + ("(its signer)" if first.signed else "(its author)"))]


def _guard_problems(git: _Git, rel: str, walked: list[tuple[Version, list[Memory]]],
                    proposer: Identity) -> list[Problem]:
    """A later version of a memory in a shared scope that adds or widens a guard (against every
    parent of its commit), other than a valid approval of a pending memory (module docstring)."""
    from memcli.guards import check_guards, widened
    from memcli.policy import gates, review

    out = []
    for version, before in walked[1:]:
        assert version.memory is not None  # walked: the readable versions
        if not before or not gates.review_required(version.memory.scope, "model_derived", git.settings.shared_scopes):
            continue  # a personal scope: its owner's own power (or a file added anew: its first version)
        try:
            added = [widened(check_guards(b.guards), check_guards(version.memory.guards)) for b in before]
            lifted = _lifted(before, version.memory)
        except MemcliError:
            continue  # an unreadable guard: the file's own check says so
        maker = version.person()
        theirs = not (maker is not None and maker.same_person(proposer))
        if (lifted or all(added)) and _before_range(git, version):
            continue  # judged when it arrived (or this clone's own): a later restore is no new lift
        if lifted and version.memory.status == "active" and theirs:
            shown = ", ".join(f"{g.kind} {g.pattern}" for g in lifted[:3])
            out.append(Problem(rel, "guard", f"{version.where()} removes a guard ({shown}) from a memory "
                               f"{proposer.show()} wrote; {LIFTED_BY}"))
            break
        retired, how = _retired(before, version.memory, git.ids_at)
        if retired and theirs and not _before_range(git, version):
            shown = ", ".join(f"{g.kind} {g.pattern}" for g in retired[:3])
            out.append(Problem(rel, "guard", f"{version.where()} {how} a memory {proposer.show()} wrote, "
                               f"lifting its guards ({shown}); {LIFTED_BY}"))
            break
        if not all(added):
            continue  # a merge carrying one side's guards adds none of its own
        if all(b.status == "pending_review" for b in before) and version.memory.status == "active" and \
                review.judge_activation(version, "pending_review", proposer, git.settings.allow_self_approve) is None:
            continue
        shown = ", ".join(f"{g.kind} {g.pattern}" for g in added[0][:3])
        out.append(Problem(rel, "guard", f"{version.where()} adds a guard ({shown}) to an existing memory; a guard "
                           "needs another person's approval: `memcli supersede ID --deny PATTERN` writes a new "
                           "memory that is reviewed as any write"))
        break
    return out


def _before_range(git: _Git, version: Version) -> bool:
    """Whether ``version``'s commit is at or before the start of the range checked (so it was
    judged when it arrived, or it is the clone's own): the guard rule judges a memory's later
    versions, not its whole history again when a range changes it (newcomer, stop 36: bob's own
    archiving of alice's guarded memory, long verified, quarantined her restore of it and named
    bob's commit). One ``merge-base`` process, asked only for a version that would fail."""
    if version.commit == "staged" or git.old is None:
        return False
    return git.repo.raw("merge-base", "--is-ancestor", version.commit, git.old)[0] == 0


#: How a guard is lifted legitimately (rule ``guard``'s messages).
LIFTED_BY = ("a guard is lifted by its writer, or by superseding the memory (`memcli supersede ID`), which is "
             "reviewed as any write")


def _retired(before: list[Memory], after: Memory, ids: Callable[[], set[str]]) -> tuple[list[Guard], str]:
    """The ``deny`` and ``ask`` guards of a memory every parent version in ``before`` holds
    active that ``after`` takes out of force other than by a supersede, and how (a verb phrase
    for rule ``guard``'s message): by its status (archived, rejected, superseded with no
    successor, or one that does not exist: newcomer trust fault, stop 33; red team, stop 35),
    by an ``expireAt`` it did not have or an earlier one, or by moving it to another scope
    (red team, stop 35: each lifted a teammate's guard unchecked). ``ids``: the memory ids at
    the range's end (read only when a successor is named).

    Raises:
        MemcliError: a guard that does not read (the caller skips the file: its own check says so).
    """
    from memcli.guards import check_guards

    if not before or any(b.status != "active" for b in before):
        return [], ""
    guards = [g for g in check_guards(before[0].guards) if g.kind in ("deny", "ask")]
    if not guards:
        return [], ""
    if after.status != "active":
        successors = set(after.superseded_by) - {after.id}  # itself: no successor (red team, stop 36)
        if after.status == "superseded" and successors and successors <= ids():
            return [], ""  # superseded by a memory in force: the supersede is reviewed as any write
        named = " by a memory that does not exist" if after.status == "superseded" and after.superseded_by else ""
        return guards, f"sets to {after.status}{named}"
    if any(b.scope != after.scope for b in before):
        return guards, f"moves to scope {after.scope}"
    if after.expire_at is not None and all(b.expire_at is None or after.expire_at < b.expire_at for b in before):
        return guards, f"gives an expiry ({after.expire_at:%Y-%m-%d}) to"
    return [], ""


def _deleted_guards(ctx: Ctx, git: _Git, old: str | None, new: str | None, prefix: PurePosixPath) -> list[Problem]:
    """Rule ``guard`` for memory files the range deletes: an active memory in a shared scope
    that held ``deny`` or ``ask`` guards, deleted by someone other than its writer (newcomer
    trust fault, stop 33: ``git rm`` of a teammate's guarded memory lifted the guard unchecked).
    A rename is not a deletion (git's rename detection). ``prefix``: the store's folder in its
    repository (``git rev-parse --show-prefix``, read once by :func:`check`)."""
    from memcli.guards import check_guards
    from memcli.policy import gates, review

    if old is None and new is not None:
        return []  # a whole history from nothing: no file is deleted
    args = ["diff", "--name-status", "-M", "--diff-filter=DR", "--relative"]
    if new is None:
        args += ["--cached", old] if old else ["--cached"]
    else:
        args += [str(old), new]
    fields = git.paths(*args, "--", "memories")
    moves: list[tuple[str, str | None]] = []
    while fields:
        kind = fields.pop(0)
        if kind.startswith("R") and len(fields) >= 2:
            moves.append((fields.pop(0), fields.pop(0)))
        elif fields:
            moves.append((fields.pop(0), None))
    out = []
    for rel, moved in moves:
        full = (prefix / rel).as_posix()
        base = old or "HEAD"
        memory = _load(ctx, git, rel, git.blob(f"{base}:{full}"))
        if memory is None or memory.status != "active" or \
                not gates.review_required(memory.scope, "model_derived", git.settings.shared_scopes):
            continue
        try:
            guards = [g for g in check_guards(memory.guards) if g.kind in ("deny", "ask")]
            how = "deletes"
            if moved is not None:  # a rename is no deletion, but a move to another scope, or with the guards
                # taken out or out of force, lifts them as surely (red team, stop 35)
                spec = f":{(prefix / moved).as_posix()}" if new is None else f"{new}:{(prefix / moved).as_posix()}"
                after = _load(ctx, git, moved, git.blob(spec))
                if after is None:
                    continue  # unreadable: the file's own check says so
                retired, how = _retired([memory], after, git.ids_at)
                lifted = _lifted([memory], after)
                guards = retired or lifted
                how = f"moves and {how}" if retired else "moves and removes the guards of"
        except MemcliError:
            continue  # an unreadable guard: nothing this rule can name
        if not guards:
            continue
        walked = [v for v, _ in _versions(ctx, git, rel, full, memory, base) if v.memory is not None]
        if not walked:
            continue
        proposer = walked[0].person() or walked[0].author
        if new is None:
            author = _identity(git.lines("var", "GIT_AUTHOR_IDENT")[0].rsplit(">", 1)[0] + ">")
            deleter = review.Version("staged", None, author, author)
        else:
            row = git.lines("log", "-1", "--no-renames", "--diff-filter=D", "--format=%H%x00%an <%ae>%x00%cn <%ce>",
                            f"{old}..{new}", "--", rel)  # a move: the commit that removed the old path
            if not row:
                continue
            sha, author_text, committer_text = (row[0].split("\x00") + ["", ""])[:3]
            git.trust.prepare([sha])
            deleter = review.Version(sha, None, _identity(author_text), _identity(committer_text),
                                     git.trust.required(sha), git.trust.signer(sha), git.trust.words(sha))
        maker = deleter.person()
        if maker is not None and maker.same_person(proposer):
            continue
        shown = ", ".join(f"{g.kind} {g.pattern}" for g in guards[:3])
        out.append(Problem(rel, "guard", f"{deleter.where()} {how} a memory {proposer.show()} wrote, "
                           f"lifting its guards ({shown}); {LIFTED_BY}"))
    return out


def _lifted(before: list[Memory], after: Memory) -> list[Guard]:
    """The ``deny`` and ``ask`` guards every parent version in ``before`` holds that ``after``
    no longer holds (the same kind and pattern): a guard removed, or changed into a weaker
    ``warn`` or another pattern, by a hand edit (newcomer trust fault, stop 32).

    Raises:
        MemcliError: a guard that does not read (the caller skips the file: its own check says so).
    """
    from memcli.guards import check_guards

    if not before:
        return []
    held = [{(g.kind, g.pattern) for g in check_guards(b.guards) if g.kind in ("deny", "ask")} for b in before]
    gone = set.intersection(*held) - {(g.kind, g.pattern) for g in check_guards(after.guards)}
    return [g for g in check_guards(before[0].guards) if (g.kind, g.pattern) in gone]


def config_problems(git: _Git, old: str, new: str, signing_said: bool) -> list[Problem]:
    """Rule ``config``: ``memcli.toml`` at ``new`` does not load, or differs from the settings
    the range is judged by (``git.settings``) in a way that loosens trust
    (``policy.trust_settings.compare``). ``signing_said``: rule ``signing`` already named
    turning signing off. Named by the range's last commit that changed the file."""
    from memcli.config import CONFIG_NAME
    from memcli.policy.trust_settings import compare
    from memcli.service.settings import bytes_at, from_text, problem

    last = git.lines("log", "-1", "--format=%H%x00%an <%ae>", f"{old}..{new}", "--", CONFIG_NAME)
    if not last:
        return []
    commit, _, author = last[0].partition("\x00")
    where = f"commit {commit[:12]} by {author}"
    data = bytes_at(git.repo, new)
    broken = problem(data)
    if broken is not None or data is None:
        return [Problem(CONFIG_NAME, "config", f"as {where} left it, it does not load: {broken}")]
    after = from_text(data.decode("utf-8-sig"))
    assert after is not None
    loosened = [c for c in compare(git.settings, after)
                if c.loosens and not (signing_said and c.key == "[review] signing")]
    if not loosened:
        return []
    return [Problem(CONFIG_NAME, "config", f"{where} loosens a setting that guards trust: "
                    + "; ".join(c.words() for c in loosened)
                    + "; a team lands such a change past its gate on purpose, never in an ordinary push")]


def raise_if_failed(result: CheckResult) -> None:
    """Raise :class:`CheckFailed` summarising ``result`` when it holds problems."""
    if result.problems:
        count = len(result.problems)
        raise CheckFailed(f"{count} problem{'s' if count != 1 else ''} in the memory files of {result.range}",
                          hint="fix them, or see each one above")
