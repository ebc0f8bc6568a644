#!/usr/bin/env bash
# Twenty-first session: does the stress test's "between a user's kernels with programmatic
# dependent launch" case catch a collective that reads before the grid before it has finished?
# Builds a copy of the tree in which coll_kernel does not call griddepcontrol_wait (only
# tmashmem and test_collectives_stress, Release, sm_90a) and runs that case at np 2 and 4 under
# MPS with multicast off: it should FAIL there (and pass on the real tree, in the GPU suite).
# Output: $OUT/mutant.log.
set -u
R=$(pwd); M=/tmp/mutant
rm -rf $M && mkdir -p $M && tar -C $R --exclude=./build --exclude=./build-gpu --exclude=./.git -cf - . | tar -C $M -xf -
grep -c "detail::griddepcontrol_wait();" $M/device/collectives.cu
sed -i 's/^  detail::griddepcontrol_wait();/  \/\/ mutant: no wait/' $M/device/collectives.cu
grep -n "mutant" $M/device/collectives.cu
cmake -S $M -B $M/build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1
ninja -C $M/build tmashmem test_collectives_stress > $M/build.log 2>&1; echo "mutant build rc=$? at $SECONDS s"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
source $R/tools/mps.sh; mps_start
for np in 2 4; do
  timeout 60 mpirun --oversubscribe --bind-to none -np $np -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY \
    -x CUDA_MPS_LOG_DIRECTORY $M/build/tests/gpu/test_collectives_stress "collectives: between*" 2>&1 | tail -15
  echo "mutant np $np rc=${PIPESTATUS[0]}"
done
mps_stop
