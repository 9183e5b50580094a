"""Sixteen hooks at once on a large workspace while a writer writes (issue 21, SPEC.md section 8).

    python bench/concurrent_hooks.py [--size 20000] [--hooks 16] [--rounds 3] [--workdir /tmp/memcli-bench]
                                     [--memcli PATH]

On the generated workspace of ``bench/generate.py`` (``<workdir>/ws-<size>``, made once and
reused, as ``bench/run.py`` does), each round starts ``--hooks`` Claude Code hook processes
at the same moment (half session starts, half prompt hooks, each with its own session id)
while one writer runs ``memcli remember`` in a loop. For every hook it records the wall
time, the exit status, whether the answer holds memories (a line of the block) and whether
it answered within the hook deadline (``[hooks] deadline``, 2 s by default) plus the
interpreter's start. Numbers, not assertions (docs/benchmark.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

#: What the block of a hook answer that holds memories has: one line per memory.
MEMORY_LINE = "- ["
PROMPTS = ("how do we deploy the billing service?", "what is our convention for database migrations?",
           "which retry policy do the clients use?", "where do the integration tests run?")


def hook(memcli: str, ws: Path, env: dict[str, str], event: str, payload: dict, out: list, at: threading.Barrier
         ) -> None:
    """One hook process, started when every thread of the round is ready; its result goes to ``out``."""
    at.wait()
    started = time.perf_counter()
    proc = subprocess.run([memcli, "hook", "claude", event], cwd=ws, env=env, input=json.dumps(payload).encode(),
                          capture_output=True)
    wall = time.perf_counter() - started
    text = proc.stdout.decode("utf-8", "replace").replace("\\n", "\n")  # plain text, or JSON with the block inside
    out.append((event, wall, proc.returncode, MEMORY_LINE in text))


def writer(memcli: str, ws: Path, env: dict[str, str], stop: threading.Event, done: list) -> None:
    """``memcli remember`` in a loop until ``stop``; the count of writes and failures goes to ``done``."""
    n = failed = 0
    while not stop.is_set():
        proc = subprocess.run([memcli, "remember", f"concurrency bench note {time.time_ns()} on the deploy checklist"],
                              cwd=ws, env=env, capture_output=True)
        n += 1
        failed += proc.returncode != 0
    done.append((n, failed))


#: The hook deadline judged by (``[hooks] deadline``'s default, seconds).
DEADLINE = 2.0


def measure(memcli: str, ws: Path, hooks: int, rounds: int, deadline: float) -> dict:
    """``rounds`` rounds of ``hooks`` hooks started at once on ``ws`` while a writer remembers.

    Returns ``results`` (event, wall seconds, exit status, with memories) per hook, ``limit``
    (``deadline`` plus the median start of an interpreter, seconds), ``writes`` and ``failed``
    (the writer's remembers) and ``report`` (printable lines).
    """
    import run as bench_run

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}
    env |= {"MEMCLI_WORKSPACE": str(ws), "MEMCLI_ACTOR": bench_run.ACTOR, "MEMCLI_SEMANTIC": "off"}
    subprocess.run([memcli, "index", "status"], cwd=ws, env=env, check=True, capture_output=True)  # in step
    start_cost = statistics.median(bench_run.run_once([sys.executable, "-c", "pass"], ws, env)[0] for _ in range(5))
    results: list[tuple[str, float, int, bool]] = []
    writes: list[tuple[int, int]] = []
    for r in range(rounds):
        stop = threading.Event()
        write = threading.Thread(target=writer, args=(memcli, ws, env, stop, writes))
        write.start()
        barrier = threading.Barrier(hooks)
        threads = []
        for i in range(hooks):
            session = f"conc-{r}-{i}-{time.time_ns()}"
            if i % 2:
                event, payload = "user-prompt-submit", {"session_id": session, "hook_event_name": "UserPromptSubmit",
                                                        "cwd": str(ws), "prompt": PROMPTS[i % len(PROMPTS)]}
            else:
                event, payload = "session-start", {"session_id": session, "hook_event_name": "SessionStart",
                                                   "source": "startup", "cwd": str(ws)}
            threads.append(threading.Thread(target=hook, args=(memcli, ws, env, event, payload, results, barrier)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        write.join()
    limit = deadline + start_cost
    report = [f"{ws.name}: {rounds} rounds of {hooks} hooks at once with a writer ({os.cpu_count()} cores, load "
              f"{os.getloadavg()[0]:.1f}); deadline {deadline:g} s + interpreter start {start_cost:.3f} s"]
    for event in ("session-start", "user-prompt-submit"):
        mine = [x for x in results if x[0] == event]
        walls = sorted(w for _, w, _, _ in mine)
        report.append(f"  {event}: {len(mine)} hooks, median {statistics.median(walls):.3f} s, max {walls[-1]:.3f} s; "
                      f"exit 0: {sum(1 for x in mine if x[2] == 0)}; within {limit:.2f} s: "
                      f"{sum(1 for w in walls if w <= limit)}; with memories: {sum(1 for x in mine if x[3])}")
    report.append(f"  writer: {sum(n for n, _ in writes)} remembers, {sum(f for _, f in writes)} failed")
    return {"results": results, "limit": limit, "writes": sum(n for n, _ in writes),
            "failed": sum(f for _, f in writes), "report": report}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    import run as bench_run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--hooks", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=DEADLINE, help="the hook deadline to judge by (seconds)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memcli-bench"))
    parser.add_argument("--memcli", help="memcli executable (default: install this checkout, as bench/run.py)")
    args = parser.parse_args(argv)
    memcli = str(Path(args.memcli).resolve()) if args.memcli else bench_run.install(args.workdir)
    ws = bench_run.ensure_workspace(args.workdir, args.size, memcli)
    found = measure(memcli, ws, args.hooks, args.rounds, args.deadline)
    print("\n".join(found["report"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
