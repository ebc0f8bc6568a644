// Helpers of the fused-call tests (test_fused.cu): device buffers with guard regions, the
// reference operands regenerated from per-PE seeds, exact comparison of the gathered A.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm_reference.cuh"

namespace fused_test {

using Bf16 = __nv_bfloat16;

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t count) {
    if (cudaMalloc(&p, count * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
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
