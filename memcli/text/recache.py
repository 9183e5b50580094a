"""Regular expressions compiled once per machine, not once per process (issue 21 points 3-4).

memcli's large patterns (the secret rules and their prefilter, the instruction-like
phrases in several languages) cost tens of milliseconds to compile in every process that
uses them: CPython's ``re`` parses and compiles a pattern in Python (``re._parser``,
``re._compiler``) and keeps the result only in that process. :func:`compiled` keeps what
that compilation produces (the flags, the code list, the groups), the input of
``_sre.compile``, in a file of this user's cache folder, and builds the pattern object from
it in later processes: the same object ``re.compile`` would give (``tests/test_recache.py``
compares them). The file is keyed by the interpreter (``sys.implementation.cache_tag`` and
``_sre.MAGIC``) and each entry by the pattern and its flags; anything unreadable, or an
interpreter without these internals, means a plain ``re.compile``.

Where: ``$XDG_CACHE_HOME/memcli/`` (default ``~/.cache/memcli/``), a folder of this user
closed to others (0700), the file 0600; a folder or file of another user is not used.
New entries are written at :func:`save` (the CLI calls it before it exits; ``atexit``
otherwise).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: key -> the arguments of ``_sre.compile`` after the pattern: (flags, code, groups, groupindex, indexgroup).
_STORE: dict[str, tuple] | None = None
_NEW: dict[str, tuple] = {}
_HOOKED: list[bool] = []
#: kind -> how many of its entries the file keeps at most (:func:`kept`).
_LIMITS: dict[str, int] = {}


def compiled(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, from the cache when an earlier process compiled it.

    Raises:
        re.error: the pattern is invalid (as ``re.compile`` raises it).
    """
    flags = int(flags)
    try:
        import _sre  # type: ignore[import-not-found]
        from re import _compiler, _parser  # type: ignore[attr-defined]
    except ImportError:  # not CPython's re
        return re.compile(pattern, flags)
    key = f"{flags}\0{pattern}"
    entry = _load().get(key) or _NEW.get(key)
    if entry is not None:
        try:
            return _sre.compile(pattern, *entry)
        except Exception:  # noqa: BLE001 - a stale or damaged entry: compile it again
            pass
    try:
        parsed = _parser.parse(pattern, flags)
        code = _compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[Any] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        # plain ints (the opcodes are an int subclass, which marshal does not take)
        args = (int(flags | parsed.state.flags), [int(c) for c in code], int(parsed.state.groups - 1),
                {str(k): int(v) for k, v in groupindex.items()}, tuple(indexgroup))
        made = _sre.compile(pattern, *args)
    except re.error:
        raise
    except Exception:  # noqa: BLE001 - internals not as expected: the public way
        return re.compile(pattern, flags)
    _remember(key, args)
    return made


def kept(key: str, build: Callable[[], T], *, kind: str = "kept", keep: int | None = None) -> T:
    """``build()``, kept in the same file as the compiled patterns under ``key`` (derived data
    about patterns, such as a literal screen's words, ``text.literals``, or a parsed settings
    file, ``config``): the first process on a machine builds it, later ones read it. The
    value must be something ``marshal`` writes (tuples, lists, dicts, strings, numbers); it
    is rebuilt when the file does not hold it. ``keep``: at most this many entries of
    ``kind`` stay in the file (the newest), for keys that change (a file's text).

    Raises:
        whatever ``build`` raises.
    """
    key = f"{kind}\0{key}"
    if keep is not None:
        _LIMITS[kind] = keep
    for store in (_load(), _NEW):
        if key in store:
            return store[key]  # type: ignore[return-value]
    value = build()
    _remember(key, value)  # type: ignore[arg-type]
    return value


def _remember(key: str, entry: tuple) -> None:
    """Keep ``entry`` for :func:`save` (at exit, or when the CLI calls it)."""
    _NEW[key] = entry
    if not _HOOKED:
        import atexit

        atexit.register(save)
        _HOOKED.append(True)


def _folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "memcli")


def _file() -> str | None:
    try:
        import _sre
    except ImportError:
        return None
    return os.path.join(_folder(), f"re-{sys.implementation.cache_tag}-{_sre.MAGIC}.marshal")


def _mine(path: str, mode_mask: int) -> bool:
    """Whether ``path`` (not followed) belongs to this user and grants others none of ``mode_mask``."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & mode_mask


def _load() -> dict[str, tuple]:
    global _STORE
    if _STORE is None:
        _STORE = _read()
    return _STORE


def _read() -> dict[str, tuple]:
    """The file's entries now ({} when it is missing, unreadable or not this user's alone)."""
    path = _file()
    if path is not None and _mine(os.path.dirname(path), 0o077) and _mine(path, 0o077):
        import marshal

        try:
            with open(path, "rb") as handle:
                data = marshal.loads(handle.read())
            if isinstance(data, dict):
                return data
        except (OSError, EOFError, ValueError, TypeError):
            pass
    return {}


def save() -> None:
    """Write the patterns compiled in this process that the file does not hold yet. Never raises."""
    if not _NEW:
        return
    path = _file()
    if path is None:
        return
    import marshal

    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not _mine(folder, 0o077):
            return
        merged = {**_read(), **_NEW}  # the file as it is now: what another process saved meanwhile stays
        for kind, limit in _LIMITS.items():
            mine = [k for k in merged if k.startswith(f"{kind}\0")]
            for old in mine[:max(0, len(mine) - limit)]:
                del merged[old]
        # a name of this process's own, created exclusively, 0600: what tempfile.mkstemp does,
        # without importing tempfile (shutil, random, bz2, lzma: 5-10 ms on a command's path)
        tmp = os.path.join(folder, f".re-{os.getpid()}-{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps(merged))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _STORE.update(_NEW) if _STORE is not None else None
        _NEW.clear()
    except (OSError, ValueError):
        pass
