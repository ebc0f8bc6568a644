// Signals: 64-bit words in symmetric memory that one PE updates in a peer and the
// peer waits on. User signals live in ordinary symmetric allocations
// (tmashmem_malloc / tmashmem_calloc of uint64_t, 8-byte aligned); the library's
// own signal pad (signal_pad.h) is reserved for barriers.
//
// Memory-ordering contract:
//
// - signal_op(..., pe): one system-scope atomic update of PE `pe`'s signal with
//   RELEASE semantics: every write this thread made before it (blocking puts, p,
//   atomics, and anything that happens-before it, such as other threads' puts
//   ordered by a preceding __syncthreads) is visible to a thread that observes
//   the new value with an acquire. Bulk copies (put_nbi) are NOT covered until
//   this thread's quiet(); put_signal_nbi does that for you.
// - signal_op_relaxed(..., pe): the same update with NO ordering (a relaxed
//   atomic), like NVSHMEM's nvshmemx_signal_op. It publishes nothing by itself;
//   after fence() or quiet() it publishes what they ordered (fence + relaxed
//   store is a release), without signal_op's second fence.
// - put_signal / put_signal_warp / put_signal_block: the put, then (after the
//   group's sync) one thread's signal_op. A PE that saw the signal sees the data.
// - put_signal_nbi: put_nbi, then waits for this thread's bulk copies to finish
//   writing, then the releasing signal_op. On return src and stage may be reused;
//   the signal itself is in flight (it needs no further call to be delivered).
// - signal_wait_until: polls this PE's signal with system-scope ACQUIRE loads until
//   the comparison holds: data published before the signal it saw is visible to
//   the calling thread (and to its block after a __syncthreads). Thread scope.
//   With timeout_ns > 0 it returns Status::Timeout once at least that many
//   nanoseconds (GPU global timer) have passed; with 0 it waits forever. The
//   clock is first read after 64 bursts of kPollBurst polls and then every 64
//   bursts, so a quickly satisfied wait reads none. Debug builds
//   (TMASHMEM_DEVICE_DEBUG) print rank, peer, address, expected and seen values
//   and trap instead of returning Timeout.
// - Comparisons are unsigned 64-bit: seen OP value.
// - Scope: system scope, except that when every PE of the job runs on this PE's GPU
//   (tmashmem_ctx_t.flags & TMASHMEM_CTX_FLAG_ONE_GPU) the releasing calls
//   (signal_op, put_signal*, tma_put_tile_signal) release at GPU scope, which covers
//   every thread that can observe the signal and every byte it publishes, and costs
//   less than a system fence. Relaxed updates and the acquire polls of
//   signal_wait_until are system scope always (docs/device-api.md, "Why it is built
//   this way").
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/atom.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/order.cuh"
#include "tmashmem/device/rma.cuh"
#include "tmashmem/device/status.cuh"
#include "tmashmem/tmashmem.h"

#ifdef TMASHMEM_DEVICE_DEBUG
#include <cstdio>
#endif

namespace tmashmem {

/// How signal_op updates the signal.
enum class SignalOp : int {
  Set = TMASHMEM_SIGNAL_SET,  ///< signal = value
  Add = TMASHMEM_SIGNAL_ADD,  ///< signal += value (atomic)
};

/// How signal_wait_until compares: the wait ends when `signal <cmp> value` holds.
enum class Cmp : int {
  EQ = TMASHMEM_CMP_EQ,
  NE = TMASHMEM_CMP_NE,
  GT = TMASHMEM_CMP_GT,
  GE = TMASHMEM_CMP_GE,
  LT = TMASHMEM_CMP_LT,
  LE = TMASHMEM_CMP_LE,
};

namespace detail {

__host__ __device__ __forceinline__ bool compare(uint64_t seen, Cmp cmp, uint64_t value) {
  switch (cmp) {
    case Cmp::EQ:
      return seen == value;
    case Cmp::NE:
      return seen != value;
    case Cmp::GT:
      return seen > value;
    case Cmp::GE:
      return seen >= value;
    case Cmp::LT:
      return seen < value;
    case Cmp::LE:
      return seen <= value;
  }
  return false;
}

__host__ __device__ __forceinline__ const char* cmp_name(Cmp cmp) {
  constexpr const char* kNames[] = {"==", "!=", ">", ">=", "<", "<="};  // in Cmp's order
  const unsigned i = static_cast<unsigned>(cmp);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "?";
}

// Applies op to an already translated signal address with release semantics, at
// system scope, or at GPU scope when the whole job runs on this GPU (`one_gpu`, from
// ctx.h's TMASHMEM_CTX_FLAG_ONE_GPU), where every observer and every published byte
// is on this GPU and a system-scope fence would only add latency. The one signal
// path: signal_op, put_signal*, tma_put_tile_signal and the on-stream kernel use it.
__device__ __forceinline__ void signal_update_release(uint64_t* sig, uint64_t value, SignalOp op,
                                                      bool one_gpu = false) {
  if (one_gpu) {
    if (op == SignalOp::Add)
      red_add_release_gpu(sig, value);
    else
      st_release_gpu(sig, value);
    return;
  }
  if (op == SignalOp::Add)
    red_add_release_sys(sig, value);
  else
    st_release_sys(sig, value);
}

// Applies op with no ordering at all (relaxed), at system scope.
__device__ __forceinline__ void signal_update_relaxed(uint64_t* sig, uint64_t value, SignalOp op) {
  if (op == SignalOp::Add)
    red_add_relaxed_sys(sig, value);
  else
    st_relaxed_sys(sig, value);
}

// Polls until the comparison holds (true) or the deadline passes (false); `seen` is
// the last value read. The polls run in unrolled bursts of kPollBurst with nothing
// between two polls but the load and the compare (no counter, no back branch per
// poll: the detection latency follows the loop's period). The deadline is asked once
// per burst (it reads the clock only every 64th time). One acquire load per poll
// (docs/device-api.md, "Why it is built this way").
constexpr int kPollBurst = 8;

__device__ __forceinline__ bool poll_until(const uint64_t* sig, Cmp cmp, uint64_t value,
                                           uint64_t timeout_ns, uint64_t& seen) {
  Deadline deadline(timeout_ns);
  for (;;) {
#pragma unroll
    for (int i = 0; i < kPollBurst; ++i)
      if (compare(seen = ld_acquire_sys(sig), cmp, value)) return true;
    if (deadline.expired()) return false;
  }
}

__device__ __forceinline__ Status wait_until(const uint64_t* sig, Cmp cmp, uint64_t value,
                                             uint64_t timeout_ns, int rank, int from_pe) {
  uint64_t seen = 0;
  if (poll_until(sig, cmp, value, timeout_ns, seen)) return Status::Ok;
#ifdef TMASHMEM_DEVICE_DEBUG
  printf(
      "[tmashmem rank %d] signal_wait_until timed out after %llu ns: signal at %p (from PE %d) "
      "expected %s %llu, last seen %llu\n",
      rank, static_cast<unsigned long long>(timeout_ns), static_cast<const void*>(sig), from_pe,
      cmp_name(cmp), static_cast<unsigned long long>(value), static_cast<unsigned long long>(seen));
  __trap();
#else
  (void)rank;
  (void)from_pe;
#endif
  return Status::Timeout;
}

}  // namespace detail

/// Atomically sets (SignalOp::Set) or adds to (SignalOp::Add) PE `pe`'s copy of
/// the symmetric signal `sig`, with release semantics at system scope (GPU scope
/// when the whole job shares this GPU, which covers every observer; see the
/// contract above). Thread scope.
__device__ __forceinline__ void signal_op(const Ctx& ctx, uint64_t* sig, uint64_t value,
                                          SignalOp op, int pe) {
  detail::signal_update_release(detail::peer_address(ctx, sig, pe, sizeof(uint64_t), "signal_op"),
                                value, op, (ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) != 0);
}

/// signal_op WITHOUT release: one relaxed atomic update of PE `pe`'s signal, not
/// ordered with anything this thread wrote before it. Use it for a notification
/// that publishes no data, or right after fence() or quiet(), whose fence already
/// orders every earlier write of this thread (and of threads that synchronised
/// with it, e.g. through __syncthreads) before it: fence + relaxed store is a
/// release. This is what NVSHMEM's nvshmemx_signal_op does for a P2P peer (a
/// plain store or atomic); it saves the release's fence. Thread scope.
__device__ __forceinline__ void signal_op_relaxed(const Ctx& ctx, uint64_t* sig, uint64_t value,
                                                  SignalOp op, int pe) {
  detail::signal_update_relaxed(
      detail::peer_address(ctx, sig, pe, sizeof(uint64_t), "signal_op_relaxed"), value, op);
}

/// putmem(dest, src, bytes, pe), then signal_op(sig, value, op, pe). Thread scope.
/// A PE that observes the signal (acquire) sees the data.
__device__ __forceinline__ void put_signal(const Ctx& ctx, void* dest, const void* src,
                                           size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                                           int pe) {
  putmem(ctx, dest, src, bytes, pe);
  signal_op(ctx, sig, value, op, pe);
}

/// putmem_warp, then lane 0 signals. Collective over the warp (same arguments).
__device__ __forceinline__ void put_signal_warp(const Ctx& ctx, void* dest, const void* src,
                                                size_t bytes, uint64_t* sig, uint64_t value,
                                                SignalOp op, int pe) {
  putmem_warp(ctx, dest, src, bytes, pe);  // ends with __syncwarp: every lane's stores first
  if ((detail::block_thread_rank() & 31u) == 0) signal_op(ctx, sig, value, op, pe);
}

/// putmem_block, then thread 0 signals. Collective over the block (same arguments).
__device__ __forceinline__ void put_signal_block(const Ctx& ctx, void* dest, const void* src,
                                                 size_t bytes, uint64_t* sig, uint64_t value,
                                                 SignalOp op, int pe) {
  putmem_block(ctx, dest, src, bytes, pe);  // ends with __syncthreads: every thread's stores first
  if (detail::block_thread_rank() == 0) signal_op(ctx, sig, value, op, pe);
}

/// putmem_nbi through `stage`, then waits until this thread's bulk copies have
/// written their data, then signal_op with release semantics. Thread scope. On
/// return src and stage may be reused and the signal is on its way.
__device__ __forceinline__ void put_signal_nbi(const Ctx& ctx, void* dest, const void* src,
                                               size_t bytes, uint64_t* sig, uint64_t value,
                                               SignalOp op, int pe, BulkStage stage) {
  putmem_nbi(ctx, dest, src, bytes, pe, stage);
  detail::bulk_wait_all();
  detail::fence_proxy_async();
  signal_op(ctx, sig, value, op, pe);
}

/// Reads this PE's signal with an acquire load (system scope).
__device__ __forceinline__ uint64_t signal_fetch(const uint64_t* sig) {
  return detail::ld_acquire_sys(sig);
}

/// Waits until this PE's signal `*sig` compares `cmp` against `value` (acquire;
/// see the contract above). timeout_ns == 0 waits forever; otherwise returns
/// Status::Timeout when it expires (debug builds trap with a message instead).
__device__ __forceinline__ Status signal_wait_until(const uint64_t* sig, Cmp cmp, uint64_t value,
                                                    uint64_t timeout_ns = 0) {
  return detail::wait_until(sig, cmp, value, timeout_ns, -1, -1);
}

/// signal_wait_until whose debug-build timeout message also names this rank and
/// `from_pe`, the PE expected to signal (-1: unknown).
__device__ __forceinline__ Status signal_wait_until(const Ctx& ctx, const uint64_t* sig, Cmp cmp,
                                                    uint64_t value, uint64_t timeout_ns = 0,
                                                    int from_pe = -1) {
  return detail::wait_until(sig, cmp, value, timeout_ns, ctx.my_pe, from_pe);
}

}  // namespace tmashmem
