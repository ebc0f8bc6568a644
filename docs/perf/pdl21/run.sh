#!/usr/bin/env bash
# Twenty-first session: the collectives with let_next_overlap (a kernel lets the next collective
# overlap it only where both fit twice) against plain stream order, NVSHMEM 3.4.5 beside them,
# and the CTA count of the enqueued all-reduce at 2 PEs.
#   bash docs/perf/pdl21/run.sh [PASS]
# Reuses build-gpu/ as tools/gpu-suite.sh left it on the same machine start (builds it, with
# NVSHMEM, if tmashmem-perf is missing). Under MPS with multicast off (docs/perf/coll_env.sh):
#   coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 at np 2 and 4, enqueued and in a graph,
#   TMASHMEM_COLL_PDL on and off alternating, NVSHMEM's coll after them;
#   then, pass 1 only, the all-reduce of 64 KiB and 256 KiB enqueued at np 2 on 0 (the default),
#   8, 16, 24 and 32 CTAs (-s).
# Output: $OUT/x_p<PASS>.tgz (r/<name>.csv and .log, machine_p<PASS>.txt). DEADLINE_S (560)
# stops it before a device call's limit. Tables: python3 docs/perf/pdl20/table.py DIR.
set -u
PASS=${1:-1}
R=$(pwd); mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1
  echo "NVSHMEM: $NV"; md5sum device/collectives.cu device/driver_launch.h runtime/collectives.cpp; } > $OUT/r/machine_p$PASS.txt
B=$R/build-gpu
if [ ! -x $B/tools/perf/tmashmem-perf ]; then
  cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON -DTMASHMEM_NVSHMEM_HOME=$NV > $OUT/r/cfg.log 2>&1
  ninja -C $B tmashmem-perf perf_nvshmem > $OUT/r/build.log 2>&1; echo "build rc=$? at $SECONDS s"
fi
export TMASHMEM_COLL_PDL=on
source docs/perf/coll_env.sh
for np in 2 4; do for g in 0 1; do
  for pdl in on off; do
    [ $SECONDS -gt ${DEADLINE_S:-560} ] && break 3
    TMASHMEM_COLL_PDL=$pdl RUN_TIMEOUT=60 run coll_tm-${pdl}_np${np}_g${g}_p$PASS $np tmashmem-perf coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph $g
  done
  [ $SECONDS -gt ${DEADLINE_S:-560} ] && break 2
  RUN_TIMEOUT=60 run coll_nv_np${np}_g${g}_p$PASS $np perf_nvshmem coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph $g
done; done
if [ "$PASS" = 1 ] && [ $SECONDS -lt ${DEADLINE_S:-560} ]; then
  RUN_TIMEOUT=60 run sweep_np2_g0_p$PASS 2 tmashmem-perf coll -o allreduce -b 64K -e 256K -f 4 -s 0,8,16,24,32 -n 500 -w 20 -r 5 --graph 0
fi
mps_stop
cd $OUT && tar czf x_p$PASS.tgz r && rm -rf r
