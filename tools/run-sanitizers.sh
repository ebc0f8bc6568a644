#!/usr/bin/env bash
# The CPU tests again, in a separate build with AddressSanitizer and UndefinedBehaviorSanitizer
# (gcc, CUDA code off: the host runtime on the emulated driver, as in run-tests.sh).
# Leaks are checked; tests/sanitizers/lsan.supp names the only allocations ignored (Open
# MPI's, kept until exit by design). install_consumer is left out: it links the library into
# a program built without the sanitizer runtime, which ASan refuses by design.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-asan}
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTMASHMEM_BUILD_CUDA=OFF \
  -DTMASHMEM_WERROR=ON -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
# fast_unwind_on_malloc=0: full stacks, so that the suppressions see Open MPI's frames.
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0
export LSAN_OPTIONS=suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
source "$ROOT/tools/gpu-env.sh"
cd "$BUILD_DIR"
echo "run-sanitizers: CPU tests under ASan + UBSan"
ctest --output-on-failure -LE gpu -E '^install_consumer$' -j "${CTEST_JOBS:-2}"
