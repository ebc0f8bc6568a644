#!/usr/bin/env bash
# Twenty-first session: the collectives with let_next_overlap (a kernel lets the next collective
# overlap it only where both fit twice) against plain stream order, NVSHMEM 3.4.5 beside them,
# and the CTA count of the enqueued all-reduce at 2 PEs.
#   bash docs/perf/pdl21/run.sh [PASS]   (PASS: a name other than 1, e.g. 21a)
# Reuses build-gpu/ as tools/gpu-suite.sh left it on the same machine start (builds the two
# benchmark programs, with NVSHMEM, if tmashmem-perf is missing). Then, under MPS with multicast
# off: docs/perf/pdl20/run.sh PASS (coll -b 4K -e 1M -f 4 at np 2 and 4, enqueued and in a graph,
# TMASHMEM_COLL_PDL on and off alternating, NVSHMEM's coll after them; into $OUT/x_pPASS.tgz),
# and, where time is left, the all-reduce of 64 KiB and 256 KiB enqueued at np 2 on 0 (the
# default), 8, 16, 24 and 32 CTAs (into $OUT/sweep_pPASS.tgz).
# Tables: python3 docs/perf/pdl20/table.py DIR.
set -u
PASS=${1:-21a}
R=$(pwd); B=$R/build-gpu
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
if [ ! -x $B/tools/perf/tmashmem-perf ]; then
  cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON -DTMASHMEM_NVSHMEM_HOME=$NV > /dev/null 2>&1
  ninja -C $B tmashmem-perf perf_nvshmem > /dev/null 2>&1; echo "build rc=$? at $SECONDS s"
fi
DEADLINE_S=${DEADLINE_S:-480} bash docs/perf/pdl20/run.sh $PASS
if [ $SECONDS -lt ${SWEEP_BY_S:-500} ]; then
  mkdir -p $OUT/r
  source docs/perf/coll_env.sh
  RUN_TIMEOUT=60 run sweep_np2_g0_p$PASS 2 tmashmem-perf coll -o allreduce -b 64K -e 256K -f 4 -s 0,8,16,24,32 -n 500 -w 20 -r 5 --graph 0
  mps_stop
  cd $OUT && tar czf sweep_p$PASS.tgz r && rm -rf r
fi
