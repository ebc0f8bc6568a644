#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, AddressSanitizer and UBSan, and runs
# each for FUZZ_SECONDS (default 20) from its committed seed corpus. The corpus is copied
# first, so the run never writes into the repository; a crashing input is kept under
# $BUILD_DIR/artifacts/ and the script exits non-zero naming it. To turn a finding into a
# regression input, copy it into tests/fuzz/corpus/<target>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-20}
if ! command -v clang++ >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null
  else
    echo "run-fuzzers: clang++ not found (Debian: apt-get install clang)" >&2
    exit 1
  fi
fi
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Debug -DTMASHMEM_BUILD_CUDA=OFF -DTMASHMEM_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
targets=$(cd "$ROOT/tests/fuzz/corpus" && ls)
cmake --build "$BUILD_DIR" -j "$(nproc)" --target $(printf 'fuzz_%s ' $targets)
failed=0 passed=0
mkdir -p "$BUILD_DIR/artifacts"
for t in $targets; do
  work="$BUILD_DIR/corpus/$t"
  rm -rf "$work" && mkdir -p "$work" && cp "$ROOT/tests/fuzz/corpus/$t/"* "$work/"
  if ASAN_OPTIONS=detect_leaks=1 "$BUILD_DIR/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" \
      -artifact_prefix="$BUILD_DIR/artifacts/$t-" -print_final_stats=1 "$work" \
      >"$BUILD_DIR/fuzz_$t.log" 2>&1; then
    echo "run-fuzzers: $t: $(grep -E 'stat::number_of_executed_units' "$BUILD_DIR/fuzz_$t.log" | awk '{print $2}') inputs, no finding"
    passed=$((passed + 1))
  else
    echo "run-fuzzers: $t: FINDING (log: $BUILD_DIR/fuzz_$t.log)"
    grep -E "ERROR|contract broken|runtime error|Test unit written" "$BUILD_DIR/fuzz_$t.log" | head -5
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
