// The one handshake every collective building block runs: a CTA's step on one slot.
//
//   coll_begin                     next epoch e of the slot
//   prologue()                     e.g. initialise this PE's own destination
//   coll_signal(Ready, all peers)  "ready for epoch e": awaited by the PEs that touch my
//                                  data (`announce`), stored to every peer
//   coll_wait(Ready, visit)        the PEs whose data I touch are ready
//   body()                         move / reduce (loads, stores, bulk copies, TMA tiles)
//   coll_signal(Done, visit)       "finished with yours" (publishes body's writes)
//   coll_wait(Done, announce)      everyone who touches my data has finished
//   coll_end
//
// `announce` and `visit` are peer masks (sync.cuh). Pull collectives announce their
// source to its readers; push collectives announce their destination to its writers.
// Ready goes to every peer, not only to `announce`: a peer that does not wait for it
// ignores it, and the staged forms (staged.cuh) need it. Their guard reads every peer's
// Ready of the slot's previous step, whatever that step was, as proof that the peer has
// finished the step before it; a step that announced to a subset (a broadcast's
// non-roots announce to nobody) would leave those entries behind and the guard waiting
// until its timeout.
// After coll_exchange returns Ok, this PE's buffers are complete and no peer touches
// them again in this step, so the caller may reuse them at once (no reuse race), and
// the next step on the slot cannot overtake this one. With `done_handshake` false the
// two Done steps are skipped: for a step whose completion a later step on the same
// slot implies (the reduce-scatter half of a two-shot all-reduce).
//
// Data: what a CTA's step reads from this PE must be final when the step starts: written
// by this CTA (any thread; the step begins with a proxy fence in every thread and a
// __syncthreads), before the kernel, or published grid-wide (sync_all). Each building
// block says which part of the buffers one CTA reads.
//
// Collective over the CTA; prologue and body are called by every thread and must not
// return early in some threads only. A timeout ends the step with Status::Timeout
// after the message of coll_wait; the slot's epoch still advances, but the PEs no
// longer agree on where they are: do not use the state again in this job.
#pragma once

#include <stdint.h>

#include "tmashmem/device/collectives/state.cuh"
#include "tmashmem/device/collectives/sync.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/status.cuh"

namespace tmashmem {

template <class Prologue, class Body>
__device__ __forceinline__ Status coll_exchange(const Ctx& ctx, const CollState& st, int slot,
                                                uint64_t announce, uint64_t visit,
                                                Prologue&& prologue, Body&& body,
                                                uint64_t timeout_ns, const char* what,
                                                bool done_handshake = true) {
  if (!coll_usable(ctx, st, slot)) return Status::Unreachable;
  // Every thread's earlier generic accesses (a source it wrote, a destination it read)
  // before the bulk copies and tiles that any thread of the CTA issues in the step.
  detail::fence_proxy_async();
  const CollStep step = coll_begin(st, slot);
  prologue();
  coll_signal(ctx, st, CollRow::Ready, step, coll_all_peers(ctx));
  Status s = coll_wait(ctx, st, CollRow::Ready, step, visit, timeout_ns, what);
  if (s == Status::Ok) {
    body();
    if (done_handshake) {
      coll_signal(ctx, st, CollRow::Done, step, visit);
      s = coll_wait(ctx, st, CollRow::Done, step, announce, timeout_ns, what);
    }
  }
  coll_end(st, step);
  return s;
}

/// coll_exchange with every peer on both sides and nothing to prologue: the step of the
/// collectives in which each PE touches every other PE's data.
template <class Body>
__device__ __forceinline__ Status coll_exchange_all(const Ctx& ctx, const CollState& st, int slot,
                                                    Body&& body, uint64_t timeout_ns,
                                                    const char* what, bool done_handshake = true) {
  const uint64_t peers = coll_all_peers(ctx);
  return coll_exchange(
      ctx, st, slot, peers, peers, [] {}, body, timeout_ns, what, done_handshake);
}

/// The peers of this PE in visiting order: me+1, me+2, ... (mod n_pes), so that at
/// every moment the PEs read from (or write to) different peers.
__device__ __forceinline__ int coll_peer(const Ctx& ctx, int k) {
  return (ctx.my_pe + k) % ctx.n_pes;
}

}  // namespace tmashmem
