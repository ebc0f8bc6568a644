#!/usr/bin/env bash
# Twenty-third session: the LL form's first send load started before the step's barrier and
# counter load (prefetch.patch: prefetch.L1 of each thread's first line), against the tree
# without it. Built on the CPU machine and carried (carry=["build-ab"]):
#   bash docs/perf/pdl22/build_ab.sh pre=docs/perf/pdl23/prefetch.patch   (build-ab/pre)
# with build-ab/base from `bash docs/perf/pdl22/build_ab.sh`. `coll -b 64 -e 64K -f 4` at np 2
# and 4, enqueued and in a graph, base and pre alternating, ROUNDS rounds (default 2).
# Output: $OUT/pre.tgz (r/pre_<tree>_np<N>_g<graph>_<round>.csv and .log, machine.txt).
set -u
R=$(pwd); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
md5sum build-ab/{base,pre}/tools/perf/tmashmem-perf build-ab/{base,pre}/runtime/libtmashmem.so.0 >> $OUT/r/machine.txt
source docs/perf/coll_env.sh
for round in $(seq ${ROUNDS:-2}); do for np in 2 4; do for g in 0 1; do for tree in base pre; do
  B=$R/build-ab/$tree
  LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
    run pre_${tree}_np${np}_g${g}_$round $np tmashmem-perf coll -b 64 -e 64K -f 4 -n 200 -w 20 -r 3 --graph $g
done; done; done; done
mps_stop
cd $OUT && tar czf pre.tgz r && rm -rf r
