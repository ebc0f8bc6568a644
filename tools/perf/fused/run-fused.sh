#!/usr/bin/env bash
# One call on the GPU machine: the fused tests (2, 1, 4 PEs), the GEMM engine's test (with
# FUSED_WITH_GEMM_TEST=1), both examples (allgather_gemm through tools/run-example.sh), the
# fused benchmark at 1, 2 and 4 PEs (PEs sharing the GPU under MPS), and the plot of its
# communication sweep (plot_sweep.py: $OUT/fused_comm_sweep.svg and a Markdown table).
#   bash tools/perf/fused/run-fused.sh [prebuilt-dir] [bench-rounds] [bench-shapes]
# prebuilt-dir holds test_fused, test_reduce_scatter, test_gemm, allgather_gemm,
# gemm_reduce_scatter, tmashmem-fused-bench and libtmashmem.so* built elsewhere. Logs go to
# $OUT (or ./fused-out). FUSED_SKIP_TESTS=1 runs only the examples, benchmark and plot.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PREBUILT=$(cd "${1:-prebuilt}" && pwd)
ROUNDS=${2:-10}
SHAPES=${3:-4}
OUT=${OUT:-$PWD/fused-out}
mkdir -p "$OUT"
source "$HERE/../../gpu-env.sh"
export LD_LIBRARY_PATH=$PREBUILT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
ldd "$PREBUILT/test_fused" | grep "not found" && echo "WARNING: unresolved libraries"
source "$HERE/../../mps.sh"
mps_start
START=$(date +%s)
step() {  # name, timeout, command...
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -E "passed|failed|FAILED|ok \(|OK|error|timed out|Timeout|trap|skipped" "$OUT/$name.log" | tail -25
  echo "=== $name exit $rc, $(( $(date +%s) - t0 )) s (at $(( $(date +%s) - START )) s)"
}
T=${FUSED_TEST_TIMEOUT:-40}
if [ -z "${FUSED_SKIP_TESTS:-}" ]; then
  for np in 2 1 4; do
    step "test_fused.np$np" "$T" $MPI -np $np "$PREBUILT/test_fused"
    step "test_reduce_scatter.np$np" "$T" $MPI -np $np "$PREBUILT/test_reduce_scatter"
  done
  [ -n "${FUSED_WITH_GEMM_TEST:-}" ] && step test_gemm 90 $MPI -np 1 "$PREBUILT/test_gemm"
fi
export EXAMPLE_BIN=$PREBUILT/allgather_gemm
step run-example "$T" bash "$HERE/../../run-example.sh"
tail -8 "$OUT/run-example.log"
step example_gemm_reduce_scatter "$T" $MPI -np 2 "$PREBUILT/gemm_reduce_scatter"
tail -4 "$OUT/example_gemm_reduce_scatter.log"
for np in 1 2 4; do
  step "bench.np$np" "${FUSED_BENCH_TIMEOUT:-40}" $MPI -np $np "$PREBUILT/tmashmem-fused-bench" "$ROUNDS" "$SHAPES"
  grep -v "^\[\|^csv," "$OUT/bench.np$np.log" | tail -60
done
python3 "$HERE/plot_sweep.py" --svg "$OUT/fused_comm_sweep.svg" "$OUT"/bench.np*.log | tee "$OUT/fused_comm_sweep.md"
mps_stop
