"""A held-out retrieval evaluation set: the memory store of a small bookkeeping app.

The project ("Ledgerly") is a Flask API in ``api/`` (the bank-statement importer is
``api/ledger/importer.py``), a React/TypeScript web app in ``web/`` built with pnpm,
Postgres with alembic migrations, docker compose and make targets locally, CI on GitHub
Actions, a staging and a prod environment, an on-call rotation and a glossary.

Every query, prompt and tool event below was written before anything was run against
memcli, without reading how memcli ranks, so they are not tuned to it. The queries come in
two splits of the same kinds: ``*_TUNE`` for developers to tune on and ``*_HELDOUT`` for
reporting only (never edit a held-out list after seeing a result).

* ``MEMORIES``: dicts with ``key``, ``text``, ``category``, ``importance`` (1-5) and
  optionally ``paths`` (globs) and ``pinned``.
* ``QUERIES_TUNE`` / ``QUERIES_HELDOUT``: kind -> ``[(query, [relevant keys])]``;
  ``no_answer`` queries have no relevant key.
* ``PROMPTS_TUNE`` / ``PROMPTS_HELDOUT`` (and ``PROMPTS_FRESH``, ``PROMPTS_FRESH2``,
  ``PROMPTS_FRESH3``, ``PROMPTS_FRESH4``, reported only): ``(prompt, want, ok)`` for the prompt hook:
  ``want`` should be injected, ``ok`` is fair but not required, anything else is noise.
* ``TOOLS_TUNE`` / ``TOOLS_HELDOUT``: ``(tool_name, file_path, want, ok)`` for the
  before-tool hook; ``want[0]``, when there is one, is the most specific memory for the file.

Near-collisions are there on purpose, as in real stores: a glossary "posting" next to a
person's local Postgres port (and nothing about the staging database's port), nine
``web/**`` memories beside one scoped to exactly ``web/src/app.ts``, several ``api/**``
memories beside one scoped to exactly ``api/ledger/importer.py``.
"""

from __future__ import annotations

from typing import Any

Memory = dict[str, Any]
Query = tuple[str, list[str]]
Prompt = tuple[str, list[str], list[str]]
ToolEvent = tuple[str, str, list[str], list[str]]

MEMORIES: list[Memory] = [
    # --- general: no paths -------------------------------------------------------------
    {"key": "test-make-docker", "category": "procedure", "importance": 4,
     "text": "Run the tests with make test; they need Docker running, because the suite starts "
             "a throw-away Postgres container for each run."},
    {"key": "httpx-not-requests", "category": "preference", "importance": 4,
     "text": "Use httpx, not requests, for outgoing HTTP calls; the shared client in "
             "api/http.py sets timeouts and retries, so build on it instead of a bare client."},
    {"key": "no-new-deps-adr", "category": "decision", "importance": 5, "pinned": True,
     "text": "No new runtime dependencies without a decision record: write an ADR under "
             "docs/adr/ and get a maintainer's approval before adding anything to "
             "pyproject.toml or web/package.json."},
    {"key": "glossary-posting", "category": "fact", "importance": 3,
     "text": "Glossary: a posting is one line of an entry: one account, one amount, debit or "
             "credit. The postings of an entry always sum to zero."},
    {"key": "glossary-entry", "category": "fact", "importance": 3,
     "text": "Glossary: an entry (journal entry) is one balanced transaction on one date, made "
             "of two or more postings. A posted entry is immutable; mistakes are corrected "
             "with a reversing entry."},
    {"key": "glossary-period-close", "category": "fact", "importance": 3,
     "text": "Glossary: closing a period locks every entry dated in it. After the close, totals "
             "change only through a reversing entry dated in an open period."},
    {"key": "glossary-account-code", "category": "fact", "importance": 2,
     "text": "Glossary: an account code is the four-digit number in the chart of accounts "
             "(1000 cash, 2000 payables, 4000 revenue); the first digit decides where the "
             "account shows in the balance sheet or the P&L."},
    {"key": "fiscal-year", "category": "fact", "importance": 2,
     "text": "Glossary: a fiscal year may start in any month (companies.fiscal_year_start holds "
             "it); a period is one calendar month inside the fiscal year."},
    {"key": "local-pg-port", "category": "fact", "importance": 2,
     "text": "On Dana's laptop the local Postgres listens on port 5433, not 5432, because "
             "Homebrew's Postgres already holds 5432; her .env points DATABASE_URL at "
             "localhost:5433."},
    {"key": "deploy-staging", "category": "procedure", "importance": 3,
     "text": "Deploying to staging is automatic: every merge to main builds the images in "
             "GitHub Actions and rolls them out to staging. Check "
             "https://staging.ledgerly.dev/healthz afterwards."},
    {"key": "deploy-prod", "category": "procedure", "importance": 5,
     "text": "Production deploys are manual: run the 'Deploy prod' workflow in GitHub Actions "
             "with a release tag (vX.Y.Z). Only Tuesday to Thursday, never on a Friday."},
    {"key": "release-tag", "category": "procedure", "importance": 3,
     "text": "To cut a release run make release VERSION=x.y.z: it bumps the version, writes "
             "CHANGELOG.md from the merged pull request titles and pushes the tag."},
    {"key": "ci-workflows", "category": "fact", "importance": 3, "paths": [".github/**"],
     "text": "CI is GitHub Actions: .github/workflows/ci.yml runs ruff, mypy, pytest and the "
             "web build on every pull request; e2e.yml runs the Playwright suite nightly."},
    {"key": "ci-flaky-playwright", "category": "fact", "importance": 2,
     "paths": [".github/workflows/e2e.yml", "web/e2e/**"],
     "text": "The Playwright e2e suite is flaky on the CSV upload test (a race with the upload "
             "progress bar); rerun the job once before investigating."},
    {"key": "oncall-rotation", "category": "fact", "importance": 3,
     "text": "On-call rotates weekly on Monday at 10:00 UTC; the schedule is in PagerDuty "
             "under 'Ledgerly primary'."},
    {"key": "oncall-pager-ack", "category": "procedure", "importance": 4,
     "text": "When paged: acknowledge within 15 minutes, post in #ledgerly-incidents, and open "
             "an incident doc from docs/runbooks/incident.md."},
    {"key": "incident-postmortem", "category": "procedure", "importance": 3,
     "text": "Every SEV1 or SEV2 incident gets a blameless postmortem in docs/postmortems/ "
             "within five working days."},
    {"key": "sentry-errors", "category": "fact", "importance": 3,
     "text": "Errors from the api and the web app go to Sentry, projects ledgerly-api and "
             "ledgerly-web; events from staging carry the tag env=staging."},
    {"key": "make-db-reset", "category": "procedure", "importance": 3,
     "text": "make db-reset drops the local database, recreates it, runs alembic upgrade head "
             "and loads fixtures/seed.sql (two companies with a year of entries)."},
    {"key": "make-targets-list", "category": "fact", "importance": 2,
     "text": "make help lists every target; the common ones are make dev (compose up), "
             "make test, make lint, make migrate (alembic upgrade head) and make seed."},
    {"key": "docker-compose-services", "category": "fact", "importance": 3,
     "text": "docker compose up starts db (Postgres 15), api (Flask on :5000), web (Vite on "
             ":5173), worker (Celery), redis and mailpit (:8025) for outgoing email."},
    {"key": "ruff-mypy", "category": "procedure", "importance": 3,
     "text": "make lint runs ruff check, ruff format --check and mypy --strict over api/; "
             "make fmt fixes the formatting."},
    {"key": "python-version", "category": "fact", "importance": 2,
     "text": "The API runs on Python 3.12 (Docker image python:3.12-slim); create local "
             "virtualenvs with uv."},
    {"key": "secrets-env", "category": "procedure", "importance": 4,
     "text": "Secrets for staging and prod live in AWS Secrets Manager under ledgerly/<env>/. "
             "Locally, copy .env.example to .env; never commit .env."},
    {"key": "staging-reset-weekly", "category": "fact", "importance": 2,
     "text": "The staging database is wiped and reseeded every Sunday at 03:00 UTC; don't keep "
             "anything there that you need next week."},
    {"key": "prod-read-replica", "category": "fact", "importance": 3,
     "text": "Reports read from the prod read replica (REPORTS_DATABASE_URL); writes always go "
             "to the primary. Replica lag is usually under a second."},
    {"key": "backup-policy", "category": "fact", "importance": 3,
     "text": "Prod Postgres runs on RDS with automated snapshots kept for 14 days and "
             "point-in-time recovery enabled."},
    {"key": "feature-flags", "category": "decision", "importance": 2,
     "text": "Feature flags are rows in the feature_flags table, toggled from the admin page; "
             "we decided against a third-party flag service."},
    {"key": "code-review-rule", "category": "preference", "importance": 3,
     "text": "Pull requests need one approval and should stay under about 400 changed lines; "
             "squash-merge them with a plain sentence as the title."},
    {"key": "timezone-utc", "category": "decision", "importance": 3,
     "text": "Timestamps are stored in UTC (timestamptz). Entry dates are plain DATE values in "
             "the company's fiscal timezone and are never converted."},
    {"key": "pdf-reports", "category": "fact", "importance": 2,
     "text": "PDF reports (balance sheet, P&L) are rendered with WeasyPrint from the Jinja "
             "templates in api/reports/templates/."},
    {"key": "api-celery-tasks", "category": "fact", "importance": 3,
     "text": "Background jobs (statement imports, PDF reports, emails) run on Celery with Redis "
             "as the broker; the worker is the worker service in docker compose."},
    # --- api/** and narrower ------------------------------------------------------------
    {"key": "money-as-integer-cents", "category": "decision", "importance": 5, "pinned": True,
     "paths": ["api/**"],
     "text": "Amounts are stored as integer minor units (cents) in BIGINT columns, never as "
             "float; api/ledger/money.py converts at the edges."},
    {"key": "rounding-banker", "category": "decision", "importance": 3, "paths": ["api/**"],
     "text": "Currency conversion rounds half-even (banker's rounding) to the currency's minor "
             "unit; the difference is booked to account 7999 Rounding."},
    {"key": "api-blueprints", "category": "fact", "importance": 3, "paths": ["api/**"],
     "text": "Each API area is a Flask blueprint under api/routes/, registered in api/app.py "
             "create_app() with the URL prefix /api/v1."},
    {"key": "api-sqlalchemy-session", "category": "decision", "importance": 4,
     "paths": ["api/**"],
     "text": "Use the request-scoped SQLAlchemy session from api/db.py get_session(); never "
             "create engines or sessions in route code."},
    {"key": "api-pydantic-validation", "category": "preference", "importance": 3,
     "paths": ["api/**"],
     "text": "Validate request bodies with pydantic models in api/schemas/ and return errors "
             "as RFC 7807 problem+json."},
    {"key": "api-logging", "category": "preference", "importance": 3, "paths": ["api/**"],
     "text": "Log with structlog's get_logger() and key=value fields, never print(); the "
             "middleware binds the request id."},
    {"key": "exchange-rate-service", "category": "fact", "importance": 3,
     "paths": ["api/fx/**"],
     "text": "Exchange rates come from the internal fx service (FX_SERVICE_URL, "
             "https://fx.internal/rates), cached for an hour in Redis; our client is "
             "api/fx/client.py."},
    {"key": "importer-formats", "category": "fact", "importance": 3, "paths": ["api/ledger/**"],
     "text": "The importer reads CSV, OFX and CAMT.053 bank statements; each bank's CSV column "
             "mapping is a YAML file in api/ledger/bank_profiles/."},
    {"key": "importer-dedupe", "category": "fact", "importance": 3, "paths": ["api/ledger/**"],
     "text": "Bank import deduplicates rows by a hash of account, date, amount and bank "
             "reference, so re-importing the same statement is safe."},
    {"key": "importer-csv-bom", "category": "fact", "importance": 3,
     "paths": ["api/ledger/importer.py"],
     "text": "importer.py opens bank CSVs with encoding='utf-8-sig' so the byte-order mark "
             "that Excel writes is dropped, and sniffs the delimiter from the first 4 KB with "
             "csv.Sniffer."},
    {"key": "alembic-new-migration", "category": "procedure", "importance": 4,
     "paths": ["api/migrations/**"],
     "text": "To add a migration run make migration m='add currency column': it runs alembic "
             "revision --autogenerate in the api container. Always read the generated file; "
             "autogenerate misses server defaults and enum changes."},
    {"key": "alembic-one-head", "category": "decision", "importance": 3,
     "paths": ["api/migrations/**"],
     "text": "Keep a single alembic head: when two branches both add a migration, rebase and "
             "re-point down_revision instead of writing a merge migration."},
    {"key": "migrations-backward-compatible", "category": "decision", "importance": 4,
     "paths": ["api/migrations/**"],
     "text": "Migrations must work with the previous release (expand, then contract): add "
             "nullable columns first, backfill, and drop old columns only a release later, "
             "because prod runs migrations before the new pods roll out."},
    # --- web/** and exactly web/src/app.ts ----------------------------------------------
    {"key": "pnpm-only", "category": "preference", "importance": 4, "paths": ["web/**"],
     "text": "In web/ use pnpm, never npm or yarn; the lockfile is pnpm-lock.yaml and CI runs "
             "pnpm install --frozen-lockfile."},
    {"key": "web-api-client", "category": "decision", "importance": 4, "paths": ["web/**"],
     "text": "The web app talks to the API only through the generated client in web/src/api/ "
             "(pnpm gen:api regenerates it from the OpenAPI spec); no hand-written fetch calls."},
    {"key": "web-react-query", "category": "preference", "importance": 3, "paths": ["web/**"],
     "text": "Server state in the web app goes through TanStack Query; no Redux. Local UI state "
             "stays in the components."},
    {"key": "web-money-format", "category": "preference", "importance": 3, "paths": ["web/**"],
     "text": "Format amounts in the web app with formatMoney from web/src/lib/money.ts "
             "(Intl.NumberFormat with the company's currency); never toFixed."},
    {"key": "web-strict-ts", "category": "decision", "importance": 3, "paths": ["web/**"],
     "text": "TypeScript runs in strict mode with noUncheckedIndexedAccess; no `any`, use "
             "`unknown` and narrow it."},
    {"key": "web-deps-renovate", "category": "procedure", "importance": 3, "paths": ["web/**"],
     "text": "Web dependency bumps come through Renovate's weekly pull request. To bump by hand, "
             "run pnpm up --latest in web/, then pnpm test and pnpm build; a React major "
             "version needs a decision record."},
    {"key": "vite-proxy", "category": "fact", "importance": 2, "paths": ["web/**"],
     "text": "The Vite dev server proxies /api to http://localhost:5000 (web/vite.config.ts), "
             "so the web app needs no CORS setup locally."},
    {"key": "web-tests-vitest", "category": "procedure", "importance": 3, "paths": ["web/**"],
     "text": "Web unit tests: pnpm test runs Vitest; component tests use Testing Library; "
             "snapshot tests are not allowed."},
    {"key": "web-app-ts-bootstrap", "category": "fact", "importance": 3,
     "paths": ["web/src/app.ts"],
     "text": "web/src/app.ts is the bootstrap: it registers Sentry, the query client and the "
             "router, in that order; Sentry has to be initialised before the router or "
             "navigation errors are lost."},
    # --- Chinese ------------------------------------------------------------------------
    {"key": "slow-query-procedure", "category": "procedure", "importance": 4,
     "text": "慢查询排查：先在 Grafana 的数据库面板看 p95 延迟，再用 pg_stat_statements 找出总耗时"
             "最高的语句，对它执行 EXPLAIN (ANALYZE, BUFFERS)，检查是否缺少索引或统计信息过期，"
             "必要时对该表执行 ANALYZE。"},
    {"key": "pitr-procedure", "category": "procedure", "importance": 5,
     "text": "生产库按时间点恢复：在 RDS 控制台选择“恢复到时间点”，恢复成一个新实例，不要覆盖原实例；"
             "核对数据后修改 Secrets Manager 中的 DATABASE_URL，再重启 api 和 worker。全程需要两人在场。"},
    {"key": "oncall-handover-zh", "category": "procedure", "importance": 3,
     "text": "值班交接：每周一交接前，在 #ledgerly-oncall 频道写明未关闭的告警、进行中的事故和需要跟进"
             "的工单。"},
    {"key": "zh-invoice-glossary", "category": "fact", "importance": 3,
     "text": "术语：凭证就是一笔分录（entry）。凭证号按公司和会计期间连续编号，作废的凭证号不能复用。"},
    {"key": "zh-tax-rate", "category": "decision", "importance": 3,
     "text": "增值税税率配置在 tax_rates 表中，按生效日期取值；调整税率时只能新增一行，不能修改旧行，"
             "否则历史凭证会被重新计算。"},
    {"key": "zh-connection-pool", "category": "fact", "importance": 3,
     "text": "连接池：api 的 SQLAlchemy 连接池大小为 10，最大溢出 5；Celery worker 每个进程占 2 个"
             "连接。数据库连接数告警阈值是 80%。"},
    {"key": "zh-month-end-close", "category": "procedure", "importance": 4,
     "text": "月末结账流程：先确认所有银行流水已导入并完成对账，再运行 make close-period "
             "PERIOD=2026-10，最后导出试算平衡表发给财务。"},
    {"key": "zh-frontend-i18n", "category": "preference", "importance": 3, "paths": ["web/**"],
     "text": "前端文案统一放在 web/src/locales/zh-CN.json 和 en.json 中，不要在组件里硬编码中文。"},
    {"key": "zh-importer-encoding", "category": "fact", "importance": 3, "paths": ["api/**"],
     "text": "部分国内银行导出的对账单是 GBK 编码；导入器先尝试 UTF-8，失败后回退到 GB18030。"},
    {"key": "zh-staging-access", "category": "procedure", "importance": 3,
     "text": "访问预发布环境（staging）需要先连公司 VPN；账号由运维在 1Password 的 Ledgerly Staging "
             "保险库中发放。"},
    {"key": "zh-code-review-time", "category": "preference", "importance": 2,
     "text": "代码评审尽量在一个工作日内完成；超过两天没人看的 PR 可以在站会上提出来。"},
    {"key": "zh-log-retention", "category": "fact", "importance": 3,
     "text": "日志保留策略：生产环境日志在 CloudWatch 中保留 30 天；审计日志（audit_log 表）永久保留，"
             "不得删除。"},
]

KEYS: set[str] = {m["key"] for m in MEMORIES}

# Path groups, for the ``ok`` lists of the tool events (every memory a file's globs match).
WEB_ALL = ["pnpm-only", "web-api-client", "web-react-query", "web-money-format", "web-strict-ts",
           "web-deps-renovate", "vite-proxy", "web-tests-vitest", "zh-frontend-i18n"]
API_ALL = ["money-as-integer-cents", "rounding-banker", "api-blueprints", "api-sqlalchemy-session",
           "api-pydantic-validation", "api-logging", "zh-importer-encoding"]
LEDGER = ["importer-formats", "importer-dedupe"]
MIGRATIONS = ["alembic-new-migration", "alembic-one-head", "migrations-backward-compatible"]

KINDS = ("keyword", "morphology", "typo", "identifier", "cjk", "mixed", "paraphrase_en",
         "paraphrase_zh", "no_answer")

QUERIES_TUNE: dict[str, list[Query]] = {
    "keyword": [
        ("pnpm lockfile", ["pnpm-only"]),
        ("Sentry project", ["sentry-errors"]),
        ("alembic head", ["alembic-one-head"]),
        ("feature flags", ["feature-flags"]),
        ("WeasyPrint", ["pdf-reports"]),
        ("Renovate", ["web-deps-renovate"]),
        ("on-call PagerDuty schedule", ["oncall-rotation"]),
        ("Celery broker", ["api-celery-tasks"]),
        ("read replica", ["prod-read-replica"]),
        ("structlog", ["api-logging"]),
        ("postmortem", ["incident-postmortem"]),
    ],
    "morphology": [
        ("deployed to staging", ["deploy-staging"]),
        ("writing migrations", ["alembic-new-migration"]),
        ("flakiness e2e", ["ci-flaky-playwright"]),
        ("rotating on-call", ["oncall-rotation"]),
        ("deduplicated rows", ["importer-dedupe"]),
        ("formatted amounts", ["web-money-format"]),
        ("validating request bodies", ["api-pydantic-validation"]),
        ("logging fields", ["api-logging"]),
        ("acknowledging pages", ["oncall-pager-ack"]),
        ("rendering reports", ["pdf-reports"]),
        ("bumped web dependencies", ["web-deps-renovate"]),
    ],
    "typo": [
        ("alembc single head", ["alembic-one-head"]),
        ("postgers port", ["local-pg-port"]),
        ("pnmp", ["pnpm-only"]),
        ("playwrite flaky", ["ci-flaky-playwright"]),
        ("sentyr", ["sentry-errors"]),
        ("celary worker", ["api-celery-tasks"]),
        ("renovat", ["web-deps-renovate"]),
        ("postmortm", ["incident-postmortem"]),
        ("exchnage rates", ["exchange-rate-service"]),
        ("pydnatic", ["api-pydantic-validation"]),
        ("feture flags", ["feature-flags"]),
    ],
    "identifier": [
        ("api/ledger/importer.py", ["importer-csv-bom"]),
        ("make db-reset", ["make-db-reset"]),
        ("pnpm-lock.yaml", ["pnpm-only"]),
        ("get_session", ["api-sqlalchemy-session"]),
        ("FX_SERVICE_URL", ["exchange-rate-service"]),
        ("utf-8-sig", ["importer-csv-bom"]),
        ("web/vite.config.ts", ["vite-proxy"]),
        ("fiscal_year_start", ["fiscal-year"]),
        ("ci.yml", ["ci-workflows"]),
        ("docs/postmortems/", ["incident-postmortem"]),
        ("seed.sql", ["make-db-reset"]),
    ],
    "cjk": [
        ("慢查询", ["slow-query-procedure"]),
        ("数据库查询很慢怎么办", ["slow-query-procedure"]),
        ("按时间点恢复", ["pitr-procedure"]),
        ("值班交接", ["oncall-handover-zh"]),
        ("凭证号", ["zh-invoice-glossary"]),
        ("税率", ["zh-tax-rate"]),
        ("连接池大小", ["zh-connection-pool"]),
        ("月末结账", ["zh-month-end-close"]),
        ("日志保留多久", ["zh-log-retention"]),
        ("预发布环境怎么访问", ["zh-staging-access"]),
        ("前端文案", ["zh-frontend-i18n"]),
    ],
    "mixed": [
        ("staging 需要 VPN 吗", ["zh-staging-access"]),
        ("pg_stat_statements 怎么用", ["slow-query-procedure"]),
        ("RDS 恢复到时间点", ["pitr-procedure", "backup-policy"]),
        ("GBK 编码的 CSV", ["zh-importer-encoding"]),
        ("SQLAlchemy 连接池", ["zh-connection-pool"]),
        ("PR 评审时间", ["zh-code-review-time"]),
        ("make close-period 之前要做什么", ["zh-month-end-close"]),
        ("CloudWatch 日志保留", ["zh-log-retention"]),
        ("web 文案 zh-CN.json", ["zh-frontend-i18n"]),
        ("tax_rates 表怎么改", ["zh-tax-rate"]),
        ("用 pnpm 装依赖", ["pnpm-only"]),
    ],
    "paraphrase_en": [
        ("which package manager does the frontend use", ["pnpm-only"]),
        ("how do I ship to the live site", ["deploy-prod"]),
        ("where do crash reports end up", ["sentry-errors"]),
        ("who gets woken up at night this week", ["oncall-rotation"]),
        ("how do I get a clean local database with sample data", ["make-db-reset"]),
        ("can I add a new library to the backend", ["no-new-deps-adr"]),
        ("how should money values be kept in the database", ["money-as-integer-cents"]),
        ("what happens if the same bank file is uploaded twice", ["importer-dedupe"]),
        ("what is a single line of a journal transaction called", ["glossary-posting"]),
        ("why does the browser app reach the backend in dev without cross-origin trouble",
         ["vite-proxy"]),
        ("how long are database backups kept", ["backup-policy"]),
    ],
    "paraphrase_zh": [
        ("线上数据库误删了数据怎么找回", ["pitr-procedure", "backup-policy"]),
        ("怎么找出最耗时的语句", ["slow-query-procedure"]),
        ("下周轮到我值班，交班时要写什么", ["oncall-handover-zh"]),
        ("界面上的中文字符串应该放在哪里", ["zh-frontend-i18n"]),
        ("能不能直接修改旧的税率记录", ["zh-tax-rate"]),
        ("每个月底要做哪些账务操作", ["zh-month-end-close"]),
        ("测试环境的登录账号去哪里拿", ["zh-staging-access"]),
        ("前端用什么包管理器", ["pnpm-only"]),
        ("金额在数据库里用什么类型保存", ["money-as-integer-cents"]),
        ("生产部署可以在周五做吗", ["deploy-prod"]),
        ("作废的单据编号还能再用吗", ["zh-invoice-glossary"]),
    ],
    "no_answer": [
        ("what port does staging db use", []),
        ("how do I rotate the Stripe API key", []),
        ("helm chart values for kubernetes", []),
        ("who is the product manager", []),
        ("where is the GraphQL schema", []),
        ("how to build the iOS app", []),
        ("SLA for customer support tickets", []),
        ("Elasticsearch index mapping", []),
        ("公司的年假政策是什么", []),
    ],
}

QUERIES_HELDOUT: dict[str, list[Query]] = {
    "keyword": [
        ("httpx", ["httpx-not-requests"]),
        ("Vitest", ["web-tests-vitest"]),
        ("TanStack Query", ["web-react-query"]),
        ("exchange rates", ["exchange-rate-service"]),
        ("banker's rounding", ["rounding-banker"]),
        ("Secrets Manager", ["secrets-env", "pitr-procedure"]),
        ("PagerDuty", ["oncall-rotation"]),
        ("Playwright flaky", ["ci-flaky-playwright"]),
        ("mailpit", ["docker-compose-services"]),
        ("fiscal year", ["fiscal-year"]),
        ("RDS snapshots", ["backup-policy"]),
    ],
    "morphology": [
        ("deploying prod", ["deploy-prod"]),
        ("imported statements", ["importer-formats", "importer-dedupe"]),
        ("closed periods", ["glossary-period-close"]),
        ("squashing merges", ["code-review-rule"]),
        ("reseeding staging", ["staging-reset-weekly"]),
        ("converting currencies", ["rounding-banker"]),
        ("caching rates", ["exchange-rate-service"]),
        ("initialise Sentry", ["web-app-ts-bootstrap"]),
        ("proxying api requests", ["vite-proxy"]),
        ("linting", ["ruff-mypy"]),
        ("reversed entries", ["glossary-entry", "glossary-period-close"]),
    ],
    "typo": [
        ("htpx", ["httpx-not-requests"]),
        ("vitset", ["web-tests-vitest"]),
        ("structlgo", ["api-logging"]),
        ("weasyprnt", ["pdf-reports"]),
        ("pagerduty rotaton", ["oncall-rotation"]),
        ("docker compsoe services", ["docker-compose-services"]),
        ("tanstak query", ["web-react-query"]),
        ("bankers roundnig", ["rounding-banker"]),
        ("dedupliate import", ["importer-dedupe"]),
        ("replcia lag", ["prod-read-replica"]),
        ("mirgations backward compatible", ["migrations-backward-compatible"]),
    ],
    "identifier": [
        ("web/src/app.ts", ["web-app-ts-bootstrap"]),
        ("make migration", ["alembic-new-migration"]),
        ("REPORTS_DATABASE_URL", ["prod-read-replica"]),
        ("formatMoney", ["web-money-format"]),
        ("create_app", ["api-blueprints"]),
        ("feature_flags table", ["feature-flags"]),
        ("make close-period", ["zh-month-end-close"]),
        ("down_revision", ["alembic-one-head"]),
        (".env.example", ["secrets-env"]),
        ("api/fx/client.py", ["exchange-rate-service"]),
        ("tax_rates", ["zh-tax-rate"]),
        ("pg_stat_statements", ["slow-query-procedure"]),
    ],
    "cjk": [
        ("生产库恢复", ["pitr-procedure"]),
        ("查询慢", ["slow-query-procedure"]),
        ("缺少索引", ["slow-query-procedure"]),
        ("银行对账单编码", ["zh-importer-encoding"]),
        ("税率改了怎么办", ["zh-tax-rate"]),
        ("审计日志能删除吗", ["zh-log-retention"]),
        ("交接前要写什么", ["oncall-handover-zh"]),
        ("作废凭证", ["zh-invoice-glossary"]),
        ("试算平衡表", ["zh-month-end-close"]),
        ("代码评审多久完成", ["zh-code-review-time"]),
        ("连接数告警", ["zh-connection-pool"]),
    ],
    "mixed": [
        ("pnpm 还是 npm", ["pnpm-only"]),
        ("EXPLAIN ANALYZE 很慢", ["slow-query-procedure"]),
        ("Secrets Manager 里的 DATABASE_URL", ["pitr-procedure", "secrets-env"]),
        ("oncall 交接 频道", ["oncall-handover-zh"]),
        ("Excel 导出的 CSV 有 BOM", ["importer-csv-bom"]),
        ("Celery worker 连接数", ["zh-connection-pool"]),
        ("1Password staging 账号", ["zh-staging-access"]),
        ("audit_log 表保留多久", ["zh-log-retention"]),
        ("GB18030 回退", ["zh-importer-encoding"]),
        ("Grafana p95 延迟", ["slow-query-procedure"]),
        ("entry 凭证编号", ["zh-invoice-glossary"]),
    ],
    "paraphrase_en": [
        ("which library for calling other web services from Python", ["httpx-not-requests"]),
        ("how do I check my change doesn't break anything", ["test-make-docker"]),
        ("what must a schema change respect so old pods keep working",
         ["migrations-backward-compatible"]),
        ("can we use Redux for global state", ["web-react-query"]),
        ("where do currency conversion prices come from", ["exchange-rate-service"]),
        ("which weekday is off limits for a release to customers", ["deploy-prod"]),
        ("what is one leg of a double-entry transaction called", ["glossary-posting"]),
        ("how should the backend write diagnostic output", ["api-logging"]),
        ("why does the pre-production environment lose its data", ["staging-reset-weekly"]),
        ("where are the live environment's credentials stored", ["secrets-env"]),
        ("what do we do after a major outage", ["incident-postmortem"]),
        ("how do I fix numbers in a month that is already locked", ["glossary-period-close"]),
    ],
    "paraphrase_zh": [
        ("页面加载时数据库特别慢，该从哪里查起", ["slow-query-procedure"]),
        ("线上库的数据需要回到昨天下午的状态", ["pitr-procedure"]),
        ("国内银行的流水文件导入后是乱码", ["zh-importer-encoding"]),
        ("系统日志能存多久", ["zh-log-retention"]),
        ("数据库连接不够用了", ["zh-connection-pool"]),
        ("提交的合并请求一直没人看怎么办", ["zh-code-review-time"]),
        ("怎么跑测试", ["test-make-docker"]),
        ("可以随便加第三方库吗", ["no-new-deps-adr"]),
        ("发 HTTP 请求用哪个库", ["httpx-not-requests"]),
        ("一笔分录里的一行叫什么", ["glossary-posting"]),
        ("税点调整以后历史账单会变吗", ["zh-tax-rate"]),
    ],
    "no_answer": [
        ("staging database port", []),
        ("how do I renew my VPN certificate", []),
        ("MongoDB replica set", []),
        ("where is the Terraform state bucket", []),
        ("how to publish the mobile app to the App Store", []),
        ("Kafka topic naming convention", []),
        ("which meeting room is the standup in", []),
        ("客户退款流程是什么", []),
        ("Windows 开发环境怎么配置", []),
    ],
}

PROMPTS_TUNE: list[Prompt] = [
    ("add an HTTP client call to the exchange rate service",
     ["httpx-not-requests", "exchange-rate-service"], ["no-new-deps-adr"]),
    ("the importer crashes on a CSV with a BOM",
     ["importer-csv-bom"], ["importer-formats", "zh-importer-encoding"]),
    ("bump the web deps", ["web-deps-renovate", "pnpm-only"], ["no-new-deps-adr"]),
    ("write a migration adding a currency column to accounts",
     ["alembic-new-migration", "migrations-backward-compatible"],
     ["alembic-one-head", "money-as-integer-cents"]),
    ("thanks, that looks good", [], []),
    ("run the tests", ["test-make-docker"], ["make-targets-list", "web-tests-vitest"]),
    ("deploy the current main to production",
     ["deploy-prod"], ["deploy-staging", "release-tag", "migrations-backward-compatible"]),
    ("why is the trial balance query so slow on prod?",
     ["slow-query-procedure"], ["prod-read-replica", "zh-month-end-close"]),
    ("rename the variable tmp to row in this function", [], []),
    ("add a new Flask endpoint that lists the postings of an account",
     ["api-blueprints"],
     ["api-sqlalchemy-session", "api-pydantic-validation", "glossary-posting"]),
    ("I can't connect to postgres locally, connection refused on 5432",
     ["local-pg-port"], ["docker-compose-services", "make-db-reset"]),
    ("add a React page showing the balance sheet",
     ["web-api-client", "web-react-query"],
     ["web-money-format", "pdf-reports", "zh-frontend-i18n", "pnpm-only"]),
    ("install lodash in the frontend", ["pnpm-only", "no-new-deps-adr"], []),
    ("the e2e job failed on the CSV upload again", ["ci-flaky-playwright"], ["ci-workflows"]),
    ("what's the difference between an entry and a posting?",
     ["glossary-posting", "glossary-entry"], ["zh-invoice-glossary"]),
    ("我被告警叫醒了，第一步做什么", ["oncall-pager-ack"], ["oncall-handover-zh", "oncall-rotation"]),
    ("帮我把 prod 库恢复到今天早上九点", ["pitr-procedure"], ["backup-policy", "secrets-env"]),
    ("explain what a Python decorator is", [], []),
    ("add logging to the statement import task",
     ["api-logging"], ["api-celery-tasks", "importer-dedupe", "importer-formats"]),
    ("amounts show 10.1 instead of 10.10 in the invoice table",
     ["web-money-format"], ["money-as-integer-cents"]),
    ("set up a background job that emails the monthly report",
     ["api-celery-tasks"], ["pdf-reports", "docker-compose-services"]),
    ("change the VAT rate to 13% from next month", ["zh-tax-rate"], []),
    ('format this JSON for me: {"a":1,"b":[2,3]}', [], []),
    ("how do I get access to staging?",
     ["zh-staging-access"], ["secrets-env", "deploy-staging", "staging-reset-weekly"]),
    ("convert the report totals to EUR",
     ["exchange-rate-service", "rounding-banker"], ["money-as-integer-cents"]),
    ("git rebase left two alembic heads, fix it", ["alembic-one-head"], ["alembic-new-migration"]),
    ("good morning!", [], []),
    ("write a haiku about autumn", [], []),
]

PROMPTS_HELDOUT: list[Prompt] = [
    ("call the bank's API to fetch statements automatically",
     ["httpx-not-requests"], ["no-new-deps-adr", "importer-formats", "importer-dedupe"]),
    ("the importer chokes on a GBK-encoded statement from ICBC",
     ["zh-importer-encoding"], ["importer-csv-bom", "importer-formats"]),
    ("upgrade react to the next major version",
     ["web-deps-renovate", "no-new-deps-adr"], ["pnpm-only"]),
    ("add a nullable column memo to the entries table",
     ["alembic-new-migration", "migrations-backward-compatible"],
     ["alembic-one-head", "glossary-entry"]),
    ("ok thanks", [], []),
    ("the tests hang at startup with 'cannot connect to the Docker daemon'",
     ["test-make-docker"], ["docker-compose-services"]),
    ("ship v1.4.0", ["deploy-prod", "release-tag"], ["deploy-staging"]),
    ("生产环境的报表查询越来越慢，帮我看看", ["slow-query-procedure"],
     ["zh-connection-pool", "prod-read-replica"]),
    ("sort these imports alphabetically", [], []),
    ("add an endpoint to close a period",
     ["glossary-period-close", "api-blueprints"],
     ["zh-month-end-close", "api-pydantic-validation", "api-sqlalchemy-session"]),
    ("my DATABASE_URL doesn't work on my machine",
     ["local-pg-port"], ["secrets-env", "docker-compose-services"]),
    ("build a component that lists journal entries with pagination",
     ["web-api-client", "web-react-query"],
     ["web-money-format", "glossary-entry", "zh-frontend-i18n"]),
    ("npm install date-fns in web", ["pnpm-only", "no-new-deps-adr"], []),
    ("CI is red on the lint step", ["ruff-mypy"], ["ci-workflows"]),
    ("is a posting the same thing as an entry?",
     ["glossary-posting", "glossary-entry"], ["zh-invoice-glossary"]),
    ("这周谁值班？", ["oncall-rotation"], ["oncall-handover-zh", "oncall-pager-ack"]),
    ("someone dropped the payments table in prod an hour ago, help",
     ["pitr-procedure"], ["backup-policy", "oncall-pager-ack", "incident-postmortem"]),
    ("what is the capital of Australia", [], []),
    ("the api prints debug output with print(), clean it up", ["api-logging"], []),
    ("show amounts with the right currency symbol on the dashboard",
     ["web-money-format"], ["exchange-rate-service"]),
    ("move the PDF generation out of the request into a job",
     ["api-celery-tasks", "pdf-reports"], []),
    ("把增值税从 6% 调成 9%", ["zh-tax-rate"], []),
    ("where do I put the staging credentials for my script",
     ["secrets-env"], ["zh-staging-access"]),
    ("round the converted amount correctly",
     ["rounding-banker"], ["exchange-rate-service", "money-as-integer-cents"]),
    ("can you explain this regex: ^\\d{4}-\\d{2}$", [], []),
    ("页面上的按钮文字要改成中文", ["zh-frontend-i18n"], []),
    ("lol", [], []),
    ("the web app initialises Sentry after the router, move it earlier",
     ["web-app-ts-bootstrap"], ["sentry-errors"]),
]

TOOLS_TUNE: list[ToolEvent] = [
    ("Read", "api/ledger/importer.py", ["importer-csv-bom"], LEDGER + API_ALL),
    ("Edit", "web/src/app.ts", ["web-app-ts-bootstrap"], WEB_ALL),
    ("Edit", "web/src/pages/Accounts.tsx", ["web-api-client", "web-react-query"], WEB_ALL),
    ("Read", "api/routes/accounts.py", ["api-blueprints", "api-sqlalchemy-session"], API_ALL),
    ("Edit", "api/ledger/money.py", ["money-as-integer-cents"], LEDGER + API_ALL),
    ("Read", "README.md", [], []),
    ("Edit", "web/package.json", ["pnpm-only", "web-deps-renovate"], WEB_ALL),
    ("Write", "api/migrations/versions/20261101_add_currency.py",
     ["alembic-new-migration", "migrations-backward-compatible"], MIGRATIONS + API_ALL),
    ("Edit", ".github/workflows/e2e.yml", ["ci-flaky-playwright", "ci-workflows"], []),
    ("Edit", "web/src/locales/zh-CN.json", ["zh-frontend-i18n"], WEB_ALL),
    ("Read", "api/fx/client.py", ["exchange-rate-service"], API_ALL),
]

TOOLS_HELDOUT: list[ToolEvent] = [
    ("Edit", "api/ledger/importer.py", ["importer-csv-bom"], LEDGER + API_ALL),
    ("Read", "web/src/app.ts", ["web-app-ts-bootstrap"], WEB_ALL),
    ("Edit", "web/src/lib/money.ts", ["web-money-format"], WEB_ALL),
    ("Read", "api/schemas/entry.py", ["api-pydantic-validation"], API_ALL),
    ("Edit", "api/ledger/bank_profiles/icbc.yaml", ["importer-formats"], LEDGER + API_ALL),
    ("Read", "Makefile", [], []),
    ("Edit", "web/pnpm-lock.yaml", ["pnpm-only"], WEB_ALL),
    ("Edit", "api/migrations/env.py", ["alembic-new-migration"], MIGRATIONS + API_ALL),
    ("Read", ".github/workflows/ci.yml", ["ci-workflows"], []),
    ("Edit", "api/app.py", ["api-blueprints"], API_ALL),
    ("Read", "web/vite.config.ts", ["vite-proxy"], WEB_ALL),
]

#: A third prompt split, written on 2026-12-03 before any of it was run, after the
#: ``heldout`` prompts had been looked at while tuning (so ``heldout`` prompts now count as
#: tuned on; this split is the one reported). Queries and tool events are those of the
#: ``heldout`` split: only the prompts are new. Everyday prompts: questions, bug reports,
#: commands, with and without the memories' words; four need nothing.
PROMPTS_FRESH: list[Prompt] = [
    ("add retry logic when the fx rates endpoint times out",
     ["exchange-rate-service", "httpx-not-requests"], []),
    ("write a migration that renames entries.memo to entries.description",
     ["alembic-new-migration", "migrations-backward-compatible"], ["alembic-one-head"]),
    ("the balance sheet PDF has broken fonts", ["pdf-reports"], ["api-celery-tasks"]),
    ("how do I run the test suite locally?", ["test-make-docker"],
     ["make-targets-list", "docker-compose-services"]),
    ("pytest fails with 'connection refused' on localhost:5432", ["test-make-docker"],
     ["local-pg-port", "docker-compose-services"]),
    ("add the pandas library so I can crunch the report numbers", ["no-new-deps-adr"], ["pdf-reports"]),
    ("store the invoice total as a float column", ["money-as-integer-cents"],
     ["migrations-backward-compatible", "alembic-new-migration"]),
    ("show amounts with two decimals in the transactions table on the frontend", ["web-money-format"],
     ["money-as-integer-cents"]),
    ("add a Redux store for the filter state", ["web-react-query"], ["web-strict-ts"]),
    ("fetch the accounts list with axios in the Accounts page", ["web-api-client"],
     ["web-react-query", "no-new-deps-adr", "pnpm-only"]),
    ("yarn add chart.js", ["pnpm-only", "no-new-deps-adr"], ["web-deps-renovate"]),
    ("can we deploy the hotfix to production this Friday evening?", ["deploy-prod"], ["release-tag"]),
    ("prepare release 2.3.0", ["release-tag"], ["deploy-prod", "code-review-rule"]),
    ("the staging data I created last week is gone", ["staging-reset-weekly"], ["deploy-staging"]),
    ("I got paged at 3am, what now?", ["oncall-pager-ack"], ["oncall-rotation", "incident-postmortem"]),
    ("write up yesterday's SEV2 outage", ["incident-postmortem"], ["oncall-pager-ack"]),
    ("where do I find the production database password?", ["secrets-env"], ["zh-staging-access"]),
    ("replace the print statements in the importer with proper logging", ["api-logging"],
     ["importer-formats"]),
    ("add support for Barclays CSV exports", ["importer-formats"], ["importer-dedupe", "importer-csv-bom"]),
    ("importing the same OFX file twice creates duplicate rows", ["importer-dedupe"], ["importer-formats"]),
    ("convert EUR to USD and round the result", ["rounding-banker"],
     ["exchange-rate-service", "money-as-integer-cents"]),
    ("a user can't edit an entry from last year, why?", ["glossary-period-close"],
     ["glossary-entry", "fiscal-year"]),
    ("add a /api/v1/budgets endpoint", ["api-blueprints", "api-pydantic-validation"],
     ["api-sqlalchemy-session"]),
    ("create a SQLAlchemy engine in the reports route to query faster", ["api-sqlalchemy-session"],
     ["prod-read-replica"]),
    ("the report queries are slowing down the primary database", ["prod-read-replica"],
     ["slow-query-procedure", "zh-connection-pool"]),
    ("thanks, that looks good", [], []),
    ("rename the variable x to total in this function", [], []),
    ("what's the difference between a list and a tuple in Python?", [], []),
    ("refactor this function to use a list comprehension", [], []),
    ("数据库连接数告警了怎么办", ["zh-connection-pool"], ["slow-query-procedure"]),
    ("作废的凭证号可以再用吗", ["zh-invoice-glossary"], []),
    ("修改增值税税率", ["zh-tax-rate"], []),
    ("audit_log 表太大了，能删掉旧数据吗", ["zh-log-retention"], []),
    ("月底结账要做什么", ["zh-month-end-close"], ["glossary-period-close"]),
    ("the e2e job failed on the CSV upload test again", ["ci-flaky-playwright"], ["ci-workflows"]),
    ("add a feature toggle for the new importer", ["feature-flags"], ["importer-formats"]),
    ("my PR has 900 changed lines, is that ok?", ["code-review-rule"], ["zh-code-review-time"]),
    ("what Python version should my venv use?", ["python-version"], []),
    ("dates in the export are shifted by one day", ["timezone-utc"], []),
    ("the frontend can't reach the API in dev, CORS error", ["vite-proxy"], ["docker-compose-services"]),
    ("send a welcome email when a company signs up", ["api-celery-tasks"], ["docker-compose-services"]),
    ("write a snapshot test for the EntryTable component", ["web-tests-vitest"], ["web-strict-ts"]),
    ("use any for the API response type, it's quicker", ["web-strict-ts"], ["web-api-client"]),
    ("what's account 4000?", ["glossary-account-code"], []),
    ("the sum of an entry's lines isn't zero", ["glossary-posting"], ["glossary-entry"]),
    ("reset my local database with fresh seed data", ["make-db-reset"], ["make-targets-list"]),
    ("format the code", ["ruff-mypy"], ["make-targets-list"]),
    ("errors in staging don't show up in Sentry", ["sentry-errors"], ["deploy-staging"]),
    ("we lost data in production after a bad migration an hour ago", ["pitr-procedure", "backup-policy"],
     ["migrations-backward-compatible"]),
    ("hardcode the Chinese label '保存' in the SaveButton", ["zh-frontend-i18n"], []),
    ("some bank statements from a Chinese bank show garbled characters", ["zh-importer-encoding"],
     ["importer-csv-bom", "importer-formats"]),
    ("who should I hand over to on Monday", ["oncall-rotation", "oncall-handover-zh"], ["oncall-pager-ack"]),
]

#: A fourth prompt split, written on 2026-12-04 for issue 18 before any of it was run and
#: before the prompt hook's rule was changed again; the ``tune`` and ``heldout`` prompts are
#: the ones tuned on, ``fresh`` and this split are only reported. Queries and tool events are
#: those of the ``heldout`` split. Everyday prompts (questions, bug reports, commands), 15 in
#: Chinese or mixed; seven need nothing.
PROMPTS_FRESH2: list[Prompt] = [
    ("why does my .env point the database at 5433?", ["local-pg-port"], ["secrets-env"]),
    ("psql says no server is listening, is postgres on some other port on my Mac?",
     ["local-pg-port"], ["docker-compose-services"]),
    ("set a 5 second timeout on the outgoing call to the tax authority API",
     ["httpx-not-requests"], ["no-new-deps-adr"]),
    ("can I pip install stripe for the payments integration?", ["no-new-deps-adr"],
     ["httpx-not-requests"]),
    ("the debits and credits of this journal entry don't balance",
     ["glossary-posting", "glossary-entry"], ["glossary-period-close", "zh-invoice-glossary"]),
    ("how do I fix a mistake in an entry that was already posted?", ["glossary-entry"],
     ["glossary-period-close", "zh-invoice-glossary"]),
    ("which digit of an account number decides whether it lands on the P&L?",
     ["glossary-account-code"], ["pdf-reports"]),
    ("our new customer's financial year starts in April, can we handle that?", ["fiscal-year"],
     ["glossary-period-close"]),
    ("I merged to main twenty minutes ago, when does it show up on staging?", ["deploy-staging"],
     ["sentry-errors"]),
    ("roll the new version out to prod", ["deploy-prod"],
     ["release-tag", "migrations-backward-compatible"]),
    ("generate the changelog for the next version", ["release-tag"], []),
    ("what does CI run on a pull request?", ["ci-workflows"], ["ruff-mypy", "code-review-rule"]),
    ("the nightly Playwright run is red, the upload spec timed out", ["ci-flaky-playwright"],
     ["ci-workflows"]),
    ("who is on call this week?", ["oncall-rotation"], ["oncall-handover-zh", "oncall-pager-ack"]),
    ("prod is down, I just got the alert", ["oncall-pager-ack"],
     ["pitr-procedure", "incident-postmortem", "sentry-errors", "oncall-rotation"]),
    ("do we need a write-up for last night's SEV1?", ["incident-postmortem"], ["oncall-pager-ack"]),
    ("where can I see the stack trace of the 500 error users hit on the web app?",
     ["sentry-errors"], []),
    ("wipe my dev database and start over", ["make-db-reset"], ["make-targets-list"]),
    ("which make targets do we have?", ["make-targets-list"],
     ["ruff-mypy", "test-make-docker", "make-db-reset", "release-tag"]),
    ("which port is mailpit on? I want to see the emails the app sends",
     ["docker-compose-services"], ["api-celery-tasks"]),
    ("mypy complains about missing return types in api/routes", ["ruff-mypy"],
     ["ci-workflows", "api-blueprints"]),
    ("which Python should the Dockerfile use?", ["python-version"], []),
    ("I need the AWS credentials for the staging bucket", ["secrets-env"], ["zh-staging-access"]),
    ("is it fine to keep my demo company in the staging database for the next few weeks?",
     ["staging-reset-weekly"], ["zh-staging-access"]),
    ("point the reporting endpoints at a replica connection", ["prod-read-replica"],
     ["zh-connection-pool", "api-sqlalchemy-session"]),
    ("how long do we keep database backups?", ["backup-policy"], ["pitr-procedure"]),
    ("restore prod to how it was before 14:00 today", ["pitr-procedure", "backup-policy"],
     ["secrets-env"]),
    ("let's use LaunchDarkly to roll the new dashboard out gradually", ["feature-flags"],
     ["no-new-deps-adr"]),
    ("what title should I give this PR when I merge it?", ["code-review-rule"], []),
    ("store created_at as a naive datetime in local time", ["timezone-utc"],
     ["alembic-new-migration", "migrations-backward-compatible"]),
    ("change the layout of the profit and loss PDF", ["pdf-reports"], []),
    ("the statement import runs inside the HTTP request and times out, move it to the background",
     ["api-celery-tasks"], ["importer-formats"]),
    ("use Decimal for the amount field of the new Invoice model", ["money-as-integer-cents"],
     ["alembic-new-migration", "migrations-backward-compatible"]),
    ("converting 10.005 EUR to USD comes out a cent off", ["rounding-banker"],
     ["exchange-rate-service", "money-as-integer-cents"]),
    ("register the new reports routes under /api/v1", ["api-blueprints"], ["pdf-reports"]),
    ("open a database connection in the invoices view", ["api-sqlalchemy-session"],
     ["zh-connection-pool", "api-blueprints"]),
    ("return a 422 with details when the POST body has no amount", ["api-pydantic-validation"],
     ["api-blueprints"]),
    ("the fx rates stay stale for an hour after they change", ["exchange-rate-service"], []),
    ("map the columns of the HSBC CSV export", ["importer-formats"], ["importer-csv-bom"]),
    ("the first header of an uploaded CSV comes out as '\\ufeffdate'", ["importer-csv-bom"],
     ["importer-formats"]),
    ("alembic upgrade head says 'Multiple head revisions are present'", ["alembic-one-head"],
     ["alembic-new-migration"]),
    ("drop the legacy amount_float column from transactions", ["migrations-backward-compatible"],
     ["alembic-new-migration", "money-as-integer-cents"]),
    ("add zod to the web app for form validation", ["pnpm-only", "no-new-deps-adr"],
     ["web-deps-renovate"]),
    ("write a useEffect that fetches /api/v1/accounts", ["web-api-client", "web-react-query"],
     ["vite-proxy"]),
    ("the transactions table shows 1234.5 instead of $1,234.50", ["web-money-format"],
     ["money-as-integer-cents"]),
    ("TypeScript says 'Object is possibly undefined' when I index an array", ["web-strict-ts"], []),
    ("Renovate's PR is failing, can I just update the packages by hand?", ["web-deps-renovate"],
     ["pnpm-only"]),
    ("how do I run the frontend unit tests?", ["web-tests-vitest"], ["pnpm-only"]),
    ("navigation errors in the web app stopped being reported", ["web-app-ts-bootstrap"],
     ["sentry-errors"]),
    ("这个 SQL 跑了 30 秒，怎么分析", ["slow-query-procedure"], ["prod-read-replica"]),
    ("误删了生产数据，能回到昨天的状态吗", ["pitr-procedure"], ["backup-policy", "oncall-pager-ack"]),
    ("下周一我要交班，需要写些什么", ["oncall-handover-zh"], ["oncall-rotation"]),
    ("凭证号中间断了一个号，正常吗", ["zh-invoice-glossary"], ["glossary-entry"]),
    ("明年起税率要变，怎么更新", ["zh-tax-rate"], []),
    ("worker 进程开多了以后数据库连接不够用", ["zh-connection-pool"], ["api-celery-tasks"]),
    ("十月份的账怎么关", ["zh-month-end-close"], ["glossary-period-close"]),
    ("在导出按钮上加上“导出”两个字", ["zh-frontend-i18n"], []),
    ("农业银行的对账单导入后中文全是乱码", ["zh-importer-encoding"],
     ["importer-formats", "importer-csv-bom"]),
    ("怎么登录 staging 环境", ["zh-staging-access"], ["secrets-env", "deploy-staging"]),
    ("我的 PR 三天了还没人 review", ["zh-code-review-time"], ["code-review-rule"]),
    ("线上日志能保留多久", ["zh-log-retention"], []),
    ("pnpm install 报错说 lockfile 不是最新的", ["pnpm-only"], ["web-deps-renovate", "ci-workflows"]),
    ("staging 的数据库什么时候会被清空", ["staging-reset-weekly"], ["deploy-staging"]),
    ("what does HTTP status 418 mean?", [], []),
    ("add type hints to this function", [], ["ruff-mypy", "web-strict-ts"]),
    ("写一个快速排序", [], []),
    ("cool, next one", [], []),
    ("explain the difference between git merge and git rebase", [], ["alembic-one-head", "code-review-rule"]),
    ("translate into French: the report is ready", [], ["pdf-reports"]),
    ("把这段话改得更正式一点", [], []),
]

#: Written for the third round of the prompt hook's work (issue 18), before anything ran on
#: it, after fresh and fresh2 had been seen: reported only, never tuned on. Questions, bug
#: reports and commands, with and without the memories' words; 14 in Chinese or mixed (some
#: asking an English memory in Chinese and the other way round); 74 prompts, 68 needing 72
#: memories, 6 needing nothing.
PROMPTS_FRESH3: list[Prompt] = [
    ("the tests hang at 'waiting for postgres container', what am I missing?", ["test-make-docker"],
     ["docker-compose-services", "local-pg-port"]),
    ("call the Stripe API from the payments module", ["httpx-not-requests"], ["no-new-deps-adr", "secrets-env"]),
    ("pip install python-dateutil for parsing bank dates", ["no-new-deps-adr"],
     ["importer-formats", "python-version"]),
    ("do the postings of a journal entry need to balance?", ["glossary-posting"], ["glossary-entry"]),
    ("someone booked an entry with the wrong amount, can I just edit it in the database?", ["glossary-entry"],
     ["glossary-period-close", "glossary-posting", "zh-invoice-glossary"]),
    ("what does account 4000 mean in our chart?", ["glossary-account-code"], []),
    ("our customer's financial year starts in April, is that supported?", ["fiscal-year"],
     ["glossary-period-close"]),
    ("why does Dana's .env use a different postgres port?", ["local-pg-port"], ["docker-compose-services"]),
    ("how do I get my branch onto staging?", ["deploy-staging"],
     ["deploy-prod", "zh-staging-access", "code-review-rule"]),
    ("ship v2.4.1 to prod", ["deploy-prod"], ["release-tag"]),
    ("bump the version and tag a new release", ["release-tag"], ["deploy-prod"]),
    ("add a bandit security scan to the pull request checks", ["ci-workflows"], ["ruff-mypy", "no-new-deps-adr"]),
    ("playwright keeps timing out waiting for the progress bar", ["ci-flaky-playwright"], ["ci-workflows"]),
    ("who do I hand the pager to on Monday?", ["oncall-rotation"], ["oncall-handover-zh", "oncall-pager-ack"]),
    ("PagerDuty just woke me up for ledgerly, what's the procedure?", ["oncall-pager-ack"],
     ["oncall-rotation", "incident-postmortem"]),
    ("the outage is over, what paperwork is left?", ["incident-postmortem"], ["oncall-pager-ack"]),
    ("users report a crash on the import page but I can't reproduce it, where do errors end up?",
     ["sentry-errors"], ["api-logging", "zh-log-retention"]),
    ("my local db is full of junk from testing, reset it", ["make-db-reset"], ["make-targets-list"]),
    ("is there a make target that formats the code?", ["ruff-mypy"], ["make-targets-list"]),
    ("which port does the Flask api listen on in compose?", ["docker-compose-services"], ["vite-proxy"]),
    ("ruff format --check fails in CI", ["ruff-mypy"], ["ci-workflows"]),
    ("can I use 3.12 features like the new generic syntax in the api?", ["python-version"], []),
    ("where do I put the new SENDGRID_API_KEY for production?", ["secrets-env"], []),
    ("the demo account I set up on staging disappeared over the weekend", ["staging-reset-weekly"],
     ["deploy-staging"]),
    ("a report run right after saving an invoice doesn't show the invoice yet", ["prod-read-replica"], []),
    ("someone dropped the ledger table in prod, how far back can we recover?", ["backup-policy", "pitr-procedure"],
     ["oncall-pager-ack", "secrets-env"]),
    ("hide the new reconciliation screen behind a toggle until it's ready", ["feature-flags"], []),
    ("can I merge my own PR without review?", ["code-review-rule"], ["zh-code-review-time"]),
    ("the created times in the export are two hours off from Berlin time", ["timezone-utc"], []),
    ("add the company logo to the top of the balance sheet PDF", ["pdf-reports"], []),
    ("sending the monthly statement emails blocks the request for 20 seconds", ["api-celery-tasks"], []),
    ("add a price column to the products table", ["money-as-integer-cents", "alembic-new-migration"],
     ["migrations-backward-compatible", "alembic-one-head"]),
    ("split a 100.00 CHF payment into three equal parts", ["rounding-banker", "money-as-integer-cents"], []),
    ("where do the api routes get registered?", ["api-blueprints"], ["api-sqlalchemy-session"]),
    ("DetachedInstanceError when I use a model after the request ends", ["api-sqlalchemy-session"], []),
    ("a bad date in POST /api/v1/entries returns a 500 instead of a validation error",
     ["api-pydantic-validation"], ["api-blueprints"]),
    ("add some debug output in the rounding code so I can see what's happening", ["api-logging"],
     ["rounding-banker"]),
    ("the USD rate didn't change all morning although the market moved", ["exchange-rate-service"], []),
    ("Revolut's CSV puts the amount in a different column, teach the importer", ["importer-formats"],
     ["importer-csv-bom", "importer-dedupe"]),
    ("why didn't re-uploading last month's statement create new transactions?", ["importer-dedupe"],
     ["importer-formats"]),
    ("the importer can't detect semicolon-separated files", ["importer-csv-bom"], ["importer-formats"]),
    ("generate a migration for the new tags table", ["alembic-new-migration"],
     ["migrations-backward-compatible", "alembic-one-head"]),
    ("rename the column amount to amount_cents in one migration", ["migrations-backward-compatible"],
     ["alembic-new-migration", "money-as-integer-cents"]),
    ("npm install react-router-dom", ["pnpm-only", "no-new-deps-adr"], ["web-deps-renovate"]),
    ("call the /api/v1/reports endpoint from the dashboard component", ["web-api-client"], ["web-react-query"]),
    ("keep the selected company in a global store so every page can read it", ["web-react-query"], []),
    ("cast this response to any so the build passes", ["web-strict-ts"], []),
    ("upgrade React to 19", ["web-deps-renovate"], ["pnpm-only", "no-new-deps-adr"]),
    ("in dev, where do the web app's requests to /api go?", ["vite-proxy"], ["docker-compose-services"]),
    ("write a snapshot test for the AccountsTable component", ["web-tests-vitest"], []),
    ("initialise the router before Sentry in app.ts", ["web-app-ts-bootstrap"], ["sentry-errors"]),
    ("run the linters before I push", ["ruff-mypy"], ["make-targets-list", "ci-workflows"]),
    ("start the whole stack locally", ["docker-compose-services"], ["make-targets-list"]),
    ("how long are production logs kept in CloudWatch?", ["zh-log-retention"], ["sentry-errors"]),
    ("can I clean up old rows in the audit_log table to save space?", ["zh-log-retention"], []),
    ("报表页面打开要十几秒，数据库那边怎么查原因", ["slow-query-procedure"], ["prod-read-replica"]),
    ("生产库需要回滚到上午十点的数据，步骤是什么", ["pitr-procedure"], ["backup-policy", "secrets-env"]),
    ("值班结束前要交代哪些事情", ["oncall-handover-zh"], ["oncall-rotation"]),
    ("journal entry 在中文里叫什么？凭证怎么编号", ["zh-invoice-glossary"], ["glossary-entry"]),
    ("税率表里的旧记录能直接改吗", ["zh-tax-rate"], []),
    ("api 报错 too many connections", ["zh-connection-pool"], ["slow-query-procedure"]),
    ("月结之前银行流水要先处理好吗", ["zh-month-end-close"], ["importer-formats", "glossary-period-close"]),
    ("把设置页面的按钮文字翻译成中文", ["zh-frontend-i18n"], []),
    ("导入工商银行的对账单时报 UnicodeDecodeError", ["zh-importer-encoding"],
     ["importer-csv-bom", "importer-formats"]),
    ("新同事要连 staging，需要准备什么", ["zh-staging-access"], ["secrets-env"]),
    ("review 一般多久能完成", ["zh-code-review-time"], ["code-review-rule"]),
    ("部署到生产环境有时间限制吗", ["deploy-prod"], ["release-tag"]),
    ("本地跑测试需要先启动什么", ["test-make-docker"], ["docker-compose-services", "make-targets-list"]),
    ("what's a good name for a boolean that says whether a row is archived?", [], []),
    ("explain big-O notation in two sentences", [], []),
    ("ok, do it", [], []),
    ("帮我写一个正则匹配邮箱地址", [], []),
    ("sort this list of dicts by the 'name' key", [], []),
    ("why is the sky blue?", [], []),
]

#: Written on 2026-12-06 for the fourth round of the prompt hook's work (issue 18), before
#: anything ran on it and before the hook was changed; tune, heldout, fresh, fresh2 and fresh3
#: had all been seen by then. Reported only, never tuned on. Written from the memories' texts
#: as a user would type: questions, bug reports and commands, with and without the memories'
#: words; 15 in Chinese or mixed (some asking an English memory in Chinese); 79 prompts, 73
#: needing 75 memories, 6 needing nothing.
PROMPTS_FRESH4: list[Prompt] = [
    ("make test fails with 'docker: command not found'", ["test-make-docker"],
     ["docker-compose-services", "make-targets-list"]),
    ("do the tests need a running database?", ["test-make-docker"], ["docker-compose-services"]),
    ("fetch the exchange rates with requests.get", ["httpx-not-requests", "exchange-rate-service"],
     ["no-new-deps-adr"]),
    ("write a small client for the bank's webhook API with sensible timeouts", ["httpx-not-requests"],
     ["no-new-deps-adr"]),
    ("add celery-beat to pyproject for the scheduled jobs", ["no-new-deps-adr"], ["api-celery-tasks"]),
    ("what's an ADR and when do I need one?", ["no-new-deps-adr"], ["web-deps-renovate"]),
    ("what exactly is a posting?", ["glossary-posting"], ["glossary-entry", "zh-invoice-glossary"]),
    ("reverse the entry from March 3 that was booked twice", ["glossary-entry"],
     ["glossary-period-close", "glossary-posting"]),
    ("the accountant wants to change an entry in a month that's already closed", ["glossary-period-close"],
     ["glossary-entry", "zh-month-end-close", "fiscal-year"]),
    ("which account codes are revenue?", ["glossary-account-code"], []),
    ("period numbering is wrong for a company whose year starts in July", ["fiscal-year"],
     ["glossary-period-close"]),
    ("Postgres.app already uses 5432 on my laptop, which port should the project db use?",
     ["local-pg-port"], ["docker-compose-services"]),
    ("I merged to main, when does it show up on staging?", ["deploy-staging"], ["staging-reset-weekly"]),
    ("how do I check that staging is healthy after a deploy?", ["deploy-staging"], ["sentry-errors"]),
    ("can we release to production on Friday afternoon?", ["deploy-prod"], ["release-tag"]),
    ("how is the changelog generated?", ["release-tag"], ["code-review-rule"]),
    ("which GitHub Actions workflow runs mypy?", ["ci-workflows"], ["ruff-mypy"]),
    ("the nightly e2e run is red again on the upload test", ["ci-flaky-playwright"], ["ci-workflows"]),
    ("when does the on-call shift change?", ["oncall-rotation"], ["oncall-handover-zh"]),
    ("I was paged, which channel do I post in?", ["oncall-pager-ack"], ["oncall-handover-zh"]),
    ("where do incident write-ups go?", ["incident-postmortem"], ["oncall-pager-ack"]),
    ("how can I tell whether a Sentry error came from staging or prod?", ["sentry-errors"], []),
    ("load the seed data into my local db", ["make-db-reset"], ["make-targets-list"]),
    ("what make commands are there?", ["make-targets-list"],
     ["ruff-mypy", "test-make-docker", "make-db-reset", "release-tag"]),
    ("where do outgoing emails end up in local dev?", ["docker-compose-services"], ["api-celery-tasks"]),
    ("fix the formatting of the api code", ["ruff-mypy"], ["make-targets-list"]),
    ("set up a virtualenv for the api", ["python-version"], ["test-make-docker"]),
    ("I need a .env for local development", ["secrets-env"], ["local-pg-port"]),
    ("I'll keep my test invoices on staging for the demo next month", ["staging-reset-weekly"],
     ["zh-staging-access"]),
    ("which database do the reports read from?", ["prod-read-replica"], ["pdf-reports"]),
    ("can we get yesterday's prod database back from a snapshot?", ["backup-policy"], ["pitr-procedure"]),
    ("let admins switch the beta reports page on and off per company", ["feature-flags"], []),
    ("how many approvals does a PR need before merging?", ["code-review-rule"], ["zh-code-review-time"]),
    ("convert entry dates to UTC before saving them", ["timezone-utc"], []),
    ("the P&L PDF renders with the wrong template", ["pdf-reports"], []),
    ("the Celery worker isn't picking up any jobs", ["api-celery-tasks"], ["docker-compose-services"]),
    ("store the fee amount as NUMERIC(12,2)", ["money-as-integer-cents"],
     ["alembic-new-migration", "migrations-backward-compatible"]),
    ("where does the rounding difference go when converting currencies?", ["rounding-banker"],
     ["exchange-rate-service"]),
    ("add a blueprint for vendors", ["api-blueprints"], ["api-pydantic-validation", "api-sqlalchemy-session"]),
    ("how do I get a database session in a route?", ["api-sqlalchemy-session"], ["api-blueprints"]),
    ("validation errors should follow the problem details format", ["api-pydantic-validation"], []),
    ("add the request id to every log line in the api", ["api-logging"], []),
    ("where is FX_SERVICE_URL set and how long are rates cached?", ["exchange-rate-service"], ["secrets-env"]),
    ("support CAMT.053 files from UBS", ["importer-formats"], ["importer-dedupe"]),
    ("the same bank transaction shows up twice after an import", ["importer-dedupe"], ["importer-formats"]),
    ("a CSV saved from Excel has a weird first character in the header", ["importer-csv-bom"],
     ["importer-formats"]),
    ("autogenerate didn't pick up my server_default change", ["alembic-new-migration"],
     ["migrations-backward-compatible"]),
    ("two migrations have the same down_revision after merging main", ["alembic-one-head"],
     ["alembic-new-migration"]),
    ("make the email column NOT NULL in the users table",
     ["migrations-backward-compatible", "alembic-new-migration"], ["alembic-one-head"]),
    ("yarn install in web fails", ["pnpm-only"], ["web-deps-renovate"]),
    ("write a fetch call to load the invoices in the web app", ["web-api-client"],
     ["web-react-query", "vite-proxy"]),
    ("the OpenAPI spec changed, update the frontend client", ["web-api-client"], []),
    ("where should the invoices page keep the data it loads from the server?", ["web-react-query"],
     ["web-api-client"]),
    ("negative amounts render as -5.5 in the ledger view", ["web-money-format"], ["money-as-integer-cents"]),
    ("tsc errors with 'Element implicitly has an any type'", ["web-strict-ts"], []),
    ("update all frontend packages to the latest versions", ["web-deps-renovate"],
     ["pnpm-only", "no-new-deps-adr"]),
    ("the dev server returns 404 for /api/v1/accounts", ["vite-proxy"],
     ["docker-compose-services", "api-blueprints"]),
    ("add a test for the DatePicker component", ["web-tests-vitest"], []),
    ("where is Sentry set up in the web app?", ["web-app-ts-bootstrap"], ["sentry-errors"]),
    ("数据库 CPU 飙高，先看哪里", ["slow-query-procedure"], ["zh-connection-pool", "prod-read-replica"]),
    ("RDS 能恢复到某个时间点吗？要怎么操作", ["pitr-procedure"], ["backup-policy"]),
    ("这周的值班交接写在哪个频道", ["oncall-handover-zh"], ["oncall-rotation"]),
    ("凭证号是怎么编的", ["zh-invoice-glossary"], ["glossary-entry"]),
    ("增值税税率下个月从 13% 降到 9%，改哪里", ["zh-tax-rate"], []),
    ("Celery 的 worker 要占多少个数据库连接", ["zh-connection-pool"], ["api-celery-tasks"]),
    ("make close-period 之前要做什么", ["zh-month-end-close"], ["glossary-period-close"]),
    ("新页面的文案放哪里", ["zh-frontend-i18n"], []),
    ("GBK 编码的 CSV 导入失败", ["zh-importer-encoding"], ["importer-csv-bom", "importer-formats"]),
    ("staging 的账号找谁要", ["zh-staging-access"], ["secrets-env"]),
    ("CloudWatch 里的日志多久会被删", ["zh-log-retention"], []),
    ("生产发布只能在周几", ["deploy-prod"], ["release-tag"]),
    ("金额字段用什么类型存", ["money-as-integer-cents"], ["web-money-format"]),
    ("用 requests 调外部接口可以吗", ["httpx-not-requests"], ["no-new-deps-adr"]),
    ("explain what a closure is in JavaScript", [], []),
    ("thank you!", [], []),
    ("rewrite this paragraph to be shorter", [], []),
    ("翻译成英文：今天天气很好", [], []),
    ("how many seconds are in a day?", [], []),
    ("continue", [], []),
]

SPLITS: dict[str, tuple[dict[str, list[Query]], list[Prompt], list[ToolEvent]]] = {
    "tune": (QUERIES_TUNE, PROMPTS_TUNE, TOOLS_TUNE),
    "heldout": (QUERIES_HELDOUT, PROMPTS_HELDOUT, TOOLS_HELDOUT),
    "fresh": (QUERIES_HELDOUT, PROMPTS_FRESH, TOOLS_HELDOUT),
    "fresh2": (QUERIES_HELDOUT, PROMPTS_FRESH2, TOOLS_HELDOUT),
    "fresh3": (QUERIES_HELDOUT, PROMPTS_FRESH3, TOOLS_HELDOUT),
    "fresh4": (QUERIES_HELDOUT, PROMPTS_FRESH4, TOOLS_HELDOUT),
}


def check() -> list[str]:
    """Problems with the set itself (unknown keys, duplicates, short kinds); empty when sound."""
    problems: list[str] = []
    if len(KEYS) != len(MEMORIES):
        problems.append("duplicate memory keys")
    for split, (queries, prompts, tools) in SPLITS.items():
        for kind in KINDS:
            need = 8 if kind == "no_answer" else 10
            if len(queries.get(kind, [])) < need:
                problems.append(f"{split}/{kind}: fewer than {need} queries")
        refs = [k for qs in queries.values() for _, keys in qs for k in keys]
        refs += [k for _, want, ok in prompts for k in want + ok]
        refs += [k for _, _, want, ok in tools for k in want + ok]
        problems += [f"{split}: unknown key {k!r}" for k in sorted(set(refs) - KEYS)]
    tune = {q for qs in QUERIES_TUNE.values() for q, _ in qs}
    held = {q for qs in QUERIES_HELDOUT.values() for q, _ in qs}
    problems += [f"query in both splits: {q!r}" for q in sorted(tune & held)]
    splits = [PROMPTS_TUNE, PROMPTS_HELDOUT, PROMPTS_FRESH, PROMPTS_FRESH2, PROMPTS_FRESH3,
              PROMPTS_FRESH4]
    for i, first in enumerate(splits):
        for second in splits[i + 1:]:
            both = {p for p, want, _ in first if want} & {p for p, _, _ in second}
            problems += [f"prompt needing a memory in two splits: {p!r}" for p in sorted(both)]
    return problems
