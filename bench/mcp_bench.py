"""Benchmark of the MCP server (`memcli mcp`): start-up to its first answer, and the `recall` tool call.

    python bench/mcp_bench.py [--size 10000] [--starts 5] [--calls 50] [--workdir /tmp/memcli-bench]

Drives the real server through the MCP SDK's stdio client, as an agent would, on the
generated workspace of ``bench/generate.py`` (reused from ``<workdir>/ws-<size>`` when
``bench/run.py`` made it). Reports, with the machine's load average before and after:

- start-up: from spawning ``memcli -w WS mcp`` to the answer of ``initialize``, and to
  the answer of the first ``tools/list`` (median, min, max over ``--starts`` servers);
- ``recall``: the round trip of one ``tools/call recall`` seen by the client, over
  ``--calls`` calls in one session after one warm-up call (median, p90, min, max),
  with queries that hit one, hundreds and none of the memories.

Goals (issue 11): start-up under 0.5 s, a recall call under 20 ms at 10,000 memories.
(Not named ``mcp.py``: a script of that name beside ``generate.py`` would shadow the SDK.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

QUERIES = ["zanzibarflux", "deploy", "缓存", "flaky test retry", "postgres migration lock", "nothingmatchesthis"]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def workspace(workdir: Path, size: int, memcli: str) -> Path:
    """The generated workspace of ``size`` memories (made once, reused), with a built index."""
    import subprocess

    from generate import generate

    ws = workdir / f"ws-{size}"
    marker = workdir / f"ws-{size}.ready"
    if not (marker.exists() and ws.is_dir()):
        import shutil

        shutil.rmtree(ws, ignore_errors=True)
        workdir.mkdir(parents=True, exist_ok=True)
        generate(size, ws, 7, memcli)
        marker.write_text(f"count={size} seed=7\n", encoding="utf-8")
    subprocess.run([memcli, "-w", str(ws), "index", "status"], check=True, capture_output=True)  # index built
    return ws


async def one_start(memcli: str, ws: Path, env: dict[str, str]) -> tuple[float, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli, args=["-w", str(ws), "mcp"], env=env, cwd=str(ws))
    started = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            initialized = time.perf_counter() - started
            await client.list_tools()
            listed = time.perf_counter() - started
    return initialized, listed


async def recalls(memcli: str, ws: Path, env: dict[str, str], calls: int,
                  gap: float = 0.0) -> tuple[list[float], int]:
    from anyio import sleep as anyio_sleep
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli, args=["-w", str(ws), "mcp"], env=env, cwd=str(ws))
    times, hits = [], 0
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("recall", {"query": "warm up"})
            for i in range(calls):
                query = QUERIES[i % len(QUERIES)]
                if gap:
                    await anyio_sleep(gap)  # an agent thinks between calls: the walk a call starts is done
                started = time.perf_counter()
                result = await client.call_tool("recall", {"query": query, "limit": 10})
                times.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"recall {query!r} failed: {result.content}")
                hits += len(result.structured_content["hits"])
    return times, hits


async def around_remember(memcli: str, ws: Path, env: dict[str, str], rounds: int) -> tuple[list[float], list[float]]:
    """In one warm session, ``rounds`` times: a ``recall`` call with no write before it, then a
    ``remember`` call (untimed), then the same ``recall`` (issue 21: a recall right after a
    remember costs at most twice a plain one). Returns (plain recall seconds, after-remember
    recall seconds), one each per round."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli, args=["-w", str(ws), "mcp"], env=env, cwd=str(ws))
    plain: list[float] = []
    after: list[float] = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("recall", {"query": "warm up"})
            for i in range(rounds + 1):
                query = QUERIES[i % len(QUERIES)]
                for out in (plain, after):
                    if out is after:
                        made = await client.call_tool("remember", {
                            "text": f"MCP bench note {i} on the release checklist, taken at {time.time_ns()}"})
                        if made.is_error:
                            raise SystemExit(f"remember failed: {made.content}")
                    started = time.perf_counter()
                    result = await client.call_tool("recall", {"query": query, "limit": 10})
                    if i:  # the first round warms both paths
                        out.append(time.perf_counter() - started)
                    if result.is_error:
                        raise SystemExit(f"recall {query!r} failed: {result.content}")
    return plain, after


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (f"median {statistics.median(values) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, "
            f"min {ordered[0] * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms (n={len(values)})")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="memories in the workspace (default 10000)")
    parser.add_argument("--starts", type=int, default=5, help="servers started for the start-up time")
    parser.add_argument("--calls", type=int, default=50, help="recall calls measured in one session")
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds between two recall calls (0: back to back)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memcli-bench"), help="where workspaces live")
    parser.add_argument("--memcli", default=str(Path(sys.executable).parent / "memcli"),
                        help="memcli executable (default: the one beside this Python)")
    args = parser.parse_args(argv)
    env = {**os.environ, "MEMCLI_ACTOR": os.environ.get("MEMCLI_ACTOR", "alice")}
    print(f"load average before: {load()} ({os.cpu_count()} cores)")
    ws = workspace(args.workdir, args.size, args.memcli)
    firsts, lists = [], []
    for _ in range(args.starts):
        initialized, listed = anyio.run(one_start, args.memcli, ws, env)
        firsts.append(initialized)
        lists.append(listed)
    print(f"start-up to the initialize answer, {args.size} memories: {ms(firsts)}  (goal < 500 ms)")
    print(f"start-up to the first tools/list answer: {ms(lists)}")
    times, hits = anyio.run(recalls, args.memcli, ws, env, args.calls, args.gap)
    print(f"recall tool call, {args.size} memories, {args.gap:g} s apart, queries {QUERIES}: {ms(times)}  "
          "(goal < 20 ms); "
          f"{hits} hits in all")
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
