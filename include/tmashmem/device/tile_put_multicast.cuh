// A tile put to every PE of the node: tma_put_tile_multicast writes one tile in shared
// memory into every reachable PE's copy of a symmetric tensor (this PE's included).
//
// Two ways, chosen by the caller and then once per call from the handle:
//  - TileMulticast::FanOut (the default): one tma_put_tile per reachable local PE, in
//    ascending PE order. What every lent machine runs (docs/multicast.md).
//  - TileMulticast::MulticastMap (opt-in): one tensor store through the tensor's map on
//    its multicast address (slot n_local_pes of the map table, made at tensor creation
//    when the runtime set multicast up: t.has_multicast). Without one (has_multicast 0)
//    it is the fan-out. The PTX ISA leaves TMA on a multimem address undefined; other
//    projects use it and report it works. It has never run here (no multicast on the
//    lent machines): opt in only where it was checked on the hardware at hand.
//
// Contract, the same for both ways (tile.cuh has the rules for tiles):
//  - issued by ONE thread; `smem` 128-byte aligned, t.smem_bytes, written before the call
//    (other writer threads: fence_proxy_async_shared() before the barrier that precedes
//    the call; the issuing thread's own writes are fenced here);
//  - no negative coordinate; boxes past the high edges are clipped as for tma_put_tile;
//  - the call commits exactly ONE bulk async-group covering every PE's store:
//    bulk_wait_group_read<N>() frees the source tile, bulk_wait_group<N>() completes the
//    writes on every PE (N counting this call as one group, like a tma_put_tile);
//  - remote visibility needs a release after completion, as for tma_put_tile:
//    bulk_wait_group<0>(), fence_proxy_async_global(), then signal_op (to each PE that
//    reads) or a barrier (barrier_all does it all).
#pragma once

#include <cstdint>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/tensor.cuh"
#include "tmashmem/device/tile_handle.cuh"

namespace tmashmem {

/// How tma_put_tile_multicast reaches the PEs (see the contract above).
enum class TileMulticast { FanOut, MulticastMap };

/// Generic address of the tensor's map on its multicast address (meaningful only when
/// t.has_multicast is 1).
__device__ __forceinline__ const void* tma_multicast_tensor_map(const TensorHandle& t) {
  return tma_tensor_map(t, t.first_local_pe + t.n_local_pes);  // the slot after the PEs'
}

/// Writes the tile in `smem` to every reachable local PE's tensor at `c` (see the
/// contract above). Commits one bulk async-group.
__device__ __forceinline__ void tma_put_tile_multicast(const TensorHandle& t, TileCoord c,
                                                       const void* smem,
                                                       TileMulticast way = TileMulticast::FanOut) {
  detail::check_tile_call("tma_put_tile_multicast", t, t.my_pe, c, smem, true);
  detail::fence_proxy_async_shared();
  const uint32_t src = detail::smem_address(smem);
  auto store = [&](const void* map) {
    const uint64_t operand = reinterpret_cast<uint64_t>(map);
    detail::with_rank(c.n,
                      [&](auto r) { detail::tensor_store<decltype(r)::value>(operand, src, c.c); });
  };
  if (way == TileMulticast::MulticastMap && t.has_multicast != 0) {
    store(tma_multicast_tensor_map(t));
  } else {
    for (int pe = t.first_local_pe; pe < t.first_local_pe + t.n_local_pes; ++pe)
      if (tma_reachable(t, pe)) store(tma_tensor_map(t, pe));
  }
  detail::bulk_commit();
}

}  // namespace tmashmem
