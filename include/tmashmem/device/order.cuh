// Ordering and completion of a thread's communication: fence() and quiet().
//
// Memory-ordering contract (docs/device-api.md, "Memory-ordering contract"):
//
// - Blocking puts (p, put, put_warp, put_block) are ordinary (weak) stores into the
//   peer's memory; atomics are relaxed system-scope atomics; put_nbi / get_nbi move
//   their 16-byte aligned bulk through cp.async.bulk (the async proxy) and are in
//   flight until quiet(). None of these is ordered with another by itself.
// - fence(): every put, atomic and signal this thread issued before the fence is
//   ordered before every one it issues after, as observed by any PE that sees a
//   later one through an acquire (signal_wait_until, a barrier) or a strong read.
//   It also completes this thread's bulk operations (see quiet), because a bulk
//   copy cannot be ordered before a later store without waiting for it.
// - quiet(): completes everything this thread issued before it: its bulk groups
//   have finished writing (cp.async.bulk.wait_group 0, whose completion carries an
//   implicit generic-async proxy fence), and then a system-scope sequentially
//   consistent fence orders all of it before anything the thread does afterwards.
//   After quiet(), a release by this thread (signal_op, a barrier) publishes it all.
// - Signals (signal.cuh) store with release semantics and wait with acquire
//   semantics: data written before a signal (blocking puts; put_nbi after quiet) is
//   visible to a PE that saw the signal.
// - Scope: fence() and quiet() act for the calling thread. To publish the puts of
//   a whole block with one signal, each thread that used put_nbi calls quiet(),
//   then __syncthreads(), then one thread signals (put_signal_block does this).
// - Virtual aliases: the library reaches this PE's own heap through the same
//   address it gave (ptr(ctx, p, my_pe) == p). If you access one physical location
//   through two different addresses in one kernel, order them with
//   `fence.proxy.alias` yourself.
#pragma once

#include <stdint.h>

#include "tmashmem/device/detail/atom.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/ld_st.cuh"

namespace tmashmem {

/// Orders this thread's communication: every put, atomic and signal issued before
/// fence() is delivered to each peer before every one issued after it, as seen by
/// a PE that observes the later one with an acquire (signal_wait_until, barriers)
/// or a strong read. Completes this thread's outstanding bulk (put_nbi/get_nbi)
/// operations first. Thread scope; call it from any thread.
__device__ __forceinline__ void fence() {
  detail::bulk_wait_all();
  detail::fence_proxy_async();
  detail::fence_acq_rel_sys();
}

/// Orders this thread's earlier ordinary (generic-proxy) accesses to global memory
/// before later bulk copies (put_nbi/get_nbi, cp.async.bulk, TMA) of the same memory
/// issued by ANY thread that synchronises with this one afterwards (e.g. after a
/// __syncthreads). Bulk copies fence the issuing thread's own accesses; every other
/// thread that wrote a put_nbi source (or will be overwritten by a get_nbi) calls
/// this before the barrier that precedes the issuing call.
__device__ __forceinline__ void fence_proxy_async_global() { detail::fence_proxy_async_global(); }

/// Orders this thread's earlier ordinary shared-memory stores before later async-proxy
/// reads of them (tile puts, reduces, DSMEM copies issued after a barrier, by any thread).
__device__ __forceinline__ void fence_proxy_async_shared() { detail::fence_proxy_async_shared(); }

/// Completes all of this thread's communication: every bulk copy it issued has
/// finished writing (source and destination both final), and all its puts,
/// atomics and signals are ordered (system scope, sequentially consistent fence)
/// before anything it does next. After quiet(), get_nbi destinations may be read
/// and put_nbi sources overwritten; a following release (signal_op, barrier)
/// publishes all of it. Thread scope; call it from any thread.
__device__ __forceinline__ void quiet() {
  detail::bulk_wait_all();
  detail::fence_proxy_async();
  detail::fence_sc_sys();
}

}  // namespace tmashmem
