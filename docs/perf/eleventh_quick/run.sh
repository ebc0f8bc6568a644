#!/bin/bash
# Device call 3: the quick benchmark set twice against the run of record (the architecture change's
# suite after its cleanup), the reduce-scatter test verbose, ncu kernel times at one PE.
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T0=$(date +%s)
SUITE_TARGETS="tmashmem-perf perf_nvshmem tmashmem-fused-bench test_reduce_scatter" SUITE_DEADLINE_S=400 \
  RESULTS=$PWD/results bash tools/gpu-suite.sh quick > suite.out 2>&1
echo "suite rc=$? $(( $(date +%s) - T0 )) s" >> results/extra.txt
source tools/mps.sh; mps_start
(cd build-gpu && timeout 120 ctest -V -R test_reduce_scatter) > results/ctest_rs_verbose.log 2>&1
mps_stop
B=build-gpu/tools/perf/fused/tmashmem-fused-bench
timeout 150 mpirun -np 1 -x TMASHMEM_MULTICAST ncu --metrics gpu__time_duration.sum -k regex:"gemm_kernel|gemm_reduce_scatter_kernel" \
  $B 3 4 rs 4096 4096 4096 512 8192 8192 > results/ncu_rs.log 2>&1
echo "ncu rc=$? $(( $(date +%s) - T0 )) s" >> results/extra.txt
cp suite.out results/
tar czf $OUT/results.tar.gz -C results .
