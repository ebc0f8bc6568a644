#!/usr/bin/env bash
# Twenty-seventh session, call 2. W: the tree with the reduce-scatter's claimed tiles
# (rs_claims.patch, landed) and fused_sms_per_pe's wave rule (the whole share where it walks the
# tiles in fewer waves, else one SM less). S: call 1's S build, FUSED_SPARE_SMS=1 (one SM less
# always). W's tests (reduce-scatter and fused all-gather at 1, 2, 4 PEs, both examples), then
# the benchmark's default shapes W, S, W, S at 4 PEs, 4608 x 2816 x 8192 W, S, and W, S at 2.
#   bash docs/perf/fused27/call2.sh build-s27w build-s27s
set -u
W=$(cd "$1" && pwd); S=$(cd "$2" && pwd)
FINAL=${OUT:-$PWD/fused27-out}
OUT=/tmp/c2
mkdir -p "$OUT" "$FINAL"
source tools/gpu-env.sh
export FUSED_BENCH_ROUNDS=1 FUSED_SPARE_SMS=1
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
source tools/mps.sh
mps_start
export LD_LIBRARY_PATH=$W
for t in test_reduce_scatter:1 test_reduce_scatter:2 test_reduce_scatter:4 test_fused:1 test_fused:2 test_fused:4; do
  b=${t%%:*}; np=${t##*:}
  timeout 90 $MPI -np $np "$W/$b" > "$OUT/$b.np$np.log" 2>&1
  echo "$b np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/$b.np$np.log" | tail -1)"
done
for e in gemm_reduce_scatter allgather_gemm; do
  timeout 60 $MPI -np 2 "$W/$e" > "$OUT/$e.log" 2>&1
  echo "$e exit $?"; tail -4 "$OUT/$e.log"
done
bench() {  # name np dir [shape args]
  local name=$1 np=$2 dir=$3
  export LD_LIBRARY_PATH=$dir
  shift 3
  timeout 90 $MPI -np $np "$dir/tmashmem-fused-bench" 20 4 "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name exit $?"
  grep "^csv," "$OUT/$name.log" | grep -E "fused fast|deterministic|copy warps|A not kept" | cut -d, -f2,5,6
}
for pass in 1 2; do bench W.np4.$pass 4 "$W"; bench S1.np4.$pass 4 "$S"; done
bench W.np4.odd 4 "$W" 4608 2816 8192; bench S1.np4.odd 4 "$S" 4608 2816 8192
bench W.np2 2 "$W"; bench S1.np2 2 "$S"
mps_stop
tar czf "$FINAL/call2.tgz" -C /tmp c2
