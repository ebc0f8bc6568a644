#!/usr/bin/env bash
# One call on the GPU machine: the fused tests (2, 1, 4 PEs), the GEMM engine's test (with
# FUSED_WITH_GEMM_TEST=1), the example through tools/run-example.sh, and the fused benchmark
# at 1, 2 and 4 PEs (PEs sharing the GPU under MPS).
#   bash tools/perf/fused/run-fused.sh [prebuilt-dir] [bench-rounds] [bench-shapes]
# prebuilt-dir holds test_fused, test_reduce_scatter, test_gemm, allgather_gemm,
# tmashmem-fused-bench and libtmashmem.so* built elsewhere. Logs go to $OUT (or ./fused-out).
set -u
PREBUILT=$(cd "${1:-prebuilt}" && pwd)
ROUNDS=${2:-10}
SHAPES=${3:-4}
OUT=${OUT:-$PWD/fused-out}
mkdir -p "$OUT"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PREBUILT${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
MPI="mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
ldd "$PREBUILT/test_fused" | grep "not found" && echo "WARNING: unresolved libraries"
source "$(dirname "${BASH_SOURCE[0]}")/../../mps.sh"
mps_start
step() {  # name, timeout, command...
  local name=$1 limit=$2
  shift 2
  echo "=== $name"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -E "passed|failed|FAILED|ok \(|OK|error|timed out|Timeout|trap|skipped" "$OUT/$name.log" | tail -25
  echo "=== $name exit $rc"
}
T=${FUSED_TEST_TIMEOUT:-25}
for np in 2 1 4; do
  step "test_fused.np$np" "$T" $MPI -np $np "$PREBUILT/test_fused"
  step "test_reduce_scatter.np$np" "$T" $MPI -np $np "$PREBUILT/test_reduce_scatter"
done
[ -n "${FUSED_WITH_GEMM_TEST:-}" ] && step test_gemm 60 $MPI -np 1 "$PREBUILT/test_gemm"
export EXAMPLE_BIN=$PREBUILT/allgather_gemm
step run-example "$T" bash tools/run-example.sh
tail -8 "$OUT/run-example.log"
for np in 1 2 4; do
  step "bench.np$np" "${FUSED_BENCH_TIMEOUT:-25}" $MPI -np $np "$PREBUILT/tmashmem-fused-bench" "$ROUNDS" "$SHAPES"
  grep -v "^\[" "$OUT/bench.np$np.log" | tail -40
done
mps_stop
