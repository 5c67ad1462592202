#!/usr/bin/env bash
# What the console and its browser tests need: Node.js + npm (to build web/), Debian's
# Chromium (tests drive /usr/bin/chromium through playwright-core; no browser downloads), and
# the npm packages of tests/browser and tests/contract; then builds web/dist. Idempotent; deploy/test.sh runs it
# when executable.
#   deploy/lib/browser-deps.sh               # everything (tests)
#   deploy/lib/browser-deps.sh --console-only # Node.js + npm and web/dist only (quickstart)
set -euo pipefail
CONSOLE_ONLY=0
[ "${1:-}" = "--console-only" ] && CONSOLE_ONLY=1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
say() { printf '\033[1m[kiln]\033[0m %s\n' "$*" >&2; }

missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ "$CONSOLE_ONLY" = 0 ]; then
  command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || missing+=(chromium)
fi
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || { say "error: missing ${missing[*]} (run as root, or apt-get install them)"; exit 1; }
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$CONSOLE_ONLY" = 1 ]; then
  exec "$ROOT/deploy/lib/web-build.sh"
fi
if [ "$major" -lt 20 ]; then
  say "warning: Node.js $(node --version) is older than 20: the console builds, but playwright-core (browser tests) needs 20+"
fi

# tests/browser (playwright-core) and tests/contract (Spectral, Ajv: the REST contract's lint
# and the api tier's response checks).
for dir in tests/browser tests/contract; do
  cd "$ROOT/$dir"
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "$dir: npm ci"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
  fi
done

"$ROOT/deploy/lib/web-build.sh"
