#!/usr/bin/env bash
# Builds the SRE console (web/ -> web/dist, which kilnd serves with --web-root web/dist).
# Idempotent and fast: `npm ci` only when package-lock.json changed, `vite build` only when a
# source changed (a hash of the inputs is kept in web/node_modules/.kiln-web-stamp).
#   deploy/lib/web-build.sh          # build if needed
#   deploy/lib/web-build.sh --force  # build anyway
set -euo pipefail
WEB=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../web" && pwd)
cd "$WEB"
say() { printf '\033[1m[kiln]\033[0m %s\n' "$*" >&2; }

command -v npm >/dev/null || { say "error: npm is missing (deploy/lib/browser-deps.sh installs it)"; exit 1; }

# npm ci when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "web: npm ci"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi

STAMP=node_modules/.kiln-web-stamp
inputs_hash() {
  { find src -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum index.html vite.config.js package.json package-lock.json; } | sha256sum | cut -d' ' -f1
}
hash=$(inputs_hash)
if [ "${1:-}" != "--force" ] && [ -f dist/index.html ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$hash" ]; then
  say "web: dist is up to date"
  exit 0
fi
say "web: building the console"
npm run --silent build >/dev/null
echo "$hash" >"$STAMP"
say "web: built $(du -sh dist | cut -f1) in web/dist"
