#!/usr/bin/env bash
# Runs one libFuzzer target (tests/fuzz) over its seeds, then RUNS more generated inputs.
#
#   run-fuzzer.sh BINARY RUNS SEED...   (a SEED is a file or a folder of files)
#
# Used by ctest's `fuzz` label (a fixed number of runs) and by deploy/fuzz.sh, which sets
# KILN_FUZZ_SECONDS (a time budget instead of RUNS) and KILN_FUZZ_CORPUS_ROOT (a corpus kept
# between runs, one folder per target). Crashing inputs land in KILN_FUZZ_ARTIFACTS (default:
# artifacts/ beside the binary). Exits non-zero on a crash, leak, timeout or
# out-of-memory; 77 (ctest: skipped) when the binary was not built, unless KILN_FUZZ_REQUIRED=1.
set -euo pipefail
bin=$1; shift
budget=(-runs="$1" -max_total_time=300); shift
[ -n "${KILN_FUZZ_SECONDS:-}" ] && budget=(-max_total_time="$KILN_FUZZ_SECONDS")
if [ ! -x "$bin" ]; then
  if [ "${KILN_FUZZ_REQUIRED:-0}" = 1 ]; then
    echo "error: $bin is missing (deploy/test.sh builds the fuzz targets with clang in build-fuzz/)" >&2
    exit 1
  fi
  echo "skipped: $bin is not built (deploy/test.sh and deploy/fuzz.sh build it with clang in build-fuzz/)"
  exit 77
fi
work=$(mktemp -d /tmp/kiln-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/new"
for s in "$@"; do
  if [ -d "$s" ]; then
    find "$s" -maxdepth 1 -type f ! -name '.*' -exec cp -t "$work/seeds" {} +
  elif [ -f "$s" ]; then
    cp "$s" "$work/seeds/"
  fi
done
corpus=$work/new
name=$(basename "$bin"); name=${name#fuzz_}
[ -n "${KILN_FUZZ_CORPUS_ROOT:-}" ] && corpus=$KILN_FUZZ_CORPUS_ROOT/$name
mkdir -p "$corpus"
artifacts=${KILN_FUZZ_ARTIFACTS:-$(dirname "$bin")/artifacts}
mkdir -p "$artifacts"
# Every seed and regression input runs first; then libFuzzer mutates. New inputs go to $corpus.
exec "$bin" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$artifacts/$(basename "$bin")-" "$corpus" "$work/seeds"
