#!/usr/bin/env bash
# One call on the GPU machine: the GEMM test and benchmark, plus the SASS checks.
#   bash tools/perf/gemm/run-gemm.sh [prebuilt-dir] [bench-reps]
# Uses the binaries in prebuilt-dir when their libraries resolve there, else builds the two
# targets into build-gpu. Logs go to $OUT (or ./gemm-out). GEMM_NCU: kernel-name regexes
# (";"-separated) to profile one 8192^3 launch each with ncu.
set -u
PREBUILT=${1:-prebuilt}
REPS=${2:-30}
OUT=${OUT:-$PWD/gemm-out}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/../../gpu-env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
TEST=$PREBUILT/test_gemm
BENCH=$PREBUILT/tmashmem-gemm-bench
if [ ! -x "$TEST" ] || [ ! -x "$BENCH" ] || ldd "$TEST" "$BENCH" | grep -q "not found"; then
  echo "building test_gemm and tmashmem-gemm-bench"
  cmake -S . -B build-gpu -G Ninja -DTMASHMEM_WERROR=ON > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
  cmake --build build-gpu -j16 --target test_gemm tmashmem-gemm-bench 2>&1 | tail -5
  TEST=build-gpu/tests/gpu/gemm/test_gemm
  BENCH=build-gpu/tools/perf/gemm/tmashmem-gemm-bench
fi
cuobjdump -sass "$BENCH" > "$OUT/bench.sass" 2>&1
echo "SASS: HGMMA $(grep -c HGMMA "$OUT/bench.sass"), UTMALDG $(grep -c UTMALDG "$OUT/bench.sass"), UTMASTG $(grep -c UTMASTG "$OUT/bench.sass"), LDL/STL in gemm kernels $(awk '/Function :/{g=/gemm_kernel/} g&&/(LDL|STL)/' "$OUT/bench.sass" | wc -l)"
gzip -f "$OUT/bench.sass"
timeout 240 mpiexec --oversubscribe -np 1 "$TEST" 2>&1 | tee "$OUT/test.log"
echo "test exit: ${PIPESTATUS[0]}"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>&1 &
SMI=$!
timeout 120 "$BENCH" "$REPS" 2>&1 | tee "$OUT/bench.log"
echo "bench exit: ${PIPESTATUS[0]}"
# The same shapes with B given as [K, N] (GEMM_KN=0 leaves it out).
if [ "${GEMM_KN:-1}" = 1 ]; then
  timeout 120 "$BENCH" "$REPS" 6 kn 2>&1 | tee "$OUT/bench-kn.log"
  echo "bench kn exit: ${PIPESTATUS[0]}"
fi
kill "$SMI" 2>/dev/null
# Counters for one launch of each kernel named in GEMM_NCU (regexes over the demangled
# names, ';'-separated; unset: none), 8192^3.
IFS=';' read -r -a NCU_KERNELS <<< "${GEMM_NCU-}"
for i in "${!NCU_KERNELS[@]}"; do
  command -v ncu > /dev/null || break
  timeout 90 ncu --clock-control none -k "regex:${NCU_KERNELS[$i]}" --launch-skip 20 --launch-count 1 \
    --section SpeedOfLight "$BENCH" 3 1 > "$OUT/ncu-$i.txt" 2>&1
  grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|Compute \(SM\) Throughput|DRAM Throughput|L2 Cache Throughput" "$OUT/ncu-$i.txt" | cut -c1-160
done
awk -F', ' 'NR>1{n++; c+=$2; p+=$3} END{if(n) printf "during the bench: mean SM clock %.0f MHz, mean power %.0f W (%d samples)\n", c/n, p/n, n}' "$OUT/clocks.csv"
