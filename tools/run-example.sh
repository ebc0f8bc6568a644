#!/usr/bin/env bash
# The main job: set up, build, and run examples/fused/allgather_gemm (the all-gather GEMM in
# one kernel, beside the unfused sequence and the GEMM alone) with 2 PEs: one per GPU where
# there are 2 or more, else both on the one GPU under CUDA MPS (tools/mps.sh). The example
# checks its result and prints a table of times. Without a GPU it says so and exits 2.
#   EXAMPLE_BIN=path: run that binary instead of building (a prebuilt tree)
#   EXAMPLE_ARGS="m_shard N K": the shape (default 4096 3584 8192 per PE)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
export BUILD_DIR
if [ -z "${EXAMPLE_BIN:-}" ]; then
  bash "$ROOT/tools/setup.sh"
  EXAMPLE_BIN=$BUILD_DIR/examples/fused/allgather_gemm
fi
if ! gpus=$(bash "$ROOT/tools/has-gpu.sh"); then
  echo "run-example: no CUDA device on this machine (nvidia-smi lists none); the example needs a GPU."
  exit 2
fi
np=2
if [ "$gpus" -ge 2 ]; then
  echo "run-example: $gpus GPUs; mpirun -np $np allgather_gemm, one PE per GPU"
else
  echo "run-example: 1 GPU; mpirun -np $np allgather_gemm, both PEs on it under MPS"
  # shellcheck source=tools/mps.sh
  source "$ROOT/tools/mps.sh"
  mps_start
  trap mps_stop EXIT
fi
source "$ROOT/tools/gpu-env.sh"
# shellcheck disable=SC2086
mpirun --oversubscribe --bind-to none -np "$np" $TMASHMEM_MPI_ENV -x LD_LIBRARY_PATH \
  "$EXAMPLE_BIN" ${EXAMPLE_ARGS:-}
