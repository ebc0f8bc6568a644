// Ordering and completion of a thread's communication: fence() and quiet().
//
// Memory-ordering contract (DESIGN.md, "Memory model of the device API"):
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

namespace tmashmem {
namespace detail {

// ---- strong memory operations on generic addresses (global memory) ----------

__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t ld_acquire_gpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t ld_relaxed_gpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_release_gpu(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_relaxed_gpu(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void red_relaxed_sys_add(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void red_relaxed_gpu_add(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void red_release_sys_add(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void red_release_gpu_add(uint64_t* p, uint64_t v) {
  asm volatile("red.release.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t atom_acq_rel_gpu_add(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

// ---- fences -----------------------------------------------------------------

__device__ __forceinline__ void fence_acq_rel_sys() {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }

// Orders this thread's generic-proxy accesses (all state spaces) with its
// async-proxy (cp.async.bulk) accesses, both ways.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async;" ::: "memory");
}

// Waits until every bulk async-group this thread committed has completed, its
// writes included; completion makes the writes visible to the generic proxy.
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// ---- time ---------------------------------------------------------------------

// Nanoseconds from the GPU's global timer (same clock on every SM).
__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A deadline for a bounded wait: 0 means "no bound". The clock starts at the 64th
// call to expired() and is read only every 64th call after that, so a wait that
// ends within 64 calls (a call per poll, or per burst of polls) never reads the
// global timer (it costs more than a poll), and a wait reports expiry no earlier
// than timeout_ns after it began.
struct Deadline {
  uint64_t timeout_ns;
  uint64_t end_ns = 0;
  unsigned calls = 0;
  __device__ __forceinline__ explicit Deadline(uint64_t timeout) : timeout_ns(timeout) {}
  __device__ __forceinline__ bool expired() {
    if (timeout_ns == 0 || (++calls & 63u) != 0) return false;
    const uint64_t now = global_timer_ns();
    if (end_ns == 0) {
      end_ns = now + timeout_ns;
      return false;
    }
    return now >= end_ns;
  }
};

}  // namespace detail

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
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

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
