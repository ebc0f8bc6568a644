#!/usr/bin/env bash
# The benchmark suite on a GPU machine: tmashmem-perf (collectives included) and, where
# built, its NVSHMEM twin perf_nvshmem, under MPS, with 1, 2 and 4 PEs where it makes sense;
# CSVs, logs (each starting with the command line) and plots go to RESULTS_DIR, the machine
# to RESULTS_DIR/perf-machine.txt.
#
#   tools/perf/run-perf.sh BUILD_DIR RESULTS_DIR
#
# PERF_LAUNCHES (default 3): each test runs in that many processes, alternating tmashmem and
# NVSHMEM; `perf.py merge` pools their repetitions into one row per measurement, so that a
# row's spread covers what changes from one process to the next. The launches' own rows stay
# in perf_*.launches.csv. PERF_SET: full (default), quick (only the rows a change is first
# checked on: tile and block put/get with their plain-copy and copy-engine references,
# ping-pong, message rate and latency, 2 PEs), or a list of the groups below ("mcast coll");
# PERF_SKIP_SHAPES=1 leaves out the tile/bulk shape sweeps. Exits non-zero if any run failed
# (a destination check, a timeout, a crash).
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
SET=${PERF_SET:-full}
if ! [[ "$LAUNCHES" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-perf: PERF_LAUNCHES must be a positive integer; got '$LAUNCHES'" >&2
  exit 2
fi
rm -f "$RESULTS"/perf_*.csv
failed=()
t_start=$(date +%s)

# run NAME NP PROGRAM ARGS...: one mpirun, its log in RESULTS/NAME.log; tmashmem-perf and
# perf_nvshmem append their rows to $RUN_CSV or perf_<runtime>.launches.csv.
run() {
  local name=$1 np=$2 prog=$3 t0=$(date +%s) rc csv=() bin=$PERF_DIR/$3
  shift 3
  case $prog in
    tmashmem-perf) csv=(--csv "${RUN_CSV:-$RESULTS/perf_tmashmem.launches.csv}") ;;
    perf_nvshmem) csv=(--csv "${RUN_CSV:-$RESULTS/perf_nvshmem.launches.csv}") ;;
  esac
  if [ ! -x "$bin" ]; then
    echo "run-perf: $prog not built; skipping $name"
    return 0
  fi
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np "$np" "$bin" "$@" "${csv[@]}" \
    >"$RESULTS/$name.log" 2>&1
  rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' "$name" "$np" "$rc" "$(($(date +%s) - t0))"
  if [ $rc -ne 0 ]; then
    failed+=("$name (rc=$rc)")
    grep -E "FAIL|rror|did not finish|abort" "$RESULTS/$name.log" | head -5
  fi
}
# both NAME NP TMASHMEM_PROGRAM NVSHMEM_PROGRAM ARGS...: launch K of tmashmem then of
# NVSHMEM, K = 1..LAUNCHES, so that a run cut short holds both sides of every test it reached.
both() {
  local name=$1 np=$2 tm=$3 nv=$4 l
  shift 4
  for ((l = 1; l <= LAUNCHES; ++l)); do
    [ -n "$tm" ] && run "tmashmem.$name.l$l" "$np" "$tm" "$@"
    [ -n "$nv" ] && run "nvshmem.$name.l$l" "$np" "$nv" "$@"
  done
}
# The groups of tests a set runs, in this order (PERF_SET: full, quick, or a list of groups).
known="pingpong barrier bw bw_np1 bw_sms msg mcast coll shapes"
case $SET in
  full) groups=$known ;;
  quick) groups="pingpong bw bw_sms msg" ;;
  *) groups=$SET ;;
esac
for g in $groups; do
  if [[ " $known " != *" $g "* ]]; then
    echo "run-perf: PERF_SET has an unknown group '$g'; pass full, quick, or groups of: $known" >&2
    exit 2
  fi
done
[ "${PERF_SKIP_SHAPES:-0}" = 1 ] && groups=${groups/shapes/}
has() { [[ " $groups " == *" $1 "* ]]; }
# The quick set: the rows a change is first checked on, with their references, at 2 PEs.
ops=() sm_sweep=1,2,4,8,16,32,64,96,all
[ "$SET" = quick ] && ops=(-o tile_put,tile_get,block_put,block_get,smcopy_put,smcopy_get,memcpy_put,memcpy_get) sm_sweep=32,64,96
# Repetitions: ping-pong 16 = every flag slot; bandwidth and the tile message rate 8 = every
# buffer slot twice (tools/perf/harness.cuh: buffer slots; harness_cuda.cuh: flag slots).
has pingpong && both pingpong.np2 2 tmashmem-perf perf_nvshmem pingpong -b 8 -e 1M -f 8 -r 16
for np in 1 2 4; do has barrier && both "barrier.np$np" "$np" tmashmem-perf perf_nvshmem barrier -r 5; done
has bw && both bw.np2 2 tmashmem-perf perf_nvshmem bw -b 16K -e 256M -f 4 -s 16,all -r 8 "${ops[@]}"
has bw_np1 && both bw.np1 1 tmashmem-perf perf_nvshmem bw -b 16K -e 256M -f 4 -s 16,all -r 8
has bw_sms && both bw_sms.np2 2 tmashmem-perf perf_nvshmem bw -b 256M -e 256M -s $sm_sweep -r 3 "${ops[@]}"
has msg && both msg.np2 2 tmashmem-perf perf_nvshmem msg -b 8 -e 4K -f 8 -s all -r 8
# multicast_store's fan-out beside a put and a store per PE (tmashmem only).
for np in 2 4; do has mcast && both "mcast.np$np" "$np" tmashmem-perf "" mcast -b 16K -e 256M -f 4 -s 16,all -r 8; done
# Collectives, nccl-tests style, 4 KiB to 256 MiB, beside NVSHMEM's on-stream ones, one sample
# (-r 1) per launch; from 8 MiB 5 calls each (NVSHMEM's all-reduce of 256 MiB: ~0.2 s a call).
for np in ${PERF_COLL_NP:-2 4}; do  # PERF_COLL_NP=2: 2 PEs only
  has coll || break
  both "coll.np$np" "$np" tmashmem-perf perf_nvshmem coll -b 4K -e 4M -f 2 -n 20 -w 5 -r 1
  # The floors (launch, handshake) belong to the small run; -o leaves them out here.
  big=(coll -b 8M -f 2 -n 5 -w 2 -r 1 -o allreduce,allgather,reducescatter,alltoall,broadcast)
  both "coll_big.np$np" "$np" tmashmem-perf "" "${big[@]}" -e 256M
  # NVSHMEM 3.4.5's on-stream reduce-scatter of 128 MiB failed (unspecified launch failure,
  # 2 PEs under MPS): its rows stop at 64 MiB.
  both "coll_big.np$np" "$np" "" perf_nvshmem "${big[@]}" -e 64M
done
# Shapes of the tile and bulk paths at 256 MiB, each into its own CSV (not plotted).
for cfg in "tile 0 -" "tile 8 -" "tile 16 -" "tile 32 -" "nbi 1 196608" "nbi 2 98304" "nbi 4 49152" "nbi 8 24576"; do
  has shapes || break
  mkdir -p "$RESULTS/tune"
  read -r kind a b <<<"$cfg"
  if [ "$kind" = tile ]; then
    name=tile_rows$a args=(-o tile_put,tile_get --tile-rows "$a")
  else
    name=nbi_issuers${a}_stage$b args=(-o nbi_put,nbi_get --nbi-threads "$a" --stage "$b")
  fi
  RUN_CSV=$RESULTS/tune/$name.csv run "tune.$name" 2 tmashmem-perf bw -b 256M -e 256M -s 16,all -r 3 "${args[@]}"
done
mps_stop
echo "run-perf: benchmarks took $(($(date +%s) - t_start)) s ($LAUNCHES launches per test, set $SET)"
for raw in "$RESULTS"/perf_*.launches.csv; do
  [ -s "$raw" ] || continue
  python3 "$HERE/perf.py" merge "$raw" --out "${raw%.launches.csv}.csv" || failed+=("perf.py merge $raw")
done
if ls "$RESULTS"/tune/*.csv >/dev/null 2>&1; then
  echo "run-perf: shapes at 256 MiB, 2 PEs (GB/s, median):"
  for f in "$RESULTS"/tune/*.csv; do
    awk -F, -v cfg="$(basename "$f" .csv)" 'NR > 1 { printf "  %-28s %-10s %3d SMs %9.1f\n", cfg, $3, $5, $14 }' "$f"
  done | tee "$RESULTS/tune/summary.txt"
fi
merged=$(ls "$RESULTS"/perf_*.csv 2>/dev/null | grep -v '\.launches\.csv$')
if python3 "$HERE/perf.py" plot $merged --out "$RESULTS/plots" >"$RESULTS/plot.log" 2>&1; then
  cat "$RESULTS/plots/summary.txt" 2>/dev/null
else
  failed+=("perf.py plot")
  tail -20 "$RESULTS/plot.log"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-perf: FAILED: ${failed[*]}"
  exit 1
fi
echo "run-perf: all runs passed their destination checks"
