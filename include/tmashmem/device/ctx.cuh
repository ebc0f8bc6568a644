// The device context and peer addressing.
//
// Kernels take the context by value, `const __grid_constant__ tmashmem_ctx_t ctx`,
// filled on the host by tmashmem_device_ctx(); nothing here reads a __constant__
// symbol, so this works without relocatable device code and from NVRTC.
//
// Peer addressing is one multiply-add (docs/design.md, decision 2): PE q's copy of a symmetric
// address p is p + (q - my_pe) * peer_stride, valid when q is load/store reachable.
//
// Debug builds (define TMASHMEM_DEVICE_DEBUG before including any tmashmem device
// header) check peer arguments in every call that takes one and trap with a message
// naming the rank, the PE and the address; release builds do no checks.
#pragma once

#include <stdint.h>

#include "tmashmem/ctx.h"

#ifdef TMASHMEM_DEVICE_DEBUG
#include <cstdio>
#endif

namespace tmashmem {

using Ctx = tmashmem_ctx_t;

/// This PE's rank, 0 <= my_pe < n_pes.
__host__ __device__ __forceinline__ int my_pe(const Ctx& ctx) { return ctx.my_pe; }

/// Number of PEs in the job.
__host__ __device__ __forceinline__ int n_pes(const Ctx& ctx) { return ctx.n_pes; }

namespace detail {

// The one decoder of the reachability fields that the context and every tensor handle
// carry (ctx.h): PE `pe` is local PE first_local_pe + s, reachable when bit s is set.
__host__ __device__ __forceinline__ bool reachable_local_pe(int first_local_pe, int n_local_pes,
                                                            uint64_t reachable, int pe) {
  const unsigned slot = static_cast<unsigned>(pe - first_local_pe);
  return slot < static_cast<unsigned>(n_local_pes) && slot < 64u && ((reachable >> slot) & 1u) != 0;
}

}  // namespace detail

/// True when PE `pe`'s heap is mapped into this PE's address space, so that loads,
/// stores, atomics and bulk copies can reach it (always true for my_pe).
__host__ __device__ __forceinline__ bool reachable(const Ctx& ctx, int pe) {
  return detail::reachable_local_pe(ctx.first_local_pe, ctx.n_local_pes, ctx.reachable, pe);
}

/// The same as reachable(ctx, pe).
__host__ __device__ __forceinline__ bool is_reachable(const Ctx& ctx, int pe) {
  return reachable(ctx, pe);
}

/// True when every PE of the job is load/store reachable from this one (one node,
/// peer access everywhere): what the device barriers need.
__host__ __device__ __forceinline__ bool all_reachable(const Ctx& ctx) {
  if (ctx.first_local_pe != 0 || ctx.n_local_pes != ctx.n_pes || ctx.n_pes <= 0 || ctx.n_pes > 64)
    return false;
  const uint64_t all = ctx.n_pes == 64 ? ~uint64_t(0) : (uint64_t(1) << ctx.n_pes) - 1;
  return (ctx.reachable & all) == all;
}

/// True when [p, p + bytes) lies in this PE's heap as the context knows it. A
/// context taken before a tmashmem_malloc that grew the heap has a smaller
/// heap_size: refresh it with tmashmem_device_ctx().
__host__ __device__ __forceinline__ bool in_heap(const Ctx& ctx, const void* p, uint64_t bytes) {
  const uint64_t a = reinterpret_cast<uintptr_t>(p);
  return a >= ctx.heap_base && a - ctx.heap_base <= ctx.heap_size &&
         bytes <= ctx.heap_size - (a - ctx.heap_base);
}

/// Address of the symmetric object `p` (an address in this PE's heap) on PE `pe`,
/// usable by this PE's loads, stores, atomics and bulk copies; nullptr when `pe` is
/// not reachable. Pure arithmetic: `p` is not checked against the heap (debug builds
/// check it in the calls that move data). ptr(ctx, p, my_pe(ctx)) == p.
template <class T>
__host__ __device__ __forceinline__ T* ptr(const Ctx& ctx, T* p, int pe) {
  const int64_t delta =
      static_cast<int64_t>(pe - ctx.my_pe) * static_cast<int64_t>(ctx.peer_stride);
  const uintptr_t peer = reinterpret_cast<uintptr_t>(p) + static_cast<uint64_t>(delta);
  // Masked, not branched: the address and the test have no branch between them and the
  // caller's next instructions, so the compiler may hoist both out of a caller's loop and
  // schedule independent loads before them (a block put's loads issue while its peer
  // address is computed; docs/runs.md, "Twelfth session").
  const uint64_t keep = uint64_t(0) - uint64_t(is_reachable(ctx, pe));
  return reinterpret_cast<T*>(peer & keep);
}

namespace detail {

// Address of `p` on `pe` for a call named `what` that will access `bytes` bytes
// there. Debug builds trap on an unreachable PE or an address outside the heap.
template <class T>
__device__ __forceinline__ T* peer_address(const Ctx& ctx, T* p, int pe, uint64_t bytes,
                                           const char* what) {
#ifdef TMASHMEM_DEVICE_DEBUG
  if (pe < 0 || pe >= ctx.n_pes || !is_reachable(ctx, pe)) {
    printf(
        "[tmashmem rank %d] %s: PE %d is not load/store reachable from this PE (n_pes %d); "
        "check is_reachable(ctx, pe) first\n",
        ctx.my_pe, what, pe, ctx.n_pes);
    __trap();
  }
  if (!in_heap(ctx, p, bytes)) {
    printf(
        "[tmashmem rank %d] %s: [%p, +%llu bytes) is not in the symmetric heap [%p, +%llu); "
        "pass an address from tmashmem_malloc (and refresh the ctx after the heap grew)\n",
        ctx.my_pe, what, static_cast<const void*>(p), static_cast<unsigned long long>(bytes),
        reinterpret_cast<const void*>(ctx.heap_base),
        static_cast<unsigned long long>(ctx.heap_size));
    __trap();
  }
#else
  (void)bytes;
  (void)what;
#endif
  return ptr(ctx, p, pe);
}

}  // namespace detail
}  // namespace tmashmem
