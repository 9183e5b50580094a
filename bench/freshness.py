"""Benchmark of the read path's freshness check (issue 21 points 1, 2): whole-process times of
``recall``, ``context`` and a prompt hook on a generated workspace, a recall right after a
``remember``, and the ``newfstatat`` count of one recall (with strace when present).

    python bench/freshness.py --ws /tmp/memcli-bench/ws-10000 [--repeat 9] [--memcli memcli]

Each figure is the median (min-max) wall time of ``--repeat`` runs after one warm-up run,
run one after the other with ``--gap`` seconds between them (0: each read right after the
previous one, which then may wait for the full walk the previous read started).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

GAP = 0.0


def timed(cmd: list[str], cwd: Path, repeat: int, stdin: str | None = None,
          between: Callable[[], object] | None = None) -> list[float]:
    out = []
    for i in range(repeat + 1):
        if between is not None:
            between()
        time.sleep(GAP)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, check=False)
        if i:
            out.append(time.perf_counter() - start)
    return out


def show(name: str, values: list[float]) -> None:
    print(f"{name:32s} median {statistics.median(values) * 1000:7.1f} ms  "
          f"(min {min(values) * 1000:6.1f}, max {max(values) * 1000:6.1f}, n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ws", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--memcli", default="memcli")
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds of idle before each run (0: one read right after another)")
    args = parser.parse_args()
    global GAP
    GAP = args.gap
    ws, m = args.ws, args.memcli
    env_actor = ["--actor", "alice"]
    print(f"load {os.getloadavg()[0]:.2f}; {ws}; gap {GAP:g} s")
    show("python -c 'import sqlite3'", timed(["python3", "-c", "import sqlite3"], ws, args.repeat))
    show("recall zanzibarflux", timed([m, *env_actor, "recall", "zanzibarflux"], ws, args.repeat))
    show("recall deploy --json", timed([m, *env_actor, "recall", "deploy", "--json"], ws, args.repeat))
    show("context", timed([m, *env_actor, "context"], ws, args.repeat))
    prompt = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": "how to deploy",
                         "cwd": str(ws)})
    show("hook prompt (claude)", timed([m, *env_actor, "hook", "claude", "user-prompt-submit"], ws, args.repeat,
                                       stdin=prompt))
    counter = [0]

    def write() -> None:
        counter[0] += 1
        subprocess.run([m, *env_actor, "remember", f"bench note number {counter[0]} {time.time_ns()}",
                        "--scope", "user:alice"], cwd=ws, capture_output=True, check=False)
    show("recall right after a remember", timed([m, *env_actor, "recall", "zanzibarflux"], ws,
                                                 max(3, args.repeat // 3), between=write))
    if shutil.which("strace"):
        proc = subprocess.run(["strace", "-c", "-e", "trace=newfstatat,openat,statx", m, *env_actor,
                               "recall", "zanzibarflux"], cwd=ws, capture_output=True, text=True, check=False)
        lines = [line for line in proc.stderr.splitlines() if any(k in line for k in ("newfstatat", "openat",
                                                                                        "statx", "total"))]
        print("strace -c of one recall:\n  " + "\n  ".join(lines))


if __name__ == "__main__":
    main()
