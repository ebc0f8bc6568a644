#!/usr/bin/env bash
# Twenty-third session, a diagnostic: where a 4 KiB collective's time goes. build-ab/trace is
# the tree with docs/perf/pdl23/trace.patch (never on main): CTA 0 of every LL call stamps the
# global timer at the kernel's entry, after the grid dependency wait, after the step's counter
# load, after its sends, after its polls, after its last barrier and at its end, and every
# 128th call prints the means over the last 128 calls (lines "[trace PE p] ..."). Built here:
#   bash docs/perf/pdl22/build_ab.sh trace=docs/perf/pdl23/trace.patch
# then run(command="bash docs/perf/pdl23/trace.sh", carry=["build-ab"]). Every kind at 4 KiB
# (and 64 B): 2 PEs enqueued with PDL on and off, in a graph; 4 PEs in a graph.
# Output: $OUT/trace.tgz (r/trace_*.log and .csv, machine.txt).
set -u
R=$(pwd); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
md5sum build-ab/trace/tools/perf/tmashmem-perf build-ab/trace/runtime/libtmashmem.so.0 >> $OUT/r/machine.txt
NV=${NV:-}; source docs/perf/coll_env.sh  # NVSHMEM not needed here
B=$R/build-ab/trace
export LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH
M="$M -x TMASHMEM_COLL_PDL"
for v in "2 0 on" "2 0 off" "2 1 on" "4 1 on" "4 0 on"; do
  set -- $v
  TMASHMEM_COLL_PDL=$3 RUN_TIMEOUT=60 run trace_np$1_g$2_$3 $1 tmashmem-perf coll -b 64 -e 4K -f 64 \
    -n 200 -w 20 -r 3 --graph $2
done
mps_stop
cd $OUT && tar czf trace.tgz r && rm -rf r
