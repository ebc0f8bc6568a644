#!/usr/bin/env bash
# The second call: NVSHMEM's large rows that run.sh's NVSHMEM runs did not reach. Its
# reduce-scatter of 256 MiB did not finish its warm-up (12 calls) within the benchmark's 20 s
# watchdog, and the run stopped there; so all-to-all and broadcast from 4 MiB here, and the
# reduce-scatter of 256 MiB alone, enqueued, 3 calls, with a 100 s watchdog.
#   bash docs/perf/coll19/rest.sh     (after run.sh, on the same machine start: build-gpu/)
set -u
R=$(pwd); mkdir -p $OUT/r; B=$R/build-gpu
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
source docs/perf/coll_env.sh
for np in 2 4; do for g in 1 0; do
  RUN_TIMEOUT=100 run coll_perf_nvshmem_np${np}_g${g}_rest $np perf_nvshmem coll -b 4M -e 256M -f 4 -n 10 -w 2 -r 3 --graph $g -o alltoall,broadcast
done; done
for np in 2 4; do
  RUN_TIMEOUT=110 run coll_perf_nvshmem_np${np}_g0_rs256 $np perf_nvshmem coll -b 256M -e 256M -n 3 -w 1 -r 1 --timeout 100 -o reducescatter
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
