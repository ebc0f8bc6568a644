// The collectives tests' failure record: a check kernel keeps the first wrong element it
// saw (round, step, index, expected, seen) on the GPU; the host prints it naming the PE.
// Shared by test_collectives_stress.cu and test_collectives_device.cu; the step numbers
// are those of kStepNames.
#pragma once

#include <cstdint>
#include <cstdio>

#include "gpu_test_util.cuh"

namespace coll_test {

using tmashmem_test::mpi_rank;

// The first wrong element seen by a check kernel.
struct Failure {
  unsigned long long count;
  unsigned long long round, step, index, expected, seen;
};

__device__ inline void record(Failure* f, uint64_t round, int step, uint64_t index,
                              uint64_t expected, uint64_t seen) {
  if (atomicAdd(&f->count, 1ull) == 0) {
    f->round = round;
    f->step = static_cast<unsigned long long>(step);
    f->index = index;
    f->expected = expected;
    f->seen = seen;
  }
}

// What a Failure's step number names.
inline const char* const kStepNames[] = {
    "allreduce i32 sum",          "allgather bytes", "alltoall bytes", "device allgather_block",
    "device allreduce_block max", "tile all-gather", "tile reduce",    "low-latency all-gather"};

inline const char* step_name(unsigned long long step) {
  return step < sizeof kStepNames / sizeof kStepNames[0] ? kStepNames[step] : "?";
}

inline bool report(const Failure& f, const char* what) {
  if (f.count == 0) return true;
  std::printf(
      "[PE %d] %s: %llu wrong elements; first in round %llu, %s, index %llu: expected %llu, "
      "seen %llu\n",
      mpi_rank(), what, f.count, f.round, step_name(f.step), f.index, f.expected, f.seen);
  return false;
}

// Launches a checking kernel with `launch(failure)` (a zeroed device Failure it fills),
// waits for it and reports what it found as `what`.
template <class Launch>
bool run_checked_kernel(const char* what, Launch launch) {
  Failure* failure = nullptr;
  bool ok = GPU_TEST_CUDA(cudaMalloc(&failure, sizeof(Failure)));
  ok = ok && GPU_TEST_CUDA(cudaMemset(failure, 0, sizeof(Failure)));
  if (!ok) return false;
  launch(failure);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());
  Failure f{};
  ok &= GPU_TEST_CUDA(cudaMemcpy(&f, failure, sizeof f, cudaMemcpyDeviceToHost));
  ok &= report(f, what);
  cudaFree(failure);
  return ok;
}

}  // namespace coll_test
