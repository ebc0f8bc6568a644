#!/usr/bin/env bash
# Twenty-eighth session, call 1: where the fused reduce-scatter's time goes. M = main at
# 25813af (Release); R = M + trace.patch built with -DTMASHMEM_FUSED_TRACE (the benchmark's own
# kernels record per CTA the cycles of each phase and of every blocked wait; see trace.patch's
# trace.cuh). Traced benchmark at 4 and 2 PEs on the four reduce-scatter shapes, then M untraced
# at 4 PEs (the trace's own cost).
#   bash docs/perf/fused28/call1.sh build-t28m build-t28r
set -u
M=$(cd "$1" && pwd); R=$(cd "$2" && pwd)
FINAL=${OUT:-$PWD/fused28-out}
OUT=/tmp/c1
mkdir -p "$OUT" "$FINAL"
source tools/gpu-env.sh
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
source tools/mps.sh
mps_start
RS="rs 8192 8192 3584 4096 4096 4096 512 8192 8192 8192 8192 8192"
bench() {  # name np dir rounds
  export LD_LIBRARY_PATH=$3
  timeout 120 $MPI -np $2 "$3/tmashmem-fused-bench" $4 4 $RS > "$OUT/$1.log" 2>&1
  echo "=== $1 exit $? at $(date +%T)"
  grep "^csv," "$OUT/$1.log" | cut -d, -f2,5,6
}
bench R.np4 4 "$R" 8
bench R.np2 2 "$R" 8
bench M.np4 4 "$M" 20
bench R.np1 1 "$R" 4
mps_stop
tar czf "$FINAL/call1.tgz" -C /tmp c1
