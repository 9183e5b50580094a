"""Ranked search quality (issue 9 point 6, issue 13): stop words, the prompt hook's relevance
floor, unsegmented CJK queries, typo ranking, and the evaluation set of bench/eval_data.py
held above floors.

Real workspaces and the real CLI in subprocesses; the evaluation runs memcli's own service
functions in-process on a real index (as ``python bench/eval.py`` does).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import eval as evaluation  # noqa: E402  (bench/eval.py)
import eval_data  # noqa: E402

#: Floors held by the evaluation set (measured: precision 0.95, recall 0.98; recall@5 1.0 and
#: MRR 0.88 or more in every kind). Set a little under the measured values so that a change
#: that makes ranking worse fails here, while a harmless reordering does not.
PRECISION_FLOOR = 0.9
RECALL_FLOOR = 0.9
RECALL_AT_5_FLOOR = 0.9
MRR_FLOOR = 0.8


def remember(ws: Path, text: str) -> str:
    """A hand-written memory file (faster than ``memcli remember`` and its commit); its id."""
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    memory_id = f"m{len(list(folder.iterdir())):03d}"
    (folder / f"{memory_id}.md").write_text(
        f"---\nid: {memory_id}\nscope: project\nstatus: active\ncreatedAt: {evaluation.STAMP}\n"
        f"updatedAt: {evaluation.STAMP}\n---\n{text}\n", encoding="utf-8")
    return memory_id


def recall(run, *args: str) -> list[dict]:
    result = run("--json", "recall", *args)
    assert result.code == 0 and "Traceback" not in result.err, result
    return result.json()["data"]["hits"]


def prompt_ids(run, prompt: str, session: str = "s1") -> list[str]:
    """The memory ids (in order) that ``user-prompt-submit`` injects for ``prompt``."""
    payload = {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
               "cwd": str(Path.cwd())}
    result = run("hook", "claude", "user-prompt-submit", input=json.dumps(payload))
    assert result.code == 0 and "Traceback" not in result.err, result
    text = json.loads(result.out)["hookSpecificOutput"]["additionalContext"] if result.out.strip() else ""
    return re.findall(r"\(id ([a-z0-9_-]+)\)$", text, flags=re.M)


def write_eval_memories(ws: Path) -> None:
    """The evaluation set's memories as hand-written files (id = key), as bench/eval.py does."""
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    for key, text in eval_data.MEMORIES.items():
        (folder / f"{key}.md").write_text(
            f"---\nid: {key}\nscope: project\ncategory: fact\nstatus: active\nimportance: 3\n"
            f"createdAt: {evaluation.STAMP}\nupdatedAt: {evaluation.STAMP}\n---\n{text}\n", encoding="utf-8")


# --- the evaluation set -----------------------------------------------------------------


@pytest.mark.slow
def test_evaluation_set_stays_above_its_floors(tmp_path):
    assert len(eval_data.PROMPTS) >= 40 and len(eval_data.MEMORIES) >= 30
    ctx = evaluation.open_ctx(evaluation.build(tmp_path / "eval"))
    prompts = evaluation.score_prompts(ctx)
    assert prompts.precision >= PRECISION_FLOOR and prompts.recall >= RECALL_FLOOR, prompts
    for prompt, extra in prompts.noise:  # what noise is left shares a content word, never a stop word only
        for key in extra:
            assert shares_a_content_word(prompt, eval_data.MEMORIES[key]), (prompt, key)
    quiet = [p for p, want, _ in eval_data.PROMPTS if not want]
    assert len(quiet) >= 8 and sum(p in quiet for p, _ in prompts.noise) <= 1, prompts.noise
    kinds = evaluation.score_queries(ctx)
    assert {k.kind for k in kinds} == {"exact", "word forms", "typos", "CJK unsegmented", "identifiers"}
    for kind in kinds:
        assert kind.recall_at_5 >= RECALL_AT_5_FLOOR and kind.mrr >= MRR_FLOOR, kind
    printed = evaluation.report(prompts, kinds, verbose=False)
    assert "precision" in printed and "recall@5" in printed and "MRR" in printed


# --- the prompt hook ----------------------------------------------------------------------


def shares_a_content_word(prompt: str, text: str) -> bool:
    """Whether ``text`` holds one of the prompt's content (non-stop) words, in any form."""
    from memcli.index.query import analyse, content
    from memcli.index.tokenize import tokens

    words, only_stop = content(analyse(prompt))
    held = set(tokens(text))
    return not only_stop and any(set(w.tokens) <= held for w in words)


@pytest.mark.slow
def test_prompt_hook_with_71_memories_brings_the_right_one_first_and_no_stop_word_match(ws, run):
    write_eval_memories(ws)
    for prompt, first in (("what port does the db use", "db-port"),
                          ("how do I run the database migrations?", "migrations")):
        given = prompt_ids(run, prompt)
        assert given[:1] == [first], (prompt, given)
        for key in given:  # nothing that shares only "what", "does", "the", "do", "I" with the prompt
            assert shares_a_content_word(prompt, eval_data.MEMORIES[key]), (prompt, key)
    assert not shares_a_content_word("how do I run the database migrations?", eval_data.MEMORIES["pnpm"])
    for prompt in ("what do you think?", "how does it work?", "ok, and then what?", "好的，谢谢"):
        assert prompt_ids(run, prompt, session="s2") == [], prompt


def test_prompt_hook_gives_a_memory_once_per_session_and_at_most_three(ws, run):
    write_eval_memories(ws)
    first = prompt_ids(run, "how do I run the database migrations?", session="a")
    assert "migrations" in first
    again = prompt_ids(run, "run the database migrations again", session="a")
    assert "migrations" not in again
    assert "migrations" in prompt_ids(run, "run the database migrations again", session="b")
    many = prompt_ids(run, "docker compose postgres redis worker celery rabbitmq api", session="c")
    assert 1 <= len(many) <= 3, many


def test_prompt_floor_is_configurable(ws, run):
    remember(ws, "Kafka topics are named team.service.event.")
    remember(ws, "Consumers commit offsets manually after each batch.")
    prompt = "how are kafka topics and consumer groups named"
    default = prompt_ids_plain(run, prompt)
    assert "Kafka topics are named" in default
    config = ws / "memcli.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("prompt_floor = 0.35", "prompt_floor = 1.0"), encoding="utf-8")
    assert "Kafka topics are named" not in prompt_ids_plain(run, prompt)  # it misses "groups"
    config.write_text(text.replace("prompt_floor = 0.35", "prompt_floor = 1.5"), encoding="utf-8")
    bad = run("--json", "list")
    assert bad.code not in (0, 1) and "prompt_floor must be from 0 to 1" in bad.json()["error"]["message"], bad
    hook = run("hook", "claude", "user-prompt-submit", input=json.dumps({"session_id": "x", "prompt": prompt}))
    assert hook.code == 0 and "prompt_floor" in hook.err, hook


def prompt_ids_plain(run, prompt: str) -> str:
    payload = {"session_id": "p", "hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(Path.cwd())}
    result = run("hook", "claude", "user-prompt-submit", input=json.dumps(payload))
    assert result.code == 0, result
    return json.loads(result.out)["hookSpecificOutput"]["additionalContext"] if result.out.strip() else ""


# --- ranked recall ----------------------------------------------------------------------


def test_stop_words_never_make_a_match_on_their_own(ws, run):
    keys = remember(ws, "Rotate the signing keys every 90 days.")
    remember(ws, "The office is on the third floor and the kitchen is on the second.")
    assert [h["id"] for h in recall(run, "how do I rotate the keys?")] == [keys]
    port = remember(ws, "数据库的端口是 5433")
    remember(ws, "怎么都行，这是我的电脑")
    assert [h["id"] for h in recall(run, "怎么配置数据库的端口")] == [port]
    # a short form matches its long form and back (words/abbreviations.txt)
    database = remember(ws, "The database listens on port 5433.")
    assert [h["id"] for h in recall(run, "db port")] == [database]
    assert [h["match"] for h in recall(run, "db port")] == ["exact"]
    # a query of stop words only is matched as typed (so `AND` and `don't` still find their text)
    dont = remember(ws, "don't bump the version by hand")
    assert dont in [h["id"] for h in recall(run, "don't")]


def test_unsegmented_chinese_query_finds_its_words_in_any_order(ws, run):
    cert = remember(ws, "生产环境的 TLS 证书每 60 天自动续期一次")
    remember(ws, "证明文件放在共享盘")
    remember(ws, "用户身份验证失败，重跑gen-itgc后修复")
    for query in ("证书续期", "续期证书", "TLS证书续期", "证书怎么续期"):
        hits = recall(run, query)
        assert [h["id"] for h in hits][:1] == [cert], (query, hits)
    assert [h["match"] for h in recall(run, "证书续期")] == ["exact"]
    # another memory holds 书续, which glues the query into one word: its bigrams still match apart
    remember(ws, "图书续借在网上办理")
    hits = recall(run, "证书续期")
    assert hits[0]["id"] == cert and hits[0]["match"] == "partial", hits


def test_typo_ranks_directly_below_exact_and_a_stemmed_typo_is_not_exact(ws, run):
    target = remember(ws, "pytest fixtures live in tests/conftest.py")
    remember(ws, "Run pytest with -n 2 in CI; tests must not share state.")
    remember(ws, "Slow tests are marked and skipped locally.")
    fixtures = remember(ws, "Database fixtures are rebuilt every night from the seed files.")
    hits = recall(run, "pytset fixtures")
    assert hits[0]["id"] == target and hits[0]["match"] == "fuzzy", hits
    assert fixtures in [h["id"] for h in hits[1:]]  # an exact match of one word only ranks below
    cluster = remember(ws, "The kubernetes cluster runs on three nodes.")
    assert [(h["id"], h["match"]) for h in recall(run, "kubernets")] == [(cluster, "fuzzy")]
    assert [(h["id"], h["match"]) for h in recall(run, "kubernetes")] == [(cluster, "exact")]
    deployed = remember(ws, "Track all deployments in the ops channel.")
    assert [(h["id"], h["match"]) for h in recall(run, "deploying")] == [(deployed, "exact")]


# --- the stop-word lists ------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
def test_stop_word_lists_come_from_their_published_source(language):
    """Every stop word is in Stopwords ISO (the published lists, MIT); English is the Snowball
    list, which Stopwords ISO contains whole."""
    import stopwordsiso

    from memcli.index.query import stop_words
    from memcli.index.tokenize import normalise

    published = {normalise(w) for w in stopwordsiso.stopwords(language)}
    ours = stop_words(language)
    assert ours and ours <= published, sorted(ours - published)
    if language == "en":
        assert len(ours) == 174 and {"the", "do", "what", "don't"} <= ours and not {"use", "run", "fix"} & ours
