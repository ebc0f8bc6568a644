#!/usr/bin/env bash
# Sixteenth session: the multicast fallback's open rows in one device call.
# Three builds of tmashmem-perf (Release, sm_90a), from this tree:
#   A  = the tree without bench_rotation.patch (the benchmark as it ran before: call `it`
#        picks its source copy with it % sources);
#   B1 = this tree (the copy picked by a wrapping step, no 64-bit division per call);
#   B2 = B1 + unrolled_peers.patch (McPeers::each unrolled up to 8 local PEs).
# `mcast -b 64K -e 16M -f 4 -s 16,all -r 5` at np 2 and 4, 1 and 4 sources, the variants
# alternating; the SASS of fanout_kernel from each build; test_multicast and test_barrier at
# np 1, 2 and 4 on B2 (TESTS=0 skips them; `run.sh tests` runs only them); then a second pass
# if less than half of DEADLINE_S (540 s) has gone.
# Ran once (an H100, 2026-12-06): out/, ratios.txt; read-out in docs/runs.md, "Sixteenth
# session". B1 kept, B2 dropped. (The test_multicast_setup entries in out/tests_B2.log are CPU
# tests the regex caught but this script did not build: "Failed" = not built.)
set -u
R=$(pwd); D=docs/perf/mcast16; mkdir -p $OUT/r
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; } > $OUT/r/machine.txt
prep() {  # prep NAME PATCH-COMMAND: a copy of the tree at /tmp/src_NAME with the patch step applied
  rm -rf /tmp/src_$1 && mkdir -p /tmp/src_$1 && tar -C $R --exclude=./build* --exclude=./results -cf - . | tar -C /tmp/src_$1 -xf -
  (cd /tmp/src_$1 && eval "$2") || echo "prep $1 failed"
}
prep A "patch -R -p1 < $D/bench_rotation.patch"
prep B1 "true"
prep B2 "patch -p1 < $D/unrolled_peers.patch"
V=(A B1 B2); [ "${1:-}" = tests ] && V=(B2)
for v in "${V[@]}"; do
  cmake -S /tmp/src_$v -B /tmp/b_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DTMASHMEM_WERROR=ON > $OUT/r/cfg_$v.log 2>&1 &
done; wait
T="tmashmem-perf"; [ "${1:-}" = tests ] && T="test_multicast test_barrier"
for v in "${V[@]}"; do ninja -C /tmp/b_$v $T > $OUT/r/build_$v.log 2>&1 & done; wait
for v in "${V[@]}"; do echo "build $v: $(tail -1 $OUT/r/build_$v.log)"; done
B=/tmp/b_B2; NV=${NV:-}; source $D/../coll_env.sh
tests() {
  ninja -C /tmp/b_B2 test_multicast test_barrier > $OUT/r/build_tests.log 2>&1
  (cd /tmp/b_B2 && timeout 300 ctest -R 'test_multicast|test_barrier' --output-on-failure > $OUT/r/tests_B2.log 2>&1; echo "tests rc=$?")
  grep -E "tests passed|Test +#" $OUT/r/tests_B2.log
}
pass() {
  for np in 2 4; do for src in 1 4; do for v in "${V[@]}"; do
    B=/tmp/b_$v RUN_TIMEOUT=60 run mcast_np${np}_src${src}_${v}_p$1 $np tmashmem-perf mcast -b 64K -e 16M -f 4 -s 16,all -r 5 --sources $src
  done; done; done
}
if [ "${1:-}" = tests ]; then tests; else
  for v in "${V[@]}"; do
    cuobjdump -sass /tmp/b_$v/tools/perf/tmashmem-perf 2>/dev/null |
      awk '/Function : .*fanout_kernel/{p=1} p{print} p&&/^\t\t\.\.\.\.\.\.\.\.\.\./{p=0}' > $OUT/r/sass_fanout_$v.txt
  done
  pass 1
  [ "${TESTS:-1}" = 1 ] && tests
  [ $SECONDS -lt $(( ${DEADLINE_S:-540} / 2 )) ] && pass 2
fi
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
