#!/usr/bin/env bash
# The main job: set up, build, and run examples/ring_put under mpirun with one PE
# per GPU found. Without a GPU it says so and exits non-zero.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
export BUILD_DIR
bash "$ROOT/tools/setup.sh"
if ! gpus=$(bash "$ROOT/tools/has-gpu.sh"); then
  echo "run-example: no CUDA device on this machine (nvidia-smi lists none); the example needs a GPU."
  exit 2
fi
np=${NP:-$gpus}
echo "run-example: $gpus GPU(s); mpirun -np $np ring_put"
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  -x TMASHMEM_MULTICAST=off -x NCCL_NVLS_ENABLE=0 -x NVSHMEM_DISABLE_NVLS=1 \
  -x TORCH_SYMM_MEM_DISABLE_MULTICAST=1 "$BUILD_DIR/examples/ring_put"
