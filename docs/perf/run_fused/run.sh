#!/bin/bash
# Device call 5: tools/perf/fused/run-fused.sh as one script (the fused tests at 2/1/4 PEs,
# the GEMM test, both examples, the benchmark at 1/2/4 PEs, the sweep plot) on a prebuilt
# tree, then the benchmarks' NCCL communicator (nccl_comm.h): coll and bench_init_nccl.
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
cmake -S . -B /tmp/bnew -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $R/cfg.log 2>&1
ninja -C /tmp/bnew test_fused test_reduce_scatter test_gemm allgather_gemm gemm_reduce_scatter \
  tmashmem-fused-bench tmashmem-perf bench_init_nccl bench_init > $R/build.log 2>&1
echo "build rc=$? $(( $(date +%s) - T0 )) s" >> $R/times.txt
P=/tmp/prebuilt; mkdir -p $P
for t in tests/gpu/fused/test_fused tests/gpu/fused/test_reduce_scatter tests/gpu/gemm/test_gemm \
  examples/fused/allgather_gemm examples/fused/gemm_reduce_scatter tools/perf/fused/tmashmem-fused-bench; do
  cp /tmp/bnew/$t $P/
done
cp -P /tmp/bnew/runtime/libtmashmem.so* $P/
OUT=$R/fused FUSED_WITH_GEMM_TEST=1 timeout 400 bash tools/perf/fused/run-fused.sh $P 10 4 > $R/run-fused.out 2>&1
echo "run-fused rc=$? $(( $(date +%s) - T0 )) s" >> $R/times.txt
source tools/mps.sh; mps_start
M="mpirun --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
for np in 1 2; do
  timeout 90 $M -np $np /tmp/bnew/tools/perf/tmashmem-perf coll -b 4K -e 64K -f 4 -n 10 -w 2 -r 1 > $R/coll.np$np.log 2>&1
  echo "coll np$np rc=$?" >> $R/times.txt
  timeout 90 $M -np $np /tmp/bnew/tools/perf/bench_init_nccl 3 $((1 << 26)) > $R/bench_init_nccl.np$np.log 2>&1
  echo "bench_init_nccl np$np rc=$?" >> $R/times.txt
done
mps_stop
echo "all $(( $(date +%s) - T0 )) s" >> $R/times.txt
cd $OUT && tar czf x.tgz r
