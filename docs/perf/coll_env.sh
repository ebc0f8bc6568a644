# Sourced by the collectives' evidence scripts (docs/perf/refresh13/run.sh, docs/perf/ll14/run.sh)
# from the repository root, after their build into $B: multicast off (docs/design.md, decision 7),
# MPI as root, NVSHMEM's heap and MPS settings, MPS started, and
#   run NAME NP PROGRAM ARGS...   one mpirun of $B/tools/perf/PROGRAM (bounded by RUN_TIMEOUT,
#                                 150 s), its rows into $OUT/r/NAME.csv, its log $OUT/r/NAME.log
# NV, where set, is NVSHMEM's directory (its lib/ goes first on LD_LIBRARY_PATH).
# The scripts stop MPS themselves (mps_stop). Of the variables listed below, those set when this
# file is sourced are forwarded to every rank.
export LD_LIBRARY_PATH=${NV:+$NV/lib:}${LD_LIBRARY_PATH:-}
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export NVSHMEM_SYMMETRIC_SIZE=3G NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_DISABLE_NCCL=1
source tools/mps.sh
mps_start
M="mpirun --oversubscribe --bind-to none"
for v in LD_LIBRARY_PATH CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY TMASHMEM_MULTICAST NCCL_NVLS_ENABLE \
  NVSHMEM_DISABLE_NVLS TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_SYMMETRIC_SIZE TMASHMEM_COLL_LL_BYTES TMASHMEM_COLL_PDL \
  NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE NVSHMEM_DISABLE_NCCL; do
  [ -n "${!v+set}" ] && M="$M -x $v"
done
run() {
  local n=$1 np=$2 p=$3 s=$SECONDS
  shift 3
  timeout "${RUN_TIMEOUT:-150}" $M -np $np $B/tools/perf/$p "$@" --csv $OUT/r/$n.csv >$OUT/r/$n.log 2>&1
  echo "$n rc=$? $((SECONDS - s)) s"
}
