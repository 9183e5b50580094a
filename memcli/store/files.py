"""Memory files on disk: safe paths, atomic writes, scanning and loading.

Every path memcli writes is built here from validated parts (an id checked by
``model.check_id``, a scope checked by ``model.check_scope``) and then checked to stay
inside ``memories/`` (CASES.md G1). Writes are atomic: a temporary file in the same
folder, fsync, ``os.replace`` (STYLE.md habit 6).
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from memcli import fileformat, model
from memcli.errors import InvalidMemoryFile, ValidationFailed

MEMORIES = "memories"
#: How a file that lost an id contest is reported; ``visible_problems`` reads it back.
DUPLICATE = "duplicate id {id} (also in {path})"
_DUPLICATE = re.compile(r"duplicate id (?P<id>\S+) \(also in (?P<path>.+)\)")
#: What replaces the holder's path when the reader may not see it.
HIDDEN_HOLDER = "a file of another user's personal scope"
#: The most bytes of one memory file that memcli reads (256 KiB, twelve times what a write
#: may hold, ``model.MAX_BODY_CHARS``): a larger hand-written file is served and indexed up
#: to here, with a warning, so one 48 MB file cannot slow every session start.
MAX_FILE_BYTES = 256 * 1024
#: The reason of a personal scope's file found in a shared tree (``MemoryFiles(shared=True)``).
PLANTED = ("a personal scope ({scope}) in the shared tree: never served, as a teammate may have committed it; "
           "personal memory lives in its owner's own store (remove the file with git rm)")
#: How the reason of a file served only in part begins (it is a warning, not a skipped file).
PARTIAL = "served in part: "
_KINDS = ((stat.S_ISDIR, "a folder named like a memory file"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_regular(mode: int, path: Path) -> str:
    """Why ``path``, of this ``st_mode``, is never opened: what it is instead of a regular file."""
    if stat.S_ISLNK(mode):
        return "a symbolic link: memcli does not follow links under memories/"
    if stat.S_ISDIR(mode) and not path.name.endswith(".md"):  # listed only when it cannot be listed
        try:
            os.listdir(path)
        except OSError as err:
            return f"a folder memcli cannot list ({err.strerror}): its memories are not served"
        return "a folder"
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"{kind}: memcli reads only regular files"


#: What ends a text cut to ``model.MAX_BODY_CHARS`` on read, so that a reader knows it is not whole.
CUT_NOTE = ("\n[cut: the file's text is {size:,} characters; memcli serves the first {limit:,}, "
            "as much as a write may hold]")


def cut_text(memory: model.Memory) -> tuple[model.Memory, str]:
    """A memory whose text is over what a write may hold (``model.MAX_BODY_CHARS``: a
    hand-placed or pulled file) as every read serves it: its first ``MAX_BODY_CHARS``
    characters and :data:`CUT_NOTE`; with the warning's words. A write could not have made
    it, so no read serves more (the 256 KiB bound of :data:`MAX_FILE_BYTES` is the reader's
    bound on bytes, this one on the text, as ``model.check_text`` counts it)."""
    size, limit = len(memory.text), model.MAX_BODY_CHARS
    said = (f"the text is {size:,} characters, over the {limit:,} a memory may hold; only its first "
            f"{limit:,} are indexed and shown")
    return memory.with_(body=memory.text[:limit] + CUT_NOTE.format(size=size, limit=limit)), said


def read_file(path: Path, rel: str, limit: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result, bool]:
    """Read one memory file safely: ``(bytes, stat, over_limit)``.

    Only a regular file is opened, without following a link (``lstat``, then ``open`` with
    ``O_NOFOLLOW | O_NONBLOCK`` and ``fstat``), so a named pipe, socket, device or folder
    called ``*.md`` is reported and never waited on. At most ``limit + 1`` bytes are read:
    ``over_limit`` says the file holds more (:meth:`MemoryFiles.load` then cuts it at ``limit``).

    Args:
        path: the file.
        rel: its workspace-relative path, for messages.
        limit: the most bytes to read (``MAX_FILE_BYTES``).

    Raises:
        InvalidMemoryFile: not a regular file, or the OS refused to read it (permission, I/O).
    """
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidMemoryFile(rel, _not_regular(info.st_mode, path))
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):  # replaced between the lstat and the open
                raise InvalidMemoryFile(rel, _not_regular(info.st_mode, path))
            chunks, left = [], limit + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        finally:
            os.close(fd)
    except InvalidMemoryFile:
        raise
    except OSError as err:
        reason = err.strerror or str(err)
        if err.errno in (getattr(os, "ELOOP", -1),):
            reason = "a symbolic link: memcli does not follow links under memories/"
        raise InvalidMemoryFile(rel, f"cannot read: {reason}") from None
    data = b"".join(chunks)
    return data, info, len(data) > limit


def _cut(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence left incomplete at its end (a cut in mid-character)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # the lead byte of the last sequence: keep it only if complete
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def slug(text: str, limit: int = 40) -> str:
    """A readable ASCII slug of ``text`` (at most ``limit`` characters; may be empty).

    Made from the text as the secret gate sees it, after the gate: every secret-looking span
    replaced by its marker and hidden characters dropped first, so that folding full-width
    letters to ASCII (``ＡＫＩＡ…`` -> ``akia…``) can never put a secret in a file name.
    """
    from memcli.text.hidden import scan_view
    from memcli.text.secrets import redact

    text = scan_view(redact(text))[0]
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", ascii_text)
    out = ""
    for word in words:
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out


def others_folder(path: str, actor: str) -> bool:
    """True for a file in another user's personal folder (``memories/user/<other>/…``).

    The one visibility rule for things named by path (unreadable files, files in git
    history): SPEC.md section 3, a personal scope is its owner's alone.

    Args:
        path: workspace-relative, ``/`` separated.
        actor: the reader's name.
    """
    parts = path.split("/")
    return len(parts) > 3 and parts[0] == MEMORIES and parts[1] == "user" and parts[2] != actor


def duplicate_reason(memory_id: str, holder: str) -> str:
    """The reason of a file whose id ``holder`` (a workspace-relative path) already serves."""
    return DUPLICATE.format(id=memory_id, path=holder)


def visible_problems(problems: Iterable[InvalidMemoryFile], actor: str,
                     limit: int | None = None) -> list[InvalidMemoryFile]:
    """The problems ``actor`` may hear about: none in another user's personal folder, and no
    reason naming such a folder (a duplicate id held there reads ``also in`` ``HIDDEN_HOLDER``).

    Args:
        problems: every unreadable file, as the scan or the index found them (an iterator is
            read only as far as needed).
        actor: the reader's name.
        limit: at most this many (the first, in the order given); None: all.
    """
    out: list[InvalidMemoryFile] = []
    for problem in problems:
        if limit is not None and len(out) >= limit:
            break
        if others_folder(problem.path, actor):
            continue
        match = _DUPLICATE.fullmatch(problem.reason)
        if match and others_folder(match["path"], actor):
            problem = InvalidMemoryFile(problem.path, duplicate_reason(match["id"], HIDDEN_HOLDER), problem.lineno)
        out.append(problem)
    return out


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, replace.

    ``durable=False`` leaves out both ``fsync`` calls, for a cache whose reader takes a
    missing or unreadable file as "none" (the index's snapshot and folder state): after a
    power loss the file may be empty, never half of one version and half of another."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_file(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


#: How many names :func:`_temp_file` tries before giving up (as ``tempfile.TMP_MAX``).
TEMP_TRIES = 10_000


def _temp_file(path: Path) -> tuple[int, str]:
    """A new file ``.NAME.RANDOM.tmp`` beside ``path``, created exclusively, mode 0600, not
    following links: ``tempfile.mkstemp``'s guarantees without importing tempfile (it pulls in
    shutil, random, bz2 and lzma: about 5-10 ms of every write). ``(descriptor, path)``.

    Raises:
        OSError: it cannot be created (``FileExistsError`` after ``TEMP_TRIES`` names taken).
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    for _ in range(TEMP_TRIES):
        name = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


class Loaded:
    """One readable memory: the parsed document, the record built from it and its file.

    ``warning`` (a reason starting with ``PARTIAL``) says the file was served only in part.
    """

    __slots__ = ("doc", "memory", "file", "warning")

    def __init__(self, doc: fileformat.Document, memory: model.Memory, file: Path, warning: str | None = None) -> None:
        self.doc = doc
        self.memory = memory
        self.file = file
        self.warning = warning


class Scan:
    """The result of reading every memory file: the good ones and the problems (fresh empty lists when None)."""

    __slots__ = ("loaded", "problems")

    def __init__(self, loaded: list[Loaded] | None = None, problems: list[InvalidMemoryFile] | None = None) -> None:
        self.loaded = [] if loaded is None else loaded
        self.problems = [] if problems is None else problems

    @property
    def memories(self) -> list[model.Memory]:
        """The records, in file order."""
        return [item.memory for item in self.loaded]


class MemoryFiles:
    """The ``memories/`` tree of one workspace.

    Args:
        root: the workspace folder (the one holding ``memcli.toml``).
        shared: the tree is a project's shared one whose personal scopes live in each person's own
            store (a workspace with an id, ``store.personal``): a file of a ``user:*`` scope
            found in it is refused as unreadable (:data:`PLANTED`; a ``session:*`` memory is
            shown to its recorded owner only, ``policy.owner``),
            so it is never served as anyone's, and ``doctor`` names it.
    """

    def __init__(self, root: Path, shared: bool = False) -> None:
        self.root = root
        self.base = root / MEMORIES
        self.shared = shared

    def rel(self, path: Path) -> str:
        """``path`` relative to the workspace root, with ``/`` separators."""
        return path.relative_to(self.root).as_posix()

    def new_path(self, memory: model.Memory) -> Path:
        """The file for a new memory: ``memories/<scope parts>/<YYYY-MM>/<id>[-slug].md``.

        Raises:
            ValidationFailed: the resulting path would leave ``memories/``.
        """
        model.check_id(memory.id)
        month = (memory.created_at or datetime.now(timezone.utc)).strftime("%Y-%m")
        name = "-".join(p for p in (memory.id, slug(memory.text)) if p) + ".md"
        path = self.base.joinpath(*model.scope_parts(memory.scope), month, name)
        resolved_base = self.base.resolve()
        if resolved_base not in path.resolve().parents:
            raise ValidationFailed(f"refusing to write outside {MEMORIES}/: {path}")
        folder = self.base
        for part in (None, *path.relative_to(self.base).parts[:-1]):
            folder = folder if part is None else folder / part
            if folder.is_symlink():  # a linked folder (committed by a clone) would send the write elsewhere
                raise ValidationFailed(f"refusing to write through the symbolic link {self.rel(folder)}",
                                       hint="replace the link with a real folder")
        return path

    def files(self) -> list[Path]:
        """Every ``*.md`` under ``memories/``, sorted; hidden files and folders skipped.

        Entries named ``*.md`` are listed whatever they are (a folder, a pipe, a link), and so
        is a folder that cannot be listed (no permission): :meth:`load` reports each, never
        opening anything but a regular file.
        """
        out: list[Path] = []
        if not self.base.is_dir():
            return out

        def unreadable(err: OSError) -> None:
            if err.filename and os.path.abspath(err.filename) != os.path.abspath(self.base):
                out.append(Path(err.filename))

        for folder, dirs, names in os.walk(self.base, onerror=unreadable):
            out.extend(Path(folder, d) for d in dirs if d.endswith(".md") and not d.startswith("."))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.endswith(".md"))
            out.extend(Path(folder, n) for n in sorted(names) if n.endswith(".md") and not n.startswith("."))
        return sorted(out)

    def load(self, path: Path, data: bytes | None = None, mtime: float | None = None,
             round_trip: bool = True, rel: str | None = None) -> Loaded:
        """Parse one file into a :class:`Loaded`.

        A file without an ``id`` key takes its id from its name (``model.id_from_stem``):
        the ULID of a name memcli makes (``<ulid>-<slug>.md``), else the whole name
        without ``.md``, in lower case; ``show``, ``list`` and ``doctor --fix`` all read it so.

        Args:
            path: an absolute path under ``memories/``.
            data: the bytes, if already read (e.g. from ``git show``).
            mtime: the file's modification time (seconds since the epoch), the default
                ``createdAt`` of a hand-written file; read from disk when not given.
            round_trip: False for a read-only document, parsed faster (see ``fileformat.parse``).
            rel: ``path`` relative to the workspace, ``/`` separated, when the caller has it
                (an index build: ``Path.relative_to`` costs more than the YAML of a small file).

        Raises:
            InvalidMemoryFile: unreadable, unparsable, or outside the schema.
        """
        if rel is None:
            rel = self.rel(path)
        try:
            return self._load(path, rel, data, mtime, round_trip)
        except InvalidMemoryFile:
            raise
        except RecursionError:
            raise InvalidMemoryFile(rel, "nested too deeply to read (YAML or text nesting)") from None
        except Exception as err:  # noqa: BLE001 - whatever a file holds, it is one reported problem
            detail = " ".join(str(err).split())[:160]
            raise InvalidMemoryFile(rel, f"cannot be read ({type(err).__name__}{': ' + detail if detail else ''})") \
                from None

    def _load(self, path: Path, rel: str, data: bytes | None, mtime: float | None, round_trip: bool) -> Loaded:
        if data is None:
            data, info, _ = read_file(path, rel)
            mtime = info.st_mtime if mtime is None else mtime
        elif mtime is None:
            try:
                mtime = os.lstat(path).st_mtime
            except OSError:
                mtime = datetime.now(timezone.utc).timestamp()
        truncated = len(data) > MAX_FILE_BYTES
        raw = _cut(data[:MAX_FILE_BYTES]) if truncated else data
        file_time = datetime.fromtimestamp(int(mtime), timezone.utc)
        doc = fileformat.parse(raw, rel, round_trip)
        head, _, inside = rel.partition("/")
        parts = tuple(inside.split("/")[:-1]) if head == MEMORIES else path.relative_to(self.base).parts[:-1]
        try:
            memory = model.from_mapping(
                doc.meta, doc.body, path=rel, file_id=model.id_from_stem(path.stem),
                folder_scope=model.scope_of_parts(parts), file_time=file_time)
        except ValidationFailed as err:
            key = err.message.split(":", 1)[0].split(".")[0]
            if not round_trip:  # only the round-trip reading knows line numbers
                doc = fileformat.parse(raw, rel, True)
            raise InvalidMemoryFile(rel, err.message, fileformat.line_of(doc, key)) from None
        if self.shared and memory.scope.startswith("user:"):  # a session's memory is its owner's (policy.owner)
            raise InvalidMemoryFile(rel, PLANTED.format(scope=memory.scope))
        warning = None
        if truncated:
            warning = (f"{PARTIAL}the file is over the {MAX_FILE_BYTES // 1024} KiB that memcli reads; "
                       "only its beginning is indexed and shown")
        if len(memory.text) > model.MAX_BODY_CHARS:
            memory, said = cut_text(memory)
            warning = f"{PARTIAL}{said}"
        return Loaded(doc=doc, memory=memory, file=path, warning=warning)

    def scan(self) -> Scan:
        """Load every memory file; problems are collected, never raised."""
        result = Scan()
        seen: dict[str, str] = {}
        for path in self.files():
            try:
                item = self.load(path, round_trip=False)
            except InvalidMemoryFile as err:
                result.problems.append(err)
                continue
            if item.memory.id in seen:
                result.problems.append(InvalidMemoryFile(
                    item.memory.path, duplicate_reason(item.memory.id, seen[item.memory.id])))
                continue
            seen[item.memory.id] = item.memory.path
            result.loaded.append(item)
            if item.warning:
                result.problems.append(InvalidMemoryFile(item.memory.path, item.warning))
        return result
