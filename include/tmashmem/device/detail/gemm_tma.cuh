// GEMM-local TMA and mbarrier PTX on raw CUtensorMaps (a `const __grid_constant__
// CUtensorMap` kernel parameter, encoded by the host): 2-D tile loads (plain and cluster
// multicast), 2-D tile stores, a tensor-map prefetch, and an mbarrier arrival on another CTA
// of the cluster. The tile layer (tile.cuh) wraps the same instructions for the symmetric
// tensors' map tables; these take the map directly, which the GEMM's operands need.
//
// Contract: as in tile.cuh. Loads complete their bytes on the mbarrier at `bar` (the
// receiving CTA's barrier at the same offset, for multicast); the caller announces them
// with expect_tx. Coordinates are {innermost, outer}; loads may hang over any edge (the
// outside reads as zero), stores must not start at a negative coordinate and are clipped at
// the high edges. Stores commit nothing: the caller closes the bulk async-group.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace tmashmem::detail {

__device__ __forceinline__ uint32_t gemm_smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Pulls the map into the TMA unit's descriptor cache ahead of the first use.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/// The box of `map` at {c0, c1} into this CTA's `smem`, completing on `bar` (shared).
__device__ __forceinline__ void tma_load_2d(void* smem, const CUtensorMap* map, int32_t c0,
                                            int32_t c1, const void* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(gemm_smem_u32(smem)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(gemm_smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

/// The box of `map` at {c0, c1}, read once and written to `smem`'s offset in every CTA of
/// the cluster whose bit is set in `cta_mask`, completing on the barrier at `bar`'s offset
/// in each.
__device__ __forceinline__ void tma_load_2d_multicast(void* smem, const CUtensorMap* map,
                                                      int32_t c0, int32_t c1, const void* bar,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(gemm_smem_u32(smem)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(gemm_smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
}

/// This CTA's `smem` into the box of `map` at {c0, c1} (non-negative), as part of the
/// thread's current bulk async-group.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int32_t c0, int32_t c1,
                                             const void* smem) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(gemm_smem_u32(smem)), "r"(c0), "r"(c1)
               : "memory");
}

/// Element-wise `map[box at {c0, c1}] += smem` (atomic per element; bf16 and f32 adds are
/// supported), as part of the thread's current bulk async-group. Same coordinate rules as
/// tma_store_2d.
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap* map, int32_t c0, int32_t c1,
                                                  const void* smem) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"
      " [%0, {%2, %3}], [%1];" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(gemm_smem_u32(smem)), "r"(c0), "r"(c1)
      : "memory");
}

/// One arrival on the mbarrier at `bar`'s offset in the CTA of cluster rank `cta_rank` (this
/// CTA's own rank included), with the default release at CTA scope. Enough for a consumer
/// that hands a stage back after wgmma_wait (its reads of the stage are complete); a
/// .release.cluster arrival would cost a GPU-wide memory barrier per call.
__device__ __forceinline__ void mbarrier_arrive_cluster(const void* bar, uint32_t cta_rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(gemm_smem_u32(bar)), "r"(cta_rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

}  // namespace tmashmem::detail
