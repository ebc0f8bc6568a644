#!/usr/bin/env bash
# Everything the GPU machine is for, in one command: configure, build, run the GPU
# tests under mpiexec with 1, 2 and 4 PEs, run the benchmarks (NVSHMEM beside
# tmashmem where NVSHMEM is installed), write full logs under $RESULTS, print a
# short table last.
#   tools/gpu-suite.sh [all|tests|bench|init|rerun|quick|sanitize] [ctest -R regex]
# init: only the start-up benchmark (bench_init over MPI, the unique-id and NCCL bootstraps).
# quick: the rows a change is first checked on (run-perf.sh's PERF_SET=quick: tile and
# block put/get, ping-pong, message rate) twice on the same machine start, each pass
# compared with the run of record (docs/perf/suite_*.csv) and the two with each other.
# SUITE_TARGETS="t1 t2 ..." builds only those targets (with tmashmem-info), for a mode that
# runs only some programs (sanitize with SANITIZE_TESTS, tests with a ctest -R regex).
# SUITE_EXCLUDE: a ctest -E regex of GPU entries to leave out (tests), so that the suite can be
# split across device calls, e.g. '^test_collectives' and then that regex as the filter.
# SUITE_CUDA_FLAGS goes to CMAKE_CUDA_FLAGS (sanitize: -lineinfo, for source lines in reports).
# SUITE_PERF_REPEAT=2 runs the benchmarks a second time on the same build (into
# perf-rerun/) and compares the two runs row by row (tools/perf/perf.py compare).
# `rerun` does only that second run and the comparison, against the perf/ folder an
# earlier `all` or `bench` left in $RESULTS (same machine, same build), so the two
# can be split across device calls. The rerun skips the tile/bulk shape sweeps.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WHAT=${1:-all}
FILTER=${2:-}
RESULTS=${RESULTS:-$ROOT/results}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$RESULTS"
# Multicast stays off, in this process and every child.
source "$ROOT/tools/gpu-env.sh"
NVSHMEM_HOME=${TMASHMEM_NVSHMEM_HOME:-$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)}
summary=()
# SUITE_DEADLINE_S: the whole script's wall-clock budget (a device call's limit); each
# phase's timeout is cut to what is left of it, so the summary and logs always come back.
SUITE_START=$(date +%s)
limit() {  # limit DEFAULT_S: DEFAULT_S, or less if the deadline is nearer
  local left=$((${SUITE_DEADLINE_S:-100000} - ($(date +%s) - SUITE_START) - 20))
  [ $left -lt 1 ] && left=1
  echo $((left < $1 ? left : $1))
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1
  nvcc --version | tail -1
  echo "NVSHMEM: ${NVSHMEM_HOME:-not found}"
} | tee "$RESULTS/machine.txt"

rerun_perf() {
  local t0 rc
  t0=$(date +%s)
  PERF_SKIP_SHAPES=1 timeout "$(limit "${SUITE_PERF_LIMIT_S:-900}")" bash "$ROOT/tools/perf/run-perf.sh" \
    "$BUILD_DIR" "$RESULTS/perf-rerun" >"$RESULTS/perf-rerun.log" 2>&1
  rc=$?
  summary+=("perf rerun: rc=$rc ($(($(date +%s) - t0)) s)")
  python3 "$ROOT/tools/perf/perf.py" compare "$RESULTS/perf" "$RESULTS/perf-rerun" \
    --out "$RESULTS/reproducibility.txt" | head -40
}

t0=$(date +%s)
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON \
  ${SUITE_CUDA_FLAGS:+"-DCMAKE_CUDA_FLAGS=$SUITE_CUDA_FLAGS"} \
  ${NVSHMEM_HOME:+-DTMASHMEM_NVSHMEM_HOME=$NVSHMEM_HOME} >"$RESULTS/configure.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" ${SUITE_TARGETS:+--target tmashmem-info $SUITE_TARGETS} >"$RESULTS/build.log" 2>&1
rc=$?
summary+=("build: rc=$rc ($(($(date +%s) - t0)) s)")
if [ $rc -ne 0 ]; then
  tail -60 "$RESULTS/build.log" "$RESULTS/configure.log"
  printf '%s\n' "${summary[@]}"
  exit 1
fi
[ -n "$NVSHMEM_HOME" ] && export LD_LIBRARY_PATH="$NVSHMEM_HOME/lib:${LD_LIBRARY_PATH:-}"

"$BUILD_DIR/tools/tmashmem-info" -a >"$RESULTS/info.txt" 2>&1
grep -E "multicast for tmashmem|^\s+\[" "$RESULTS/info.txt"

# MPS lets the kernels of the PEs that share the GPU run at once; without it every
# cross-PE wait costs a time slice (milliseconds). Stopped on exit whatever happens.
# TMASHMEM_MPS=0 runs without it.
source "$ROOT/tools/mps.sh"
finish() {
  mps_stop
  # The device tool returns at most 8 files from $OUT: one archive of everything.
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    tar czf "$OUT/results.tar.gz" -C "$RESULTS" . 2>/dev/null
    [ -f "$RESULTS/summary.txt" ] && cp "$RESULTS/summary.txt" "$OUT/"
  fi
}
trap finish EXIT
mps_start

if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  t0=$(date +%s)
  (cd "$BUILD_DIR" && timeout "$(limit "${SUITE_TEST_LIMIT_S:-1500}")" ctest -V -L gpu ${FILTER:+-R "$FILTER"} ${SUITE_EXCLUDE:+-E "$SUITE_EXCLUDE"} --timeout 600) >"$RESULTS/gpu-tests.log" 2>&1
  rc=$?
  grep -E "passed, .* failed|% tests passed|Failed|Timeout|SKIPPED" "$RESULTS/gpu-tests.log" | sed "s/^[0-9]*: //" | sort | uniq -c | head -40
  summary+=("gpu tests: rc=$rc ($(($(date +%s) - t0)) s): $(grep -E '% tests passed' "$RESULTS/gpu-tests.log")")
  (cd "$BUILD_DIR" && ctest -LE gpu -j 8 ${FILTER:+-R "$FILTER"}) >"$RESULTS/cpu-tests.log" 2>&1
  summary+=("cpu tests: $(grep -E 'tests passed' "$RESULTS/cpu-tests.log")")
fi

if [ "$WHAT" = all ] || [ "$WHAT" = bench ] || [ "$WHAT" = init ]; then
  : >"$RESULTS/init.csv"
  for np in 1 2 4; do
    for prog in bench_init bench_init_nvshmem bench_init_nccl; do
      [ -x "$BUILD_DIR/tools/perf/$prog" ] || continue
      NVSHMEM_SYMMETRIC_SIZE=2G timeout 120 mpirun --oversubscribe --bind-to none -np $np \
        -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE \
        -x TMASHMEM_MULTICAST -x TORCH_SYMM_MEM_DISABLE_MULTICAST \
        "$BUILD_DIR/tools/perf/$prog" 10 $((1 << 30)) >"$RESULTS/$prog.np$np.log" 2>&1
      grep -E "^(tmashmem|nvshmem)(-[a-z]+)?," "$RESULTS/$prog.np$np.log" >>"$RESULTS/init.csv"
      grep -E "FAILED|rror|left out|NCCL [0-9]" "$RESULTS/$prog.np$np.log" | head -3
    done
  done
  # The same start-up over the unique-id bootstrap (mpirun only starts the processes; the
  # PEs find each other through the TCP root named in the id): rows "tmashmem-uid".
  uid=$("$BUILD_DIR/examples/uid_launch/uid_ring" --make-id 2>/dev/null)
  for np in 1 2 4; do
    [ -n "$uid" ] || break
    TMASHMEM_BOOTSTRAP=uid TMASHMEM_BOOTSTRAP_UID=$uid timeout 120 mpirun --oversubscribe \
      --bind-to none -np $np -x TMASHMEM_BOOTSTRAP -x TMASHMEM_BOOTSTRAP_UID -x TMASHMEM_MULTICAST \
      -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST bash -c \
      'TMASHMEM_BOOTSTRAP_UID_RANK=$OMPI_COMM_WORLD_RANK TMASHMEM_BOOTSTRAP_UID_SIZE=$OMPI_COMM_WORLD_SIZE exec "$0" 10 $((1 << 30))' \
      "$BUILD_DIR/tools/perf/bench_init" >"$RESULTS/bench_init_uid.np$np.log" 2>&1
    grep -E "^tmashmem," "$RESULTS/bench_init_uid.np$np.log" | sed 's/^tmashmem,/tmashmem-uid,/' >>"$RESULTS/init.csv"
    grep -E "FAILED|rror" "$RESULTS/bench_init_uid.np$np.log" | head -3
  done
  echo "runtime,pes,bytes,reps,init_ms,malloc_ms,finalize_ms,total_min_ms,total_median_ms,total_max_ms"
  cat "$RESULTS/init.csv"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  t0=$(date +%s)
  timeout "$(limit "${SUITE_PERF_LIMIT_S:-900}")" bash "$ROOT/tools/perf/run-perf.sh" "$BUILD_DIR" "$RESULTS/perf" >"$RESULTS/perf.log" 2>&1
  rc=$?
  summary+=("perf: rc=$rc ($(($(date +%s) - t0)) s)")
  tail -40 "$RESULTS/perf.log"
  if [ "${SUITE_PERF_REPEAT:-1}" -ge 2 ]; then rerun_perf; fi
fi
if [ "$WHAT" = rerun ]; then rerun_perf; fi
if [ "$WHAT" = quick ]; then
  for pass in 1 2; do
    t0=$(date +%s)
    PERF_SET=quick timeout "$(limit "${SUITE_PERF_LIMIT_S:-300}")" bash "$ROOT/tools/perf/run-perf.sh" \
      "$BUILD_DIR" "$RESULTS/perf-quick$pass" >"$RESULTS/perf-quick$pass.log" 2>&1
    summary+=("perf quick pass $pass: rc=$? ($(($(date +%s) - t0)) s)")
  done
  record="$ROOT/docs/perf/suite_tmashmem.csv,$ROOT/docs/perf/suite_nvshmem.csv"
  python3 "$ROOT/tools/perf/perf.py" compare "$record" "$RESULTS/perf-quick1" "$RESULTS/perf-quick2" \
    --out "$RESULTS/quick-vs-record.txt" | grep -vE "^  .* B: A .*\([+-][0-9.]+%\)$" | sed "s#$ROOT/##g"
  summary+=("quick: $(grep -oE 'in both .*: [0-9]+ rows' "$RESULTS/quick-vs-record.txt" | sed "s#$ROOT/##g");" \
    "relative to the plain copy: $(grep -oE '[0-9]+ of [0-9]+ bandwidth rows slower' "$RESULTS/quick-vs-record.txt" | head -2 | tr '\n' ';')")
fi
# sanitize: GPU test programs under compute-sanitizer with 2 PEs. SANITIZE_TESTS: entries
# separated by ';', each a program under tests/gpu/ with an optional Catch2 filter after ':'
# (the large GEMM shapes take too long under the tools); SANITIZE_TOOLS: which tools;
# SANITIZE_CHUNK_SIZE: the tests' heap chunk size (bytes; unset: their 128 MiB);
# SANITIZE_LIMIT_S bounds each run, SANITIZE_JOBS runs that many at once, SANITIZE_FLAGS goes
# to compute-sanitizer. Stress loops are cut to SANITIZE_ROUNDS rounds. A run cut by its bound
# says "rc=124" (did not finish).
if [ "$WHAT" = sanitize ]; then
  default_sanitize="test_signal;tile/test_tile;test_rma;test_atomic;test_barrier;test_ordering"
  default_sanitize+=";test_on_stream;test_on_stream_outcome;test_collectives;test_collectives_stress"
  default_sanitize+=";test_collectives_device"
  default_sanitize+=";test_multicast;heap/test_heap_gpu"
  default_sanitize+=";gemm/test_gemm:gemm bf16 small M;fused/test_fused:allgather_matmul: small shards*"
  default_sanitize+=";fused/test_reduce_scatter:matmul_reduce_scatter fast: ragged and small shards"
  export TMASHMEM_TEST_STRESS_ROUNDS=${SANITIZE_ROUNDS:-20} TMASHMEM_TEST_BARRIER_ROUNDS=${SANITIZE_ROUNDS:-20}
  export TMASHMEM_TEST_COLL_ROUNDS=${SANITIZE_ROUNDS:-20}
  # 128 MiB heap chunks by default (gpu_test_util.cuh); memcheck tracks each mapped chunk as
  # an allocation of its own, so a bulk copy across a chunk boundary inside one tmashmem
  # block reads as out of bounds. 0 keeps the tests' default.
  export TMASHMEM_TEST_CHUNK_SIZE=${SANITIZE_CHUNK_SIZE:-0}
  sanitize_log() { echo "$RESULTS/sanitize.$1.$(basename "${2%%:*}").log"; }  # TOOL ENTRY
  sanitize_one() {  # sanitize_one TOOL ENTRY
    local prog=${2%%:*} filter= log
    [ "$prog" != "$2" ] && filter=${2#*:}
    log=$(sanitize_log "$1" "$2")
    timeout "$(limit "${SANITIZE_LIMIT_S:-120}")" mpirun --oversubscribe --bind-to none -np 2 \
      -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
      -x TMASHMEM_TEST_STRESS_ROUNDS -x TMASHMEM_TEST_BARRIER_ROUNDS -x TMASHMEM_TEST_COLL_ROUNDS \
      -x TMASHMEM_TEST_CHUNK_SIZE compute-sanitizer \
      --tool "$1" --error-exitcode 9 ${SANITIZE_FLAGS:-} "$BUILD_DIR/tests/gpu/$prog" ${filter:+"$filter"} >"$log" 2>&1
    echo "rc=$?" >>"$log"
  }
  IFS=';' read -r -a sanitize_entries <<<"${SANITIZE_TESTS:-$default_sanitize}"
  sanitize_tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
  for tool in $sanitize_tools; do
    for entry in "${sanitize_entries[@]}"; do
      while [ "$(jobs -rp | wc -l)" -ge "${SANITIZE_JOBS:-1}" ]; do wait -n; done
      sanitize_one "$tool" "$entry" &
    done
  done
  wait
  for tool in $sanitize_tools; do
    for entry in "${sanitize_entries[@]}"; do
      log=$(sanitize_log "$tool" "$entry")
      # device-side reports (memory, races, barriers) apart from the CUDA API errors
      reports=$(grep -cE '^========= (Invalid|Misaligned|Error:|Warning:|Barrier error)' "$log")
      summary+=("sanitize $tool $(basename "${entry%%:*}"): $(tail -1 "$log") device reports: $reports; $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|passed, ' "$log" | sort -u | tr '\n' ' ')")
    done
  done
fi
printf '%s\n' "${summary[@]}" | tee "$RESULTS/summary.txt"
