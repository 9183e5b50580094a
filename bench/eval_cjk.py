"""Which way to split unsegmented CJK queries: memcli's vocabulary scheme, jieba or rjieba.

    python bench/eval_cjk.py [--count 10000]

Needs jieba and rjieba installed for their rows (``pip install jieba rjieba``; memcli does
not depend on them). Prints, per scheme:

* start-up: a fresh ``python -c`` that imports the segmenter and splits one query, beyond one
  that imports only memcli's retriever (the cost a hook would add on every prompt); median of 5;
* index size: an FTS5 table over the Chinese bodies of ``--count`` generated memories
  (bench/generate.py, seed 7), tokenized as memcli stores text (bigrams) or as jieba words;
* recall@5 and MRR of the evaluation set's "CJK unsegmented" queries (bench/eval_data.py),
  with each scheme splitting the query and memcli's bigram index matching the words.

Timings are only comparable on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eval as evaluation
import eval_data

if TYPE_CHECKING:
    from memcli.index.query import Word
    from memcli.service import Ctx

    #: memcli.index.query._split_piece's shape: a piece of text and the known-word test -> its words.
    Splitter = Callable[[str, Callable[[str], bool] | None], list[Word]]

#: What the hot path imports anyway (the ranked retriever): start-up is measured beyond it.
BASE = "import memcli.index.search"
STARTUP = {
    "vocabulary (memcli)": "import memcli.index.query as q; q.analyse('证书续期', lambda t: True)",
    "jieba": "import jieba; jieba.setLogLevel(60); jieba.lcut('证书续期')",
    "rjieba": "import rjieba; rjieba.cut('证书续期')",
}


def startup(code: str, runs: int = 5) -> float | None:
    """Median seconds ``python -c BASE; code`` takes beyond ``python -c BASE``, or None if it fails."""
    def timed(src: str) -> float:
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", src], check=True, capture_output=True)
        return time.perf_counter() - began

    try:
        code = f"{BASE}; {code}"
        timed(code)  # warm the file cache (and jieba's own dictionary cache)
        base = statistics.median(timed(BASE) for _ in range(runs))
        return statistics.median(timed(code) for _ in range(runs)) - base
    except subprocess.CalledProcessError:
        return None


def chinese_bodies(count: int) -> list[str]:
    from generate import assign_bodies, make_records

    rng = random.Random(7)
    records = make_records(count, rng)
    assign_bodies(records, rng)
    return [r.text for r in records if r.lang == "zh"]


def index_size(texts: list[str], tokenize: Callable[[str], str]) -> int:
    """Bytes of an FTS5 database holding ``texts`` tokenized by ``tokenize(text) -> str``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "size.sqlite3"
        db = sqlite3.connect(path)
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')")
        db.executemany("INSERT INTO fts(body) VALUES (?)", [(tokenize(t),) for t in texts])
        db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        db.commit()
        db.execute("VACUUM")
        db.close()
        return path.stat().st_size


def jieba_splitter(cut: Callable[[str], list[str]]) -> Splitter:
    """A ``_split_piece`` replacement: the piece cut into words by a jieba-style ``cut``."""
    from memcli.index.query import Word

    def split(piece: str, known: Callable[[str], bool] | None) -> list[Word]:
        words = [w for w in cut(piece) if w.strip()]
        return [Word(w, cjk=True, weak=len(w) == 1) for w in words]
    return split


def cjk_quality(ctx: Ctx, splitter: Splitter | None) -> tuple[float, float]:
    """recall@5 and MRR of the "CJK unsegmented" queries with ``splitter`` in place (None: memcli's)."""
    import memcli.index.query as query

    original = query._split_piece
    if splitter is not None:
        query._split_piece = splitter
    try:
        [kind] = [k for k in evaluation.score_queries(ctx) if k.kind == "CJK unsegmented"]
    finally:
        query._split_piece = original
    return kind.recall_at_5, kind.mrr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="generated memories for the index size")
    args = parser.parse_args(argv)
    for name in [n for n in os.environ if n.startswith("MEMCLI_")]:
        del os.environ[name]
    from memcli.index.tokenize import prepare

    texts = chinese_bodies(args.count)
    cutters = {}
    try:
        import jieba

        jieba.setLogLevel(60)
        cutters["jieba"] = jieba.lcut
    except ImportError:
        pass
    try:
        import rjieba

        cutters["rjieba"] = rjieba.cut
    except ImportError:
        pass
    sizes = {"vocabulary (memcli)": index_size(texts, prepare)}
    if "jieba" in cutters:  # jieba words instead of bigrams in the index (what indexing with it would hold)
        sizes["jieba"] = sizes["rjieba"] = index_size(texts, lambda t: " ".join(w for w in cutters["jieba"](t)
                                                                             if w.strip()))
    with tempfile.TemporaryDirectory(prefix="memcli-eval-cjk-") as tmp:
        ctx = evaluation.open_ctx(evaluation.build(Path(tmp) / "ws"))
        print(f"{len(texts)} Chinese bodies of {args.count} generated memories;"
              f" {len(eval_data.QUERIES['CJK unsegmented'])} CJK queries\n")
        print(f"{'scheme':<22}{'start-up (s)':>14}{'index (KB)':>12}{'recall@5':>10}{'MRR':>8}")
        for name, code in STARTUP.items():
            if name != "vocabulary (memcli)" and name not in cutters:
                print(f"{name:<22}{'not installed':>14}")
                continue
            cost = startup(code)
            at5, mrr = cjk_quality(ctx, None if name.startswith("vocabulary") else jieba_splitter(cutters[name]))
            size = sizes.get(name)
            shown = "failed" if cost is None else "~0 (noise)" if cost < 0.01 else f"{cost:.3f}"
            print(f"{name:<22}{shown:>14}"
                  f"{'—' if size is None else size // 1024:>12}{at5:>10.3f}{mrr:>8.3f}")
    print("\nindex (KB): memcli indexes CJK as bigrams whichever scheme splits the query; the jieba row"
          " is the size if the index held jieba's words instead.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
