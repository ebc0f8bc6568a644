#!/usr/bin/env bash
# Twentieth session: the on-stream collectives launched with programmatic dependent launch
# (TMASHMEM_COLL_PDL, device/driver_launch.h) against plain stream order, in one build.
#   bash docs/perf/pdl20/run.sh [PASS]   (PASS 1 builds and, unless TESTS=0, tests first; others
#                                         reuse build-gpu/ on the same machine start)
# Builds build-gpu/ (Release, sm_90a, NVSHMEM; every target, so tools/gpu-suite.sh can reuse it
# on the same machine start). Pass 1: under MPS, with multicast off, test_collectives*,
# test_on_stream*, test_collectives_device at np 1, 2 and 4 (PDL on: the default). Then, each
# pass: `coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5` at np 2 and 4, enqueued and in a graph, with
# TMASHMEM_COLL_PDL on and off alternating, and NVSHMEM 3.4.5's `coll` beside them.
# Output: $OUT/x_p<PASS>.tgz (r/coll_<tm-on|tm-off|nv>_np<N>_g<0|1>_p<PASS>.csv and .log, tests.log).
# Ran on one H100 (docs/runs.md, "Twentieth session"): out/calls1-2 (`run.sh 1`, then
# `run.sh 2 && run.sh 3`, whose pass 2 the then single x.tgz lost), out/call4 (`TESTS=0 run.sh 1
# && run.sh 2`); out/large: the 4 MiB - 256 MiB rows of calls 5 and 6, their commands in runs.md.
# Tables: python3 docs/perf/pdl20/table.py docs/perf/pdl20/out/call4
set -u
PASS=${1:-1}
R=$(pwd); mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1
  echo "NVSHMEM: $NV"; md5sum device/collectives.cu device/driver_launch.h runtime/collectives.cpp; } > $OUT/r/machine_p$PASS.txt
B=$R/build-gpu
if [ "$PASS" = 1 ]; then
  cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON -DTMASHMEM_NVSHMEM_HOME=$NV > $OUT/r/cfg.log 2>&1
  ninja -C $B > $OUT/r/build.log 2>&1; echo "build rc=$? at $SECONDS s"; tail -3 $OUT/r/build.log
fi
export TMASHMEM_COLL_PDL=on
source docs/perf/coll_env.sh
if [ "$PASS" = 1 ] && [ "${TESTS:-1}" = 1 ]; then
  (cd $B && timeout 240 ctest --timeout 90 -R '^(test_on_stream|test_on_stream_kernels|test_on_stream_outcome|test_collectives|test_collectives_stress[a-z_]*|test_collectives_device)\.np' --output-on-failure) > $OUT/r/tests.log 2>&1
  echo "ctest rc=$? at $SECONDS s"; grep -E "tests passed|Failed|Timeout" $OUT/r/tests.log
fi
for np in 2 4; do for g in 0 1; do
  for pdl in on off; do
    [ $SECONDS -gt ${DEADLINE_S:-560} ] && break 3
    TMASHMEM_COLL_PDL=$pdl RUN_TIMEOUT=60 run coll_tm-${pdl}_np${np}_g${g}_p$PASS $np tmashmem-perf coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph $g
  done
  [ $SECONDS -gt ${DEADLINE_S:-560} ] && break 2
  RUN_TIMEOUT=60 run coll_nv_np${np}_g${g}_p$PASS $np perf_nvshmem coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph $g
done; done
mps_stop
cd $OUT && tar czf x_p$PASS.tgz r && rm -rf r
