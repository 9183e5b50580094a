"""``import`` and ``export``: agents' rule files to memories and back (SPEC.md section 4).

Import reads rule files (the kinds in :mod:`memcli.agents.rule_files`) and sends every item
through the same six gates as ``remember`` (``write.write_batch``), with
``sourceType: admin_edit``, no run id, and the file and line in the provenance
(``provenance.source``, ``provenance.line``). Everything accepted is written in one commit.

* What each item is (``agents.rulekinds``, cues in ``agents/words/rule-lines.txt``): its
  category (preference for rules and conventions, fact, decision, procedure, glossary, goal)
  and importance (3; 4 or 5 with emphasis such as NEVER, MUST, IMPORTANT, 必须, 重要), or not a
  memory: the file's introduction ("This file provides guidance to Claude Code …") and
  sentences that only point at another file ("See ``docs/x.md``.", a bare ``@import``) are
  reported as ``skipped`` (gate ``boilerplate`` or ``pointer``) and written nowhere.
* Paths: a folder is searched for the known rule files (``agents.rule_files.DISCOVER``), and for
  ``AGENTS.md``, ``CLAUDE.md`` and ``GEMINI.md`` in its sub-folders (:data:`NESTED_DEPTH`
  deep, hidden folders and :data:`NOT_WALKED` left out): such a file is about the files under
  its folder, so its items get ``paths: [sub/**]``; a file is read as the kind its name
  says. The import root, to which ``provenance.source`` is relative, is the folder given,
  or for a file the folder above its ``.claude``/``.cursor``/``.github`` folder, else its
  own folder.
* ``@path`` imports (``CLAUDE.md`` family and ``GEMINI.md``): resolved relative to the
  importing file, followed recursively up to 5 hops (the limit of Claude Code and of Gemini
  CLI), each file read once (so a cycle ends). Not followed, with a warning: targets outside
  the repository that holds the import root (the nearest folder above it with ``.git``, as
  Gemini CLI bounds its imports; the import root itself when there is none: a project's
  memory never pulls in ``~/`` files), missing files, and files that are not Markdown or
  text (``@package.json`` is a pointer for the agent, not rules). Items of an imported file
  inherit the importer's ``paths`` and pin; a file above the import root (``@../AGENTS.md``)
  is named relative to the repository.
* Ids: each new memory's id is made from the store's last commit time and the item's
  idempotency key (:func:`planned_id`), so ``--dry-run`` shows the ids the real run then
  writes, as long as the store does not change in between.
* Scope: ``--scope``, else the configured write scope; ``CLAUDE.local.md`` (personal and
  git-ignored by Claude Code's convention) and what it imports go to ``user:<actor>``.
* Idempotency key ``import:<scope>:<file>:<sha256 of the normalised text, 16 hex>``:
  importing the same file again writes nothing, and a rule deleted with ``forget`` does
  not come back. The scope is part of the key because the idempotency gate looks keys up
  across scopes: two people importing their own ``CLAUDE.local.md`` must not collide.
* JSON Lines (from ``export --format jsonl``) restore records exactly: own id, scope,
  status, times, provenance, links, review (see ``service.restore``); ``--scope`` does not
  apply to them; an id that exists already is a duplicate (no-op).

Export reads what ``list`` reads (the caller's scopes; active and unexpired, or every
status and expired ones with ``all_statuses``) and renders it with ``agents.rule_files.render``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memcli.agents import rule_files
from memcli.errors import MemcliError, SecretDetected, SubjectConflict, UsageProblem, ValidationFailed
from memcli.model import STATUSES, Memory, from_dict, normalise_text
from memcli.policy.gates import check_write_scope
from memcli.service import Ctx
from memcli.timeutil import parse_instant

#: How deep ``import DIR`` looks for nested AGENTS.md, CLAUDE.md and GEMINI.md (folders below DIR).
NESTED_DEPTH = 6
#: Folders never searched for nested rule files: dependencies and build output.
NOT_WALKED = frozenset({"node_modules", "vendor", "venv", "env", "target", "dist", "build", "__pycache__",
                        "site-packages", "third_party"})
#: What a skipped item's message says, by reason.
SKIPPED = {"boilerplate": "not imported: it introduces the file to the agent, true of every session",
           "pointer": "not imported: it only points at another file (an @import is followed instead)"}
#: At most this many memories are exported (the read path needs a limit).
EXPORT_LIMIT = 10_000_000
_MARKERS = (".claude", ".cursor", ".github")


@dataclass
class ImportedItem:
    """What became of one item.

    Attributes:
        outcome: ``created``, ``pending_review``, ``noop``, ``refused`` or ``skipped`` (not a memory).
        gate: the gate that decided a no-op, a review or a refusal; for a skipped item why
            (``boilerplate``, ``pointer``).
        id: the memory written (in a dry run: the id the real run writes), or the existing one a no-op points to.
        text: the item's text; None when refused for sensitive data (never echoed).
        category, importance: what the item was read as (``agents.rulekinds``); None for JSON Lines and skipped items.
    """

    source: str
    line: int
    outcome: str
    message: str
    gate: str | None = None
    id: str | None = None
    scope: str | None = None
    text: str | None = None
    category: str | None = None
    importance: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


@dataclass
class ImportResult:
    """The result of :func:`import_rules`.

    Attributes:
        items: one per item found, in file order.
        files: per file read: ``source``, ``kind``, ``items``, and ``description``,
            ``paths``, ``pinned`` when its front-matter said so.
        commit: the one commit, or None (nothing new, a dry run, or ``autocommit = false``).
        warnings: imports not followed, unreadable files, refusals, near duplicates.
    """

    items: list[ImportedItem] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many items had each outcome."""
        out = {k: 0 for k in ("created", "pending_review", "noop", "refused", "skipped")}
        for item in self.items:
            out[item.outcome] += 1
        return out

    def message(self) -> str:
        """One line for a person."""
        c = self.counts()
        new = c["created"] + c["pending_review"]
        verb = "would import" if self.dry_run else "imported"
        where = f" in commit {self.commit[:10]}" if self.commit else ""
        skipped = f", {c['skipped']} not memories (introductions, pointers)" if c["skipped"] else ""
        return (f"{verb} {new} of {len(self.items)} items from {len(self.files)} files{where}"
                f" ({c['pending_review']} waiting for review, {c['noop']} already present, {c['refused']} refused"
                f"{skipped})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"dry_run": self.dry_run, "commit": self.commit, "counts": self.counts(), "files": self.files,
                "items": [i.to_dict() for i in self.items]}


@dataclass
class _File:
    path: Path  # resolved
    root: Path  # resolved
    kind: str
    scope: str
    depth: int = 0
    paths: list[str] = field(default_factory=list)
    pinned: bool = False
    boundary: Path | None = None  # resolved: imports stay inside it (the repository, else the root)
    named: bool = False  # given on the command line as a file (not found in a folder, nor imported)

    @property
    def rel(self) -> str:
        return self.path.relative_to(self.root).as_posix()

    @property
    def limit(self) -> Path:
        return self.boundary or self.root


def _root_of(file: Path) -> Path:
    """The import root for a file named on its own (see the module docstring)."""
    for parent in file.parents:
        if parent.name in _MARKERS:
            return parent.parent
    return file.parent


def _repository(root: Path) -> Path | None:
    """The nearest folder at or above ``root`` that holds ``.git`` (a folder or a worktree's file), or None."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _nested(folder: Path) -> list[Path]:
    """AGENTS.md, CLAUDE.md and GEMINI.md in the sub-folders of ``folder`` (module docstring), sorted."""
    import os

    found: list[Path] = []
    base = len(folder.parts)
    for top, dirs, files in os.walk(folder):
        depth = len(Path(top).parts) - base
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in NOT_WALKED and depth < NESTED_DEPTH)
        if depth:
            found.extend(Path(top) / name for name in rule_files.NESTED if name in files)
    return sorted(found)


def _targets(ctx: Ctx, paths: list[Path], scope: str | None) -> tuple[list[_File], list[str]]:
    """The files to read, in order, and warnings for folders without rule files.

    Raises:
        UsageProblem: a path does not exist, or a file is not a rule file.
    """
    default = scope or ctx.ws.config.write_scope
    personal = scope or f"user:{ctx.actor}"
    out: list[_File] = []
    warnings: list[str] = []
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_dir():
            # a folder inside .cursor, .claude or .github (``.cursor/rules``): its rule files as the
            # project above that folder names them (stop 34: it found none)
            root = _root_of(path / "_") if path.name in _MARKERS or any(
                parent.name in _MARKERS for parent in path.parents) else path
            found = dict.fromkeys(p.resolve() for pattern in rule_files.DISCOVER for p in sorted(root.glob(pattern))
                                  if p.is_file() and (root == path or path in p.resolve().parents))
            if root == path:
                found.update(dict.fromkeys(p.resolve() for p in _nested(path) if p.is_file()))
            outside = [p for p in found if path not in p.parents]
            warnings.extend(f"skipped {p}: a link that leads outside {given}" for p in outside)
            files = [(p, root) for p in found if p not in outside]
            if not files:
                warnings.append(f"no rule files in {given} (looked for {', '.join(rule_files.DISCOVER)})")
        elif path.is_file():
            files = [(path, _root_of(path))]
        elif path.exists():
            raise UsageProblem(f"{given} is not a regular file or folder",
                               hint="give rule files or folders that hold them")
        else:
            raise UsageProblem(f"no such file or folder: {given}", hint="give rule files or folders that hold them")
        for file, root in files:
            kind = rule_files.kind_of(PurePosixPath(file.relative_to(root).as_posix()))
            if kind == "markdown" and file.suffix.lower() not in rule_files.IMPORTABLE_SUFFIXES:
                raise UsageProblem(f"cannot import {given}: not a rule file",
                                   hint="give Markdown rule files, .cursor/rules/*.mdc, or JSON Lines from export")
            folder = file.parent.relative_to(root).as_posix()
            under = [f"{folder}/**"] if file.name in rule_files.NESTED and folder != "." \
                and not folder.startswith((".claude", ".gemini")) else []
            out.append(_File(file, root, kind, personal if file.name == "CLAUDE.local.md" else default,
                             paths=under, boundary=_repository(root) or root, named=path.is_file()))
    return out, warnings


def _resolve_import(src: _File, target: str) -> tuple[Path | None, str | None]:
    """The file an ``@target`` in ``src`` names, or None and why not (None: stay silent)."""
    looks_like_path = "/" in target or "." in target or target.startswith("~")
    raw = Path(target).expanduser() if target.startswith("~") else Path(target)
    path = (raw if raw.is_absolute() else src.path.parent / raw).resolve()
    if src.limit != path and src.limit not in path.parents:
        where = "the repository" if src.boundary not in (None, src.root) or (src.limit / ".git").exists() \
            else "the import root"
        return None, f"it is outside {where}" if looks_like_path else None
    if not path.is_file():
        if not looks_like_path:
            return None, None
        base = src.root if src.root in path.parents else src.limit
        shown = path.relative_to(base).as_posix() if base in path.parents else str(path)
        return None, "no such file" if shown == target.lstrip("./") else \
            f"no such file {shown} (an @import is relative to the file that holds it)"
    if path.suffix.lower() not in rule_files.IMPORTABLE_SUFFIXES:
        return None, "not a Markdown or text file"
    return path, None


def planned_id(anchor_ms: int, number: int, key: str) -> str:
    """The id an imported memory gets: a ULID whose time is ``anchor_ms + number``
    milliseconds (the store's last commit, then file order) and whose random part is the
    SHA-256 of its idempotency key, so a dry run and the real run that follows agree.

    Args:
        anchor_ms: milliseconds since the epoch (:func:`_anchor`).
        number: the item's place in the import (0, 1, …).
        key: its idempotency key.
    """
    from ulid import ULID

    stamp = max(0, min(anchor_ms + number, 2**48 - 1))
    return str(ULID.from_bytes(stamp.to_bytes(6, "big") + hashlib.sha256(key.encode("utf-8")).digest()[:10])).lower()


def _anchor(ctx: Ctx) -> int:
    """Milliseconds since the epoch that the ids of one import start at: the store's last
    commit (the same for a dry run and the run after it), else the start of today (UTC)."""
    from memcli.errors import GitFailed

    try:
        head = ctx.git().head_time()
    except GitFailed:
        head = None
    if head is None:
        day = ctx.now.replace(hour=0, minute=0, second=0, microsecond=0)
        return int(day.timestamp()) * 1000
    return head * 1000 + 1


def _key(scope: str, source: str, text: str) -> str:
    digest = hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]
    key = f"import:{scope}:{source}:{digest}"
    if len(key) > 200:  # the gate's limit for keys; a very deep path is hashed too
        key = f"import:{scope}:{hashlib.sha256(source.encode('utf-8')).hexdigest()[:16]}:{digest}"
    return key


def _record(data: dict[str, Any]) -> Memory:
    """A :class:`Memory` from one exported JSON object (``Memory.to_dict``).

    Raises:
        ValidationFailed: a required field is missing or a time does not parse.
    """
    try:
        memory = from_dict(data)
        review = dict(memory.review) if isinstance(memory.review, dict) else memory.review
        if review and isinstance(review.get("at"), str):
            review["at"] = parse_instant(review["at"])
        memory.review = review
    except KeyError as err:
        raise ValidationFailed(f"not a memcli record: no {err.args[0]!r} field",
                               hint="import JSON Lines written by `memcli export --format jsonl`") from None
    except (TypeError, ValueError, AttributeError) as err:
        raise ValidationFailed(f"not a memcli record: {err}") from None
    return memory


def _gate_of(err: MemcliError) -> str:
    if isinstance(err, SecretDetected):
        return "sensitive_data"
    if isinstance(err, SubjectConflict):
        return "conflict"
    return "validation" if isinstance(err, ValidationFailed) else "error"


class _Collector:
    """Reads the files of one import into drafts for ``write_batch``, following ``@path`` imports."""

    def __init__(self, result: ImportResult, anchor: int = 0) -> None:
        self.result = result
        self.anchor = anchor  # milliseconds: where the planned ids start (planned_id)
        self.drafts: list[tuple[ImportedItem, Any]] = []  # the item to report, and the write_batch item
        self.seen: set[Path] = set()

    def add(self, item: ImportedItem, draft: Any = None) -> None:
        self.result.items.append(item)
        if draft is not None:
            self.drafts.append((item, draft))

    def visit(self, src: _File) -> None:
        if src.path in self.seen:
            return  # each file is read once: a file imported twice, or an import cycle
        self.seen.add(src.path)
        try:
            data = src.path.read_bytes()
            text = data.decode("utf-8-sig")
        except OSError as err:
            self.result.warnings.append(f"skipped {src.rel}: {err.strerror or err}")
            return
        except UnicodeDecodeError as err:  # where, and what to do (stop 34: "invalid continuation byte")
            line = data.count(b"\n", 0, err.start) + 1
            column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
            why = f"not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}, column {column})"
            fix = f"save it as UTF-8 (for example: iconv -f latin1 -t utf-8 {src.rel})"
            if src.named:
                raise ValidationFailed(f"cannot import {src.rel}: {why}; nothing was written", hint=fix)
            self.result.warnings.append(f"skipped {src.rel}: {why}; {fix}")
            return
        if src.kind == "jsonl":
            self.jsonl(src, text)
        else:
            self.rule_file(src, text)

    def jsonl(self, src: _File, text: str) -> None:
        records, problems = rule_files.parse_jsonl(text)
        self.result.files.append({"source": src.rel, "kind": src.kind, "items": len(records) + len(problems)})
        entries = sorted([*((n, d, None) for n, d in records), *((n, None, r) for n, r in problems)],
                         key=lambda entry: entry[0])
        for line, data, reason in entries:
            try:
                if reason:
                    raise ValidationFailed(reason)
                assert data is not None, "each line is a record or a problem"
                record = _record(data)
            except ValidationFailed as err:
                self.add(ImportedItem(src.rel, line, "refused", err.line(), "validation"))
                continue
            self.add(ImportedItem(src.rel, line, "", "", scope=record.scope, text=record.text), record)

    def rule_file(self, src: _File, text: str) -> None:
        from memcli.service.write import WriteOptions

        parsed = rule_files.parse_rule_file(src.kind, text, src.rel)
        self.result.warnings.extend(parsed.warnings)
        info = {"source": src.rel, "kind": src.kind, "items": len(parsed.items)}
        info.update({k: v for k, v in (("description", parsed.description), ("paths", parsed.paths or src.paths),
                                       ("pinned", parsed.pinned), ("skipped", len(parsed.skipped))) if v})
        self.result.files.append(info)
        for item in sorted([*parsed.items, *parsed.skipped], key=lambda i: i.line):
            if item.skipped:
                self.add(ImportedItem(src.rel, item.line, "skipped", SKIPPED[item.skipped or "pointer"],
                                      gate=item.skipped, scope=src.scope, text=item.text))
                continue
            paths, pinned = item.paths or list(src.paths), item.pinned or src.pinned
            key = _key(src.scope, src.rel, item.text)
            opts = WriteOptions(scope=src.scope, category=item.category, importance=item.importance, tags=item.tags,
                                paths=paths, pinned=pinned, source_type="admin_edit", run_id=None, source=src.rel,
                                line=item.line, idempotency_key=key,
                                memory_id=planned_id(self.anchor, len(self.drafts), key))
            self.add(ImportedItem(src.rel, item.line, "", "", scope=src.scope, text=item.text, category=item.category,
                                  importance=item.importance), (item.text, opts))
        for line, target in parsed.imports:
            path, why = _resolve_import(src, target)
            if path is not None and src.depth >= rule_files.MAX_IMPORT_DEPTH:
                why = f"imports go at most {rule_files.MAX_IMPORT_DEPTH} levels deep"
            if why:
                self.result.warnings.append(f"{src.rel}:{line}: not following @{target}: {why}")
            elif path is not None:
                root = src.root if src.root == path or src.root in path.parents else src.limit
                self.visit(_File(path, root, "gemini" if src.kind == "gemini" else "claude", src.scope, src.depth + 1,
                                 list(parsed.paths or src.paths), parsed.pinned or src.pinned, src.boundary))


def import_rules(ctx: Ctx, paths: list[Path], scope: str | None = None, apply: bool = True) -> ImportResult:
    """Import rule files and JSON Lines through the write gates, in one commit (see the module docstring).

    Args:
        paths: files or folders; a folder is searched for the known rule files.
        scope: where rule items go (default: the configured write scope; ``user:<actor>``
            for ``CLAUDE.local.md``). JSON Lines records keep their own scopes.
        apply: False for a dry run: every gate runs, nothing is written.

    Returns:
        Per item its outcome (``created``, ``pending_review``, ``noop``, ``refused``) and
        the gate that decided; refused items do not stop the others.

    Raises:
        UsageProblem: a path does not exist or is not a rule file.
        ValidationFailed, ScopeViolation: ``scope`` is malformed or another user's.
        WorkspaceLocked, GitLocked, GitFailed: nothing is written.
    """
    from memcli.service.write import write_batch

    if scope is not None:
        check_write_scope(scope, ctx.actor)
    queue, warnings = _targets(ctx, paths, scope)
    result = ImportResult(dry_run=not apply, warnings=warnings)
    collector = _Collector(result, _anchor(ctx))
    for src in queue:
        collector.visit(src)
    outcomes, result.commit = write_batch(ctx, "import", [d for _, d in collector.drafts], dry_run=not apply)
    for (item, _), outcome in zip(collector.drafts, outcomes):
        if isinstance(outcome, MemcliError):
            item.outcome, item.gate, item.message = "refused", _gate_of(outcome), outcome.line()
            if isinstance(outcome, SecretDetected):
                item.text = None  # the secret is never echoed
        else:
            item.outcome, item.gate, item.message = outcome.outcome, outcome.gate, outcome.message
            item.id = outcome.memory.id  # a no-op names the existing memory; its text is not echoed
            result.warnings.extend(f"{item.source}:{item.line}: {w}" for w in outcome.warnings)
    result.warnings.extend(f"{i.source}:{i.line}: refused by the {i.gate} gate: {i.message}"
                           for i in result.items if i.outcome == "refused")
    return result


def export_memories(ctx: Ctx, all_statuses: bool = False, scopes: list[str] | None = None) -> list[Memory]:
    """The memories ``export`` writes, oldest first: the caller's scopes, as ``list`` reads them.

    Args:
        all_statuses: every status, expired ones included; else active and unexpired only.
        scopes: ``--scope`` values (default: the configured read scopes).

    Raises:
        ValidationFailed, ScopeViolation: a scope is malformed or another user's.
    """
    from memcli.filters import Filters
    from memcli.service.read import build_query, retriever

    query = build_query(ctx, "", Filters(scopes=scopes or [], statuses=list(STATUSES) if all_statuses else [],
                                         include_expired=all_statuses, limit=1))
    query.limit, query.order = EXPORT_LIMIT, "newest"
    from memcli.service.redact import for_reader

    memories = for_reader(ctx, [hit.memory for hit in retriever(ctx).search(query)])  # no secret leaves
    return sorted(memories, key=lambda m: (m.created_at or ctx.now, m.id))


@dataclass
class ExportResult:
    """What :func:`export_rules` made.

    Attributes:
        files: the files (``agents.rule_files_render.RuleOutput``), main file first; one for stdout and ``jsonl``.
        left_out: personal memories left out of a shared Markdown file.
        unscoped: memories with ``paths`` written without them (stdout, or globs the format cannot say).
    """

    files: list[Any]
    left_out: int = 0
    unscoped: int = 0

    @property
    def text(self) -> str:
        """The main file's text (what stdout gets)."""
        return self.files[0].text if self.files else ""


def export_rules(ctx: Ctx, fmt: str = "claude-md", all_statuses: bool = False, scopes: list[str] | None = None,
                 personal: bool = False, project: bool = False) -> ExportResult:
    """The caller's memories as rule files.

    ``CLAUDE.md`` and ``AGENTS.md`` are usually committed and shared, so the Markdown
    formats leave out personal scopes (``user:*``, ``session:*``) unless ``personal`` is
    set or such a scope is asked for with ``scopes``; included, they follow the shared ones
    in the main file under a heading that names them as personal (for ``CLAUDE.local.md``).
    ``jsonl`` (a lossless backup for ``import``) keeps every scope read.

    Args:
        fmt: ``claude-md`` (default), ``agents-md``, ``cursor`` or ``jsonl`` (``agents.rule_files_render``).
        all_statuses, scopes: see :func:`export_memories`.
        personal: include personal scopes in a Markdown export.
        project: lay the export out as the files of a project (``agents.rule_files_render.layout``:
            ``paths`` kept in ``.claude/rules``, nested ``AGENTS.md``, ``.cursor/rules``);
            else one file, whose memories with ``paths`` are written without them.

    Raises:
        UsageProblem: an unknown format, or ``cursor`` without ``project`` (Cursor rules are several files).
        ValidationFailed: the errors of :func:`export_memories`.
    """
    from memcli.agents import rule_files_render

    if fmt not in rule_files.FORMATS:  # an option's value, as context's --format: a usage error (exit 2)
        raise UsageProblem(f"unknown --format {fmt!r}", hint=f"use one of: {', '.join(rule_files.FORMATS)}")
    if fmt == "cursor" and not project:
        raise UsageProblem("--format cursor writes several .cursor/rules/*.mdc files, not one",
                           hint="give the project folder with --dir DIR")
    memories = export_memories(ctx, all_statuses, scopes)
    if fmt == "jsonl":
        text = rule_files_render.render(memories, fmt, ctx.now)
        return ExportResult([rule_files_render.RuleOutput("memories.jsonl", text, len(memories), main=True)])
    mine = [m for m in memories if m.scope.startswith(("user:", "session:"))]
    shared = [m for m in memories if m not in mine]
    asked = personal or any(s.startswith(("user:", "session:")) for s in scopes or [])
    placed = shared if not project else [m for m in shared if not m.paths]
    if fmt == "cursor":
        files, unplaced = rule_files_render.layout(shared + (mine if asked else []), fmt, ctx.now)
        return ExportResult(files, 0 if asked else len(mine), 0)
    if project and fmt == "agents-md":
        _, unplaced = rule_files_render.layout(shared, fmt, ctx.now)
        placed = placed + unplaced
    text = rule_files_render.render(placed, fmt, ctx.now) if placed or not (asked and mine) else ""
    if asked and mine:
        names = ", ".join(sorted({m.scope for m in mine}))
        text += (("\n" if text else "") + f"<!-- Personal memories ({names}): keep them out of a shared file, "
                 "e.g. in CLAUDE.local.md. -->\n\n# Personal (" + names + ")\n"
                 + rule_files_render.render(mine, fmt, ctx.now).split("\n", 1)[1])
    count = len(placed) + (len(mine) if asked else 0)
    if not project:
        main = rule_files_render.RuleOutput(rule_files_render.MAIN[fmt], text, count, main=True)
        return ExportResult([main], 0 if asked else len(mine), sum(1 for m in shared if m.paths))
    files, unplaced = rule_files_render.layout(shared, fmt, ctx.now, main=placed + (mine if asked else []),
                                               main_text=text)
    return ExportResult(files, 0 if asked else len(mine), len(unplaced))


def write_export(result: ExportResult, folder: Path, main: Path | None = None) -> list[tuple[Path, Any]]:
    """Write an export's files: the main file to ``main`` (default: its place in ``folder``), the
    others to their places in ``folder``; each atomically.

    A file memcli did not write (no ``agents.rule_files.GENERATED`` header) is never overwritten,
    except the main file a person named with ``--output``.

    Returns:
        ``(path written, agents.rule_files_render.RuleOutput)`` pairs, in order.

    Raises:
        UsageProblem: a file in the way was not written by memcli, or a file cannot be
            written; checked for every file before any is written.
    """
    from memcli.store.files import atomic_write

    plan = [(main if (out.main and main is not None) else folder / out.path, out) for out in result.files]
    for path, out in plan:
        if out.main and main is not None:
            continue
        try:
            held = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        except OSError:
            held = None
        if held is not None and rule_files.GENERATED not in held:
            raise UsageProblem(f"{path} exists and memcli did not write it; not overwriting it",
                               hint="move it aside, or export elsewhere with --dir DIR or --output FILE")
        if path.exists() and not path.is_file():
            raise UsageProblem(f"{path} is not a regular file", hint="export elsewhere with --dir DIR")
    written = []
    for path, out in plan:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path.resolve(), out.text.encode("utf-8"))
        except OSError as err:
            raise UsageProblem(f"cannot write {path}: {err.strerror or err}",
                               hint="give a writable --output FILE or --dir DIR") from None
        written.append((path, out))
    return written
