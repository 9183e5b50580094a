"""The actor git knows (``user.email``, else ``user.name``) and the settings a commit reads, as
git reads them in a folder, cached.

A command that has no ``--actor`` and no ``$MEMCLI_ACTOR`` takes the caller's name from git
(SPEC.md section 1, Identity). Asking git costs a process (4-10 ms, and a failed ``execve``
per ``PATH`` entry before git's), on every read. :func:`configured` asks once and keeps the
answer in a small cache file (the workspace's ``.cache/git-identity.json``), keyed on:

* every config file git would read there, present or not, by path, size, mtime, ctime and
  inode: the system file (``$GIT_CONFIG_SYSTEM`` or ``/etc/gitconfig``), the global ones
  (``$GIT_CONFIG_GLOBAL``, else ``$XDG_CONFIG_HOME/git/config`` or ``~/.config/git/config``,
  and ``~/.gitconfig``), the repository's ``config`` (and ``config.worktree``), every file
  git reported reading (``--show-origin``) and every ``include.path``/``includeIf.*.path``
  target, so an include created later is seen too; with an ``includeIf.onbranch:``
  condition, the repository's ``HEAD`` as well;
* the environment that changes what git reads or answers: every ``GIT_*`` variable
  (``GIT_CONFIG_GLOBAL``, ``GIT_AUTHOR_*``, ``GIT_COMMITTER_*`` …) but the repository-local
  ones memcli never passes to git (``git.run.LOCAL_ENV_VARS``) and the two it sets itself
  (:data:`UNKEYED`), ``HOME`` and ``XDG_CONFIG_HOME``.

The same answer keeps the settings memcli's own commits read (:data:`SETTINGS`, see
:func:`settings`; ``memcli.git.commit``), so a write asks git for none of them either.

Anything of that changed: git is asked again (one ``git config --list --show-origin -z``)
and the cache rewritten. ``git config user.email NEW`` rewrites its file by a rename (a new
inode), so the next command sees it. Not seen: a same-size edit in place within one mtime
tick of the file system, leaving size, mtime, ctime and inode as they were.

Light enough for the hot path: :mod:`os` and :mod:`json` only; git is started only on a miss.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: Bumped when the cache file's shape changes (an older file is ignored).
VERSION = 2
#: The settings kept beside the identity (names as ``git config --list`` gives them, lower case):
#: what ``memcli.git.commit`` reads before each commit. No other value is kept (a remote's URL
#: may hold a token).
SETTINGS = ("commit.gpgsign", "core.filemode")
#: The environment variables (besides ``GIT_*``) that change which files git reads.
ENV_NAMES = ("HOME", "XDG_CONFIG_HOME")


def configured(root: Path, cache: Path | None = None) -> str | None:
    """git's ``user.email``, else ``user.name``, in the folder ``root``, made a valid scope name.

    Characters a scope name cannot hold become ``-`` and the value is cut at 64 characters
    (empty after that: the next key, then None).

    Args:
        root: the folder git reads the settings in (the workspace: repository, global and
            ``includeIf`` settings alike).
        cache: the cache file to read and write; None: always ask git.

    Returns:
        The name, or None when git has neither (or cannot be run: the caller falls back to
        the login name).
    """
    known = _known(root, cache)
    return None if known is None else known[0]


def settings(root: Path, cache: Path | None = None) -> dict[str, str] | None:
    """The :data:`SETTINGS` git has in the folder ``root``, by lower-case name, each as its
    last value (as ``git config --get`` answers; a bare key, which git reads as true, is
    ``"true"``); a setting git does not have is absent. Cached as :func:`configured` is.

    Returns:
        The settings, or None when git cannot be run (the caller asks git itself).
    """
    known = _known(root, cache)
    return None if known is None else dict(known[1])


def _known(root: Path, cache: Path | None) -> tuple[str | None, dict[str, str]] | None:
    """``(identity, settings)`` from the cache file when it still holds, else from git (and
    stored); None when git cannot be run."""
    env = _env()
    if cache is not None:
        known = _cached(cache, env)
        if known is not None:
            return known
    fixed = _candidates(root, env)
    before = {p: _stat(p) for p in fixed}
    listed = _list(root)
    if listed is None:
        return None
    value = _pick(listed)
    kept = _settings(listed)
    if cache is not None:
        files = dict(before)
        for path in _origins_and_includes(root, listed):
            files.setdefault(path, _stat(path))
        if all(_stat(p) == before[p] for p in fixed):  # nothing changed while git read: the answer is that state's
            _store(cache, {"version": VERSION, "value": value, "settings": kept, "env": env, "files": files})
    return value, kept


def _settings(listed: list[tuple[str, str, str | None]]) -> dict[str, str]:
    """The last value of each of :data:`SETTINGS` in ``listed`` (a bare key: ``"true"``)."""
    found: dict[str, str] = {}
    for _, key, value in listed:
        if key in SETTINGS:
            found[key] = "true" if value is None else value
    return found


#: ``GIT_*`` variables that are no part of the key: the two ``git.run.seal_environment`` sets in
#: this process partway through a command (the actor is read before, a commit's settings after);
#: neither changes what git's config says.
UNKEYED = ("GIT_TERMINAL_PROMPT", "GIT_EDITOR")


def _env() -> dict[str, str]:
    from memcli.git.run import LOCAL_ENV_VARS  # dropped from every git process memcli starts

    return {k: v for k, v in sorted(os.environ.items()) if (k.startswith("GIT_") or k in ENV_NAMES)
            and k not in UNKEYED and k not in LOCAL_ENV_VARS}


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _cached(cache: Path, env: dict[str, str]) -> tuple[str | None, dict[str, str]] | None:
    """``(value, settings)`` when the cache file is valid for ``env`` and every file it names is unchanged."""
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("env") != env:
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not files or any(_stat(p) != s for p, s in files.items()):
        return None
    value, kept = data.get("value"), data.get("settings")
    if not (value is None or isinstance(value, str)) or not isinstance(kept, dict) \
            or not all(k in SETTINGS and isinstance(v, str) for k, v in kept.items()):
        return None
    return value, kept


def _store(cache: Path, data: dict) -> None:
    """Write the cache file atomically; a cache that cannot be written is skipped silently (derived data)."""
    temp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temp, cache)
    except OSError:
        try:
            temp.unlink()
        except OSError:
            pass


def _candidates(root: Path, env: dict[str, str]) -> list[str]:
    """The config files git reads in ``root`` whether or not they exist (see the module's docstring)."""
    home = env.get("HOME") or os.path.expanduser("~")
    files = [env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    folder = git_dir(root)
    if folder is not None:
        common = folder
        try:
            common = os.path.join(folder, Path(folder, "commondir").read_text(encoding="utf-8").strip())
        except OSError:
            pass
        files += [os.path.join(common, "config"), os.path.join(folder, "config.worktree")]
    return [os.path.abspath(f) for f in files]


def git_dir(root: Path) -> str | None:
    """The per-worktree git folder of the repository holding ``root``: ``.git``, or what a
    ``.git`` file names (a linked worktree, a submodule); None outside a repository. A few
    ``stat`` calls, no git process."""
    folder = os.path.abspath(root)
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return dot
        if os.path.isfile(dot):
            try:
                text = Path(dot).read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                return os.path.join(folder, text[len("gitdir:"):].strip())
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _list(root: Path) -> list[tuple[str, str, str | None]] | None:
    """``(origin, key, value)`` of every setting git reads in ``root`` (value None: a bare key,
    which git reads as true); None when git cannot be run."""
    from memcli.errors import GitFailed
    from memcli.git import run as runner

    try:
        proc = runner.run(("config", "--list", "--show-origin", "-z"), root, timeout=5)
    except GitFailed:
        return None
    if proc.returncode != 0:
        return None
    fields = proc.stdout.decode("utf-8", "replace").split("\0")
    found = []
    for origin, entry in zip(fields[0::2], fields[1::2]):
        key, valued, value = entry.partition("\n")
        found.append((origin, key, value if valued else None))
    return found


def _pick(listed: list[tuple[str, str, str | None]]) -> str | None:
    """The last ``user.email`` (as ``git config --get`` answers), else the last ``user.name``, sanitised."""
    import re

    for key in ("user.email", "user.name"):
        values = [v for _, k, v in listed if k == key and v is not None]
        value = re.sub(r"[^A-Za-z0-9._@-]+", "-", values[-1].strip()).strip("-.") if values else ""
        if value:
            return value[:64]
    return None


def _origins_and_includes(root: Path, listed: list[tuple[str, str, str | None]]) -> list[str]:
    """The files git said it read, the targets of their includes, and ``HEAD`` if an include depends on the branch."""
    files = []
    for origin, key, value in listed:
        if not origin.startswith("file:"):
            continue
        source = os.path.abspath(os.path.join(root, origin[len("file:"):]))
        files.append(source)
        if value is not None and (key == "include.path" or key.startswith("includeif.") and key.endswith(".path")):
            target = os.path.expanduser(value)
            files.append(os.path.abspath(os.path.join(os.path.dirname(source), target)))
            if key.startswith("includeif.onbranch:"):
                folder = git_dir(root)
                if folder is not None:
                    files.append(os.path.abspath(os.path.join(folder, "HEAD")))
    return files
