#!/usr/bin/env bash
# Twenty-fourth session: the on-stream collectives' kernel with its arguments read into the
# SM's constant caches before the grid dependency wait (warm.patch), also with 32-bit divisions
# in the LL path's slice and region arithmetic (warmdiv.patch), and with the next grid's trigger
# after the step instead of before it (warmlate.patch); trigger.patch is main's form (3f474c6),
# trace24.patch its traced build, tlb.patch a prefetch of the peers' pages before the wait
# (docs/runs.md, "Twenty-fourth session"). Trees built here and carried
# (carry=["build-ab"]):
#   bash docs/perf/pdl22/build_ab.sh base=
#   WITH_TESTS=1 bash docs/perf/pdl22/build_ab.sh warm=docs/perf/pdl24/warm.patch \
#     warmdiv=docs/perf/pdl24/warmdiv.patch warmlate=docs/perf/pdl24/warmlate.patch
# From the repository root on the GPU machine:
#   bash docs/perf/pdl24/run.sh ab        the A/B of all trees (docs/perf/pdl23/ab.sh, 4 KiB -
#                                        256 KiB, two rounds), then NVSHMEM's benchmark built
#                                        into build-nv (`nv` and `bind` build it where missing;
#                                        WITH_NV=0: not)
#   bash docs/perf/pdl24/run.sh tests TREE   TREE's test programs (docs/perf/pdl23/tests.sh)
#   bash docs/perf/pdl24/run.sh nv TREE   base, TREE and NVSHMEM 3.4.5 side by side, `coll -b 4K
#                                        -e 256K -f 4 -n 200` (SIZES) at np 2 and 4, enqueued
#                                        and in a graph, two passes (PASSES)
#   bash docs/perf/pdl24/run.sh trace TREE  build-ab/trace24 (trace24.patch: docs/perf/pdl23/trace.sh's
#                                        stamps on this tree) at 64 B - 4 KiB, 2 and 4 PEs,
#                                        enqueued and in a graph; then TREE enqueued with
#                                        TMASHMEM_COLL_PDL on and off alternating, two rounds
#   bash docs/perf/pdl24/run.sh bind TREE  the same enqueued at np 2 and 4, TREE and NVSHMEM,
#                                        ranks unbound (--bind-to none, as above) and bound to
#                                        cores (--bind-to core) alternating, three rounds
# Output: $OUT/ab.tgz and $OUT/build_nv.log; $OUT/tests_TREE.log; $OUT/nv.tgz; $OUT/trace.tgz;
# $OUT/bind.tgz. Tables (docs/perf/pdl23/ab_table.py):
#   python3 docs/perf/pdl23/ab_table.py DIR ab base TREE
#   python3 docs/perf/pdl23/ab_table.py DIR nv nvshmem TREE    (NVSHMEM's time over TREE's)
#   python3 docs/perf/pdl23/ab_table.py DIR bind nvshmemcore TREEcore    (and ...none)
#   python3 docs/perf/pdl23/trace_table.py DIR      python3 docs/perf/pdl23/ab_table.py DIR pdl TREEoff TREEon
set -u
R=$(pwd); what=$1; tree=${2:-}
export NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
build_nv() {  # NVSHMEM's benchmark into build-nv, unless an earlier call on this start built it
  [ -x $R/build-nv/tools/perf/perf_nvshmem ] && return
  { cmake -S $R -B $R/build-nv -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_NVSHMEM_HOME=$NV \
    && ninja -C $R/build-nv perf_nvshmem; } > $OUT/build_nv.log 2>&1
  echo "perf_nvshmem build rc=$? at $SECONDS s"
}
case $what in
  ab)
    TREES=${TREES:-base warm warmdiv warmlate} ROUNDS=2 SIZES="-b 4K -e 256K -f 4" \
      bash docs/perf/pdl23/ab.sh
    [ "${WITH_NV:-1}" = 1 ] && build_nv
    ;;
  tests) bash docs/perf/pdl23/tests.sh $tree ;;
  nv)
    build_nv; mkdir -p $OUT/r
    { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; echo "NVSHMEM: $NV"
      md5sum build-ab/{base,$tree}/tools/perf/tmashmem-perf build-ab/{base,$tree}/runtime/libtmashmem.so.0; } > $OUT/r/machine.txt
    source docs/perf/coll_env.sh
    sizes=${SIZES:--b 4K -e 256K -f 4 -n 200}
    for pass in $(seq ${PASSES:-2}); do for np in 2 4; do for g in 0 1; do
      for t in base $tree; do
        B=$R/build-ab/$t LD_LIBRARY_PATH=$R/build-ab/$t/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
          run nv_${t}_np${np}_g${g}_$pass $np tmashmem-perf coll $sizes -w 20 -r 5 --graph $g
      done
      B=$R/build-nv RUN_TIMEOUT=60 \
        run nv_nvshmem_np${np}_g${g}_$pass $np perf_nvshmem coll $sizes -w 20 -r 5 --graph $g
    done; done; done
    mps_stop
    cd $OUT && tar czf nv.tgz r && rm -rf r
    ;;
  trace)
    mkdir -p $OUT/r
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
    md5sum build-ab/{trace24,$tree}/tools/perf/tmashmem-perf build-ab/{trace24,$tree}/runtime/libtmashmem.so.0 >> $OUT/r/machine.txt
    source docs/perf/coll_env.sh
    export TMASHMEM_COLL_PDL=on; M="$M -x TMASHMEM_COLL_PDL"
    for v in "2 0" "2 1" "4 0" "4 1"; do
      set -- $v
      B=$R/build-ab/trace24 LD_LIBRARY_PATH=$R/build-ab/trace24/runtime:$LD_LIBRARY_PATH \
        RUN_TIMEOUT=60 run trace_np$1_g$2_on $1 tmashmem-perf coll -b 64 -e 4K -f 64 -n 200 -w 20 -r 3 --graph $2
    done
    for round in 1 2; do for np in 2 4; do for pdl in on off; do
      B=$R/build-ab/$tree LD_LIBRARY_PATH=$R/build-ab/$tree/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
        TMASHMEM_COLL_PDL=$pdl run pdl_${tree}${pdl}_np${np}_$round $np tmashmem-perf coll -b 4K -e 256K -f 4 -n 200 -w 20 -r 5
    done; done; done
    mps_stop
    cd $OUT && tar czf trace.tgz r && rm -rf r
    ;;
  bind)
    build_nv; mkdir -p $OUT/r
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
    source docs/perf/coll_env.sh
    unbound=$M
    for round in 1 2 3; do for np in 2 4; do for bind in none core; do
      M=${unbound/--bind-to none/--bind-to $bind}
      B=$R/build-ab/$tree LD_LIBRARY_PATH=$R/build-ab/$tree/runtime:$LD_LIBRARY_PATH RUN_TIMEOUT=60 \
        run bind_${tree}${bind}_np${np}_$round $np tmashmem-perf coll -b 4K -e 256K -f 4 -n 200 -w 20 -r 5
      B=$R/build-nv RUN_TIMEOUT=60 \
        run bind_nvshmem${bind}_np${np}_$round $np perf_nvshmem coll -b 4K -e 256K -f 4 -n 200 -w 20 -r 5
    done; done; done
    mps_stop
    cd $OUT && tar czf bind.tgz r && rm -rf r
    ;;
esac
