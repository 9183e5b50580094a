"""Fit the prompt hook's hybrid selection (issue 18 point 4) on the prompt splits it may be tuned on.

    python bench/prompt_learn.py [--splits tune,heldout,fresh,fresh2,fresh3] [--pool 20] [--cache PATH] [--model DIR]

Builds ``bench/heldout.py``'s workspace with the model loaded as ``memcli mcp`` loads it,
asks recall once per prompt for the first ``--pool`` hits as the prompt hook asks it
(``bench/prompt_tune.gather``), and describes each hit by the features the hook can read
from it (``service.hooks.prompt_features``: the model's score, its distance to the best and
its standing among the pool's scores, the lexical coverage and tier, the rank). Then:

1. leave-one-split-out: a logistic regression (numpy, L2) fitted on the other splits scores
   each hit of the left-out split, and the selection (``service.hooks.select_scored``) is
   scored as ``bench/prompt_tune.py`` scores the hook, over a grid of its cut, its limit, its
   fallback (``first``) and the share of the first hit's probability a further hit must reach
   (``relative``), beside the hook's selection as it is
   (``service.hooks.prompt_selection``);
2. the fit on every split given, whose weights ``service.hooks.PROMPT_WEIGHTS`` holds.

A hit counts as relevant when the prompt wants it or finds it fair (``want`` or ``ok``),
as precision counts them. TUNING DATA ONLY: ``fresh4`` and ``fresh5`` are refused here
(``fresh3`` was reported only until issue 18's fourth round, then tuned on).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import heldout
import heldout_data as data
import prompt_tune

REPORTED = {"fresh4", "fresh5"}


def gathered(splits: list[str], pool: int, cache: Path | None,
             model: str = "") -> dict[str, list[tuple[data.Prompt, list, list]]]:
    """``split -> [(prompt, words, hits)]``, hybrid, from ``cache`` when it holds these splits;
    ``model``: what ``[search] model`` takes ('' for the package-shipped model)."""
    if cache is not None and cache.exists():
        found = pickle.loads(cache.read_bytes())
        if set(splits) <= set(found):
            return {s: found[s] for s in splits}
    for name in list(os.environ):
        if name.startswith("MEMCLI_"):
            del os.environ[name]
    if model:
        os.environ["MEMCLI_EMBED_MODEL"] = model
    out = {}
    with tempfile.TemporaryDirectory(prefix="memcli-prompt-learn-") as tmp:
        workspace = heldout.build(Path(tmp) / "ws")
        ctx = heldout.open_ctx(workspace)
        ctx.catalog()
        warm = heldout.start_warm(workspace)
        try:
            for split in splits:
                out[split] = prompt_tune.gather(ctx, warm, data.SPLITS[split][1], pool)
        finally:
            warm.close()
    if cache is not None:
        cache.write_bytes(pickle.dumps(out))
    return out


def table(rows: list[tuple[data.Prompt, list, list]]) -> tuple[Any, Any, list[tuple[int, int]]]:
    """Features, labels and ``(prompt index, hit index)`` of every hit of ``rows``."""
    import numpy as np

    from memcli.service.hooks import prompt_features

    x, y, where = [], [], []
    for p, ((_, want, ok), words, hits) in enumerate(rows):
        for h, feats in enumerate(prompt_features(hits, words)):
            x.append(feats)
            y.append(float(hits[h].memory.id in want or hits[h].memory.id in ok))
            where.append((p, h))
    return np.array(x, dtype=float).reshape(-1, 0 if not x else len(x[0])), np.array(y), where


def fit(x: Any, y: Any, l2: float = 1.0, steps: int = 50) -> Any:
    """Logistic regression weights (bias last) by Newton's method with an L2 penalty."""
    import numpy as np

    a = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(a.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-a @ w))
        grad = a.T @ (p - y) + l2 * np.r_[w[:-1], 0]
        hess = (a * (p * (1 - p))[:, None]).T @ a + l2 * np.diag(np.r_[np.ones(len(w) - 1), 0])
        w -= np.linalg.solve(hess + 1e-9 * np.eye(len(w)), grad)
    return w


def score_selection(rows: list[tuple[data.Prompt, list, list]], pick: Any) -> dict[str, float]:
    """P/R/empty of ``pick(words, hits) -> ids`` over ``rows`` (``prompt_tune.score``'s terms)."""
    injected = good = wanted = found = empty = extra = 0
    for (_, want, ok), words, hits in rows:
        given = pick(words, hits) if words else []
        injected += len(given)
        good += sum(k in want or k in ok for k in given)
        wanted += len(want)
        found += sum(k in given for k in want)
        empty += bool(want) and not given
        extra += not want and bool(given)
    return {"P": round(good / injected if injected else 1.0, 3), "R": round(found / wanted if wanted else 1.0, 3),
            "empty": empty, "noise_prompts": extra, "injected": injected}


def current(pool: int) -> Any:
    """The hook's selection as it is (``service.hooks.prompt_selection`` of a hybrid answer)."""
    from memcli.service import hooks

    def pick(words: list, hits: list) -> list[str]:
        return [h.memory.id for h in hooks.prompt_selection(hits[:pool], words, 0.35, True)]
    return pick


def learned(weights: Any, cut: float, limit: int, first: float, relative: float = 0.0) -> Any:
    """The scored selection with ``weights`` and these settings (``service.hooks.select_scored``)."""
    from memcli.service.hooks import select_scored

    def pick(words: list, hits: list) -> list[str]:
        return [h.memory.id for h in select_scored(hits, words, weights, cut, limit, first, relative=relative)]
    return pick


def main(argv: list[str] | None = None) -> int:
    """Gather, cross-validate, fit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="tune,heldout,fresh,fresh2,fresh3")
    parser.add_argument("--pool", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=None, help="keep the gathered hits here (pickle)")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--model", default="", help="the model to load instead of the package-shipped one "
                                                    "(what [search] model takes: a folder with model.onnx)")
    args = parser.parse_args(argv)
    splits = args.splits.split(",")
    if REPORTED & set(splits):
        print(f"{', '.join(sorted(REPORTED & set(splits)))}: reported only, not tuned on", file=sys.stderr)
        return 2
    import numpy as np

    rows = gathered(splits, args.pool, args.cache, args.model)
    for split in splits:
        wanted = sum(len(w) for (_, w, _), _, _ in rows[split])
        tops = {k: sum(key in [h.memory.id for h in hits[:k]] for (_, want, _), _, hits in rows[split] for key in want)
                for k in (1, 3, 5, 10, args.pool)}
        print(f"{split}: wanted among the first k hits:", {k: round(v / wanted, 3) for k, v in tops.items()},
              "current rule:", score_selection(rows[split], current(args.pool)))
    grid = list(itertools.product((0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6), (2, 3, 4), (0.15, 0.2, 0.25, 0.3, 1.0),
                                  (0.0, 0.5, 0.6, 0.7, 0.8)))
    totals: dict[tuple, list[dict[str, float]]] = {g: [] for g in grid}
    for left in splits:
        train = [r for s in splits if s != left for r in rows[s]]
        x, y, _ = table(train)
        w = fit(x, y, args.l2)
        for g in grid:
            totals[g].append(score_selection(rows[left], learned(w, *g)))
    print("leave-one-split-out (cut, limit, first, relative): mean P, R, empty, noise prompts over", splits)
    summary = []
    for g, results in totals.items():
        summary.append((g, round(float(np.mean([r["P"] for r in results])), 3),
                        round(float(np.mean([r["R"] for r in results])), 3), sum(r["empty"] for r in results),
                        sum(r["noise_prompts"] for r in results), [(r["P"], r["R"], r["empty"]) for r in results]))
    summary.sort(key=lambda s: (-s[2], -s[1]))
    best = -1.0
    for row in summary:
        if row[1] > best:
            best = row[1]
            print(" ", row)
    x, y, _ = table([r for s in splits for r in rows[s]])
    w = fit(x, y, args.l2)
    print("weights on every split (features of service.hooks.prompt_features, then the bias):",
          json.dumps([round(float(v), 3) for v in w]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
