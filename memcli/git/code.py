"""git: questions about the code repository a store's memories are about (issue 23).

The memory store and the code may be one repository (an in-tree store) or two worktrees of
one (the memory branch: the code is the main worktree). Everything here reads; nothing
writes. Each function is one git process, whatever the number of names asked about
(names go on stdin), so ``memcli stale`` costs a handful of processes per distinct anchor
commit, not one per memory.
"""

from __future__ import annotations

import re
from pathlib import Path

from memcli.errors import GitFailed

#: Seconds one question to the code repository may take (a grep of a large tree included).
TIMEOUT = 60.0


def _git(top: Path, *args: str, input: bytes | None = None) -> tuple[int, bytes]:
    """``git ARGS`` in ``top`` through the sealed runner: (status, stdout).

    Raises:
        GitFailed: git cannot be started; GitTimedOut: it took more than ``TIMEOUT`` seconds.
    """
    from memcli.git import run as runner  # not at import: the session start reads head_cheap only

    proc = runner.run(args, top, input=input, timeout=TIMEOUT)
    return proc.returncode, proc.stdout


def head(top: Path) -> str | None:
    """The full hash of ``HEAD`` in ``top``, or None before the first commit (or outside git)."""
    status, out = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return out.decode().strip() if status == 0 and out.strip() else None


def resolve(top: Path, rev: str) -> str | None:
    """The full hash of the commit ``rev`` names in ``top``, or None when it names none."""
    status, out = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    return out.decode().strip() if status == 0 and out.strip() else None


def head_cheap(top: Path) -> str | None:
    """``HEAD``'s hash read from the files under ``top/.git`` (no process: the hooks' check
    whether the code moved since the last verdicts); None when it cannot be read that way
    (a linked worktree, a detached or packed state it does not know): callers then keep
    what they have."""
    git = top / ".git"
    try:
        text = (git / "HEAD").read_text(encoding="ascii").strip()
        if not text.startswith("ref: "):
            return text if len(text) >= 40 else None
        ref = text[5:].strip()
        loose = git / ref
        if loose.is_file():
            return loose.read_text(encoding="ascii").strip() or None
        for line in (git / "packed-refs").read_text(encoding="ascii").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    except (OSError, UnicodeDecodeError):
        return None
    return None




def files(top: Path, rev: str) -> list[str]:
    """Every tracked file of commit ``rev`` (paths from the top, ``/`` separators).

    Raises:
        GitFailed: ``rev`` is no commit here.
    """
    status, out = _git(top, "ls-tree", "-r", "-z", "--name-only", "--full-tree", rev)
    if status != 0:
        raise GitFailed(f"git ls-tree {rev[:12]} failed")
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def moves(top: Path, old: str, new: str, paths: list[str]) -> dict[str, tuple[str, str | None]]:
    """What became of ``paths`` of commit ``old`` by commit ``new`` (git's rename detection):
    ``{path: ("renamed", new_path) | ("deleted", None)}``; unchanged paths are left out."""
    if not paths:
        return {}
    status, out = _git(top, "diff", "-M", "-z", "--name-status", old, new, "--", *(f":(literal){p}" for p in paths))
    found: dict[str, tuple[str, str | None]] = {}
    if status != 0:
        return found
    fields = out.decode("utf-8", "replace").split("\0")
    i = 0
    while i < len(fields) - 1:
        kind = fields[i]
        if kind.startswith("R") and i + 2 < len(fields):
            found[fields[i + 1]] = ("renamed", fields[i + 2])
            i += 3
        elif kind.startswith("D"):
            found[fields[i + 1]] = ("deleted", None)
            i += 2
        else:
            i += 2
    if any(kind == "deleted" for kind, _ in found.values()):  # a rename out of the pathspec: ask again, whole tree
        status, out = _git(top, "diff", "-M", "-z", "--name-status", "--diff-filter=R", old, new)
        if status == 0:
            fields = out.decode("utf-8", "replace").split("\0")
            for i in range(0, len(fields) - 2, 3):
                if fields[i].startswith("R") and found.get(fields[i + 1], ("",))[0] == "deleted":
                    found[fields[i + 1]] = ("renamed", fields[i + 2])
    return found




def last_change(top: Path, old: str, new: str, path: str) -> str | None:
    """The short hash of the last commit after ``old`` up to ``new`` that removed or renamed
    ``path`` (its evidence), or None."""
    status, out = _git(top, "log", "-1", "--format=%h", "--diff-filter=DR", f"{old}..{new}", "--",
                       f":(literal){path}")
    text = out.decode().strip()
    return text if status == 0 and text else None


#: ``git grep -w``'s word characters (ASCII letters, digits, ``_``): a name made of them occurs
#: as a whole word exactly where a maximal run of them equals it.
_WORD = re.compile(rb"[A-Za-z0-9_]+")
_SIMPLE = re.compile(r"[A-Za-z0-9_]+")
#: Files larger than this (bytes) are left to ``git grep`` rather than read into memory.
READ_LIMIT = 1 << 20
#: Up to this many names, ``words_present`` asks ``git grep`` (it matches each line against
#: each name: quick for a few, slow for thousands) instead of reading the whole tree.
GREP_WORDS = 64
#: ``git grep -I``: a file with a NUL byte in its first 8000 bytes is binary (git's own heuristic).
BINARY_PROBE = 8000


def tokens(blob: bytes) -> set[bytes]:
    """The whole words of a text file's contents; none for a binary one (as ``git grep -I``)."""
    return set() if b"\0" in blob[:BINARY_PROBE] else set(_WORD.findall(blob))


def words_present(top: Path, rev: str, words: list[str]) -> set[str]:
    """Which of ``words`` occur as whole words in some tracked text file of ``rev``.

    What ``git grep -I -F -w`` would say, found faster: the names made of word characters
    are looked up among the words of every text file up to ``READ_LIMIT`` bytes (one ``git
    ls-tree`` and one ``git cat-file --batch``), which takes time in the size of the tree,
    not in the number of names times its lines (``git grep`` matches each line against each
    pattern in turn: 23 s for 6,000 names over 2,000 files). The other names, and names not
    found in the files read, are asked of ``git grep`` over what was not read (one process
    each, when there are any)."""
    if not words:
        return set()
    # a few names of word characters (whole-word matches of those never overlap, so -o prints
    # each): git grep is quicker than reading every file
    few = len(words) <= GREP_WORDS and all(_SIMPLE.fullmatch(w) for w in words)
    simple = [] if few else [w for w in words if _SIMPLE.fullmatch(w)]
    found: set[str] = set()
    rest = list(words) if few else [w for w in words if not _SIMPLE.fullmatch(w)]
    big: list[str] = []
    if simple:
        status, out = _git(top, "ls-tree", "-r", "-z", "-l", "--full-tree", rev)
        small: list[str] = []
        for entry in out.split(b"\0") if status == 0 else []:
            meta, _, name = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) == 4 and parts[1] == b"blob":
                path = name.decode("utf-8", "surrogateescape")
                (small if parts[3].isdigit() and int(parts[3]) <= READ_LIMIT else big).append(path)
        words_read: set[bytes] = set()
        for blob in blobs(top, rev, small).values():
            words_read |= tokens(blob)
        found = {w for w in simple if w.encode() in words_read}
        if big:
            rest += [w for w in simple if w not in found]
    if rest:
        patterns = "\n".join(rest).encode() + b"\n"
        spec = ["--", *(f":(literal){p}" for p in big)] if big and not any(not _SIMPLE.fullmatch(w) for w in rest) \
            else []
        status, out = _git(top, "grep", "-I", "-F", "-w", "-o", "-h", "-f", "-", rev, *spec, input=patterns)
        if status in (0, 1):
            wanted = set(rest)
            found |= {w for w in out.decode("utf-8", "replace").split("\n") if w in wanted}
    return found


def words_in(top: Path, pairs: list[tuple[str, str]], words: set[str]) -> dict[str, set[str]]:
    """Which of ``words`` (names of word characters; others are never found here) occur as
    whole words in the file ``path`` at ``rev``, for each ``(rev, path)`` of ``pairs``,
    joined per ``rev`` (one ``git cat-file --batch``; missing files and binary ones give
    nothing). The cheap first look before :func:`words_at` greps whole trees."""
    found: dict[str, set[str]] = {}
    if not pairs or not words:
        return found
    request = "".join(f"{rev}:{path}\n" for rev, path in pairs).encode()
    status, out = _git(top, "cat-file", "--batch", input=request)
    wanted = {w.encode(): w for w in words}
    at = 0
    for rev, _ in pairs:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split(b" ")
        at = end + 1
        if len(header) != 3 or not header[2].isdigit():
            continue
        size = int(header[2])
        blob = out[at:at + size]
        at += size + 1
        if header[1] == b"blob":
            found.setdefault(rev, set()).update(wanted[t] for t in tokens(blob) & wanted.keys())
    return found


def existing(top: Path, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """``{(rev, path): "blob" | "tree"}`` for the pairs that name a file or folder at ``rev``
    (one ``cat-file --batch-check``)."""
    if not pairs:
        return {}
    request = "".join(f"{rev}:{path}\n" for rev, path in pairs).encode()
    status, out = _git(top, "cat-file", "--batch-check", input=request)
    lines = out.decode("utf-8", "replace").splitlines()
    return {pair: line.split(" ")[1] for pair, line in zip(pairs, lines)
            if not line.endswith(" missing") and len(line.split(" ")) >= 2}


def commits_known(top: Path, revs: list[str]) -> set[str]:
    """Which of ``revs`` are commits here (one ``cat-file --batch-check``)."""
    if not revs:
        return set()
    request = "".join(f"{rev}^{{commit}}\n" for rev in revs).encode()
    status, out = _git(top, "cat-file", "--batch-check", input=request)
    lines = out.decode("utf-8", "replace").splitlines()
    return {rev for rev, line in zip(revs, lines) if " commit " in line}


def path_events(top: Path, old: str | None, new: str, every: bool = False
                ) -> list[tuple[str, list[tuple[str, str, str | None]]]]:
    """Each first-parent commit after ``old`` (None: from the root) up to ``new``, oldest
    first, with its renames, deletions and additions (each commit's own rename detection; a
    merge's changes against its first parent): ``[(hash, [("R", old, new) | ("D", path, None)
    | ("A", path, None)])]``; with ``every`` its modifications too (``("M", path, None)``, type
    changes included; a copy is an addition of its new path). One ``git log``."""
    status, out = _git(top, "log", "--reverse", "--first-parent", "-M", "-z", "--name-status",
                       *(() if every else ("--diff-filter=RDA",)), "--format=%x01%H",
                       f"{old}..{new}" if old else new)
    if status != 0:
        return []
    commits: list[tuple[str, list[tuple[str, str, str | None]]]] = []
    fields = out.decode("utf-8", "replace").split("\0")
    i = 0
    while i < len(fields):
        field = fields[i].lstrip("\n")
        if field.startswith("\x01"):
            commits.append((field[1:].strip(), []))
            i += 1
        elif field[:1] in ("R", "C") and i + 2 < len(fields) and commits:
            renamed = field[0] == "R"
            commits[-1][1].append(("R", fields[i + 1], fields[i + 2]) if renamed else ("A", fields[i + 2], None))
            i += 3
        elif field[:1] in ("D", "A", "M", "T") and i + 1 < len(fields) and commits:
            commits[-1][1].append(("M" if field[0] == "T" else field[0], fields[i + 1], None))
            i += 2
        else:
            i += 1
    return commits


def words_at(top: Path, revs: list[str], words: list[str]) -> dict[str, set[str]]:
    """Which of ``words`` occur as whole words in each of ``revs`` (one ``git grep`` over them all)."""
    if not words or not revs:
        return {}
    patterns = "\n".join(words).encode() + b"\n"
    status, out = _git(top, "grep", "-I", "-F", "-w", "-o", "-f", "-", *revs, input=patterns)
    found: dict[str, set[str]] = {rev: set() for rev in revs}
    if status not in (0, 1):
        return found
    wanted = set(words)
    for line in out.decode("utf-8", "replace").split("\n"):
        rev, _, rest = line.partition(":")
        word = rest.rsplit(":", 1)[-1]
        if rev in found and word in wanted:
            found[rev].add(word)
    return found


def blobs(top: Path, rev: str, paths: list[str]) -> dict[str, bytes]:
    """The contents of ``paths`` at ``rev`` (one ``git cat-file --batch``); missing ones left out."""
    if not paths:
        return {}
    request = "".join(f"{rev}:{p}\n" for p in paths).encode()
    status, out = _git(top, "cat-file", "--batch", input=request)
    found: dict[str, bytes] = {}
    at = 0
    for path in paths:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split(b" ")
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        found[path] = out[at:at + size]
        at += size + 1
    return found


def first_parent_times(top: Path, rev: str = "HEAD") -> list[tuple[int, str]]:
    """``(committer time, hash)`` of ``rev``'s first-parent history, oldest first (to find the
    code commit a memory without an anchor was written against, by its time)."""
    status, out = _git(top, "log", "--first-parent", "--format=%ct %H", rev)
    if status != 0:
        return []
    pairs = []
    for line in out.decode().splitlines():
        stamp, _, sha = line.partition(" ")
        if stamp.isdigit() and sha:
            pairs.append((int(stamp), sha))
    return pairs[::-1]


def code_of(folder: Path) -> tuple[Path, str | None] | None:
    """The code repository a store at ``folder`` is about, and its ``HEAD``: for a linked
    worktree (the memory branch) the main worktree, else the work tree holding ``folder``
    (an in-tree store; a store in a repository of its own is its own "code", where nothing a
    memory names will have resolved). None outside git. One process, two when ``HEAD`` of a
    main worktree cannot be read from its files."""
    status, out = _git(folder, "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel")
    lines = out.decode("utf-8", "replace").splitlines()
    if status != 0 or len(lines) < 2:
        return None
    return code_from(Path(lines[0]), Path(lines[1]))


def code_from(common: Path, top: Path) -> tuple[Path, str | None]:
    """:func:`code_of` for a repository whose common git folder (``--git-common-dir``) and work
    tree (``--show-toplevel``) are known already (``GitRepo`` asks for both when it opens)."""
    main = common.parent if common.name == ".git" else None
    if main is not None and main.resolve() != top.resolve():
        return main, head_cheap(main) or head(main)
    return top, head_cheap(top) or head(top)
