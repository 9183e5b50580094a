"""Which changes of ``memcli.toml`` loosen trust (docs/teams.md, "Settings that guard trust").

``memcli.toml`` is committed with the memory, so a teammate's push can change the settings
every clone works by. The settings below decide what is reviewed, who may approve, whose
signature counts and what is served; :func:`compare` lists how two versions differ in them,
each change marked as loosening (``loosens``: held back on arrival, refused by ``check`` of a
range) or not (tightening or neutral: in force, and named). Pure: two ``Config`` objects in,
a list out.

* ``[scopes] shared``: loosens unless every pattern before is still covered by one after
  (:func:`covers`); an agent's write in an uncovered scope would no longer wait for review.
* ``[scopes] read``: a scope removed loosens (it hides its memories from every session,
  guards among them: a ``deny`` memory the pre-tool hook enforces), and so does a scope added
  that is not reviewed (not covered by ``shared`` before) and not the reader's own
  (``user:{actor}``): it serves memories nobody approved.
* ``[scopes] write``: loosens when an agent's write in the old default scope was reviewed and
  in the new one is not (judged by the ``shared`` list before).
* ``[review] allow_self_approve``: ``false`` to ``true`` loosens.
* ``[review] signing``: ``"ssh"`` to ``"off"`` loosens.
* ``[gates] near_duplicate``: a higher ratio reports fewer near duplicates: loosens.
* ``[gates] on_conflict``: ``"fail"`` to ``"supersede"`` loosens.
* ``[hooks] extract``, ``[hooks] summarize``, ``[sync] session_end``, ``[sync] session_start``:
  turned on loosens (red team, stop 35: a teammate's ``extract = true`` made the victim's
  session end write what they had said into the shared scope and push it; ``session_start``
  serves an arrival before the person saw it).
* ``[hooks] deadline`` changed, ``[context] budget`` lowered: loosens (a hook past its agent's
  timeout answers nothing; a budget of 200 emptied every session start; a deadline of 0.1 s
  answered before the guards were read after an arrival: red team, stop 36).
* ``[git] autocommit`` turned off, a ``[ttl]`` default shorter or new: loosens (a teammate's
  ``autocommit = false`` left the victim's writes uncommitted and unshared; ``fact = "1m"``
  gave her next guarded memory an expiry a minute out: red team, stop 36).
* ``[workspace] kind``: ``project`` to ``personal`` loosens (a personal store serves the
  personal scopes a project's shared tree never serves); ``[workspace] id`` removed loosens
  for the same reason, and changed loosens too: each person's memories of ``user:*`` scopes,
  guards among them, would be read from the store of another id (red team, stop 36; a
  ``memcli resolve`` of two stores started apart, which takes the remote's id, is the
  resolver's own change and is accepted once by the others).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import timedelta

    from memcli.config import Config

#: Characters that make a ``[scopes] shared`` entry a glob pattern (``fnmatch``).
GLOB = "*?["


@dataclass
class SettingChange:
    """One trust setting that differs between two versions of ``memcli.toml``.

    Attributes:
        key: ``[table] key``.
        before, after: the values, as TOML writes them.
        loosens: True when the change weakens a gate (module docstring).
        why: what the change does, in a few words.
    """

    key: str
    before: str
    after: str
    loosens: bool
    why: str

    def words(self) -> str:
        """``[scopes] shared ["project"] -> [] (an agent's write in project is no longer reviewed)``."""
        return f"{self.key} {self.before} -> {self.after} ({self.why})"


def _shown(value: object) -> str:
    return "none" if value is None else json.dumps(value, ensure_ascii=False)


def covers(pattern: str, scope: str) -> bool:
    """Does the ``[scopes] shared`` entry ``pattern`` cover every scope the entry ``scope`` does?

    True for the same text, for ``*``, and for a plain prefix pattern (``channel:*``) over an
    entry starting with its prefix; any other glob is taken not to cover (the safe answer)."""
    if pattern == scope or pattern == "*":
        return True
    stem = pattern[:-1]
    return pattern.endswith("*") and not any(c in stem for c in GLOB) and scope.startswith(stem)


def _review_required(scope: str, shared: list[str]) -> bool:
    from fnmatch import fnmatchcase

    return any(fnmatchcase(scope, p) for p in shared)


def compare(before: Config, after: Config) -> list[SettingChange]:
    """The trust settings that differ from ``before`` to ``after``, in the module docstring's order."""
    out: list[SettingChange] = []

    def add(key: str, old: object, new: object, loosens: bool, why: str) -> None:
        out.append(SettingChange(key, _shown(old), _shown(new), loosens, why))

    if before.shared_scopes != after.shared_scopes:
        lost = [p for p in before.shared_scopes if not any(covers(q, p) for q in after.shared_scopes)]
        add("[scopes] shared", before.shared_scopes, after.shared_scopes, bool(lost),
            f"an agent's write in {', '.join(lost[:3])} would no longer wait for review" if lost
            else "more scopes wait for review")
    if before.read_scopes != after.read_scopes:
        hidden = [r for r in before.read_scopes if r not in after.read_scopes]
        unreviewed = [r for r in after.read_scopes if r not in before.read_scopes and "{actor}" not in r
                      and not any(covers(p, r) for p in before.shared_scopes)]
        add("[scopes] read", before.read_scopes, after.read_scopes, bool(hidden or unreviewed),
            f"{', '.join(hidden[:3])} would be hidden from every session, guards among it" if hidden
            else f"unreviewed {', '.join(unreviewed[:3])} would be served" if unreviewed
            else "more reviewed scopes are read")
    if before.write_scope != after.write_scope:
        skips = _review_required(before.write_scope, before.shared_scopes) and \
            not _review_required(after.write_scope, before.shared_scopes)
        add("[scopes] write", before.write_scope, after.write_scope, skips,
            "an agent's write there would skip review" if skips else "the default scope of a write")
    if before.allow_self_approve != after.allow_self_approve:
        add("[review] allow_self_approve", before.allow_self_approve, after.allow_self_approve,
            after.allow_self_approve, "a proposer may approve their own write" if after.allow_self_approve
            else "a proposer may no longer approve their own write")
    if before.signing != after.signing:
        off = before.signing == "ssh" and after.signing != "ssh"
        add("[review] signing", before.signing, after.signing, off,
            "commits would count without a signature" if off else "commits count only when signed")
    if before.near_duplicate != after.near_duplicate:
        fewer = after.near_duplicate > before.near_duplicate
        add("[gates] near_duplicate", before.near_duplicate, after.near_duplicate, fewer,
            "fewer near duplicates reported" if fewer else "more near duplicates reported")
    if before.on_conflict != after.on_conflict:
        replaces = after.on_conflict == "supersede"
        add("[gates] on_conflict", before.on_conflict, after.on_conflict, replaces,
            "a write would replace an active memory of the same subject" if replaces
            else "a write of a held subject would fail")
    if before.kind != after.kind:
        add("[workspace] kind", before.kind, after.kind, after.kind != "project",
            "personal scopes in the shared tree would be served" if after.kind != "project"
            else "personal scopes in the shared tree are never served")
    for key, name, what in (("[hooks] extract", "hook_extract", "each session's transcript would be mined into "
                             "memories, written to the store and shared"),
                            ("[hooks] summarize", "hook_summarize", "each session would be summarized into a "
                             "memory, written to the store and shared"),
                            ("[sync] session_end", "sync_session_end", "each session's writes would be pushed "
                             "when it ends, unseen"),
                            ("[sync] session_start", "sync_session_start", "a teammate's arrival would reach the "
                             "agent at the session start before you see it")):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            add(key, old, new, bool(new), what if new else f"no longer: {what}")
    if before.hook_deadline != after.hook_deadline:
        later = after.hook_deadline > before.hook_deadline
        add("[hooks] deadline", before.hook_deadline, after.hook_deadline, True,
            "a hook may run past its agent's timeout (5 s as installed)" if later
            else "a hook may answer before it has read the guards")
    if before.autocommit != after.autocommit:
        add("[git] autocommit", before.autocommit, after.autocommit, not after.autocommit,
            "memcli's writes would stay uncommitted, so sync would share none of them" if not after.autocommit
            else "memcli's writes are committed")
    shorter = [c for c in sorted(set(before.ttl) | set(after.ttl)) if _sooner(before.default_ttl_or_none(c),
                                                                              after.default_ttl_or_none(c))]
    if before.ttl != after.ttl:
        add("[ttl]", before.ttl, after.ttl, bool(shorter),
            f"new memories of {', '.join(shorter[:3])} would expire sooner, their guards with them" if shorter
            else "memories are kept longer")
    if before.context_budget != after.context_budget:
        less = after.context_budget < before.context_budget
        add("[context] budget", before.context_budget, after.context_budget, less,
            "fewer memories in every session start" if less else "more memories in every session start")
    if before.workspace_id != after.workspace_id:
        dropped = before.workspace_id is not None and after.workspace_id is None
        add("[workspace] id", before.workspace_id, after.workspace_id, before.workspace_id is not None,
            "personal scopes in the shared tree would be served" if dropped
            else "personal memories, guards among them, would be read from another store")
    return out


def _sooner(before: timedelta | None, after: timedelta | None) -> bool:
    """Whether a category's ``[ttl]`` default ``after`` (a ``timedelta``, None: never) expires
    its memories sooner than ``before``."""
    return after is not None and (before is None or after < before)
