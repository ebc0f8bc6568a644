#!/usr/bin/env bash
# Sixteenth session: the LL step split into a cleaning and an ordinary instantiation
# (split_step.patch), one device call. Three builds of tmashmem-perf (Release, sm_90a, WERROR):
#   A = this tree without split_step.patch (the runtime test of the cleaning steps),
#   B = low_latency.cuh as before the flag-period change (git 3f009a2),
#   D = this tree (the split);
# coll 4K-1M (LL up to the default 256K) at 2 and 4 PEs, in a graph and enqueued (GRAPHS="1 0"), LAUNCHES (2) rounds of A, B, D in turn;
# then every test_collectives* GPU entry (np 1, 2, 4 and the LL / staged / direct variants) on
# D's build, and bench_init_nccl at np 1 and 2 (gpu_placement.h after its review mend).
# Ran once with GRAPHS=1 (an H100): docs/perf/ll16/call3/; D no faster than A, not adopted
# (docs/runs.md, "Sixteenth session: the LL flag-period A/B").
set -u
R=$(pwd); D=docs/perf/ll16; mkdir -p $OUT/r
H=include/tmashmem/device/collectives/low_latency.cuh
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; } > $OUT/r/machine.txt
for v in A B D; do
  T=/tmp/src_$v; rm -rf $T; mkdir -p $T; tar -C $R --exclude=./build* -cf - . | tar -C $T -xf -
  [ $v = A ] && (cd $T && patch -R -p1 < $D/split_step.patch > /dev/null)
  [ $v = B ] && git -C $R show 3f009a2:$H > $T/$H
  cmake -S $T -B /tmp/b_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $OUT/r/cfg_$v.log 2>&1 &
done; wait
TESTS="test_collectives test_collectives_stress test_collectives_device bench_init_nccl"
for v in A B D; do
  (ninja -C /tmp/b_$v tmashmem-perf $([ $v = D ] && echo $TESTS) > $OUT/r/build_$v.log 2>&1; echo "build $v rc=$?") &
done; wait
NV=${NV:-}; source docs/perf/coll_env.sh
C=(coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5)
for l in $(seq 1 ${LAUNCHES:-2}); do for np in 2 4; do for g in ${GRAPHS:-1 0}; do for v in A B D; do
  B=/tmp/b_$v RUN_TIMEOUT=60 run coll_np${np}_g${g}_${v}_l$l $np tmashmem-perf "${C[@]}" --graph $g > /dev/null
done; done; done; done
echo "coll runs done at ${SECONDS} s"
(cd /tmp/b_D && timeout ${TEST_TIMEOUT:-360} ctest -L gpu -R '^test_collectives' --output-on-failure > $OUT/r/tests_D.log 2>&1; echo "tests rc=$?")
grep -E "tests passed|Test +#" $OUT/r/tests_D.log
for np in 1 2; do
  timeout 60 $M -np $np /tmp/b_D/tools/perf/bench_init_nccl 2 > $OUT/r/init_nccl_np$np.log 2>&1
  echo "bench_init_nccl np$np rc=$?: $(grep -m1 'NCCL' $OUT/r/init_nccl_np$np.log)"
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
