#!/usr/bin/env bash
# Runs every Kiln test tier: installs missing Debian packages, builds, starts a throwaway
# PostgreSQL 15 (as the unprivileged user "kiln", fsync off, removed afterwards), then ctest.
#
#   deploy/test.sh                 # everything
#   deploy/test.sh -L unit         # one tier (labels: unit, exec, store, api, security, e2e, browser, prometheus, fuzz, slurm)
#   deploy/test.sh -R PgStoreTest  # extra arguments go to ctest
#   deploy/test.sh --sanitize=address  # unit, exec, store and api tiers under ASan + LSan + UBSan (build-asan/)
#   deploy/test.sh --sanitize=thread   # executor, agent gateway and rollout controller tests under TSan (build-tsan/)
#
# With --sanitize every process the tests start (kilnd, kiln-agent, the simulators) is the
# sanitized build's; their reports go to BUILD/sanitizer-reports/, and any report there fails the
# run even if the test that caused it passed (a report from a kilnd child never reaches ctest).
# Suppressions, for third-party libraries only: deploy/sanitizers/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

SANITIZE=
CTEST_ARGS=()
for arg in "$@"; do
  case $arg in
    --sanitize=address | --sanitize=thread) SANITIZE=${arg#--sanitize=} ;;
    --sanitize=* | --sanitize) die "--sanitize takes address or thread, not '${arg#--sanitize}'" ;;
    *) CTEST_ARGS+=("$arg") ;;
  esac
done

ensure_packages "${KILN_PACKAGES[@]}"
[ -z "$SANITIZE" ] && [ -x "$KILN_ROOT/deploy/lib/browser-deps.sh" ] && "$KILN_ROOT/deploy/lib/browser-deps.sh"

if [ -z "$SANITIZE" ]; then
  BUILD=${KILN_BUILD_DIR:-$KILN_ROOT/build}
  log "building in $BUILD"
  kiln_build "$BUILD"
  # The fuzz label runs the libFuzzer targets, a clang build of their own (tests/fuzz).
  log "building the fuzz targets in $BUILD-fuzz (clang, ASan + UBSan)"
  kiln_build_fuzz "$BUILD-fuzz"
  export KILN_FUZZ_REQUIRED=1
  # The api tier checks every answer against api/openapi.yaml with tests/contract's Ajv
  # (installed by browser-deps.sh above): missing tools fail the run rather than skip the check.
  export KILN_CONTRACT_REQUIRED=1
else
  SUPP=$KILN_ROOT/deploy/sanitizers
  if [ "$SANITIZE" = address ]; then
    BUILD=$KILN_ROOT/build-asan
    TARGETS=(all)
    # The e2e, browser and prometheus tiers stay out: too slow under ASan, and what they run is
    # covered here piece by piece.
    CTEST_ARGS=(-L '^(unit|exec|store|api)$' "${CTEST_ARGS[@]}")
  else
    BUILD=$KILN_ROOT/build-tsan
    # The code with threads of its own: the Executor (common), the agent gateway (alone on an
    # executor: kiln_runs_tests) and the rollout controller, the last two in a real kilnd (the
    # api tier's agent-work and rollout tests) and the controller's own tests; the step
    # executor's cancellation (common/exec).
    TARGETS=(kiln_common_tests kiln_rollout_controller_tests kiln_runs_tests kiln_exec_process_test kilnd kiln_api_process_tests)
    CTEST_ARGS=(-R '^(ExecutorTest|RolloutControllerTest|AgentGatewayTest|BoostProcessRunnerTest|AgentWorkTest|AgentLivenessTest|RolloutsApiTest|KilndShutdownTest|KilndReplicasTest)\.' "${CTEST_ARGS[@]}")
  fi
  log "building in $BUILD with KILN_SANITIZE=$SANITIZE"
  cmake -S "$KILN_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE="$SANITIZE" \
    -DKILN_SKIP_AGENTS=OFF -DKILN_SKIP_CLI=OFF -DKILN_SKIP_TESTS=OFF >/dev/null || die "cmake configure failed"
  cmake --build "$BUILD" -j2 --target "${TARGETS[@]}" || die "build failed"

  REPORTS=$BUILD/sanitizer-reports
  rm -rf "$REPORTS" && mkdir -p "$REPORTS"
  # Each process writes its reports to REPORTS/<tool>.<pid>. halt_on_error: the first memory
  # error or UB ends the process (UB also through -fno-sanitize-recover). TSan goes on after a
  # race so one run shows them all; the exit status still says there was one.
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:log_path=$REPORTS/asan"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPP/ubsan.supp:log_path=$REPORTS/ubsan"
  export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp:print_suppressions=0:log_path=$REPORTS/tsan"
fi

PGDIR=$(mktemp -d /tmp/kiln-test-pg.XXXXXX)
PGPORT=${KILN_TEST_PG_PORT:-$((40000 + RANDOM % 20000))}
cleanup() { pg_down "$PGDIR"; rm -rf "$PGDIR"; }
trap cleanup EXIT
pg_up "$PGDIR" "$PGPORT" off
export KILN_TEST_PG="host=$PGDIR/run port=$PGPORT user=$KILN_PG_USER"
log "throwaway PostgreSQL on $PGDIR/run:$PGPORT"

cd "$BUILD"
if [ -z "$SANITIZE" ]; then
  ctest --output-on-failure --timeout 600 -j2 "$@"
  exit
fi

rc=0
ctest --output-on-failure --timeout 900 -j2 "${CTEST_ARGS[@]}" || rc=$?
shopt -s nullglob
reports=("$REPORTS"/*)
if ((${#reports[@]} > 0)); then
  for f in "${reports[@]}"; do
    printf '\n==== %s ====\n' "$f" >&2
    cat "$f" >&2
  done
  log "${#reports[@]} sanitizer report(s) in $REPORTS (above)"
  rc=1
fi
exit $rc
