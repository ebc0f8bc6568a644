#!/usr/bin/env bash
# Sixteenth session: GPU runs of what changed without one. (1) The fifteenth session's last
# commit (6a2fef9, test-only: round_seed and spin_ns moved) had not run: test_signal and
# test_collectives_device at np 1, 2 and 4. (2) tools/perf/gpu_placement.h (this session):
# whether NCCL's rows run is now decided by PCI bus id in tmashmem-fused-bench, tmashmem-perf
# coll and bench_init_nccl: at np 1 NCCL runs, at np 2 on one GPU it is left out, saying so.
# Release, sm_90a, WERROR; multicast off; MPS. Logs into $OUT/r, tarred.
set -u
R=$(pwd); B=/tmp/b_verify; mkdir -p $OUT/r
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; } > $OUT/r/machine.txt
cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $OUT/r/cfg.log 2>&1
ninja -C $B test_signal test_collectives_device tmashmem-fused-bench tmashmem-perf bench_init_nccl > $OUT/r/build.log 2>&1
echo "build rc=$? $(tail -1 $OUT/r/build.log)"
NV=${NV:-}; source docs/perf/coll_env.sh
(cd $B && timeout 240 ctest -R '^(test_signal|test_collectives_device)\.np' --output-on-failure > $OUT/r/tests.log 2>&1; echo "tests rc=$?")
grep -E "tests passed|Test +#" $OUT/r/tests.log
for np in 1 2; do
  timeout 120 $M -np $np $B/tools/perf/fused/tmashmem-fused-bench 1 1 1024 1024 1024 > $OUT/r/fused_np$np.log 2>&1
  echo "fused np$np rc=$?: $(grep -m1 'NCCL baseline' $OUT/r/fused_np$np.log)"
  RUN_TIMEOUT=60 run coll_np$np $np tmashmem-perf coll -b 4K -e 4K -n 20 -w 2 -r 1
  grep -m2 "NCCL" $OUT/r/coll_np$np.log
  timeout 60 $M -np $np $B/tools/perf/bench_init_nccl 2 > $OUT/r/init_nccl_np$np.log 2>&1
  echo "bench_init_nccl np$np rc=$?: $(grep -m1 'NCCL' $OUT/r/init_nccl_np$np.log)"
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
