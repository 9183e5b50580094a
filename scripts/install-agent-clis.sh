#!/usr/bin/env bash
# Install the pinned agent CLIs of scripts/agent-clis.txt with npm into one prefix and print
# the prefix's bin folder (claude, codex, gemini, mcp-inspector are there).
#
#   MEMCLI_AGENT_PREFIX=DIR   the prefix (default: .cache/agent-clis/ at the top of this checkout,
#                           which git ignores); reused while it holds exactly these versions
#
# Concurrent runs take turns (flock on $prefix/.install.lock): the first installs, the others reuse.
#
# Needs Node.js 20+ and npm; no login or API key. About a minute and 1 GB on first install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
list="$here/agent-clis.txt"
prefix="${MEMCLI_AGENT_PREFIX:-$here/../.cache/agent-clis}"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
mapfile -t packages < <(grep -v -e '^#' -e '^[[:space:]]*$' "$list")
stamp="$prefix/.installed"
# One install at a time: the tests that need the CLIs run in parallel (pytest -n), and two npm
# installs into one prefix break each other. The second waits, then finds the stamp.
exec 9>"$prefix/.install.lock"
flock 9
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${packages[*]}" ]; then
    echo "installing ${packages[*]} into $prefix" >&2
    rm -f "$stamp"
    npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error "${packages[@]}" >&2
    printf '%s' "${packages[*]}" > "$stamp"
fi
echo "$prefix/node_modules/.bin"
