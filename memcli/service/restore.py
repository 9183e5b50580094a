"""Restoring complete records (JSON Lines ``import``) through the write gates.

A restored memory keeps its id, status, times, provenance, links and review; see
:func:`restore` for how each of the six gates of SPEC.md section 3 applies to it.
"""

from __future__ import annotations

from memcli import fileformat, model
from memcli.errors import ScopeViolation, SubjectConflict
from memcli.model import Memory
from memcli.policy import gates
from memcli.policy.owner import is_session
from memcli.service import Ctx
from memcli.service.write import Batch, WriteResult, check_session_owner


def restore(ctx: Ctx, op: str, record: Memory, batch: Batch) -> WriteResult:
    """The six gates for a complete record (JSON Lines ``import``): it keeps its id, status, times, provenance.

    Validation reads the record through the file schema; an id already present is a
    duplicate (a no-op); the conflict gate refuses instead of superseding (that would
    change the record); the review gate keeps the status, except that an ``active``
    record that needed a review (SPEC.md section 3, gate 6) and has none waits in
    ``pending_review``. The caller holds the workspace lock and has synced the catalog.

    Raises:
        ValidationFailed, ScopeViolation, SecretDetected, SubjectConflict.
    """
    model.check_text(record.text)
    gates.check_write_scope(record.scope, ctx.actor)
    check_session_owner(ctx, record.scope)
    if is_session(record.scope) and record.provenance.actor != ctx.actor:
        raise ScopeViolation(f"cannot restore {record.id} into {record.scope}: the session is "
                             f"{record.provenance.actor}'s, and you are {ctx.actor}",
                             hint="import only your own session memories")
    record = model.from_mapping(model.to_mapping(record), record.body, path="", file_id=record.id,
                                folder_scope=None, file_time=ctx.now)
    decided = [("validation", "passed")]
    gates.check_memory(record)  # every value written: text, labels, scope, provenance, review
    decided.append(("sensitive_data", "passed"))
    catalog = ctx.catalog()
    key = record.provenance.idempotency_key
    first = key and (next((m for m in batch.added if m.provenance.idempotency_key == key), None)
                     or catalog.by_idempotency_key(key, record.scope))
    if first and (first.scope != record.scope or not ctx.may_see(first)):  # a key counts within one scope
        first = None
    if first:
        decided.append(("idempotency", f"repeated key; first result {first.id}"))
        return WriteResult(op, first, "noop", f"already written with this idempotency key: {first.id}",
                           gate="idempotency", gates=decided)
    decided.append(("idempotency", "passed"))
    live = record.status in ("active", "pending_review")
    texts = catalog.live_texts(record.scope) if live else {}
    texts.update({m.id: model.normalise_text(m.text) for m in batch.added if live and m.scope == record.scope})
    dups = gates.find_duplicates(record.text, texts, ctx.ws.config.near_duplicate) if live else []
    same = [m for m in [*batch.added, *catalog.by_prefix(record.id)] if m.id == record.id]
    if same or (dups and dups[0].exact):
        first = same[0] if same else next((m for m in batch.added if m.id == dups[0].memory_id), None) \
            or catalog.by_prefix(dups[0].memory_id)[0]
        decided.append(("duplicate", f"{'same id as' if same else 'exact duplicate of'} {first.id}"))
        return WriteResult(op, first, "noop", f"already exists: {first.id}", gate="duplicate", gates=decided)
    decided.append(("duplicate", "near duplicate reported" if dups else "passed"))
    if record.status == "active" and record.subject:
        held = [m.id for m in [*catalog.active_with_subject(record.scope, record.subject), *batch.added]
                if m.scope == record.scope and m.subject == record.subject and m.status == "active"]
        if held:
            raise SubjectConflict(f"{held[0]} already holds subject {record.subject!r} in {record.scope}",
                                  hint=f"retire it first (`memcli forget {held[0]}`), then import again")
    decided.append(("conflict", "passed"))
    if record.status == "active" and record.review is None and gates.review_required(
            record.scope, record.provenance.source_type, ctx.ws.config.shared_scopes):
        record.status = "pending_review"
    decided.append(("review", record.status))
    path = ctx.ws.files.new_path(record)
    record.path = ctx.ws.files.rel(path)
    batch.writes[path] = fileformat.render_new(model.to_mapping(record), record.body)
    batch.added.append(record)
    return WriteResult(op, record, "pending_review" if record.status == "pending_review" else "created",
                       f"restored: {record.id} ({record.scope}, {record.status})", gates=decided,
                       warnings=[f"near duplicate of {d.memory_id} ({d.ratio:.0f}% similar)" for d in dups])
