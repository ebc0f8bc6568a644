#!/usr/bin/env bash
# Twenty-third session: the small collectives on several trees built here and carried
# (carry=["build-ab"]), from the repository root:
#   bash docs/perf/pdl22/build_ab.sh                       build-ab/base (and wide)
#   bash docs/perf/pdl22/build_ab.sh NAME=PATCH ...        build-ab/NAME, e.g.
#     pre=docs/perf/pdl23/prefetch.patch   the LL form's first send load as an L1 prefetch
#                                          ahead of the step's barrier and counter load
#     batch2=docs/perf/pdl23/batch2.patch  the LL form's polls: up to 2 lines a thread loaded
#     batch4=docs/perf/pdl23/batch4.patch  (4) before any is waited for (CollLlInflight)
# `coll $SIZES` (default "-b 64 -e 64K -f 4") at np 2 and 4, enqueued and in a graph, the TREES
# (default "base pre") alternating within each configuration, ROUNDS rounds (default 1), after
# one warm-up run.
# Output: $OUT/ab.tgz (r/ab_<tree>_np<N>_g<graph>_<round>.csv and .log, machine.txt); the table:
#   python3 docs/perf/pdl23/ab_table.py DIR ab base <tree>
set -u
TREES=${TREES:-base pre}
R=$(pwd); mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
for t in $TREES; do md5sum build-ab/$t/tools/perf/tmashmem-perf build-ab/$t/runtime/libtmashmem.so.0; done >> $OUT/r/machine.txt
NV=${NV:-}; source docs/perf/coll_env.sh  # NVSHMEM not needed here
# A first run, not compared: the first process after MPS starts ran slow (its empty launch 3.99
# µs against 2.94-3.28 in the runs after it, docs/runs.md, "Twenty-third session").
first=${TREES%% *}; B=$R/build-ab/$first
LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
  run warmup 2 tmashmem-perf coll -b 4K -e 4K -n 200 -w 20 -r 1
for round in $(seq ${ROUNDS:-1}); do for np in 2 4; do for g in 0 1; do for tree in $TREES; do
  B=$R/build-ab/$tree
  LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
    run ab_${tree}_np${np}_g${g}_$round $np tmashmem-perf coll ${SIZES:--b 64 -e 64K -f 4} -n 200 -w 20 -r 3 --graph $g
done; done; done; done
mps_stop
cd $OUT && tar czf ab.tgz r && rm -rf r
