// The deterministic reduce-scatter's staging (gemm_reduce_scatter.cuh): where the fp32 partial
// sums of an owner's half-tiles wait for the next PE in their order, in the layout of the
// accumulators rather than of the matrix.
//
// Every PE computes a 64 x kBlockN half-tile with the same warpgroup layout, so the staging
// keeps it as the registers hold it: quad i (acc[4i .. 4i + 3]) of thread t of the warpgroup
// at floats (i * 128 + t) * 4 of the half-tile's block. One warp's access is 512 contiguous
// bytes (four whole lines), written, added or read straight from the registers: no shared
// memory, no barrier between chunks, no bound checks (a half-tile's block is whole; what lies
// past the shard's rows or columns is computed from TMA's zero fill and never leaves as output).
// Blocks in the order of the flags: half-tile (row0 / 64) * tile_cols + col0 / kBlockN.
//
// Ordering: the writes are weak. A writer's warpgroup meets at a barrier after them, and its
// thread 0 then releases the half-tile's flag (cumulative over the warpgroup's writes); the next
// PE acquires the flag on its thread 0 and meets its warpgroup at a barrier before any thread
// adds or reads.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/atom.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/gemm/mainloop.cuh"

namespace tmashmem::fused {

/// Floats in one half-tile's block of the staging.
template <class Cfg>
constexpr int64_t kStagingHalfFloats = int64_t(64) * Cfg::kBlockN;

/// The block of half-tile `half` in an owner's staging.
template <class Cfg>
__device__ __forceinline__ float* staging_half(float* staging, int half) {
  return staging + int64_t(half) * kStagingHalfFloats<Cfg>;
}

enum class StagingOp : int { store, add };

/// All 128 threads of a consumer warpgroup: its accumulators into the block (store) or added
/// into it (add: red.add, each element rounded once to fp32).
template <class Cfg, StagingOp Op>
__device__ __forceinline__ void staging_write(float* block, const gemm::Accumulators<Cfg>& acc,
                                              uint32_t thread_in_wg) {
  float* p = block + thread_in_wg * 4;
#pragma unroll
  for (int i = 0; i < Cfg::kBlockN / 8; ++i) {
    float* q = p + i * 128 * 4;
    if constexpr (Op == StagingOp::store)
      detail::st_global_v4_f32(q, acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
    else
      detail::red_add_relaxed_gpu_v4_f32(q, acc[4 * i], acc[4 * i + 1], acc[4 * i + 2],
                                         acc[4 * i + 3]);
  }
}

/// All 128 threads of a consumer warpgroup, before a tile's mainloop: its accumulators from the
/// block (the sum of the partials before this PE's) if `sum`, else zeros (the block is not
/// read), so that the MMAs add to them.
template <class Cfg>
__device__ __forceinline__ void staging_load(gemm::Accumulators<Cfg>& acc, const float* block,
                                             bool sum, uint32_t thread_in_wg) {
  const float* p = block + thread_in_wg * 4;
#pragma unroll
  for (int i = 0; i < Cfg::kBlockN / 8; ++i)
    detail::ld_cg_v4_f32_if(p + i * 128 * 4, sum, acc[4 * i], acc[4 * i + 1], acc[4 * i + 2],
                            acc[4 * i + 3]);
}

}  // namespace tmashmem::fused
