"""Ranking quality on the evaluation set of ``bench/eval_data.py`` (no timing: any machine will do).

    python bench/eval.py [--floor 0.5] [--verbose]

Builds a throw-away workspace holding the set's memories (one file each, id = its key),
then measures, through memcli's own service functions on a real index:

* the prompt hook (``user-prompt-submit``, each prompt in a fresh session): micro-averaged
  precision (injected memories that are wanted or fair, of all injected) and recall
  (wanted memories injected, of all wanted), and the prompts that injected noise;
* ranked ``recall`` (top-10) per kind of query: recall@5 (the memory looked for is in the
  first five) and MRR (mean of 1 / its rank, 0 when not in the top 10).

``tests/test_ranking.py`` runs the same functions and holds them above floors.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eval_data

if TYPE_CHECKING:
    from memcli.service import Ctx

STAMP = "2026-11-01T09:00:00Z"


def build(root: Path) -> Path:
    """A workspace at ``root`` holding every memory of the set, active, in ``project``."""
    from memcli.service.setup import init

    workspace = init(root)[0]
    folder = workspace / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    for key, text in eval_data.MEMORIES.items():
        (folder / f"{key}.md").write_text(
            f"---\nid: {key}\nscope: project\ncategory: fact\nstatus: active\nimportance: 3\n"
            f"createdAt: {STAMP}\nupdatedAt: {STAMP}\n---\n{text}\n", encoding="utf-8")
    return workspace


def open_ctx(workspace: Path) -> Ctx:
    """A service context on ``workspace`` as actor ``alice`` (the index is built on first use)."""
    from memcli.service import Ctx

    return Ctx.open(str(workspace), "alice")


@dataclass
class PromptScore:
    """The prompt hook over the set: precision, recall and the noisy prompts."""

    precision: float
    recall: float
    injected: int
    wanted: int
    noise: list[tuple[str, list[str]]] = field(default_factory=list)
    missed: list[tuple[str, list[str]]] = field(default_factory=list)


def score_prompts(ctx: Ctx, floor: float | None = None) -> PromptScore:
    """Run every prompt of the set through the prompt hook's selection (a fresh session each)."""
    from memcli.service.hooks import _prompt_block

    good = injected = found = wanted = 0
    noise, missed = [], []
    for prompt, want, ok in eval_data.PROMPTS:
        given = _prompt_block(ctx, prompt, set(), floor=floor).included
        extra = [m for m in given if m not in want and m not in ok]
        lost = [m for m in want if m not in given]
        injected += len(given)
        good += len(given) - len(extra)
        found += len(want) - len(lost)
        wanted += len(want)
        if extra:
            noise.append((prompt, extra))
        if lost:
            missed.append((prompt, lost))
    return PromptScore(good / injected if injected else 1.0, found / wanted if wanted else 1.0,
                       injected, wanted, noise, missed)


@dataclass
class KindScore:
    """Ranked recall for one kind of query."""

    kind: str
    queries: int
    recall_at_5: float
    mrr: float
    misses: list[tuple[str, int | None]] = field(default_factory=list)


def score_queries(ctx: Ctx) -> list[KindScore]:
    """recall@5 and MRR per kind of query (top-10 ranked recall)."""
    from memcli.service.read import Filters, recall

    scores = []
    for kind, queries in eval_data.QUERIES.items():
        at5 = rr = 0.0
        misses = []
        for text, key in queries:
            order = [h.memory.id for h in recall(ctx, text, Filters(limit=10))]
            rank = order.index(key) + 1 if key in order else None
            at5 += rank is not None and rank <= 5
            rr += 1 / rank if rank else 0.0
            if rank != 1:
                misses.append((text, rank))
        scores.append(KindScore(kind, len(queries), at5 / len(queries), rr / len(queries), misses))
    return scores


def report(prompts: PromptScore, kinds: list[KindScore], verbose: bool) -> str:
    """The printed result."""
    lines = [f"memories: {len(eval_data.MEMORIES)}, prompts: {len(eval_data.PROMPTS)}",
             "", "prompt hook (user-prompt-submit)",
             f"  precision {prompts.precision:.3f}  recall {prompts.recall:.3f}"
             f"  (injected {prompts.injected}, wanted {prompts.wanted})"]
    if verbose:
        lines += [f"  noise:  {p!r} -> {', '.join(e)}" for p, e in prompts.noise]
        lines += [f"  missed: {p!r} -> {', '.join(m)}" for p, m in prompts.missed]
    lines += ["", "ranked recall (top 10)", f"  {'kind':<18}{'queries':>8}{'recall@5':>10}{'MRR':>8}"]
    for k in kinds:
        lines.append(f"  {k.kind:<18}{k.queries:>8}{k.recall_at_5:>10.3f}{k.mrr:>8.3f}")
        if verbose:
            lines += [f"      {q!r}: rank {r}" for q, r in k.misses]
    total = sum(k.queries for k in kinds)
    lines.append(f"  {'all':<18}{total:>8}{sum(k.recall_at_5 * k.queries for k in kinds) / total:>10.3f}"
                 f"{sum(k.mrr * k.queries for k in kinds) / total:>8.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", type=float, default=None,
                        help="the prompt hook's relevance floor (default: the workspace default)")
    parser.add_argument("--verbose", action="store_true", help="list noisy prompts and imperfect queries")
    args = parser.parse_args(argv)
    for name in list(os.environ):
        if name.startswith("MEMCLI_"):
            del os.environ[name]
    with tempfile.TemporaryDirectory(prefix="memcli-eval-") as tmp:
        ctx = open_ctx(build(Path(tmp) / "ws"))
        print(report(score_prompts(ctx, args.floor), score_queries(ctx), args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
