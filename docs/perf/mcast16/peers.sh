#!/usr/bin/env bash
# Sixteenth session, second fallback try: mc_peers takes ctx.reachable and n_local_pes as
# they are (peers_mask.patch: the runtime already keeps n_local_pes <= 64 and no bit above
# it, now said in ctx.h), instead of re-masking them in every call. Two builds of
# tmashmem-perf (Release, sm_90a, WERROR): T = this tree, E = T + peers_mask.patch;
# `mcast -b 64K -e 16M -f 4 -s 16,all -r 5 --sources {1,4}` at np 2 and 4, T and E in turn,
# two passes; then test_multicast and test_barrier at np 1, 2 and 4 on E. Into $OUT/m (y.tgz).
# Prepared in the sixteenth session; not run (no device time was left).
set -u
R=$(pwd); D=docs/perf/mcast16; mkdir -p $OUT/m $OUT/r  # run() writes into $OUT/r
for v in T E; do
  S=/tmp/srcp_$v; rm -rf $S; mkdir -p $S; tar -C $R --exclude=./build* -cf - . | tar -C $S -xf -
  [ $v = E ] && (cd $S && patch -p1 < $D/peers_mask.patch > /dev/null)
  cmake -S $S -B /tmp/bp_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > $OUT/m/cfg_$v.log 2>&1 &
done; wait
for v in T E; do
  (ninja -C /tmp/bp_$v tmashmem-perf $([ $v = E ] && echo test_multicast test_barrier) > $OUT/m/build_$v.log 2>&1; echo "build $v rc=$?") &
done; wait
NV=${NV:-}; source docs/perf/coll_env.sh
for p in 1 2; do for np in 2 4; do for src in 1 4; do for v in T E; do
  B=/tmp/bp_$v RUN_TIMEOUT=60 run mcast_np${np}_src${src}_${v}_p$p $np tmashmem-perf mcast -b 64K -e 16M -f 4 -s 16,all -r 5 --sources $src > /dev/null
done; done; done; done
mv $OUT/r/* $OUT/m/ && rmdir $OUT/r
(cd /tmp/bp_E && timeout 200 ctest -L gpu -R '^(test_multicast|test_barrier)\.' --output-on-failure > $OUT/m/tests_E.log 2>&1; echo "tests rc=$?")
grep -E "tests passed|Test +#" $OUT/m/tests_E.log
mps_stop
cd $OUT && tar czf y.tgz m && rm -rf m
