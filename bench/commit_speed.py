"""``memcli remember`` with its commit beside git's own commit, per kind of store (issue 21 point 3).

    python bench/commit_speed.py [--sizes 10000,100000] [--rounds 7] [--kinds branch,standalone]
                                 [--workdir /tmp/memcli-bench] [--memcli [LABEL=]PATH ...]

For each size and kind of store it measures, in alternating rounds of the same run (so the
load of a shared machine falls on every figure alike):

* ``git add + git commit`` of one file in the same repository (the reference of SPEC.md
  section 8);
* ``memcli remember "<fresh text>"`` for each ``--memcli`` executable given (``LABEL=PATH``;
  several compare two builds in one run).

Kinds: ``branch`` (the store on the memory branch, checked out in ``.memcli/`` of a small
code repository: the memory files of ``<workdir>/ws-<size>`` copied in and committed there),
``standalone`` (the generated workspace itself: ``memcli init DIR`` outside any repository).
Wall times of whole processes; medians, min and max, and each memcli median over the git
reference's median. After each ``remember`` the script waits, untimed, for the full walk it
starts in the background once it has answered (``run.settle``), so that walk loads no
measured run; its median duration is printed beside the figure. Numbers, not assertions.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import run as bench_run  # noqa: E402

GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def clean_env() -> dict[str, str]:
    """This process's environment without git's and memcli's variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}


def branch_store(workdir: Path, size: int, memcli: str) -> Path:
    """A code repository whose store is on the memory branch, holding the memories of ``ws-<size>``
    (built once; reused while its marker is there); returns the ``.memcli`` worktree."""
    top = workdir / f"branch-{size}"
    marker = workdir / f"branch-{size}{bench_run.MARKER_SUFFIX}"
    store = top / ".memcli"
    if marker.exists() and store.is_dir():
        return store
    source = bench_run.ensure_workspace(workdir, size, memcli)
    shutil.rmtree(top, ignore_errors=True)
    top.mkdir(parents=True)
    env = clean_env()

    def git(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *GIT_ID, "-C", str(cwd), *args], check=True, env=env, stdout=subprocess.DEVNULL)

    git(top, "init", "-q")
    (top / "README.md").write_text("code\n", encoding="utf-8")
    git(top, "add", "README.md")
    git(top, "commit", "-q", "-m", "code")
    subprocess.run([memcli, "init"], cwd=top, env=env, check=True, stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    # the personal scopes of the generated corpus stay out: a shared store never serves them
    shutil.copytree(source / "memories", store / "memories", dirs_exist_ok=True,
                    ignore=lambda folder, names: ["user"] if Path(folder) == source / "memories" else [])
    git(store, "add", "-A", "memories")
    git(store, "commit", "-q", "-m", f"bench: {size} memories")
    print(f"built {store} in {time.perf_counter() - started:.1f} s", flush=True)
    marker.write_text(f"count={size}\n", encoding="utf-8")
    return store


def measure(store: Path, size: int, kind: str, memclis: dict[str, str], rounds: int) -> None:
    """Alternate git's commit and each memcli's remember ``rounds`` times (after one warm-up) and print."""
    env = clean_env() | {"MEMCLI_WORKSPACE": str(store), "MEMCLI_ACTOR": bench_run.ACTOR, "MEMCLI_SEMANTIC": "off"}
    ref = store / bench_run.REF_FILE
    rng = random.Random(size)
    times: dict[str, list[float]] = {"git add + git commit": [], **{label: [] for label in memclis}}
    peaks: dict[str, int] = {}
    walks: dict[str, list[float]] = {}
    for i in range(rounds + 1):
        ref.write_text(f"run {i} {time.time()}\n", encoding="utf-8")
        argv = ["sh", "-c", f"git add -- {bench_run.REF_FILE} && git {' '.join(GIT_ID)} commit -q "
                f"-m 'reference {i}' -- {bench_run.REF_FILE}"]
        wall, _, failure, _, _ = bench_run.run_once(argv, store, env)
        if failure:
            sys.exit(f"git reference failed: {failure}")
        if i:
            times["git add + git commit"].append(wall)
        for label, memcli in memclis.items():
            wall, peak, failure, _, _ = bench_run.run_once(
                [memcli, "remember", bench_run.remember_text(size, i, rng) + f" ({label})"], store, env)
            if failure:
                sys.exit(f"{label} remember failed: {failure}")
            waited = bench_run.settle(store)  # its background walk loads no measured run
            if i:
                times[label].append(wall)
                peaks[label] = max(peaks.get(label, 0), peak)
                walks.setdefault(label, []).append(waited)
    status = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=store, env=env, capture_output=True,
                            text=True).stdout.strip()
    base = statistics.median(times["git add + git commit"])
    print(f"{kind} store, {size:,} memories, {rounds} rounds (+1 warm-up), load {os.getloadavg()[0]:.1f}; "
          f"`git status` after: {'clean' if not status else status.splitlines()[:3]}")
    for label, walls in times.items():
        median = statistics.median(walls)
        extra = f"  peak {peaks[label] / 1024:.0f} MB" if label in peaks else ""
        if label in walks:
            extra += f"  (background walk after it, untimed: {statistics.median(walks[label]):.3f} s)"
        print(f"  {label:<24} median {median:.3f} s  min {min(walls):.3f}  max {max(walls):.3f}  "
              f"= {median / base:.2f}x git{extra}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--kinds", default="branch,standalone")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memcli-bench"))
    parser.add_argument("--memcli", action="append", help="[LABEL=]PATH; repeat to compare builds in one run")
    args = parser.parse_args(argv)
    given = args.memcli or [bench_run.install(args.workdir)]
    memclis = {}
    for item in given:
        label, _, path = item.rpartition("=")
        memclis[label or f"memcli{len(memclis) + 1}"] = str(Path(path).resolve())
    first = next(iter(memclis.values()))
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        for kind in args.kinds.split(","):
            if kind == "branch":
                store = branch_store(args.workdir, size, first)
            elif kind == "standalone":
                store = bench_run.ensure_workspace(args.workdir, size, first)
            else:
                sys.exit(f"unknown kind {kind!r} (branch, standalone)")
            measure(store, size, kind, memclis, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
