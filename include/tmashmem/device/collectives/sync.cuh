// The ready/done handshake of the collective building blocks: per-slot signals carrying
// the step's epoch (state.cuh), stored with release by one warp, one lane per peer, and
// awaited with acquire polls bounded by a timeout.
//
// Contract:
//  - coll_signal(ctx, st, row, step, peers): collective over the CTA. Begins with
//    __syncthreads, so every write the CTA made before the call (ordinary stores into
//    peers, and bulk copies that their issuing thread completed with
//    coll_complete_bulk) is visible to a PE that acquires the new value.
//  - coll_wait(...): collective over the CTA; returns when every PE in `peers` stored
//    at least step.epoch into this PE's row (then the CTA sees what they published), or
//    Status::Timeout, the same in every thread, after printing the PE, the call, the
//    slot, the epoch awaited and the value seen. timeout_ns 0 waits forever.
//  - Peer sets are 64-bit masks, bit q for PE q (n_pes <= kCollMaxPes).
#pragma once

#include <stdint.h>

#include <cstdio>

#include "tmashmem/device/collectives/state.cuh"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/threads.cuh"
#include "tmashmem/device/order.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/device/status.cuh"

namespace tmashmem {

/// Which of a slot's two signal rows a handshake uses.
enum class CollRow : int {
  Ready = 0,  ///< "my data (or my destination) is ready for this epoch"
  Done = 1,   ///< "I finished with yours for this epoch"
};

namespace detail {

__device__ __forceinline__ uint64_t* coll_row(const CollState& st, CollRow row, int slot) {
  return (row == CollRow::Ready ? st.ready : st.done) + static_cast<size_t>(slot) * kCollMaxPes;
}

__device__ __forceinline__ bool coll_is_leader() { return block_thread_rank() == 0; }

}  // namespace detail

/// Every PE but this one.
__host__ __device__ __forceinline__ uint64_t coll_all_peers(const Ctx& ctx) {
  const uint64_t all = ctx.n_pes >= 64 ? ~uint64_t(0) : (uint64_t(1) << ctx.n_pes) - 1;
  return all & ~(uint64_t(1) << ctx.my_pe);
}

/// Whether the collective building blocks can run on `slot` of `st` here: every PE
/// load/store reachable, at most kCollMaxPes PEs, and a slot the state has.
__device__ __forceinline__ bool coll_usable(const Ctx& ctx, const CollState& st, int slot) {
  return all_reachable(ctx) && ctx.n_pes <= kCollMaxPes && slot >= 0 && slot < st.slots;
}

/// Stores step.epoch into this PE's entry of `row` on every PE of `peers` (release).
__device__ __forceinline__ void coll_signal(const Ctx& ctx, const CollState& st, CollRow row,
                                            const CollStep& step, uint64_t peers) {
  __syncthreads();  // the CTA's writes happen-before each lane's release
  const unsigned tid = detail::block_thread_rank();
  if (tid < 32) {
    uint64_t* entry = detail::coll_row(st, row, step.slot) + ctx.my_pe;
    for (int q = static_cast<int>(tid); q < ctx.n_pes; q += 32)
      if ((peers >> q) & 1u) signal_op(ctx, entry, step.epoch, SignalOp::Set, q);
  }
}

/// Waits until every PE of `peers` stored at least step.epoch into `row` here (acquire).
/// `what` names the collective in the timeout message.
__device__ __forceinline__ Status coll_wait(const Ctx& ctx, const CollState& st, CollRow row,
                                            const CollStep& step, uint64_t peers,
                                            uint64_t timeout_ns, const char* what) {
  const unsigned tid = detail::block_thread_rank();
  bool failed = false;
  if (tid < 32) {
    const uint64_t* entries = detail::coll_row(st, row, step.slot);
    for (int q = static_cast<int>(tid); q < ctx.n_pes && !failed; q += 32) {
      if (!((peers >> q) & 1u)) continue;
      uint64_t seen = 0;
      if (!detail::poll_until(entries + q, Cmp::GE, step.epoch, timeout_ns, seen)) {
        printf(
            "[tmashmem PE %d] %s: timed out after %llu ns on signal slot %d waiting for PE %d's "
            "%s signal of epoch %llu (last seen %llu); is PE %d running the same collective "
            "with the same arguments and SM count?\n",
            ctx.my_pe, what, static_cast<unsigned long long>(timeout_ns), step.slot, q,
            row == CollRow::Ready ? "ready" : "done", static_cast<unsigned long long>(step.epoch),
            static_cast<unsigned long long>(seen), q);
        failed = true;
      }
    }
  }
  return __syncthreads_or(failed) ? Status::Timeout : Status::Ok;
}

}  // namespace tmashmem
