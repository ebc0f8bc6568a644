// tmashmem device API: the shared-memory mbarrier that TMA gets complete on.
//
// An mbarrier counts two things per phase: pending arrivals (set by init) and pending
// transaction bytes (raised by expect_tx, lowered by the complete_tx of TMA copies). A phase
// completes when both reach zero; the barrier then moves to the next phase, whose parity
// (0, 1, 0, ...) is what waiters name. The first phase has parity 0.
//
// Contract:
//  - The barrier lives in shared memory, 8-byte aligned (`__shared__ tmashmem::Mbarrier b;`).
//  - One thread calls init(); then the block synchronises (__syncthreads, or cluster_sync()
//    when other CTAs of the cluster signal it) before any OTHER thread or any copy uses it.
//    init() issues fence.mbarrier_init.release.cluster after mbarrier.init, which makes the
//    initialisation visible to the async proxy (TMA complete_tx) and to the cluster; the
//    barrier orders it before the other threads' arrivals and waits. The initialising thread
//    itself may issue copies on the barrier right after init() without a sync.
//  - Per phase, exactly `arrivals` arrive / arrive_expect_tx calls; the bytes announced by
//    expect_tx must equal the bytes the copies complete (tensor.box_bytes per tile get).
//    The announcement may come before or after the copies complete.
//  - wait(parity) acquires at CTA scope: after it returns, the calling thread sees the data
//    the completed copies wrote to shared memory.
//  - Reusing the memory for something else needs inval() first.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/mbarrier.cuh"
#include "tmashmem/device/status.cuh"

namespace tmashmem {

struct alignas(8) Mbarrier {
  uint64_t word;

  /// 32-bit shared-memory address of the barrier, as PTX operands take it.
  __device__ __forceinline__ uint32_t smem_address() const { return detail::smem_address(&word); }

  /// One thread, before any use: `arrivals` arrivals complete each phase.
  __device__ __forceinline__ void init(uint32_t arrivals) {
    detail::mbarrier_init(smem_address(), arrivals);
    detail::fence_mbarrier_init();
  }

  /// Ends the barrier's life so the shared memory can be reused (no phase may be pending).
  __device__ __forceinline__ void inval() { detail::mbarrier_inval(smem_address()); }

  /// One arrival (release at CTA scope). Returns the barrier state token.
  __device__ __forceinline__ uint64_t arrive() { return detail::mbarrier_arrive(smem_address()); }

  /// One arrival that also announces `bytes` more transaction bytes for this phase: the
  /// usual call of the thread that issues a get (bytes = tensor.box_bytes per tile).
  /// `bytes` < 2^20.
  __device__ __forceinline__ void arrive_expect_tx(uint32_t bytes) {
    detail::mbarrier_arrive_expect_tx(smem_address(), bytes);
  }

  /// Announces `bytes` more transaction bytes without arriving.
  __device__ __forceinline__ void expect_tx(uint32_t bytes) {
    detail::mbarrier_expect_tx(smem_address(), bytes);
  }

  /// One probe: true once the phase with this parity has completed. The hardware may
  /// suspend the thread for a short, implementation-defined time before answering false.
  __device__ __forceinline__ bool try_wait(uint32_t parity) {
    return detail::mbarrier_try_wait_parity(smem_address(), parity);
  }

  /// Waits for the phase with this parity, at most `timeout_ns` nanoseconds (0: no
  /// bound): Status::Ok, or Status::Timeout (then nothing about the data is known).
  __device__ __forceinline__ Status wait(uint32_t parity, uint64_t timeout_ns) {
    if (try_wait(parity)) return Status::Ok;
    detail::Deadline deadline(timeout_ns);
    while (!try_wait(parity))
      if (deadline.expired()) return Status::Timeout;
    return Status::Ok;
  }

  /// Waits without a bound. Prefer the bounded wait wherever a peer or a bug could stall
  /// the phase.
  __device__ __forceinline__ void wait(uint32_t parity) {
    while (!try_wait(parity)) {
    }
  }
};

/// The parity a waiter expects next; advance() after each completed wait. One per waiter
/// per barrier (a register, not shared memory).
struct MbarrierPhase {
  uint32_t parity = 0;
  __device__ __forceinline__ void advance() { parity ^= 1u; }
};

}  // namespace tmashmem
