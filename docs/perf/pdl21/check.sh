#!/usr/bin/env bash
# Twenty-first session, the lean GPU check in one call: docs/perf/pdl20/verify.sh on the landed
# let_next_overlap (build without NVSHMEM; test_collectives*, test_on_stream*,
# test_collectives_device at np 1, 2 and 4; coll on/off at np 4 and 2 enqueued; into $OUT/v.tgz),
# then docs/perf/pdl21/mutant.sh (the new stress case against a kernel without its wait; into
# $OUT/mutant.log).
set -u
R=$(pwd)
bash docs/perf/pdl20/verify.sh
[ $SECONDS -lt ${MUTANT_BY_S:-430} ] && bash $R/docs/perf/pdl21/mutant.sh > $OUT/mutant.log 2>&1
tail -12 $OUT/mutant.log 2>/dev/null
