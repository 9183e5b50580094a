#!/usr/bin/env bash
# A newcomer's first five minutes, repeatable: clone this repository into a temporary
# folder, follow the README's "Install" and "Quick start: Claude Code" word for word (the
# commands are read out of README.md, not copied here), and check what each step printed.
#
#   scripts/newcomer.sh            # uses a temporary folder, removed at the end
#   KEEP=1 scripts/newcomer.sh     # keeps it and prints where it is
#
# Needs python3 (3.11+), git and network access to the package index (pipx comes from it).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
[ -n "${KEEP:-}" ] && echo "newcomer: working in $work" || trap 'rm -rf "$work"' EXIT
step() { printf 'newcomer: %s\n' "$*" >&2; }
fail() { printf 'newcomer: FAILED: %s\n' "$*" >&2; exit 1; }
expect() { grep -qF -- "$2" <<<"$1" || fail "$3: expected to see '$2' in: $1"; }

export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.name "New Comer"; git config --global user.email newcomer@example.com
git config --global init.defaultBranch main
# the README's own blocks: the first `sh` block of a section, comments and all
block() { python3 - "$repo/README.md" "$1" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text.split("\n## " + sys.argv[2] + "\n", 1)[1].split("\n## ", 1)[0]
print(re.search(r"^```sh[^\n]*\n(.*?)^```", section, re.M | re.S).group(1), end="")
PY
}

step "clone"
git clone -q "$repo" "$work/memcli"
step "pipx, as a newcomer without it would get it"
python3 -m venv "$work/pipx-venv" && "$work/pipx-venv/bin/pip" install -q pipx
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/bin" PATH="$work/pipx-venv/bin:$work/bin:/usr/bin:/bin"
install="$(block Install)"
step "Install: $(head -1 <<<"$install")"
out="$(cd "$work/memcli" && bash -e -c "$install" 2>&1)" || fail "install: $out"
expect "$out" "memcli " "memcli --version"

step "Quick start: Claude Code, in a throw-away project, with PATH=/usr/bin:/bin plus pipx's folder"
mkdir -p "$work/my-project/web/src" && cd "$work/my-project"
echo 'export const app = 1;' > web/src/app.ts
git init -q && git add . && git commit -qm "web app"
cd "$work"
quick="$(block 'Quick start: Claude Code')"
out="$(PATH="$work/bin:/usr/bin:/bin" bash -e -c "$quick" 2>&1)" || fail "quick start: $out"
expect "$out" "initialised memcli workspace" "memcli init --branch"
expect "$out" "remembered:" "memcli remember"
expect "$out" "<memcli-context>" "memcli context"
expect "$out" "make test" "memcli context shows the remembered procedure"
grep -q '"command": "sh -c ' "$work/my-project/.claude/settings.json" \
  || fail "hook install: the shared settings file does not run the launcher that finds memcli"
! grep -q "$work" "$work/my-project/.claude/settings.json" "$work/my-project/.mcp.json" \
  || fail "hook install / mcp install: a shared file holds a path of this machine"
step "hook check with PATH=/usr/bin:/bin"
out="$(cd "$work/my-project" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$work/bin/memcli" hook check claude 2>&1)" \
  || fail "hook check: $out"
step "ok: the README's install and Claude Code quick start work as written"
