"""``import`` and ``export``: agents' rule files to memories and back (SPEC.md section 4).

Import reads rule files (the kinds in :mod:`memcli.agents.rules`) and sends every item
through the same six gates as ``remember`` (``write.write_batch``), with
``sourceType: admin_edit``, no run id, and the file and line in the provenance
(``provenance.source``, ``provenance.line``). Everything accepted is written in one commit.

* Paths: a folder is searched for the known rule files (``agents.rules.DISCOVER``), not
  walked; a file is read as the kind its name says. The import root, to which
  ``provenance.source`` is relative, is the folder given, or for a file the folder
  above its ``.claude``/``.cursor``/``.github`` folder, else its own folder.
* ``@path`` imports (``CLAUDE.md`` family): resolved relative to the importing file,
  followed recursively up to 5 hops (Claude Code's limit), each file read once (so a
  cycle ends). Not followed, with a warning: targets outside the import root (a
  project's memory never pulls in ``~/`` files), missing files, and files that are not
  Markdown or text (``@package.json`` is a pointer for the agent, not rules). Items of
  an imported file inherit the importer's ``paths`` and pin.
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
status and expired ones with ``all_statuses``) and renders it with ``agents.rules.render``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memcli.agents import rules
from memcli.errors import MemcliError, SecretDetected, SubjectConflict, UsageProblem, ValidationFailed
from memcli.model import STATUSES, Memory, check_choice, from_dict, normalise_text
from memcli.policy.gates import check_write_scope
from memcli.service import Ctx
from memcli.timeutil import parse_instant

#: The category of a memory taken from a rule file: rules say how to work in the project.
RULE_CATEGORY = "procedure"
#: At most this many memories are exported (the read path needs a limit).
EXPORT_LIMIT = 10_000_000
_MARKERS = (".claude", ".cursor", ".github")


@dataclass
class ImportedItem:
    """What became of one item.

    Attributes:
        outcome: ``created``, ``pending_review``, ``noop`` or ``refused``.
        gate: the gate that decided a no-op, a review or a refusal.
        id: the memory written, or the existing one a no-op points to.
        text: the item's text; None when refused for sensitive data (never echoed).
    """

    source: str
    line: int
    outcome: str
    message: str
    gate: str | None = None
    id: str | None = None
    scope: str | None = None
    text: str | None = None

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
        out = {k: 0 for k in ("created", "pending_review", "noop", "refused")}
        for item in self.items:
            out[item.outcome] += 1
        return out

    def message(self) -> str:
        """One line for a person."""
        c = self.counts()
        new = c["created"] + c["pending_review"]
        verb = "would import" if self.dry_run else "imported"
        where = f" in commit {self.commit[:10]}" if self.commit else ""
        return (f"{verb} {new} of {len(self.items)} items from {len(self.files)} files{where}"
                f" ({c['pending_review']} waiting for review, {c['noop']} already present, {c['refused']} refused)")

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

    @property
    def rel(self) -> str:
        return self.path.relative_to(self.root).as_posix()


def _root_of(file: Path) -> Path:
    """The import root for a file named on its own (see the module docstring)."""
    for parent in file.parents:
        if parent.name in _MARKERS:
            return parent.parent
    return file.parent


def _targets(ctx: Ctx, paths: list[Path], scope: str | None) -> tuple[list[_File], list[str]]:
    """The files to read, in order, and warnings for folders without rule files.

    Raises:
        UsageProblem: a path does not exist, or a file is not a rule file.
    """
    default = scope or ctx.ws.config.write_scope
    personal = scope or f"user:{ctx.actor}"
    out, warnings = [], []
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_dir():
            found = dict.fromkeys(p.resolve() for pattern in rules.DISCOVER for p in sorted(path.glob(pattern))
                                  if p.is_file())
            outside = [p for p in found if path not in p.parents]
            warnings.extend(f"skipped {p}: a link that leads outside {given}" for p in outside)
            files = [(p, path) for p in found if p not in outside]
            if not files:
                warnings.append(f"no rule files in {given} (looked for {', '.join(rules.DISCOVER)})")
        elif path.is_file():
            files = [(path, _root_of(path))]
        elif path.exists():
            raise UsageProblem(f"{given} is not a regular file or folder", hint="give rule files or folders that hold them")
        else:
            raise UsageProblem(f"no such file or folder: {given}", hint="give rule files or folders that hold them")
        for file, root in files:
            kind = rules.kind_of(PurePosixPath(file.relative_to(root).as_posix()))
            if kind == "markdown" and file.suffix.lower() not in rules.IMPORTABLE_SUFFIXES:
                raise UsageProblem(f"cannot import {given}: not a rule file",
                                   hint="give Markdown rule files, .cursor/rules/*.mdc, or JSON Lines from export")
            out.append(_File(file, root, kind, personal if file.name == "CLAUDE.local.md" else default))
    return out, warnings


def _resolve_import(src: _File, target: str) -> tuple[Path | None, str | None]:
    """The file an ``@target`` in ``src`` names, or None and why not (None: stay silent)."""
    looks_like_path = "/" in target or "." in target or target.startswith("~")
    raw = Path(target).expanduser() if target.startswith("~") else Path(target)
    path = (raw if raw.is_absolute() else src.path.parent / raw).resolve()
    if src.root != path and src.root not in path.parents:
        return None, "it is outside the import root" if looks_like_path else None
    if not path.is_file():
        return None, "no such file" if looks_like_path else None
    if path.suffix.lower() not in rules.IMPORTABLE_SUFFIXES:
        return None, "not a Markdown or text file"
    return path, None


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

    def __init__(self, result: ImportResult) -> None:
        self.result = result
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
            text = src.path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            self.result.warnings.append(f"skipped {src.rel}: {getattr(err, 'reason', None) or err}")
            return
        if src.kind == "jsonl":
            self.jsonl(src, text)
        else:
            self.rule_file(src, text)

    def jsonl(self, src: _File, text: str) -> None:
        records, problems = rules.parse_jsonl(text)
        self.result.files.append({"source": src.rel, "kind": src.kind, "items": len(records) + len(problems)})
        entries = sorted([*((n, d, None) for n, d in records), *((n, None, r) for n, r in problems)],
                         key=lambda entry: entry[0])
        for line, data, reason in entries:
            try:
                if reason:
                    raise ValidationFailed(reason)
                record = _record(data)
            except ValidationFailed as err:
                self.add(ImportedItem(src.rel, line, "refused", err.line(), "validation"))
                continue
            self.add(ImportedItem(src.rel, line, "", "", scope=record.scope, text=record.text), record)

    def rule_file(self, src: _File, text: str) -> None:
        from memcli.service.write import WriteOptions

        parsed = rules.parse_rule_file(src.kind, text, src.rel)
        self.result.warnings.extend(parsed.warnings)
        info = {"source": src.rel, "kind": src.kind, "items": len(parsed.items)}
        info.update({k: v for k, v in (("description", parsed.description), ("paths", parsed.paths),
                                       ("pinned", parsed.pinned)) if v})
        self.result.files.append(info)
        for item in parsed.items:
            paths, pinned = item.paths or list(src.paths), item.pinned or src.pinned
            opts = WriteOptions(scope=src.scope, category=RULE_CATEGORY, tags=item.tags, paths=paths, pinned=pinned,
                                source_type="admin_edit", run_id=None, source=src.rel, line=item.line,
                                idempotency_key=_key(src.scope, src.rel, item.text))
            self.add(ImportedItem(src.rel, item.line, "", "", scope=src.scope, text=item.text), (item.text, opts))
        for line, target in parsed.imports:
            path, why = _resolve_import(src, target)
            if path is not None and src.depth >= rules.MAX_IMPORT_DEPTH:
                why = f"imports go at most {rules.MAX_IMPORT_DEPTH} levels deep"
            if why:
                self.result.warnings.append(f"{src.rel}:{line}: not following @{target}: {why}")
            elif path is not None:
                self.visit(_File(path, src.root, "claude", src.scope, src.depth + 1,
                                 list(parsed.paths or src.paths), parsed.pinned or src.pinned))


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
    collector = _Collector(result)
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
    from memcli.service.read import Filters, build_query, retriever

    query = build_query(ctx, "", Filters(scopes=scopes or [], statuses=list(STATUSES) if all_statuses else [],
                                         include_expired=all_statuses, limit=1))
    query.limit, query.order = EXPORT_LIMIT, "newest"
    from memcli.service.redact import for_reader

    memories = for_reader(ctx, [hit.memory for hit in retriever(ctx).search(query)])  # no secret leaves
    return sorted(memories, key=lambda m: (m.created_at or ctx.now, m.id))


def export_rules(ctx: Ctx, fmt: str = "claude-md", all_statuses: bool = False, scopes: list[str] | None = None,
                 personal: bool = False) -> tuple[str, int]:
    """The caller's memories as a rule file.

    ``CLAUDE.md`` and ``AGENTS.md`` are usually committed and shared, so the Markdown
    formats leave out personal scopes (``user:*``, ``session:*``) unless ``personal`` is
    set or such a scope is asked for with ``scopes``; included, they follow the shared ones
    under a heading that names them as personal (for ``CLAUDE.local.md``). ``jsonl`` (a
    lossless backup for ``import``) keeps every scope read.

    Args:
        fmt: ``claude-md`` (default), ``agents-md`` or ``jsonl`` (see ``agents.rules.render``).
        all_statuses, scopes: see :func:`export_memories`.
        personal: include personal scopes in a Markdown export.

    Returns:
        ``(text, personal memories left out)``.

    Raises:
        ValidationFailed: unknown format; and the errors of :func:`export_memories`.
    """
    check_choice("format", fmt, rules.FORMATS)
    memories = export_memories(ctx, all_statuses, scopes)
    if fmt == "jsonl":
        return rules.render(memories, fmt, ctx.now), 0
    mine = [m for m in memories if m.scope.startswith(("user:", "session:"))]
    shared = [m for m in memories if m not in mine]
    asked = personal or any(s.startswith(("user:", "session:")) for s in scopes or [])
    text = rules.render(shared, fmt, ctx.now) if shared or not (asked and mine) else ""
    if asked and mine:
        names = ", ".join(sorted({m.scope for m in mine}))
        text += (("\n" if text else "") + f"<!-- Personal memories ({names}): keep them out of a shared file, "
                 "e.g. in CLAUDE.local.md. -->\n\n# Personal (" + names + ")\n"
                 + rules.render(mine, fmt, ctx.now).split("\n", 1)[1])
        return text, 0
    return text, len(mine)
