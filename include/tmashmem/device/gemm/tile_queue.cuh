// Tiles claimed in order: a persistent schedule that follows the CTAs' progress.
//
// The static schedule (scheduler.cuh) gives cluster c the tiles c, c + clusters, ... whatever
// the CTAs' progress. On a GPU shared by PEs that measured badly: traced on an H100 at 4 PEs
// (docs/fused.md, "Tiles and copy pieces claimed in order"), the fused all-gather GEMM's CTAs
// (33 a PE) started within 24 us of each other and ended between 7.3 and 9.2 ms, against
// 4.5 ms for the GEMM alone; with claims they ended between 4.7 and 4.8 ms. Why the static
// walk slows every CTA there is not established; with claims the tiles in flight are always
// neighbours in the order. The fused reduce-scatter claims too (docs/fused.md, "The
// reduce-scatter claims its tiles too": 0.82-0.87 -> 1.01-1.03 of the GEMM on 8192^3 there).
//
// The producer thread of each CTA takes the next step of the order from a counter in global
// memory when it is ready to load a tile, and hands it to the CTA's consumer warpgroups through
// a two-slot queue in shared memory. Every CTA walks the same order; a step >= tiles ends a
// CTA's walk. A CTA that falls behind takes fewer tiles, and one that starts late holds none
// back.
//
// Contract: cluster size 1 (a cluster's CTAs would have to agree on a claim); the counter is
// 0 when the kernel starts. Each CTA claims once past the last tile, so a launch makes exactly
// tiles + CTAs claims; the one that draws the last number knows every other claim is made and
// sets the counter back to 0 for the next launch (stream order), with no finishing count.
#pragma once

#include <cstdint>

#include "tmashmem/device/mbarrier.cuh"

namespace tmashmem::gemm {

/// Shared memory of the queue between the producer thread and the consumer warpgroups.
struct TileQueue {
  Mbarrier full[2];   // 1 arrival: the producer wrote step[slot]
  Mbarrier empty[2];  // every consumer warp read step[slot] (Consumers * 4 arrivals)
  int step[2];
};

/// One thread, before the block barrier that precedes any use.
template <int Consumers>
__device__ __forceinline__ void tile_queue_init(TileQueue& q) {
  for (int i = 0; i < 2; ++i) {
    q.full[i].init(1);
    q.empty[i].init(Consumers * 4);
  }
}

/// The position of one side in the queue: the i-th hand-over uses slot i % 2 at phase
/// (i / 2) % 2. Both sides start at 0 and advance once per step.
struct TileQueueState {
  uint32_t slot = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    slot ^= 1u;
    if (slot == 0) phase ^= 1u;
  }
};

/// The producer thread: claims the next step of the order (relaxed: the counter orders claims,
/// nothing else) and hands it over once the consumers have read the slot's previous step
/// (a fresh barrier's previous phase counts as complete). The arrival releases the store of
/// `step` at CTA scope; the consumers' wait acquires it. `claims`: tiles + the grid's CTAs.
template <class Wait>
__device__ __forceinline__ int tile_queue_claim(TileQueue& q, TileQueueState& st,
                                                unsigned long long* counter, int claims,
                                                Wait&& wait) {
  wait(q.empty[st.slot], st.phase ^ 1u);
  const int step = static_cast<int>(atomicAdd(counter, 1ull));
  if (step == claims - 1) atomicExch(counter, 0ull);  // the launch's last claim
  q.step[st.slot] = step;
  q.full[st.slot].arrive();
  st.advance();
  return step;
}

/// Every consumer thread (all 32 lanes of each warp call it): the next step the producer
/// claimed. Lane 0 of each warp waits, reads and arrives, one arrival a warp; the others get the
/// step by shuffle. Only the step crosses the queue: the data of a tile is ordered by the stage
/// barriers. (With every thread waiting and arriving the fused kernels measured the same,
/// docs/fused.md "The staging in the accumulators' layout".)
template <class Wait>
__device__ __forceinline__ int tile_queue_take(TileQueue& q, TileQueueState& st, Wait&& wait) {
  int step = 0;
  if ((threadIdx.x & 31u) == 0) {
    wait(q.full[st.slot], st.phase);
    step = q.step[st.slot];
    q.empty[st.slot].arrive();
  }
  st.advance();
  return __shfl_sync(0xffffffffu, step, 0);
}

}  // namespace tmashmem::gemm
