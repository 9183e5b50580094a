"""A second held-out prompt set, on another store: a FastAPI + React shop ("acme shop").

Written at stop 35 by a helper told nothing about memcli's code, who installed it from the
README, wrote these 38 memories the way a team would over weeks (four later
superseded: the Postgres port, the JWT lifetime, the orders cache, a guard's wording;
a personal one is left out here), and then, before running
anything, 25 everyday prompts with the memories each needs (``want``) and those that are
fair but not required (``ok``): questions, bug reports and commands, half in other words
than the memories use, three in Chinese, three that no memory answers. Reported only: never
tune on it (``bench/heldout.py --store shop``). The superseded memories are in the store
with their status, so a prompt hook that serves one is caught as noise.

Same shapes as ``heldout_data``: ``MEMORIES`` (``status`` and ``tags`` optional here too),
``SPLITS`` (no ranked queries and no tool events: prompts only).
"""

from __future__ import annotations

from heldout_data import Memory, Prompt, Query, ToolEvent

MEMORIES: list[Memory] = [
    {"key": "g-never-run-docker-compose-down-old", "category": "preference", "importance": 3, "status": "superseded",
     "text": "Never run docker compose down -v: it deletes the local database volume and "
             "the seeded data."},
    {"key": "g-never-run-docker-compose-down", "category": "preference", "importance": 3,
     "text": "Never run docker compose down -v: it deletes the local database volume and "
             "the seeded data."},
    {"key": "g-never-use-float-for-money-amou", "category": "fact", "importance": 3, "paths": ["web/**"],
     "text": "Never use float for money amounts in the web app either; use integer cents."},
    {"key": "m01-test-cmd", "category": "procedure", "importance": 4, "tags": ["testing"],
     "text": "Run the backend tests with make test (it sets DATABASE_URL to the shop_test "
             "database); the Postgres container from docker compose up -d db must be "
             "running first."},
    {"key": "m02-pnpm", "category": "preference", "importance": 4, "paths": ["web/**"], "tags": ["frontend"],
     "text": "Use pnpm, never npm or yarn, for the web app in web/ (the lockfile is "
             "pnpm-lock.yaml)."},
    {"key": "m03-billing-cents", "category": "preference", "importance": 5,
     "paths": ["api/billing/**"], "tags": ["billing"],
     "text": "Files under api/billing: money amounts are integer cents (int) everywhere, in "
             "the database and in the API; never floats. Convert once at the edge with "
             "api.billing.money.to_cents."},
    {"key": "m04-api-errors", "category": "preference", "importance": 3, "paths": ["api/**"], "tags": ["api"],
     "text": "API errors: every endpoint returns errors as JSON {\"error\": {\"code\": ..., "
             "\"message\": ...}}; raise api.core.errors.ApiError instead of FastAPI's "
             "HTTPException."},
    {"key": "m05-py-style", "category": "preference", "importance": 3, "paths": ["**/*.py"], "tags": ["style"],
     "text": "Python style: type hints on every public function; ruff is both linter and "
             "formatter, line length 100."},
    {"key": "m06-stripe-webhook", "category": "procedure", "importance": 3,
     "paths": ["api/billing/stripe_webhooks.py"], "tags": ["billing", "stripe"],
     "text": "Stripe webhooks must verify the signature with stripe.Webhook.construct_event "
             "before reading the payload. Test locally with stripe listen --forward-to "
             "localhost:8000/billing/webhooks."},
    {"key": "m07-dbport-old", "category": "fact", "importance": 3, "status": "superseded", "tags": ["database"],
     "text": "The local Postgres database listens on port 5432."},
    {"key": "m08-dbport-new", "category": "fact", "importance": 3, "tags": ["database"],
     "text": "The local Postgres from docker compose listens on port 5433, not 5432: 5432 "
             "clashes with a Postgres installed on the host."},
    {"key": "m09-jwt-old", "category": "fact", "importance": 3, "status": "superseded", "tags": ["auth"],
     "text": "JWT access tokens expire after 60 minutes."},
    {"key": "m10-jwt-new", "category": "decision", "importance": 3, "tags": ["auth"],
     "text": "JWT access tokens expire after 15 minutes and refresh tokens after 14 days "
             "(decided in the March security review)."},
    {"key": "m11-alembic", "category": "procedure", "importance": 3, "paths": ["migrations/**"], "tags": ["database"],
     "text": "Create a migration with alembic revision --autogenerate -m 'message', then "
             "read the generated file: autogenerate misses enum changes and server defaults."},
    {"key": "m12-merged-migrations", "category": "preference", "importance": 4, "tags": ["database"],
     "text": "Never edit a migration that is already merged to main; write a new migration "
             "instead."},
    {"key": "m13-force-push", "category": "preference", "importance": 5,
     "text": "Never force-push to main: main is protected and every push to it deploys to "
             "staging."},
    {"key": "m14-prod-deploy", "category": "procedure", "importance": 4, "tags": ["deploy"],
     "text": "Production deploys go only through the GitHub Actions deploy workflow; nobody "
             "runs kubectl apply against the prod cluster by hand."},
    {"key": "m15-react-query", "category": "preference", "importance": 3, "paths": ["web/src/**"], "tags": ["frontend"],
     "text": "Web data fetching goes through @tanstack/react-query hooks built on "
             "web/src/api.ts; components never call fetch() directly."},
    {"key": "m16-pricetag", "category": "preference", "importance": 3,
     "paths": ["web/src/components/PriceTag.tsx"], "tags": ["frontend", "billing"],
     "text": "PriceTag takes integer cents and formats them with Intl.NumberFormat in the "
             "user's locale; never pass euros as floats to it."},
    {"key": "m17-cache-60s-old", "category": "fact", "importance": 3,
     "status": "superseded", "paths": ["api/orders/**"], "tags": ["cache"],
     "text": "Order list responses are cached in Redis for 60 seconds under the key "
             "orders:{user_id}:{page}; invalidate that key when an order is created or "
             "updated."},
    {"key": "m18-pagination", "category": "decision", "importance": 3, "tags": ["api"],
     "text": "Decision (October): list endpoints use cursor pagination (?cursor=...&limit=) "
             "instead of page numbers; page= stays only on /orders for the old mobile app."},
    {"key": "m19-flags", "category": "fact", "importance": 3, "tags": ["flags"],
     "text": "Feature flags are read from Unleash at FEATURE_FLAGS_URL; new flags are "
             "created in the Unleash UI by the product manager, not in code."},
    {"key": "m20-e2e", "category": "procedure", "importance": 3, "tags": ["testing"],
     "text": "The Playwright end-to-end tests (make e2e) need the Vite dev server on port "
             "5173 and a seeded database (make seed)."},
    {"key": "m21-staging-db", "category": "fact", "importance": 3, "tags": ["database", "staging"],
     "text": "The staging database is db.staging.acme.internal:6432 behind pgbouncer; "
             "read-only credentials are in the 1Password vault shopfront-staging."},
    {"key": "m23-dotenv", "category": "preference", "importance": 5, "tags": ["security"],
     "text": "Never read or print .env: it holds the live Stripe keys. Use .env.example for "
             "the variable names."},
    {"key": "m24-ci", "category": "fact", "importance": 3, "tags": ["ci"],
     "text": "CI runs on GitHub Actions: a pull request needs green lint, test and e2e jobs "
             "and one approval from CODEOWNERS before merging."},
    {"key": "m25-utc", "category": "decision", "importance": 3, "tags": ["database"],
     "text": "All timestamps are stored in UTC (timestamptz columns); convert to the user's "
             "time zone only in the web app."},
    {"key": "m26-eur", "category": "decision", "importance": 3, "tags": ["billing"],
     "text": "Only EUR is supported for now; multi-currency is planned for Q3, so do not "
             "add currency conversion code yet."},
    {"key": "m27-logging", "category": "preference", "importance": 3, "paths": ["api/**"], "tags": ["security"],
     "text": "Log with structlog through api.core.logging.get_logger; never log card "
             "numbers, e-mail addresses or tokens (PII)."},
    {"key": "m28-vite-proxy", "category": "fact", "importance": 3, "tags": ["frontend"],
     "text": "In development Vite proxies /api to http://localhost:8000 "
             "(web/vite.config.ts); a CORS error in dev means the request bypassed the "
             "proxy (absolute URL)."},
    {"key": "m29-flaky", "category": "fact", "importance": 3, "tags": ["testing", "gotcha"],
     "text": "test_checkout_flow in the e2e suite is flaky on CI because of Stripe "
             "test-mode latency; re-run the job once before investigating."},
    {"key": "m30-glossary", "category": "glossary", "importance": 3,
     "text": "Glossary: an order is a confirmed cart; a basket is the unconfirmed cart, "
             "kept in Redis for 7 days."},
    {"key": "m31-pyver", "category": "fact", "importance": 3, "tags": ["python"],
     "text": "The backend targets Python 3.11 (Docker image python:3.11-slim); do not use "
             "syntax that needs Python 3.12."},
    {"key": "m32-smoke-zh", "category": "procedure", "importance": 4, "tags": ["release"],
     "text": "发布前必须在 staging 环境跑完冒烟测试（make smoke），并由当天值班的同学确认结果。"},
    {"key": "m33-argon2", "category": "fact", "importance": 3, "paths": ["api/auth/**"], "tags": ["auth"],
     "text": "Passwords are hashed with argon2 (argon2-cffi); bcrypt hashes from the old "
             "system are rehashed on the user's next login."},
    {"key": "m34-openapi", "category": "procedure", "importance": 3, "tags": ["api", "frontend"],
     "text": "After changing an API route, regenerate the web client types with pnpm "
             "gen:api in web/ (it reads /openapi.json from the running dev server)."},
    {"key": "m35-precommit", "category": "procedure", "importance": 3, "tags": ["tooling"],
     "text": "Run pre-commit install once after cloning; the hook runs ruff and eslint on "
             "staged files."},
    {"key": "m36-cache-5min", "category": "fact", "importance": 3, "paths": ["api/orders/**"], "tags": ["cache"],
     "text": "Order list responses are cached in Redis for 5 minutes (300 seconds) under "
             "the key orders:{user_id}:{page}; invalidate that key when an order is created "
             "or updated."},
]

#: The newcomer's prompts, in the order written; the comment is the kind they gave each.
PROMPTS_NEWCOMER: list[Prompt] = [
    ("how do I run the tests?", ["m01-test-cmd"], ["m20-e2e"]),  # keyword
    ("psql can't connect to the local db, connection refused on 5432",
     ["m08-dbport-new"], ["m21-staging-db"]),  # paraphrase
    ("add lodash to the frontend", ["m02-pnpm"], ["m15-react-query"]),  # paraphrase
    ("how long is a login session valid before the user has to sign in again?",
     ["m10-jwt-new"], ["m33-argon2"]),  # paraphrase
    ("add a discount field to the invoice, 10% off in euros",
     ["m03-billing-cents"], ["m26-eur", "m16-pricetag"]),  # partial-words
    ("the checkout e2e test failed in CI again, can you look?", ["m29-flaky"], ["m20-e2e", "m24-ci"]),  # keyword
    ("write a migration that adds a status column to orders", ["m11-alembic"], ["m12-merged-migrations"]),  # keyword
    ("ship this to production", ["m14-prod-deploy"], ["m32-smoke-zh", "m24-ci"]),  # paraphrase
    ("what's the cache TTL for the orders list?", ["m36-cache-5min"], ["m30-glossary"]),  # keyword
    ("I get a CORS error when the React app calls the backend locally",
     ["m28-vite-proxy"], ["m15-react-query"]),  # keyword
    ("how should I return a 404 from the orders endpoint?", ["m04-api-errors"], ["m18-pagination"]),  # paraphrase
    ("add a new feature flag for the new checkout", ["m19-flags"], []),  # keyword
    ("如何运行数据库迁移？", ["m11-alembic"], ["m12-merged-migrations"]),  # zh-cross
    ("发布之前需要做什么？", ["m32-smoke-zh"], ["m14-prod-deploy"]),  # zh
    ("can I use the match statement and the new type parameter syntax from 3.12?",
     ["m31-pyver"], ["m05-py-style"]),  # keyword
    ("where are the read-only credentials for the staging database?", ["m21-staging-db"], []),  # keyword
    ("log the customer's email when a payment fails", ["m27-logging"], ["m03-billing-cents"]),  # paraphrase
    ("what is a basket vs an order?", ["m30-glossary"], []),  # keyword
    ("rename the variable x to total in utils", [], []),  # none
    ("what's the weather in Berlin tomorrow?", [], []),  # none
    ("bump the version number in pyproject to 0.5.0", [], []),  # none
    ("the frontend types are out of date after I changed the orders endpoint",
     ["m34-openapi"], ["m15-react-query"]),  # paraphrase
    ("store the password hash with bcrypt when a user registers", ["m33-argon2"], []),  # keyword
    ("paginate the new /products endpoint", ["m18-pagination"], ["m04-api-errors"]),  # keyword
    ("我们的时间戳用什么时区存储？", ["m25-utc"], []),  # zh-cross
]

SPLITS: dict[str, tuple[dict[str, list[Query]], list[Prompt], list[ToolEvent]]] = {
    "newcomer": ({}, PROMPTS_NEWCOMER, []),
}


def check() -> list[str]:
    """Problems with the set itself (duplicate or unknown keys); empty when sound."""
    keys = [m["key"] for m in MEMORIES]
    problems = [f"duplicate key {k}" for k in sorted({k for k in keys if keys.count(k) > 1})]
    for prompt, want, ok in PROMPTS_NEWCOMER:
        problems += [f"{prompt!r}: unknown key {k}" for k in want + ok if k not in keys]
    return problems
