"""What the semantic retriever costs: the speed goals of hybrid retrieval, measured side by side.

    python bench/semantic_speed.py [--size 10000] [--calls 40] [--repeat 9] [--parts 1,2,3,4,5]
                                   [--workdir /tmp/memcli-bench] [--baseline MEMCLI] [--sessions 3]

Needs ``memcli[semantic-offline]`` in the environment of ``--memcli``. On the generated
workspace of ``bench/generate.py`` (``<workdir>/ws-<size>``, shared with ``bench/run.py``
and ``bench/mcp_bench.py``), whose memories are embedded once (``memcli index rebuild
--embed``; kept while ``<workdir>/ws-<size>.embedded`` exists), it measures three pairs,
each in alternating rounds so that the machine's load falls on both sides alike:

1. the MCP ``recall`` tool call in one warm session, the server started with
   ``MEMCLI_SEMANTIC=off`` (lexical) and with the model (hybrid): the round trip the client
   sees (goal: hybrid at most 30 ms over lexical at 10,000 memories);
2. with no warm process anywhere, ``memcli recall`` and the Claude Code prompt hook with
   ``[search] semantic`` left at ``auto`` against ``off``: a whole process each (goal: no
   slower: without a warm model they look for its socket and answer lexically);
3. ``memcli remember`` (with its commit) while a warm MCP server runs, ``auto`` (the write
   asks the warm model for its vector and its close memories) against ``off`` (goal: at
   most 50 ms more at 10,000);
4. ``memcli remember`` with no warm process anywhere, ``auto`` (the extra installed: the
   write looks for the socket, finds none, and writes as without it) against ``off``;
5. the steps ``auto`` adds to a write, in this process (``service.semantic.EarlyClose``
   before ``service.write.remember`` and its ``result`` after), with no warm process and with
   a warm MCP server: the difference alone, without the whole processes' start-up noise.

``--parts 3,4,5`` measures only those (default: all). ``--baseline EXE`` measures part 3 for
another memcli executable too (an earlier version: before and after a change), in the same
run, the two versions' server sessions alternating for ``--sessions`` rounds.

Prints medians (and min/max) per side and the difference of the medians, with the load
average before and after. Numbers, not assertions: see docs/benchmark.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from mcp_bench import QUERIES, load, workspace  # noqa: E402

_T = TypeVar("_T")

PROMPT = "why does the deploy of the staging cache fail after the migration?"


def embedded(ws: Path, workdir: Path, size: int, memcli: str, env: dict[str, str]) -> None:
    """Embed every memory of ``ws`` once (``index rebuild --embed``), kept by a marker file."""
    marker = workdir / f"ws-{size}.embedded"
    if marker.exists():
        return
    started = time.perf_counter()
    subprocess.run([memcli, "-w", str(ws), "index", "rebuild", "--embed"], check=True, capture_output=True,
                   env={**env, "MEMCLI_SEMANTIC": "on"})
    marker.write_text(f"embedded in {time.perf_counter() - started:.0f} s\n", encoding="utf-8")
    print(f"embedded {size} memories in {time.perf_counter() - started:.0f} s", flush=True)


def ms(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1000:7.1f} ms  (min {min(values) * 1000:.1f}, "
            f"max {max(values) * 1000:.1f}, n={len(values)})")


def pair(label: str, lexical: list[float], hybrid: list[float], goal: str) -> None:
    diff = (statistics.median(hybrid) - statistics.median(lexical)) * 1000
    print(f"{label}\n  off : {ms(lexical)}\n  auto: {ms(hybrid)}\n  difference of the medians: "
          f"{diff:+.1f} ms  (goal: {goal})", flush=True)


async def mcp_calls(memcli: str, ws: Path, env: dict[str, str], calls: int) -> tuple[list[float], str]:
    """One MCP session: ``calls`` recall tool calls after warm-ups (the model up, each query
    asked once, two seconds for the background backfill); the times and the retriever."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli, args=["-w", str(ws), "mcp"], env=env, cwd=str(ws))
    times: list[float] = []
    answered = "?"
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            for _ in range(30):  # the model loads in the background: wait until it answers
                warm = await client.call_tool("recall", {"query": "warm up the model"})
                answered = (warm.structured_content or {}).get("retriever", "lexical")
                if env.get("MEMCLI_SEMANTIC") == "off" or answered != "lexical":
                    break
                await asyncio.sleep(1)
            for query in QUERIES:  # each query text once untimed (a process keeps its query vectors)
                await client.call_tool("recall", {"query": query, "limit": 10})
            await asyncio.sleep(2)  # the backfill embeds what earlier runs' remembers added
            for i in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("recall", {"query": QUERIES[i % len(QUERIES)], "limit": 10})
                times.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"recall failed: {result.content}")
    return times, answered


def timed(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return elapsed


def alternate(make: Callable[[str, int], float], repeat: int) -> tuple[list[float], list[float]]:
    """``repeat`` rounds of ``make("off", i)`` then ``make("auto", i)``, after one warm-up of each."""
    make("off", -1), make("auto", -1)
    off, auto = [], []
    for i in range(repeat):
        off.append(make("off", i))
        auto.append(make("auto", i))
    return off, auto


async def with_warm_server(memcli: str, ws: Path, env: dict[str, str], work: Callable[[], _T]) -> _T:
    """Run ``work()`` (blocking) while a hybrid MCP server of ``ws`` is up and answering."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli, args=["-w", str(ws), "mcp"], env=env, cwd=str(ws))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            for _ in range(60):
                warm = await client.call_tool("recall", {"query": "warm up the model"})
                if (warm.structured_content or {}).get("retriever", "lexical") != "lexical":
                    break
                await asyncio.sleep(1)
            else:
                raise SystemExit("the MCP server's model did not come up in 60 s")
            return await asyncio.to_thread(work)


def close_steps(ws: Path, repeat: int) -> list[float]:
    """``repeat`` writes in this process as ``memcli remember`` makes them: the question to a
    warm process asked before the write (``semantic.EarlyClose``), its answer read after; the
    time of those two steps alone (the write between them is not counted)."""
    os.environ.pop("MEMCLI_SEMANTIC", None)
    sys.path.insert(0, str(HERE.parent))
    from memcli.service import Ctx
    from memcli.service.semantic import EarlyClose
    from memcli.service.write import WriteOptions, remember

    times = []
    for i in range(repeat):
        ctx = Ctx.open(str(ws), "alice")
        text = f"Close-step note {i} {time.time_ns()}: the staging cache is warmed after a deploy."
        started = time.perf_counter()
        early = EarlyClose(ctx, text, None, "project")
        asked = time.perf_counter() - started
        result = remember(ctx, text, WriteOptions(scope="project"))
        started = time.perf_counter()
        early.result(ctx, result)
        times.append(asked + time.perf_counter() - started)
        time.sleep(0.5)  # the server's backfill of the write, as between two commands
    return times


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="memories in the workspace (default 10000)")
    parser.add_argument("--calls", type=int, default=40, help="MCP recall calls per session")
    parser.add_argument("--sessions", type=int, default=3, help="MCP sessions per side, alternating")
    parser.add_argument("--repeat", type=int, default=9, help="rounds of each whole-process command")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memcli-bench"), help="where workspaces live")
    parser.add_argument("--memcli", default=str(Path(sys.executable).parent / "memcli"),
                        help="memcli executable (default: the one beside this Python)")
    parser.add_argument("--parts", default="1,2,3,4,5", help="which measurements (default: 1,2,3,4,5)")
    parser.add_argument("--baseline", help="part 3 only: another memcli executable (an earlier version) measured "
                                           "in the same run, its server sessions alternating with this one's "
                                           "(--sessions rounds)")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",")}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEMCLI_"))}
    base["MEMCLI_ACTOR"] = "alice"
    print(f"load average before: {load()} ({os.cpu_count()} cores); memcli {args.memcli}", flush=True)
    ws = workspace(args.workdir, args.size, args.memcli)
    embedded(ws, args.workdir, args.size, args.memcli, base)
    off_env, auto_env = {**base, "MEMCLI_SEMANTIC": "off"}, base

    # 1. the MCP recall tool call, lexical and hybrid servers in alternating sessions
    if "1" in parts:
        lexical, hybrid, answered = [], [], "?"
        for _ in range(args.sessions):
            lexical += asyncio.run(mcp_calls(args.memcli, ws, off_env, args.calls))[0]
            times, answered = asyncio.run(mcp_calls(args.memcli, ws, auto_env, args.calls))
            hybrid += times
        pair(f"1. MCP recall tool call, {args.size} memories, queries {QUERIES} (hybrid side: {answered})",
             lexical, hybrid, "at most +30 ms")

    # 2. no warm process: recall and the prompt hook, auto against off
    def recall(mode: str, i: int) -> float:
        return timed([args.memcli, "-w", str(ws), "recall", QUERIES[i % len(QUERIES)]],
                     off_env if mode == "off" else auto_env)

    hook_input = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": PROMPT,
                             "cwd": str(ws)})

    def hook(mode: str, i: int) -> float:
        return timed([args.memcli, "-w", str(ws), "hook", "claude", "user-prompt-submit"],
                     off_env if mode == "off" else auto_env, hook_input)

    if "2" in parts:
        pair("2a. `memcli recall`, no warm process", *alternate(recall, args.repeat), "no slower")
        pair("2b. Claude Code prompt hook, no warm process", *alternate(hook, args.repeat), "no slower")

    # 3. remember while a hybrid MCP server is warm; 4. with none
    def remember_by(memcli: str) -> Callable[[str, int], float]:
        def remember(mode: str, i: int) -> float:
            text = f"Semantic bench note {mode} {i} {time.time_ns()}: the staging cache is warmed after each deploy."
            return timed([memcli, "-w", str(ws), "remember", text], off_env if mode == "off" else auto_env)
        return remember
    remember = remember_by(args.memcli)

    if "3" in parts:
        versions = [("this", args.memcli)] + ([("baseline", args.baseline)] if args.baseline else [])
        got: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _ in versions}
        for round_ in range(args.sessions if args.baseline else 1):  # server sessions, the versions alternating
            for name, memcli in (versions if round_ % 2 == 0 else versions[::-1]):
                off, auto = asyncio.run(with_warm_server(memcli, ws, auto_env,
                                                         lambda: alternate(remember_by(memcli), args.repeat)))
                got[name][0].extend(off)
                got[name][1].extend(auto)
        for name, memcli in versions:
            pair(f"3. `memcli remember` (with its commit) while a warm MCP server runs ({name}: {memcli})",
                 *got[name], "at most +50 ms")
    if "4" in parts:
        pair("4. `memcli remember` (with its commit), no warm process", *alternate(remember, args.repeat),
             "at most +50 ms")
    if "5" in parts:
        alone = close_steps(ws, args.repeat)
        warm = asyncio.run(with_warm_server(args.memcli, ws, auto_env, lambda: close_steps(ws, args.repeat)))
        print("5. the steps `auto` adds to `remember` (EarlyClose before the write, its result after; in process)",
              flush=True)
        print(f"  no warm process: {ms(alone)}\n  a warm MCP server: {ms(warm)}  (goal: at most +50 ms)", flush=True)
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
