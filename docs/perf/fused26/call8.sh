#!/usr/bin/env bash
# Twenty-sixth session, call 8 (the same machine start as call 7, typed as one command there):
# the benchmark's default shapes (all-gather and reduce-scatter), T (one SM less, fixed), Q with
# one SM less and Q with the whole share, one after another, at 4 and then 2 PEs.
#   bash docs/perf/fused26/call8.sh build-f26t build-f26q
set -u
T=$(cd "$1" && pwd); Q=$(cd "$2" && pwd)
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FUSED_BENCH_ROUNDS=1
source tools/mps.sh
mps_start
mkdir -p /tmp/c8
for np in 4 2; do
  for v in T:1 Q:1 Q:0; do
    d=${v%%:*}; s=${v##*:}; dir=$T; [ $d = Q ] && dir=$Q
    LD_LIBRARY_PATH=$dir FUSED_SPARE_SMS=$s timeout 60 mpiexec --allow-run-as-root --oversubscribe \
      --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS \
      -np $np $dir/tmashmem-fused-bench 20 4 > /tmp/c8/$d$s.np$np.log 2>&1
    echo "=== $d$s np$np exit $?"
    grep "^csv," /tmp/c8/$d$s.np$np.log | grep -v "copy SMs" | cut -d, -f2-
  done
done
mps_stop
tar czf "${OUT:-$PWD}/call8.tgz" -C /tmp c8
