// Remote memory access: scalar p/g and blocking put/get at thread, warp and block
// scope; the non-blocking bulk put_nbi/get_nbi are in bulk.cuh (included).
//
// Addresses: `dest` of a put and `src` of a get are symmetric addresses in THIS PE's
// heap (what tmashmem_malloc returned); the call reaches PE `pe`'s copy. The other
// side (`src` of a put, `dest` of a get) is device memory of this GPU: the heap or
// cudaMalloc memory (the blocking forms also accept mapped pinned host memory).
// `pe` must be reachable (is_reachable); debug builds (TMASHMEM_DEVICE_DEBUG) trap
// otherwise. Ranges may not overlap (memcpy semantics). Any alignment and any size
// are correct; 16-byte vector accesses are used wherever source and destination
// allow it.
//
// Memory-ordering contract (see order.cuh for fence/quiet):
//
// - p: one relaxed system-scope store of a naturally aligned 1/2/4/8-byte value.
// - g: one relaxed system-scope load; returns a value some store wrote.
// - put / put_warp / put_block: weak stores into the peer. On return the source may
//   be reused (by any thread of the group, for the warp and block forms). They are
//   not ordered with other puts or signals of this thread unless a fence(),
//   quiet(), or a signal with release semantics (signal_op, put_signal) follows.
// - get / get_warp / get_block: weak loads from the peer; on return the data is in
//   `dest` and visible to the group. A get observes the peer's writes that are
//   published to this PE (by a signal this PE acquired, or a barrier).
// - put_nbi / get_nbi (bulk.cuh, included here): bulk copies, final after quiet().
// - Warp and block forms are collective: every thread of the warp (resp. block)
//   calls with the same arguments, converged; they end with __syncwarp() (resp.
//   __syncthreads()). Partial last warps of a block are supported.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/copy_loop.cuh"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/detail/threads.cuh"
#include "tmashmem/device/order.cuh"

namespace tmashmem {
namespace detail {

template <class T>
struct ScalarBits {
  static_assert(std::is_trivially_copyable<T>::value, "p/g need a trivially copyable type");
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "p/g move 1, 2, 4 or 8 bytes; use put/get for larger objects");
  using type = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
};

// One relaxed system-scope store / load of T's bits.
template <class T>
__device__ __forceinline__ void store_relaxed_sys(T* p, T value) {
  using U = typename ScalarBits<T>::type;
  U bits;
  memcpy(&bits, &value, sizeof(T));
  st_relaxed_sys(reinterpret_cast<U*>(p), bits);
}

template <class T>
__device__ __forceinline__ T load_relaxed_sys(const T* p) {
  using U = typename ScalarBits<T>::type;
  const U bits = ld_relaxed_sys(reinterpret_cast<const U*>(p));
  T value;
  memcpy(&value, &bits, sizeof(T));
  return value;
}

}  // namespace detail

// ---- scalars ------------------------------------------------------------------

/// Stores `value` into PE `pe`'s copy of `*dest`: one relaxed system-scope store.
/// T is trivially copyable of 1, 2, 4 or 8 bytes; `dest` naturally aligned.
/// Unordered with other puts until fence()/quiet() or a releasing signal.
template <class T>
__device__ __forceinline__ void p(const Ctx& ctx, T* dest, T value, int pe) {
  detail::store_relaxed_sys(detail::peer_address(ctx, dest, pe, sizeof(T), "p"), value);
}

/// Loads PE `pe`'s copy of `*src`: one relaxed system-scope load (never cached
/// across calls, so it may be polled). T and alignment as for p().
template <class T>
__device__ __forceinline__ T g(const Ctx& ctx, const T* src, int pe) {
  return detail::load_relaxed_sys(detail::peer_address(ctx, src, pe, sizeof(T), "g"));
}

// ---- blocking bulk, byte counts ---------------------------------------------------

/// Copies `bytes` from local `src` to PE `pe`'s copy of symmetric `dest`. Thread
/// scope. On return `src` may be reused; delivery is ordered by fence()/quiet() or
/// a releasing signal.
__device__ __forceinline__ void putmem(const Ctx& ctx, void* dest, const void* src, size_t bytes,
                                       int pe) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put");
  detail::copy_bytes(remote, static_cast<const char*>(src), bytes, 0, 1);
}

/// putmem for a whole warp (collective, converged, same arguments); ends with
/// __syncwarp(), after which any lane may reuse `src`.
__device__ __forceinline__ void putmem_warp(const Ctx& ctx, void* dest, const void* src,
                                            size_t bytes, int pe) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_warp");
  const unsigned mask = detail::warp_member_mask();
  detail::copy_bytes(remote, static_cast<const char*>(src), bytes,
                     detail::block_thread_rank() & 31u, __popc(mask));
  __syncwarp(mask);
}

/// putmem for a whole block (collective, same arguments); ends with
/// __syncthreads(), after which any thread may reuse `src`.
__device__ __forceinline__ void putmem_block(const Ctx& ctx, void* dest, const void* src,
                                             size_t bytes, int pe) {
  const unsigned rank = detail::block_thread_rank();
  if (detail::warp_may_copy(rank, bytes)) {
    char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_block");
    detail::block_copy_bytes(remote, static_cast<const char*>(src), bytes, rank,
                             detail::block_thread_count());
  }
  __syncthreads();
}

/// Copies `bytes` from PE `pe`'s copy of symmetric `src` to local `dest`. Thread
/// scope; on return `dest` holds the data.
__device__ __forceinline__ void getmem(const Ctx& ctx, void* dest, const void* src, size_t bytes,
                                       int pe) {
  const char* remote = detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get");
  detail::copy_bytes(static_cast<char*>(dest), remote, bytes, 0, 1);
}

/// getmem for a whole warp; ends with __syncwarp(), after which every lane sees
/// all of `dest`.
__device__ __forceinline__ void getmem_warp(const Ctx& ctx, void* dest, const void* src,
                                            size_t bytes, int pe) {
  const char* remote =
      detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_warp");
  const unsigned mask = detail::warp_member_mask();
  detail::copy_bytes(static_cast<char*>(dest), remote, bytes, detail::block_thread_rank() & 31u,
                     __popc(mask));
  __syncwarp(mask);
}

/// getmem for a whole block; ends with __syncthreads(), after which every thread
/// sees all of `dest`.
__device__ __forceinline__ void getmem_block(const Ctx& ctx, void* dest, const void* src,
                                             size_t bytes, int pe) {
  const unsigned rank = detail::block_thread_rank();
  if (detail::warp_may_copy(rank, bytes)) {
    const char* remote =
        detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_block");
    detail::block_copy_bytes(static_cast<char*>(dest), remote, bytes, rank,
                             detail::block_thread_count());
  }
  __syncthreads();
}

// ---- typed forms (count in elements of T) ----------------------------------------

/// put, put_warp, put_block, get, get_warp, get_block: the byte form of the same name
/// (putmem, putmem_warp, ...) over `count` elements of T.
#define TMASHMEM_TYPED_RMA(NAME, BYTES)                                                     \
  template <class T>                                                                        \
  __device__ __forceinline__ void NAME(const Ctx& ctx, T* dest, const T* src, size_t count, \
                                       int pe) {                                            \
    BYTES(ctx, dest, src, count * sizeof(T), pe);                                           \
  }
TMASHMEM_TYPED_RMA(put, putmem)
TMASHMEM_TYPED_RMA(put_warp, putmem_warp)
TMASHMEM_TYPED_RMA(put_block, putmem_block)
TMASHMEM_TYPED_RMA(get, getmem)
TMASHMEM_TYPED_RMA(get_warp, getmem_warp)
TMASHMEM_TYPED_RMA(get_block, getmem_block)
#undef TMASHMEM_TYPED_RMA

}  // namespace tmashmem
