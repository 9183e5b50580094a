"""Benchmark memcli against ripgrep on generated workspaces (SPEC.md section 8).

    python bench/run.py [--sizes 1000,10000,100000] [--repeat 7] [--workdir /tmp/memcli-bench] [--markdown]
                        [--memcli PATH] [--stale] [--reads-only] [--concurrent N]

``--stale`` adds the rows of issue 23: ``memcli stale`` over 10k anchored memories in a code
repository of 10k commits (every memory judged, then the cached verdicts), and the session-start
hook with the verdicts' marks beside the same hook without them (built by
``bench/stale_speed.build``).

memcli is measured as a user runs it: installed (not editable) from this checkout into
``<workdir>/venv``, so its bytecode is compiled once by pip, unless ``--memcli`` names
another executable.

Every number is the wall time of a whole process (Python start-up included), taken as
median/min/max over ``--repeat`` runs after one warm-up run, and the peak RSS of that
process tree (``ru_maxrss`` from ``os.wait4``). See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import corpus
from generate import generate

SEED = 7
ACTOR = "alice"
NO_MATCH = "zzz_no_such_word"
MARKER_SUFFIX = ".ready"


@dataclass
class Stats:
    """Timings of one command over the measured runs."""

    median: float
    low: float
    high: float
    peak_mb: float
    failures: list[str]
    runs: int
    lines: int
    warmup: float
    cpu: float = 0.0  # median CPU seconds (user + system, git's included): what a busy machine does not inflate


@dataclass
class Row:
    """One line of the result table."""

    size: int
    operation: str
    memcli: Stats | None
    rg: Stats | None = None
    target: str = "—"
    met: str = "—"
    ref: Stats | None = None
    ref_name: str = ""
    kind: str = "—"


def run_once(cmd: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None
             ) -> tuple[float, int, str, int, float]:
    """Run ``cmd`` once; return (wall seconds, peak RSS KB, failure text or "", stdout lines,
    CPU seconds: user and system time of the process and the children it waited for).

    Output goes to temporary files, not /dev/null, so no tool can take a short cut for
    discarded output. ``os.wait4`` gives the rusage of this child (and its waited-for
    children, such as git), unlike RUSAGE_CHILDREN deltas.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as into:
        if stdin is not None:
            into.write(stdin)
            into.seek(0)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=into if stdin is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = sum(1 for line in out if line.strip())
        err.seek(0)
        failure = f"exit {code}: {err.read().decode(errors='replace').strip()[-300:]}" if code else ""
        return wall, usage.ru_maxrss, failure, lines, usage.ru_utime + usage.ru_stime


def series(cmd, cwd: Path, env: dict[str, str], repeat: int, before=None, stdin=None) -> Stats:
    """One warm-up run, then ``repeat`` measured runs; failures (non-zero exits) are collected.

    ``cmd`` is an argv list, or a function of the run number giving one; ``before(i)``
    (untimed) runs ahead of each run; ``stdin``: bytes, or a function of the run number giving them.
    """
    walls, peaks, cpus, failures, warmup = [], [], [], [], 0.0
    for i in range(repeat + 1):
        argv = cmd(i) if callable(cmd) else cmd
        if before is not None:
            before(i)
        wall, peak, failure, lines, cpu = run_once(argv, cwd, env, stdin(i) if callable(stdin) else stdin)
        if failure:
            failures.append(failure)
        if i == 0:
            warmup = wall
        else:
            walls.append(wall)
            peaks.append(peak)
            cpus.append(cpu)
    return Stats(statistics.median(walls), min(walls), max(walls), max(peaks) / 1024, failures,
                 runs=repeat + 1, lines=lines, warmup=warmup, cpu=statistics.median(cpus))


def paired(cmd, ref_cmd, cwd: Path, env: dict[str, str], repeat: int, before=None, stdin=None,
           ref_before=None, after=None) -> tuple[Stats, Stats]:
    """A command and its reference in alternating runs (one warm-up each, then ``repeat`` of
    each, the order swapped every round), so the load of a shared machine falls on both alike.

    ``cmd``, ``before`` and ``stdin`` are as for :func:`series`; ``ref_cmd`` and ``ref_before``
    the reference's; ``after(i)`` (untimed) runs after each run of the command (:func:`settle`).
    Returns (the command's :class:`Stats`, the reference's).
    """
    runs: dict[bool, list[tuple[float, int, str, int, float]]] = {True: [], False: []}
    for i in range(repeat + 1):
        for mine in ((True, False) if i % 2 else (False, True)):
            hook, argv = (before, cmd) if mine else (ref_before, ref_cmd)
            if hook is not None:
                hook(i)
            data = (stdin(i) if callable(stdin) else stdin) if mine else None
            runs[mine].append(run_once(argv(i) if callable(argv) else argv, cwd, env, data))
            if mine and after is not None:
                after(i)
    return _stats(runs[True]), _stats(runs[False])


def settle(ws: Path, timeout: float = 60.0) -> float:
    """Wait, untimed, until no process holds the workspace's index build lock: the full walk a
    write (or read) starts in the background once it has answered (docs/search.md,
    "Freshness") then no longer loads the next measured run, of memcli or of its reference.
    Returns the seconds waited (0.0 when the lock was free or there is none)."""
    import fcntl

    try:
        fd = os.open(ws / ".cache" / "index.lock", os.O_RDWR)
    except OSError:
        return 0.0
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < timeout:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(0.005)
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            break
    finally:
        os.close(fd)
    return time.perf_counter() - start


def _stats(runs: list[tuple[float, int, str, int, float]]) -> Stats:
    """:func:`run_once` results as :class:`Stats`; the first run is the warm-up."""
    walls = [r[0] for r in runs[1:]]
    return Stats(statistics.median(walls), min(walls), max(walls), max(r[1] for r in runs[1:]) / 1024,
                 [r[2] for r in runs if r[2]], runs=len(runs), lines=runs[-1][3], warmup=runs[0][0],
                 cpu=statistics.median(r[4] for r in runs[1:]))


def ensure_workspace(workdir: Path, size: int, memcli: str) -> Path:
    """The workspace for ``size`` memories, generated unless a complete one is there."""
    ws = workdir / f"ws-{size}"
    marker = workdir / f"ws-{size}{MARKER_SUFFIX}"
    if marker.exists() and ws.is_dir():
        print(f"reusing {ws}")
        return ws
    shutil.rmtree(ws, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    needles = generate(size, ws, SEED, memcli)
    print(f"generated {ws} in {time.perf_counter() - start:.1f} s; needles: {needles}")
    marker.write_text(f"count={size} seed={SEED}\n", encoding="utf-8")
    return ws


def file_toucher(ws: Path):
    """A ``before(i)`` hook that appends a word to one memory's body, and a restore function."""
    files = sorted((ws / "memories").rglob("*.md"))
    target = files[len(files) // 2]
    original = target.read_bytes()

    def touch(i: int) -> None:
        target.write_bytes(target.read_bytes().rstrip(b"\n") + f" benchsync{i}\n".encode())

    return touch, lambda: target.write_bytes(original)


def remember_text(size: int, i: int, rng: random.Random) -> str:
    """A fresh, varied memory text, so no run is a duplicate no-op."""
    category = rng.choice(sorted(corpus.CATEGORY_TEMPLATES))
    sentence = corpus.fill(rng, rng.choice(corpus.CATEGORY_TEMPLATES[category]))
    return f"{sentence} Benchmark note {size}-{i} taken at {time.time_ns()}."


#: The whole-process references of SPEC.md section 8, measured in the same run as memcli.
SQLITE_REF = "python -c 'import sqlite3'"
PASS_REF = "python -c pass"
GIT_REF = "git add + git commit"
FTS_REF = "one FTS5 query (fresh process)"
FTS_QUERY = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
             "print(len(c.execute('SELECT rowid FROM fts WHERE fts MATCH ? LIMIT 10', (sys.argv[2],)).fetchall()))")


def judge(size: int, kind: str, stats: Stats | None, ref: Stats | None) -> tuple[str, str]:
    """The SPEC.md section 8 target of a row measured against its reference, and whether it
    was met (the 100,000 rows of the hot path are judged against their 10,000 figure in
    :func:`judge_flat`)."""
    if stats is None or stats.failures or ref is None or ref.failures:
        return "—", "—"
    ratio = stats.median / ref.median
    if kind == "hot" and size == 10_000:
        return "≤ 4× sqlite3 import", "yes" if ratio <= 4 else "NO"
    if kind == "remember" and size == 10_000:
        return "≤ 3× git add+commit", "yes" if ratio <= 3 else "NO"
    if kind == "mcp" and size in (10_000, 100_000):
        limit = 1 if size == 10_000 else 2
        return f"≤ {limit}× python -c pass", "yes" if ratio <= limit else "NO"
    if kind == "mcp-after":
        return "≤ 2× a plain MCP recall", "yes" if ratio <= 2 else "NO"
    return "—", "—"


def judge_rebuild(size: int, stats: Stats | None) -> tuple[str, str]:
    """A cold rebuild: under 3 s at 10,000, under 30 s at 100,000."""
    if stats is None or stats.failures or size not in (10_000, 100_000):
        return "—", "—"
    limit = 3.0 if size == 10_000 else 30.0
    return f"< {limit:g} s", "yes" if stats.median < limit else "NO"


def judge_flat(rows: list[Row]) -> None:
    """The 100,000 rows of the hot path: within 1.5× of the same operation's 10,000 figure."""
    at = {(r.size, r.operation): r for r in rows}
    for row in rows:
        base = at.get((10_000, row.operation))
        if row.kind == "hot" and row.size == 100_000 and base and base.memcli and row.memcli \
                and not row.memcli.failures and not base.memcli.failures:
            ratio = row.memcli.median / base.memcli.median
            row.target, row.met = "≤ 1.5× its 10k", f"{'yes' if ratio <= 1.5 else 'NO'} ({ratio:.2f}×)"
        if row.kind == "rss" and row.size == 100_000 and row.memcli and not row.memcli.failures:
            row.target, row.met = "peak < 50 MB", "yes" if row.memcli.peak_mb < 50 else "NO"


def concurrent_row(workdir: Path, memcli: str, size: int, hooks: int, rounds: int) -> Row:
    """``hooks`` Claude Code hooks at once (half session starts, half prompts) on a store of
    ``size`` memories while a writer remembers (``bench/concurrent_hooks.measure``), ``rounds``
    times: the row's times are the hooks' walls; met when every hook exited 0 within the hook
    deadline plus an interpreter's start, each with memories in its answer."""
    import concurrent_hooks

    ws = ensure_workspace(workdir, size, memcli)
    print(f"size {size:,}: {hooks} concurrent hooks with a writer, {rounds} rounds", flush=True)
    found = concurrent_hooks.measure(memcli, ws, hooks, rounds, concurrent_hooks.DEADLINE)
    walls = [w for _, w, _, _ in found["results"]]
    late = sum(1 for w in walls if w > found["limit"])
    bad = sum(1 for _, _, code, _ in found["results"] if code != 0)
    empty = sum(1 for *_, memories in found["results"] if not memories)
    stats = Stats(statistics.median(walls), min(walls), max(walls), 0.0,
                  [f"{bad} hooks exited non-zero"] if bad else [], runs=len(walls), lines=0, warmup=0.0)
    met = "yes" if not (late or bad or empty) else f"NO ({late} late, {empty} without memories)"
    for line in found["report"]:
        print(line, flush=True)
    return Row(size, f"{hooks} concurrent hooks with a writer ({found['writes']} remembers; max {max(walls):.2f} s)",
               stats, target=f"each ≤ {found['limit']:.2f} s, with memories", met=met, kind="concurrent")


#: Kinds of row that carry a figure of issue 21's goals (shown at every size, judged where the goal sets a size;
#: ``alone``: a hot command with the warm fork server off, shown beside the judged ``hot`` rows, not judged).
GOAL_KINDS = ("hot", "alone", "mcp", "mcp-after", "remember", "rebuild", "rss", "fresh", "concurrent")


def goals(rows: list[Row]) -> str:
    """The rows that carry one of issue 21's goals, as a table: figure, measured, reference, ratio, goal, met?"""
    head = ["size", "figure", "measured", "reference", "ratio", "goal", "met?"]
    body = []
    for r in rows:
        if r.memcli is None or (r.target == "—" and r.kind not in GOAL_KINDS):
            continue
        if r.kind == "rss":
            measured, ref, ratio = f"{r.memcli.peak_mb:.1f} MB", "—", "—"
        else:
            measured = fmt_stats(r.memcli).split(" / ")[0] + " s"
            ref = f"{r.ref_name} {r.ref.median:.3f} s" if r.ref and not r.ref.failures else "—"
            ratio = f"{r.memcli.median / r.ref.median:.2f}×" if r.ref and not r.ref.failures \
                and not r.memcli.failures else "—"
        body.append([f"{r.size:,}", r.operation, measured, ref, ratio, r.target, r.met])
    if not body:
        return ""
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return "goals of issue 21:\n" + "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                                              for row in [head, *body])


def exponents(rows: list[Row]) -> str:
    """Scaling exponents: for each operation measured at several sizes, ``log(t2/t1) / log(n2/n1)``
    between consecutive sizes (0: flat, 1: linear in the number of memories), of the wall time
    and, where the row has a reference measured beside it, of the ratio to that reference (which
    the load of a shared machine, different at each size, does not move as much)."""
    import math

    by_op: dict[str, list[Row]] = {}
    for row in rows:
        if row.memcli is not None and not row.memcli.failures and row.memcli.median > 0:
            by_op.setdefault(row.operation, []).append(row)

    def ratio(r: Row) -> float | None:
        return r.memcli.median / r.ref.median if r.memcli and r.ref and not r.ref.failures and r.ref.median else None

    lines = []
    for op, found in by_op.items():
        found.sort(key=lambda r: r.size)
        steps = []
        for a, b in zip(found, found[1:]):
            if not (a.memcli and b.memcli and b.size > a.size):
                continue
            span = math.log(b.size / a.size)
            step = f"{a.size:,}→{b.size:,}: {math.log(b.memcli.median / a.memcli.median) / span:+.2f}"
            ra, rb = ratio(a), ratio(b)
            if ra and rb:
                step += f" (÷ ref {math.log(rb / ra) / span:+.2f})"
            steps.append(step)
        if steps:
            lines.append(f"  {op}: " + ", ".join(steps))
    return "scaling exponents (time ∝ size^k):\n" + "\n".join(lines) if lines else ""


def bench_size(ws: Path, size: int, memcli: str, repeat: int, has_index: bool, reads_only: bool = False) -> list[Row]:
    """Measure every operation on one workspace, each beside its reference of issue 21's goals
    in alternating runs of the same run; return the table rows. ``reads_only``: the reads
    alone (recall, context, the hooks, MCP recall, the peak memory of a read and the hand
    changes' freshness), without writes, the sync rows and the rebuild."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}
    env |= {"MEMCLI_WORKSPACE": str(ws), "MEMCLI_ACTOR": ACTOR, "MEMCLI_SEMANTIC": "off"}
    rows: list[Row] = []
    python = str(Path(memcli).parent / "python") if (Path(memcli).parent / "python").exists() else sys.executable
    if has_index:  # untimed: the index complete first (a new workspace's reads answer from a partial one meanwhile)
        subprocess.run([memcli, "index", "status"], cwd=ws, env=env, capture_output=True)

    def add(label: str, kind: str, stats: Stats | None, rg: Stats | None = None, ref: Stats | None = None,
            ref_name: str = "") -> None:
        target, met = judge(size, kind, stats, ref)
        if kind == "rebuild":
            target, met = judge_rebuild(size, stats)
        rows.append(Row(size, label, stats, rg, target, met, ref, ref_name, kind))
        printed = f" ({stats.lines} lines out; warm-up {stats.warmup:.3f} s)" if stats else ""
        print(f"  {label}: {fmt_stats(stats)}{printed}" + (f" | rg {rg_cell(rg)} s ({rg.lines} files)" if rg else "")
              + (f" | {ref_name} {rg_cell(ref)} s" if ref else ""), flush=True)

    sqlite = [python, "-c", "import sqlite3"]
    pass_ref = series([python, "-c", "pass"], ws, env, repeat)
    add(PASS_REF, "ref", pass_ref)
    for word in (corpus.RARE_WORD, corpus.COMMON_WORD):
        mem, ref = paired([memcli, "recall", word], sqlite, ws, env, repeat)
        add(f"recall {word}", "hot", mem, series(rg_cmd(word), ws, env, repeat), ref, SQLITE_REF)
    database = ws / ".cache" / "index.sqlite3"  # built by the recalls above
    if database.exists():
        add(f"{FTS_REF}: {corpus.RARE_WORD}", "ref",
            series([python, "-c", FTS_QUERY, str(database), corpus.RARE_WORD], ws, env, repeat))
    mem, ref = paired([memcli, "context"], sqlite, ws, env, repeat)
    add("context", "hot", mem, series(rg_cmd(corpus.COMMON_WORD), ws, env, repeat), ref, SQLITE_REF)
    hook = [memcli, "hook", "claude"]
    start = lambda i: json.dumps({"session_id": f"bench-{size}-{i}-{time.time_ns()}",  # noqa: E731
                                  "hook_event_name": "SessionStart", "source": "startup", "cwd": str(ws)}).encode()
    mem, ref = paired([*hook, "session-start"], sqlite, ws, env, repeat, stdin=start)
    add("session-start hook", "hot", mem, ref=ref, ref_name=SQLITE_REF)
    prompt = lambda i: json.dumps({"session_id": f"bench-{size}-p{i}-{time.time_ns()}",  # noqa: E731
                                   "hook_event_name": "UserPromptSubmit", "cwd": str(ws), "prompt": PROMPT}).encode()
    mem, ref = paired([*hook, "user-prompt-submit"], sqlite, ws, env, repeat, stdin=prompt)
    add("prompt hook", "hot", mem, ref=ref, ref_name=SQLITE_REF)
    # the rows above go through the warm fork server (memcli/cli/zygote.py), as a user's second
    # command does; the same commands in one process each (no server, as the first command, or
    # with MEMCLI_NO_SERVER=1) for comparison, and the peak memory of a read, which through the
    # server is the forked child's and not in the client's ru_maxrss
    alone = {**env, "MEMCLI_NO_SERVER": "1"}
    mem, ref = paired([memcli, "recall", corpus.COMMON_WORD], sqlite, ws, alone, repeat)
    add(f"recall {corpus.COMMON_WORD}, no server", "alone", mem, ref=ref, ref_name=SQLITE_REF)
    mem, ref = paired([memcli, "context"], sqlite, ws, alone, repeat)
    add("context, no server", "alone", mem, ref=ref, ref_name=SQLITE_REF)
    mem, ref = paired([*hook, "session-start"], sqlite, ws, alone, repeat, stdin=start)
    add("session-start hook, no server", "alone", mem, ref=ref, ref_name=SQLITE_REF)
    mem, ref = paired([*hook, "user-prompt-submit"], sqlite, ws, alone, repeat, stdin=prompt)
    add("prompt hook, no server", "alone", mem, ref=ref, ref_name=SQLITE_REF)
    rss = rows[-4].memcli
    mcp = mcp_recall(memcli, ws, env, max(20, repeat * 4))
    if mcp is not None:
        plain, after = mcp
        add("MCP recall call (warm session)", "mcp", plain, ref=pass_ref, ref_name=PASS_REF)
        add("MCP recall right after an MCP remember", "mcp-after", after[0], ref=after[1],
            ref_name="MCP recall, no write before (same session, alternating)")
    if reads_only:
        add(f"recall {corpus.COMMON_WORD} (no server): peak memory", "rss", rss)
        return rows + fresh_rows(ws, size, memcli, env)

    rng = random.Random(size)
    git_commit = lambda i: ["sh", "-c", f"git add -- {REF_FILE} && git -c user.name=bench -c "  # noqa: E731
                            f"user.email=bench@example.invalid commit -q -m 'reference {i}' -- {REF_FILE}"]
    waits: list[float] = []
    mem, git_ref = paired(lambda i: [memcli, "remember", remember_text(size, i, rng)], git_commit, ws, env, repeat,
                          ref_before=lambda i: (ws / REF_FILE).write_text(f"run {i} {time.time()}\n",
                                                                          encoding="utf-8"),
                          after=lambda i: waits.append(settle(ws)))
    add(GIT_REF, "ref", git_ref)
    add("remember (with commit)", "remember", mem, ref=git_ref, ref_name=GIT_REF)
    print(f"  (after each remember, untimed: its background walk ended {statistics.median(waits):.3f} s after "
          "its exit, median)", flush=True)

    touch, restore = file_toucher(ws)
    sync_cmd = [memcli, "index", "status"] if has_index else [memcli, "recall", NO_MATCH]
    try:
        mem = series(sync_cmd, ws, env, repeat, before=touch)
        if has_index:
            print(f"  check: {sync_report(ws, env, memcli, touch)}")
    finally:
        restore()
    add(f"1 file changed, then `{' '.join(['memcli', *sync_cmd[1:]])}`", "—", mem)

    touch, restore = file_toucher(ws)
    try:
        add(f"1 file changed, then `memcli recall {corpus.RARE_WORD}`", "—",
            series([memcli, "recall", corpus.RARE_WORD], ws, env, repeat, before=touch))
    finally:
        restore()
    if has_index:
        add("`memcli index status`, nothing changed", "—", series([memcli, "index", "status"], ws, env, repeat))
    add("`memcli --version`", "—", series([memcli, "--version"], ws, env, repeat))
    add(f"recall {corpus.COMMON_WORD} (no server): peak memory", "rss", rss)
    rows += fresh_rows(ws, size, memcli, env)

    rebuild_repeat = 1 if size >= 100_000 else repeat  # each takes minutes at 100k
    rebuild = series([memcli, "index", "rebuild"], ws, env, rebuild_repeat) if has_index else None
    add("memcli index rebuild (cold build)", "rebuild", rebuild)
    if has_index and size >= 10_000:
        rows.append(fresh_clone_row(ws, size, memcli, repeat))
    return rows


#: The hand changes of issue 21's freshness goal: (label, what is done to the store).
FRESH_CASES = ("an edit in place (folder mtime put back)", "a hand-added file", "a hand-deleted file")


def fresh_rows(ws: Path, size: int, memcli: str, env: dict[str, str], reads: int = 4) -> list[Row]:
    """Each hand change of the freshness goal made once to a store in step, then ``memcli --json
    recall WORD`` run one after another until its answer shows the change (at most ``reads``):
    how many reads it took and the seconds from the change to the answer that showed it.
    Goal (docs/search.md, "Freshness"): at most one stale answer, within 2 s."""
    rows: list[Row] = []
    found = subprocess.run(rg_cmd(corpus.RARE_WORD), cwd=ws, capture_output=True, text=True).stdout.split()
    source = ws / sorted(found)[0]
    original = source.read_bytes()
    mark = f"quetzal{time.time_ns() % 10 ** 9}"
    stem = source.name.split("-")[0]
    added = source.with_name(f"{stem[:2]}{mark[-10:].rjust(10, '0')}{'z' * (len(stem) - 12)}-added.md")

    def edit() -> None:
        folder = source.parent.stat()
        source.write_bytes(original.replace(corpus.RARE_WORD.encode(), f"{corpus.RARE_WORD} {mark}e".encode(), 1))
        os.utime(source.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))

    def add() -> None:
        text = original.decode().replace(stem, added.name.split("-")[0]).replace(corpus.RARE_WORD, f"{mark}a", 1)
        added.write_text(text, encoding="utf-8")

    def seen(word: str, present: bool) -> tuple[int, float]:
        began = time.perf_counter()
        for n in range(1, reads + 1):
            proc = subprocess.run([memcli, "--json", "recall", word], cwd=ws, env=env, capture_output=True, text=True)
            try:
                hits = json.loads(proc.stdout)["data"]["hits"]
            except (ValueError, KeyError, TypeError):
                hits = []
            if bool(hits) == present:
                return n, time.perf_counter() - began
        return reads + 1, time.perf_counter() - began

    try:
        time.sleep(2.1)  # past the racy window of the last write: the change is found by design, not by a re-hash
        for label, change, word, present in ((FRESH_CASES[0], edit, f"{mark}e", True),
                                             (FRESH_CASES[1], add, f"{mark}a", True),
                                             (FRESH_CASES[2], lambda: added.unlink(), f"{mark}a", False)):
            change()
            n, wall = seen(word, present)
            met = "yes" if n <= 2 and wall <= 2.0 else ("yes (reads)" if n <= 2 else "NO")
            stats = Stats(wall, wall, wall, 0.0, [], runs=n, lines=n, warmup=0.0)
            rows.append(Row(size, f"{label}: seen by read #{n}" if n <= reads else f"{label}: NOT seen in {reads}",
                            stats, target="≤ 1 stale answer, ≤ 2 s", met=met, kind="fresh"))
            print(f"  {label}: seen by read #{n}, {wall:.3f} s after the change", flush=True)
    finally:
        source.write_bytes(original)
        added.unlink(missing_ok=True)
    return rows


#: The prompt of the prompt-hook rows: everyday words, some in the generated memories.
PROMPT = "how do we deploy the billing service and run its tests?"
#: The file the git reference commits (in the workspace's repository, beside the memories).
REF_FILE = "bench-reference.txt"


def mcp_recall(memcli: str, ws: Path, env: dict[str, str], calls: int) -> tuple[Stats, tuple[Stats, Stats]] | None:
    """The ``recall`` tool's round trip in one warm MCP session (``bench/mcp_bench.recalls``), and
    in another session a recall right after a ``remember`` beside one with no write before it
    (``mcp_bench.around_remember``, alternating): (plain, (after a remember, its plain)), as
    :class:`Stats` of per-call seconds; None when the MCP SDK is not importable here."""
    # In a child process: the MCP SDK would grow this one by about 50 MB, and every process it
    # starts afterwards would report that as its peak (ru_maxrss counts the forked copy before exec).
    code = ("import json, sys, anyio; sys.path.insert(0, sys.argv[1]); import mcp_bench; from pathlib import Path\n"
            "m, ws, n = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]); env = json.loads(sys.stdin.read())\n"
            "times, _ = anyio.run(mcp_bench.recalls, m, ws, env, n)\n"
            "plain, after = anyio.run(mcp_bench.around_remember, m, ws, env, max(5, n // 4))\n"
            "print(json.dumps([times, plain, after]))")
    done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent), memcli, str(ws),
                           str(calls)], input=json.dumps(env), capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  MCP recall: skipped ({done.stderr.strip()[-200:]})")
        return None
    times, plain, after = json.loads(done.stdout.strip().splitlines()[-1])

    def stats(values: list[float]) -> Stats:
        return Stats(statistics.median(values), min(values), max(values), 0.0, [], runs=len(values), lines=0,
                     warmup=0.0)

    return stats(times), (stats(after), stats(plain))


def stale_rows(workdir: Path, memcli: str, repeat: int, memories: int = 10_000, commits: int = 10_000) -> list[Row]:
    """The ``--stale`` rows, on a repository built once under ``workdir`` (kept for the next run):
    ``memcli stale`` with no cache at all (a fresh clone's first run), ``--refresh`` (every
    memory judged, the history's events cached), after one new code commit (the incremental
    case: a session start after a pull), and cached at this ``HEAD``; then the session-start
    and the prompt hooks with the verdicts in the cache beside the same hooks without them, in
    alternating runs (the session-start block is full of fresh memories, which come first, so
    it reads the verdicts and shows few marks or none; the prompt names a stale memory's
    function, so its block must show marks). Targets (issue 23): ``stale`` at 10k is seconds;
    reading the verdicts adds under 5 ms to a hook (the medians' difference, wall and CPU)."""
    import stale_speed

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}
    env |= {"MEMCLI_ACTOR": ACTOR, "MEMCLI_SEMANTIC": "off"}
    top = workdir / f"stale-{memories}-{commits}" / "code"
    ready = top.parent / MARKER_SUFFIX
    if not ready.exists():
        shutil.rmtree(top.parent, ignore_errors=True)
        top.parent.mkdir(parents=True)
        print(f"building the stale workload ({memories:,} memories, {commits:,} commits) ...", flush=True)
        stale_speed.build(top, memories, commits, 2_000, [memcli], env)
        ready.write_text("ok\n", encoding="utf-8")
    rows: list[Row] = []
    cache = top / ".memcli" / ".cache"

    def add(label: str, stats: Stats, target: str = "—", met: str = "—") -> None:
        rows.append(Row(memories, label, stats, target=target, met=met, kind="stale"))
        print(f"  {label}: {fmt_stats(stats)} (cpu {stats.cpu:.3f} s)", flush=True)

    def forget(i: int) -> None:
        for name in ("stale.json", "stale-checked.json", "stale-history.json"):
            (cache / name).unlink(missing_ok=True)

    few = max(1, repeat // 3)
    seconds = "seconds: ≤ 10 s"

    def within(stats: Stats) -> str:  # CPU time too: on a busy machine the wall time is mostly waiting
        return f"{'yes' if stats.median <= 10 else 'NO'} (wall); {'yes' if stats.cpu <= 10 else 'NO'} (cpu)"

    cold = series([memcli, "stale", "--quiet"], top, env, few, before=forget)
    add(f"memcli stale, first run, no cache ({commits:,} commits)", cold, seconds, within(cold))
    full = series([memcli, "stale", "--refresh", "--quiet"], top, env, few)
    add("memcli stale --refresh (every memory judged)", full, seconds, within(full))
    moved = series([memcli, "stale", "--quiet"], top, env, repeat, before=lambda i: stale_speed.one_more_commit(top, i))
    add("memcli stale after one new code commit", moved, seconds, within(moved))
    add("memcli stale (verdicts cached at this HEAD)", series([memcli, "stale", "--quiet"], top, env, repeat))
    kept = (cache / "stale.json").read_bytes()
    runs = iter(range(10 ** 6))
    fresh = f"bench-{time.time_ns()}"  # a session seen before would leave out what it was given

    def start(i: int) -> bytes:
        return json.dumps({"session_id": f"{fresh}-{next(runs)}", "cwd": str(top), "hook_event_name": "SessionStart",
                           "source": "startup"}).encode()

    def prompt(i: int) -> bytes:  # fn_5_2 lives in src/mod5.py, renamed in the last commit: its memories are stale
        return json.dumps({"session_id": f"{fresh}-{next(runs)}", "cwd": str(top),
                           "hook_event_name": "UserPromptSubmit", "prompt": stale_speed.PROMPT}).encode()

    for event, stdin, must in (("session-start", start, False), ("user-prompt-submit", prompt, True)):
        hook = [memcli, "hook", "claude", event]
        shown = subprocess.run(hook, cwd=top, env=env, input=stdin(0), capture_output=True, check=True).stdout
        marks = shown.count(b"may be outdated")
        if must and not marks:
            sys.exit(f"the {event} block shows no stale mark: its rows would not measure marks")
        marked: list[Stats] = []
        plain: list[Stats] = []
        for _ in range(3 * repeat):  # alternating single runs, paired: both sides of a pair see the same load
            marked.append(series(hook, top, env, 1, before=lambda i: (cache / "stale.json").write_bytes(kept),
                                 stdin=stdin))
            plain.append(series(hook, top, env, 1, before=lambda i: (cache / "stale.json").unlink(missing_ok=True),
                                stdin=stdin))
        (cache / "stale.json").write_bytes(kept)
        with_marks, without = merged(marked), merged(plain)
        walls = sorted((m.median - p.median) * 1000 for m, p in zip(marked, plain))
        cpus = sorted((m.cpu - p.cpu) * 1000 for m, p in zip(marked, plain))
        wall_ms, cpu_ms = statistics.median(walls), statistics.median(cpus)

        def quartiles(values: list[float]) -> str:
            return f"{values[len(values) // 4]:+.1f}..{values[3 * len(values) // 4]:+.1f}"

        add(f"{event} hook, {len(json.loads(kept)['memories']):,} stale verdicts cached ({marks} marks shown)",
            with_marks, "verdicts add < 5 ms", f"{'yes' if wall_ms < 5 and cpu_ms < 5 else 'NO'} (median of "
            f"{len(walls)} paired differences: {wall_ms:+.1f} ms wall, quartiles {quartiles(walls)}; "
            f"{cpu_ms:+.1f} ms cpu, quartiles {quartiles(cpus)})")
        add(f"{event} hook, no verdicts", without)
        python = Path(memcli).parent / "python"  # memcli's own interpreter: the in-process measure imports it
        probe = subprocess.run([str(python if python.exists() else sys.executable),
                                str(Path(__file__).resolve().parent / "stale_speed.py"), "--in-process", str(top),
                                "--event", event, "--pairs", str(20 * repeat)], env=env, capture_output=True,
                               check=True, text=True)
        inside = json.loads(probe.stdout)
        diff, low, high = inside["cpu_diff_ms"], *inside["cpu_diff_quartiles"]
        label = f"{event} hook inside one process ({inside['marks']} marks; no start-up, n={inside['pairs']} pairs)"
        at = inside["cpu_ms"]["verdicts"] / 1000  # CPU time inside the process: no wall time of its own
        rows.append(Row(memories, label, Stats(at, at, at, 0, [], runs=inside["pairs"], lines=0, warmup=0, cpu=at),
                        target="verdicts add < 5 ms", kind="stale",
                        met=f"{'yes' if diff < 5 else 'NO'} ({diff:+.2f} ms cpu, quartiles {low:+.2f}..{high:+.2f}; "
                            f"{inside['cpu_ms']['none']:.1f} ms without)"))
        print(f"  {label}: {json.dumps(inside)}", flush=True)
    return rows


def merged(runs: list[Stats]) -> Stats:
    """Single-run :class:`Stats` (alternating series) as one: medians of their walls and CPU times."""
    walls = [r.median for r in runs]
    return Stats(statistics.median(walls), min(walls), max(walls), max(r.peak_mb for r in runs),
                 [f for r in runs for f in r.failures], runs=len(runs), lines=runs[0].lines, warmup=0.0,
                 cpu=statistics.median(r.cpu for r in runs))


def fresh_clone_row(ws: Path, size: int, memcli: str, repeat: int) -> Row:
    """The "fresh clone session-start" figure (bench/fresh_clone.py): at 100,000 and more,
    session starts (each under `timeout 10`) until the index is complete; below, the
    session-start hook's answer time on ``min(repeat, 3)`` fresh clones."""
    import fresh_clone

    work = ws.parent / f"fresh-{size}"
    work.mkdir(exist_ok=True)
    print(f"  fresh clone session starts ({'until the index is complete' if size >= 100_000 else 'answer time'}):",
          flush=True)
    if size >= 100_000:
        starts, complete = fresh_clone.until_complete(memcli, ws, work, gap=2.0, limit=10.0)
        label = (f"fresh clone: {len(starts)} session starts until the index is complete"
                 if complete else f"fresh clone: index NOT complete after {len(starts)} session starts")
    else:
        starts = fresh_clone.runs(memcli, ws, work, min(repeat, 3), load=0, limit=10.0)
        label = "fresh clone: session-start hook answer"
    walls = [w for w, _ in starts]
    failures = [outcome for _, outcome in starts if not outcome.startswith("ok")]
    stats = Stats(statistics.median(walls), min(walls), max(walls), 0.0, failures, runs=len(walls), lines=0,
                  warmup=0.0)
    return Row(size, label, stats, None, "every start < 10 s (timeout)", "yes" if not failures else "NO")


def sync_report(ws: Path, env: dict[str, str], memcli: str, touch) -> str:
    """Untimed: change the file once more and show what ``index status --json`` says it synced."""
    touch(-1)
    done = subprocess.run([memcli, "index", "status", "--json"], cwd=ws, env=env, capture_output=True, text=True)
    try:
        return f"one more change gives last_sync {json.loads(done.stdout)['data']['last_sync']}"
    except (ValueError, KeyError, TypeError):
        return f"could not read `index status --json` (exit {done.returncode}): {done.stderr.strip()[-200:]}"


def rg_cmd(word: str) -> list[str]:
    """ripgrep listing the memory files that hold ``word`` (case-insensitive, literal)."""
    return ["rg", "-l", "-i", "--fixed-strings", word, "memories/"]


def fmt_stats(stats: Stats | None) -> str:
    """``median / min / max`` in seconds, or n/a / the failure."""
    if stats is None:
        return "n/a"
    if stats.failures:
        return f"FAILED ({len(stats.failures)}x: {stats.failures[0][:60]})"
    return f"{stats.median:.3f} / {stats.low:.3f} / {stats.high:.3f}"


def rg_cell(rg: Stats | None) -> str:
    """The rg median, or — / FAILED."""
    if rg is None:
        return "—"
    return f"FAILED ({rg.failures[0][:40]})" if rg.failures else f"{rg.median:.3f}"


def table(rows: list[Row], markdown: bool) -> str:
    """The result table as aligned plain text or as Markdown."""
    head = ["size", "operation", "memcli median / min / max (s)", "cpu (s)", "peak MB", "reference",
            "ref median (s)", "× ref", "rg median (s)", "× rg", "target", "met?"]
    body = []
    for r in rows:
        ok = r.memcli is not None and not r.memcli.failures
        ratio = f"{r.memcli.median / r.rg.median:.1f}×" if ok and r.rg and not r.rg.failures else "—"
        to_ref = f"{r.memcli.median / r.ref.median:.1f}×" if ok and r.ref and not r.ref.failures else "—"
        body.append([f"{r.size:,}", r.operation, fmt_stats(r.memcli),
                     f"{r.memcli.cpu:.3f}" if ok and r.memcli.cpu else "—",
                     f"{r.memcli.peak_mb:.0f}" if ok and r.memcli.peak_mb else "—",
                     r.ref_name or "—", rg_cell(r.ref), to_ref, rg_cell(r.rg), ratio, r.target, r.met])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body])
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *body])


def tool_version(cmd: list[str]) -> str:
    """First line of a tool's version output, or why it failed."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError) as err:
        return f"unavailable ({err})"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what ``platform`` knows."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.processor() or "unknown CPU")


def sqlite_version(memcli: str) -> str:
    """The SQLite library version seen by the Python that runs ``memcli`` (from its shebang)."""
    first = Path(memcli).read_bytes().split(b"\n", 1)[0].decode(errors="replace")
    python = first[2:].strip() if first.startswith("#!") else sys.executable
    code = "import sqlite3, sys; print(sqlite3.sqlite_version, 'via', sys.executable)"
    return tool_version([*python.split(), "-c", code])


def machine_info(memcli: str) -> str:
    """CPU, OS and tool versions, printed above the table."""
    cpu = cpu_model()
    return "\n".join([
        f"machine: {os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"python:  {platform.python_version()} ({sys.executable})",
        f"memcli:  {memcli} ({tool_version([memcli, '--version'])})",
        f"rg:      {tool_version(['rg', '--version'])}",
        f"sqlite:  {sqlite_version(memcli)}",
        f"git:     {tool_version(['git', '--version'])}",
    ])


def install(workdir: Path) -> str:
    """Install this checkout (not editable) into ``workdir/venv``; return its memcli executable."""
    venv = workdir / "venv"
    checkout = Path(__file__).resolve().parent.parent
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {checkout} into {venv} ...", flush=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--force-reinstall", "--no-deps", str(checkout)],
                   check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(checkout)], check=True)
    return str(venv / "bin" / "memcli")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated workspace sizes")
    parser.add_argument("--repeat", type=int, default=7, help="measured runs per command (after 1 warm-up)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memcli-bench"), help="where workspaces live")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    parser.add_argument("--memcli", help="memcli executable to measure (default: install this checkout)")
    parser.add_argument("--stale", action="store_true", help="add the rows of `memcli stale` and its marks")
    parser.add_argument("--concurrent", type=int, default=20_000,
                        help="store size for the concurrent-hooks row (0: none; run when a size of 10,000+ is asked)")
    parser.add_argument("--reads-only", action="store_true",
                        help="only the reads (recall, context, hooks, MCP recall, freshness): no writes, no rebuild")
    args = parser.parse_args(argv)
    if shutil.which("rg") is None:
        bundled = sorted((Path(__file__).resolve().parent.parent / ".cache" / "agent-clis").glob(
            "node_modules/@openai/codex-*/vendor/*/codex-path/rg"))  # the ripgrep Codex ships (scripts/agent-clis.txt)
        if not bundled:
            sys.exit("need rg on PATH (apt-get install ripgrep, or scripts/install-agent-clis.sh: Codex ships one)")
        os.environ["PATH"] = f"{bundled[0].parent}{os.pathsep}{os.environ.get('PATH', '')}"
    memcli = args.memcli or install(args.workdir)
    if args.repeat < 1:
        sys.exit("--repeat must be at least 1")
    print(machine_info(memcli))
    probe = subprocess.run([memcli, "index", "--help"], capture_output=True)
    has_index = probe.returncode == 0
    print("index:   " + ("`memcli index` present" if has_index else
                         "no `memcli index` command: sync timed with `recall`, rebuild n/a") + "\n")
    rows: list[Row] = []
    for size in (int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()):
        ws = ensure_workspace(args.workdir, size, memcli)
        print(f"size {size:,}: {args.repeat} runs + 1 warm-up per command", flush=True)
        rows += bench_size(ws, size, memcli, args.repeat, has_index, args.reads_only)
    sizes = [r.size for r in rows]
    if args.concurrent and any(n >= 10_000 for n in sizes):
        rows.append(concurrent_row(args.workdir, memcli, args.concurrent, hooks=16, rounds=3))
    if args.stale:
        rows += stale_rows(args.workdir, memcli, args.repeat)
    judge_flat(rows)
    print("\n" + table(rows, markdown=False))
    print("\n" + exponents(rows))
    print("\n" + goals(rows))
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for row in rows:
        if row.size >= 100_000 and row.operation.startswith("recall") and row.memcli and not row.memcli.failures:
            peak = row.memcli.peak_mb
            print(f"peak memory of `{row.operation}` at {row.size:,}: {peak:.0f} MB "
                  f"(target < 50 MB: {'yes' if peak < 50 else 'NO'})")
    for row in rows:
        for name, stats in (("memcli", row.memcli), ("rg", row.rg)):
            if stats is not None and stats.failures:
                print(f"\nFAILED {row.size:,} {row.operation} ({name}, {len(stats.failures)} of "
                      f"{stats.runs} runs incl. warm-up): {stats.failures[0]}")
    if args.markdown:
        print("\n" + table(rows, markdown=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
