#!/usr/bin/env bash
# The collectives' test programs of one carried tree (build-ab/TREE, built with WITH_TESTS=1 by
# docs/perf/pdl22/build_ab.sh), from the repository root on the GPU machine:
#   bash docs/perf/pdl23/tests.sh TREE
# test_collectives, _stress and _device at np 1, 2 and 4 with the default settings, and
# test_collectives and _stress with TMASHMEM_COLL_LL_BYTES=1M at np 2 and 4 (the ctest entries
# that take the LL form; the _staged_all and _direct ones turn it off), each bounded.
# Output: $OUT/tests_TREE.log.
set -u
R=$(pwd); T=$R/build-ab/$1; LOG=$OUT/tests_$1.log
NV=${NV:-}; source docs/perf/coll_env.sh
run_test() {  # run_test NP PROGRAM [VAR=VALUE]
  local np=$1 p=$2 s=$SECONDS; shift 2
  env LD_LIBRARY_PATH=$T/runtime:$LD_LIBRARY_PATH "$@" timeout 240 $M -x LD_LIBRARY_PATH \
    ${1:+-x ${1%%=*}} -np $np $T/tests/$p >> $LOG 2>&1
  echo "$p np$np $* rc=$? $((SECONDS - s)) s" | tee -a $LOG
}
for np in 1 2 4; do
  for p in test_collectives_stress test_collectives_device test_collectives; do run_test $np $p; done
done
for np in 2 4; do
  for p in test_collectives_stress test_collectives; do run_test $np $p TMASHMEM_COLL_LL_BYTES=1M; done
done
grep -E "passed, [0-9]+ failed" $LOG | sort | uniq -c
mps_stop
