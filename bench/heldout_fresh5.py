"""A fifth fresh prompt split for the Ledgerly store of ``heldout_data``.

Written blind at stop 36 by a helper: it read only the docstring and ``MEMORIES`` of
``heldout_data`` (none of its queries, prompts or tool events, nor docs/search.md), wrote
these 50 everyday prompts with the memories each needs (``want``) and those fair to show
(``ok``), and ran nothing on them. Reported only: never tune on it.

Tags: ``paraphrase`` (other words than the memory's, including English prompts about a
Chinese memory), ``keyword`` (shares the memory's key words), ``zh`` (Chinese or mixed
prompt, Chinese memory), ``zh-cross`` (Chinese prompt, English memory), ``none`` (no memory
answers it: ``want`` and ``ok`` both empty).
"""

from __future__ import annotations

from heldout_data import MEMORIES, Prompt

PROMPTS_FRESH5: list[Prompt] = [
    ("my tests sit at 'waiting for postgres' for a minute and then all fail, do I need something running "
     "first?", ["test-make-docker"], ["docker-compose-services"]),  # paraphrase
    ("can we pull in pandas to build the yearly export? it would save a lot of code",
     ["no-new-deps-adr"], ["pdf-reports"]),  # paraphrase
    ("a customer says the lines of one of their transactions don't add up to zero, is that even possible?",
     ["glossary-posting"], ["glossary-entry"]),  # paraphrase
    ("someone booked an expense with the wrong amount last week, can I just UPDATE the row to fix it?",
     ["glossary-entry"], ["glossary-period-close"]),  # paraphrase
    ("the accountant wants to change an invoice from March but March has already been locked",
     ["glossary-period-close"], ["glossary-entry"]),  # paraphrase
    ("a new client's books run from July to June, how do we set that up?", ["fiscal-year"], []),  # paraphrase
    ("I merged my PR a minute ago, when does it show up on the test server and how do I know it's up?",
     ["deploy-staging"], []),  # paraphrase
    ("get 2.4.0 out to customers", ["deploy-prod"], ["release-tag"]),  # paraphrase
    ("the nightly browser tests went red again on the file upload step", ["ci-flaky-playwright"],
     ["ci-workflows"]),  # paraphrase
    ("I just got woken up by an alert saying the API is down, what do I do first?",
     ["oncall-pager-ack"], ["oncall-rotation"]),  # paraphrase
    ("we had a two-hour outage yesterday (SEV2). what's expected from us now it's fixed?",
     ["incident-postmortem"], ["oncall-pager-ack"]),  # paraphrase
    ("a user hit a 500 on the test site, where can I see the stack trace?", ["sentry-errors"], []),  # paraphrase
    ("my local data is a mess after testing the importer, give me a clean DB with some example companies",
     ["make-db-reset"], ["make-targets-list"]),  # paraphrase
    ("I created a few test companies on the pre-prod site on Friday and today they're all gone?",
     ["staging-reset-weekly"], ["zh-staging-access"]),  # paraphrase
    ("the monthly revenue report hammers the main database, can we run it somewhere else?",
     ["prod-read-replica"], ["slow-query-procedure"]),  # paraphrase
    ("someone deleted a whole company in prod about an hour ago, can we get it back?",
     ["pitr-procedure"], ["backup-policy"]),  # paraphrase
    ("add a switch so only a few customers see the new dashboard while we test it",
     ["feature-flags"], []),  # paraphrase
    ("this branch ended up at 1,200 changed lines, fine to put up for review like that?",
     ["code-review-rule"], ["zh-code-review-time"]),  # paraphrase
    ("converting 10.005 USD into EUR, which way does the last cent go?",
     ["rounding-banker"], ["exchange-rate-service", "money-as-integer-cents"]),  # paraphrase
    ("add an endpoint that lists vendors", ["api-blueprints"],
     ["api-pydantic-validation", "api-sqlalchemy-session"]),  # paraphrase
    ("drop the old memo column from the entries table", ["migrations-backward-compatible"],
     ["alembic-new-migration"]),  # paraphrase
    ("the entries page takes 8 seconds to load in prod, the DB seems to be the bottleneck",
     ["slow-query-procedure"], ["prod-read-replica"]),  # paraphrase
    ("VAT goes from 19 to 21 percent on the first of next month, what do I change?", ["zh-tax-rate"], []),  # paraphrase
    ("how many database connections can the api and the workers open at most?",
     ["zh-connection-pool"], []),  # paraphrase
    ("I can't reach the staging site from home, the page just times out", ["zh-staging-access"],
     ["deploy-staging"]),  # paraphrase
    ("run make lint and fix whatever ruff complains about", ["ruff-mypy"], []),  # keyword
    ("where do I put the Stripe secret key for staging?", ["secrets-env"], []),  # keyword
    ("how long are the RDS snapshots kept?", ["backup-policy"], ["pitr-procedure"]),  # keyword
    ("what timezone should the created_at timestamp be stored in?", ["timezone-utc"], []),  # keyword
    ("create an alembic migration adding a currency column to accounts",
     ["alembic-new-migration"], ["migrations-backward-compatible"]),  # keyword
    ("alembic upgrade head fails after I merged main:\nFAILED: Multiple head revisions are present for given "
     "argument 'head'", ["alembic-one-head"], ["alembic-new-migration"]),  # keyword
    ("npm install chart.js in the web app", ["pnpm-only", "no-new-deps-adr"], []),  # keyword
    ("write a fetch call to /api/v1/accounts in the accounts page", ["web-api-client"],
     ["web-react-query", "vite-proxy"]),  # keyword
    ("add a snapshot test for the EntryTable component", ["web-tests-vitest"], []),  # keyword
    ("add Redux for the filter state on the reports page", ["web-react-query"], []),  # keyword
    ("can I type this API response as any for now?", ["web-strict-ts"], ["web-api-client"]),  # keyword
    ("KeyError: '\\ufeffDate' in importer.py when importing a bank CSV exported from Excel",
     ["importer-csv-bom"], ["importer-formats"]),  # keyword
    ("月末结账的流程是什么？", ["zh-month-end-close"], []),  # zh
    ("导入一个 GBK 编码的对账单时报 UnicodeDecodeError，怎么办？",
     ["zh-importer-encoding"], ["importer-csv-bom"]),  # zh
    ("按钮上的中文文案可以直接写在组件里吗？", ["zh-frontend-i18n"], []),  # zh
    ("作废的凭证号可以重新用吗？", ["zh-invoice-glossary"], ["glossary-entry"]),  # zh
    ("生产环境的日志能查到多久以前的？", ["zh-log-retention"], ["sentry-errors"]),  # zh
    ("金额字段用 float 存可以吗？", ["money-as-integer-cents"], ["web-money-format"]),  # zh-cross
    ("这周谁值班？排班表在哪里看？", ["oncall-rotation"], ["oncall-handover-zh"]),  # zh-cross
    ("周五可以发生产吗？", ["deploy-prod"], []),  # zh-cross
    ("rename calc_tot to calculate_total in api/ledger/utils.py", [], []),  # none
    ("explain the difference between a list and a tuple in Python", [], []),  # none
    ("turn this for loop into a list comprehension", [], []),  # none
    ("what does HTTP status 418 mean?", [], []),  # none
    ("add a docstring to this function that explains its arguments", [], []),  # none
]


def check() -> list[str]:
    """Problems with the split (unknown or inactive keys, duplicates); empty when sound."""
    active = {m["key"] for m in MEMORIES if m.get("status", "active") != "superseded"}
    prompts = [p for p, _, _ in PROMPTS_FRESH5]
    problems = [f"duplicate prompt {p!r}" for p in sorted({p for p in prompts if prompts.count(p) > 1})]
    for prompt, want, ok in PROMPTS_FRESH5:
        problems += [f"{prompt!r}: unknown or inactive key {k}" for k in want + ok if k not in active]
        problems += [f"{prompt!r}: {k} in both want and ok" for k in set(want) & set(ok)]
    return problems
