#!/usr/bin/env bash
# Twenty-fifth session, second call: the fused tests, examples and benchmark on the tree (one SM
# of each PE's share left free, allgather_gemm_launch.cuh), then the benchmark's default shapes
# beside the library before (build-f25c: spare_sms.patch, FUSED_SPARE_SMS=0 = the old share),
# alternating, two passes at 4 and 2 PEs. Everything lands in one archive ($OUT/fused25.tgz).
#   bash docs/perf/fused25/verify.sh build-f25t build-f25c
set -u
NEW=$(cd "${1:-build-f25t}" && pwd)
OLD=$(cd "${2:-build-f25c}" && pwd)
FINAL=${OUT:-$PWD/fused25-out}
export OUT=/tmp/fused25
mkdir -p "$OUT" "$FINAL"
FUSED_BENCH_TIMEOUT=90 FUSED_TEST_TIMEOUT=90 FUSED_WITH_GEMM_TEST=1 \
  bash tools/perf/fused/run-fused.sh "$NEW" 20 4 2>&1 | tee "$OUT/run-fused.txt" | grep -E "===|passed|failed|FAILED" | head -40
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FUSED_BENCH_ROUNDS=1 FUSED_SPARE_SMS=0
source tools/mps.sh
mps_start
for pass in 1 2; do
  for np in 4 2; do
    for side in old new; do
      dir=$OLD
      [ $side = new ] && dir=$NEW
      LD_LIBRARY_PATH=$dir timeout 120 mpiexec --allow-run-as-root --oversubscribe --bind-to none \
        -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS \
        -np $np "$dir/tmashmem-fused-bench" 20 4 > "$OUT/ab.$side.np$np.$pass.log" 2>&1
      echo "=== ab $side np$np pass $pass exit $?"
      grep "^csv," "$OUT/ab.$side.np$np.$pass.log" | grep -v "copy SMs" | cut -d, -f2- | head -20
    done
  done
done
mps_stop
tar czf "$FINAL/fused25.tgz" -C /tmp fused25
