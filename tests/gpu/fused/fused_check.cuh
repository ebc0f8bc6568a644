// Helpers of the fused-call tests (test_fused.cu, test_reduce_scatter.cu): guard regions,
// graph capture of one call, the reference operands regenerated from per-PE seeds, exact
// comparison of the gathered A.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gemm_reference.cuh"
#include "gpu_test_util.cuh"

namespace fused_test {

using Bf16 = __nv_bfloat16;

using gemm_ref::DeviceBuffer;

// Guard elements before and after each checked destination, and the value they hold.
constexpr int64_t kGuard = 4096;
constexpr uint16_t kSentinel = 0x5A5A;

// Captures one `call()` (a tmashmem on-stream call, returning its status) on `stream` into a
// graph and instantiates it into *exec. Returns false (after the check macros printed why) on
// any failure.
template <class Call>
bool capture(cudaStream_t stream, Call call, cudaGraphExec_t* exec) {
  cudaGraph_t g;
  bool ok = GPU_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  ok &= GPU_TEST_TM(call());
  ok &= GPU_TEST_CUDA(cudaStreamEndCapture(stream, &g));
  ok = ok && GPU_TEST_CUDA(cudaGraphInstantiate(exec, g, 0));
  if (ok) cudaGraphDestroy(g);
  return ok;
}

// One call in stream order: the captured graph if there is one, else `call()` itself.
template <class Call>
bool launch(cudaGraphExec_t exec, cudaStream_t stream, Call call) {
  return exec ? GPU_TEST_CUDA(cudaGraphLaunch(exec, stream)) : GPU_TEST_TM(call());
}

// The end of a run, on every PE (collective: frees symmetric memory): the graph, the stream,
// a barrier, then the workspace and the run's symmetric operand.
inline bool end_run(cudaGraphExec_t exec, cudaStream_t stream, void* ws, void* symmetric) {
  if (exec) cudaGraphExecDestroy(exec);
  cudaStreamDestroy(stream);
  const bool ok = gpu_test::sync_and_barrier();
  tmashmem_free(ws);
  tmashmem_free(symmetric);
  return ok;
}

// Sums one round's comparison counts of C into the run's totals.
struct CheckTotals {
  unsigned long long wrong = 0, guards = 0;
  float worst = 0;  // largest |err| / tolerance
  void add(const gemm_ref::CheckCounts& c) {
    wrong += c.wrong;
    guards += c.guards;
    float ratio;
    std::memcpy(&ratio, &c.max_ratio, 4);
    worst = std::fmax(worst, ratio);
  }
};

// m[r * ld + c] = uniform bf16 in [-1, 1) from `seed`, on `stream`.
inline cudaError_t fill(Bf16* m, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                        cudaStream_t stream) {
  gemm_ref::fill_uniform_kernel<><<<1024, 256, 0, stream>>>(m, rows, cols, ld, seed);
  return cudaGetLastError();
}

// counts[0] += elements of a[i] != b[i] (bitwise) for i < n.
template <int kUnused = 0>
__global__ void count_different_kernel(const uint16_t* a, const uint16_t* b, size_t n,
                                       unsigned long long* counts) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += a[i] != b[i];
  if (mine) atomicAdd(counts, mine);
}

// counts[0] += elements of base[0, n) that differ from `sentinel`.
template <int kUnused = 0>
__global__ void count_not_kernel(const uint16_t* base, size_t n, uint16_t sentinel,
                                 unsigned long long* counts) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += base[i] != sentinel;
  if (mine) atomicAdd(counts, mine);
}

}  // namespace fused_test
