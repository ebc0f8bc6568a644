#!/usr/bin/env bash
# Set up, build, and run the tests: the CPU tests always (the whole host runtime
# on the emulated driver, under mpiexec -np 1/2/4); the GPU tests too when a CUDA
# device is present, otherwise it says plainly that they were skipped.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
export BUILD_DIR
bash "$ROOT/tools/setup.sh"
# Multicast stays off wherever these tests run.
source "$ROOT/tools/gpu-env.sh"
cd "$BUILD_DIR"
if gpus=$(bash "$ROOT/tools/has-gpu.sh"); then
  echo "run-tests: $gpus GPU(s) found: running CPU and GPU tests (under MPS: tools/mps.sh)"
  source "$ROOT/tools/mps.sh"
  mps_start
  trap mps_stop EXIT
  ctest --output-on-failure -j "${CTEST_JOBS:-1}"
else
  echo "run-tests: no CUDA device: running the CPU tests only"
  ctest --output-on-failure -LE gpu -j "${CTEST_JOBS:-2}"
  echo "run-tests: GPU tests SKIPPED (no CUDA device on this machine): $(ctest -N -L gpu | tail -1)"
fi
