// Tile gets: a peer's tile into shared memory (one CTA, or every CTA of a cluster
// mask), and the L2 prefetch. Contract in tile.cuh; each call is issued by one thread.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/tensor.cuh"
#include "tmashmem/device/mbarrier.cuh"
#include "tmashmem/device/tile_handle.cuh"

namespace tmashmem {

/// Copies the tile at `c` of `pe`'s tensor into `smem` (smem_bytes of room, 128-byte aligned),
/// completing box_bytes of `bar`'s current phase's transaction bytes. The caller announces
/// box_bytes on `bar` (arrive_expect_tx).
__device__ __forceinline__ void tma_get_tile(void* smem, const TensorHandle& t, int pe, TileCoord c,
                                             Mbarrier& bar) {
  detail::check_tile_call("tma_get_tile", t, pe, c, smem);
  const uint64_t map = detail::tensor_map_operand(t, pe);
  const uint32_t dst = detail::smem_address(smem), mb = bar.smem_address();
  detail::with_rank(c.n,
                    [&](auto r) { detail::tensor_load<decltype(r)::value>(dst, map, mb, c.c); });
}

/// One read of `pe`'s tile delivered to every CTA of this cluster whose bit is set in
/// `cta_mask` (bit r = cluster rank r): the tile lands at the same shared-memory offset as
/// `smem` in each, and completes box_bytes on the mbarrier at the same offset as `bar` in
/// each. Every receiving CTA announces box_bytes on its own barrier; each receiver's barrier
/// must be initialised before the copy is issued (cluster_sync() after init).
__device__ __forceinline__ void tma_get_tile_multicast(void* smem, const TensorHandle& t, int pe,
                                                       TileCoord c, Mbarrier& bar,
                                                       uint16_t cta_mask) {
  detail::check_tile_call("tma_get_tile_multicast", t, pe, c, smem);
  const uint64_t map = detail::tensor_map_operand(t, pe);
  const uint32_t dst = detail::smem_address(smem), mb = bar.smem_address();
  detail::with_rank(c.n, [&](auto r) {
    detail::tensor_load_multicast<decltype(r)::value>(dst, map, mb, cta_mask, c.c);
  });
}

/// Hints the TMA unit to bring `pe`'s tile into L2. No completion, no ordering.
__device__ __forceinline__ void tma_prefetch_tile(const TensorHandle& t, int pe, TileCoord c) {
  detail::check_tile_call("tma_prefetch_tile", t, pe, c, nullptr);
  const uint64_t map = detail::tensor_map_operand(t, pe);
  detail::with_rank(c.n, [&](auto r) { detail::tensor_prefetch<decltype(r)::value>(map, c.c); });
}

}  // namespace tmashmem
