#!/usr/bin/env bash
# Runs every Kiln test tier: installs missing Debian packages, builds, starts a throwaway
# PostgreSQL 15 (as the unprivileged user "kiln", fsync off, removed afterwards), then ctest.
#
#   deploy/test.sh                 # everything
#   deploy/test.sh -L unit         # one tier (labels: unit, exec, store, api, e2e, browser, prometheus)
#   deploy/test.sh -R PgStoreTest  # extra arguments go to ctest
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_packages "${KILN_PACKAGES[@]}"
[ -x "$KILN_ROOT/deploy/lib/browser-deps.sh" ] && "$KILN_ROOT/deploy/lib/browser-deps.sh"

BUILD=${KILN_BUILD_DIR:-$KILN_ROOT/build}
log "building in $BUILD"
kiln_build "$BUILD"

PGDIR=$(mktemp -d /tmp/kiln-test-pg.XXXXXX)
PGPORT=${KILN_TEST_PG_PORT:-$((40000 + RANDOM % 20000))}
cleanup() { pg_down "$PGDIR"; rm -rf "$PGDIR"; }
trap cleanup EXIT
pg_up "$PGDIR" "$PGPORT" off
export KILN_TEST_PG="host=$PGDIR/run port=$PGPORT user=$KILN_PG_USER"
log "throwaway PostgreSQL on $PGDIR/run:$PGPORT"

cd "$BUILD"
ctest --output-on-failure --timeout 600 -j2 "$@"
