// tmashmem device API: whole tiles to and from peers through the Tensor Memory Accelerator.
//
// A tile is one box of a symmetric tensor (tmashmem/tensor.h), addressed by int32
// coordinates of its first element, innermost dimension first (TMA order), and by the PE
// whose copy of the tensor it reads or writes. Every call here is issued by ONE thread; the
// copy then runs asynchronously in the TMA unit. Kernels take the tensor's POD handle,
// tmashmem_tile_tensor_t (`TileTensor`), by value as a `const __grid_constant__` parameter.
//
//   __shared__ alignas(1024) uint8_t tile[BYTES];
//   __shared__ tmashmem::Mbarrier bar;
//   if (threadIdx.x == 0) { tmashmem::tma_acquire_tensor_maps(t); bar.init(1); }
//   __syncthreads();
//   if (threadIdx.x == 0) {
//     bar.arrive_expect_tx(t.box_bytes);
//     tmashmem::tma_get_tile(tile, t, peer, {x, y}, bar);       // peer's tile -> smem
//   }
//   if (bar.wait(0, timeout_ns) != tmashmem::Status::Ok) ...    // every thread may wait
//   ... compute on tile ...
//   tmashmem::fence_proxy_async_shared();                       // writers of tile, then
//   __syncthreads();
//   if (threadIdx.x == 0) {
//     tmashmem::tma_put_tile(t, other, {x, y}, tile);           // smem -> other's tensor
//     tmashmem::bulk_wait_group<0>();                           // written (not yet published)
//   }
//
// Contract (the memory model of DESIGN.md, as it applies to tiles):
//  - Tensor maps. The maps live in a device table the host wrote before the launch. Per the
//    CUDA Programming Guide, a map in global memory written by the host needs a
//    fence.proxy.tensormap::generic acquire in the thread that uses it:
//    tma_acquire_tensor_maps(t) once per kernel in every thread that issues tile calls on
//    `t`, before the first one. (A map passed as a __grid_constant__ kernel parameter, e.g.
//    from tmashmem_tensor_get_map, needs no fence.) Maps never change while a tensor lives.
//  - Coordinates (seen on H200 with driver 580; a violation is an illegal-instruction
//    fault that ends the context, so debug builds check them first):
//      * the innermost coordinate must be at a 16-byte offset: c[0] * elem_bytes is a
//        multiple of 16 (negative values too; interleaved tensors are not checked);
//      * gets (and prefetches) may start anywhere else: negative coordinates and boxes
//        past the high edge read the fill value there;
//      * puts and reduces must not have a negative coordinate in any dimension; boxes past
//        the high edge (partly or wholly) are clipped there, but along dimension 0 only to
//        whole 16-byte units: when dims[0] * elem_bytes is not a multiple of 16, the bytes
//        from the row's end to the next 16-byte boundary receive the tile's contents there
//        (they are the tensor's: row padding, and the tensor's extent counts them). A tile
//        hanging over the low edge must be written as a smaller box (a second tensor view).
//  - Gets complete on an mbarrier (complete_tx). The caller announces the bytes:
//    arrive_expect_tx(t.box_bytes) per tile (before or after issuing). After the phase
//    completes, waiters see the tile in shared memory. Elements outside the tensor (partial
//    tiles, negative coordinates) are filled with zero or, with TMASHMEM_OOB_FILL_NAN, NaN;
//    box_bytes counts them too.
//  - A tile occupies t.smem_bytes of shared memory: box_bytes, except that a swizzled tile
//    whose rows are narrower than the swizzle span has each row padded to the span (the
//    padding is neither written by gets nor read by puts). Size buffers with smem_bytes,
//    announce box_bytes.
//  - Puts and reduces are bulk async stores. Each call commits its own bulk async-group, so
//    "N groups" below means "the N most recent puts/reduces of this thread":
//      bulk_wait_group_read<N>()  all but N have finished reading shared memory: their
//                                 source tiles may be overwritten;
//      bulk_wait_group<N>()       all but N have completed: their writes are performed.
//    Writes past the high edge are dropped (partial tiles are clipped). Remote visibility
//    to other PEs needs a release after completion: tma_put_tile_signal does it, or use
//    quiet()/fence() of the order API.
//  - Shared memory written with ordinary stores and then read by a put, reduce or DSMEM copy
//    needs fence.proxy.async.shared::cta between the two. The calls fence for the issuing
//    thread's own writes; every OTHER thread that wrote the tile calls
//    fence_proxy_async_shared() before the barrier that precedes the issuing call.
//  - Alignment: tiles in shared memory 128-byte aligned; swizzled tiles aligned to the
//    swizzle pattern's repeat (256 B for 32B, 512 B for 64B, 1024 B for 128B) to get the
//    canonical layout that wgmma/CUTLASS expect. DSMEM copies: 16-byte aligned, sizes a
//    multiple of 16.
//  - `pe` must be a load/store reachable PE of this node. Debug builds (define
//    TMASHMEM_DEVICE_DEBUG before including any tmashmem device header) check the PE, the
//    coordinate count and rules, the handle version, the dtype of a reduce and the
//    alignment, and trap after printing the PE, the call and the value; release builds
//    check nothing.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tmashmem/device/cluster.cuh"
#include "tmashmem/device/mbarrier.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/tile_tensor.h"
#include "tmashmem/tmashmem.h"

namespace tmashmem {

using TileTensor = tmashmem_tile_tensor_t;

/// Coordinates of a tile's first element, innermost dimension first: `{x}`, `{x, y}`, ...
/// up to 5. The count must equal the tensor's rank. See "Coordinates" in the contract above
/// for what the hardware accepts.
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

/// Element-wise operations of tma_reduce_tile: peer[i] = op(peer[i], tile[i]).
///   inc: peer = peer >= tile ? 0 : peer + 1      dec: peer = (peer == 0 || peer > tile) ? tile :
///   peer - 1
enum class TileReduceOp { add, min, max, inc, dec, bit_and, bit_or, bit_xor };

/// Whether the hardware reduces `dtype` with `op` (PTX cp.reduce.async.bulk.tensor):
///   add              u32 i32 u64 f32 f16 bf16
///   min, max         u32 i32 u64 i64 f16 bf16
///   inc, dec         u32
///   and, or, xor     u32 i32 u64           (i64 faults on H200: use a u64 view of the bits)
/// Other combinations (f64, u8, u16, tf32, the _ftz types) have no TMA reduction; issuing
/// one is an illegal-instruction fault. Usable in static_assert and on the host.
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

/// True when `pe` has a map in `t`'s table: a PE of this node that is load/store reachable.
__host__ __device__ __forceinline__ bool tma_reachable(const TileTensor& t, int pe) {
  const int slot = pe - t.first_local_pe;
  if (slot < 0 || slot >= t.n_local_pes || slot >= 64) return false;
  const uint32_t mask = slot < 32 ? t.reachable_lo : t.reachable_hi;
  return ((mask >> (slot & 31)) & 1u) != 0;
}

namespace detail {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

inline __device__ __noinline__ void tile_trap(const TileTensor& t, const char* call, int pe,
                                              const char* problem, long long value) {
  printf("[tmashmem PE %d] %s (pe %d): %s (value %lld)\n", t.my_pe, call, pe, problem, value);
  __trap();
}

// The argument checks of every tile call; compiled out without TMASHMEM_DEVICE_DEBUG.
// `store`: a put or reduce, which takes no negative coordinate.
__device__ __forceinline__ void check_tile_call(const char* call, const TileTensor& t, int pe,
                                                const TileCoord& c, const void* smem,
                                                bool store = false) {
#ifdef TMASHMEM_DEVICE_DEBUG
  if (t.version != TMASHMEM_TILE_TENSOR_VERSION)
    tile_trap(t, call, pe, "tensor handle version differs from TMASHMEM_TILE_TENSOR_VERSION",
              t.version);
  if (c.n != static_cast<int>(t.rank))
    tile_trap(t, call, pe, "number of coordinates differs from the tensor's rank", c.n);
  if (!tma_reachable(t, pe))
    tile_trap(t, call, pe, "pe is not a load/store reachable PE of this node: it has no tensor map",
              pe);
  if (smem && smem_u32(smem) % 128 != 0)
    tile_trap(t, call, pe, "shared-memory tile is not 128-byte aligned", smem_u32(smem));
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

}  // namespace detail

/// Generic address of the CUtensorMap for `pe`'s copy of the tensor (global memory).
__device__ __forceinline__ const void* tma_tensor_map(const TileTensor& t, int pe) {
  return reinterpret_cast<const void*>(t.maps + static_cast<uint64_t>(pe - t.first_local_pe) *
                                                    TMASHMEM_TENSOR_MAP_BYTES);
}

/// Makes the host-written map table usable by this thread's tile calls on `t` (see the
/// contract above). Once per kernel in every issuing thread, before its first tile call.
__device__ __forceinline__ void tma_acquire_tensor_maps(const TileTensor& t) {
  for (int slot = 0; slot < t.n_local_pes; ++slot) {
    const uint32_t mask = slot < 32 ? t.reachable_lo : t.reachable_hi;
    if (!((mask >> (slot & 31)) & 1u)) continue;
    const void* map = reinterpret_cast<const void*>(t.maps + static_cast<uint64_t>(slot) *
                                                                 TMASHMEM_TENSOR_MAP_BYTES);
    asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
  }
}

/// Orders this thread's earlier ordinary shared-memory stores before later async-proxy
/// reads of them (puts, reduces, DSMEM copies issued after a barrier, by any thread).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// Closes the current bulk async-group. The tile calls commit their own groups; this is for
/// bulk copies issued by other code.
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/// Waits until at most N of this thread's bulk async-groups are pending: the writes of all
/// the others are performed (not yet released to other PEs).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  static_assert(N >= 0 && N <= 63, "bulk_wait_group<N>: N is 0..63");
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

/// Waits until at most N of this thread's bulk async-groups are still reading shared
/// memory: the source tiles of all the others may be overwritten.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  static_assert(N >= 0 && N <= 63, "bulk_wait_group_read<N>: N is 0..63");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

/// Copies the tile at `c` of `pe`'s tensor into `smem` (smem_bytes of room, 128-byte aligned),
/// completing box_bytes of `bar`'s current phase's transaction bytes. The caller announces
/// box_bytes on `bar` (arrive_expect_tx).
__device__ __forceinline__ void tma_get_tile(void* smem, const TileTensor& t, int pe, TileCoord c,
                                             Mbarrier& bar) {
  detail::check_tile_call("tma_get_tile", t, pe, c, smem);
  const uint64_t map = reinterpret_cast<uint64_t>(tma_tensor_map(t, pe));
  const uint32_t dst = detail::smem_u32(smem), mb = bar.smem_address();
  switch (c.n) {
    case 1:
      asm volatile(
          "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%3}], [%2];" ::"r"(dst),
          "l"(map), "r"(mb), "r"(c.c[0])
          : "memory");
      break;
    case 2:
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
          "l"(map), "r"(mb), "r"(c.c[0]), "r"(c.c[1])
          : "memory");
      break;
    case 3:
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
          "l"(map), "r"(mb), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2])
          : "memory");
      break;
    case 4:
      asm volatile(
          "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
          "l"(map), "r"(mb), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3])
          : "memory");
      break;
    default:
      asm volatile(
          "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(dst),
          "l"(map), "r"(mb), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3]), "r"(c.c[4])
          : "memory");
      break;
  }
}

/// One read of `pe`'s tile delivered to every CTA of this cluster whose bit is set in
/// `cta_mask` (bit r = cluster rank r): the tile lands at the same shared-memory offset as
/// `smem` in each, and completes box_bytes on the mbarrier at the same offset as `bar` in
/// each. Every receiving CTA announces box_bytes on its own barrier; each receiver's barrier
/// must be initialised before the copy is issued (cluster_sync() after init).
__device__ __forceinline__ void tma_get_tile_multicast(void* smem, const TileTensor& t, int pe,
                                                       TileCoord c, Mbarrier& bar,
                                                       uint16_t cta_mask) {
  detail::check_tile_call("tma_get_tile_multicast", t, pe, c, smem);
  const uint64_t map = reinterpret_cast<uint64_t>(tma_tensor_map(t, pe));
  const uint32_t dst = detail::smem_u32(smem), mb = bar.smem_address();
  switch (c.n) {
    case 1:
      asm volatile(
          "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%4}], [%2], %3;" ::"r"(dst),
          "l"(map), "r"(mb), "h"(cta_mask), "r"(c.c[0])
          : "memory");
      break;
    case 2:
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(dst),
          "l"(map), "r"(mb), "h"(cta_mask), "r"(c.c[0]), "r"(c.c[1])
          : "memory");
      break;
    case 3:
      asm volatile(
          "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(dst),
          "l"(map), "r"(mb), "h"(cta_mask), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2])
          : "memory");
      break;
    case 4:
      asm volatile(
          "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(dst),
          "l"(map), "r"(mb), "h"(cta_mask), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3])
          : "memory");
      break;
    default:
      asm volatile(
          "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;" ::"r"(dst),
          "l"(map), "r"(mb), "h"(cta_mask), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3]),
          "r"(c.c[4])
          : "memory");
      break;
  }
}

/// Hints the TMA unit to bring `pe`'s tile into L2. No completion, no ordering.
__device__ __forceinline__ void tma_prefetch_tile(const TileTensor& t, int pe, TileCoord c) {
  detail::check_tile_call("tma_prefetch_tile", t, pe, c, nullptr);
  const uint64_t map = reinterpret_cast<uint64_t>(tma_tensor_map(t, pe));
  switch (c.n) {
    case 1:
      asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global [%0, {%1}];" ::"l"(map), "r"(c.c[0])
                   : "memory");
      break;
    case 2:
      asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global [%0, {%1, %2}];" ::"l"(map),
                   "r"(c.c[0]), "r"(c.c[1])
                   : "memory");
      break;
    case 3:
      asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global [%0, {%1, %2, %3}];" ::"l"(map),
                   "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2])
                   : "memory");
      break;
    case 4:
      asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global [%0, {%1, %2, %3, %4}];" ::"l"(map),
                   "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3])
                   : "memory");
      break;
    default:
      asm volatile(
          "cp.async.bulk.prefetch.tensor.5d.L2.global [%0, {%1, %2, %3, %4, %5}];" ::"l"(map),
          "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3]), "r"(c.c[4])
          : "memory");
      break;
  }
}

/// Writes the tile in `smem` (128-byte aligned, smem_bytes) to `pe`'s tensor at `c`
/// (no negative coordinate), clipped at the tensor's high edges. Commits one bulk async-group. See
/// the contract for when `smem` may be reused and when the writes are visible.
__device__ __forceinline__ void tma_put_tile(const TileTensor& t, int pe, TileCoord c,
                                             const void* smem) {
  detail::check_tile_call("tma_put_tile", t, pe, c, smem, true);
  fence_proxy_async_shared();
  const uint64_t map = reinterpret_cast<uint64_t>(tma_tensor_map(t, pe));
  const uint32_t src = detail::smem_u32(smem);
  switch (c.n) {
    case 1:
      asm volatile(
          "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(map),
          "r"(src), "r"(c.c[0])
          : "memory");
      break;
    case 2:
      asm volatile(
          "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
          "r"(src), "r"(c.c[0]), "r"(c.c[1])
          : "memory");
      break;
    case 3:
      asm volatile(
          "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
              map),
          "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2])
          : "memory");
      break;
    case 4:
      asm volatile(
          "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::
              "l"(map),
          "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3])
          : "memory");
      break;
    default:
      asm volatile(
          "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], "
          "[%1];" ::"l"(map),
          "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3]), "r"(c.c[4])
          : "memory");
      break;
  }
  bulk_commit_group();
}

namespace detail {

#define TMASHMEM_TILE_REDUCE_ASM(OP)                                                         \
  switch (c.n) {                                                                             \
    case 1:                                                                                  \
      asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta." OP                   \
                   ".tile.bulk_group [%0, {%2}], [%1];" ::"l"(map),                          \
                   "r"(src), "r"(c.c[0])                                                     \
                   : "memory");                                                              \
      break;                                                                                 \
    case 2:                                                                                  \
      asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta." OP                   \
                   ".tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),                      \
                   "r"(src), "r"(c.c[0]), "r"(c.c[1])                                        \
                   : "memory");                                                              \
      break;                                                                                 \
    case 3:                                                                                  \
      asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta." OP                   \
                   ".tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map),                  \
                   "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2])                           \
                   : "memory");                                                              \
      break;                                                                                 \
    case 4:                                                                                  \
      asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta." OP                   \
                   ".tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(map),              \
                   "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3])              \
                   : "memory");                                                              \
      break;                                                                                 \
    default:                                                                                 \
      asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta." OP                   \
                   ".tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::"l"(map),          \
                   "r"(src), "r"(c.c[0]), "r"(c.c[1]), "r"(c.c[2]), "r"(c.c[3]), "r"(c.c[4]) \
                   : "memory");                                                              \
      break;                                                                                 \
  }

template <TileReduceOp Op>
__device__ __forceinline__ void tile_reduce_issue(uint64_t map, uint32_t src, const TileCoord& c) {
  if constexpr (Op == TileReduceOp::add) {
    TMASHMEM_TILE_REDUCE_ASM("add")
  } else if constexpr (Op == TileReduceOp::min) {
    TMASHMEM_TILE_REDUCE_ASM("min")
  } else if constexpr (Op == TileReduceOp::max) {
    TMASHMEM_TILE_REDUCE_ASM("max")
  } else if constexpr (Op == TileReduceOp::inc) {
    TMASHMEM_TILE_REDUCE_ASM("inc")
  } else if constexpr (Op == TileReduceOp::dec) {
    TMASHMEM_TILE_REDUCE_ASM("dec")
  } else if constexpr (Op == TileReduceOp::bit_and) {
    TMASHMEM_TILE_REDUCE_ASM("and")
  } else if constexpr (Op == TileReduceOp::bit_or) {
    TMASHMEM_TILE_REDUCE_ASM("or")
  } else {
    TMASHMEM_TILE_REDUCE_ASM("xor")
  }
}

#undef TMASHMEM_TILE_REDUCE_ASM

}  // namespace detail

/// peer[i] = Op(peer[i], tile[i]) for every in-bounds element of the tile at `c` (no negative
/// coordinate) of `pe`'s tensor, element-wise atomic (concurrent reduces from several PEs all
/// apply). The tensor's dtype must support Op (tma_reduce_supported; checked with
/// TMASHMEM_DEVICE_DEBUG). Commits one bulk async-group; completion and visibility as for
/// tma_put_tile.
template <TileReduceOp Op>
__device__ __forceinline__ void tma_reduce_tile(const TileTensor& t, int pe, TileCoord c,
                                                const void* smem) {
  detail::check_tile_call("tma_reduce_tile", t, pe, c, smem, true);
#ifdef TMASHMEM_DEVICE_DEBUG
  if (!tma_reduce_supported(Op, t.dtype))
    detail::tile_trap(t, "tma_reduce_tile", pe,
                      "the tensor's dtype has no TMA reduction for this op (tma_reduce_supported)",
                      t.dtype);
#endif
  fence_proxy_async_shared();
  detail::tile_reduce_issue<Op>(reinterpret_cast<uint64_t>(tma_tensor_map(t, pe)),
                                detail::smem_u32(smem), c);
  bulk_commit_group();
}

/// The same with the dtype fixed at compile time, so an unsupported pair fails to compile.
template <TileReduceOp Op, tmashmem_dtype_t DType>
__device__ __forceinline__ void tma_reduce_tile(const TileTensor& t, int pe, TileCoord c,
                                                const void* smem) {
  static_assert(tma_reduce_supported(Op, DType),
                "TMA has no reduction of this dtype with this op (see tma_reduce_supported)");
  tma_reduce_tile<Op>(t, pe, c, smem);
}

/// Puts the tile, waits until ALL of this thread's bulk async-groups have completed, then
/// releases at system scope and updates `pe`'s copy of the symmetric uint64 `signal`
/// (SignalOp::Set: store `value`; SignalOp::Add: atomically add it). A PE that observes the new
/// signal value with acquire semantics (signal_wait_until) then sees the whole tile. `signal` is
/// this PE's address of a symmetric allocation, 8-byte aligned; `smem` may be reused on
/// return.
__device__ __forceinline__ void tma_put_tile_signal(const TileTensor& t, int pe, TileCoord c,
                                                    const void* smem, uint64_t* signal,
                                                    uint64_t value, SignalOp op = SignalOp::Set) {
  tma_put_tile(t, pe, c, smem);
  bulk_wait_group<0>();
  // The completed writes were made by the async proxy: order them before the generic-proxy
  // release below, then publish.
  asm volatile("fence.proxy.async.global;" ::: "memory");
  uint64_t* peer = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(signal) +
                                               static_cast<int64_t>(pe - t.my_pe) *
                                                   static_cast<int64_t>(t.peer_stride));
  if (op == SignalOp::Set)
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(peer), "l"(value) : "memory");
  else
    asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(peer), "l"(value) : "memory");
}

/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from this CTA's shared
/// memory `src` into the shared memory of the cluster CTA `dst_cta_rank`, at the same offset
/// as this CTA's `dst`; completes `bytes` on that CTA's mbarrier at the same offset as
/// `dst_bar`. The receiver announces the bytes on its own barrier (expect_tx) and waits on
/// it; its barrier must be initialised before the copy is issued (cluster_sync() after
/// init). The sender learns nothing about completion: it must not overwrite `src` or exit
/// before the receiver says it is done (e.g. a final cluster_sync()).
__device__ __forceinline__ void dsmem_copy_to_cta(void* dst, const void* src, uint32_t bytes,
                                                  uint32_t dst_cta_rank, Mbarrier& dst_bar) {
#ifdef TMASHMEM_DEVICE_DEBUG
  if ((detail::smem_u32(dst) | detail::smem_u32(src) | bytes) % 16 != 0) {
    printf("[tmashmem] dsmem_copy_to_cta: dst %u, src %u and bytes %u must be multiples of 16\n",
           detail::smem_u32(dst), detail::smem_u32(src), bytes);
    __trap();
  }
#endif
  fence_proxy_async_shared();
  const uint32_t remote_dst = cluster_map_shared(dst, dst_cta_rank);
  const uint32_t remote_bar = cluster_map_shared(&dst_bar, dst_cta_rank);
  asm volatile(
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, "
      "[%3];" ::"r"(remote_dst),
      "r"(detail::smem_u32(src)), "r"(bytes), "r"(remote_bar)
      : "memory");
}

}  // namespace tmashmem
