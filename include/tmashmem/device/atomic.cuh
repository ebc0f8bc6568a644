// Atomic memory operations on a peer's symmetric memory (32- and 64-bit integers).
//
// Memory-ordering contract:
//
// - Every call is one atomic read-modify-write of PE `pe`'s copy of `*dest` at
//   system scope (`atom.relaxed.sys` / `red.relaxed.sys`): atomic with respect to
//   every other atomic on that word from any thread of any PE, and with respect to
//   signal_op's updates of it.
// - RELAXED: an atomic is not ordered with this thread's other puts, gets or
//   atomics. To publish data with an atomic, fence() before it; to consume data
//   after reading a value, fence() after it (or use signals, which release and
//   acquire for you).
// - `dest` is a symmetric address of this PE's heap, naturally aligned. T is any
//   integral type of 4 or 8 bytes (signed types wrap like their unsigned twins).
// - Thread scope: each calling thread performs its own operation.
#pragma once

#include <stdint.h>

#include <type_traits>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/atom.cuh"

namespace tmashmem {
namespace detail {

template <class T>
struct AtomicBits {
  static_assert(std::is_integral<T>::value && !std::is_same<T, bool>::value,
                "tmashmem atomics take 32- or 64-bit integer types");
  static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                "tmashmem atomics take 32- or 64-bit integer types");
  using type = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
};

template <class T>
__device__ __forceinline__ T atomic_rmw(const Ctx& ctx, AtomicOp op, T* dest, T value, int pe,
                                        const char* what) {
  using U = typename AtomicBits<T>::type;
  U* remote = reinterpret_cast<U*>(peer_address(ctx, dest, pe, sizeof(T), what));
  return static_cast<T>(atom_relaxed_sys(op, remote, static_cast<U>(value)));
}

}  // namespace detail

/// Atomically adds `value` to PE `pe`'s `*dest`; returns the previous value.
template <class T>
__device__ __forceinline__ T atomic_fetch_add(const Ctx& ctx, T* dest, T value, int pe) {
  return detail::atomic_rmw(ctx, detail::AtomicOp::Add, dest, value, pe, "atomic_fetch_add");
}

/// Atomically adds `value` to PE `pe`'s `*dest` (no result: a fire-and-forget
/// reduction, cheaper than atomic_fetch_add).
template <class T>
__device__ __forceinline__ void atomic_add(const Ctx& ctx, T* dest, T value, int pe) {
  using U = typename detail::AtomicBits<T>::type;
  U* remote = reinterpret_cast<U*>(detail::peer_address(ctx, dest, pe, sizeof(T), "atomic_add"));
  detail::red_add_relaxed_sys(remote, static_cast<U>(value));
}

/// Atomically replaces PE `pe`'s `*dest` with `value`; returns the previous value.
template <class T>
__device__ __forceinline__ T atomic_swap(const Ctx& ctx, T* dest, T value, int pe) {
  return detail::atomic_rmw(ctx, detail::AtomicOp::Exch, dest, value, pe, "atomic_swap");
}

/// Atomically stores `desired` into PE `pe`'s `*dest` if it equals `expected`;
/// returns the previous value (== expected exactly when the store happened).
template <class T>
__device__ __forceinline__ T atomic_compare_swap(const Ctx& ctx, T* dest, T expected, T desired,
                                                 int pe) {
  using U = typename detail::AtomicBits<T>::type;
  U* remote =
      reinterpret_cast<U*>(detail::peer_address(ctx, dest, pe, sizeof(T), "atomic_compare_swap"));
  return static_cast<T>(
      detail::atom_cas_relaxed_sys(remote, static_cast<U>(expected), static_cast<U>(desired)));
}

/// Atomically ANDs `value` into PE `pe`'s `*dest`; returns the previous value.
template <class T>
__device__ __forceinline__ T atomic_fetch_and(const Ctx& ctx, T* dest, T value, int pe) {
  return detail::atomic_rmw(ctx, detail::AtomicOp::And, dest, value, pe, "atomic_fetch_and");
}

/// Atomically ORs `value` into PE `pe`'s `*dest`; returns the previous value.
template <class T>
__device__ __forceinline__ T atomic_fetch_or(const Ctx& ctx, T* dest, T value, int pe) {
  return detail::atomic_rmw(ctx, detail::AtomicOp::Or, dest, value, pe, "atomic_fetch_or");
}

/// Atomically XORs `value` into PE `pe`'s `*dest`; returns the previous value.
template <class T>
__device__ __forceinline__ T atomic_fetch_xor(const Ctx& ctx, T* dest, T value, int pe) {
  return detail::atomic_rmw(ctx, detail::AtomicOp::Xor, dest, value, pe, "atomic_fetch_xor");
}

}  // namespace tmashmem
