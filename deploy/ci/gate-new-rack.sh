#!/usr/bin/env bash
# Gate a new rack through L11 burn-in before it joins the pool: a CI job step that works in any
# CI system (plain bash + kilnctl; no jq). See deploy/ci/README.md.
#
#   gate-new-rack.sh [--import FLEET_FILE] [--workflow NAME] [--timeout D] [--report FILE]
#                    [--param K=V]... POD [POD...]
#
# 1. --import: import the rack's fleet file (pods with `state: incoming`; idempotent, so a
#    re-run of the pipeline changes nothing). Needs an admin token: KILN_ADMIN_TOKEN_FILE if
#    set, else the job's own token.
# 2. Check that every pod is `incoming` (new hardware that never served jobs): a pod already
#    in service or half burnt-in is not what this pipeline is for.
# 3. kilnctl gate --workflow l11-burn-in --pods POD,POD --junit REPORT --timeout 3h: burn-in runs
#    on every host of the pods; hosts that pass become available, hosts that fail become
#    failed (they go to repair). The JUnit report is written even when the gate fails or times
#    out; publish it from the CI job (see the README).
#
# Connection: KILN_URL, and KILN_TOKEN or KILN_TOKEN_FILE (an operator token), KILN_CA_FILE for
# HTTPS with a private CA. KILNCTL overrides the kilnctl binary (default: kilnctl on PATH).
#
# Exit codes (kilnctl gate's): 0 every host passed; 1 a host failed, or the run was cancelled or
# timed out (the run is left running: kilnctl run cancel ID); 2 the gate could not start (bad
# usage, a pod not incoming, the server refused or was unreachable). Any non-zero fails the job.
set -uo pipefail

KILNCTL=${KILNCTL:-kilnctl}
workflow=l11-burn-in
timeout=3h
report=report.xml
fleet_file=
params=()
pods=()

usage() { sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { printf '[gate-new-rack] %s\n' "$*"; }
fail() { printf '[gate-new-rack] error: %s\n' "$*" >&2; exit "${2:-2}"; }

while (($#)); do
  case $1 in
    --import) fleet_file=${2:?--import needs a file}; shift 2 ;;
    --workflow) workflow=${2:?--workflow needs a name}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs a duration}; shift 2 ;;
    --report) report=${2:?--report needs a file}; shift 2 ;;
    --param) params+=(--param "${2:?--param needs K=V}"); shift 2 ;;
    -h|--help) usage ;;
    -*) printf 'unknown flag %s\n' "$1" >&2; usage ;;
    *) pods+=("$1"); shift ;;
  esac
done
((${#pods[@]})) || usage
command -v "$KILNCTL" >/dev/null || fail "kilnctl not found (put it on PATH or set KILNCTL)"

if [[ -n $fleet_file ]]; then
  say "importing $fleet_file"
  admin=()
  [[ -n ${KILN_ADMIN_TOKEN_FILE:-} ]] && admin=(--token-file "$KILN_ADMIN_TOKEN_FILE")
  "$KILNCTL" "${admin[@]}" fleet import "$fleet_file" || fail "fleet import failed"
fi

for pod in "${pods[@]}"; do
  shown=$("$KILNCTL" pods show "$pod") || fail "cannot read pod $pod"
  state=$(awk '$1 == "state:" { print $2; exit }' <<<"$shown")
  [[ $state == incoming ]] || fail "pod $pod is '${state:-unknown}', not incoming: this pipeline burns in new racks only"
  say "pod $pod is incoming"
done

pod_list=$(IFS=,; echo "${pods[*]}")
say "gating ${#pods[@]} pod(s) through $workflow (timeout $timeout, report $report)"
"$KILNCTL" gate --workflow "$workflow" --pods "$pod_list" "${params[@]}" --junit "$report" --timeout "$timeout"
code=$?
case $code in
  0) say "PASSED: the rack may join the pool" ;;
  1) say "FAILED: see $report; failed hosts are in state failed and go to repair" ;;
  *) say "NOT STARTED (exit $code): nothing was burnt in" ;;
esac
exit "$code"
