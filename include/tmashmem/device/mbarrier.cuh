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
//    when other CTAs of the cluster signal it) before any thread or copy uses it. init()
//    already issues fence.mbarrier_init so the initialisation is visible to the async proxy
//    and to the cluster.
//  - Per phase, exactly `arrivals` arrive / arrive_expect_tx calls; the bytes announced by
//    expect_tx must equal the bytes the copies complete (tensor.box_bytes per tile get).
//    The announcement may come before or after the copies complete.
//  - wait(parity) acquires at CTA scope: after it returns, the calling thread sees the data
//    the completed copies wrote to shared memory.
//  - Reusing the memory for something else needs inval() first.
#pragma once

#include <cstdint>

#include "tmashmem/device/order.cuh"
#include "tmashmem/device/status.cuh"

namespace tmashmem {

struct alignas(8) Mbarrier {
  uint64_t word;

  /// 32-bit shared-memory address of the barrier, as PTX operands take it.
  __device__ __forceinline__ uint32_t smem_address() const {
    return static_cast<uint32_t>(__cvta_generic_to_shared(&word));
  }

  /// One thread, before any use: `arrivals` arrivals complete each phase.
  __device__ __forceinline__ void init(uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address()), "r"(arrivals)
                 : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }

  /// Ends the barrier's life so the shared memory can be reused (no phase may be pending).
  __device__ __forceinline__ void inval() {
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_address()) : "memory");
  }

  /// One arrival (release at CTA scope). Returns the barrier state token.
  __device__ __forceinline__ uint64_t arrive() {
    uint64_t state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
                 : "=l"(state)
                 : "r"(smem_address())
                 : "memory");
    return state;
  }

  /// One arrival that also announces `bytes` more transaction bytes for this phase: the
  /// usual call of the thread that issues a get (bytes = tensor.box_bytes per tile).
  /// `bytes` < 2^20.
  __device__ __forceinline__ void arrive_expect_tx(uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address()),
                 "r"(bytes)
                 : "memory");
  }

  /// Announces `bytes` more transaction bytes without arriving.
  __device__ __forceinline__ void expect_tx(uint32_t bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_address()),
                 "r"(bytes)
                 : "memory");
  }

  /// One probe: true once the phase with this parity has completed. The hardware may
  /// suspend the thread for a short, implementation-defined time before answering false.
  __device__ __forceinline__ bool try_wait(uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_address()), "r"(parity)
        : "memory");
    return done != 0;
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
