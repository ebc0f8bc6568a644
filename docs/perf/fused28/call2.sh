#!/usr/bin/env bash
# Twenty-eighth session, call 2. M = main at 25813af; D = M + the deterministic partials written
# from the accumulators (st / red.add.v2.f32, no shared memory), the sum loaded by predicated
# loads, and the producer claiming the next tile before the current one's loads; DR = D + the
# trace (dr.patch, -DTMASHMEM_FUSED_TRACE, benchmark only). Most telling first (logs go straight
# to $OUT, so a run cut short keeps them): D's reduce-scatter tests at 4 and 2 PEs, M and D on the
# reduce-scatter shapes at 4 PEs, DR traced, then the remaining tests, the all-gather, 2 PEs and
# a second 4-PE pass.
#   bash docs/perf/fused28/call2.sh build-t28m build-t28d build-t28dr
set -u
M=$(cd "$1" && pwd); D=$(cd "$2" && pwd); DR=$(cd "$3" && pwd)
OUT=${OUT:-$PWD/fused28-out}/c2
mkdir -p "$OUT"
source tools/gpu-env.sh
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
source tools/mps.sh
mps_start
test_run() {  # binary np
  export LD_LIBRARY_PATH=$D
  timeout 100 $MPI -np $2 "$D/$1" > "$OUT/$1.np$2.log" 2>&1
  echo "$1 np$2 exit $?: $(grep -E 'passed, .* failed' "$OUT/$1.np$2.log" | tail -1)"
}
RS="rs 8192 8192 3584 4096 4096 4096 512 8192 8192 8192 8192 8192"
bench() {  # name np dir rounds [args]
  local name=$1 np=$2 dir=$3 rounds=$4
  shift 4
  export LD_LIBRARY_PATH=$dir
  timeout 120 $MPI -np $np "$dir/tmashmem-fused-bench" $rounds 4 "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name exit $? at $(date +%T)"
  grep "^csv," "$OUT/$name.log" | grep -E "fused|unfused|copy warps|A not kept" | cut -d, -f2,5,6
}
test_run test_reduce_scatter 4
test_run test_reduce_scatter 2
bench M.np4.1 4 "$M" 20 $RS
bench D.np4.1 4 "$D" 20 $RS
bench DR.np4 4 "$DR" 8 $RS
test_run test_reduce_scatter 1
for np in 1 2 4; do test_run test_fused $np; done
for e in gemm_reduce_scatter allgather_gemm; do
  export LD_LIBRARY_PATH=$D
  timeout 60 $MPI -np 2 "$D/$e" > "$OUT/$e.log" 2>&1
  echo "$e exit $?"; tail -3 "$OUT/$e.log"
done
bench M.np4.ag 4 "$M" 20 8192 3584 8192 4608 2816 8192 4096 4096 4096
bench D.np4.ag 4 "$D" 20 8192 3584 8192 4608 2816 8192 4096 4096 4096
bench M.np2 2 "$M" 20 $RS
bench D.np2 2 "$D" 20 $RS
bench M.np4.2 4 "$M" 20 $RS
bench D.np4.2 4 "$D" 20 $RS
mps_stop
