#!/usr/bin/env bash
# Twenty-second session: is the 2-PE enqueued reduce-scatter / broadcast slowdown with
# TMASHMEM_COLL_PDL=on (6.7-7.4 us against 4.2 in the twenty-first session's check) the tree or
# the machine start? Two prebuilt trees, built on the CPU machine (sm_90a, Release) and carried:
#   build-ab/new  HEAD (tmashmem-perf and libtmashmem.so.0)
#   build-ab/old  136f946, the tree of the twenty-first session's check run
# Alternating old/new x on/off, ROUNDS times, `coll -o reducescatter,broadcast,allreduce -b 4K
# -e 256K -f 4` at np 2, enqueued; each run a fresh process (a fresh placement shift).
#   bash docs/perf/pdl22/ab.sh   ->  $OUT/ab.tgz (r/ab_<tree>_<pdl>_<round>.csv and .log)
set -u
R=$(pwd); mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
md5sum build-ab/*/tools/perf/tmashmem-perf build-ab/*/runtime/libtmashmem.so.0 >> $OUT/r/machine.txt
source docs/perf/coll_env.sh
for round in $(seq 1 ${ROUNDS:-3}); do
  for tree in new old; do for pdl in on off; do
    B=$R/build-ab/$tree
    LD_LIBRARY_PATH=$B/runtime:$LD_LIBRARY_PATH TMASHMEM_COLL_PDL=$pdl RUN_TIMEOUT=60 \
      run ab_${tree}_${pdl}_$round 2 tmashmem-perf coll -o reducescatter,broadcast,allreduce \
      -b 4K -e 256K -f 4 -n 200 -w 20 -r 5 --graph 0
  done; done
done
mps_stop
cd $OUT && tar czf ab.tgz r && rm -rf r
