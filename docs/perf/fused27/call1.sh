#!/usr/bin/env bash
# Twenty-seventh session, call 1. Q: main (685c3d5). S: main + docs/perf/fused26/rs_claims.patch
# (the reduce-scatter claims its tiles too; the tile counter reset by each launch's last claim)
# + spare_env.patch (FUSED_SPARE_SMS: SMs of each PE's share left free, default 1 as main).
# S's tests (reduce-scatter at 1, 2, 4 PEs, fused all-gather at 1 and 4, both examples), then
# the benchmark's default shapes at 4 PEs: Q, S, S with the whole share (S0), twice, and
# 4608 x 2816 x 8192 (all-gather); then Q, S, S0 at 2 PEs; then on Q the GEMM beside cuBLASLt
# (tmashmem-gemm-bench, six shapes), test_gemm, and the fused bench at 1 PE.
#   bash docs/perf/fused27/call1.sh build-s27q build-s27s
set -u
Q=$(cd "$1" && pwd); S=$(cd "$2" && pwd)
FINAL=${OUT:-$PWD/fused27-out}
OUT=/tmp/c1
mkdir -p "$OUT" "$FINAL"
source tools/gpu-env.sh
export FUSED_BENCH_ROUNDS=1
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
source tools/mps.sh
mps_start
export LD_LIBRARY_PATH=$S FUSED_SPARE_SMS=1
for t in test_reduce_scatter:1 test_reduce_scatter:2 test_reduce_scatter:4 test_fused:1 test_fused:4; do
  b=${t%%:*}; np=${t##*:}
  timeout 90 $MPI -np $np "$S/$b" > "$OUT/$b.np$np.log" 2>&1
  echo "$b np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/$b.np$np.log" | tail -1)"
done
for e in gemm_reduce_scatter allgather_gemm; do
  timeout 60 $MPI -np 2 "$S/$e" > "$OUT/$e.log" 2>&1
  echo "$e exit $?"; tail -4 "$OUT/$e.log"
done
bench() {  # name np dir spare [shape args]
  local name=$1 np=$2 dir=$3
  export LD_LIBRARY_PATH=$dir FUSED_SPARE_SMS=$4
  shift 4
  timeout 90 $MPI -np $np "$dir/tmashmem-fused-bench" 20 4 "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name exit $?"
  grep "^csv," "$OUT/$name.log" | grep -E "fused fast|deterministic|copy warps|A not kept" | cut -d, -f2,5,6
}
for pass in 1 2; do
  bench Q.np4.$pass 4 "$Q" 1; bench S1.np4.$pass 4 "$S" 1; bench S0.np4.$pass 4 "$S" 0
done
bench S1.np4.odd 4 "$S" 1 4608 2816 8192; bench S0.np4.odd 4 "$S" 0 4608 2816 8192
bench Q.np4.odd 4 "$Q" 1 4608 2816 8192
bench Q.np2 2 "$Q" 1; bench S1.np2 2 "$S" 1; bench S0.np2 2 "$S" 0
mps_stop
export LD_LIBRARY_PATH=$Q
timeout 120 "$Q/tmashmem-gemm-bench" 40 6 > "$OUT/gemm_bench.log" 2>&1; echo "=== gemm bench exit $?"
grep -vE "^csv" "$OUT/gemm_bench.log" | tail -12
timeout 120 "$Q/test_gemm" > "$OUT/test_gemm.log" 2>&1; echo "test_gemm exit $?: $(grep -E 'passed, .* failed' "$OUT/test_gemm.log" | tail -1)"
bench Q.np1 1 "$Q" 1
tar czf "$FINAL/call1.tgz" -C /tmp c1
