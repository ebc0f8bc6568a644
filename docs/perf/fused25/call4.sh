#!/usr/bin/env bash
# Twenty-fifth session, fourth call: the shape that tells the two readings of "One SM of each
# share left free" apart (docs/fused.md), then the examples with their interleaved timing.
#   bash docs/perf/fused25/call4.sh build-f25t build-f25c
set -u
NEW=$(cd "${1:-build-f25t}" && pwd)
FINAL=${OUT:-$PWD/fused25-out}
SPARES="0 1 2" NP2=0 AG="4608 2816 8192 8192 6144 8192" RS="4608 2816 4096" \
  OUT=$FINAL bash docs/perf/fused25/run.sh "${2:-build-f25c}" 2>&1 | grep -E "===|check"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$NEW
source tools/mps.sh
mps_start
for i in 1 2; do
  EXAMPLE_BIN=$NEW/allgather_gemm timeout 60 bash tools/run-example.sh 2>&1 | tail -6
  timeout 60 mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST \
    -x LD_LIBRARY_PATH -np 2 "$NEW/gemm_reduce_scatter" 2>&1 | tail -4
done
mps_stop
