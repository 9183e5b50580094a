#!/usr/bin/env bash
# A walk through compact, session compaction and the audit trail (issue 5), on throw-away
# workspaces in a temporary folder, with the memcli of this checkout (.venv, see README).
# Usage: scripts/walkthrough-audit.sh [CHECKOUT]   (default: the checkout holding this script)
set -u
REPO=${1:-$(cd "$(dirname "$0")/.." && pwd)}; export PATH=$REPO/.venv/bin:$PATH MEMCLI_ACTOR=alice
T=$(mktemp -d); cd $T
id() { python3 -c "import json,sys;print(json.load(sys.stdin)['data']['id'])"; }
echo "=== 1. compact on a copy of sample_workspace, clock frozen at 2026-12-15"
cp -r $REPO/sample_workspace s1 && cd s1 && git init -q && git add -A && git commit -qm sample
export MEMCLI_NOW=2026-12-15T00:00:00Z
memcli compact | tail -3; echo "exit $?; commits: $(git log --oneline | wc -l); dirty files: $(git status --porcelain | wc -l)"
memcli compact --apply | tail -1; echo "commits: $(git log --oneline | wc -l)"
git diff HEAD~1 --stat | tail -1
memcli diff HEAD~1..HEAD | grep -v "^    " | cut -c1-110
memcli --json list --include-expired | python3 -c "
import json,sys; ms=json.load(sys.stdin)['data']['memories']
print('expired and active:', sum(1 for m in ms if m['status']=='active' and m.get('expired')))"
memcli compact --apply | tail -1; echo "commits: $(git log --oneline | wc -l)"
unset MEMCLI_NOW; cd $T
echo "=== 2. supersede, rollback, history, undo twice"
memcli init s2 >/dev/null && cd s2
A=$(memcli --json remember "Use pnpm for JavaScript packages" | id)
start=$(git rev-parse HEAD)
B=$(memcli --json supersede $A "Use bun for JavaScript packages" | id)
memcli rollback $A; git show --name-only --format="commit: %s" HEAD | sed '/^$/d'
grep -h "^status\|^supersed" memories/project/*/*.md
memcli history $A
memcli undo; memcli undo; echo "diff against the start: $(git diff $start --stat | wc -l) lines; status: $(git status --porcelain | wc -l)"
cd $T
echo "=== 3. diff HEAD~3..HEAD after remember, approve, supersede, hand edit, expire"
memcli init s3 >/dev/null && cd s3
export MEMCLI_NOW=2026-12-01T00:00:00Z
A=$(memcli --json remember "Deploys go out on Tuesdays" | id)
C=$(memcli --json remember "The staging freeze lasts two days" --ttl 2d | id)
P=$(memcli --json remember "Lint with ruff before every commit" --source-type model_derived | id)
export MEMCLI_NOW=2026-12-02T00:00:00Z
MEMCLI_ACTOR=bob memcli approve $P --reason "matches CI"
export MEMCLI_NOW=2026-12-03T00:00:00Z
memcli supersede $A "Deploys go out on Wednesdays" >/dev/null
export MEMCLI_NOW=2026-12-04T00:00:00Z
f=$(ls memories/project/*/$P*.md); sed -i 's/Lint with ruff/Lint with ruff and mypy/' $f; GIT_AUTHOR_DATE=2026-12-04T00:00:00Z GIT_COMMITTER_DATE=2026-12-04T00:00:00Z git commit -qam "hand edit"
memcli diff HEAD~3..HEAD
unset MEMCLI_NOW; cd $T
echo "=== 4. compact --transcript with three summarizers"
memcli init s4 >/dev/null && cd s4
python3 - <<'PY'
import json
lines=[{"type":"user","sessionId":f"s-{n}","uuid":"u1","message":{"role":"user","content":"We decided to keep the index in .cache. Should we vacuum it weekly?"}} for n in (1,2,3)]
for n,l in enumerate(lines,1):
    extra={"type":"assistant","sessionId":f"s-{n}","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"The root cause was a stale WAL file; it works now."}]}}
    open(f"t{n}.jsonl","w").write(json.dumps(l)+"\n"+json.dumps(extra)+"\n")
PY
memcli compact --transcript t1.jsonl --summarizer false; echo "exit $?"
time memcli compact --transcript t2.jsonl --summarizer 'sh -c "sleep 30"' --summarizer-timeout 1; echo "exit $?"
memcli compact --transcript t3.jsonl --summarizer "python3 -c 'import sys; sys.stdin.read(); print(\"Index stays in .cache; WAL fixed.\")'"; echo "exit $?"
for n in 1 2 3; do memcli --json list --scope session:s-$n | python3 -c "import json,sys;m=json.load(sys.stdin)['data']['memories'][0];print(m['scope'],m['category'],m['provenance'].get('sha256','')[:12])"; done
for g in archive/transcripts/*.gz; do s=$(gunzip -c $g | sha256sum | cut -c1-64); echo "$g -> sha256 $s $(for n in 1 2 3; do [ "$(sha256sum < t$n.jsonl | cut -c1-64)" = "$s" ] && echo "= t$n.jsonl"; done)"; done
echo "archive in git: $(git ls-files archive | grep -c gz)"
cd $T
echo "=== 5. purge --history"
memcli init s5 >/dev/null && cd s5
K=$(memcli --json remember "The kiwi-banana vault code is twelve" | id)
memcli remember "Other memory stays" >/dev/null
memcli forget $K >/dev/null
echo "before: $(git log --all -p | grep -c kiwi-banana) mentions"
memcli purge $K --history --yes; echo "exit $?"
echo "after: $(git log --all -p | grep -c kiwi-banana) mentions in git log --all -p; fsck: $(git fsck --strict 2>&1 | wc -l) lines"
memcli log $K | cut -c1-100
