"""Tune the prompt hook's selection rule on the tune and heldout prompts (issue 18 point 4).

    python bench/prompt_tune.py [--semantic] [--pool N] [--grid] [--splits tune,heldout]

Builds ``bench/heldout.py``'s workspace (with ``--semantic``, the model loaded as
``memcli mcp`` loads it), asks recall once per prompt for the first ``--pool`` hits, as the
prompt hook asks it (``service.hooks.prompt_words``, then ``recall``), and then scores the
hook's selection (``service.hooks.prompt_selection``) over those hits, for the current
constants and, with ``--grid``, over a grid of them (``bench/prompt_learn.py`` fits the
weights of the selection with a warm model): micro precision and recall
(``bench/heldout.py``'s definitions) and the prompts that need a memory and got nothing.

TUNING DATA ONLY: run it on ``tune`` and ``heldout`` (the default), and since the third
round of this work on ``fresh`` and ``fresh2`` too, since the fourth on ``fresh3`` (seen by then, so
no longer held out). ``fresh4`` is reported with ``bench/heldout.py`` and never looked at here.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import heldout
import heldout_data as data

REPORTED = {"fresh4"}


def gather(ctx: Any, warm: Any, prompts: list[data.Prompt], pool: int) -> list[tuple[data.Prompt, list, list]]:
    """``(prompt, its content words, recall's first ``pool`` hits)`` for each prompt."""
    from memcli.agents.transcript import strip_injected
    from memcli.service.hooks import prompt_words
    from memcli.service.read import Filters, recall

    out = []
    for prompt in prompts:
        said = strip_injected(prompt[0])[:2000]
        words = prompt_words(said)
        hits = [] if not words else recall(
            ctx, " ".join(w.text for w in words), Filters(limit=pool),
            using=warm.retriever(ctx) if warm is not None else None, meaning=said)
        out.append((prompt, words, hits))
    return out


@contextmanager
def constants(**values: float) -> Iterator[None]:
    """``service.hooks`` constants set to ``values`` for the block (names without ``PROMPT_``)."""
    from memcli.service import hooks

    old = {name: getattr(hooks, f"PROMPT_{name}") for name in values}
    for name, value in values.items():
        setattr(hooks, f"PROMPT_{name}", value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(hooks, f"PROMPT_{name}", value)


def score(gathered: list[tuple[data.Prompt, list, list]], floor: float, hybrid: bool = False) -> dict[str, float]:
    """The prompt hook's figures over ``gathered`` with the current constants."""
    import copy

    from memcli.service import hooks

    injected = good = wanted = found = empty = 0
    for (_, want, ok), words, hits in gathered:
        pool = copy.deepcopy(hits)
        given = [h.memory.id for h in hooks.prompt_selection(pool, words, floor, hybrid)] if words else []
        injected += len(given)
        good += sum(k in want or k in ok for k in given)
        wanted += len(want)
        found += sum(k in given for k in want)
        empty += bool(want) and not given
    return {"precision": good / injected if injected else 1.0, "recall": found / wanted if wanted else 1.0,
            "empty": empty, "injected": injected}


def main(argv: list[str] | None = None) -> int:
    """Gather the hits once, then score the current rule (and a grid)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semantic", action="store_true")
    parser.add_argument("--pool", type=int, default=20)
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--splits", default="tune,heldout")
    args = parser.parse_args(argv)
    splits = args.splits.split(",")
    if REPORTED & set(splits):
        print(f"{', '.join(sorted(REPORTED & set(splits)))}: reported only, not tuned on", file=sys.stderr)
        return 2
    for name in list(os.environ):
        if name.startswith("MEMCLI_"):
            del os.environ[name]
    prompts = [p for s in splits for p in data.SPLITS[s][1]]
    with tempfile.TemporaryDirectory(prefix="memcli-prompt-tune-") as tmp:
        workspace = heldout.build(Path(tmp) / "ws")
        ctx = heldout.open_ctx(workspace)
        ctx.catalog()
        warm = heldout.start_warm(workspace) if args.semantic else None
        try:
            gathered = gather(ctx, warm, prompts, args.pool)
        finally:
            if warm is not None:
                warm.close()
    floor = 0.35
    print(f"{len(prompts)} prompts of {', '.join(splits)}; current rule:", score(gathered, floor, args.semantic))
    wanted = sum(len(want) for (_, want, _), _, _ in gathered)
    for k in (1, 2, 3, 5, 10, args.pool):
        found = sum(key in [h.memory.id for h in hits[:k]] for (_, want, _), _, hits in gathered for key in want)
        print(f"  wanted among recall's first {k:>2}: {found}/{wanted} = {found / wanted:.3f}")
    if args.grid:  # the lexical rule's constants, or (--semantic) the scored selection's cut and limit
        names = ("CUT", "SCORED_LIMIT") if args.semantic else ("MIN_HELD", "MIN_SCORE", "LIMIT")
        grid = (itertools.product((0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7), (1, 2, 3, 4)) if args.semantic
                else itertools.product((1, 2, 3), (0.3, 0.4, 0.5, 0.6, 0.7), (2, 3, 4)))
        rows = []
        for values in grid:
            with constants(**dict(zip(names, values))):
                rows.append((values, score(gathered, floor, args.semantic)))
        # the Pareto front of precision and recall (fewest empty answers first among equals)
        rows.sort(key=lambda r: (-r[1]["recall"], -r[1]["precision"], r[1]["empty"]))
        print("Pareto front:", ", ".join(names))
        best = -1.0
        for values, result in rows:
            if result["precision"] > best:
                best = result["precision"]
                print(" ", values, {k: round(v, 3) for k, v in result.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
