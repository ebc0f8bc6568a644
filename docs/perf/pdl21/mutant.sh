#!/usr/bin/env bash
# Twenty-first session: does the stress test's "between a user's kernels with programmatic
# dependent launch" case catch a collective that reads before the grid before it has finished?
# Builds a copy of the tree in which coll_kernel does not call griddepcontrol_wait (only
# tmashmem and test_collectives_stress, Release, sm_90a) and runs that case at np 2 and 4 under
# MPS with multicast off: it should FAIL there (and pass on the real tree, in the GPU suite).
# Output: $OUT/mutant.log. As run in the twenty-first session it set the same environment itself;
# it has since sourced docs/perf/coll_env.sh for it (not rerun on a GPU).
set -u
R=$(pwd); T=/tmp/mutant
rm -rf $T && mkdir -p $T && tar -C $R --exclude=./build --exclude=./build-gpu --exclude=./.git -cf - . | tar -C $T -xf -
grep -c "detail::griddepcontrol_wait();" $T/device/collectives.cu
sed -i 's/^  detail::griddepcontrol_wait();/  \/\/ mutant: no wait/' $T/device/collectives.cu
grep -n "mutant" $T/device/collectives.cu
cmake -S $T -B $T/build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1
ninja -C $T/build tmashmem test_collectives_stress > $T/build.log 2>&1; echo "mutant build rc=$? at $SECONDS s"
NV=; source $R/docs/perf/coll_env.sh  # multicast off, MPI as root, MPS started; $M: mpirun
MUTANT=$T/build/tests/gpu/test_collectives_stress
for np in 2 4; do
  timeout 60 $M -np $np $MUTANT "collectives: between*" 2>&1 | tail -15
  echo "mutant np $np rc=${PIPESTATUS[0]}"
done
mps_stop
