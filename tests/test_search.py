"""Search (SPEC.md section 5; CASES.md table "Search" S1, S2): CJK and identifier
tokenization, safe query syntax, forgiving recall (stems, typos), modes, filters,
ranking and the substring fallback.

Real workspaces, real git, the real CLI in subprocesses; the ranking property test
builds a real FTS5 index over real files in a temporary folder.
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NOW = "2026-06-01T12:00:00Z"


def remember(run, text: str, *options: str, env: dict | None = None) -> str:
    """Write one memory through the CLI and return its id."""
    made = run("--json", "remember", text, *options, env=env)
    assert made.code == 0, made
    assert made.json()["data"]["outcome"] in ("created", "pending_review"), made
    return made.json()["data"]["id"]


def recall(run, *args: str, env: dict | None = None) -> list[dict]:
    """``recall --json`` hits; the command must succeed without a traceback."""
    result = run("--json", "recall", *args, env=env)
    assert result.code == 0, result
    assert "Traceback" not in result.err, result
    return result.json()["data"]["hits"]


def ids(hits: list[dict]) -> list[str]:
    return [h["id"] for h in hits]


# --- S1: Chinese, Japanese, Korean -----------------------------------------------------

S1_BODIES = {
    "zh": "用户身份验证失败，重跑gen-itgc后修复",
    "ja": "サンドボックス修正テスト",
    "ko": "오늘 끝말잇기 게임을 했다",
}
S1_QUERIES = [("身份", "zh"), ("验证失败", "zh"), ("itgc", "zh"), ("サンドボックス", "ja"), ("끝말잇기", "ko")]


def test_s1_cjk_words_are_found_and_english_is_unchanged(ws, run):
    made = {key: remember(run, body) for key, body in S1_BODIES.items()}
    english = remember(run, "Use pnpm for the web build; never run npm install in CI.")
    for query, key in S1_QUERIES:
        hits = recall(run, query)
        assert ids(hits) == [made[key]], (query, hits)
        assert hits[0]["match"] == "exact", (query, hits)
    # English results unchanged beside them: found by its own words, in any case
    for query in ("pnpm", "npm install", "WEB build", "ci"):
        assert ids(recall(run, query)) == [english], query
    # and a CJK-glued English word does not drag the English memory in
    assert english not in ids(recall(run, "gen-itgc"))


def test_single_cjk_character_falls_back_to_substring(ws, run):
    memory_id = remember(run, "用户身份验证失败，重跑gen-itgc后修复")
    remember(run, "an unrelated English note about caches")
    hits = recall(run, "败")
    assert ids(hits) == [memory_id]
    assert hits[0]["match"] == "substring"
    # a miss in every tier is a real miss, not an error
    assert recall(run, "鲸") == []


# --- S2: identifiers and query syntax ---------------------------------------------------

S2_BODY = "run the pre-edit hook in src/hooks; don't bump 20.04"


S2_QUERIES = ["pre-edit", "src/hooks", "don't", "20.04", "PRE-EDIT", "src/hooks;", "Don\u2019t"]
S2_SYNTAX = ['"unbalanced', "AND", "NEAR(", "*", "title:foo", "OR", "NOT", "^", "'", '""', "pre-edit*", "col:",
             "(", "a AND", "NEAR(pre edit, 2)", "body:run", "{body subject}: hook", "-hook", "+", ":", "\\", "%_"]


@pytest.mark.slow
def test_s2_identifiers_and_query_syntax(ws, run):
    target = remember(run, S2_BODY)
    syntax = remember(run, "FTS5 words like NEAR and AND, and a column filter such as title:foo, are plain text here")
    remember(run, "a filler memory about the release checklist")
    for query in S2_QUERIES:  # identifiers with hyphens, slashes, apostrophes, dots
        hits = recall(run, query)
        assert ids(hits) == [target], (query, hits)
        assert hits[0]["match"] == "exact", query
    for query in S2_SYNTAX:  # never FTS5 syntax: exit 0, no traceback, no result or a literal one
        result = run("--json", "recall", "--", query)  # "--": a query may start with "-"
        assert result.code == 0, result
        assert "Traceback" not in result.err and "fts5" not in result.err.lower(), result
        words = re.findall(r"[^\W_]+", query.casefold()) + [query.strip().casefold()]
        for hit in result.json()["data"]["hits"]:
            assert any(w in hit["text"].casefold() for w in words), (query, hit["text"])
    # operators are words like any other
    for query, want in (("AND", syntax), ("NEAR(", syntax), ("title:foo", syntax), ("NEAR(pre edit, 2)", target)):
        assert want in ids(recall(run, query)), query
    for query, mode in (("NEAR(", "--fuzzy"), ("title:foo", "--fuzzy"), ("title:foo", "--grep"), ("AND", "--grep")):
        result = run("--json", "recall", query, mode)
        assert result.code == 0 and "Traceback" not in result.err, result
    # the empty query is a usage error (exit 2), in JSON and plain output alike
    for query in ("", "   ", "\t"):
        result = run("--json", "recall", query)
        assert result.code == 2, result
        assert result.json()["error"]["code"] == "usage" and "Traceback" not in result.err
        plain = run("recall", query)
        assert plain.code == 2 and plain.out == "" and "Traceback" not in plain.err, plain


# --- forgiving recall -------------------------------------------------------------------


def test_other_forms_of_a_word_match(ws, run):
    deployed = remember(run, "We deployed the billing service on Friday.")
    deployments = remember(run, "Track all deployments in the ops channel.")
    migrate = remember(run, "Always migrate the schema with alembic before release.")
    remember(run, "The cat sleeps on the keyboard.")
    assert set(ids(recall(run, "deploy"))) == {deployed, deployments}
    assert set(ids(recall(run, "deploying"))) == {deployed, deployments}
    assert ids(recall(run, "migrations")) == [migrate]
    assert ids(recall(run, "Migrating")) == [migrate]


@pytest.mark.parametrize("typo,text", [("kubernets", "The kubernetes cluster runs on three nodes."),
                                       ("postgers", "Use postgres 16 for every new service."),
                                       ("prometeus", "prometheus scrapes the exporters every minute."),
                                       # a letter dropped before the stem's end (a newcomer's
                                       # "pagnation" stems to "pagnat", two edits from "pagin")
                                       ("pagnation", "Pagination uses cursors, never offsets."),
                                       ("pgination", "Pagination uses cursors, never offsets.")])
@pytest.mark.slow
def test_typos_find_their_memory_in_the_default_mode(ws, run, typo, text):
    target = remember(run, text)
    remember(run, "Unrelated: the office coffee machine is on floor two.")
    hits = recall(run, typo)
    assert ids(hits) == [target], hits
    assert hits[0]["match"] in ("exact", "fuzzy")


def test_typo_hit_ranks_below_an_exact_hit(ws, run):
    # one memory spells the word as typed, another only matches by typo correction
    exact = remember(run, "A note that literally says postgers, as typed in the runbook.")
    corrected = remember(run, "Use postgres 16 for every new service.", "--importance", "5")
    remember(run, "Unrelated: the office coffee machine is on floor two.")
    hits = recall(run, "postgers")
    assert ids(hits) == [exact, corrected], hits
    assert [h["match"] for h in hits] == ["exact", "fuzzy"]


def test_typo_correction_does_not_depend_on_memories_you_cannot_see(ws, run):
    """A word that only invisible memories (another user's, archived ones) contain must not
    switch typo correction off: the caller's own memory is still found."""
    mine = remember(run, "Use postgres 16 for every new service.")
    remember(run, "bob's note: postgers is how I spell it", "--scope", "user:bob", env={"MEMCLI_ACTOR": "bob"})
    hits = recall(run, "postgers")
    assert ids(hits) == [mine], hits
    archived = remember(run, "kuberntes (sic) cluster notes from last year")
    assert run("forget", archived).code == 0
    target = remember(run, "The kubernetes cluster runs on three nodes.")
    assert ids(recall(run, "kuberntes")) == [target]


# --- modes ------------------------------------------------------------------------------


def test_fuzzy_mode(ws, run):
    target = remember(run, "prometheus scrapes the exporters every minute.")
    other = remember(run, "grafana dashboards live in the ops repo.")
    hits = recall(run, "promethues", "--fuzzy")
    assert ids(hits) == [target]
    assert hits[0]["match"] == "fuzzy"
    assert ids(recall(run, "grafanna dashbords", "--fuzzy")) == [other]
    assert recall(run, "zzzzqqqq", "--fuzzy") == []


def test_grep_mode(ws, run):
    deployed = remember(run, "We deployed the billing service on Friday.")
    deployments = remember(run, "Track all deployments in the ops channel.")
    version = remember(run, "Pin node to 20.04.1 in CI.")
    hits = recall(run, "--grep", r"deploy(ed|ments)\b")
    assert set(ids(hits)) == {deployed, deployments}
    assert {h["match"] for h in hits} == {"regex"}
    assert ids(recall(run, "--grep", r"^We ")) == [deployed]
    assert ids(recall(run, "--grep", r"\d+\.\d+\.\d+")) == [version]
    assert ids(recall(run, "--grep", r"(?i)TRACK")) == [deployments]
    assert recall(run, "--grep", r"^deployed") == []
    for pattern in ("(", "[a-", "*x", "(?P<"):
        bad = run("--json", "recall", "--grep", pattern)
        assert bad.code == 2, bad
        assert bad.json()["error"]["code"] == "usage" and "Traceback" not in bad.err
    both = run("--json", "recall", "x", "--grep", "--fuzzy")
    assert both.code == 2 and both.json()["error"]["code"] == "usage"


# --- filters ----------------------------------------------------------------------------


@pytest.mark.slow
def test_filters_scope_category_tag_status_subject(ws, run):
    word = "lighthouse"
    project = remember(run, f"{word} project fact", "--tag", "infra", "--category", "fact")
    mine = remember(run, f"{word} preference of alice", "--scope", "user:alice", "--category", "preference",
                    "--tag", "infra", "--tag", "personal", "--subject", "editor.theme")
    pending = remember(run, f"{word} proposed by an agent", "--source-type", "model_derived")
    decision = remember(run, f"{word} decision", "--category", "decision", "--subject", "js.package-manager")
    bobs = remember(run, f"{word} of bob", "--scope", "user:bob", env={"MEMCLI_ACTOR": "bob"})

    assert set(ids(recall(run, word))) == {project, mine, decision}
    assert set(ids(recall(run, word, "--scope", "project"))) == {project, decision}
    assert set(ids(recall(run, word, "--scope", "user:alice"))) == {mine}
    assert ids(recall(run, word, "--category", "preference")) == [mine]
    assert ids(recall(run, word, "--category", "decision")) == [decision]
    assert set(ids(recall(run, word, "--tag", "infra"))) == {project, mine}
    assert ids(recall(run, word, "--tag", "personal")) == [mine]
    assert recall(run, word, "--tag", "infr") == []
    assert ids(recall(run, word, "--status", "pending_review")) == [pending]
    assert set(ids(recall(run, word, "--status", "pending_review", "--status", "active"))) == \
        {project, mine, decision, pending}
    assert ids(recall(run, word, "--subject", "js.package-manager")) == [decision]
    assert ids(recall(run, word, "--subject", "editor.theme", "--scope", "user:alice")) == [mine]
    # nobody's filter reaches another user's personal scope
    assert bobs not in ids(recall(run, word, "--status", "active", "--limit", "100"))
    assert bobs not in ids(recall(run, "--grep", word))
    assert bobs not in ids(recall(run, word, "--fuzzy"))
    assert ids(recall(run, word, env={"MEMCLI_ACTOR": "bob"})) != []
    assert bobs in ids(recall(run, word, env={"MEMCLI_ACTOR": "bob"}))
    bad = run("--json", "recall", word, "--category", "nonsense")
    assert bad.code == 5, bad


def test_filter_by_path_glob(ws, run):
    web = remember(run, "use pnpm for the frontend packages", "--path", "web/**")
    api = remember(run, "use uv for the backend packages", "--path", "api/**/*.py")
    anywhere = remember(run, "packages are reviewed weekly")
    assert set(ids(recall(run, "packages"))) == {web, api, anywhere}
    assert ids(recall(run, "packages", "--path", "web/src/a.ts")) == [web]
    assert ids(recall(run, "packages", "--path", "./web/src/deep/er/b.tsx")) == [web]
    assert ids(recall(run, "packages", "--path", "api/x.py")) == [api]
    assert ids(recall(run, "packages", "--path", "api/v1/x.py")) == [api]
    assert recall(run, "packages", "--path", "api/x.ts") == []
    assert recall(run, "packages", "--path", "docs/readme.md") == []
    assert ids(recall(run, "--grep", "pack", "--path", "web/src/a.ts")) == [web]


def test_filter_by_creation_time(ws, run):
    old = remember(run, "harbor registry old note", env={"MEMCLI_NOW": "2025-01-10T08:00:00Z"})
    mid = remember(run, "harbor registry mid note", env={"MEMCLI_NOW": "2025-03-10T08:00:00Z"})
    new = remember(run, "harbor registry new note", env={"MEMCLI_NOW": "2025-05-10T08:00:00Z"})
    env = {"MEMCLI_NOW": "2025-06-01T00:00:00Z"}
    assert set(ids(recall(run, "harbor", env=env))) == {old, mid, new}
    assert set(ids(recall(run, "harbor", "--created-after", "2025-03-01", env=env))) == {mid, new}
    assert set(ids(recall(run, "harbor", "--created-before", "2025-03-01", env=env))) == {old}
    assert set(ids(recall(run, "harbor", "--created-after", "2025-02-01", "--created-before", "2025-04-01",
                          env=env))) == {mid}
    # after is inclusive, before exclusive, times with an offset are honoured
    assert ids(recall(run, "harbor", "--created-after", "2025-03-10T08:00:00Z",
                      "--created-before", "2025-03-10T08:00:01Z", env=env)) == [mid]
    assert ids(recall(run, "harbor", "--created-after", "2025-03-10T10:00:00+02:00",
                      "--created-before", "2025-03-10T10:00:01+02:00", env=env)) == [mid]
    assert recall(run, "harbor", "--created-after", "2025-06-01", env=env) == []
    bad = run("--json", "recall", "harbor", "--created-after", "last tuesday", env=env)
    assert bad.code == 5 and "Traceback" not in bad.err, bad


def test_filter_expired_and_include_expired(ws, run):
    live = remember(run, "quasar build cache lives in s3", env={"MEMCLI_NOW": "2025-01-01T00:00:00Z"})
    gone = remember(run, "quasar freeze until february", "--expire-at", "2025-02-01",
                    env={"MEMCLI_NOW": "2025-01-01T00:00:00Z"})
    before = {"MEMCLI_NOW": "2025-01-31T23:59:59Z"}
    after = {"MEMCLI_NOW": "2025-02-01T00:00:00Z"}
    assert set(ids(recall(run, "quasar", env=before))) == {live, gone}
    assert ids(recall(run, "quasar", env=after)) == [live]
    assert ids(recall(run, "freeze", env=after)) == []
    assert ids(recall(run, "--grep", "freeze", env=after)) == []
    hits = recall(run, "quasar", "--include-expired", env=after)
    assert set(ids(hits)) == {live, gone}
    assert {h["id"]: h["expired"] for h in hits} == {live: False, gone: True}
    assert ids(recall(run, "--grep", "freeze", "--include-expired", env=after)) == [gone]


@pytest.mark.slow
def test_limit(ws, run):
    made = {remember(run, f"zephyr note number {i} with its own words w{i}x") for i in range(7)}
    assert len(recall(run, "zephyr")) == 7
    for limit in (1, 3, 7, 50):
        hits = recall(run, "zephyr", "--limit", str(limit))
        assert len(hits) == min(limit, 7) and set(ids(hits)) <= made
    assert len(recall(run, "--grep", "zephyr", "--limit", "2")) == 2
    assert len(recall(run, "zephir", "--fuzzy", "--limit", "4")) == 4
    assert len(recall(run, "zephyr w1x", "--limit", "3")) == 3  # exact then partial, capped
    for bad in ("0", "-1", "1001"):
        result = run("--json", "recall", "zephyr", "--limit", bad)
        assert result.code in (2, 5) and "Traceback" not in result.err, result


def test_explain_shows_score_parts(ws, run):
    env = {"MEMCLI_NOW": "2026-01-01T00:00:00Z"}
    target = remember(run, "nginx reload needs a config test first", "--importance", "5", env=env)
    for i in range(4):
        remember(run, f"filler memory {i} about an unrelated topic t{i}q", env=env)
    hits = recall(run, "nginx", "--explain", env={"MEMCLI_NOW": "2026-03-02T00:00:00Z"})
    assert ids(hits) == [target]
    parts = hits[0]["explain"]
    for key in ("bm25", "importance", "recency"):
        assert isinstance(parts[key], (int, float)), parts
    assert parts["bm25"] > 0
    assert parts["importance"] == pytest.approx(0.8 + 0.1 * 5)
    assert parts["recency"] == pytest.approx(0.8 + 0.2 * 0.5 ** (60 / 90), abs=1e-3)
    assert hits[0]["score"] == pytest.approx(parts["bm25"] * parts["importance"] * parts["recency"], rel=1e-3)
    assert "explain" not in recall(run, "nginx")[0]


# --- ranking ----------------------------------------------------------------------------


@pytest.mark.slow
def test_more_relevant_never_ranks_lower(ws, run):
    env = {"MEMCLI_NOW": NOW}
    for i in range(6):  # memories without the word keep its idf positive
        remember(run, f"background note {i} on topic t{i}z with words", env=env)
    # equal importance, equal age, equal length in words
    thrice = remember(run, "gateway gateway gateway timeout alpha beta gamma", env=env)
    once = remember(run, "gateway timeout alpha beta gamma delta epsilon", env=env)
    twice = remember(run, "gateway gateway timeout alpha beta gamma delta", env=env)
    assert ids(recall(run, "gateway", env=env)) == [thrice, twice, once]
    # in the subject as well as the body ranks at or above the body alone
    subject = remember(run, "proxy rules zeta eta theta iota kappa", "--subject", "proxy", env=env)
    body = remember(run, "proxy rules lambda mu nu xi omicron", env=env)
    assert ids(recall(run, "proxy", env=env)) == [subject, body]
    # a tag counts too
    tagged = remember(run, "cdn purge rho sigma tau upsilon phi", "--tag", "cdn", env=env)
    plain = remember(run, "cdn purge chi psi omega one two", env=env)
    assert ids(recall(run, "cdn", env=env)) == [tagged, plain]


def _write_memory(root: Path, memory_id: str, body: str, importance: int, updated: datetime) -> None:
    stamp = updated.strftime("%Y-%m-%dT%H:%M:%SZ")
    folder = root / "memories" / "project" / "2026-01"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{memory_id}.md").write_text(
        f"---\nid: {memory_id}\nscope: project\nstatus: active\nimportance: {importance}\n"
        f"createdAt: {stamp}\nupdatedAt: {stamp}\n---\n{body}\n", encoding="utf-8")


DOC_WORDS = 8
FILLER = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "islet", "juniper"]


def _body(tf: int, salt: int) -> str:
    filler = [f"{FILLER[(salt + k) % len(FILLER)]}" for k in range(DOC_WORDS - tf)]
    return " ".join(["zebra"] * tf + filler)


def _ranks(root: Path, now: datetime) -> list:
    from memcli.index import Query
    from memcli.index.db import IndexDB
    from memcli.index.search import FtsRetriever
    from memcli.store.files import MemoryFiles

    (root / ".cache").mkdir(exist_ok=True)
    index = IndexDB(MemoryFiles(root), root / ".cache" / "index.sqlite3")
    try:
        index.sync()
        return FtsRetriever(index).search(Query(text="zebra", scopes=["project"], now=now, limit=100))
    finally:
        index.close()


doc_strategy = st.tuples(st.integers(0, DOC_WORDS), st.integers(1, 5), st.sampled_from([0, 1, 30, 90, 365]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc_strategy, min_size=2, max_size=8), bump=st.integers(0, 7), extra=st.integers(0, 6))
@pytest.mark.slow
def test_property_increasing_relevance_never_lowers_rank(docs, bump, extra):
    """Over a real index: (1) each score is the documented formula; (2) of two memories with
    equal importance and age, the one with more mentions (same length) never ranks lower;
    (3) adding one more mention to a memory never lowers its rank."""
    now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    bump %= len(docs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, (tf, importance, age) in enumerate(docs):
            _write_memory(root, f"m{i:03d}", _body(tf, i), importance, now - timedelta(days=age))
        for j in range(extra):  # documents without the word: vary the idf
            _write_memory(root, f"x{j:03d}", _body(0, j + 3), 3, now)
        hits = _ranks(root, now)
        order = [h.memory.id for h in hits]
        assert set(order) == {f"m{i:03d}" for i, d in enumerate(docs) if d[0] > 0}
        assert [h.match for h in hits] == ["exact"] * len(hits)
        for hit in hits:
            _, importance, age = docs[int(hit.memory.id[1:])]
            expected = hit.parts["bm25"] * (0.8 + 0.1 * importance) * (0.8 + 0.2 * 0.5 ** (age / 90))
            assert hit.score == pytest.approx(expected, rel=1e-9)
            assert hit.parts["bm25"] > 0
        for a in hits:
            for b in hits:
                da, db_ = docs[int(a.memory.id[1:])], docs[int(b.memory.id[1:])]
                if da[1:] == db_[1:] and da[0] > db_[0]:
                    assert order.index(a.memory.id) < order.index(b.memory.id), (docs, order)
        # one more mention of the word in one memory (same length), then an incremental sync
        tf, importance, age = docs[bump]
        if tf < DOC_WORDS:
            target = f"m{bump:03d}"
            before = order.index(target) if target in order else len(order)
            _write_memory(root, target, _body(tf + 1, bump), importance, now - timedelta(days=age))
            after_order = [h.memory.id for h in _ranks(root, now)]
            assert after_order.index(target) <= before, (docs, bump, order, after_order)
            others = [m for m in order if m != target]
            assert [m for m in after_order if m != target] == others
