#!/usr/bin/env bash
# Twenty-fifth session, fifth call: the all-gather's copy pieces claimed in order from a word of
# the workspace (claim.patch) instead of a fixed stride per CTA. Build D = the tree of 52fca95 +
# claim.patch + spare_env_default1.patch (FUSED_SPARE_SMS=n leaves n SMs of each share free,
# default 1 as the tree), T = the tree of 52fca95 (build-f25t). First D's fused tests at 1, 2
# and 4 PEs and the example, then the all-gather at 4 and 2 PEs: T, D with one SM less, D with
# the whole share, in turn, two passes (4 PEs) and one (2 PEs).
#   bash docs/perf/fused25/call5.sh build-f25t build-f25d
set -u
T=$(cd "${1:-build-f25t}" && pwd)
D=$(cd "${2:-build-f25d}" && pwd)
FINAL=${OUT:-$PWD/fused25-out}
OUT=/tmp/fused25-call5
mkdir -p "$OUT" "$FINAL"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FUSED_BENCH_ROUNDS=1
MPI="mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS"
source tools/mps.sh
mps_start
export LD_LIBRARY_PATH=$D
for np in 1 2 4; do
  timeout 90 $MPI -np $np "$D/test_fused" > "$OUT/test_fused.np$np.log" 2>&1
  echo "test_fused np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/test_fused.np$np.log" | tail -1)"
done
timeout 90 $MPI -np 4 "$D/test_reduce_scatter" > "$OUT/test_reduce_scatter.np4.log" 2>&1
echo "test_reduce_scatter np4 exit $?: $(grep -E 'passed, .* failed' "$OUT/test_reduce_scatter.np4.log" | tail -1)"
timeout 60 $MPI -np 2 "$D/allgather_gemm" > "$OUT/example.log" 2>&1
echo "example exit $?"; tail -5 "$OUT/example.log"
AG="8192 6144 8192 8192 3584 8192 4608 2816 8192"
bench() {  # name np dir spare
  export LD_LIBRARY_PATH=$3 FUSED_SPARE_SMS=$4
  timeout 120 $MPI -np $2 "$3/tmashmem-fused-bench" 20 3 $AG > "$OUT/$1.log" 2>&1
  echo "=== $1 exit $?"
  grep "^csv," "$OUT/$1.log" | grep -E "copy warps|default|gemm only" | cut -d, -f2-
}
for pass in 1 2; do
  bench "T.np4.$pass" 4 "$T" 1
  bench "D1.np4.$pass" 4 "$D" 1
  bench "D0.np4.$pass" 4 "$D" 0
done
bench T.np2 2 "$T" 1
bench D1.np2 2 "$D" 1
bench D0.np2 2 "$D" 0
mps_stop
tar czf "$FINAL/call5.tgz" -C /tmp fused25-call5
