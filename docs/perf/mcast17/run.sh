#!/usr/bin/env bash
# Seventeenth session: the multicast store fallback's A/Bs, one device
# call each. Builds (Release, sm_90a, WERROR): T = this tree, and one per argument
# NAME=P1[+P2...] = the tree with those patches of this folder applied in order. For each:
# the SASS of fanout_kernel (multicast and hand-written); test_multicast and test_barrier at
# np 1, 2 and 4 on the variants named in TESTS; `mcast $ARGS -r 5 --sources {1,4}` at np 2
# and 4 (ARGS: `-b 64K -e 16M -f 4 -s 16,all` unless set), the variants alternating; the
# LARGE rows below; a second pass if less than half of DEADLINE_S (540 s) has gone.
# Output: $OUT/x.tgz; ratios: python3 docs/perf/mcast16/ratio.py DIR. The two calls that ran (docs/runs.md, "Seventeenth session"):
#   TESTS="F G" bash docs/perf/mcast17/run.sh F=batch_loads.patch G=batch_loads.patch+in_register.patch
#   TESTS=F3 DEADLINE_S=200 bash docs/perf/mcast17/run.sh W=weak_stores.patch F3=batch_out_of_line.patch
# Prepared, not run (F2 = F3 inlined; E = the sixteenth session's peers mask):
#   TESTS=F2 bash docs/perf/mcast17/run.sh F2=batch_when_four.patch E=../mcast16/peers_mask.patch
# Eighteenth session, each of the fallback's differences from the hand-written loop alone
# (docs/perf/mcast18/: S no alignment test, N no multicast branch, K no warp work test, H the
# hand-written loop's body, A all four), and the LARGE rows:
#   LARGE=1 ARGS="-b 64K -e 256K -f 4 -s 16,all" DEADLINE_S=560 bash docs/perf/mcast17/run.sh \
#     S=../mcast18/no_align_test.patch N=../mcast18/no_mc_branch.patch \
#     K=../mcast18/no_work_test.patch H=../mcast18/hand_body.patch A=../mcast18/all_four.patch
#   Then (docs/perf/mcast18/out2, out3) the tree with with_mc_span (15ab03c) against the library
#   before it (O), and in the second call V, a loop over the 16-byte units with the alignment
#   branch inside:
#   TESTS=T DEADLINE_S=560 bash docs/perf/mcast17/run.sh O=../mcast18/before_aligned_branch.patch
#   TESTS="T V" DEADLINE_S=100 ARGS="-b 64K -e 256K -f 4 -s 16,all" bash docs/perf/mcast17/run.sh \
#     O=../mcast18/before_aligned_branch.patch V=../mcast18/unit_loop_branch.patch
#   The second ran on 15ab03c; the first on 15ab03c + no_expect.patch (the library of 026d60d),
#   with O the multicast.cuh of 3ad1813. The mcast18 patches apply to 15ab03c: rerun there,
#   after writing O's patch (derived from git, so not kept):
#   git diff 15ab03c 3ad1813 -- include/tmashmem/device/multicast.cuh \
#     > docs/perf/mcast18/before_aligned_branch.patch
#   The LARGE rows test a prediction written before they ran: the puts lead at 16 MiB with one
#   source (0.67 at 2 PEs, 0.80 at 4) because their source, re-read every 2 x 16 MiB of
#   traffic, stays in L2, while the fan-out's, read once per call, is evicted by the call's
#   P x 16 MiB of stores (traffic ratios 2/3 and 4/5). From 32 MiB the puts' re-reads miss
#   too, so puts time / fan-out time should rise to about 2P / (P + 1): 1.33 and 1.6.
set -u
ARGS=${ARGS:--b 64K -e 16M -f 4 -s 16,all}
R=$(pwd); D=$R/docs/perf/mcast17; mkdir -p $OUT/r
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; } > $OUT/r/machine.txt
source docs/perf/variants.sh
variants "$@" || exit 1
for v in "${V[@]}"; do
  T="tmashmem-perf"; [[ " ${TESTS:-} " == *" $v "* ]] && T="$T test_multicast test_barrier"
  ninja -C /tmp/b_$v $T > $OUT/r/build_$v.log 2>&1 &
done; wait
for v in "${V[@]}"; do
  echo "build $v: $(tail -1 $OUT/r/build_$v.log)"
  for k in 2:multicast 1:hand; do
    cuobjdump -sass -fun "_ZN4perf13fanout_kernelILNS_6FanoutE${k%%:*}EEEv12tmashmem_ctxPcPKcmlim" \
      /tmp/b_$v/tools/perf/tmashmem-perf > $OUT/r/sass_${k#*:}_$v.txt 2>&1
  done
done
NV=${NV:-}; source docs/perf/coll_env.sh
for v in ${TESTS:-}; do
  (cd /tmp/b_$v && timeout 120 ctest -R '^(test_multicast|test_barrier)\.np' --output-on-failure > $OUT/r/tests_$v.log 2>&1; echo "tests $v rc=$?")
  grep -E "tests passed|Test +#" $OUT/r/tests_$v.log
done
pass() {
  for np in 2 4; do for src in 1 4; do for v in "${V[@]}"; do
    B=/tmp/b_$v RUN_TIMEOUT=60 run mcast_np${np}_src${src}_${v}_p$1 $np tmashmem-perf mcast $ARGS -r 5 --sources $src
  done; done; done
}
pass 1
# LARGE=1: the tree alone at 16-64 MiB on every SM, one and four sources (where the puts'
# re-read source leaves L2 too).
if [ -n "${LARGE:-}" ]; then for np in 2 4; do for src in 1 4; do
  B=/tmp/b_T RUN_TIMEOUT=60 run large_np${np}_src${src} $np tmashmem-perf mcast -b 16M -e 64M -f 2 -s all -r 5 --sources $src
done; done; fi
[ $SECONDS -lt $(( ${DEADLINE_S:-540} / 2 )) ] && pass 2
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
