#!/usr/bin/env bash
# Twenty-sixth session: tiles and copy pieces claimed in order. Release builds: T = main at
# 9a0c872; Q = 5a1a1f2 (its fused PTX byte-identical to the build that ran) with
# docs/perf/fused25/spare_env_default1.patch (FUSED_SPARE_SMS); TR and QR: T and Q with that
# patch, trace.patch (for TR the same hunks on 9a0c872) and -DTMASHMEM_FUSED_TRACE (the
# benchmark only). First Q's tests (fused at 1, 2, 4 PEs, reduce-scatter at 1 and 4, GEMM,
# example); then traced benchmarks (per round and PE the CTAs' first/last start and end;
# trace_table.py) of T and Q with 33, 32 and 31 CTAs a PE at 4 PEs; then T and Q untraced,
# one after another, two passes. Run with CALL7_SHORT=1.
#   bash docs/perf/fused26/call7.sh build-f26t build-f26q build-f26tr build-f26qr
set -u
T=$(cd "$1" && pwd); Q=$(cd "$2" && pwd); TR=$(cd "$3" && pwd); QR=$(cd "$4" && pwd)
FINAL=${OUT:-$PWD/fused26-out}
OUT=/tmp/fused26
mkdir -p "$OUT" "$FINAL"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FUSED_BENCH_ROUNDS=1
MPI="mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS"
source tools/mps.sh
mps_start
export LD_LIBRARY_PATH=$Q
for np in 1 2 4; do
  timeout 90 $MPI -np $np "$Q/test_fused" > "$OUT/test_fused.np$np.log" 2>&1
  echo "test_fused np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/test_fused.np$np.log" | tail -1)"
done
for np in 1 4; do
  timeout 90 $MPI -np $np "$Q/test_reduce_scatter" > "$OUT/test_rs.np$np.log" 2>&1
  echo "test_reduce_scatter np$np exit $?: $(grep -E 'passed, .* failed' "$OUT/test_rs.np$np.log" | tail -1)"
done
timeout 120 "$Q/test_gemm" > "$OUT/test_gemm.log" 2>&1
echo "test_gemm exit $?: $(grep -E 'passed, .* failed' "$OUT/test_gemm.log" | tail -1)"
timeout 60 $MPI -np 2 "$Q/allgather_gemm" > "$OUT/example.log" 2>&1
echo "example exit $?"; tail -4 "$OUT/example.log"
AG="8192 6144 8192 8192 3584 8192 4608 2816 8192"
bench() {  # name np dir spare rounds
  export LD_LIBRARY_PATH=$3 FUSED_SPARE_SMS=$4
  timeout 120 $MPI -np $2 "$3/tmashmem-fused-bench" $5 3 $AG > "$OUT/$1.log" 2>&1
  echo "=== $1 exit $? at $(date +%T)"
  grep "^csv," "$OUT/$1.log" | grep -E "copy warps|default|gemm only" | cut -d, -f2-
}
# CALL7_SHORT=1 (little device time left): traces of 33 and 32 CTAs, one untraced pass.
SPARES="0 1 2"; PASSES="1 2"
[ "${CALL7_SHORT:-0}" = 1 ] && SPARES="0 1" && PASSES=1
for spare in $SPARES; do
  bench "TR.np4.s$spare" 4 "$TR" $spare 8
  grep "^trace," "$OUT/TR.np4.s$spare.log" | grep "copy warps" | sed -n 9,16p
  bench "QR.np4.s$spare" 4 "$QR" $spare 8
  grep "^trace," "$OUT/QR.np4.s$spare.log" | grep "copy warps" | sed -n 9,16p
done
for pass in $PASSES; do
  bench "T.np4.$pass" 4 "$T" 1 20
  bench "Q1.np4.$pass" 4 "$Q" 1 20
  bench "Q0.np4.$pass" 4 "$Q" 0 20
done
bench T.np2 2 "$T" 1 20
bench Q1.np2 2 "$Q" 1 20
bench Q0.np2 2 "$Q" 0 20
mps_stop
tar czf "$FINAL/call7.tgz" -C /tmp fused26
