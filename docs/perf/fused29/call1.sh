#!/usr/bin/env bash
# Twenty-ninth session, call 1 (prepared while no device machine was lent; run later that
# session). Builds,
# each Release, binaries and libtmashmem.so.0 copied flat into an ignored build-XXX/ folder:
#   M  = main at 4eb06d5 (9e417bf changed tests and tools only)
#   Q  = M + q.patch: the tile queue taken by one lane a warp (lane 0 waits, reads the step and
#        arrives, the warp gets the step by shuffle; before, all 256 consumer threads waited and
#        arrived on one shared-memory barrier at every tile)
#   F  = Q + f.patch: the deterministic partials in the accumulators' layout, written, added and
#        read from registers (reduce_scatter_staging.cuh: st / red.add / ld .v4.f32, a warp's 512
#        bytes contiguous; no shared memory or TMA for them)
#   QT = main at 4eb06d5 + Q + ../fused28/trace.patch + the sum load's phases stamped (qt.patch,
#        built with -DTMASHMEM_FUSED_TRACE; the benchmark only)
#   FT = F + the same trace (ft.patch on top of q.patch and f.patch; -DTMASHMEM_FUSED_TRACE)
#   F2 = F + f2.patch: every partial after the first starts its MMAs from the sum before it
#        (loaded, like the last one's) and stores the running sum: no red.add; differs from F
#        only at 3 PEs and more
#   P  = Q + p.patch: fast mode acquires an owner's permit in the epilogue's issuing thread,
#        before its first TMA add into that owner, instead of in the producer before the tile's
#        loads (the wait then overlaps the first tile's mainloop)
# Rebuild (about a minute each here): git worktree add --detach W 9e417bf; cd W; git apply
# docs/perf/fused29/q.patch, then f.patch (+ f2.patch or ft.patch) or p.patch; cmake -S W -B B
# -G Ninja -DCMAKE_BUILD_TYPE=Release [-DCMAKE_CUDA_FLAGS=-DTMASHMEM_FUSED_TRACE]; ninja -C B
# tmashmem-fused-bench test_fused test_reduce_scatter allgather_gemm gemm_reduce_scatter
# test_collectives_stress.
# The seven folders travel packed (about 2 MB; 40 MB unpacked, over the transfer's limit beside
# the tree): tar cJf build-t29pack/bins.tar.xz build-t29{m,q,f,f2,qt,ft,p}; the device command:
#   tar xJf build-t29pack/bins.tar.xz && bash docs/perf/fused29/call1.sh build-t29m build-t29q \
#     build-t29f build-t29qt build-t29ft build-t29f2 build-t29p
# Most telling first; logs in /tmp/c1, tarred into $OUT after every step (a run cut short keeps
# them; the transfer brings back at most 8 files).
# The traces: python3 docs/perf/fused28/trace_table.py LOG, and the sumtrace lines (the last
# partial's sum load: acquire, barrier, loads issued, loaded values arrived; us per half-tile).
set -u
M=$(cd "$1" && pwd); Q=$(cd "$2" && pwd); F=$(cd "$3" && pwd); QT=$(cd "$4" && pwd)
FT=$(cd "$5" && pwd); F2=$(cd "$6" && pwd); P=$(cd "$7" && pwd)
FINAL=${OUT:-$PWD/fused29-out}
L=/tmp/c1
mkdir -p "$L" "$FINAL"
save() { tar czf "$FINAL/call1.tgz" -C /tmp c1; }
source tools/gpu-env.sh
MPI="mpiexec --oversubscribe --bind-to none $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/gpu.txt"
source tools/mps.sh
mps_start
test_run() {  # binary np [dir] (default F's build: it holds Q too)
  local dir=${3:-$F} rc
  local log=$L/$1.np$2.$(basename "$dir").log
  export LD_LIBRARY_PATH=$dir
  timeout 120 $MPI -np $2 "$dir/$1" > "$log" 2>&1
  rc=$?
  echo "$1 np$2 $(basename "$dir") exit $rc: $(grep -E 'passed, .* failed' "$log" | tail -1)" |
    tee -a "$L/summary.txt"
  save
}
RS="rs 8192 8192 3584 4096 4096 4096 512 8192 8192 8192 8192 8192"
AG="8192 3584 8192 4608 2816 8192 4096 4096 4096"
bench() {  # name np dir rounds [args]
  local name=$1 np=$2 dir=$3 rounds=$4
  shift 4
  export LD_LIBRARY_PATH=$dir
  timeout 120 $MPI -np $np "$dir/tmashmem-fused-bench" $rounds 4 "$@" > "$L/$name.log" 2>&1
  { echo "=== $name exit $? at $(date +%T)"
    grep "^csv," "$L/$name.log" | grep -E "fused|unfused|copy warps|A not kept" | cut -d, -f2,5,6
  } | tee -a "$L/summary.txt"
  save
}
sass() {  # name dir: the reduce-scatter kernels' SASS
  cuobjdump -sass "$2/tmashmem-fused-bench" 2>&1 |
    awk '/Function :/{keep = ($0 ~ /gemm_reduce_scatter_kernel/)} keep' | gzip > "$L/$1_sass.txt.gz"
  echo "sass $1: $(zcat "$L/$1_sass.txt.gz" | grep -c 'Function :') functions" |
    tee -a "$L/summary.txt"
}
command -v cuobjdump >/dev/null || PATH=$PATH:/usr/local/cuda/bin
test_run test_reduce_scatter 4
bench M.np4.1 4 "$M" 20 $RS
bench Q.np4.1 4 "$Q" 20 $RS
bench F.np4.1 4 "$F" 20 $RS
test_run test_reduce_scatter 4 "$F2"
bench F2.np4.1 4 "$F2" 20 $RS
test_run test_reduce_scatter 4 "$P"
bench P.np4.1 4 "$P" 20 $RS
bench QT.np4 4 "$QT" 8 $RS
bench FT.np4 4 "$FT" 8 $RS
test_run test_fused 4
bench M.np4.ag.1 4 "$M" 20 $AG
bench Q.np4.ag.1 4 "$Q" 20 $AG
test_run test_reduce_scatter 2
test_run test_fused 2
bench M.np2.1 2 "$M" 20 $RS
bench Q.np2.1 2 "$Q" 20 $RS
bench F.np2.1 2 "$F" 20 $RS
bench P.np2.1 2 "$P" 20 $RS
test_run test_reduce_scatter 1
test_run test_fused 1
for e in gemm_reduce_scatter allgather_gemm; do
  export LD_LIBRARY_PATH=$F
  timeout 60 $MPI -np 2 "$F/$e" > "$L/$e.log" 2>&1
  echo "$e exit $?: $(tail -3 "$L/$e.log" | tr '\n' ' ')" | tee -a "$L/summary.txt"
done
test_run test_collectives_stress 2
sass M "$M"
sass F "$F"
save
for pass in 2 3; do
  bench M.np4.$pass 4 "$M" 20 $RS
  bench Q.np4.$pass 4 "$Q" 20 $RS
  bench F.np4.$pass 4 "$F" 20 $RS
  bench F2.np4.$pass 4 "$F2" 20 $RS
  bench P.np4.$pass 4 "$P" 20 $RS
  bench M.np2.$pass 2 "$M" 20 $RS
  bench Q.np2.$pass 2 "$Q" 20 $RS
  bench F.np2.$pass 2 "$F" 20 $RS
  bench P.np2.$pass 2 "$P" 20 $RS
  bench M.np4.ag.$pass 4 "$M" 20 $AG
  bench Q.np4.ag.$pass 4 "$Q" 20 $AG
done
mps_stop
save
