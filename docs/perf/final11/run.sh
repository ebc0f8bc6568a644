#!/bin/bash
# Device call 6: the session's last GPU run: tools/gpu-suite.sh tests (Release build with
# NVSHMEM, every GPU ctest entry at np 1/2/4, the CPU tests on that build), then the README's
# main job (tools/run-example.sh on that build).
set -u
T0=$(date +%s)
SUITE_DEADLINE_S=500 RESULTS=$PWD/results bash tools/gpu-suite.sh tests > suite.out 2>&1
echo "suite rc=$? $(( $(date +%s) - T0 )) s" >> results/extra.txt
EXAMPLE_BIN=$PWD/build-gpu/examples/fused/allgather_gemm timeout 60 bash tools/run-example.sh > results/run-example.log 2>&1
echo "run-example rc=$? $(( $(date +%s) - T0 )) s" >> results/extra.txt
cp suite.out results/
tar czf $OUT/results.tar.gz -C results .
