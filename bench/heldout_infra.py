"""A third held-out prompt set, on another store: a Go backend with its infrastructure ("cargoline").

Written at stop 36 by a helper, before anything ran on it; reported only: never tune on it.
The helper read ``heldout_shop`` and ``heldout_data`` only for their format, wrote the
memories first, the way a platform team would over months, and only then the prompts.

The project: a shipment-tracking platform. Go 1.22 services in ``cmd/api`` (public API)
and ``cmd/worker`` (Kafka consumers), Postgres 16 on RDS with goose migrations and sqlc,
Redis as a cache, Redpanda/Kafka, Terraform (applied through Atlantis) in
``deploy/terraform``, EKS with kustomize overlays and Argo CD in ``deploy/k8s``, and a small
Python pipeline on Airflow 2.9 (MWAA) in ``pipeline/``. 53 memories: seven in Chinese (the
data team's Wang Lei wrote most of them), ten scoped to paths, two pinned, four superseded
with their replacements in the store (the Go version, the migration tool, how Terraform is
applied, the export DAG's schedule). Near-misses on purpose: the staging and the prod
database, four ports (8080/8081 on the api, 9090 for metrics, 8082 for local Airflow),
three retry policies (outbound HTTP, Kafka consumers, Airflow tasks), logs and traces,
the on-call rotation and its escalation rule, deploy, rollback and freeze.

40 prompts (``PROMPTS_BLIND``): questions, bug reports with pasted errors, and commands;
each tagged ``paraphrase``, ``keyword``, ``zh`` (Chinese prompt, Chinese memory),
``zh-cross`` (Chinese prompt, English memory) or ``none`` (no memory answers it).
No superseded memory is in any ``want`` or ``ok``: a hook that serves one is noise.

Same shapes as ``heldout_shop``: ``MEMORIES`` and ``SPLITS`` (prompts only).
"""

from __future__ import annotations

from heldout_data import Memory, Prompt, Query, ToolEvent

MEMORIES: list[Memory] = [
    # --- Go services ---------------------------------------------------------------------
    {"key": "i01-go-version-old", "category": "fact", "importance": 3, "status": "superseded",
     "tags": ["go", "ci"],
     "text": "Backend builds with Go 1.21. Don't bump the go directive in go.mod, CI still uses "
             "the golang:1.21 image and will fail."},
    {"key": "i02-go-version", "category": "fact", "importance": 3, "tags": ["go", "ci"],
     "text": "We're on Go 1.22 now (go.mod: go 1.22, toolchain go1.22.5); CI and the Dockerfile "
             "both use golang:1.22-bookworm. Range-over-int and the per-iteration loop variables "
             "are fine to rely on."},
    {"key": "i03-make-test", "category": "procedure", "importance": 4, "tags": ["testing", "go"],
     "text": "make test runs go test -race ./... (unit tests only, no Docker needed). Integration "
             "tests sit behind the integration build tag: make test-integration starts Postgres 16 "
             "and Redpanda with docker compose first."},
    {"key": "i04-lint", "category": "procedure", "importance": 3, "tags": ["go", "lint"],
     "text": "Lint is golangci-lint v1.59 with .golangci.yml; run make lint before pushing. A "
             "//nolint needs the linter name and a reason comment, e.g. //nolint:gosec // fixed path."},
    {"key": "i05-errors-wrap", "category": "preference", "importance": 3, "tags": ["go"],
     "text": "Wrap errors with fmt.Errorf(\"loading shipment: %w\", err), no pkg/errors. Sentinel "
             "errors live in internal/apperr and are mapped to HTTP status codes in one place, "
             "internal/httpx/errors.go."},
    {"key": "i06-logging", "category": "preference", "importance": 3, "tags": ["go", "observability"],
     "text": "Logging is log/slog with the JSON handler. Take the logger from the context with "
             "logx.From(ctx) so request_id and trace_id come along; no fmt.Println and no zap in "
             "new code (zap is only left in the worker's old consumer)."},
    {"key": "i07-api-ports", "category": "fact", "importance": 3, "paths": ["cmd/api/**"],
     "tags": ["api", "ports"],
     "text": "cmd/api listens on :8080 for the public API and on :8081 for the admin listener "
             "(pprof, /debug/vars, /healthz, /readyz). 8081 must never be exposed through the "
             "ingress."},
    {"key": "i08-metrics-port", "category": "fact", "importance": 3, "tags": ["observability", "ports"],
     "text": "Prometheus scrapes /metrics on port 9090 on both the api and the worker pods "
             "(annotation prometheus.io/port: \"9090\"). The worker has no other HTTP port."},
    {"key": "i09-http-retry", "category": "decision", "importance": 4, "tags": ["carrier", "http"],
     "text": "Outbound calls to carrier APIs go through internal/carrier/client.go: 3 retries, "
             "exponential backoff from 200ms with jitter, only on 429/502/503/504 and connection "
             "errors. Never retry a POST unless it carries an Idempotency-Key."},
    {"key": "i10-kafka-retry", "category": "decision", "importance": 4, "tags": ["kafka", "worker"],
     "text": "Worker consumers don't retry in the handler loop: return the error and the message "
             "goes through the retry topics (1s, 5s, 30s, 2m, 10m), after 5 failed attempts it "
             "lands in <topic>.dlq."},
    {"key": "i11-kafka-topics", "category": "fact", "importance": 3, "tags": ["kafka"],
     "text": "Topics: shipment.events (12 partitions, keyed by shipment_id), tracking.updates, "
             "notifications.outbound. New topics are created in Terraform (deploy/terraform/kafka/), "
             "never by hand with rpk."},
    {"key": "i12-migrate-old", "category": "procedure", "importance": 3, "status": "superseded",
     "tags": ["database"],
     "text": "DB migrations use golang-migrate: add NNNN_name.up.sql and NNNN_name.down.sql under "
             "migrations/ and apply them with make migrate-up."},
    {"key": "i13-migrate-goose", "category": "procedure", "importance": 4, "tags": ["database"],
     "text": "Migrations moved to goose in August: one file per migration in "
             "internal/store/migrations/ with -- +goose Up / -- +goose Down sections. Create it "
             "with make migration name=add_x, apply with make db-migrate. The old migrations/ "
             "folder is frozen, don't add to it."},
    {"key": "i14-sqlc", "category": "decision", "importance": 4, "paths": ["internal/store/**"],
     "tags": ["database", "go"],
     "text": "DB access is sqlc: write the SQL in internal/store/queries/*.sql and run make "
             "generate. Never hand-edit the generated *.sql.go files, and no GORM."},
    {"key": "i15-db-staging", "category": "fact", "importance": 3, "tags": ["database", "staging"],
     "text": "Staging Postgres is cargoline-staging.c9x2kq.eu-west-1.rds.amazonaws.com, database "
             "cargoline, only reachable through the bastion: make db-tunnel ENV=staging opens it "
             "on localhost:15432. Credentials are in Vault at secret/staging/db."},
    {"key": "i16-db-prod", "category": "decision", "importance": 5, "pinned": True,
     "tags": ["database", "prod"],
     "text": "Nobody queries the prod primary by hand. For ad-hoc reads use the read replica: "
             "make db-tunnel ENV=prod-ro (localhost:25432) with a personal role from vault read "
             "database/creds/prod-readonly, which expires after 8 hours."},
    {"key": "i17-local-env", "category": "procedure", "importance": 3, "tags": ["local"],
     "text": "Local dev: cp .env.example .env, docker compose up -d (postgres 5432, redis 6379, "
             "redpanda 9092, redpanda console on :8088), then make run-api or make run-worker."},
    {"key": "i18-redis-cache", "category": "decision", "importance": 3, "tags": ["redis"],
     "text": "Redis is only a cache (tracking lookups with a 10 minute TTL, rate-limit counters). "
             "Nothing in Redis is a source of truth, so it can be flushed at any time."},
    # --- infrastructure --------------------------------------------------------------------
    {"key": "i19-tf-apply-old", "category": "procedure", "importance": 4, "status": "superseded",
     "tags": ["terraform"],
     "text": "Terraform: run terraform plan locally, paste the plan in #infra, and once someone "
             "approves run terraform apply from your laptop with the infra-admin AWS profile."},
    {"key": "i20-tf-atlantis", "category": "decision", "importance": 5, "paths": ["deploy/terraform/**"],
     "tags": ["terraform"],
     "text": "Since the state-lock incident in May, Terraform is applied only through Atlantis: "
             "open a PR, comment atlantis plan, get the approval, then comment atlantis apply. "
             "No terraform apply from laptops, not even for staging."},
    {"key": "i21-tf-layout", "category": "fact", "importance": 3, "paths": ["deploy/terraform/**"],
     "tags": ["terraform"],
     "text": "deploy/terraform/envs/staging and envs/prod each have their own state in "
             "s3://cargoline-tfstate/<env>/ (lock table tf-locks); shared modules are in modules/. "
             "Terraform is pinned to 1.7.5 in .terraform-version, use tfenv."},
    {"key": "i22-tf-aws-provider", "category": "decision", "importance": 2, "tags": ["terraform"],
     "text": "Keep the AWS provider on ~> 5.0 for now; the 6.x spike broke aws_eks_addon in our "
             "EKS module. Revisit once the module is upgraded."},
    {"key": "i23-k8s-deploy", "category": "procedure", "importance": 4, "tags": ["deploy", "k8s"],
     "text": "Deploys are GitOps with Argo CD: CI pushes cargoline/api:<git sha> to ECR and bumps "
             "the tag in deploy/k8s/overlays/<env>/kustomization.yaml. Staging syncs on its own; "
             "prod needs a manual Sync in the Argo CD UI."},
    {"key": "i24-deploy-freeze", "category": "decision", "importance": 5, "pinned": True,
     "tags": ["deploy", "prod"],
     "text": "No prod deploys on Fridays after 14:00 CET or at weekends, and none during the "
             "15-31 December freeze, except hotfixes approved by the on-call lead."},
    {"key": "i25-rollback", "category": "procedure", "importance": 4, "tags": ["deploy", "prod"],
     "text": "Rolling back prod: in Argo CD open cargoline-api-prod, History and Rollback, pick the "
             "previous revision. Then revert the tag-bump commit in deploy/k8s, otherwise the next "
             "sync puts the bad image back."},
    {"key": "i26-k8s-resources", "category": "fact", "importance": 3, "paths": ["deploy/k8s/**"],
     "tags": ["k8s"],
     "text": "Every Deployment sets requests and limits. api: requests 250m CPU / 512Mi, limits "
             "1 CPU / 1Gi, HPA 3-12 replicas at 70% CPU. worker: 500m / 768Mi, limits 1 CPU / 1.5Gi."},
    {"key": "i27-eks-version", "category": "fact", "importance": 2, "tags": ["k8s"],
     "text": "EKS: cargoline-prod runs Kubernetes 1.29, staging 1.30 (staging is upgraded first, "
             "prod two weeks later). kubectl contexts are cl-staging and cl-prod."},
    {"key": "i28-secrets", "category": "preference", "importance": 4, "tags": ["security", "k8s"],
     "text": "App secrets come from Vault through External Secrets (ExternalSecret manifests in "
             "deploy/k8s/base/secrets/). Never put a secret in a ConfigMap, a plain Secret "
             "manifest or a Terraform variable."},
    {"key": "i29-dns-certs", "category": "fact", "importance": 2, "tags": ["k8s", "dns"],
     "text": "TLS certs come from cert-manager with Let's Encrypt (ClusterIssuer letsencrypt-prod). "
             "Public DNS is Route53, managed in deploy/terraform/modules/dns."},
    {"key": "i30-ci", "category": "fact", "importance": 3, "tags": ["ci"],
     "text": "CI is GitHub Actions: ci.yml runs lint, unit tests and the docker build on every PR; "
             "integration tests only run on main and nightly. The pipeline has its own "
             "pipeline.yml."},
    {"key": "i31-distroless", "category": "fact", "importance": 2, "tags": ["docker", "k8s"],
     "text": "The Go images are built on gcr.io/distroless/static-debian12:nonroot, so there is no "
             "shell inside. To poke around use kubectl debug -it <pod> --image=busybox "
             "--target=api."},
    # --- operations --------------------------------------------------------------------------
    {"key": "i32-oncall-rotation", "category": "fact", "importance": 3, "tags": ["oncall"],
     "text": "On-call: primary and secondary rotate weekly on Wednesday 10:00 CET in PagerDuty "
             "(service 'Cargoline Platform'). Primary has 10 minutes to ack, then it escalates "
             "to the secondary automatically."},
    {"key": "i33-oncall-escalation-zh", "category": "procedure", "importance": 4, "tags": ["oncall"],
     "text": "值班升级：P1 如果二线接手后 30 分钟还没解决，直接拉 Marta（平台负责人）进来。Airflow 数据管道的告警"
             "不算 P1，工作时间由数据组处理，不用半夜叫人。"},
    {"key": "i34-log-retention", "category": "fact", "importance": 3, "tags": ["observability"],
     "text": "App logs go to Loki (search them in Grafana Explore): 14 days in prod, 3 days in "
             "staging. Audit events in the audit_events table are kept 7 years and never deleted."},
    {"key": "i35-tracing", "category": "fact", "importance": 2, "tags": ["observability"],
     "text": "Tracing: OpenTelemetry SDK exporting OTLP to otel-collector.observability:4317, "
             "stored in Tempo. Sampling is 10% in prod and 100% in staging."},
    {"key": "i36-alerts", "category": "preference", "importance": 3, "tags": ["observability", "oncall"],
     "text": "Alert rules are PrometheusRule objects in deploy/k8s/monitoring/rules/. Every new "
             "alert needs a severity label and a runbook_url annotation pointing into docs/runbooks/."},
    {"key": "i37-incident", "category": "procedure", "importance": 3, "tags": ["oncall"],
     "text": "SEV1/SEV2: open a Slack channel #inc-YYYYMMDD-short-name, name an incident commander, "
             "and write the postmortem in Notion within 3 working days."},
    # --- data pipeline -----------------------------------------------------------------------
    {"key": "i38-airflow-mwaa", "category": "fact", "importance": 3, "paths": ["pipeline/**"],
     "tags": ["pipeline"],
     "text": "The pipeline runs on Airflow 2.9 in MWAA (environment cargoline-mwaa-prod). DAGs are "
             "in pipeline/dags/ and the pipeline.yml workflow syncs them to s3://cargoline-mwaa/dags/ "
             "on merge."},
    {"key": "i39-export-schedule-old", "category": "fact", "importance": 3, "status": "superseded",
     "tags": ["pipeline"],
     "text": "nightly_shipments_export runs at 02:00 UTC and writes parquet to "
             "s3://cargoline-lake/shipments/."},
    {"key": "i40-export-schedule", "category": "fact", "importance": 3, "tags": ["pipeline"],
     "text": "nightly_shipments_export moved to 04:30 UTC because 02:00 clashed with the RDS "
             "backup window (02:00-03:00). Output is still parquet, in "
             "s3://cargoline-lake/shipments/dt=YYYY-MM-DD/."},
    {"key": "i41-airflow-retries", "category": "preference", "importance": 3, "paths": ["pipeline/**"],
     "tags": ["pipeline"],
     "text": "DAG default_args: retries=2, retry_delay=10 minutes, owner set to the team. Every "
             "task must be idempotent: overwrite the dt= partition, never append."},
    {"key": "i42-pipeline-uv-zh", "category": "preference", "importance": 3, "paths": ["pipeline/**"],
     "tags": ["pipeline", "python"],
     "text": "pipeline/ 的 Python 依赖用 uv 管（pyproject.toml + uv.lock），新增依赖用 uv add。Python 固定 "
             "3.11，和 MWAA 保持一致，不要升 3.12，也别 pip install 到全局。"},
    {"key": "i43-backfill-zh", "category": "procedure", "importance": 4, "tags": ["pipeline"],
     "text": "回填数据：先在 staging 的 Airflow 上跑 airflow dags backfill -s 开始日期 -e 结束日期，"
             "确认结果没问题再到生产跑。一次最多回填 30 天，不然会把只读副本压垮。"},
    {"key": "i44-local-airflow", "category": "procedure", "importance": 2, "tags": ["pipeline", "local"],
     "text": "To run the pipeline locally: make airflow-up in pipeline/ starts Airflow standalone "
             "on http://localhost:8082 (admin/admin). It reads the docker compose postgres, never "
             "an AWS database."},
    {"key": "i45-pipeline-tests", "category": "procedure", "importance": 2, "tags": ["pipeline", "testing"],
     "text": "Pipeline tests: cd pipeline && uv run pytest. tests/test_dag_integrity.py imports "
             "every DAG and fails on import errors, cycles or a missing owner."},
    # --- more notes in Chinese ---------------------------------------------------------------
    {"key": "i46-consumer-lag-zh", "category": "procedure", "importance": 4, "tags": ["kafka", "oncall"],
     "text": "消费积压告警（shipment.events 的 lag 超过 5 万）：先看 Grafana 的 Worker 面板有没有 pod 在 "
             "CrashLoopBackOff，再看 DLQ 是不是突然变多。要扩容就调 worker 的 HPA maxReplicas，但别超过 "
             "12（分区数），多了也是空转。"},
    {"key": "i47-api-versioning-zh", "category": "decision", "importance": 4, "paths": ["cmd/api/**"],
     "tags": ["api"],
     "text": "对外 API 路径都带 /v1 前缀。不兼容的改动只能放进 /v2，/v1 至少再保留六个月，期间响应头里加 "
             "Deprecation 和 Sunset。"},
    {"key": "i48-loadtest-zh", "category": "procedure", "importance": 3, "tags": ["testing"],
     "text": "压测用 k6，脚本在 loadtest/ 目录下。只准压 staging，压之前在 #platform 说一声，因为 staging "
             "和数据组共用一个 Kafka 集群。"},
    {"key": "i49-utc-zh", "category": "decision", "importance": 3, "tags": ["carrier"],
     "text": "时间一律用 UTC 存储和传输（timestamptz，RFC 3339）。承运商接口返回的本地时间在 "
             "internal/carrier 里按仓库时区转成 UTC，前端再按用户时区显示。"},
    # --- team conventions --------------------------------------------------------------------
    {"key": "i50-pr-rules", "category": "preference", "importance": 3, "tags": ["review"],
     "text": "PRs need one CODEOWNER approval, two if they touch deploy/terraform/envs/prod. Squash "
             "merge with a Conventional Commits title (feat:, fix:, chore:)."},
    {"key": "i51-feature-flags", "category": "preference", "importance": 3, "tags": ["go"],
     "text": "Feature flags live in Unleash (unleash.internal.cargoline.io); check them with "
             "flags.Enabled(ctx, \"name\"). Remove the flag and the dead branch within two sprints "
             "of a full rollout."},
    {"key": "i52-glossary", "category": "fact", "importance": 3, "tags": ["glossary"],
     "text": "Glossary: a shipment is one customer order going from A to B; a consignment is what "
             "a single carrier physically moves (one shipment can be split into several); a leg is "
             "one hop of a consignment."},
    {"key": "i53-tf-tags", "category": "preference", "importance": 2, "paths": ["deploy/terraform/**"],
     "tags": ["terraform", "cost"],
     "text": "Every AWS resource carries the tags team, env and cost-center. They come from "
             "default_tags in the provider block, so don't set them again per resource."},
]

PROMPTS_BLIND: list[Prompt] = [
    ("a customer says a parcel went missing three weeks ago, can I still find what the api printed for that "
     "request in Grafana?", ["i34-log-retention"], ["i35-tracing"]),  # paraphrase
    ("push my terraform change for the new SQS queue to prod",
     ["i20-tf-atlantis"], ["i21-tf-layout", "i50-pr-rules", "i53-tf-tags"]),  # paraphrase
    ("the carrier endpoint that creates shipping labels times out now and then, make it try again "
     "when that happens", ["i09-http-retry"], []),  # paraphrase
    ("one message on the shipment consumer has broken JSON and fails every time:\n"
     "  level=ERROR msg=\"decode event\" err=\"invalid character '}' looking for beginning of value\" "
     "offset=88123\nwhat eventually happens to it, does it block the partition?",
     ["i10-kafka-retry"], ["i11-kafka-topics"]),  # paraphrase
    ("I need to look at a few real rows for order 7731 to understand a support ticket, how do I get at the "
     "live data?", ["i16-db-prod"], []),  # paraphrase
    ("the release we shipped this afternoon broke the tracking page for everyone, get us back to what was "
     "running this morning", ["i25-rollback"], ["i23-k8s-deploy"]),  # paraphrase
    ("it's Friday 16:30 and the fix is approved, can I get it live before the weekend?",
     ["i24-deploy-freeze"], ["i23-k8s-deploy"]),  # paraphrase
    ("the api pods keep getting OOMKilled under load, how much are they allowed to use?",
     ["i26-k8s-resources"], []),  # paraphrase
    ("kubectl exec -it api-6f7c9d-x2k4p -- sh\nOCI runtime exec failed: exec failed: unable to start "
     "container process: exec: \"sh\": executable file not found in $PATH", ["i31-distroless"], []),  # paraphrase
    ("I got paged and can't take it right now, who gets it if I don't respond?",
     ["i32-oncall-rotation"], ["i33-oncall-escalation-zh"]),  # paraphrase
    ("the analysts say yesterday's shipment files landed later than usual, what time does that nightly job "
     "actually start?", ["i40-export-schedule"], ["i38-airflow-mwaa"]),  # paraphrase
    ("the new worker needs the carrier API password, wire it into the cluster config",
     ["i28-secrets"], []),  # paraphrase
    ("what address do I open in the browser to see the DAGs when I run the pipeline on my machine?",
     ["i44-local-airflow"], ["i38-airflow-mwaa"]),  # paraphrase
    ("write a DAG that pulls the carrier invoice CSVs from SFTP every night and loads them into the lake",
     ["i41-airflow-retries"], ["i38-airflow-mwaa", "i42-pipeline-uv-zh", "i45-pipeline-tests"]),  # paraphrase
    ("the mapping bug in the events transform was there since January, we have to re-run all those days "
     "through the pipeline", ["i43-backfill-zh"], ["i41-airflow-retries", "i38-airflow-mwaa"]),  # paraphrase
    ("I want to hit the tracking endpoint with a few thousand requests a second to see where it falls over",
     ["i48-loadtest-zh"], []),  # paraphrase
    ("GLS returns the delivery time as \"03.05.2024 14:22\" in the depot's local time. How should I save it "
     "on the consignment?", ["i49-utc-zh"], ["i52-glossary"]),  # paraphrase
    ("an order got split between DHL and a local courier. What's the right name for each part when I model "
     "this?", ["i52-glossary"], []),  # paraphrase
    ("the worker is falling way behind on events, the backlog alert has been firing for 20 minutes",
     ["i46-consumer-lag-zh"], ["i10-kafka-retry", "i26-k8s-resources"]),  # paraphrase
    ("add a migration that adds a carrier_ref column to consignments",
     ["i13-migrate-goose"], ["i14-sqlc"]),  # keyword
    ("run the integration tests", ["i03-make-test"], ["i17-local-env", "i30-ci"]),  # keyword
    ("which port is the admin listener with pprof on?", ["i07-api-ports"], []),  # keyword
    ("Prometheus shows the worker target as down, which port should the metrics endpoint be on?",
     ["i08-metrics-port"], []),  # keyword
    ("how do I connect to the staging database from my laptop?", ["i15-db-staging"], []),  # keyword
    ("add an alert when the api's 5xx rate goes above 2% for 5 minutes", ["i36-alerts"], []),  # keyword
    ("create a Kafka topic for the incoming carrier webhooks", ["i11-kafka-topics"], ["i10-kafka-retry"]),  # keyword
    ("write a query that fetches all consignments of a shipment id",
     ["i14-sqlc"], ["i52-glossary"]),  # keyword
    ("terraform apply fails:\nError: Error acquiring the state lock\nConditionalCheckFailedException: The "
     "conditional request failed\nLock Info:\n  Path: cargoline-tfstate/prod/terraform.tfstate\n"
     "what do I do?", ["i20-tf-atlantis"], ["i21-tf-layout"]),  # keyword
    ("go: go.mod requires go >= 1.22 (running go 1.21.8; GOTOOLCHAIN=local)", ["i02-go-version"], []),  # keyword
    ("二线接手半小时了 P1 还没解决，接下来该找谁？", ["i33-oncall-escalation-zh"], ["i32-oncall-rotation"]),  # zh
    ("pipeline 里要加一个 boto3 的依赖，怎么装？", ["i42-pipeline-uv-zh"], []),  # zh
    ("v1 的 tracking 接口想把 eta 字段改成对象，能直接改吗？", ["i47-api-versioning-zh"], []),  # zh
    ("staging 数据库的密码在哪里拿？", ["i15-db-staging"], []),  # zh-cross
    ("刚发的版本有问题，生产怎么回滚？", ["i25-rollback"], ["i23-k8s-deploy"]),  # zh-cross
    ("Redis 里的数据能直接 FLUSHALL 吗？会不会丢东西", ["i18-redis-cache"], []),  # zh-cross
    ("rename parseEta to parseETA everywhere in internal/tracking", [], []),  # none
    ("explain what a goroutine leak is and how I would spot one", [], []),  # none
    ("turn this JSON sample into a Go struct with json tags:\n"
     "{\"id\": \"c_91\", \"weight_kg\": 12.5, \"dims\": {\"l\": 40, \"w\": 30, \"h\": 20}}", [], []),  # none
    ("what's the difference between a slice and an array in Go?", [], []),  # none
    ("fix the typo 'recieved' in the README", [], []),  # none
]

SPLITS: dict[str, tuple[dict[str, list[Query]], list[Prompt], list[ToolEvent]]] = {
    "blind": ({}, PROMPTS_BLIND, []),
}


def check() -> list[str]:
    """Problems with the set itself (duplicate or unknown keys, superseded keys wanted); empty when sound."""
    keys = [m["key"] for m in MEMORIES]
    superseded = {m["key"] for m in MEMORIES if m.get("status") == "superseded"}
    problems = [f"duplicate key {k}" for k in sorted({k for k in keys if keys.count(k) > 1})]
    for prompt, want, ok in PROMPTS_BLIND:
        problems += [f"{prompt!r}: unknown key {k}" for k in want + ok if k not in keys]
        problems += [f"{prompt!r}: superseded key {k}" for k in want + ok if k in superseded]
        problems += [f"{prompt!r}: {k} in both want and ok" for k in set(want) & set(ok)]
    return problems
