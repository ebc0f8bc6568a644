#!/bin/bash
# Device call 4: the fused benchmark with and without FUSED_BENCH_FLUSH (cold L2 before every
# timing), working tree, under MPS.
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
R=$OUT/r; mkdir -p $R; T0=$(date +%s)
cmake -S . -B /tmp/bnew -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $R/cfg.log 2>&1
ninja -C /tmp/bnew tmashmem-fused-bench > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s" >> $R/times.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $R/machine.txt
source tools/mps.sh; mps_start
M="mpirun --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
B=/tmp/bnew/tools/perf/fused/tmashmem-fused-bench
SH="rs 4096 4096 4096 512 8192 8192 8192 8192 3584 8192 8192 8192"
run() {  # run NAME NP FLUSH ARGS...
  local name=$1 np=$2 f=$3; shift 3
  if [ "$f" = 1 ]; then
    FUSED_BENCH_FLUSH=1 timeout 150 $M -x FUSED_BENCH_FLUSH -np $np $B "$@" > $R/$name.log 2>&1
  else
    timeout 150 $M -np $np $B "$@" > $R/$name.log 2>&1
  fi
  echo "$name rc=$? $(( $(date +%s) - T0 )) s" >> $R/times.txt
}
unset FUSED_BENCH_FLUSH
for pass in 1 2; do
  run rs_np1.warm.p$pass 1 0 20 4 $SH
  run rs_np1.flush.p$pass 1 1 20 4 $SH
done
run rs_np2.flush 2 1 20 4 $SH
run rs_np4.flush 4 1 20 4 $SH
run rs_np4.warm 4 0 20 4 $SH
run ag_np4.flush 4 1 20 4
mps_stop
cd $OUT && tar czf x.tgz r
