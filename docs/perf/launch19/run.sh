#!/usr/bin/env bash
# Nineteenth session: the enqueued small collectives' host launch. The two calls that ran
# (docs/runs.md, "Nineteenth session"; outputs in out1/ and out2/):
#   TESTS=D DEADLINE_S=560 bash docs/perf/launch19/run.sh D=driver_launch.patch   (on 90b9085, H100)
#   DEADLINE_S=400 bash docs/perf/launch19/run.sh B=before.patch                  (on 31a4ee8, H200)
# driver_launch.patch applies to 90b9085 (the first form: cuLaunchKernel through
# cudaGetDriverEntryPointByVersion); 31a4ee8 landed it through the driver table. B is the
# library before 31a4ee8, written from git before a rerun (not kept):
#   git diff 31a4ee8 90b9085 -- device runtime tests/unit/emu > docs/perf/launch19/before.patch
# Builds (Release, sm_90a, WERROR): T = this tree, and NAME=P1[+P2...] = the tree with
# those patches of this folder. Then: launch_cost.cu (its header says what it times) at
# np 1, 2 and 4 against each build's libtmashmem; `coll -b 4K -e 256K -f 4 -n 200 -w 20 -r 5`
# enqueued at np 2 and 4, the builds alternating, two passes; every test_collectives* and
# test_on_stream* entry (np 1, 2, 4) on the builds named in TESTS. Output: $OUT/x.tgz.
set -u
R=$(pwd); D=$R/docs/perf/launch19; mkdir -p $OUT/r
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; nproc; } > $OUT/r/machine.txt
source docs/perf/variants.sh
variants "$@" || exit 1
for v in "${V[@]}"; do
  T="tmashmem tmashmem-perf"
  [[ " ${TESTS:-} " == *" $v "* ]] && T="$T $(cd /tmp/b_$v && ninja -t targets all | grep -oE '^test_(collectives|on_stream)[a-z_]*:' | tr -d : | sort -u | tr '\n' ' ')"
  ninja -C /tmp/b_$v $T > $OUT/r/build_$v.log 2>&1 &
done; wait
for v in "${V[@]}"; do echo "build $v: $(tail -1 $OUT/r/build_$v.log)"; done
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I include $(mpicxx --showme:compile) \
  -o /tmp/launch_cost $D/launch_cost.cu -L/tmp/b_T/runtime -ltmashmem -L/usr/local/cuda/lib64/stubs -lcuda $(mpicxx --showme:link) \
  > $OUT/r/build_probe.log 2>&1; echo "probe build rc=$?"
NV=${NV:-}; source docs/perf/coll_env.sh
for np in 1 2 4; do for v in "${V[@]}"; do
  LD_LIBRARY_PATH=/tmp/b_$v/runtime:$LD_LIBRARY_PATH timeout 60 $M -x LD_LIBRARY_PATH -np $np /tmp/launch_cost \
    > $OUT/r/probe_np${np}_$v.log 2>&1; echo "probe np$np $v rc=$?"; grep pass $OUT/r/probe_np${np}_$v.log
done; done
for pass in 1 2; do for np in 2 4; do for v in "${V[@]}"; do
  B=/tmp/b_$v RUN_TIMEOUT=60 run coll_np${np}_${v}_p$pass $np tmashmem-perf coll -b 4K -e 256K -f 4 -n 200 -w 20 -r 5
done; done; done
for v in ${TESTS:-}; do
  left=$(( ${DEADLINE_S:-560} - SECONDS - 15 ))
  (cd /tmp/b_$v && timeout $left ctest -R '^test_(collectives|on_stream)' --output-on-failure > $OUT/r/tests_$v.log 2>&1; echo "tests $v rc=$?")
  grep -E "tests passed|Test +#" $OUT/r/tests_$v.log
done
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
