#!/usr/bin/env bash
# Drive `memcli mcp` with MCP clients that no one here wrote:
#   1. the MCP Inspector's CLI mode (@modelcontextprotocol/inspector@2.12.0): tools/list (with --strict
#      schema checks), tools/call recall, resources/list;
#   2. Claude Code (@anthropic-ai/claude-code@2.1.332) with a private HOME: `claude mcp list` after
#      `memcli mcp install claude --user` must report the server as connected, and after a project
#      install it must list the project's .mcp.json entry; `memcli mcp uninstall` takes it away again.
#
# The npm CLIs are installed once, pinned, into $MEMCLI_AGENT_PREFIX (default .cache/agent-clis in the
# repository, git-ignored). The memcli under test is $MEMCLI_BIN (default: memcli on PATH, else .venv/bin/memcli).
# Prints one line per check and exits non-zero on the first failure.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${MEMCLI_AGENT_PREFIX:-$REPO/.cache/agent-clis}
INSPECTOR_VERSION=2.12.0
CLAUDE_VERSION=2.1.332
MEMCLI_BIN=${MEMCLI_BIN:-$(command -v memcli || echo "$REPO/.venv/bin/memcli")}

version_of() {  # version_of PACKAGE -> the version installed in $PREFIX, or nothing
  local manifest="$PREFIX/node_modules/$1/package.json"
  [ -f "$manifest" ] && node -e "console.log(require(process.argv[1]).version)" "$manifest" || true
}

if [ "$(version_of @modelcontextprotocol/inspector)" != "$INSPECTOR_VERSION" ] \
   || [ "$(version_of @anthropic-ai/claude-code)" != "$CLAUDE_VERSION" ]; then
  echo "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION and @anthropic-ai/claude-code@$CLAUDE_VERSION into $PREFIX" >&2
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --loglevel=error \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
fi
INSPECTOR="$PREFIX/node_modules/.bin/mcp-inspector"
CLAUDE="$PREFIX/node_modules/.bin/claude"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK/home" MEMCLI_ACTOR=alice DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
unset MEMCLI_WORKSPACE CLAUDE_CONFIG_DIR ANTHROPIC_API_KEY
mkdir -p "$HOME"
git config --global user.name "MCP Check"
git config --global user.email "mcp-check@example.invalid"
git config --global init.defaultBranch main

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

WS="$WORK/project"
"$MEMCLI_BIN" init "$WS" >/dev/null
"$MEMCLI_BIN" -w "$WS" remember "Use pnpm, not npm, for every JavaScript package" --scope user:alice >/dev/null
"$MEMCLI_BIN" -w "$WS" --actor bob remember "bob's private note about pnpm" --scope user:bob >/dev/null
SERVER=("$MEMCLI_BIN" -w "$WS" mcp)

# 1. The MCP Inspector, CLI mode.
timeout 180 "$INSPECTOR" --cli -e MEMCLI_ACTOR=alice "${SERVER[@]}" --method tools/list --strict >"$WORK/tools.json" 2>"$WORK/tools.err" \
  || fail "inspector tools/list --strict: $(cat "$WORK/tools.err")"
names=$(node -e 'const t=require(process.argv[1]).tools; console.log(t.map(x=>x.name).sort().join(" "))' "$WORK/tools.json")
[ "$names" = "context forget history recall remember review show supersede" ] || fail "tools/list gave: $names"
ok "inspector tools/list (--strict, no schema problems): $names"

timeout 180 "$INSPECTOR" --cli -e MEMCLI_ACTOR=alice "${SERVER[@]}" --method tools/call --tool-name recall --tool-arg query=pnpm \
  >"$WORK/recall.json" 2>"$WORK/recall.err" || fail "inspector tools/call recall: $(cat "$WORK/recall.err")"
hits=$(node -e 'const r=require(process.argv[1]); if (r.isError) {console.log("ERROR " + JSON.stringify(r.content)); process.exit(0)}
  console.log(r.structuredContent.hits.map(h=>h.scope + " | " + h.text).join("; "))' "$WORK/recall.json")
[ "$hits" = "user:alice | Use pnpm, not npm, for every JavaScript package" ] || fail "recall gave: $hits"
ok "inspector tools/call recall query=pnpm: $hits"

timeout 180 "$INSPECTOR" --cli -e MEMCLI_ACTOR=alice "${SERVER[@]}" --method resources/list >"$WORK/resources.json" 2>"$WORK/resources.err" \
  || fail "inspector resources/list: $(cat "$WORK/resources.err")"
count=$(node -e 'console.log(require(process.argv[1]).resources.filter(r=>r.uri.startsWith("memcli://memory/")).length)' \
  "$WORK/resources.json")
[ "$count" = 1 ] || fail "resources/list gave $count memories (alice has 1; bob's must stay hidden)"
ok "inspector resources/list: $count memory resource (bob's personal memory hidden)"

# 2. Claude Code: the user-level install is connected; the project-level one is listed.
cd "$WS"
"$MEMCLI_BIN" -w "$WS" mcp install claude --user >/dev/null
listed=$(timeout 180 "$CLAUDE" mcp list 2>&1) || fail "claude mcp list: $listed"
line=$(grep '^memcli:' <<<"$listed" || true)
grep -q 'Connected' <<<"$line" || fail "claude mcp list did not connect: $listed"
ok "claude $CLAUDE_VERSION mcp list (user install): $line"
"$MEMCLI_BIN" mcp uninstall claude --user >/dev/null
node -e 'process.exit("memcli" in (require(process.argv[1]).mcpServers || {}) ? 1 : 0)' "$HOME/.claude.json" \
  || fail "uninstall left memcli in ~/.claude.json"
ok "memcli mcp uninstall claude --user: entry gone from ~/.claude.json, the rest kept"

"$MEMCLI_BIN" -w "$WS" mcp install claude >/dev/null 2>&1
listed=$(timeout 180 "$CLAUDE" mcp list 2>&1) || fail "claude mcp list: $listed"
line=$(grep '^memcli:' <<<"$listed" || true)
[ -n "$line" ] || fail "claude mcp list did not read the project's .mcp.json: $listed"
ok "claude mcp list (project .mcp.json): $line"
"$MEMCLI_BIN" mcp uninstall claude >/dev/null
[ ! -e "$WS/.mcp.json" ] || fail "uninstall left .mcp.json behind"
ok "memcli mcp uninstall claude: .mcp.json removed (it held nothing else)"
echo "mcp-inspector-check: all checks passed"
