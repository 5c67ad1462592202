#!/usr/bin/env bash
# Issue 14's figures in one run: one kilnd alone against three kilnd behind HAProxy
# (deploy/haproxy/kiln.cfg), on the same PostgreSQL, the same machine, one after the other:
#
#   1. HOSTS simulated hosts (default 100,000) at a 30 s poll interval: poll latency (the probe's
#      p99 and kiln-vfleet's quick-poll p99) and kilnd's CPU, per replica;
#   2. step dispatch + acknowledgement over DISPATCH_HOSTS hosts (default 5,000), against the
#      bare SKIP LOCKED queue of the same run.
#
#   bench/replicas.sh [HOSTS] [DISPATCH_HOSTS]      (build first: kiln-bench-dispatch, kilnd, kiln-vfleet)
#
# Needs haproxy (deploy/lib/common.sh installs it) and a PostgreSQL in KILN_TEST_PG, or starts
# one in /tmp/kiln-bench-pg. Prints every run's report, then the figures side by side.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib/common.sh"
HOSTS=${1:-100000}
DISPATCH_HOSTS=${2:-5000}
BIN=${KILN_BUILD_DIR:-$KILN_ROOT/build}/bench/dispatch/kiln-bench-dispatch
[ -x "$BIN" ] || die "no $BIN: cmake --build build --target kiln-bench-dispatch kilnd kiln-vfleet"
if [ -z "${KILN_TEST_PG:-}" ]; then
  pg_up /tmp/kiln-bench-pg 55432 off
  export KILN_TEST_PG="host=/tmp/kiln-bench-pg/run port=55432 user=$KILN_PG_USER"
fi
# KILN_REPLICAS_REPORT=DIR: print the comparison of the runs kept in DIR, run nothing.
OUT=${KILN_REPLICAS_REPORT:-$(mktemp -d /tmp/kiln-bench-replicas.XXXXXX)}
# The same shape for both: 8,000 long-poll connections (HAProxy holds 2 descriptors per
# connection and this machine gives a process 20,000), the other hosts poll with wait=0 every 30 s.
common=(--connections 8000 --idle-poll 30 --skip-health --skip-agent)
run() {  # run NAME ARGS...
  local name=$1; shift
  log "kiln-bench-dispatch $* -> $OUT/$name.txt"
  "$BIN" "$@" "${common[@]}" >"$OUT/$name.txt" 2>&1 || { tail -20 "$OUT/$name.txt"; die "$name failed"; }
}
if [ -z "${KILN_REPLICAS_REPORT:-}" ]; then
run idle-1 --hosts "$HOSTS" --idle-window 30 --skip-dispatch --skip-baseline --replicas 1
run idle-3 --hosts "$HOSTS" --idle-window 30 --skip-dispatch --skip-baseline --replicas 3
run dispatch-1 --hosts "$DISPATCH_HOSTS" --skip-idle --replicas 1
run dispatch-3 --hosts "$DISPATCH_HOSTS" --skip-idle --replicas 3
fi

# fig FILE PATTERN FIELD: the FIELD-th number on the report line matching PATTERN
fig() { { grep -E "$2" "$OUT/$1.txt" || true; } | tail -1 | { grep -oE '[0-9]+(\.[0-9]+)?' || true; } | sed -n "${3}p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
p99_1=$(fig idle-1 'probe: GET' 7); p99_3=$(fig idle-3 'probe: GET' 7)
q99_1=$(fig idle-1 'quick poll p99' 4); q99_3=$(fig idle-3 'quick poll p99' 4)
cpu_1=$(fig idle-1 '^  kilnd CPU  ' 1); cpu_3=$(fig idle-3 '^  kilnd CPU  ' 1)
rate_1=$(fig dispatch-1 'dispatched and acknowledged per second' 1); rate_3=$(fig dispatch-3 'dispatched and acknowledged per second' 1)
q_1=$(fig dispatch-1 'bare SKIP LOCKED queue' 4); q_3=$(fig dispatch-3 'bare SKIP LOCKED queue' 4)
echo
for f in idle-1 idle-3 dispatch-1 dispatch-3; do echo "==== $f"; sed -n '/^==== kiln-bench-dispatch/,$p' "$OUT/$f.txt"; done
cat <<REPORT

==== one kilnd alone against three behind HAProxy (same machine, same PostgreSQL, one after the other)
$HOSTS hosts at a 30 s poll interval:
  probe p99 (GET /work?wait=0 every 100 ms)   1 replica ${p99_1:-?} ms   3 replicas ${p99_3:-?} ms   ratio $(ratio "${p99_3:-0}" "${p99_1:-0}")
  kiln-vfleet quick-poll p99 (max of 5 s)     1 replica ${q99_1:-?} ms   3 replicas ${q99_3:-?} ms   ratio $(ratio "${q99_3:-0}" "${q99_1:-0}")
  kilnd CPU, all replicas (% of one core)     1 replica ${cpu_1:-?}       3 replicas ${cpu_3:-?}       ratio $(ratio "${cpu_3:-0}" "${cpu_1:-0}")
  $(grep -h "kilnd CPU per replica" "$OUT/idle-3.txt" | tail -1 | sed "s/^ *//" || true)
Dispatch + ack over $DISPATCH_HOSTS hosts:
  steps/s                                     1 replica ${rate_1:-?}/s    3 replicas ${rate_3:-?}/s    ratio $(ratio "${rate_3:-0}" "${rate_1:-0}")
  against the bare queue of the same run      1 replica ${rate_1:-?}/${q_1:-?}   3 replicas ${rate_3:-?}/${q_3:-?}
REPORT
echo "(reports kept in $OUT)"
