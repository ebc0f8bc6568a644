#!/usr/bin/env bash
# The benchmark suite on a GPU machine, under MPS: tmashmem-perf and, where built, its NVSHMEM twin
# perf_nvshmem, at 1, 2 and 4 PEs where it makes sense. Into RESULTS_DIR: the CSVs, a log per run
# (its command line first), plots/ and perf-machine.txt.
#   tools/perf/run-perf.sh BUILD_DIR RESULTS_DIR
# PERF_LAUNCHES (3): each test runs in that many processes, tmashmem and NVSHMEM in turn; `perf.py
# merge` pools their rows (perf_<runtime>.launches.csv) into perf_<runtime>.csv, so that a row's
# spread covers what changes from one process to the next. PERF_SET: full (default), quick (tile and
# block put/get with their plain-copy and copy-engine references, ping-pong, message rate and
# latency, 2 PEs) or a list of the groups below ("mcast coll"); PERF_SKIP_SHAPES=1 leaves out the
# tile/bulk shape sweeps. Exits 1 if any run failed (a destination check, a timeout, a crash).
# shellcheck disable=SC2054  # the commas are the programs' lists (-o a,b), not array separators
set -uo pipefail
BUILD=${1:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
RESULTS=${2:?usage: run-perf.sh BUILD_DIR RESULTS_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
# Multicast stays off here and in every child.
source "$HERE/../gpu-env.sh"
# NVSHMEM: heap for the largest test; full multi-PE-per-GPU mode under MPS (its synchronising device
# calls need it); no NCCL inside NVSHMEM.
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-3G}
export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
NVSHMEM_HOME=${TMASHMEM_NVSHMEM_HOME:-$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem \
  2>/dev/null | head -1)}
[ -n "${NVSHMEM_HOME:-}" ] && [ -d "$NVSHMEM_HOME/lib" ] && export LD_LIBRARY_PATH="$NVSHMEM_HOME/lib:${LD_LIBRARY_PATH:-}"
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
die() {
  echo "run-perf: $*" >&2
  exit 2
}
LAUNCHES=${PERF_LAUNCHES:-3} SET=${PERF_SET:-full}
[[ "$LAUNCHES" =~ ^[1-9][0-9]*$ ]] || die "PERF_LAUNCHES must be a positive integer; got '$LAUNCHES'"
# The groups of tests a set runs, in this order: a named set's, else the list itself.
known="pingpong barrier bw bw_np1 bw_sms msg mcast coll shapes"
declare -A SETS=([full]=$known [quick]="pingpong bw bw_sms msg")
groups=${SETS[$SET]:-$SET}
for g in $groups; do
  [[ " $known " == *" $g "* ]] || die "PERF_SET has an unknown group '$g'; pass full, quick, or groups of:" \
    "$known"
done
[ "${PERF_SKIP_SHAPES:-0}" = 1 ] && groups=${groups/shapes/}
has() { [[ " $groups " == *" $1 "* ]]; }
rm -f "$RESULTS"/perf_*.csv
failed=()
t_start=$(date +%s)
# run NAME NP RUNTIME ARGS...: one mpirun of the runtime's program, its log in RESULTS/NAME.log,
# its rows appended to $RUN_CSV or perf_<runtime>.launches.csv.
declare -A PROGRAM=([tmashmem]=tmashmem-perf [nvshmem]=perf_nvshmem)
run() {
  local name=$1 np=$2 rt=$3 bin=$BUILD/tools/perf/${PROGRAM[$3]} t0 rc
  shift 3
  if [ ! -x "$bin" ]; then
    echo "run-perf: ${PROGRAM[$rt]} not built; skipping $name"
    return 0
  fi
  t0=$(date +%s)
  timeout -k 10 "$RUN_TIMEOUT" "${MPIRUN[@]}" -np "$np" "$bin" "$@" \
    --csv "${RUN_CSV:-$RESULTS/perf_$rt.launches.csv}" >"$RESULTS/$name.log" 2>&1
  rc=$?
  printf 'run-perf: %-28s np=%d rc=%d %3ds\n' "$name" "$np" "$rc" "$(($(date +%s) - t0))"
  [ $rc -eq 0 ] && return 0
  failed+=("$name (rc=$rc)")
  grep -E "FAIL|rror|did not finish|abort" "$RESULTS/$name.log" | head -5
}
# launches NAME NP RUNTIMES ARGS...: launch l of each runtime in turn, l = 1..LAUNCHES, so that a
# run cut short holds both sides of every test it reached.
launches() {
  local name=$1 np=$2 runtimes=$3 l rt
  shift 3
  for ((l = 1; l <= LAUNCHES; ++l)); do
    for rt in $runtimes; do run "$rt.$name.l$l" "$np" "$rt" "$@"; done
  done
}
both="tmashmem nvshmem"
# The quick set: the rows a change is first checked on, with their references, at 2 PEs.
ops=() sm_sweep=1,2,4,8,16,32,64,96,all
if [ "$SET" = quick ]; then
  ops=(-o tile_put,tile_get,tile_resident_put,block_put,block_get,smcopy_put,smcopy_get,memcpy_put,memcpy_get)
  sm_sweep=32,64,96
fi
# Repetitions: ping-pong 16 = every flag slot; bandwidth and the tile message rate 8 = every
# buffer slot twice (tools/perf/harness.cuh: buffer slots; perf_sync.cuh: flag slots).
sizes=(-b 16K -e 256M -f 4 -s 16,all -r 8)
has pingpong && launches pingpong.np2 2 "$both" pingpong -b 8 -e 1M -f 8 -r 16
for np in 1 2 4; do has barrier && launches "barrier.np$np" "$np" "$both" barrier -r 5; done
has bw && launches bw.np2 2 "$both" bw "${sizes[@]}" "${ops[@]}"
has bw_np1 && launches bw.np1 1 "$both" bw "${sizes[@]}"
has bw_sms && launches bw_sms.np2 2 "$both" bw -b 256M -e 256M -s "$sm_sweep" -r 3 "${ops[@]}"
has msg && launches msg.np2 2 "$both" msg -b 8 -e 4K -f 8 -s all -r 8
# multicast_store's fan-out beside a put and a store per PE (tmashmem only).
for np in 2 4; do has mcast && launches "mcast.np$np" "$np" tmashmem mcast "${sizes[@]}"; done
# Collectives, nccl-tests style, 4 KiB to 256 MiB, beside NVSHMEM's on-stream ones, one sample
# (-r 1) per launch; from 8 MiB 5 calls each (NVSHMEM's all-reduce of 256 MiB: ~0.2 s a call).
for np in ${PERF_COLL_NP:-2 4}; do  # PERF_COLL_NP=2: 2 PEs only
  has coll || break
  launches "coll.np$np" "$np" "$both" coll -b 4K -e 4M -f 2 -n 20 -w 5 -r 1
  # The floors (launch, handshake) belong to the small run; -o leaves them out here.
  big=(coll -b 8M -f 2 -n 5 -w 2 -r 1 -o allreduce,allgather,reducescatter,alltoall,broadcast)
  launches "coll_big.np$np" "$np" tmashmem "${big[@]}" -e 256M
  # NVSHMEM 3.4.5's on-stream reduce-scatter of 128 MiB failed (unspecified launch failure,
  # 2 PEs under MPS): its rows stop at 64 MiB.
  launches "coll_big.np$np" "$np" nvshmem "${big[@]}" -e 64M
done
# Shapes of the tile and bulk paths at 256 MiB, each into tune/<shape>.csv (not plotted).
shape() { RUN_CSV=$RESULTS/tune/$1.csv run "tune.$1" 2 tmashmem bw -b 256M -e 256M -s 16,all -r 3 "${@:2}"; }
if has shapes; then
  mkdir -p "$RESULTS/tune"
  for rows in 0 8 16 32; do shape "tile_rows$rows" -o tile_put,tile_get --tile-rows "$rows"; done
  for n in 1 2 4 8; do  # the issuers share 192 KiB of staging per CTA
    shape "nbi_issuers${n}_stage$((196608 / n))" -o nbi_put,nbi_get --nbi-threads "$n" --stage $((196608 / n))
  done
fi
mps_stop
echo "run-perf: benchmarks took $(($(date +%s) - t_start)) s ($LAUNCHES launches per test, set $SET)"
for raw in "$RESULTS"/perf_*.launches.csv; do
  [ -s "$raw" ] || continue
  python3 "$HERE/perf.py" merge "$raw" --out "${raw%.launches.csv}.csv" || failed+=("perf.py merge $raw")
done
if ls "$RESULTS"/tune/*.csv >/dev/null 2>&1; then
  echo "run-perf: shapes at 256 MiB, 2 PEs (GB/s, median):"
  for f in "$RESULTS"/tune/*.csv; do
    awk -F, -v cfg="$(basename "$f" .csv)" \
      'NR > 1 { printf "  %-28s %-10s %3d SMs %9.1f\n", cfg, $3, $5, $14 }' "$f"
  done | tee "$RESULTS/tune/summary.txt"
fi
# The merged rows; perf.py plot passes over a file that is not there (a side not built).
if python3 "$HERE/perf.py" plot "$RESULTS"/perf_{nvshmem,tmashmem}.csv --out "$RESULTS/plots" \
  >"$RESULTS/plot.log" 2>&1; then
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
