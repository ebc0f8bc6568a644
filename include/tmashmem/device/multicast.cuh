// Multicast: one store, reduction load or reduction that reaches every PE of the node,
// through NVLink multicast (multimem instructions on ctx.mc_base) when the runtime set
// it up, else through a unicast fan-out over the peer mappings with the same result and
// the same ordering contract. The choice is made once per call from ctx.mc_base
// (tmashmem_mc_ptr, docs/multicast.md; the gate: docs/design.md, decision 7).
//
// Calls (T: uint32_t, int32_t, uint64_t, int64_t, float, double, __half, __nv_bfloat16;
// `count` elements; G: Coop::Thread, Warp or Block):
// - multicast_store<T, G, O>(ctx, dest, src, count): every reachable PE's copy of the
//   symmetric `dest` receives local `src`.
// - multicast_ld_reduce<Op, T, G, O>(ctx, dest, src, count): local `dest[i]` = Op over
//   every reachable PE (this one included) of that PE's copy of symmetric `src[i]`.
// - multicast_red<Op, T, G, O>(ctx, dest, src, count): on every reachable PE,
//   `dest[i] = dest[i] Op src[i]` atomically per element (src local, dest symmetric).
// Which (Op, T) exist is what the PTX ISA has (detail/multimem.cuh): add on all but
// int64_t; min/max on integers and the 16-bit floats (not float/double); and/or/xor on
// integers; multicast_red on floats is add only. Other combinations do not compile.
// 16-bit floats are accessed in pairs: `count` even and addresses 4-byte aligned (there
// is no 16-bit multimem access). Every address is aligned to its element (8 bytes for
// 64-bit types); 16-byte aligned ranges move 16 bytes per access.
// Floating-point add of 16-bit types accumulates in f32 (.acc::f32) and rounds once; the
// fallback sums in ascending PE order, multimem in an order the hardware chooses, so
// results agree exactly only where float addition is exact (e.g. small integers).
// "Reachable": every local PE with is_reachable(ctx, pe); with multicast every local PE
// (the gate requires one GPU per PE and peer access between all of them).
//
// Memory-ordering contract (O):
// - McOrder::Relaxed (default): each element access is a strong relaxed system-scope
//   access with no ordering between them or with other accesses, like p(); publish
//   with fence()/quiet() and a releasing signal, or a barrier.
// - McOrder::Release (store, red): every write that happens before the call in the
//   calling thread (for Warp/Block, in any thread of the group before it called) is
//   visible to a thread that observes any element this call wrote and then acquires.
//   Multimem: each access is .release; fallback: fence.acq_rel.sys, then relaxed accesses.
// - McOrder::Acquire (ld_reduce): reads by the calling thread (the group, after the
//   call) that follow the call see what the writers published before the values it
//   loaded. Multimem: each load is .acquire; fallback: relaxed loads, then fence.acq_rel.sys.
// - Warp and Block forms are collective (every thread of the warp / block calls with the
//   same arguments, converged) and end with __syncwarp() / __syncthreads(); partial last
//   warps are supported.
//
// The multimem paths are built for sm_90a but have never run on the lent machines,
// whose runtime never creates multicast objects (docs/multicast.md); the fallback is
// what the GPU tests run.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>

#ifdef TMASHMEM_DEVICE_DEBUG
#include <cstdio>
#endif

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/multicast_word.cuh"
#include "tmashmem/device/detail/multimem.cuh"
#include "tmashmem/device/order.cuh"
#include "tmashmem/device/rma.cuh"

namespace tmashmem {

/// Who makes a collective call: one thread, a whole warp, or a whole block.
enum class Coop { Thread, Warp, Block };
/// Memory semantics of a multicast call (see the contract above).
enum class McOrder { Relaxed, Release, Acquire };
/// The reduction of multicast_ld_reduce / multicast_red.
using McReduce = detail::McOp;

namespace detail {

template <Coop G>
struct CoopGroup {
  __device__ __forceinline__ static unsigned rank() {
    if constexpr (G == Coop::Thread) return 0;
    if constexpr (G == Coop::Warp) return block_thread_rank() & 31u;
    return block_thread_rank();
  }
  __device__ __forceinline__ static unsigned size() {
    if constexpr (G == Coop::Thread) return 1;
    if constexpr (G == Coop::Warp) return static_cast<unsigned>(__popc(warp_member_mask()));
    return block_thread_count();
  }
  __device__ __forceinline__ static void sync() {
    if constexpr (G == Coop::Warp) __syncwarp(warp_member_mask());
    if constexpr (G == Coop::Block) __syncthreads();
  }
};

// The layout of one call: `vectors` 16-byte units, then `words` more words.
struct McSpan {
  size_t vectors;
  size_t words;
};

// Calls f(span) with the layout of a call on `count` elements at a and b: 16-byte units (when
// v4 and both addresses are 16-byte aligned) and the rest in words, else words only. Two
// calls of f, so that in each the loops' bounds depend on `count` alone: a layout selected
// from the addresses put its arithmetic in front of every call's first load, 0.07-0.1 us of
// a 64-256 KiB call whose addresses change from call to call. The second instantiation costs
// 0.02-0.12 us where a loop repeats a call on the same addresses (the compiler hoisted the
// select there; docs/runs.md, "Eighteenth session").
template <class T, class F>
__device__ __forceinline__ void with_mc_span(const void* a, const void* b, size_t count, bool v4,
                                             F&& f) {
  const size_t bytes = count * sizeof(T);
  if (v4 && ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15u) == 0)
    f(McSpan{bytes / 16, bytes % 16 / sizeof(McWord<T>)});
  else
    f(McSpan{0, bytes / sizeof(McWord<T>)});
}

__device__ __forceinline__ char* mc_address(const Ctx& ctx, const void* p) {
  return reinterpret_cast<char*>(ctx.mc_base + (reinterpret_cast<uintptr_t>(p) - ctx.heap_base));
}

// The fallback's fan-out: the reachable PEs of this node, read from the context once per
// call. each(p, f) calls f(q) with q = ptr(ctx, p, pe) for every reachable local PE, in
// ascending order. The loops around it issue strong accesses (asm volatile with a memory
// clobber), after which the compiler must reload anything it reads from the context: held
// in registers, the fan-out costs one add and one bit test per PE and element.
struct McPeers {
  int64_t first_delta;  // bytes from this PE's copy to first_local_pe's
  int64_t stride;       // bytes between consecutive PEs' copies
  uint64_t mask;        // bit s: PE first_local_pe + s is reachable
  int count;            // local PEs, at most 64

  template <class P, class F>
  __device__ __forceinline__ void each(P* p, F&& f) const {
    char* q = const_cast<char*>(reinterpret_cast<const char*>(p)) + first_delta;
    for (int s = 0; s < count; ++s, q += stride)
      if ((mask >> s) & 1u) f(reinterpret_cast<P*>(q));
  }
};

// Whether the warp of group rank `rank` has an element of `span` (rank r takes elements r,
// r + size, ...). A warp without one skips the fan-out's set-up and goes to the group's
// closing barrier: in a 1024-thread block moving a few KiB most warps have nothing, and
// their set-up would take issue slots from the warps that copy.
__device__ __forceinline__ bool mc_warp_has_work(unsigned rank, const McSpan& span) {
  const size_t first = rank & ~31u;
  return first < span.vectors || first < span.words;
}

__device__ __forceinline__ McPeers mc_peers(const Ctx& ctx) {
  McPeers r;
  r.stride = static_cast<int64_t>(ctx.peer_stride);
  r.first_delta = static_cast<int64_t>(ctx.first_local_pe - ctx.my_pe) * r.stride;
  r.count = ctx.n_local_pes < 64 ? ctx.n_local_pes : 64;
  r.mask = r.count == 64 ? ctx.reachable : ctx.reachable & ((uint64_t(1) << r.count) - 1);
  return r;
}

// The start of a writing fallback (store, red): Release orders the group's earlier writes
// (the group synchronised before) ahead of this thread's relaxed accesses; then the peers.
template <McOrder O>
__device__ __forceinline__ McPeers mc_fanout_begin(const Ctx& ctx) {
  if (O == McOrder::Release) fence_acq_rel_sys();
  return mc_peers(ctx);
}

template <class T>
__device__ __forceinline__ void check_multicast_args(const Ctx& ctx, const void* symmetric,
                                                     const void* local, size_t count,
                                                     const char* what) {
  static_assert(kMulticastType<T>,
                "multicast calls take uint32_t, int32_t, uint64_t, int64_t, float, double, __half "
                "or __nv_bfloat16 elements");
#ifdef TMASHMEM_DEVICE_DEBUG
  // Debug builds check what the contract asks and trap naming the call.
  const uintptr_t word = sizeof(McWord<T>);
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(symmetric) | reinterpret_cast<uintptr_t>(local)) % word) == 0;
  if (!aligned || (kHalfLike<T> && count % 2 != 0) || !in_heap(ctx, symmetric, count * sizeof(T))) {
    printf(
        "[tmashmem rank %d] %s: %llu elements at symmetric %p, local %p: addresses must be "
        "%llu-byte aligned, 16-bit types come in pairs (even count), and the symmetric range "
        "must lie in the heap (refresh the ctx after the heap grew)\n",
        ctx.my_pe, what, static_cast<unsigned long long>(count), symmetric, local,
        static_cast<unsigned long long>(word));
    __trap();
  }
#else
  (void)ctx;
  (void)symmetric;
  (void)local;
  (void)count;
  (void)what;
#endif
}

enum class McKind { Store, LdReduce, Red };

// One multicast call of kind K (op Op, elements T, group G, order O): what the ISA allows,
// checked at compile time (and its arguments in debug builds), and what the call works with.
template <McKind K, McOp Op, class T, Coop G, McOrder O>
struct McCall {
  static_assert(K != McKind::LdReduce || ld_reduce_exists<Op, T>(),
                "the PTX ISA has no multimem.ld_reduce for this (op, type): add has no int64_t, "
                "min/max no float/double, and/or/xor integers only");
  static_assert(K != McKind::Red || red_exists<Op, T>(),
                "the PTX ISA has no multimem.red for this (op, type): floats are add only, add "
                "has no int64_t, and/or/xor integers only");
  static_assert(K == McKind::LdReduce ? O != McOrder::Release : O != McOrder::Acquire,
                "multicast_store and multicast_red are Relaxed or Release, multicast_ld_reduce "
                "Relaxed or Acquire");
  using W = McWord<T>;
  using Group = CoopGroup<G>;
  using Instr = Multimem<Op, T>;  // complete only for the (op, type) pairs the ISA has
  static constexpr int kSem = O == McOrder::Relaxed ? 0 : 1;  // .release / .acquire
  const unsigned rank = Group::rank(), size = Group::size();

  __device__ __forceinline__ McCall(const Ctx& ctx, const void* symmetric, const void* local,
                                    size_t count, const char* what) {
    check_multicast_args<T>(ctx, symmetric, local, count, what);
  }
};

}  // namespace detail

/// Stores `count` elements of local `src` into every reachable PE's copy of symmetric
/// `dest` (see the contract at the top). O: Relaxed or Release.
template <class T, Coop G = Coop::Thread, McOrder O = McOrder::Relaxed>
__device__ __forceinline__ void multicast_store(const Ctx& ctx, T* dest, const T* src,
                                                size_t count) {
  using Call = detail::McCall<detail::McKind::Store, McReduce::Add, T, G, O>;
  using W = typename Call::W;
  const Call call(ctx, dest, src, count, "multicast_store");
  const char* s = reinterpret_cast<const char*>(src);
  if (O == McOrder::Release) Call::Group::sync();  // the group's earlier writes come first
  detail::with_mc_span<T>(dest, src, count, true, [&](const detail::McSpan span) {
    const size_t tail = span.vectors * 16;
    if (ctx.mc_base != 0) {
      char* m = detail::mc_address(ctx, dest);
      for (size_t i = call.rank; i < span.vectors; i += call.size)
        detail::multimem_st<Call::kSem>(m + 16 * i, detail::bits_of<uint4>(s + 16 * i));
      for (size_t i = call.rank; i < span.words; i += call.size)
        detail::multimem_st<Call::kSem>(m + tail + sizeof(W) * i,
                                        detail::bits_of<W>(s + tail + sizeof(W) * i));
    } else if (detail::mc_warp_has_work(call.rank, span)) {
      const detail::McPeers peers = detail::mc_fanout_begin<O>(ctx);
      char* d = reinterpret_cast<char*>(dest);
      // One load of the source, then a store into each peer: the hand-written fan-out.
      for (size_t i = call.rank; i < span.vectors; i += call.size) {
        const uint4 v = detail::bits_of<uint4>(s + 16 * i);
        peers.each(d + 16 * i, [&](char* q) { detail::st_relaxed_sys_v4(q, v); });
      }
      for (size_t i = call.rank; i < span.words; i += call.size) {
        const W w = detail::bits_of<W>(s + tail + sizeof(W) * i);
        peers.each(reinterpret_cast<W*>(d + tail) + i,
                   [&](W* q) { detail::store_relaxed_sys(q, w); });
      }
    }
  });
  Call::Group::sync();
}

/// Local `dest[i]` = Op over every reachable PE of its copy of symmetric `src[i]` (see the
/// contract at the top). O: Relaxed or Acquire.
template <McReduce Op, class T, Coop G = Coop::Thread, McOrder O = McOrder::Relaxed>
__device__ __forceinline__ void multicast_ld_reduce(const Ctx& ctx, T* dest, const T* src,
                                                    size_t count) {
  using Call = detail::McCall<detail::McKind::LdReduce, Op, T, G, O>;
  using W = typename Call::W;
  using Instr = typename Call::Instr;
  const Call call(ctx, src, dest, count, "multicast_ld_reduce");
  const bool v4 = detail::multimem_v4<Op, T>(false) || ctx.mc_base == 0;
  detail::with_mc_span<T>(dest, src, count, v4, [&](const detail::McSpan span) {
    char* d = reinterpret_cast<char*>(dest);
    const size_t tail = span.vectors * 16;
    if (ctx.mc_base != 0) {
      const char* m = detail::mc_address(ctx, src);
      if constexpr (detail::multimem_v4<Op, T>(false))
        for (size_t i = call.rank; i < span.vectors; i += call.size)
          *reinterpret_cast<uint4*>(d + 16 * i) =
              Instr::template ld_reduce_v4<Call::kSem>(m + 16 * i);
      for (size_t i = call.rank; i < span.words; i += call.size)
        reinterpret_cast<W*>(d + tail)[i] =
            Instr::template ld_reduce<Call::kSem>(m + tail + sizeof(W) * i);
    } else if (detail::mc_warp_has_work(call.rank, span)) {
      const char* s = reinterpret_cast<const char*>(src);
      const detail::McPeers peers = detail::mc_peers(ctx);
      constexpr unsigned kPerVector = 16 / sizeof(W);
      for (size_t i = call.rank; i < span.vectors; i += call.size) {
        detail::McAccumulator<Op, T> acc[kPerVector];
        bool started = false;
        peers.each(s + 16 * i, [&](const char* q) {
          const uint4 v = detail::ld_relaxed_sys_v4(q);
          W w[kPerVector];
          memcpy(w, &v, 16);
          for (unsigned k = 0; k < kPerVector; ++k) started ? acc[k].add(w[k]) : acc[k].first(w[k]);
          started = true;
        });
        W out[kPerVector];
        for (unsigned k = 0; k < kPerVector; ++k) out[k] = acc[k].result();
        memcpy(d + 16 * i, out, 16);
      }
      for (size_t i = call.rank; i < span.words; i += call.size) {
        detail::McAccumulator<Op, T> acc;
        bool started = false;
        peers.each(reinterpret_cast<const W*>(s + tail) + i, [&](const W* q) {
          const W w = detail::load_relaxed_sys(q);
          started ? acc.add(w) : acc.first(w);
          started = true;
        });
        reinterpret_cast<W*>(d + tail)[i] = acc.result();
      }
      if (O == McOrder::Acquire) detail::fence_acq_rel_sys();
    }
  });
  Call::Group::sync();
}

/// On every reachable PE, `dest[i] = dest[i] Op src[i]`, atomically per element (src
/// local, dest symmetric; see the contract at the top). O: Relaxed or Release.
template <McReduce Op, class T, Coop G = Coop::Thread, McOrder O = McOrder::Relaxed>
__device__ __forceinline__ void multicast_red(const Ctx& ctx, T* dest, const T* src, size_t count) {
  using Call = detail::McCall<detail::McKind::Red, Op, T, G, O>;
  using W = typename Call::W;
  using Instr = typename Call::Instr;
  const Call call(ctx, dest, src, count, "multicast_red");
  const bool v4 = ctx.mc_base != 0 && detail::multimem_v4<Op, T>(true);
  const char* s = reinterpret_cast<const char*>(src);
  if (O == McOrder::Release) Call::Group::sync();
  detail::with_mc_span<T>(dest, src, count, v4, [&](const detail::McSpan span) {
    const size_t tail = span.vectors * 16;
    if (ctx.mc_base != 0) {
      char* m = detail::mc_address(ctx, dest);
      if constexpr (detail::multimem_v4<Op, T>(true))
        for (size_t i = call.rank; i < span.vectors; i += call.size)
          Instr::template red_v4<Call::kSem>(m + 16 * i, detail::bits_of<uint4>(s + 16 * i));
      for (size_t i = call.rank; i < span.words; i += call.size)
        Instr::template red<Call::kSem>(m + tail + sizeof(W) * i,
                                        detail::bits_of<W>(s + tail + sizeof(W) * i));
    } else if (detail::mc_warp_has_work(call.rank, span)) {
      const detail::McPeers peers = detail::mc_fanout_begin<O>(ctx);
      char* d = reinterpret_cast<char*>(dest);
      for (size_t i = call.rank; i < span.words; i += call.size) {
        const W w = detail::bits_of<W>(s + sizeof(W) * i);
        peers.each(d + sizeof(W) * i, [&](char* q) { Instr::red_unicast(q, w); });
      }
    }
  });
  Call::Group::sync();
}

}  // namespace tmashmem
