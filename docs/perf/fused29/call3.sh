#!/usr/bin/env bash
# Twenty-ninth session, call 3: NQ = main at c940758 (Q + F landed) with tile_queue.cuh as at
# 4eb06d5 (every consumer thread waits and arrives): does Q cost the fast mode anything (call 2
# had main's fast mode at 1.05-1.06 on 8192^3 at 2 PEs against 0.98-1.01 with Q + F)? NQ's
# tests at 1, 2 and 4 PEs, then M (4eb06d5), Q, F (= Q + F) and NQ side by side, three passes.
#   tar xJf build-t29pack3/bins.tar.xz && bash docs/perf/fused29/call3.sh build-t29m build-t29q \
#     build-t29f build-t29nq
set -u
M=$(cd "$1" && pwd); Q=$(cd "$2" && pwd); F=$(cd "$3" && pwd); N=$(cd "$4" && pwd)
FINAL=${OUT:-$PWD/fused29-out}
L=/tmp/c3
mkdir -p "$L" "$FINAL"
save() { tar czf "$FINAL/call3.tgz" -C /tmp c3; }
source tools/gpu-env.sh
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/gpu.txt"
source tools/mps.sh
mps_start
test_run() {  # binary np
  local rc log=$L/$1.np$2.log
  export LD_LIBRARY_PATH=$N
  timeout 120 $MPI -np $2 "$N/$1" > "$log" 2>&1
  rc=$?
  echo "$1 np$2 exit $rc: $(grep -E 'passed, .* failed' "$log" | tail -1)" | tee -a "$L/summary.txt"
  save
}
RS="rs 8192 8192 3584 4096 4096 4096 512 8192 8192 8192 8192 8192"
bench() {  # name np dir
  export LD_LIBRARY_PATH=$3
  timeout 120 $MPI -np $2 "$3/tmashmem-fused-bench" 20 4 $RS > "$L/$1.log" 2>&1
  { echo "=== $1 exit $? at $(date +%T)"
    grep "^csv," "$L/$1.log" | grep -E "fused|unfused" | cut -d, -f2,5,6
  } | tee -a "$L/summary.txt"
  save
}
for pass in 1 2 3; do
  for np in 2 4; do
    bench M.np$np.$pass $np "$M"
    bench Q.np$np.$pass $np "$Q"
    bench F.np$np.$pass $np "$F"
    bench N.np$np.$pass $np "$N"
  done
done
for np in 4 2 1; do
  test_run test_reduce_scatter $np
  test_run test_fused $np
done
mps_stop
save
