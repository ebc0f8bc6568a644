#!/bin/bash
# Device call 2: the one-PE reduce-scatter tail (A: HEAD in .carry-p/old, B: working tree).
# A ("old") was `git archive` of 10115d0 unpacked into .carry-p/old (an ignored folder carried to
# the device machine); B ("new") the working tree, 10115d0 plus the one-PE change (2d0ff95).
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
R=$OUT/r; mkdir -p $R
{ which nsys ncu; python3 -c "import matplotlib; print('matplotlib', matplotlib.__version__)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv; } > $R/tools.txt 2>&1
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $2.cfg.log 2>&1; }
t0=$(date +%s)
cfg . /tmp/bnew && cfg .carry-p/old /tmp/bold
( ninja -C /tmp/bnew tmashmem-fused-bench test_reduce_scatter gemm_reduce_scatter > $R/build_new.log 2>&1; echo "new rc=$?" >> $R/build_new.log ) &
( ninja -C /tmp/bold tmashmem-fused-bench > $R/build_old.log 2>&1; echo "old rc=$?" >> $R/build_old.log ) &
wait
echo "build $(( $(date +%s) - t0 )) s" > $R/times.txt
tail -1 $R/build_new.log $R/build_old.log
source tools/mps.sh; mps_start
M="mpirun --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
SH="rs 4096 4096 4096 512 8192 8192 8192 8192 3584"
for pass in 1 2; do
  for side in old new; do
    timeout 120 $M -np 1 /tmp/b$side/tools/perf/fused/tmashmem-fused-bench 20 4 $SH > $R/rs_np1.$side.p$pass.log 2>&1
    echo "$side p$pass rc=$?" >> $R/times.txt
  done
done
FUSED_BENCH_BATCH=8 timeout 120 $M -np 1 /tmp/bnew/tools/perf/fused/tmashmem-fused-bench 20 4 $SH > $R/rs_np1.new.batch8.log 2>&1
if command -v nsys > /dev/null; then
  for side in old new; do
    timeout 120 nsys profile -t cuda -o /tmp/rs_$side --force-overwrite true /tmp/b$side/tools/perf/fused/tmashmem-fused-bench 10 4 $SH > $R/nsys_$side.run.log 2>&1
    nsys stats -r cuda_gpu_kern_sum -f csv /tmp/rs_$side.nsys-rep > $R/nsys_$side.kern.csv 2>&1
  done
fi
echo "benches $(( $(date +%s) - t0 )) s" >> $R/times.txt
cd /tmp/bnew && timeout 300 ctest -R "test_reduce_scatter" --output-on-failure > $R/ctest_rs.log 2>&1; echo "ctest rc=$?" >> $R/times.txt
for np in 1 2; do timeout 60 $M -np $np /tmp/bnew/examples/fused/gemm_reduce_scatter > $R/example_rs.np$np.log 2>&1; echo "example np$np rc=$?" >> $R/times.txt; done
echo "all $(( $(date +%s) - t0 )) s" >> $R/times.txt
mps_stop
cd $OUT && tar czf x.tgz r
