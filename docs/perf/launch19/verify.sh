#!/usr/bin/env bash
# Landed in the twentieth session (c859c31, with programmatic dependent launch): the patch no
# longer applies to main; docs/perf/pdl20/run.sh and tools/gpu-suite.sh check what landed.
# Prepared in the nineteenth session, not run (its device time ran out): driver_launch_h.patch
# (applies to cbf54e5) moves the collectives' driver launch into device/driver_launch.h, a
# launch_kernel<K>(grid, block, stream, args...) that converts each argument to K's own
# parameter type, and launches the on-stream barrier's and signals' kernels through it too.
#   bash docs/perf/launch19/verify.sh
# Copies the tree to /tmp/src_v with the patch applied and builds tmashmem and the tests below
# there (Release, sm_90a, WERROR), then under MPS with
# multicast off: test_on_stream* (with the on-stream barrier and signals), test_collectives_stress and
# test_collectives_device at np 1, 2 and 4, and test_collectives at np 2 (its every dtype
# and op). Output: $OUT/verify.log.
set -uo pipefail
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
B=/tmp/bv S=/tmp/src_v
rm -rf $S && mkdir -p $S && tar --exclude=./build* -cf - . | tar -C $S -xf -
(cd $S && patch -p1 < docs/perf/launch19/driver_launch_h.patch > /dev/null) || { echo "patch failed"; exit 1; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv
  cmake -S $S -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > /dev/null &&
    ninja -C $B tmashmem test_on_stream test_on_stream_outcome test_collectives \
      test_collectives_stress test_collectives_device | tail -1
  echo "build rc=$? at ${SECONDS} s"
  source $S/tools/mps.sh
  mps_start
  (cd $B && ctest --timeout 60 -R '^(test_on_stream|test_on_stream_kernels|test_on_stream_outcome|test_collectives_stress[a-z_]*|test_collectives_device)\.np|^test_collectives\.np2$' --output-on-failure)
  echo "ctest rc=$? at ${SECONDS} s"
  mps_stop
} > $OUT/verify.log 2>&1
grep -E "build rc|ctest rc|tests passed|Test +#|Failed" $OUT/verify.log
