#!/usr/bin/env bash
# The benchmark suite on a GPU machine: tmashmem-perf and (where built) perf_nvshmem under
# MPS, with 1, 2 and 4 PEs where it makes sense; CSVs, logs (each starting with the command
# line) and plots go to RESULTS_DIR, the machine to RESULTS_DIR/perf-machine.txt.
#
#   tools/perf/run-perf.sh BUILD_DIR RESULTS_DIR
#
# PERF_LAUNCHES (default 3): each test runs in that many processes, alternating tmashmem and
# NVSHMEM; `perf.py merge` pools their repetitions into one row per measurement, so that a
# row's spread covers what changes from one process to the next. The launches' own rows stay
# in perf_*.launches.csv. PERF_SKIP_SHAPES=1 leaves out the tile/bulk shape sweeps. Exits
# non-zero if any run failed (a destination check, a timeout, a crash).
set -uo pipefail
BUILD=${1:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
RESULTS=${2:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERF_DIR="$BUILD/tools/perf"
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

# Multicast stays off here and in every child (docs/design.md, decision 7).
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# NVSHMEM: heap for the largest test; full multi-PE-per-GPU mode under MPS (its
# synchronising device calls need it); no NCCL inside NVSHMEM.
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-3G}
export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
NVSHMEM_HOME=${TMASHMEM_NVSHMEM_HOME:-$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)}
[ -d "${NVSHMEM_HOME:-}/lib" ] && export LD_LIBRARY_PATH="$NVSHMEM_HOME/lib:${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-150}  # seconds per mpirun; the programs' own watchdogs are shorter
MPIRUN=(mpirun --oversubscribe --bind-to none)
for v in LD_LIBRARY_PATH CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY TMASHMEM_MULTICAST NCCL_NVLS_ENABLE \
  NVSHMEM_DISABLE_NVLS TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_SYMMETRIC_SIZE \
  NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE NVSHMEM_DISABLE_NCCL; do MPIRUN+=(-x "$v"); done

source "$HERE/../mps.sh"  # MPS: started here unless it runs already, stopped on every exit
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
rm -f "$RESULTS"/perf_tmashmem*.csv "$RESULTS"/perf_nvshmem*.csv
failed=()
t_start=$(date +%s)

# run NAME NP PROGRAM ARGS...: one mpirun, its log in RESULTS/NAME.log, its rows appended to
# $RUN_CSV or perf_<runtime>.launches.csv.
run() {
  local name=$1 np=$2 prog=$3 csv="$RESULTS/perf_tmashmem.launches.csv" t0=$(date +%s) rc
  shift 3
  [ "$prog" = perf_nvshmem ] && csv="$RESULTS/perf_nvshmem.launches.csv"
  if [ ! -x "$PERF_DIR/$prog" ]; then
    echo "run-perf: $prog not built; skipping $name"
    return 0
  fi
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np "$np" "$PERF_DIR/$prog" "$@" ${RUN_CSV:---csv "$csv"} \
    >"$RESULTS/$name.log" 2>&1
  rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' "$name" "$np" "$rc" "$(($(date +%s) - t0))"
  if [ $rc -ne 0 ]; then
    failed+=("$name (rc=$rc)")
    grep -E "FAIL|rror|did not finish|abort" "$RESULTS/$name.log" | head -5
  fi
}
# both NAME NP ARGS...: launch K of tmashmem then of NVSHMEM, K = 1..LAUNCHES, so that a run
# cut short holds both sides of every test it reached.
both() {
  local name=$1 np=$2 l
  shift 2
  for ((l = 1; l <= LAUNCHES; ++l)); do
    run "tmashmem.$name.l$l" "$np" tmashmem-perf "$@"
    run "nvshmem.$name.l$l" "$np" perf_nvshmem "$@"
  done
}
# Repetitions: ping-pong 16 = every flag slot; bandwidth and the tile message rate 8 = every
# buffer slot twice (perf_driver.cuh).
both pingpong.np2 2 pingpong -b 8 -e 1M -f 8 -r 16
for np in 1 2 4; do both "barrier.np$np" "$np" barrier -r 5; done
both bw.np2 2 bw -b 16K -e 256M -f 4 -s 16,all -r 8
both bw.np1 1 bw -b 16K -e 256M -f 4 -s 16,all -r 8
both bw_sms.np2 2 bw -b 256M -e 256M -s 1,2,4,8,16,32,64,96,all -r 3
both msg.np2 2 msg -b 8 -e 4K -f 8 -s all -r 8

# A signal round trip taken apart (not plotted; docs/performance.md reads it out).
if [ -x "$PERF_DIR/tmashmem-signal-cost" ]; then
  t0=$(date +%s)
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np 2 "$PERF_DIR/tmashmem-signal-cost" >"$RESULTS/signal-cost.txt" 2>&1
  rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' signal-cost 2 "$rc" "$(($(date +%s) - t0))"
  [ $rc -ne 0 ] && failed+=("signal-cost (rc=$rc)")
fi
# Shapes of the tile and bulk paths at 256 MiB, each into its own CSV (not plotted).
if [ "${PERF_SKIP_SHAPES:-0}" != 1 ]; then
  mkdir -p "$RESULTS/tune"
  shape() {  # shape NAME OPS ARGS...
    local name=$1 ops=$2
    shift 2
    RUN_CSV="--csv $RESULTS/tune/$name.csv" run "tune.$name" 2 tmashmem-perf bw -b 256M -e 256M -s 16,all -r 3 -o "$ops" "$@"
  }
  for cfg in "8 24" "16 12" "32 6" "64 3"; do
    read -r rows stages <<<"$cfg"
    shape "tile_rows${rows}_stages${stages}" tile_put,tile_get --tile-rows "$rows" --tile-stages "$stages"
  done
  for cfg in "1 196608" "2 98304" "4 49152" "8 24576"; do
    read -r issuers stage <<<"$cfg"
    shape "nbi_issuers${issuers}_stage${stage}" nbi_put,nbi_get --nbi-threads "$issuers" --stage "$stage"
  done
fi
mps_stop
echo "run-perf: benchmarks took $(($(date +%s) - t_start)) s ($LAUNCHES launches per test)"
for rt in tmashmem nvshmem; do
  raw="$RESULTS/perf_$rt.launches.csv"
  [ -s "$raw" ] || continue
  python3 "$HERE/perf.py" merge "$raw" --out "$RESULTS/perf_$rt.csv" || failed+=("perf.py merge $rt")
done
if ls "$RESULTS"/tune/*.csv >/dev/null 2>&1; then
  echo "run-perf: shapes at 256 MiB, 2 PEs (GB/s, median):"
  for f in "$RESULTS"/tune/*.csv; do
    awk -F, -v cfg="$(basename "$f" .csv)" 'NR > 1 { printf "  %-28s %-10s %3d SMs %9.1f\n", cfg, $3, $5, $14 }' "$f"
  done | tee "$RESULTS/tune/summary.txt"
fi
[ -s "$RESULTS/signal-cost.txt" ] && cat "$RESULTS/signal-cost.txt"
csvs=("$RESULTS"/perf_tmashmem.csv "$RESULTS"/perf_nvshmem.csv)
if python3 "$HERE/plot.py" --out "$RESULTS/plots" "${csvs[@]}" >"$RESULTS/plot.log" 2>&1; then
  cat "$RESULTS/plots/summary.txt" 2>/dev/null
else
  failed+=("plot.py")
  tail -20 "$RESULTS/plot.log"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-perf: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-perf: all runs passed their destination checks"
