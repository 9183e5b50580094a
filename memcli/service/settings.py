"""The settings a command works by: ``memcli.toml``, unless it is held back or broken.

``store.workspace.open_workspace`` takes its settings from :func:`settle`, which answers, in order:

1. **held back**: when verify on arrival has quarantined the ``memcli.toml`` a teammate pushed
   (``service.arrival``: a change that loosens a trust setting, ``policy.trust_settings``, or
   one that does not load) and the file is still the one that arrived, the last verified
   version's settings (kept in ``.cache/arrival.json``), until a person accepts or reverts it;
2. **not verified yet**: when ``HEAD`` moved since the last verification (a ``git pull``) and
   the file is not the verified one, the verified version's settings (``verifiedConfig`` in
   the record) until the command's first read verifies the arrival (``arrival.catch_up``,
   which then settles the settings again): what a pull brings never decides, even for one
   command, which scopes a hook reads or what is reviewed;
3. the file itself, when it loads;
4. **broken**: a file that does not load (bad TOML, a value out of range) stops an ordinary
   command with one line (exit 3: the person fixes their file), but it must not leave every
   hook answering nothing, its guards off (fail open), nor stop the commands that mend it.
   Those open the workspace ``tolerant`` (the hooks, ``context``, ``doctor``, ``quarantine``,
   ``undo``): memcli works by the newest committed version that loads (else the defaults)
   and says so: ``Config.broken`` is one line for their warnings, ``doctor`` and the session
   start's context block, naming the problem and the fix. The guards stay in force.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memcli.config import CONFIG_NAME, Config, load_config, parse_config
from memcli.errors import MemcliError, WorkspaceInvalid

if TYPE_CHECKING:
    from memcli.git.repo import GitRepo

#: Committed versions of ``memcli.toml`` looked at for the last one that loads.
LOOK_BACK = 20
#: What every ``Config.broken`` line says (``service.hook_check`` looks for it in a hook's warnings).
BROKEN = "until it is fixed: correct the file"
#: ``Config.held`` while the settings are the verified ones because ``HEAD`` moved and
#: brought another ``memcli.toml`` that verify on arrival has not judged yet.
UNVERIFIED = "unverified"


def digest(data: bytes) -> str:
    """The SHA-256 (hex) a held-back ``memcli.toml`` is known by."""
    from memcli.digests import sha256  # not hashlib: no OpenSSL load on a read

    return str(sha256(data).hexdigest())


def from_text(text: str) -> Config | None:
    """The settings of a ``memcli.toml`` text, or None when it does not load."""
    try:
        return parse_config(text)
    except WorkspaceInvalid:
        return None


def problem(data: bytes | None) -> str | None:
    """Why a ``memcli.toml`` (its bytes; None: the file is missing) does not load, in words, as
    ``load_config`` would refuse it; None when it loads."""
    if data is None:
        return f"{CONFIG_NAME} was removed"
    try:
        parse_config(data.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        return f"cannot read configuration: {err}"
    except WorkspaceInvalid as err:
        return err.message.removeprefix(f"{CONFIG_NAME}: ")
    return None


class Unloadable(WorkspaceInvalid):
    """The workspace's ``memcli.toml`` is missing or does not load (:func:`settle` when not
    ``tolerant``): the command stops with exit 3, whether it found it so at its start or a pull
    it verified left it so (``arrived.held`` lets it through, where other failures are warnings)."""


def hold_of(root: Path) -> dict | None:
    """The record of a held-back ``memcli.toml`` (``service.arrival``), or None. One small read."""
    from memcli.service.arrived import read_record

    hold = read_record(root).get("heldConfig")
    return hold if isinstance(hold, dict) and isinstance(hold.get("text"), str) else None


def settle(root: Path, tolerant: bool = True) -> Config:
    """The settings of the workspace at ``root`` (module docstring).

    Args:
        tolerant: a file that does not load gives the fallback with :attr:`Config.broken` set;
            else it raises.

    Raises:
        WorkspaceInvalid: the file does not load (only when not ``tolerant``).
    """
    from memcli.service.arrived import moved, read_record

    path = root / CONFIG_NAME
    record = read_record(root)
    hold = record.get("heldConfig") if isinstance(record.get("heldConfig"), dict) else None
    verified = record.get("verifiedConfig") if isinstance(record.get("verifiedConfig"), dict) else None
    found = ""
    if hold is not None or (verified is not None and moved(record)):  # else the file, unread here
        try:
            found = digest(path.read_bytes())
        except OSError:
            pass
    if hold is not None and hold.get("sha256") == found:  # "" when the arrival removed it
        kept = from_text(str(hold.get("text", "")))
        if kept is not None:
            kept.held = str(hold.get("id", ""))
            return kept
    if verified is not None and verified.get("sha256") != found and moved(record):
        trusted = hold if hold is not None else verified  # HEAD moved and brought another memcli.toml
        kept = from_text(str(trusted.get("text", "")))
        if kept is not None:
            kept.held = UNVERIFIED
            return kept
    try:
        return load_config(path)
    except WorkspaceInvalid as err:
        if not tolerant and path.exists():
            raise Unloadable(err.message, hint=err.hint) from None
        config, source, commit = last_good(root)
        if not tolerant:  # gone: put back its last version that loads (HEAD's may have none)
            if not commit:
                raise Unloadable(err.message, hint=f"run `memcli init {root}` to write a new one") from None
            restore = f"git -C {root} checkout {commit[:12]} -- {CONFIG_NAME}"
            if not _at_head(root):  # a commit removed it: the restored file is a change to commit too
                restore += f" && git -C {root} commit -m 'Restore {CONFIG_NAME}' -- {CONFIG_NAME}"
            raise Unloadable(err.message, hint=f"restore its last committed version that loads: `{restore}`") \
                from None
        fix = f"`git -C {root} checkout {commit[:12]} -- {CONFIG_NAME}` puts that version back" if commit \
            else f"compare it with a fresh `memcli init`'s {CONFIG_NAME}"
        config.broken = f"{err.message}; memcli works by {source} {BROKEN}, or {fix}"
        return config


def _at_head(root: Path) -> bool:
    """Whether the commit ``HEAD`` holds a ``memcli.toml`` beside ``root``'s memories (True when git cannot tell)."""
    from memcli.git.run import run

    try:
        return run(("cat-file", "-e", f"HEAD:./{CONFIG_NAME}"), root, timeout=5).returncode == 0
    except MemcliError:
        return True


def last_good(root: Path) -> tuple[Config, str, str]:
    """The newest committed ``memcli.toml`` of the repository holding ``root`` that loads
    (among the last :data:`LOOK_BACK` versions).

    Returns:
        ``(settings, where they come from in words, its commit)``; the defaults, "the default
        settings" and ``""`` when none loads or git cannot tell.
    """
    from memcli.git.run import batch_blobs, run

    try:
        listed = run(("log", f"-n{LOOK_BACK}", "--format=%H", "--", CONFIG_NAME), root, timeout=5)
        commits = listed.stdout.decode().split() if listed.returncode == 0 else []
        if commits:
            blobs = run(("cat-file", "--batch"), root, timeout=5,
                        input="".join(f"{c}:./{CONFIG_NAME}\n" for c in commits).encode())
            found = batch_blobs(blobs.stdout if blobs.returncode == 0 else b"", len(commits))
            for commit, data in zip(commits, found):
                config = from_text(data.decode("utf-8", "replace")) if data is not None else None
                if config is not None:
                    return config, f"the settings of commit {commit[:12]} (the last version that loads)", commit
    except MemcliError:  # git missing, or past its time: the defaults
        pass
    return Config(), "the default settings", ""


def bytes_at(repo: GitRepo, rev: str) -> bytes | None:
    """The workspace's ``memcli.toml`` at the commit ``rev``, as stored; None when it has none."""
    status, out, _ = repo.raw("cat-file", "blob", f"{rev}:{repo.prefix}{CONFIG_NAME}")
    return out if status == 0 else None


def text_at(repo: GitRepo, rev: str) -> str | None:
    """The text of the workspace's ``memcli.toml`` at the commit ``rev``; None when it has none."""
    data = bytes_at(repo, rev)
    return None if data is None else data.decode("utf-8", "replace")
