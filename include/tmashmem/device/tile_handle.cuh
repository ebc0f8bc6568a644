// The tile layer's view of a tensor handle: tile coordinates, the map of a PE, the
// tensor-map acquire, and the debug checks every tile call runs. The contract of the
// tile calls is in tile.cuh.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/tensor_handle.h"

namespace tmashmem {

using TensorHandle = tmashmem_tensor_handle_t;

/// Coordinates of a tile's first element, innermost dimension first: `{x}`, `{x, y}`, ...
/// up to 5. The count must equal the tensor's rank. See "Coordinates" in tile.cuh for what
/// the hardware accepts.
struct TileCoord {
  int32_t c[TMASHMEM_TENSOR_MAX_RANK];
  int n;
  __host__ __device__ constexpr TileCoord(int32_t c0) : c{c0, 0, 0, 0, 0}, n(1) {}
  __host__ __device__ constexpr TileCoord(int32_t c0, int32_t c1) : c{c0, c1, 0, 0, 0}, n(2) {}
  __host__ __device__ constexpr TileCoord(int32_t c0, int32_t c1, int32_t c2)
      : c{c0, c1, c2, 0, 0}, n(3) {}
  __host__ __device__ constexpr TileCoord(int32_t c0, int32_t c1, int32_t c2, int32_t c3)
      : c{c0, c1, c2, c3, 0}, n(4) {}
  __host__ __device__ constexpr TileCoord(int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                                          int32_t c4)
      : c{c0, c1, c2, c3, c4}, n(5) {}
};

/// True when `pe` has a map in `t`'s table: a PE of this node that is load/store reachable.
__host__ __device__ __forceinline__ bool reachable(const TensorHandle& t, int pe) {
  return detail::reachable_local_pe(t.first_local_pe, t.n_local_pes, t.reachable, pe);
}

/// The same as reachable(t, pe).
__host__ __device__ __forceinline__ bool tma_reachable(const TensorHandle& t, int pe) {
  return reachable(t, pe);
}

/// Generic address of the CUtensorMap for `pe`'s copy of the tensor (global memory).
__device__ __forceinline__ const void* tma_tensor_map(const TensorHandle& t, int pe) {
  return reinterpret_cast<const void*>(t.maps + static_cast<uint64_t>(pe - t.first_local_pe) *
                                                    TMASHMEM_TENSOR_MAP_BYTES);
}

/// Makes the host-written map table usable by this thread's tile calls on `t` (see the
/// contract in tile.cuh). Once per kernel in every issuing thread, before its first tile call.
__device__ __forceinline__ void tma_acquire_tensor_maps(const TensorHandle& t) {
  for (int slot = 0; slot < t.n_local_pes; ++slot) {
    const int pe = t.first_local_pe + slot;
    if (tma_reachable(t, pe)) detail::fence_tensormap_acquire(tma_tensor_map(t, pe));
  }
  // The map on the multicast address, after the PEs' (tile_put_multicast.cuh).
  if (t.has_multicast)
    detail::fence_tensormap_acquire(tma_tensor_map(t, t.first_local_pe + t.n_local_pes));
}

namespace detail {

inline __device__ __noinline__ void tile_trap(const TensorHandle& t, const char* call, int pe,
                                              const char* problem, long long value) {
  printf("[tmashmem PE %d] %s (pe %d): %s (value %lld)\n", t.my_pe, call, pe, problem, value);
  __trap();
}

// The argument checks of every tile call; compiled out without TMASHMEM_DEVICE_DEBUG.
// `store`: a put or reduce, which takes no negative coordinate.
__device__ __forceinline__ void check_tile_call(const char* call, const TensorHandle& t, int pe,
                                                const TileCoord& c, const void* smem,
                                                bool store = false) {
#ifdef TMASHMEM_DEVICE_DEBUG
  if (t.version != TMASHMEM_TENSOR_HANDLE_VERSION)
    tile_trap(t, call, pe, "tensor handle version differs from TMASHMEM_TENSOR_HANDLE_VERSION",
              t.version);
  if (c.n != static_cast<int>(t.rank))
    tile_trap(t, call, pe, "number of coordinates differs from the tensor's rank", c.n);
  if (!tma_reachable(t, pe))
    tile_trap(t, call, pe, "pe is not a load/store reachable PE of this node: it has no tensor map",
              pe);
  if (smem && smem_address(smem) % 128 != 0)
    tile_trap(t, call, pe, "shared-memory tile is not 128-byte aligned", smem_address(smem));
  if (t.interleave == 0 && (static_cast<int64_t>(c.c[0]) * t.elem_bytes) % 16 != 0)
    tile_trap(t, call, pe, "innermost coordinate is not at a 16-byte offset (c[0] * elem_bytes)",
              c.c[0]);
  if (store)
    for (int i = 0; i < c.n; ++i)
      if (c.c[i] < 0)
        tile_trap(t, call, pe, "puts and reduces take no negative coordinate (this one is c[i])",
                  c.c[i]);
#else
  (void)call, (void)t, (void)pe, (void)c, (void)smem, (void)store;
#endif
}

// The map of `pe` as a PTX operand.
__device__ __forceinline__ uint64_t tensor_map_operand(const TensorHandle& t, int pe) {
  return reinterpret_cast<uint64_t>(tma_tensor_map(t, pe));
}

}  // namespace detail
}  // namespace tmashmem
