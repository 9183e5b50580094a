"""Retrieval quality on the held-out set of ``bench/heldout_data.py`` (no timing).

    python bench/heldout.py [--split tune|heldout|fresh|fresh2|fresh3|fresh4] [--json PATH] [--semantic [--budget S]]
                             [--verbose]
    python bench/heldout.py --store shop --split newcomer [--semantic] [--verbose]
    python bench/heldout.py --store infra --split blind [--semantic] [--verbose]
    python bench/heldout.py --split fresh5 [--semantic] [--verbose]

``--store shop`` measures the prompt set of ``bench/heldout_shop.py`` on its own store (a
FastAPI + React shop written by a newcomer, with superseded memories among the active ones).

Builds a throw-away workspace holding the set's memories (one file each, id = its key,
with its category, importance, paths and pinned flag), then measures on one split:

* ranked ``recall`` (top 10) per kind of query: recall@5 (the share of a query's relevant
  keys found in the first five, averaged over the queries) and MRR (1 / rank of the first
  relevant key, 0 when none is in the top 10). ``no_answer`` queries have no relevant key:
  for them the runner reports the share for which recall says its hits do not answer
  (``answer`` weak or none, ``memcli.index.strength``: what ``recall --json`` and the MCP
  tool report). The zero-hit share and the same weak share over the answerable queries
  (how often a real answer is also called weak) are printed beside it;
* the prompt hook, through the real entry point (``run_hook("claude",
  "user-prompt-submit", …)``, each prompt in a fresh session): micro precision (injected
  keys that are wanted or fair, of all injected), micro recall (wanted keys injected, of
  all wanted), the prompts with a want that got nothing and the want=[] prompts that got
  something;
* in a session: the session start's block, then the prompt's, in one session per prompt:
  the share of wanted keys in either (what the agent holds when it answers; the prompt hook
  leaves out what the session start gave);
* the before-tool hook (``run_hook("claude", "pre-tool-use", …)``, each event in a fresh
  session): which wanted keys were delivered, and the position of the most specific one
  (``want[0]``) in what was delivered.

``--semantic`` measures hybrid retrieval: the model (``memcli[semantic-offline]``) is
loaded in this process as ``memcli mcp`` loads it (``service.semantic.Warm``), every memory
is embedded, recall goes through its hybrid retriever, and the hooks, called as Claude Code
calls them, ask it over its socket as they would ask a running MCP server. The prompt hook's
budget for that answer (``service.hooks.PROMPT_WARM_BUDGET``, 0.6 s) is raised to
``--budget`` seconds (default 5): on a loaded machine some answers took longer, the hook
answered lexically, and the figures moved with the load; the report counts the prompts the
hook answered lexically all the same (its ``retriever`` in the usage journal).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import heldout_data as data

#: The sets ``--store`` chooses from: their modules (same shapes as ``heldout_data``).
STORES = {"ledgerly": "heldout_data", "shop": "heldout_shop", "infra": "heldout_infra"}

STAMP = "2026-11-01T09:00:00Z"
ACTOR = "alice"
#: how the hook's block names a memory: ``… (id KEY)`` at the end of its line.
ID_AT_END = re.compile(r"\(id ([^()\s]+)\)\s*$")

Retrieve = Callable[[Any, str], list[Any]]


# --- the workspace -----------------------------------------------------------------------

def memory_file(memory: data.Memory) -> str:
    """The Markdown file of one memory of the set (front matter, then its text)."""
    lines = ["---", f"id: {memory['key']}", "scope: project", f"category: {memory['category']}",
             f"status: {memory.get('status', 'active')}", f"importance: {memory['importance']}"]
    if memory.get("pinned"):
        lines.append("pinned: true")
    for name in ("paths", "tags"):
        if memory.get(name):
            lines.append(f"{name}: {json.dumps(memory[name], ensure_ascii=False)}")  # a JSON list is YAML flow
    lines += [f"createdAt: {STAMP}", f"updatedAt: {STAMP}", "---", memory["text"], ""]
    return "\n".join(lines)


def build(root: Path) -> Path:
    """A workspace at ``root`` holding every memory of the set, active, in ``project``.

    The workspace is also the git project the tool events' file paths are relative to.
    """
    from memcli.service.setup import init

    workspace = init(root)[0]
    folder = workspace / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    for memory in data.MEMORIES:
        (folder / f"{memory['key']}.md").write_text(memory_file(memory), encoding="utf-8")
    return workspace


def open_ctx(workspace: Path) -> Any:
    """A service context on ``workspace`` as ``alice`` (the index is built on first use)."""
    from memcli.service import Ctx

    return Ctx.open(str(workspace), ACTOR)


def retriever(warm: Any = None) -> Retrieve:
    """The ranked top-10 recall to measure: lexical, or hybrid through ``warm`` (a loaded
    ``memcli.service.semantic.Warm``, as the MCP server holds it)."""
    from memcli.service.read import Filters, recall

    def top10(ctx: Any, text: str) -> list[Any]:
        return recall(ctx, text, Filters(limit=10), using=warm.retriever(ctx) if warm is not None else None)
    return top10


def start_warm(workspace: Path, wait: float = 600.0) -> Any:
    """A long-lived process's model for ``workspace``, as ``memcli mcp`` starts it: loaded,
    every memory embedded, its socket serving the hooks of this process. Raises
    RuntimeError when the model cannot be loaded (install ``memcli[semantic-offline]``)."""
    import sqlite3
    import time

    from memcli.index.db import INDEX_NAME
    from memcli.index.vectors import counts
    from memcli.service.semantic import Warm

    open_ctx(workspace).catalog()  # the index, before the model looks for it
    warm = Warm(str(workspace), ACTOR).start()
    warm.ready.wait(wait)
    if warm.embedder is None:
        raise RuntimeError(f"no model: {warm.reason}")
    index = workspace / ".cache" / INDEX_NAME
    end = time.monotonic() + wait
    while time.monotonic() < end:
        db = sqlite3.connect(index)
        try:
            done, total = counts(db, warm.embedder.model_id)
        finally:
            db.close()
        if done == total:
            return warm
        warm.work.set()
        time.sleep(0.2)
    raise RuntimeError(f"the model embedded {done} of {total} memories in {wait:.0f} s")


# --- ranked recall -----------------------------------------------------------------------

@dataclass
class QueryResult:
    """One query: its relevant keys, the top 10 and their tiers, the first relevant rank."""

    query: str
    relevant: list[str]
    top: list[str]
    tiers: list[str]
    rank: int | None
    at5: float
    answer: str = ""


@dataclass
class KindScore:
    """Ranked recall over one kind of query."""

    kind: str
    queries: int
    recall_at_5: float | None = None
    mrr: float | None = None
    weak_or_none: float | None = None
    zero_hits: float | None = None
    results: list[QueryResult] = field(default_factory=list)


def run_query(ctx: Any, retrieve: Retrieve, text: str, relevant: list[str]) -> QueryResult:
    """Recall one query and score it against its relevant keys."""
    hits = retrieve(ctx, text)
    top = [h.memory.id for h in hits]
    tiers = [str(getattr(h, "match", "")) for h in hits]
    rank = next((i + 1 for i, key in enumerate(top) if key in relevant), None)
    at5 = len(set(top[:5]) & set(relevant)) / len(relevant) if relevant else 0.0
    from memcli.index import strength

    return QueryResult(text, relevant, top, tiers, rank, at5, strength(hits))


def weak_first(result: QueryResult) -> bool:
    """Whether recall says the hits do not answer (``answer`` weak or none: ``index.strength``)."""
    return result.answer != "strong"


def score_queries(ctx: Any, retrieve: Retrieve, queries: dict[str, list[data.Query]]) -> list[KindScore]:
    """recall@5 and MRR per kind; the weak-or-none share for ``no_answer``."""
    scores = []
    for kind in data.KINDS if queries else ():
        results = [run_query(ctx, retrieve, text, keys) for text, keys in queries[kind]]
        score = KindScore(kind, len(results), results=results)
        if kind == "no_answer":
            score.weak_or_none = sum(map(weak_first, results)) / len(results)
            score.zero_hits = sum(not r.top for r in results) / len(results)
        else:
            score.recall_at_5 = sum(r.at5 for r in results) / len(results)
            score.mrr = sum(1 / r.rank if r.rank else 0.0 for r in results) / len(results)
            score.weak_or_none = sum(map(weak_first, results)) / len(results)
        scores.append(score)
    return scores


# --- the hooks ---------------------------------------------------------------------------

def hook_ids(stdout: str) -> list[str]:
    """The memory ids a hook's Claude Code answer delivered, in their order."""
    if not stdout.strip():
        return []
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return [m.group(1) for line in context.splitlines() if (m := ID_AT_END.search(line))]


def call_hook(workspace: Path, event: str, session: str, fields: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Run one hook event as Claude Code would; returns the delivered ids and the warnings."""
    from memcli.agents.hook_protocol import event_name
    from memcli.service.hooks import run_hook

    raw = json.dumps({"session_id": session, "cwd": str(workspace),
                      "hook_event_name": event_name("claude", event), **fields})
    run = run_hook("claude", event, raw, str(workspace), ACTOR, None)
    return hook_ids(run.stdout), list(run.warnings) + list(run.tracebacks)


#: The retrievers the hooks were given (``service.read.semantic_retriever``), once
#: :func:`watch_retrievers` is on: whether an answer came from the model or lexically.
ANSWERED: list[Any] = []


def watch_retrievers() -> None:
    """Record in :data:`ANSWERED` each retriever a hook gets (with ``--semantic``)."""
    from memcli.service import read

    original = read.semantic_retriever

    def watched(ctx: Any, budget: float | None = None) -> Any:
        found = original(ctx, budget)
        ANSWERED.append(found)
        return found
    read.semantic_retriever = watched


def answered_lexically(since: int) -> int:
    """How many retrievers recorded after ``since`` answered lexically (``hybrid.describe``)."""
    from memcli.index.hybrid import describe

    return sum(not describe(r).startswith("hybrid") for r in ANSWERED[since:])


@dataclass
class PromptResult:
    """One prompt: what it wanted, what was fair, what the hook injected."""

    prompt: str
    want: list[str]
    ok: list[str]
    given: list[str]
    warnings: list[str]

    @property
    def noise(self) -> list[str]:
        """Injected keys neither wanted nor fair."""
        return [k for k in self.given if k not in self.want and k not in self.ok]

    @property
    def missed(self) -> list[str]:
        """Wanted keys not injected."""
        return [k for k in self.want if k not in self.given]


@dataclass
class PromptScore:
    """The prompt hook over a split."""

    prompts: int
    precision: float
    recall: float
    injected: int
    wanted: int
    want_got_nothing: int
    empty_got_something: int
    results: list[PromptResult]
    #: with ``--semantic``: prompts the hook answered lexically (the model did not answer in time)
    lexical_answers: int = 0


def score_prompts(workspace: Path, prompts: list[data.Prompt]) -> PromptScore:
    """Each prompt through ``user-prompt-submit`` in a fresh session."""
    results = []
    since = len(ANSWERED)
    for n, (prompt, want, ok) in enumerate(prompts):
        given, warnings = call_hook(workspace, "user-prompt-submit", f"heldout-prompt-{n}",
                                    {"prompt": prompt})
        results.append(PromptResult(prompt, want, ok, given, warnings))
    lexical = answered_lexically(since)
    injected = sum(len(r.given) for r in results)
    good = injected - sum(len(r.noise) for r in results)
    wanted = sum(len(r.want) for r in results)
    found = wanted - sum(len(r.missed) for r in results)
    return PromptScore(len(results), good / injected if injected else 1.0,
                       found / wanted if wanted else 1.0, injected, wanted,
                       sum(bool(r.want) and not r.given for r in results),
                       sum(not r.want and bool(r.given) for r in results), results, lexical)


@dataclass
class SessionScore:
    """What the agent holds when it answers a prompt in a real session: the session start's
    block, then the prompt hook's (which leaves out what the session start gave)."""

    prompts: int
    recall: float
    at_start: int
    from_prompt: int
    wanted: int


def score_sessions(workspace: Path, prompts: list[data.Prompt]) -> SessionScore:
    """Each prompt after a session start in the same fresh session: the share of wanted keys
    in either block (the memories in the agent's context when it answers)."""
    found = at_start = from_prompt = wanted = 0
    for n, (prompt, want, _) in enumerate(prompts):
        session = f"heldout-session-{n}"
        start, _ = call_hook(workspace, "session-start", session, {"source": "startup"})
        given, _ = call_hook(workspace, "user-prompt-submit", session, {"prompt": prompt})
        wanted += len(want)
        at_start += sum(k in start for k in want)
        from_prompt += sum(k in given and k not in start for k in want)
        found += sum(k in start or k in given for k in want)
    return SessionScore(len(prompts), found / wanted if wanted else 1.0, at_start, from_prompt, wanted)


@dataclass
class ToolResult:
    """One before-tool event: what was delivered and where the most specific memory sat."""

    tool: str
    path: str
    want: list[str]
    ok: list[str]
    given: list[str]
    delivered: dict[str, bool]
    specific_rank: int | None
    noise: list[str]
    warnings: list[str]


@dataclass
class ToolScore:
    """The before-tool hook over a split."""

    events: int
    want_delivered: int
    wanted: int
    specific_first: int
    specific_missing: int
    noise: int
    results: list[ToolResult]


def score_tools(workspace: Path, tools: list[data.ToolEvent]) -> ToolScore:
    """Each tool event through ``pre-tool-use`` in a fresh session (an absolute file path)."""
    results = []
    for n, (tool, path, want, ok) in enumerate(tools):
        given, warnings = call_hook(workspace, "pre-tool-use", f"heldout-tool-{n}",
                                    {"tool_name": tool,
                                     "tool_input": {"file_path": str(workspace / path)}})
        specific = want[0] if want else None
        rank = given.index(specific) + 1 if specific in given else None
        noise = [k for k in given if k not in want and k not in ok]
        results.append(ToolResult(tool, path, want, ok, given, {k: k in given for k in want},
                                  rank, noise, warnings))
    with_want = [r for r in results if r.want]
    return ToolScore(len(results), sum(sum(r.delivered.values()) for r in results),
                     sum(len(r.want) for r in results),
                     sum(r.specific_rank == 1 for r in with_want),
                     sum(r.specific_rank is None for r in with_want),
                     sum(len(r.noise) for r in results), results)


# --- the report --------------------------------------------------------------------------

def fmt(value: float | None) -> str:
    """A score to three places, or a dash."""
    return "-" if value is None else f"{value:.3f}"


def report(split: str, kinds: list[KindScore], prompts: PromptScore, tools: ToolScore,
           verbose: bool, sessions: SessionScore | None = None) -> str:
    """The printed result."""
    lines = [f"split: {split}, memories: {len(data.MEMORIES)}", "",
             "ranked recall (top 10); weak = recall's answer is weak or none (index.strength)",
             f"  {'kind':<15}{'queries':>8}{'recall@5':>10}{'MRR':>8}{'weak/none':>11}{'0 hits':>8}"]
    for k in kinds:
        lines.append(f"  {k.kind:<15}{k.queries:>8}{fmt(k.recall_at_5):>10}{fmt(k.mrr):>8}"
                     f"{fmt(k.weak_or_none):>11}{fmt(k.zero_hits):>8}")
        if verbose:
            for r in k.results:
                if k.kind == "no_answer" and r.top:
                    lines.append(f"      {r.query!r}: {r.top[0]} ({r.tiers[0]})")
                elif k.kind != "no_answer" and (r.rank != 1 or r.at5 < 1):
                    lines.append(f"      {r.query!r}: rank {r.rank}, at5 {r.at5:.2f}, "
                                 f"top {', '.join(r.top[:3]) or '-'}")
    answerable = [k for k in kinds if k.kind != "no_answer"]
    total = sum(k.queries for k in answerable) or 1
    lines.append(f"  {'all answerable':<15}{total:>8}"
                 f"{sum((k.recall_at_5 or 0) * k.queries for k in answerable) / total:>10.3f}"
                 f"{sum((k.mrr or 0) * k.queries for k in answerable) / total:>8.3f}"
                 f"{sum((k.weak_or_none or 0) * k.queries for k in answerable) / total:>11.3f}")
    lines += ["", f"prompt hook (user-prompt-submit), {prompts.prompts} prompts",
              (f"  precision {prompts.precision:.3f}  recall {prompts.recall:.3f}"
               f"  (injected {prompts.injected}, wanted {prompts.wanted})"),
              (f"  want but got nothing: {prompts.want_got_nothing}"
               f"   want=[] but got something: {prompts.empty_got_something}")]
    if ANSWERED:
        lines.append(f"  answered lexically, the model's answer late: {prompts.lexical_answers}")
    if verbose:
        for r in prompts.results:
            if r.noise or r.missed:
                lines.append(f"      {r.prompt!r}: given {', '.join(r.given) or '-'}"
                             f"; noise {', '.join(r.noise) or '-'}; missed {', '.join(r.missed) or '-'}")
    if sessions is not None:
        lines += ["", "in context when the agent answers (session start, then the prompt, one session each)",
                  (f"  recall {sessions.recall:.3f}  (of {sessions.wanted} wanted: {sessions.at_start} in the"
                   f" session start's block, {sessions.from_prompt} more from the prompt hook)")]
    lines += ["", f"before-tool hook (pre-tool-use), {tools.events} events",
              (f"  wanted delivered {tools.want_delivered}/{tools.wanted}"
               f"  most specific first {tools.specific_first}, missing {tools.specific_missing}"
               f"  noise {tools.noise}"),
              f"  {'tool':<6}{'file':<48}{'specific@':>10}  delivered"]
    for r in tools.results:
        rank = "-" if not r.want else str(r.specific_rank) if r.specific_rank else "miss"
        lines.append(f"  {r.tool:<6}{r.path:<48}{rank:>10}  {', '.join(r.given) or '-'}")
    warnings = sorted({w for r in prompts.results for w in r.warnings}
                      | {w for r in tools.results for w in r.warnings})
    if warnings:
        lines += ["", "hook warnings:"] + [f"  {w.strip()}" for w in warnings]
    return "\n".join(lines)


def to_json(split: str, semantic: bool, kinds: list[KindScore], prompts: PromptScore,
            tools: ToolScore) -> dict[str, Any]:
    """Everything measured, for ``--json``."""
    return {"split": split, "semantic": semantic,
            "memories": len(data.MEMORIES), "answer_rule": "memcli.index.strength",
            "recall": [asdict(k) for k in kinds],
            "prompts": {**{k: v for k, v in asdict(prompts).items() if k != "results"},
                        "results": [{**asdict(r), "noise": r.noise, "missed": r.missed}
                                    for r in prompts.results]},
            "tools": asdict(tools)}


def main(argv: list[str] | None = None) -> int:
    """Build the workspace, measure one split, print the tables (and write JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=sorted(STORES), default="ledgerly",
                        help="which set: ledgerly (heldout_data.py, default), shop (heldout_shop.py) "
                             "or infra (heldout_infra.py)")
    parser.add_argument("--split", default="heldout",
                        help="which queries, prompts and tool events (default: heldout; the shop's: newcomer; "
                             "the infra store's: blind)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--semantic", action="store_true",
                        help="hybrid retrieval: load the model (memcli[semantic-offline]) as the MCP server does, "
                             "and let the hooks ask it over its socket")
    parser.add_argument("--budget", type=float, default=5.0,
                        help="with --semantic: seconds the prompt hook waits for the model (the hook's own: 0.6)")
    parser.add_argument("--verbose", action="store_true", help="list misses, noise and no_answer hits")
    parser.add_argument("--model", default="",
                        help="with --semantic: the model to load instead of the package-shipped one "
                             "(what [search] model takes: a folder holding model.onnx and tokenizer.json)")
    args = parser.parse_args(argv)
    global data
    data = importlib.import_module(STORES[args.store])
    if args.store == "ledgerly":  # a split written blind at stop 36, kept in a module of its own
        from heldout_fresh5 import PROMPTS_FRESH5

        data.SPLITS["fresh5"] = (data.QUERIES_HELDOUT, PROMPTS_FRESH5, data.TOOLS_HELDOUT)
    if args.split not in data.SPLITS:
        parser.error(f"--split: the {args.store} set has {', '.join(sorted(data.SPLITS))}")
    problems = data.check()
    if problems:
        print("the set is unsound:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    for name in list(os.environ):
        if name.startswith("MEMCLI_"):
            del os.environ[name]
    if args.model:
        os.environ["MEMCLI_EMBED_MODEL"] = args.model
    queries, prompts, tools = data.SPLITS[args.split]
    with tempfile.TemporaryDirectory(prefix="memcli-heldout-") as tmp:
        workspace = build(Path(tmp) / "ws")
        ctx = open_ctx(workspace)
        warm = start_warm(workspace) if args.semantic else None
        if warm is not None:
            from memcli.service import hooks

            hooks.PROMPT_WARM_BUDGET = args.budget
            watch_retrievers()
        try:
            kinds = score_queries(ctx, retriever(warm), queries)  # builds the index first
            prompt_score = score_prompts(workspace, prompts)
            session_score = score_sessions(workspace, prompts)
            tool_score = score_tools(workspace, tools)
        finally:
            if warm is not None:
                warm.close()
    if warm is not None:
        print(f"retriever: hybrid ({warm.embedder.name}); hooks ask it over its socket\n")
    print(report(args.split, kinds, prompt_score, tool_score, args.verbose, session_score))
    if args.json:
        out = to_json(args.split, args.semantic, kinds, prompt_score, tool_score)
        out["sessions"] = asdict(session_score)
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
