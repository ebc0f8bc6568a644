// Tile puts and reduces: a tile in shared memory into a peer's tensor, as bulk async
// stores (one bulk async-group per call), and the put that publishes with a signal.
// Contract in tile.cuh; each call is issued by one thread.
#pragma once

#include <cstdint>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/tensor.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/device/tile_handle.cuh"

namespace tmashmem {

/// Element-wise operations of tma_reduce_tile: peer[i] = op(peer[i], tile[i]).
///   inc: peer = peer >= tile ? 0 : peer + 1
///   dec: peer = (peer == 0 || peer > tile) ? tile : peer - 1
using TileReduceOp = detail::TensorReduceOp;

/// Whether the hardware reduces `dtype` with `op` (docs/device-api.md has the table).
/// Other combinations (f64, u8, u16, tf32, the _ftz types, bitwise i64) have no TMA
/// reduction; issuing one is an illegal-instruction fault. Usable in static_assert and on
/// the host.
__host__ __device__ constexpr bool tma_reduce_supported(TileReduceOp op, uint32_t dtype) {
  switch (op) {
    case TileReduceOp::add:
      return dtype == TMASHMEM_DTYPE_U32 || dtype == TMASHMEM_DTYPE_I32 ||
             dtype == TMASHMEM_DTYPE_U64 || dtype == TMASHMEM_DTYPE_F32 ||
             dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16;
    case TileReduceOp::min:
    case TileReduceOp::max:
      return dtype == TMASHMEM_DTYPE_U32 || dtype == TMASHMEM_DTYPE_I32 ||
             dtype == TMASHMEM_DTYPE_U64 || dtype == TMASHMEM_DTYPE_I64 ||
             dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16;
    case TileReduceOp::inc:
    case TileReduceOp::dec:
      return dtype == TMASHMEM_DTYPE_U32;
    case TileReduceOp::bit_and:
    case TileReduceOp::bit_or:
    case TileReduceOp::bit_xor:
      return dtype == TMASHMEM_DTYPE_U32 || dtype == TMASHMEM_DTYPE_I32 ||
             dtype == TMASHMEM_DTYPE_U64;
  }
  return false;
}

/// Writes the tile in `smem` (128-byte aligned, smem_bytes) to `pe`'s tensor at `c`
/// (no negative coordinate), clipped at the tensor's high edges. Commits one bulk
/// async-group. See tile.cuh for when `smem` may be reused and when the writes are visible.
__device__ __forceinline__ void tma_put_tile(const TensorHandle& t, int pe, TileCoord c,
                                             const void* smem) {
  detail::check_tile_call("tma_put_tile", t, pe, c, smem, true);
  detail::fence_proxy_async_shared();
  const uint64_t map = detail::tensor_map_operand(t, pe);
  const uint32_t src = detail::smem_address(smem);
  detail::with_rank(c.n, [&](auto r) { detail::tensor_store<decltype(r)::value>(map, src, c.c); });
  detail::bulk_commit();
}

/// peer[i] = Op(peer[i], tile[i]) for every in-bounds element of the tile at `c` (no negative
/// coordinate) of `pe`'s tensor, element-wise atomic (concurrent reduces from several PEs all
/// apply). The tensor's dtype must support Op (tma_reduce_supported; checked with
/// TMASHMEM_DEVICE_DEBUG). Commits one bulk async-group; completion and visibility as for
/// tma_put_tile.
template <TileReduceOp Op>
__device__ __forceinline__ void tma_reduce_tile(const TensorHandle& t, int pe, TileCoord c,
                                                const void* smem) {
  detail::check_tile_call("tma_reduce_tile", t, pe, c, smem, true);
#ifdef TMASHMEM_DEVICE_DEBUG
  if (!tma_reduce_supported(Op, t.dtype))
    detail::tile_trap(t, "tma_reduce_tile", pe,
                      "the tensor's dtype has no TMA reduction for this op (tma_reduce_supported)",
                      t.dtype);
#endif
  detail::fence_proxy_async_shared();
  const uint64_t map = detail::tensor_map_operand(t, pe);
  const uint32_t src = detail::smem_address(smem);
  detail::with_rank(c.n,
                    [&](auto r) { detail::tensor_reduce<Op, decltype(r)::value>(map, src, c.c); });
  detail::bulk_commit();
}

/// The same with the dtype fixed at compile time, so an unsupported pair fails to compile.
template <TileReduceOp Op, tmashmem_dtype_t DType>
__device__ __forceinline__ void tma_reduce_tile(const TensorHandle& t, int pe, TileCoord c,
                                                const void* smem) {
  static_assert(tma_reduce_supported(Op, DType),
                "TMA has no reduction of this dtype with this op (see tma_reduce_supported)");
  tma_reduce_tile<Op>(t, pe, c, smem);
}

/// Puts the tile, waits until ALL of this thread's bulk async-groups have completed, then
/// updates `pe`'s copy of the symmetric uint64 `signal` with signal_op (release; SignalOp::Set
/// stores `value`, SignalOp::Add adds it), so a PE that observes the new value with acquire
/// semantics (signal_wait_until) sees the whole tile. `signal` is this PE's address of a
/// symmetric allocation, 8-byte aligned; `smem` may be reused on return. `ctx` gives the
/// signal its peer address, its debug checks and its scope (signal.cuh).
__device__ __forceinline__ void tma_put_tile_signal(const Ctx& ctx, const TensorHandle& t, int pe,
                                                    TileCoord c, const void* smem, uint64_t* signal,
                                                    uint64_t value, SignalOp op = SignalOp::Set) {
  tma_put_tile(t, pe, c, smem);
  detail::bulk_wait<0>();
  // The completed writes were made by the async proxy: order them before the generic-proxy
  // release of the signal.
  detail::fence_proxy_async_global();
  signal_op(ctx, signal, value, op, pe);
}

}  // namespace tmashmem
