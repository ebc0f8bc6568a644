// The shared-memory stage ring between the producer and the consumers.
//
// Stage s holds one k-block of A and B. full[s] completes when the producer's expect_tx
// arrival and all of the stage's TMA bytes (its own loads and the cluster peers' multicast
// slices) are in; empty[s] completes when every consumer warpgroup of every CTA in the
// cluster has released the stage. Both sides walk the ring in the same order with a
// PipelineState: the consumer waits full[s] at `phase`, the producer waits empty[s] at
// `phase ^ 1` (a fresh barrier's "previous" phase counts as complete, so the first pass
// over the ring does not block).
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/gemm_tma.cuh"
#include "tmashmem/device/gemm/config.cuh"

namespace tmashmem::gemm {

template <int Stages>
struct PipelineState {
  uint32_t stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == Stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

/// A wait on a stage barrier that cannot hang: a phase that has not completed after
/// kStageTimeoutNs (a lost copy, a miscounted barrier: always a bug) traps, which fails the
/// launch with an error instead of stalling the device.
constexpr uint64_t kStageTimeoutNs = 10ull * 1000 * 1000 * 1000;
__device__ __forceinline__ void stage_wait(Mbarrier& bar, uint32_t parity) {
  if (bar.wait(parity, kStageTimeoutNs) != Status::Ok) __trap();
}

/// One thread, before the block (or cluster) barrier that precedes any use.
template <class Cfg>
__device__ __forceinline__ void pipeline_init(GemmSharedStorage<Cfg>& s) {
  for (int i = 0; i < Cfg::kStages; ++i) {
    s.full[i].init(1);
    s.empty[i].init(Cfg::kConsumers * Cfg::kClusterM);
  }
}

/// A consumer warpgroup gives stage `stage` back to the producers of every CTA in its
/// cluster (each of them multicasts into this CTA's copy of the stage). Called by all 128
/// threads of the warpgroup after wgmma_wait has retired every MMA that read the stage.
template <class Cfg>
__device__ __forceinline__ void pipeline_release(GemmSharedStorage<Cfg>& s, uint32_t stage,
                                                 uint32_t thread_in_wg) {
  if constexpr (Cfg::kClusterM == 1) {
    if (thread_in_wg == 0) s.empty[stage].arrive();
  } else {
    if (thread_in_wg < Cfg::kClusterM)
      detail::mbarrier_arrive_cluster(&s.empty[stage], thread_in_wg);
  }
}

}  // namespace tmashmem::gemm
