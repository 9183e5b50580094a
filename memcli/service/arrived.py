"""The hot path of verify on arrival (``service.arrival``): the record kept in the git folder
(:func:`anchor_path`, with a copy in ``.cache/arrival.json``).

Every read asks :func:`held` what it must not serve. When the ``stat`` of the file that moves
with ``HEAD`` (git's ``logs/HEAD``, else the index) matches the record, that is one small read
and one ``stat``, no git process; otherwise ``service.arrival.catch_up`` verifies what arrived
first. memcli's own commits move the record along (:func:`unmoved` before, :func:`advance`
after), so only commits memcli did not make are ever verified. Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.service import Ctx

#: The record beside the index (a copy: see :func:`anchor_path`).
STATE_NAME = "arrival.json"
#: The folder, inside the repository's git folder, of the records that count.
ANCHOR_FOLDER = "memcli"


def _state_path(ctx: Ctx) -> Path:
    return ctx.ws.root / ".cache" / STATE_NAME


#: :func:`anchor_path` per store, once found (a read asks twice: the settings, then :func:`held`).
_ANCHORS: dict[str, Path] = {}


def anchor_path(root: Path) -> Path | None:
    """Where the record of the store at ``root`` that counts is kept: in the git folder of the
    repository holding it (``.git/memcli/arrival-HASH.json``, HASH of the store's real path:
    two stores of one repository keep two), which no pull, merge or checkout writes. The copy
    in ``.cache/`` is in the working tree, where a plain ``git pull`` overwrites an ignored file
    with a tracked one (red team, stop 35: a tracked ``.cache/arrival.json`` set what the clone
    had verified, and a quarantined memory was served again). None outside a repository."""
    found = _ANCHORS.get(str(root))
    if found is not None:
        return found
    import hashlib

    from memcli.git.identity import git_dir

    folder = git_dir(root)
    if folder is None:
        return None
    key = hashlib.blake2b(os.path.realpath(root).encode("utf-8", "surrogateescape"), digest_size=6).hexdigest()
    found = _ANCHORS[str(root)] = Path(folder) / ANCHOR_FOLDER / f"arrival-{key}.json"
    return found


def load(ctx: Ctx) -> dict:
    """The store's record (``{}`` when there is none or it cannot be read). One small read."""
    return read_record(ctx.ws.root)


def read_record(root: Path) -> dict:
    """The record of the store at ``root`` (``{}`` when there is none or it cannot be read): the
    one in the git folder (:func:`anchor_path`), else, for a store whose record was written
    before it was kept there, the copy in ``.cache/``."""
    anchor = anchor_path(root)
    for path in ((anchor,) if anchor is not None else ()) + (root / ".cache" / STATE_NAME,):
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}
    return {}


def _save(ctx: Ctx, state: dict) -> None:
    """Write the record atomically, in the git folder (:func:`anchor_path`) and its copy in
    ``.cache/`` (what ``store.workspace.lost_settings`` looks for); a folder that is read-only,
    or a cache folder that is a link (the index refuses it too: it may point anywhere), is left
    alone (the next read tries again)."""
    from memcli.store.files import atomic_write

    data = json.dumps(state, indent=1, sort_keys=True).encode("utf-8")
    anchor = anchor_path(ctx.ws.root)
    if anchor is not None:
        try:
            anchor.parent.mkdir(mode=0o700, exist_ok=True)
            atomic_write(anchor, data)
        except OSError:
            pass
    if os.path.islink(_state_path(ctx).parent):
        return
    try:
        atomic_write(_state_path(ctx), data)
    except OSError:
        pass


def _stat_key(path: str | None) -> list[int] | None:
    """``[size, mtime_ns, inode]`` of ``path``; None when it is missing or unnamed."""
    if not path:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def _stale(state: dict) -> bool:
    """Whether the record ``state`` does not vouch for ``HEAD``: none, one without the file it
    keys on, or ``HEAD`` moved since it was verified (one ``stat``)."""
    return not state or not state.get("keyPath") or _stat_key(state.get("keyPath")) != state.get("key")


def unverified(ctx: Ctx) -> bool:
    """Whether :func:`held` must verify what arrived first: one small read and one ``stat``."""
    return _stale(load(ctx))


def held(ctx: Ctx) -> tuple[set[str], set[str]]:
    """What a read must not serve: ``(workspace-relative paths, memory ids)`` of the quarantined
    files, after verifying what arrived since the record (``arrival.catch_up``; a failure
    there is a warning in ``ctx.warnings`` and the record is used as it is).

    Raises:
        settings.Unloadable: what arrived leaves a ``memcli.toml`` that does not load and ``ctx`` is
            not ``tolerant`` (``arrival._follow_settings``): the command stops, as the next would.
    """
    state = load(ctx)
    if _stale(state):
        from memcli.errors import MemcliError
        from memcli.service.arrival import catch_up
        from memcli.service.settings import Unloadable

        try:
            state = catch_up(ctx)
        except Unloadable:
            raise
        except MemcliError as err:  # git unavailable, a broken repository: say so
            ctx.warnings.append(f"could not verify what arrived in this store ({err.message}); "
                                "`memcli quarantine list` tries again")
    paths: set[str] = set()
    ids: set[str] = set()
    for raw in state.get("entries", []):
        if isinstance(raw, dict) and raw.get("kind") == "file":
            paths.add(str(raw.get("path", "")))
            if raw.get("memory"):
                ids.add(str(raw["memory"]))
        elif isinstance(raw, dict) and raw.get("rule") == "mass-add":  # a flood of new files: none served
            paths.update(str(p) for p in raw.get("paths") or [] if isinstance(p, str))
    return paths, ids


def moved(state: dict) -> bool:
    """True when the record ``state`` exists and ``HEAD`` moved since it was verified (one ``stat``)."""
    return bool(state.get("verified")) and _stat_key(state.get("keyPath")) != state.get("key")


def unmoved(ctx: Ctx) -> bool:
    """True when ``HEAD`` is where it was verified (the recorded ``stat`` matches; no git process)."""
    state = load(ctx)
    return bool(state.get("verified")) and _stat_key(state.get("keyPath")) == state.get("key")


def advance(ctx: Ctx, was_unmoved: bool, commit: str | None) -> None:
    """After memcli's own commit ``commit``: when ``HEAD`` had not moved since it was verified
    (``was_unmoved``, :func:`unmoved` before the commit), the new commit is verified too. Never raises."""
    if not was_unmoved or not commit:
        return
    state = load(ctx)
    if state.get("keyPath"):
        state.update(verified=commit, key=_stat_key(state["keyPath"]))
        if isinstance(state.get("verifiedConfig"), dict):  # memcli's own commit may have written it
            import hashlib

            try:
                data = (ctx.ws.root / "memcli.toml").read_bytes()
            except OSError:
                state.pop("verifiedConfig", None)
            else:
                state["verifiedConfig"] = {"sha256": hashlib.sha256(data).hexdigest(),
                                           "text": data.decode("utf-8", "replace")}
        _save(ctx, state)


def take_notices(ctx: Ctx) -> list[str]:
    """The mass-change lines not yet shown in a session's context block; shown once (removed here)."""
    state = load(ctx)
    notices = [str(n) for n in state.get("notices", [])]
    if notices:
        state["notices"] = []
        _save(ctx, state)
    return notices
