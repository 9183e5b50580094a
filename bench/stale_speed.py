"""What `memcli stale` and its marks cost: a code repository of 10k commits and 10k anchored memories.

    python bench/stale_speed.py [--memories 10000] [--commits 10000] [--files 2000] [--repeat 5]

Builds (with ``git fast-import``) a code repository of ``--commits`` commits over ``--files``
Python files, each defining a few functions, then a store on the memory branch holding
``--memories`` memories, each naming one file and one function and anchored at a commit
spread over the history; the last commit renames a hundred files and removes a hundred
functions. Measures, whole processes, medians of ``--repeat``:

* ``memcli stale --refresh`` (every memory judged) and ``memcli stale`` right after (the
  verdicts cached at this ``HEAD``);
* the Claude Code session-start hook with the verdicts in the cache (marks shown) beside the
  same hook with ``.cache/stale.json`` removed (no marks), in alternating rounds.

Numbers, not assertions (docs/benchmark.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAMP = "2026-01-01T00:00:00Z"


def fast_import(top: Path, commits: int, files: int) -> None:
    """``commits`` commits, the i-th rewriting ``src/mod{i % files}.py``; the last renames and drops."""
    lines: list[str] = []

    def blob(text: str) -> None:
        data = text.encode()
        lines.append(f"data {len(data)}\n")
        lines.append(data.decode() + "\n")

    for i in range(commits):
        n = i % files
        lines.append("commit refs/heads/main\n")
        lines.append(f"committer Bench <bench@example.invalid> {1_600_000_000 + i * 60} +0000\n")
        blob(f"commit {i}")
        body = "".join(f"def fn_{n}_{k}(x):\n    return x + {i}\n" for k in range(3))
        lines.append(f"M 100644 inline src/mod{n}.py\n")
        blob(body)
    lines.append("commit refs/heads/main\n")
    lines.append(f"committer Bench <bench@example.invalid> {1_600_000_000 + commits * 60} +0000\n")
    blob("rename a hundred modules, drop a hundred functions")
    for n in range(100):
        lines.append(f"R src/mod{n}.py src/renamed{n}.py\n")
    for n in range(100, 200):
        lines.append(f"M 100644 inline src/mod{n}.py\n")
        blob("".join(f"def other_{n}_{k}(x):\n    return x\n" for k in range(3)))
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True)
    subprocess.run(["git", "-C", str(top), "fast-import", "--quiet"], input="".join(lines).encode(), check=True)
    subprocess.run(["git", "-C", str(top), "reset", "-q", "--hard", "main"], check=True)


def build(top: Path, memories: int, commits: int, files: int, memcli_cmd: list[str], env: dict[str, str]) -> None:
    """The code repository at ``top`` (see :func:`fast_import`) and a store on its memory branch
    with ``memories`` anchored memories, committed; ``[hooks] stale`` off, so that a measured
    hook starts no background judging. ``memcli_cmd``: how to run memcli (an argv prefix)."""
    fast_import(top, commits, files)
    subprocess.run([*memcli_cmd, "init", "--branch"], cwd=top, check=True, capture_output=True, env=env)
    config = top / ".memcli" / "memcli.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("stale = true", "stale = false"), encoding="utf-8")
    history = subprocess.run(["git", "-C", str(top), "rev-list", "--first-parent", "--reverse", "main"],
                             capture_output=True, text=True, check=True).stdout.split()
    folder = top / ".memcli" / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(memories):
        n = i % files
        anchor = history[min(len(history) - 2, max(n, (i * 7919) % (len(history) - 1)))]
        (folder / f"m{i:06d}.md").write_text(
            f"---\nid: m{i:06d}\nscope: project\nstatus: active\ncreatedAt: {STAMP}\nupdatedAt: {STAMP}\n"
            f"anchor:\n  commit: {anchor}\n  files: [src/mod{n}.py]\n  symbols: [fn_{n}_{i % 3}]\n---\n"
            f"Module src/mod{n}.py: call `fn_{n}_{i % 3}` for case {i}.\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(top / ".memcli"), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(top / ".memcli"), "-c", "user.name=b", "-c", "user.email=b@example.invalid",
                    "commit", "-q", "-m", "memories"], check=True)
    subprocess.run([*memcli_cmd, "index", "build"], cwd=top, check=True, capture_output=True, env=env)


def one_more_commit(top: Path, i: int) -> None:
    """A new code commit on top of the bench repository (one module edited): ``HEAD`` moves,
    as after a pull, so the next ``memcli stale`` judges incrementally."""
    path = top / "src" / f"mod{1500 + i % 400}.py"
    path.write_text(path.read_text(encoding="utf-8") + f"# edit {i} {time.time_ns()}\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(top), "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q",
                    "-a", "-m", f"edit {i}"], check=True)


def memcli(top: Path, *args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memcli", *args], cwd=top, capture_output=True, env=env,
                          input=json.dumps({"session_id": "s", "cwd": str(top), "hook_event_name": "SessionStart",
                                            "source": "startup"}).encode())
    if proc.returncode != 0:
        raise SystemExit(f"memcli {' '.join(args)} failed: {proc.stderr.decode()[:300]}")
    return time.perf_counter() - started


PROMPT = "how is fn_5_2 in src/mod5.py used?"  # fn_5_2 lives in src/mod5.py, renamed in the last commit


def payload(top: Path, event: str, session: str) -> str:
    """A Claude Code hook's stdin for ``event`` (``session-start`` or ``user-prompt-submit``)."""
    if event == "session-start":
        return json.dumps({"session_id": session, "cwd": str(top), "hook_event_name": "SessionStart",
                           "source": "startup"})
    return json.dumps({"session_id": session, "cwd": str(top), "hook_event_name": "UserPromptSubmit",
                       "prompt": PROMPT})


def in_process(top: Path, event: str, pairs: int) -> dict:
    """What the cached verdicts add to one hook, inside one process (no start-up, no other
    process's noise): ``memcli.service.hooks.run_hook`` for ``event``, alternately with
    ``.cache/stale.json`` in place and removed, ``pairs`` times; CPU time of this process
    (``time.process_time``) and wall time of each call. Run with memcli's own Python, in the
    workspace ``top`` (its code repository, the store on the memory branch)."""
    import itertools

    from memcli.service.hooks import run_hook

    os.chdir(top)
    cache = top / ".memcli" / ".cache" / "stale.json"
    kept = cache.read_bytes()
    sessions = itertools.count()
    fresh = f"inproc-{time.time_ns()}"  # a session seen before would leave out what it was given
    run_hook("claude", event, payload(top, event, f"{fresh}-warm"), None, None)
    runs: dict[str, list[tuple[float, float, int]]] = {"verdicts": [], "none": []}
    for n in range(pairs):
        for side in (("verdicts", "none") if n % 2 else ("none", "verdicts")):
            if side == "verdicts":
                cache.write_bytes(kept)
            else:
                cache.unlink(missing_ok=True)
            cpu, wall = time.process_time(), time.perf_counter()
            out = run_hook("claude", event, payload(top, event, f"{fresh}-{next(sessions)}"), None, None).stdout
            runs[side].append((time.process_time() - cpu, time.perf_counter() - wall, out.count("may be outdated")))
    cache.write_bytes(kept)
    cpu_diff = sorted((a[0] - b[0]) * 1000 for a, b in zip(runs["verdicts"], runs["none"]))
    wall_diff = sorted((a[1] - b[1]) * 1000 for a, b in zip(runs["verdicts"], runs["none"]))
    return {"event": event, "pairs": pairs, "marks": runs["verdicts"][0][2],
            "cpu_ms": {side: statistics.median(r[0] for r in v) * 1000 for side, v in runs.items()},
            "cpu_diff_ms": statistics.median(cpu_diff), "cpu_diff_quartiles": [cpu_diff[pairs // 4],
                                                                              cpu_diff[3 * pairs // 4]],
            "wall_diff_ms": statistics.median(wall_diff), "wall_diff_quartiles": [wall_diff[pairs // 4],
                                                                                wall_diff[3 * pairs // 4]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="Build the repository here and keep it (to profile).")
    parser.add_argument("--in-process", type=Path, metavar="TOP",
                        help="Only measure what the verdicts add to a hook inside one process, in the workspace "
                             "TOP built before (prints JSON; see in_process).")
    parser.add_argument("--event", default="session-start", choices=["session-start", "user-prompt-submit"])
    parser.add_argument("--pairs", type=int, default=60)
    args = parser.parse_args(argv)
    if args.in_process:
        print(json.dumps(in_process(args.in_process.resolve(), args.event, args.pairs)))
        return 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}
    env |= {"MEMCLI_ACTOR": "bench", "MEMCLI_SEMANTIC": "off"}
    with tempfile.TemporaryDirectory(prefix="memcli-stale-") as tmp:
        top = (args.keep if args.keep else Path(tmp)) / "code"
        started = time.perf_counter()
        build(top, args.memories, args.commits, args.files, [sys.executable, "-m", "memcli"], env)
        memcli(top, "index", "build", env=env)
        print(f"built {args.commits} commits, {args.files} files, {args.memories} memories in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        cold = [memcli(top, "stale", "--refresh", "--quiet", env=env) for _ in range(max(1, args.repeat // 2))]
        warm = [memcli(top, "stale", "--quiet", env=env) for _ in range(args.repeat)]
        report = json.loads(subprocess.run([sys.executable, "-m", "memcli", "--json", "stale"], cwd=top,
                                           capture_output=True, env=env, check=True).stdout)["data"]
        cache = top / ".memcli" / ".cache" / "stale.json"
        kept = cache.read_bytes()
        marked, plain = [], []
        for _ in range(args.repeat):
            cache.write_bytes(kept)
            marked.append(memcli(top, "hook", "claude", "session-start", env=env))
            cache.unlink()
            plain.append(memcli(top, "hook", "claude", "session-start", env=env))
        cache.write_bytes(kept)
        shutil.rmtree(top / ".memcli" / ".cache" / "sessions", ignore_errors=True)

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, n={len(values)})"

    kinds: dict[str, int] = {}
    for verdict in report["stale"]:
        for reason in verdict["reasons"]:
            kinds[reason["kind"]] = kinds.get(reason["kind"], 0) + 1
    print(f"stale memories: {len(report['stale'])} of {report['memories']}; reasons {kinds}; "
          f"e.g. {report['stale'][0]['note'] if report['stale'] else '-'}")
    print(f"memcli stale --refresh (every memory judged): {ms(cold)}")
    print(f"memcli stale (cached at this HEAD):            {ms(warm)}")
    print(f"session-start hook, marks in the cache:        {ms(marked)}")
    print(f"session-start hook, no verdicts:               {ms(plain)}")
    print(f"difference of the medians: {(statistics.median(marked) - statistics.median(plain)) * 1000:+.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
