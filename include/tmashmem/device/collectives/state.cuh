// Collective state: the per-slot call counters (epochs) and the ready/done signals that
// every collective building block (tmashmem/device/collectives/) synchronises with.
//
// A *slot* is what one CTA uses for one collective step: slot b has, on every PE, one
// call counter (epochs[b], touched only by this PE's GPU) and two signal rows,
// ready[b][q] and done[b][q], each written only by PE q. A step on slot b takes the next
// epoch e = epochs[b] + 1 (coll_begin), stores e into the peers' rows (release), waits
// until the peers' entries in its own rows reach e (acquire, >=), and stores e back into
// epochs[b] (coll_end). Every PE runs the same steps on the same slots in the same order,
// so the epochs agree without any reset kernel or global barrier, across kernels and
// CUDA graph replays: the counters only grow (64 bits do not wrap).
//
// Contract:
//  - Every step stores Ready (of its epoch) to every peer, whichever peers read its
//    data: coll_exchange and coll_staged_exchange do. A kernel that calls coll_signal
//    itself on a state that staged steps also use must do the same.
//  - One CTA per slot at a time, and on every PE the same CTA-to-data assignment: slot b
//    of PE p only ever synchronises with slot b of the other PEs.
//  - Every PE load/store reachable (all_reachable(ctx)) and n_pes <= kCollMaxPes; the
//    building blocks return Status::Unreachable otherwise.
//  - The library's own state lives in the signal pad (coll_pad_state), shared by the
//    on-stream collectives (tmashmem/collectives.h): a user kernel that uses it must not
//    run concurrently with them on the same PE. A kernel that wants its own state
//    allocates coll_state_bytes(slots) of zeroed symmetric memory (tmashmem_calloc) and
//    calls coll_state(ptr, slots).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/signal_pad.h"

namespace tmashmem {

/// PEs a collective state addresses (the signal rows are this wide).
constexpr int kCollMaxPes = static_cast<int>(TMASHMEM_SIGNAL_PAD_COLL_PES);
/// Slots of the signal pad's collective region (TMASHMEM_COLL_MAX_SMS in collectives.h).
constexpr int kCollPadSlots = static_cast<int>(TMASHMEM_SIGNAL_PAD_COLL_SLOTS);

/// Where a collective's epochs and signals live (POD; pass by value).
struct CollState {
  uint64_t* epochs;  ///< [slots], this PE's call counters (local)
  uint64_t* ready;   ///< [slots][kCollMaxPes], symmetric: ready[b * kCollMaxPes + q] written by q
  uint64_t* done;    ///< the same for "done"
  int slots;
};

/// Bytes of symmetric memory a user-allocated state with `slots` slots needs.
__host__ __device__ constexpr size_t coll_state_bytes(int slots) {
  return static_cast<size_t>(slots) * (1u + 2u * kCollMaxPes) * sizeof(uint64_t);
}

/// A state over `slots` slots of zeroed symmetric memory at `base` (coll_state_bytes).
__host__ __device__ inline CollState coll_state(void* base, int slots) {
  uint64_t* p = static_cast<uint64_t*>(base);
  return CollState{p, p + slots, p + slots + static_cast<size_t>(slots) * kCollMaxPes, slots};
}

/// The library's state in the signal pad (signal_pad.h), kCollPadSlots slots.
__host__ __device__ inline CollState coll_pad_state(const Ctx& ctx) {
  auto* pad = reinterpret_cast<tmashmem_signal_pad_t*>(ctx.signal_pad);
  return CollState{pad->coll_epoch, pad->coll_ready, pad->coll_done, kCollPadSlots};
}

/// One collective step of one CTA: its slot and epoch.
struct CollStep {
  int slot;
  uint64_t epoch;
};

namespace detail {

// The next epoch of a slot's counter (this PE's, local), read by every thread; the
// barrier orders the previous step's epoch_end store before the loads. Collective over
// the CTA. The caller's epoch_end begins with a barrier, so no thread stores the new
// value before every thread has read the old one.
__device__ __forceinline__ uint64_t epoch_begin(uint64_t* counters, int slot) {
  __syncthreads();
  return *static_cast<volatile uint64_t*>(counters + slot) + 1;
}

// The slot's counter becomes `epoch`. Collective over the CTA.
__device__ __forceinline__ void epoch_end(uint64_t* counters, int slot, uint64_t epoch) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
    *static_cast<volatile uint64_t*>(counters + slot) = epoch;
}

}  // namespace detail

/// Starts a step on `slot`. Collective over the CTA (every thread, same arguments).
__device__ __forceinline__ CollStep coll_begin(const CollState& st, int slot) {
  const uint64_t e = detail::epoch_begin(st.epochs, slot);
  __syncthreads();  // every thread read the counter before coll_end may store it
  return CollStep{slot, e};
}

/// Ends the step: the slot's counter becomes the step's epoch. Collective over the CTA.
__device__ __forceinline__ void coll_end(const CollState& st, const CollStep& step) {
  detail::epoch_end(st.epochs, step.slot, step.epoch);
}

}  // namespace tmashmem
