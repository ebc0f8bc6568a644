#!/bin/bash
# Device call 7: after review fixes. The one-PE reduce-scatter now returns after the CTA's
# closing barrier: test_reduce_scatter at np 1/2/4 (ctest -V), both examples, and the one-PE
# benchmark against 10115d0 (.carry-p/old, git archive), two passes each, default order and
# FUSED_BENCH_FLUSH=1; the NCCL communicator helper (rank 0 decides) at 1 and 2 PEs.
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $2.cfg.log 2>&1; }
cfg . /tmp/bnew && cfg .carry-p/old /tmp/bold
( ninja -C /tmp/bnew tmashmem-fused-bench test_reduce_scatter gemm_reduce_scatter allgather_gemm tmashmem-perf bench_init_nccl > $R/build_new.log 2>&1; echo "new rc=$?" >> $R/times.txt ) &
( ninja -C /tmp/bold tmashmem-fused-bench > $R/build_old.log 2>&1; echo "old rc=$?" >> $R/times.txt ) &
wait
echo "build $(( $(date +%s) - T0 )) s" >> $R/times.txt
source tools/mps.sh; mps_start
M="mpirun --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
(cd /tmp/bnew && timeout 120 ctest -V -R test_reduce_scatter) > $R/ctest_rs_verbose.log 2>&1; echo "ctest rc=$?" >> $R/times.txt
for np in 1 2; do timeout 60 $M -np $np /tmp/bnew/examples/fused/gemm_reduce_scatter > $R/example_rs.np$np.log 2>&1; echo "example_rs np$np rc=$?" >> $R/times.txt; done
timeout 60 $M -np 2 /tmp/bnew/examples/fused/allgather_gemm > $R/example_ag.np2.log 2>&1; echo "example_ag np2 rc=$?" >> $R/times.txt
SH="rs 4096 4096 4096 512 8192 8192 8192 8192 3584 8192 8192 8192"
for pass in 1 2; do
  for side in old new; do
    timeout 120 $M -np 1 /tmp/b$side/tools/perf/fused/tmashmem-fused-bench 20 4 $SH > $R/rs_np1.$side.p$pass.log 2>&1
    echo "$side p$pass rc=$?" >> $R/times.txt
    FUSED_BENCH_FLUSH=1 timeout 120 $M -x FUSED_BENCH_FLUSH -np 1 /tmp/b$side/tools/perf/fused/tmashmem-fused-bench 20 4 $SH > $R/rs_np1.$side.flush.p$pass.log 2>&1
    echo "$side flush p$pass rc=$?" >> $R/times.txt
  done
done
# The script then ended exactly as docs/perf/run_fused/run.sh does from its line 23 (the
# coll and bench_init_nccl runs at np 1 and 2, mps_stop, the total time, the archive); those
# lines are not repeated in this record.
