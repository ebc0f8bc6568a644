#!/usr/bin/env bash
# The benchmark suite on a GPU machine: tmashmem-perf and (where built) perf_nvshmem,
# under MPS, with 1, 2 and 4 PEs where it makes sense; CSVs, logs and PNG plots go to
# the results folder; a short summary is printed last.
#
#   tools/perf/run-perf.sh BUILD_DIR RESULTS_DIR
#
# BUILD_DIR holds tools/perf/tmashmem-perf (and perf_nvshmem when configured with
# TMASHMEM_NVSHMEM_HOME). Exits non-zero if any run failed (a destination check, a
# timeout, a crash).
#
# PERF_LAUNCHES (default 3): each test runs in that many separate launches (processes),
# alternating tmashmem and NVSHMEM; tools/perf/merge.py pools their repetitions into one
# row per measurement, so that the reported min/median/max covers what changes from one
# process to the next, not only between repetitions of one process. The launches' own
# rows stay in perf_*.launches.csv.
set -uo pipefail
BUILD=${1:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
RESULTS=${2:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERF_DIR="$BUILD/tools/perf"
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

# Multicast stays off here and in every child (GPU-MACHINE.md).
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# NVSHMEM: heap for the largest test; full multi-PE-per-GPU mode under MPS (its
# synchronising device calls need it); no NCCL inside NVSHMEM.
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-3G}
export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
NVSHMEM_HOME=${TMASHMEM_NVSHMEM_HOME:-$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
if [ -n "$NVSHMEM_HOME" ] && [ -d "$NVSHMEM_HOME/lib" ]; then
  export LD_LIBRARY_PATH="$NVSHMEM_HOME/lib:$LD_LIBRARY_PATH"
fi
RUN_TIMEOUT=${RUN_TIMEOUT:-150}  # seconds per mpirun; the programs' own watchdogs are shorter

MPIRUN=(mpirun --oversubscribe --bind-to none
  -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY
  -x TMASHMEM_MULTICAST -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST
  -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -x NVSHMEM_DISABLE_NCCL)

# ---- MPS: started here unless it runs already, stopped on every exit path -----------
source "$HERE/../mps.sh"
trap mps_stop EXIT
trap 'mps_stop; exit 130' INT TERM
mps_start

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  echo "NVSHMEM: ${NVSHMEM_HOME:-not found}"
  echo "MPS started here: $MPS_STARTED_HERE"
} >"$RESULTS/perf-machine.txt"

LAUNCHES=${PERF_LAUNCHES:-3}
if ! [[ "$LAUNCHES" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-perf: PERF_LAUNCHES must be a positive integer; got '$LAUNCHES'" >&2
  exit 2
fi
TM_CSV="$RESULTS/perf_tmashmem.csv"
NV_CSV="$RESULTS/perf_nvshmem.csv"
TM_RAW="$RESULTS/perf_tmashmem.launches.csv"
NV_RAW="$RESULTS/perf_nvshmem.launches.csv"
rm -f "$TM_CSV" "$NV_CSV" "$TM_RAW" "$NV_RAW"
failed=()
t_start=$(date +%s)

# run NAME NP PROGRAM ARGS...: one mpirun, its log in RESULTS/NAME.log.
run() {
  local name=$1 np=$2 prog=$3
  shift 3
  local bin="$PERF_DIR/$prog" csv="$TM_RAW"
  [ "$prog" = perf_nvshmem ] && csv="$NV_RAW"
  [ -n "${RUN_CSV:-}" ] && csv="$RUN_CSV"
  if [ ! -x "$bin" ]; then
    echo "run-perf: $prog not built; skipping $name"
    return 0
  fi
  local t0
  t0=$(date +%s)
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np "$np" "$bin" "$@" --csv "$csv" \
    >"$RESULTS/$name.log" 2>&1
  local rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' "$name" "$np" "$rc" "$(($(date +%s) - t0))"
  if [ $rc -ne 0 ]; then
    failed+=("$name (rc=$rc)")
    grep -E "FAIL|rror|did not finish|abort" "$RESULTS/$name.log" | head -5
  fi
}

# Each launch of a test runs for tmashmem and then for NVSHMEM before the next starts, so
# a run cut short still holds both sides of every test it reached; round trips first.
# both NAME NP ARGS...: `run tmashmem.NAME.lK` and `run nvshmem.NAME.lK`, K = 1..LAUNCHES.
both() {
  local name=$1 np=$2 l
  shift 2
  for ((l = 1; l <= LAUNCHES; ++l)); do
    run "tmashmem.$name.l$l" "$np" tmashmem-perf "$@"
    run "nvshmem.$name.l$l" "$np" perf_nvshmem "$@"
  done
}
# Round trips and device barriers.
# Repetitions (perf_driver.cuh): ping-pong 16 = every flag slot; bandwidth and the tile
# message rate 8 = every buffer slot twice (the other message-rate kernels cycle through
# their whole region instead).
both pingpong.np2 2 pingpong -b 8 -e 1M -f 8 -r 16
for np in 1 2 4; do
  both "barrier.np$np" "$np" barrier -r 5
done
# Bandwidth vs size at 16 SMs and all SMs; 2 PEs and 1 PE (its own heap).
both bw.np2 2 bw -b 16K -e 256M -f 4 -s 16,all -r 8
both bw.np1 1 bw -b 16K -e 256M -f 4 -s 16,all -r 8
# Bandwidth vs SM count at 256 MiB.
both bw_sms.np2 2 bw -b 256M -e 256M -s 1,2,4,8,16,32,64,96,all -r 3
# Small messages in one persistent kernel.
both msg.np2 2 msg -b 8 -e 4K -f 8 -s all -r 8

# A signal round trip taken apart (not plotted; docs/performance.md reads it out).
if [ -x "$PERF_DIR/tmashmem-signal-cost" ]; then
  t0=$(date +%s)
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np 2 "$PERF_DIR/tmashmem-signal-cost" \
    >"$RESULTS/signal-cost.txt" 2>&1
  rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' signal-cost 2 "$rc" "$(($(date +%s) - t0))"
  [ $rc -ne 0 ] && failed+=("signal-cost (rc=$rc)")
fi

# Shapes of the tile and bulk paths, at 256 MiB, each into its own CSV (not plotted):
# which tile size / stage depth and which issuer count / staging size move the most.
# PERF_SKIP_SHAPES=1 leaves them out (a rerun that only checks reproducibility).
if [ "${PERF_SKIP_SHAPES:-0}" != 1 ]; then
  mkdir -p "$RESULTS/tune"
  for cfg in "8 24" "16 12" "32 6" "64 3"; do
    read -r rows stages <<<"$cfg"
    RUN_CSV="$RESULTS/tune/tile_rows${rows}_stages${stages}.csv" \
      run "tune.tile_rows${rows}_stages${stages}" 2 tmashmem-perf bw -b 256M -e 256M -s 16,all -r 3 \
      -o tile_put,tile_get --tile-rows "$rows" --tile-stages "$stages"
  done
  for cfg in "1 196608" "2 98304" "4 49152" "8 24576"; do
    read -r issuers stage <<<"$cfg"
    RUN_CSV="$RESULTS/tune/nbi_issuers${issuers}_stage${stage}.csv" \
      run "tune.nbi_issuers${issuers}_stage${stage}" 2 tmashmem-perf bw -b 256M -e 256M -s 16,all \
      -r 3 -o nbi_put,nbi_get --nbi-threads "$issuers" --stage "$stage"
  done
fi

mps_stop
echo "run-perf: benchmarks took $(($(date +%s) - t_start)) s ($LAUNCHES launches per test)"
for pair in "$TM_RAW:$TM_CSV" "$NV_RAW:$NV_CSV"; do
  raw=${pair%%:*}
  [ -s "$raw" ] || continue
  python3 "$HERE/merge.py" "$raw" --out "${pair#*:}" || failed+=("merge.py $(basename "$raw")")
done
if ls "$RESULTS"/tune/*.csv >/dev/null 2>&1; then
  echo "run-perf: shapes at 256 MiB, 2 PEs (GB/s, median):"
  for f in "$RESULTS"/tune/*.csv; do
    awk -F, -v cfg="$(basename "$f" .csv)" 'NR > 1 { printf "  %-28s %-10s %3d SMs %9.1f\n", cfg, $3, $5, $14 }' "$f"
  done | tee "$RESULTS/tune/summary.txt"
fi

# ---- plots and the summary ---------------------------------------------------------------
[ -s "$RESULTS/signal-cost.txt" ] && cat "$RESULTS/signal-cost.txt"
csvs=()
[ -s "$TM_CSV" ] && csvs+=("$TM_CSV")
[ -s "$NV_CSV" ] && csvs+=("$NV_CSV")
if [ ${#csvs[@]} -gt 0 ]; then
  if python3 "$HERE/plot.py" --out "$RESULTS/plots" "${csvs[@]}" >"$RESULTS/plot.log" 2>&1; then
    cat "$RESULTS/plots/summary.txt" 2>/dev/null
  else
    failed+=("plot.py")
    tail -20 "$RESULTS/plot.log"
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "run-perf: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-perf: all runs passed their destination checks"
