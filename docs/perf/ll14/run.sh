#!/usr/bin/env bash
# The low-latency (LL) collectives on one H200 (one device call; fourteenth session, and the
# fifteenth's flag-period fix): builds the collectives' GPU tests, tmashmem-perf and
# perf_nvshmem (Release, sm_90a), then under MPS with multicast off: `tests` runs the ctest
# entries that match $TESTS (default: every test_collectives* entry; np 1, 2, 4; each bounded
# to 150 s); `neg` builds a copy of the tree whose LL steps never clean (the negative control
# of test_collectives_device's flag-period case) and runs that case at 2 PEs, which must fail;
# `bench` runs `coll` at 2 and 4 PEs, enqueued and in one graph, with TMASHMEM_COLL_LL_BYTES
# at each of $LL_LIST (default "0 16K 1M"; 256K is the library's default), beside NVSHMEM
# 3.4.5, $LAUNCHES launches each (2), tmashmem at the CTA counts $SMS (-s; default 0, the
# library's choice). Logs and CSVs into $OUT/r (one archive).
#   [LAUNCHES=2] [LL_LIST=...] [SMS=0,2] [TESTS=regex] docs/perf/ll14/run.sh [tests] [neg] [bench]
set -u
R=$(pwd); B=/tmp/b_ll14; mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
echo "NVSHMEM: $NV; tree of $(git -C $R log -1 --format=%h 2>/dev/null) + working changes" >> $OUT/r/machine.txt
t=$SECONDS
cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON \
  -DTMASHMEM_NVSHMEM_HOME=$NV > $OUT/r/cfg.log 2>&1 &&
  ninja -C $B test_collectives test_collectives_stress test_collectives_device tmashmem-perf perf_nvshmem tmashmem-info > $OUT/r/build.log 2>&1
echo "build rc=$? $((SECONDS - t)) s"; tail -5 $OUT/r/build.log | grep -E "error|FAILED" && exit 1
RUN_TIMEOUT=120
export TMASHMEM_COLL_LL_BYTES=${TMASHMEM_COLL_LL_BYTES:-256K}  # set, so that coll_env.sh forwards it; each run sets its own
source docs/perf/coll_env.sh  # the environment, MPS and run() (moved there after the runs)
if [[ " $* " == *" neg "* ]]; then  # built beside the tests, run after them
  N=/tmp/neg_tree; rm -rf $N /tmp/b_neg; mkdir -p $N
  cp -a $R/. $N
  sed -i 's/const bool cleans = coll_ll_cleans(epoch);/const bool cleans = false;/' \
    $N/include/tmashmem/device/collectives/low_latency.cuh
  grep -q 'const bool cleans = false;' $N/include/tmashmem/device/collectives/low_latency.cuh || echo "neg: patch did not apply"
  (cmake -S $N -B /tmp/b_neg -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a &&
    ninja -C /tmp/b_neg test_collectives_device) > $OUT/r/neg-build.log 2>&1 &
  NEG_BUILD=$!
fi
if [[ " $* " == *" tests "* ]]; then
  t=$SECONDS
  (cd $B && ctest -V -R "${TESTS:-test_collectives}" --timeout 150) > $OUT/r/gpu-tests.log 2>&1
  echo "tests rc=$? $((SECONDS - t)) s"
  grep -E "tests passed|passed, .* failed|Failed|Timeout" $OUT/r/gpu-tests.log | sed 's/^[0-9]*: //' | sort | uniq -c
fi
if [[ " $* " == *" neg "* ]]; then
  wait $NEG_BUILD; echo "neg build rc=$?"
  (cd /tmp/b_neg && ctest -V -R "test_collectives_device.np2" --timeout 150) > $OUT/r/neg.log 2>&1
  echo "neg rc=$? (must be non-zero)"; grep -E "wrong elements|passed, .* failed|assertions" $OUT/r/neg.log | head -5
fi
C=(coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 -s ${SMS:-0})
if [[ " $* " == *" bench "* ]]; then
  for l in $(seq 1 ${LAUNCHES:-2}); do
    for np in 2 4; do
      for g in 0 1; do
        for ll in ${LL_LIST:-0 16K 1M}; do TMASHMEM_COLL_LL_BYTES=$ll run coll_np${np}_g${g}_ll${ll}_l$l $np tmashmem-perf "${C[@]}" --graph $g; done
        run coll_np${np}_g${g}_nv_l$l $np perf_nvshmem "${C[@]}" --graph $g
      done
    done
  done
fi
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
