// tmashmem bandwidth kernels: one CTA per SM, each CTA moving its share of the
// buffer (perf::cta_range, the same partition the NVSHMEM baseline and the plain SM
// copy use) `iters` times over, between this PE and PE `pe`.
//
// Direction: a put copies local `src` into PE `pe`'s copy of the symmetric `dst`; a
// get copies PE `pe`'s copy of the symmetric `src` into local `dst`.
#pragma once

#include <cuda_runtime.h>

#include "tmashmem/device.cuh"
#include "tools/perf/perf_cuda.cuh"

namespace perf_tm {

using tmashmem::Ctx;

// putmem_block: every thread of the CTA copies with 16-byte stores into the peer.
static __global__ void block_put_kernel(const __grid_constant__ Ctx ctx, char* dst, const char* src,
                                        size_t bytes, int pe, long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;  // the whole CTA leaves together
  for (long it = 0; it < iters; ++it)
    tmashmem::putmem_block(ctx, dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

// getmem_block: every thread of the CTA loads from the peer with 16-byte loads.
static __global__ void block_get_kernel(const __grid_constant__ Ctx ctx, char* dst, const char* src,
                                        size_t bytes, int pe, long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  for (long it = 0; it < iters; ++it)
    tmashmem::getmem_block(ctx, dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

// The share of issuing thread `t` of `n` inside its CTA's range.
__device__ __forceinline__ perf::Range thread_share(perf::Range cta, unsigned t, unsigned n) {
  perf::Range r = perf::cta_range(cta.end - cta.begin, t, n);
  r.begin += cta.begin;
  r.end += cta.begin;
  return r;
}

// putmem_nbi: every thread of the CTA (blockDim.x issuers) moves its part of the
// CTA's share with cp.async.bulk through its own `stage_bytes` of dynamic shared
// memory; quiet() at the end completes everything.
static __global__ void nbi_put_kernel(const __grid_constant__ Ctx ctx, char* dst, const char* src,
                                      size_t bytes, int pe, long iters, uint32_t stage_bytes) {
  extern __shared__ __align__(16) unsigned char smem[];
  const perf::Range r =
      thread_share(perf::cta_range(bytes, blockIdx.x, gridDim.x), threadIdx.x, blockDim.x);
  const tmashmem::BulkStage stage{smem + size_t(threadIdx.x) * stage_bytes, stage_bytes};
  if (r.end > r.begin)
    for (long it = 0; it < iters; ++it)
      tmashmem::putmem_nbi(ctx, dst + r.begin, src + r.begin, r.end - r.begin, pe, stage);
  tmashmem::quiet();
}

static __global__ void nbi_get_kernel(const __grid_constant__ Ctx ctx, char* dst, const char* src,
                                      size_t bytes, int pe, long iters, uint32_t stage_bytes) {
  extern __shared__ __align__(16) unsigned char smem[];
  const perf::Range r =
      thread_share(perf::cta_range(bytes, blockIdx.x, gridDim.x), threadIdx.x, blockDim.x);
  const tmashmem::BulkStage stage{smem + size_t(threadIdx.x) * stage_bytes, stage_bytes};
  if (r.end > r.begin)
    for (long it = 0; it < iters; ++it)
      tmashmem::getmem_nbi(ctx, dst + r.begin, src + r.begin, r.end - r.begin, pe, stage);
  tmashmem::quiet();
}

}  // namespace perf_tm
