#!/usr/bin/env bash
# Twenty-ninth session, call 2: QFP = main + q.patch + f.patch + p.patch (what call 1 measured
# apart: F won in deterministic mode, P helped fast mode at 2 PEs, Q made no difference), tested
# at 1, 2 and 4 PEs with both examples, and benchmarked beside M (main) and F (Q + F) in three
# passes. The folders travel packed (tar cJf build-t29pack2/bins.tar.xz build-t29m build-t29f
# build-t29qfp):
#   tar xJf build-t29pack2/bins.tar.xz && bash docs/perf/fused29/call2.sh build-t29m build-t29f \
#     build-t29qfp
set -u
M=$(cd "$1" && pwd); F=$(cd "$2" && pwd); X=$(cd "$3" && pwd)
FINAL=${OUT:-$PWD/fused29-out}
L=/tmp/c2
mkdir -p "$L" "$FINAL"
save() { tar czf "$FINAL/call2.tgz" -C /tmp c2; }
source tools/gpu-env.sh
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/gpu.txt"
source tools/mps.sh
mps_start
test_run() {  # binary np
  local rc log=$L/$1.np$2.log
  export LD_LIBRARY_PATH=$X
  timeout 120 $MPI -np $2 "$X/$1" > "$log" 2>&1
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
for np in 4 2 1; do
  test_run test_reduce_scatter $np
  test_run test_fused $np
done
for e in gemm_reduce_scatter allgather_gemm; do
  export LD_LIBRARY_PATH=$X
  timeout 60 $MPI -np 2 "$X/$e" > "$L/$e.log" 2>&1
  echo "$e exit $?: $(tail -3 "$L/$e.log" | tr '\n' ' ')" | tee -a "$L/summary.txt"
done
save
for pass in 1 2 3; do
  for np in 4 2; do
    bench M.np$np.$pass $np "$M"
    bench F.np$np.$pass $np "$F"
    bench X.np$np.$pass $np "$X"
  done
done
mps_stop
save
