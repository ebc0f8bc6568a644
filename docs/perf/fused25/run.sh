#!/usr/bin/env bash
# Twenty-fifth session: do the slow rounds of the fused kernels at 4 PEs on one GPU come from
# a CTA that finds no free SM at launch? Each PE's fused grid takes exactly its share of the
# SMs (132 / 4 = 33 CTAs of one SM each), so one SM held by anything else leaves one CTA
# waiting, and the others wait for its copy pieces. FUSED_SPARE_SMS=n (spare_sms.patch) leaves
# n SMs of each PE's share idle. One device call, binaries built here with the patch and
# carried in build-f25c (tmashmem-fused-bench, libtmashmem.so*):
#   bash docs/perf/fused25/run.sh build-f25c             (first call: SPARES="0 1", NP2=1)
#   SPARES="1 2" NP2=0 bash docs/perf/fused25/run.sh build-f25c   (third call)
#   SPARES="0 1" NP2=0 AG="4608 2816 8192 8192 6144 8192" RS="4608 2816 4096" \
#     bash docs/perf/fused25/run.sh build-f25c      (fourth call: 396 tiles, a multiple of 33)
# The logs go into one archive, $OUT/run.tgz (the device returns at most 8 files).
set -u
BIN=$(cd "${1:-build-f25c}" && pwd)
FINAL=${OUT:-$PWD/fused25-out}
OUT=/tmp/fused25-run
SPARES=${SPARES:-0 1}
AG=${AG:-8192 6144 8192 8192 3584 8192}
RS=${RS:-8192 8192 3584 512 8192 8192}
mkdir -p "$OUT" "$FINAL"
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FUSED_BENCH_ROUNDS=1
MPI="mpiexec --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH -x FUSED_BENCH_ROUNDS -x FUSED_SPARE_SMS"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
source tools/mps.sh
mps_start
START=$(date +%s)
run() {  # name, np, args...
  local name=$1 np=$2
  shift 2
  local t0=$(date +%s)
  timeout 120 $MPI -np "$np" "$BIN/tmashmem-fused-bench" "$@" > "$OUT/$name.log" 2>&1
  echo "=== $name exit $?, $(( $(date +%s) - t0 )) s (at $(( $(date +%s) - START )) s)"
  grep -E "^  (fused|gemm|unfused)" "$OUT/$name.log" | head -24
}
for pass in 1 2; do
  for spare in $SPARES; do
    export FUSED_SPARE_SMS=$spare
    run "ag.np4.spare$spare.$pass" 4 20 2 $AG
    run "rs.np4.spare$spare.$pass" 4 20 2 rs $RS
  done
done
if [ "${NP2:-1}" = 1 ]; then
  for spare in $SPARES; do
    export FUSED_SPARE_SMS=$spare
    run "ag.np2.spare$spare" 2 20 2 $AG
  done
fi
mps_stop
tar czf "$FINAL/run.tgz" -C /tmp fused25-run
