"""Tune the hybrid ranking and the write-time threshold on the probe set (issue 18 points 2 and 5).

Usage (with ``memcli[semantic-offline]`` installed)::

    python bench/semantic_tune.py [--grid] [--json OUT]

Builds a throw-away workspace of ``bench/semantic_probe.py``'s memories through memcli's own
``remember``, embeds them with the package-shipped model, and reports recall@5 and MRR per
kind for the lexical retriever alone and for ``HybridRetriever`` (``--grid``: over a grid of
``WEAK_COVERAGE``, ``LEXICAL_WEIGHT`` and ``SEMANTIC_FLOOR``), plus, for write-time help,
how many of the old→new pairs the nearest live memory finds above each threshold and how
many unrelated new memories get a suggestion. TUNE data only: the figures to report on
are the held-out set's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semantic_probe import LEXICAL, MEMORIES, PARAPHRASE, UNRELATED, UPDATES

if TYPE_CHECKING:
    from memcli.index import Retriever
    from memcli.index.hybrid import HybridRetriever
    from memcli.service import Ctx


def workspace(root: Path, memories: dict[str, str]) -> tuple[object, dict[str, str]]:
    """A workspace at ``root`` holding ``memories``; ``(ctx, probe id -> memory id)``."""
    import os

    os.environ.setdefault("MEMCLI_ACTOR", "bench")
    subprocess.run([sys.executable, "-m", "memcli", "init", str(root)], check=True, capture_output=True)
    from memcli.service import Ctx
    from memcli.service.write import WriteOptions, remember

    ids = {}
    for key, text in memories.items():
        ctx = Ctx.open(str(root))
        ids[key] = remember(ctx, text, WriteOptions(scope="project")).memory.id
    return Ctx.open(str(root)), ids


def rank_of(hits: list, targets: set[str]) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if h.memory.id in targets), None)


def evaluate(ctx: Ctx, retriever_of: Callable[[], Retriever], cases: list[tuple[str, list[str], str]],
             ids: dict[str, str]) -> dict:
    from memcli.service.read import Filters, build_query

    per: dict[str, list[tuple[bool, float]]] = {}
    for text, targets, kind in cases:
        query = build_query(ctx, text, Filters(limit=10))
        hits = retriever_of().search(query)
        rank = rank_of(hits, {ids[t] for t in targets})
        per.setdefault(kind, []).append((rank is not None and rank <= 5, 1 / rank if rank else 0.0))
    return {k: {"recall@5": round(sum(r for r, _ in v) / len(v), 3), "mrr": round(sum(m for _, m in v) / len(v), 3)}
            for k, v in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    from memcli.index import hybrid
    from memcli.index.embed import load
    from memcli.index.hybrid import HybridRetriever, LocalSemantic
    from memcli.index.vectors import backfill

    root = Path(tempfile.mkdtemp()) / "ws"
    started = time.perf_counter()
    ctx, ids = workspace(root, {**MEMORIES, **{f"old{i}": old for i, (old, _, _) in enumerate(UPDATES)}})
    print(f"workspace of {len(ids)} memories in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    embedder = load()
    catalog = ctx.catalog()
    backfill(catalog.index.db, embedder)
    cases = [*PARAPHRASE, *[(q, t, "lexical") for q, t in LEXICAL]]
    out: dict = {"lexical": evaluate(ctx, catalog.retriever, cases, ids)}
    queries: dict = {}

    def hybrid_retriever() -> HybridRetriever:
        return HybridRetriever(catalog.retriever(), LocalSemantic(catalog, embedder, queries))

    out["hybrid"] = evaluate(ctx, hybrid_retriever, cases, ids)
    if args.grid:
        grid = {}
        for weak in (0.4, 0.5, 0.6, 0.7, 0.8):
            for weight in (0.1, 0.2, 0.3, 0.4, 0.5):
                for floor in (0.2, 0.25, 0.3):
                    hybrid.WEAK_COVERAGE, hybrid.LEXICAL_WEIGHT, hybrid.SEMANTIC_FLOOR = weak, weight, floor
                    grid[f"weak={weak} w={weight} floor={floor}"] = evaluate(ctx, hybrid_retriever, cases, ids)
        out["grid"] = grid
    # write-time help: the nearest live memory of each new text (its old one is among them)
    semantic = LocalSemantic(catalog, embedder, queries)
    from memcli.index import Query

    def nearest(text: str) -> tuple[str, float]:
        probe = Query(text=text, scopes=["project"], now=ctx.now, limit=1, actor=ctx.actor)
        (memory, score), = semantic.scores(probe, 1, [])[0]
        return memory.id, score

    pairs = []
    for i, (_, new, same) in enumerate(UPDATES):
        found, score = nearest(new)
        right = found == ids[f"old{i}"] or found in {ids[s] for s in same}
        pairs.append((right, score))
    unrelated = [nearest(text)[1] for text in UNRELATED]
    out["write_time"] = {}
    for threshold in (0.45, 0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.65):
        out["write_time"][threshold] = {
            "found": sum(r and s >= threshold for r, s in pairs), "pairs": len(pairs),
            "wrong_suggestion": sum(not r and s >= threshold for r, s in pairs),
            "unrelated_flagged": sum(s >= threshold for s in unrelated), "unrelated": len(unrelated)}
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).write_text(text)
    for name in ("lexical", "hybrid"):
        print(name, json.dumps(out[name]))
    if args.grid:
        def total(v: dict) -> float:
            return sum(v[k]["recall@5"] + v[k]["mrr"] for k in v)
        for name, value in sorted(out["grid"].items(), key=lambda kv: -total(kv[1]))[:12]:
            print(name, json.dumps(value))
    for threshold, value in out["write_time"].items():
        print("close_to", threshold, json.dumps(value))


if __name__ == "__main__":
    main()
