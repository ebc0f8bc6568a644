#!/usr/bin/env bash
# For the next session with a GPU: the whole GPU suite on the tree as it is, in two device calls
# on one machine start (the whole suite took longer than one call's 600 s on this session's
# H100), then the collectives' rows that did not run (docs/perf/pdl21/run.sh).
#   bash docs/perf/pdl21/next.sh 1   the build (NVSHMEM) and every test_collectives* entry
#   bash docs/perf/pdl21/next.sh 2   every other GPU entry, on the same build
#   bash docs/perf/pdl21/run.sh 21a  the A/B beside NVSHMEM, and the CTA sweep
# Output: $OUT/results.tar.gz and $OUT/summary.txt (tools/gpu-suite.sh) for parts 1 and 2.
set -u
case "${1:-}" in
  1) SUITE_DEADLINE_S=570 RESULTS=$OUT/part1 bash tools/gpu-suite.sh tests '^test_collectives' ;;
  2) SUITE_DEADLINE_S=570 SUITE_EXCLUDE='^test_collectives' RESULTS=$OUT/part2 bash tools/gpu-suite.sh tests ;;
  *) echo "usage: next.sh 1|2"; exit 2 ;;
esac
