// Tile steps of the collectives, for kernels that keep their data in symmetric tensors
// (tmashmem/tensor.h) and interleave communication with their own work tile by tile.
// Each call is issued by ONE thread; readiness between PEs comes from the same handshake
// as the block forms (coll_exchange, coll_signal / coll_wait on a CollState slot):
//
//   all-gather, pull:  coll_tile_gather(t, me, c, t, q, c, ...) after q's Ready
//   all-gather, push:  coll_tile_put(t, q, c, tile), coll_tile_complete(), then Done to q
//   reduce-scatter:    coll_tile_reduce<add>(t, owner, c, tile) after the owner's Ready
//                      (the owner initialised its tile in the prologue), then
//                      coll_tile_complete() and Done to the owner
//
// Contract (tile.cuh of the device API applies: maps acquired with
// tma_acquire_tensor_maps, 128-byte aligned tiles of t.smem_bytes, no negative
// coordinates for puts and reduces):
//  - coll_tile_gather: fence.proxy.async (the reader-side proxy fence after the acquire
//    that saw the peer's Ready), the get of src_pe's tile into `tile` on `bar`, the
//    bounded wait for it, then the put into dst_pe's tensor; returns after the put has
//    completed (not yet published to other PEs). Status::Timeout if the get's phase did
//    not complete in time.
//  - coll_tile_put / coll_tile_reduce: one bulk async-group each; coll_tile_complete()
//    waits for all of this thread's groups and fences the async proxy, so that the CTA's
//    next coll_signal publishes them.
//  - coll_tile_reduce adds in arrival order and, for f16/bf16, rounds each addition to
//    the storage type (the TMA unit reduces in the tensor's dtype); reduce_scatter_block
//    is the deterministic fp32 alternative. tma_reduce_supported(op, dtype) says which
//    pairs exist (no f32 min/max).
#pragma once

#include <stdint.h>

#include "tmashmem/device/order.cuh"
#include "tmashmem/device/status.cuh"
#include "tmashmem/device/tile.cuh"

namespace tmashmem {

__device__ __forceinline__ Status coll_tile_gather(const TensorHandle& t_dst, int dst_pe,
                                                   TileCoord c_dst, const TensorHandle& t_src,
                                                   int src_pe, TileCoord c_src, void* tile,
                                                   Mbarrier& bar, MbarrierPhase& phase,
                                                   uint64_t timeout_ns) {
  fence_proxy_async_global();
  bar.arrive_expect_tx(t_src.box_bytes);
  tma_get_tile(tile, t_src, src_pe, c_src, bar);
  const Status s = bar.wait(phase.parity, timeout_ns);
  phase.advance();
  if (s != Status::Ok) return s;
  tma_put_tile(t_dst, dst_pe, c_dst, tile);
  bulk_wait_group<0>();
  return Status::Ok;
}

__device__ __forceinline__ void coll_tile_put(const TensorHandle& t, int pe, TileCoord c,
                                              const void* tile) {
  tma_put_tile(t, pe, c, tile);
}

template <TileReduceOp Op>
__device__ __forceinline__ void coll_tile_reduce(const TensorHandle& t, int owner, TileCoord c,
                                                 const void* tile) {
  tma_reduce_tile<Op>(t, owner, c, tile);
}

__device__ __forceinline__ void coll_tile_complete() {
  bulk_wait_group<0>();
  fence_proxy_async_global();
}

}  // namespace tmashmem
