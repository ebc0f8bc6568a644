// Host helpers shared by the fused examples (allgather_gemm.cu, gemm_reduce_scatter.cu) and the
// fused benchmark (tools/perf/fused/fused_bench.cu): checks that stop the program with a
// message naming the PE, the start (MPI, the "no CUDA device" exit, init), the shape
// arguments, random bf16 matrices, and the median times of operations run by every PE at
// once, interleaved.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "tmashmem/tmashmem.h"

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::printf("[PE %d] %s failed: %s\n", tmashmem_my_pe(), #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define CHECK_TM(call)                                                                        \
  do {                                                                                        \
    if ((call) != TMASHMEM_SUCCESS) {                                                         \
      std::printf("[PE %d] %s failed: %s\n", tmashmem_my_pe(), #call, tmashmem_last_error()); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace fused_example {

/// The program's start on every PE: MPI, then (if there is a GPU) tmashmem_init and the PE's
/// device. False (after printing "<program>: no CUDA device" and finalising MPI) when there is
/// no GPU: the program then exits with 2.
inline bool start(int* argc, char*** argv, const char* program) {
  MPI_Init(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("%s: no CUDA device\n", program);
    MPI_Finalize();
    return false;
  }
  CHECK_TM(tmashmem_init());
  CHECK_CUDA(cudaSetDevice(tmashmem_device()));
  return true;
}

/// The three shape arguments (argv[1..3]) when all are given, else the defaults.
inline void shape_args(int argc, char** argv, int64_t* dims, int64_t d0, int64_t d1, int64_t d2) {
  const bool given = argc > 3;
  dims[0] = given ? std::atoll(argv[1]) : d0;
  dims[1] = given ? std::atoll(argv[2]) : d1;
  dims[2] = given ? std::atoll(argv[3]) : d2;
}

/// Random bf16 in [-1, 1): the same matrix on every PE for the same seed.
inline std::vector<__nv_bfloat16> random_matrix(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> v(count);
  for (__nv_bfloat16& x : v) x = __float2bfloat16(u(rng));
  return v;
}

/// One run of `op` on `stream` by every PE at once (a host barrier first), timed with the two
/// events on every PE: returns the slowest PE's milliseconds, the time the job waits for (PEs
/// sharing one GPU can run their kernels one after another); *mine: this PE's. COLLECTIVE.
template <class Op>
float timed_run_ms(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, Op op,
                   float* mine = nullptr) {
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_TM(tmashmem_barrier_all());
  CHECK_CUDA(cudaEventRecord(start, stream));
  op();
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float t = 0, slowest = 0;
  CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
  MPI_Allreduce(&t, &slowest, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  if (mine != nullptr) *mine = t;
  return slowest;
}

/// Medians of `reps` rounds in which every op of `ops` runs once (timed_run_ms), after 3
/// warm-up rounds; the ops interleaved, so that clocks, which fall as the card heats and
/// reaches its power limit, reach them all alike. Element i is ops[i]'s. COLLECTIVE.
inline std::vector<float> interleaved_median_ms(cudaStream_t stream, int reps,
                                                const std::vector<std::function<void()>>& ops) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<std::vector<float>> ms(ops.size());
  for (int i = 0; i < reps + 3; ++i)
    for (size_t j = 0; j < ops.size(); ++j) {
      const float t = timed_run_ms(stream, start, stop, ops[j]);
      if (i >= 3) ms[j].push_back(t);
    }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::vector<float> medians;
  for (std::vector<float>& v : ms) {
    std::sort(v.begin(), v.end());
    medians.push_back(v[v.size() / 2]);
  }
  return medians;
}

}  // namespace fused_example
