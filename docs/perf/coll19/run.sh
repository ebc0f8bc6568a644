#!/usr/bin/env bash
# Nineteenth session: the on-stream collectives beside NVSHMEM 3.4.5's, 4 KiB - 256 MiB, at
# 2 and 4 PEs, enqueued and in a graph, after the driver launch (31a4ee8). One device call:
#   bash docs/perf/coll19/run.sh
# Uses build-gpu/ where tools/gpu-suite.sh left it on the same machine start, else builds it.
# Small sizes (4 KiB - 1 MiB): -n 200 -w 20 -r 5; large (4 MiB - 256 MiB): -n 10 -w 2 -r 3.
# Output: $OUT/x.tgz (r/coll_<runtime>_np<N>_g<0|1>_<small|large>.csv and .log).
set -u
R=$(pwd); mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; echo "NVSHMEM: $NV"; git -C $R log --oneline -1 2>/dev/null; } > $OUT/r/machine.txt
B=$R/build-gpu
if [ ! -x $B/tools/perf/perf_nvshmem ] || [ ! -x $B/tools/perf/tmashmem-perf ]; then
  cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON -DTMASHMEM_NVSHMEM_HOME=$NV > $OUT/r/cfg.log 2>&1
  ninja -C $B tmashmem-perf perf_nvshmem > $OUT/r/build.log 2>&1; echo "build rc=$?"
fi
source docs/perf/coll_env.sh
for np in 2 4; do for g in 1 0; do for p in tmashmem-perf perf_nvshmem; do
  [ $SECONDS -gt 500 ] && break 3
  RUN_TIMEOUT=100 run coll_${p%%-*}_np${np}_g${g}_small $np $p coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph $g
  RUN_TIMEOUT=100 run coll_${p%%-*}_np${np}_g${g}_large $np $p coll -b 4M -e 256M -f 4 -n 10 -w 2 -r 3 --graph $g
done; done; done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
