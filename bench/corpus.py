"""Word lists and sentence templates for the benchmark's generated memories.

A template holds ``{slot}`` markers; :func:`fill` replaces each with a random entry of
``SLOTS[slot]``. The needle words the benchmark searches for are kept out of every list
here except their own templates, so the generator controls exactly how many memories
hold them: ``RARE_WORD`` (only in ``RARE_TEMPLATES``), ``COMMON_WORD`` (only in
``DEPLOY_TEMPLATES``; no other text contains the substring ``deploy``) and ``CJK_WORD``
(only in ``CACHE_ZH_TEMPLATES``).
"""

from __future__ import annotations

import random
import re

RARE_WORD = "zanzibarflux"
COMMON_WORD = "deploy"
CJK_WORD = "缓存"

SLOTS: dict[str, list[str]] = {
    "build_cmd": ["make build", "pnpm build", "cargo build --release", "go build ./...", "npm run typecheck",
                  "uv sync --frozen", "bazel build //...", "./gradlew assemble", "tox -e lint", "just check"],
    "test_cmd": ["pytest -n 4", "pnpm test -- --runInBand", "go test -race ./...", "cargo nextest run",
                 "make test-integration", "npx vitest run", "./gradlew test"],
    "test_name": ["test_login_redirect", "test_retry_backoff", "test_upload_large_file", "checkout.spec.ts",
                  "test_cache_eviction_order", "TestWebhookSignature", "test_timezone_rollover",
                  "session_refresh.test.ts", "test_pdf_export", "TestRateLimiter"],
    "path": ["src/hooks/pre-edit.ts", "src/api/client.ts", "app/models/user.rb", "internal/auth/token.go",
             "services/billing/invoice.py", "web/src/components/Table.tsx", "scripts/seed_db.py",
             "pkg/queue/worker.go", "lib/parser/lexer.rs", "config/settings/base.py", "docs/adr/0007-events.md",
             "infra/terraform/main.tf", ".github/workflows/ci.yml", "src/utils/date.ts"],
    "config_file": ["config/app.toml", ".env.local", "settings.yaml", "pyproject.toml", "package.json",
                    "docker-compose.yml", "tsconfig.json", "helm/values.yaml"],
    "config_key": ["DATABASE_POOL_SIZE", "LOG_LEVEL", "FEATURE_NEW_CHECKOUT", "HTTP_TIMEOUT_MS", "MAX_UPLOAD_MB",
                   "SENTRY_SAMPLE_RATE", "WORKER_CONCURRENCY", "CACHE_TTL_SECONDS", "strictNullChecks",
                   "retry.max_attempts", "queue.visibility_timeout"],
    "value": ["20", "debug", "true", "false", "5000", "0.1", "8", "300", "3", "warn"],
    "lib": ["react", "django", "pydantic", "sqlalchemy", "fastapi", "next", "webpack", "tokio", "serde",
            "protobuf", "openssl", "boto3", "celery", "prisma", "typescript", "node"],
    "version": ["1.4.2", "2.0.1", "3.11", "18.2.0", "5.3.3", "0.27.0", "4.2.8", "1.75", "14.1.0", "2.31.0",
                "8.0.3", "0.110.0"],
    "ubuntu": ["20.04", "22.04", "24.04"],
    "service": ["billing", "auth", "search", "notifications", "gateway", "ingest", "reporting", "payments",
                "checkout", "inventory", "scheduler", "media"],
    "status_code": ["500", "200 with an empty body", "403", "409", "502", "204"],
    "os": ["macOS", "Windows", "Ubuntu 20.04", "the ARM runners", "Alpine"],
    "tool_a": ["pnpm", "ruff", "uv", "ripgrep", "prettier", "black", "poetry", "vitest", "golangci-lint"],
    "tool_b": ["npm", "flake8", "pip", "grep", "eslint --fix", "autopep8", "pipenv", "jest", "go vet alone"],
    "task": ["formatting", "dependency management", "searching the code", "running unit tests",
             "linting", "lock file updates"],
    "component": ["the job queue", "session storage", "the search indexer", "image resizing",
                  "the feature flag service", "PDF rendering", "the audit log", "email delivery"],
    "old": ["Redis", "a cron job", "the monolith", "MySQL", "polling", "S3 events", "a shell script"],
    "new": ["Postgres", "a Kafka topic", "a separate worker", "SQS", "webhooks", "a Rust service"],
    "metric": ["p99 latency", "cloud cost", "build time", "memory use", "on-call pages", "cold starts"],
    "person": ["alice", "bob", "carol", "dave", "the release manager", "the security team"],
    "style": ["small pull requests", "early returns over nested ifs", "explicit type hints",
              "one assertion per test", "descriptive commit messages", "no default exports"],
    "logpath": ["/var/log/app/worker.log", "logs/dev.log", "~/.cache/app/trace.jsonl", "/tmp/ingest-debug.log"],
    "branch": ["main", "release", "develop", "trunk"],
    "env": ["production", "staging", "the preview environments", "CI"],
    "env_var": ["AWS_PROFILE", "KUBECONFIG", "CLUSTER_NAME", "RELEASE_CHANNEL", "REGISTRY_URL"],
    "term": ["tenant", "cell", "shard key", "golden path", "blast radius", "dark launch", "run book"],
    "definition": ["one customer organisation and all its users", "an isolated copy of the whole stack",
                   "the column that decides which database a row lives on",
                   "the supported way to build a new service", "what breaks if this component fails"],
    "cause": ["an expired TLS certificate", "a full disk on the primary", "a missing index on orders.created_at",
              "a retry storm from the mobile client", "clock skew between nodes", "a bad feature flag rollout"],
    "fix": ["renewing the certificate and adding an alert", "moving the WAL to a bigger volume",
            "adding the index concurrently", "adding jitter to the client retries", "enabling chrony"],
    "goal": ["get the test suite under five minutes", "drop Python 3.9 support", "remove the legacy v1 API",
             "reach 80% coverage in the payments module", "migrate every service to the new logger"],
    "month": ["January", "March", "April", "June", "August", "September", "October", "December"],
}

#: First sentences per category (English).
CATEGORY_TEMPLATES: dict[str, list[str]] = {
    "preference": ["Use {tool_a}, not {tool_b}, for {task} in this repo.",
                   "{person} prefers {style} in code review.",
                   "Prefer `{test_cmd}` over the IDE runner; it matches CI."],
    "fact": ["The {service} API returns {status_code} instead of 404 when the record is missing.",
             "Logs for the {service} worker live in `{logpath}`.",
             "The base image is Ubuntu {ubuntu} and ships {lib} {version}.",
             "`{config_key}` in `{config_file}` defaults to {value}."],
    "decision": ["We moved {component} from {old} to {new} to cut {metric}.",
                 "We pinned {lib} to {version} because {version} broke the {service} build.",
                 "Decided in {month}: {component} stays on {old} until {new} is proven."],
    "procedure": ["Run `{build_cmd}` before pushing; CI fails otherwise.",
                  "To reproduce the {service} bug locally, set `{config_key}={value}` and run `{test_cmd}`.",
                  "After changing `{path}`, regenerate the client with `{build_cmd}`."],
    "feedback": ["Do not edit `{path}` by hand; it is generated.",
                 "Stop adding retries around `{test_name}`; fix the race instead.",
                 "Keep commit messages in English and under 72 characters."],
    "glossary": ["Glossary: {term} means {definition}."],
    "goal": ["Goal for this quarter: {goal}.", "Goal: {goal} before the {month} release."],
    "episode": ["In {month} the {service} outage was caused by {cause}; fixed by {fix}.",
                "The test `{test_name}` in `{path}` was flaky on {os}; it now waits for the server to start."],
}

#: Extra sentences that may follow the first one (English).
DETAIL_TEMPLATES = [
    "See `{path}` for the details.", "This applies to {env} too.", "Ask {person} before changing it.",
    "It was confirmed again with {lib} {version}.", "The related flag is `{config_key}`.",
    "`{test_cmd}` covers it.", "It saves about a minute on every run.", "Check `{logpath}` if it fails again.",
    "This matters most for the {service} service.", "Tracked since {month}.",
]

DEPLOY_TEMPLATES = [
    "To deploy {service}, run `make deploy ENV=staging` after the migrations finish.",
    "Deploy to staging happens on merge to {branch}; production deploys need approval from {person}.",
    "Never deploy on Fridays after 15:00; the on-call rotation is thin.",
    "The deploy script `scripts/deploy.sh` needs `{env_var}` set, or it targets the wrong cluster.",
    "Roll back a bad deploy with `helm rollback {service}` and post in the incident channel.",
    "Deployments of {service} are blocked while `{test_name}` is red.",
]

RARE_TEMPLATES = [
    "The zanzibarflux flag gates {component}; keep it off in {env}.",
    "If `{test_name}` hangs, the zanzibarflux worker is probably not running.",
]

ZH_TEMPLATES = [
    "用户身份验证失败，重跑gen-itgc后修复。", "部署前先运行数据库迁移。",
    "{service}的单元测试在CI上偶尔失败，重试一次即可。", "本地开发时把`{config_key}`设为`{value}`。",
    "我们把{lib}固定在{version}版本，因为新版本有兼容性问题。", "代码评审时请用注释说明复杂逻辑。",
    "发布流程：先打标签，再在流水线里手动确认。", "日志目录是`{logpath}`，排查问题时先看这里。",
    "{service}接口的超时时间是30秒，超过会返回504。", "不要直接修改`{path}`，它是自动生成的文件。",
    "测试环境的数据库每天凌晨两点重置。", "以后提交信息用英文写，正文可以用中文。",
    "新成员入职时需要先申请VPN和代码仓库权限。", "前端构建使用pnpm，不要用npm。",
    "性能测试要在专用机器上跑，笔记本上的结果不可靠。", "线上故障的原因是证书过期，已加上告警。",
    "我喜欢小的合并请求，方便评审。", "{service}服务的配置文件在`{config_file}`里。",
]

CACHE_ZH_TEMPLATES = [
    "缓存失效时要清理 Redis。", "{service}的缓存时间是十分钟，修改配置后要等缓存过期。",
    "构建缓存损坏时删除`.turbo`目录后重新构建。",
]

JA_TEMPLATES = [
    "本番環境に反映する前にデータベースのマイグレーションを実行してください。",
    "{service}のテストはCIで時々失敗するので、一度だけ再実行してください。",
    "設定ファイルは`{config_file}`にあります。",
]

KO_TEMPLATES = [
    "배포 전에 데이터베이스 마이그레이션을 먼저 실행하세요.", "로그인 실패 시 토큰을 다시 발급받으면 됩니다.",
    "이 저장소에서는 pnpm을 사용합니다.",
]

TAGS = ["ci", "tooling", "javascript", "python", "database", "testing", "security", "infra", "api",
        "frontend", "backend", "release", "flaky", "performance", "docs", "onboarding"]
PATH_GLOBS = ["web/**", "src/hooks/*.ts", "**/*.py", "services/billing/**", "infra/**/*.tf", "*.md",
              "tests/**", ".github/workflows/*.yml", "internal/auth/**", "**/Dockerfile"]
SUBJECT_AREAS = ["js", "py", "ci", "db", "api", "infra", "test", "release", "auth", "docs"]
SUBJECT_TOPICS = ["package-manager", "formatter", "runner", "migrations", "timeouts", "base-image",
                  "flaky-tests", "branching", "secrets", "logging", "retries", "versions"]

_SLOT = re.compile(r"\{(\w+)\}")


def fill(rng: random.Random, template: str) -> str:
    """Replace every ``{slot}`` in ``template`` with a random entry of its word list."""
    return _SLOT.sub(lambda m: rng.choice(SLOTS[m.group(1)]), template)


def check_needles_absent() -> None:
    """Fail loudly if a needle word leaked into a list other than its own templates."""
    ordinary = [*(w for words in SLOTS.values() for w in words), *DETAIL_TEMPLATES, *ZH_TEMPLATES,
                *JA_TEMPLATES, *KO_TEMPLATES, *(t for ts in CATEGORY_TEMPLATES.values() for t in ts),
                *TAGS, *PATH_GLOBS, *SUBJECT_AREAS, *SUBJECT_TOPICS]
    for needle in (RARE_WORD, COMMON_WORD, CJK_WORD):
        leaked = [text for text in ordinary if needle in text.casefold()]
        assert not leaked, f"needle {needle!r} leaked into {leaked[:3]}"
