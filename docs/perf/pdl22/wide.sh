#!/usr/bin/env bash
# Twenty-second session, prepared; run in the twenty-third (docs/runs.md, "Twenty-third session":
# 1.02x on the 256 KiB all-reduce at 2 PEs, 0.90-0.99 elsewhere; dropped): the low-latency
# form on 1024-thread CTAs where a 512-thread CTA would hold more than one line per thread and
# the call fits twice (wide_ll.patch), against the tree without it. Built on the CPU machine by docs/perf/pdl22/build_ab.sh and carried:
#   build-ab/base  the base tree: tools/perf/tmashmem-perf, runtime/libtmashmem.so.0
#   build-ab/wide  the base + wide_ll.patch: the same, and tests/test_collectives{,_stress,_device}
# `coll -b 4K -e 1M -f 4` enqueued at np 2 and 4, base and wide alternating, one round; then
# the correctness of wide: the test programs at np 2 and 4 (default settings; one PE takes no
# LL form) and test_collectives{,_stress} with TMASHMEM_COLL_LL_BYTES=1M (the _ll entries);
# then a second round of the A/B.
# Output: $OUT/wide.tgz (r/tests.log, r/ab_<tree>_np<N>_<round>.csv and .log, r/small_np2_g<graph>.csv
# and .log, machine.txt).
set -u
R=$(pwd); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
md5sum build-ab/*/tools/perf/tmashmem-perf build-ab/*/runtime/libtmashmem.so.0 build-ab/wide/tests/* >> $OUT/r/machine.txt
source docs/perf/coll_env.sh
W=$R/build-ab/wide
t() {  # t NP PROGRAM [env]: one test program under mpirun, bounded
  local np=$1 p=$2 s=$SECONDS; shift 2
  env LD_LIBRARY_PATH=$W/runtime:$LD_LIBRARY_PATH "$@" timeout 240 $M -x LD_LIBRARY_PATH \
    ${1:+-x ${1%%=*}} -np $np $W/tests/$p >> $OUT/r/tests.log 2>&1
  echo "$p np$np $* rc=$? $((SECONDS - s)) s" | tee -a $OUT/r/tests.log
}
ab() {  # one round of the A/B
  for np in 2 4; do for tree in base wide; do
    B=$R/build-ab/$tree
    LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
      run ab_${tree}_np${np}_$1 $np tmashmem-perf coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph 0
  done; done
}
ab 1
if [ "${TESTS:-1}" = 1 ]; then
  for np in 2 4; do  # wide CTAs by default only at 2 PEs (at 4, the crowded calls take 32 CTAs)
    for p in test_collectives_stress test_collectives_device test_collectives; do t $np $p; done
    for p in test_collectives_stress test_collectives; do t $np $p TMASHMEM_COLL_LL_BYTES=1M; done
  done
  grep -E "passed, [0-9]+ failed" $OUT/r/tests.log | sort | uniq -c
fi
ab 2
# Where the 4 KiB rows' time goes (twenty-third session): every kind from 64 B to 4 KiB on the
# base tree at 2 PEs, enqueued and in a graph, beside the floors (launch, launch_overlap).
B=$R/build-ab/base
for g in 0 1; do
  LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
    run small_np2_g$g 2 tmashmem-perf coll -b 64 -e 4K -f 4 -n 200 -w 20 -r 3 --graph $g
done
mps_stop
cd $OUT && tar czf wide.tgz r && rm -rf r
