#!/usr/bin/env bash
# Twentieth session: the lean GPU check of let_next_overlap.patch (a kernel lets the next
# collective overlap it only where it fits twice itself), one call on a fresh machine. The patch
# landed in the twenty-first session (523639f); run this alone now, as docs/perf/pdl21/check.sh
# does: bash docs/perf/pdl20/verify.sh
# Builds tmashmem, the collectives' and on-stream tests and tmashmem-perf in build-gpu/
# (Release, sm_90a, WERROR, without NVSHMEM), runs test_collectives*, test_on_stream* and
# test_collectives_device at np 1, 2 and 4 under MPS with multicast off, then
# `coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5` enqueued at np 2 and 4 with TMASHMEM_COLL_PDL on
# and off. Output: $OUT/v.tgz (r/tests.log, r/coll_tm-<on|off>_np<N>_g0_pV.csv and .log).
set -u
R=$(pwd); mkdir -p $OUT/r
{ nvidia-smi --query-gpu=name,driver_version --format=csv; git -C $R log --oneline -1;
  md5sum device/collectives.cu runtime/collectives.cpp runtime/collectives_kernels.h; } > $OUT/r/machine.txt
B=$R/build-gpu
cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON > $OUT/r/cfg.log 2>&1
ninja -C $B tmashmem tmashmem-perf test_collectives test_collectives_stress test_collectives_device \
  test_on_stream test_on_stream_outcome > $OUT/r/build.log 2>&1
echo "build rc=$? at $SECONDS s"
export TMASHMEM_COLL_PDL=on
NV=; source docs/perf/coll_env.sh
(cd $B && timeout 200 ctest --timeout 90 -R '^(test_on_stream|test_on_stream_kernels|test_on_stream_outcome|test_collectives|test_collectives_stress[a-z_]*|test_collectives_device)\.np' --output-on-failure) > $OUT/r/tests.log 2>&1
echo "ctest rc=$? at $SECONDS s"; grep -E "tests passed|Failed|Timeout" $OUT/r/tests.log
for np in 4 2; do for pdl in on off; do
  TMASHMEM_COLL_PDL=$pdl RUN_TIMEOUT=40 run coll_tm-${pdl}_np${np}_g0_pV $np tmashmem-perf coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5 --graph 0
done; done
mps_stop
cd $OUT && tar czf v.tgz r && rm -rf r
