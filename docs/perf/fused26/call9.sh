#!/usr/bin/env bash
# Twenty-sixth session, call 9: the reduce-scatter's tiles claimed in order too, and the tile
# counter reset by each launch's last claim instead of by fused_finish (rs_claims.patch on
# 987860a; build R). Q: 987860a (+ spare_env_default1.patch, default as main). R's tests
# (reduce-scatter at 1, 2, 4 PEs, fused all-gather at 1 and 4, both examples), then the
# benchmark's default shapes Q, R, Q, R at 4 PEs and R, Q at 2.
#   bash docs/perf/fused26/call9.sh build-f26q build-f26r
set -u
Q=$(cd "$1" && pwd); R=$(cd "$2" && pwd)
FINAL=${OUT:-$PWD/fused26-out}
OUT=/tmp/c9
mkdir -p "$OUT" "$FINAL"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FUSED_BENCH_ROUNDS=1
MPI="mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS"
source tools/mps.sh
mps_start
export LD_LIBRARY_PATH=$R
for t in test_reduce_scatter:1 test_reduce_scatter:2 test_reduce_scatter:4 test_fused:1 test_fused:4; do
  b=${t%%:*}; np=${t##*:}
  timeout 60 $MPI -np $np "$R/$b" > "$OUT/$b.np$np.log" 2>&1
  echo "$b np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/$b.np$np.log" | tail -1)"
done
for e in gemm_reduce_scatter allgather_gemm; do
  timeout 60 $MPI -np 2 "$R/$e" > "$OUT/$e.log" 2>&1
  echo "$e exit $?"; tail -5 "$OUT/$e.log"
done
bench() {  # name np dir
  export LD_LIBRARY_PATH=$3
  timeout 60 $MPI -np $2 "$3/tmashmem-fused-bench" 20 4 > "$OUT/$1.log" 2>&1
  echo "=== $1 exit $?"
  grep "^csv," "$OUT/$1.log" | grep -E "fused fast|deterministic|copy warps|A not kept" | cut -d, -f2,5,6
}
bench Q.np4.1 4 "$Q"; bench R.np4.1 4 "$R"; bench Q.np4.2 4 "$Q"; bench R.np4.2 4 "$R"
bench R.np2 2 "$R"; bench Q.np2 2 "$Q"
mps_stop
tar czf "$FINAL/call9.tgz" -C /tmp c9
