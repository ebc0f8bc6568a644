#!/usr/bin/env bash
# Session 9, call 3: reduce-scatter at c0eb8c6 (new) against 6716fa4 (old).
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
R=$OUT/r; mkdir -p $R
t0=$(date +%s)
( cmake -S .carry-p/new -B build-new -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $R/cfg-new.log 2>&1 && ninja -C build-new -j 13 > $R/build-new.log 2>&1; echo "new rc=$? $(( $(date +%s) - t0 ))s" >> $R/build.txt ) &
( [ -x build-old/tools/perf/fused/tmashmem-fused-bench ] || { cmake -S .carry-p/old -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a > $R/cfg-old.log 2>&1 && ninja -C build-old -j 3 tmashmem-fused-bench > $R/build-old.log 2>&1; }; echo "old rc=$? $(( $(date +%s) - t0 ))s" >> $R/build.txt ) &
wait
cat $R/build.txt; tail -n 3 $R/build-new.log
source .carry-p/new/tools/mps.sh; mps_start
( cd build-new && timeout 200 ctest -R 'test_gemm|test_reduce_scatter|test_fused|example_.*gemm' -V > $R/ctest.log 2>&1; echo "ctest rc=$?" )
grep -E "passed, .* failed|tests passed|FAILED|Failed" $R/ctest.log | tail -12
SH="8192 8192 8192 8192 8192 3584 4096 4096 4096 512 8192 8192"
for pass in 1 2 3; do
  for v in old new; do
    for np in 1 2 4; do
      args="10 4"
      timeout 100 mpirun -np $np --oversubscribe build-$v/tools/perf/fused/tmashmem-fused-bench $args > $R/bench.$v.np$np.p$pass.log 2>&1
      echo "$v np$np pass$pass rc=$? $(( $(date +%s) - t0 ))s"
    done
  done
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
