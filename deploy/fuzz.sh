#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 60), two at a time, and
# prints executions, coverage and findings per target. The corpus grows in build-fuzz/corpus/
# between runs; crashing inputs land in build-fuzz/tests/fuzz/artifacts/ (copy one into
# tests/fuzz/corpus/NAME/ as a regression input once it is fixed). deploy/test.sh runs the same
# targets for a fixed, short number of inputs (ctest label fuzz).
#
#   deploy/fuzz.sh            # 60 s per target
#   deploy/fuzz.sh 600        # 10 minutes per target
#   deploy/fuzz.sh 60 -R bundle   # extra arguments go to ctest (one target)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: deploy/fuzz.sh [SECONDS] [ctest arguments]" >&2; exit 2; }
shift || true

ensure_packages "${KILN_PACKAGES[@]}"
BUILD=${KILN_BUILD_DIR:-$KILN_ROOT/build}
FUZZ_BUILD=$BUILD-fuzz
log "building the fuzz targets in $FUZZ_BUILD"
kiln_build_fuzz "$FUZZ_BUILD"
# The ctest entries (seeds, run script) live in the default build's configuration.
cmake -S "$KILN_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ_BINARY_DIR="$FUZZ_BUILD" >/dev/null \
  || die "cmake configure failed"

out=$(mktemp /tmp/kiln-fuzz-log.XXXXXX)
log "fuzzing every target for ${seconds}s (log: $out)"
status=0
(cd "$BUILD" && KILN_FUZZ_REQUIRED=1 KILN_FUZZ_SECONDS=$seconds KILN_FUZZ_CORPUS_ROOT=$FUZZ_BUILD/corpus \
   ctest -L fuzz -j2 -V --timeout $((seconds + 300)) "$@") >"$out" 2>&1 || status=$?

# ctest -V prefixes each line with the test's number; the test names say which target it is.
python3 - "$out" <<'PY'
import re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
names, stats = {}, {}
for line in lines:
    m = re.match(r"\s*(\d+): Test command: .*/fuzz_(\w+)\"? ", line)
    if m: names[m.group(1)] = m.group(2)
    m = re.match(r"\s*(\d+): (.*)", line)
    if not m: continue
    num, text = m.groups()
    s = stats.setdefault(num, {})
    if (c := re.search(r"cov: (\d+) ft: (\d+) corp: (\d+)", text)): s["cov"], s["ft"], s["corp"] = c.groups()
    if (c := re.match(r"stat::number_of_executed_units:\s+(\d+)", text)): s["execs"] = c.group(1)
    if (c := re.match(r"stat::average_exec_per_sec:\s+(\d+)", text)): s["per_s"] = c.group(1)
    if (c := re.match(r"stat::peak_rss_mb:\s+(\d+)", text)): s["rss"] = c.group(1)
    if re.search(r"ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|fuzz property failed|deadly signal", text):
        s.setdefault("finding", text.strip()[:100])
print(f"{'target':20} {'executions':>11} {'exec/s':>7} {'cov':>6} {'ft':>6} {'corpus':>6} {'rss MB':>6}  finding")
for num, name in sorted(names.items(), key=lambda kv: kv[1]):
    s = stats.get(num, {})
    print(f"{name:20} {s.get('execs','?'):>11} {s.get('per_s','?'):>7} {s.get('cov','?'):>6} {s.get('ft','?'):>6} "
          f"{s.get('corp','?'):>6} {s.get('rss','?'):>6}  {s.get('finding','none')}")
PY
grep -E "tests passed|tests failed" "$out" || true
exit $status
