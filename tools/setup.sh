#!/usr/bin/env bash
# Installs what the build needs where it is missing (Debian/Ubuntu, as root) and
# configures + builds into ${BUILD_DIR:-build}. Sourced by run-example.sh and
# run-tests.sh; safe to run again.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v mpicc >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v python3 >/dev/null || need+=(python3)  # the perf scripts' test
# CI's fuzzers (tools/run-fuzzers.sh) need clang with libFuzzer.
[ "${TMASHMEM_SETUP_CLANG:-${CI:-}}" ] && { command -v clang++ >/dev/null || need+=(clang); }
[ -e /usr/include/catch2/catch.hpp ] || [ -e /usr/include/catch2/catch_all.hpp ] ||
  [ -e /usr/local/include/catch2/catch_all.hpp ] || need+=(catch2)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
    exit 1
  fi
fi

# nvcc: the CUDA toolkit's usual places, then PATH.
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null || { echo "setup: nvcc not found (install the CUDA toolkit 12.4+)" >&2; exit 1; }

cmake_args=(-S "$ROOT" -B "$BUILD_DIR" -DTMASHMEM_WERROR="${TMASHMEM_WERROR:-ON}")
command -v ninja >/dev/null && [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && cmake_args+=(-G Ninja)
[ -n "${TMASHMEM_NVSHMEM_HOME:-}" ] && cmake_args+=(-DTMASHMEM_NVSHMEM_HOME="$TMASHMEM_NVSHMEM_HOME")
cmake "${cmake_args[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
