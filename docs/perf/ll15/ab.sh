#!/usr/bin/env bash
# A/B/C of the LL flag-period change (prepared in the fifteenth session; it got no device),
# one device call: three builds of tmashmem-perf (A: this tree; B: low_latency.cuh as before
# the change, from git at 3f009a2; C: this tree with cleaning_out_of_line.patch, the zeroing
# in a __noinline__ function), then coll 4K-1M at 2 and 4 PEs in a graph and enqueued,
# LAUNCHES rounds (3) of A, B, C in turn. CSVs and logs into $OUT/r (one archive).
#   [LAUNCHES=3] docs/perf/ll15/ab.sh
# Ran in the sixteenth session (an H100; docs/perf/ll16/, docs/runs.md "Sixteenth session: the
# LL flag-period A/B"): the first call with C = A (the patch then also carried a header-comment
# hunk that 9c3d313 had already made; regenerated without it for the second call).
set -u
R=$(pwd); mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
H=include/tmashmem/device/collectives/low_latency.cuh
for v in A B C; do
  T=/tmp/ab_$v; rm -rf $T; mkdir -p $T; cp -a $R/. $T
  [ $v = B ] && git -C $R show 3f009a2:$H > $T/$H
  [ $v = C ] && (cd $T && git apply docs/perf/ll15/cleaning_out_of_line.patch)
  (cmake -S $T -B /tmp/b_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/r/cfg_$v.log 2>&1 &&
    ninja -C /tmp/b_$v tmashmem-perf > $OUT/r/build_$v.log 2>&1; echo "build $v rc=$?") &
done
wait
export TMASHMEM_COLL_LL_BYTES=256K
source docs/perf/coll_env.sh
C=(coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5)
for l in $(seq 1 ${LAUNCHES:-3}); do
  for np in 2 4; do
    for g in 1 0; do
      for v in A B C; do B=/tmp/b_$v run coll_np${np}_g${g}_${v}_l$l $np tmashmem-perf "${C[@]}" --graph $g; done
    done
  done
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
