// Device barriers across every PE: sync_all and barrier_all for a WHOLE GRID.
//
// Who calls: every thread of every block of the launching grid, on every PE, the
// same number of times in the same order (barriers of a PE are numbered by the
// signal pad's counters; the on-stream barrier, tmashmem_barrier_all_on_stream,
// counts too). Requirements:
//   - all blocks of the grid are co-resident on the GPU (a block that is not yet
//     running cannot arrive, so the others would wait forever): launch with
//     cudaLaunchCooperativeKernel (which checks this) or keep the grid within one
//     wave (blocks per SM x SMs, from cudaOccupancyMaxActiveBlocksPerMultiprocessor);
//   - at most one grid per PE is inside a device barrier at a time (two concurrent
//     kernels that both use barriers on one PE would share the pad's counters);
//   - every PE is load/store reachable from every other (one node with peer
//     access; otherwise the call returns Status::Unreachable at once, everywhere).
// Reusable back to back, across kernels and graph replays, with no reset: the
// counters in the signal pad only grow (see signal_pad.h).
//
// Memory-ordering contract:
//
// - sync_all(): no thread of any PE leaves it before every thread of every PE
//   entered it. It orders memory like a release/acquire pair at system scope:
//   writes that are performed before the call (plain and relaxed stores, blocking
//   puts, p, atomics, signals) are visible to every thread of every PE after it.
//   It does NOT wait for bulk copies in flight (put_nbi / get_nbi): use
//   barrier_all for those, or quiet() first.
// - barrier_all(): quiet() by every calling thread (its bulk copies complete,
//   system-scope fence), then sync_all(): everything any thread of any PE issued
//   before the barrier is complete and visible to every thread of every PE after.
// - With timeout_ns > 0, a barrier that does not complete in that time returns
//   Status::Timeout on the calling block (the other blocks of this PE return
//   Timeout too, once this PE's leader gives up). The barrier counters are then
//   inconsistent: do not use device barriers again in this job.
//
// Algorithm: every block's thread 0 increments grid_arrived (gpu-scope acq_rel
// atomic). The last block to arrive resets it and runs the cross-PE step, chosen once
// per call from ctx.mc_base; both steps give the contract above unchanged:
//  - unicast (ctx.mc_base == 0): with its first warp it stores the new epoch (this
//    PE's barrier count + 1) into barrier_epoch[my_pe] of every peer (system-scope
//    release stores, one lane per peer; GPU scope when every PE shares this GPU) and
//    waits until every peer's epoch in its own pad reached the same value (acquire
//    loads at system scope, as cheap as GPU scope: signal.cuh);
//  - multicast (ctx.mc_base != 0): thread 0 adds 1 to mc_barrier_count of every PE
//    with one multimem.red.release.sys (multicast_red, Release), then polls its own
//    mc_barrier_count with ld.acquire.sys until it reaches k * n_pes, where k counts
//    this PE's multicast barriers (mc_barrier_entered). The count needs no reset: it
//    only grows, by n_pes per barrier, and it cannot reach k * n_pes before every PE
//    added its k-th 1, since no PE adds a (k+1)-th before its k-th barrier completed.
// A grid of one block skips the arrival count. It then publishes the epoch as
// grid_generation (gpu-scope release), which the other blocks of the PE are polling
// (gpu-scope acquire). Epochs and counts compare with >=, so a fast peer already
// announcing the next barrier does not confuse a slow one.
#pragma once

#include <stdint.h>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/atom.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/detail/threads.cuh"
#include "tmashmem/device/multicast.cuh"
#include "tmashmem/device/order.cuh"
#include "tmashmem/device/signal.cuh"
#include "tmashmem/device/signal_pad.h"
#include "tmashmem/device/status.cuh"

namespace tmashmem {
namespace detail {

// grid_generation values with this bit set record a barrier whose leader timed
// out, so that the blocks waiting on it report Status::Timeout as well.
constexpr uint64_t kGenerationFailed = uint64_t(1) << 63;

__device__ __forceinline__ tmashmem_signal_pad_t* signal_pad(const Ctx& ctx) {
  return reinterpret_cast<tmashmem_signal_pad_t*>(ctx.signal_pad);
}

// The cross-PE step, run by the first warp (`lanes` threads, this one is `lane`)
// of the block that completed this PE's grid arrival. Returns false on timeout.
__device__ __forceinline__ bool exchange_epochs(const Ctx& ctx, uint64_t epoch, unsigned lane,
                                                unsigned lanes, Deadline& deadline) {
  tmashmem_signal_pad_t* pad = signal_pad(ctx);
  const int me = ctx.my_pe;
  // When every PE runs on this GPU, a GPU-scope release covers every observer (signal.cuh).
  const bool one_gpu = (ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) != 0;
  for (int q = static_cast<int>(lane); q < ctx.n_pes; q += static_cast<int>(lanes)) {
    if (q == me) continue;
    signal_update_release(ptr(ctx, &pad->barrier_epoch[me], q), epoch, SignalOp::Set, one_gpu);
  }
  bool ok = true;
  for (int q = static_cast<int>(lane); q < ctx.n_pes && ok; q += static_cast<int>(lanes)) {
    if (q == me) continue;
    const uint64_t* slot = &pad->barrier_epoch[q];
    // The acquire poll is system scope always: as cheap as GPU scope (signal.cuh).
    while (ld_acquire_sys(slot) < epoch) {
      if (deadline.expired()) {
        ok = false;
        break;
      }
    }
  }
  return ok;
}

// The cross-PE step through the multicast object (see the algorithm above), run by
// thread 0 of the block that completed this PE's grid arrival. Returns false on timeout.
// Through multicast_red, so with ctx.mc_base == 0 it fans out unicast (what the GPU
// tests run through BarrierExchange::MulticastCount).
__device__ __forceinline__ bool count_through_multicast(const Ctx& ctx, Deadline& deadline) {
  tmashmem_signal_pad_t* pad = signal_pad(ctx);
  // Written only here, by one thread per barrier, after the previous barrier's leader
  // (its grid_generation release, or the kernel boundary, orders the two).
  const uint64_t k = ld_relaxed_gpu(&pad->mc_barrier_entered) + 1;
  st_relaxed_gpu(&pad->mc_barrier_entered, k);
  const uint64_t one = 1;
  multicast_red<McReduce::Add, uint64_t, Coop::Thread, McOrder::Release>(
      ctx, &pad->mc_barrier_count, &one, 1);
  const uint64_t target = k * static_cast<uint64_t>(ctx.n_pes);
  while (ld_acquire_sys(&pad->mc_barrier_count) < target)
    if (deadline.expired()) return false;
  return true;
}

/// How the last block of a PE meets the other PEs: FromContext (what sync_all and
/// barrier_all use) picks MulticastCount when ctx.mc_base != 0, else PeerEpochs.
enum class BarrierExchange { FromContext, PeerEpochs, MulticastCount };

// sync_all, and barrier_all when `complete`: then thread 0 of each block issues a
// system-scope SC fence after the block's threads finished their bulk copies.
template <BarrierExchange E = BarrierExchange::FromContext>
__device__ __forceinline__ Status grid_barrier(const Ctx& ctx, uint64_t timeout_ns, bool complete) {
  if (!all_reachable(ctx)) return Status::Unreachable;
  const bool multicast = E == BarrierExchange::MulticastCount ||
                         (E == BarrierExchange::FromContext && ctx.mc_base != 0);
  tmashmem_signal_pad_t* pad = signal_pad(ctx);
  const unsigned tid = block_thread_rank();
  const unsigned threads = block_thread_count();

  // Every thread of the block has finished what it did before the barrier; thread
  // 0's release below is cumulative over all of it.
  __syncthreads();
  bool timed_out = false;
  if (tid < 32) {
    const unsigned lanes = min(32u, threads);
    const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    const uint64_t n_blocks = uint64_t(gridDim.x) * gridDim.y * gridDim.z;
    uint64_t generation = 0;
    int last = 0;
    if (tid == 0) {
      if (complete) fence_sc_sys();
      // Read before arriving (the arrival's release orders it): the leader cannot
      // bump the generation until this block has arrived.
      generation = ld_relaxed_gpu(&pad->grid_generation);
      // A grid of one block is its own last arrival: no atomic, and the count
      // stays 0 for the next multi-block barrier.
      last = n_blocks == 1 || atom_add_acq_rel_gpu(&pad->grid_arrived, 1) == n_blocks - 1;
    }
    __syncwarp(mask);  // orders lane 0's arrival before the other lanes' stores
    last = __shfl_sync(mask, last, 0);
    generation = __shfl_sync(mask, generation, 0);
    Deadline deadline(timeout_ns);
    if (last) {
      // All blocks of this PE arrived. Reset the count for the next barrier
      // before releasing anyone into it.
      if (tid == 0 && n_blocks > 1) st_relaxed_gpu(&pad->grid_arrived, 0);
      const uint64_t epoch = (generation & ~kGenerationFailed) + 1;
      if (!multicast)
        timed_out = !exchange_epochs(ctx, epoch, tid, lanes, deadline);
      else if (tid == 0)
        timed_out = !count_through_multicast(ctx, deadline);
      // Every lane's acquire (and lane 0's reset) before lane 0's release.
      const bool any_timed_out = __any_sync(mask, timed_out);
      __syncwarp(mask);
      // With one block nobody polls the generation: the next barrier reads it in
      // program order or after a kernel boundary, so a relaxed store will do.
      const uint64_t published = epoch | (any_timed_out ? kGenerationFailed : 0);
      if (tid == 0) {
        if (n_blocks > 1)
          st_release_gpu(&pad->grid_generation, published);
        else
          st_relaxed_gpu(&pad->grid_generation, published);
      }
      timed_out = any_timed_out;
    } else if (tid == 0) {
      uint64_t seen;
      while ((seen = ld_acquire_gpu(&pad->grid_generation)) == generation) {
        if (deadline.expired()) {
          timed_out = true;
          break;
        }
      }
      if (seen & kGenerationFailed) timed_out = true;
    }
  }
  // Releases the block; thread 0's (and the first warp's) acquire covers it.
  return __syncthreads_or(timed_out) ? Status::Timeout : Status::Ok;
}

// barrier_all's body: quiet() for the whole grid (each thread completes its own bulk
// copies; the system-scope fence is issued once per block, after the block's
// __syncthreads, which makes it cover every thread of the block), then the barrier.
template <BarrierExchange E = BarrierExchange::FromContext>
__device__ __forceinline__ Status complete_and_barrier(const Ctx& ctx, uint64_t timeout_ns) {
  bulk_wait_all();
  fence_proxy_async();
  return grid_barrier<E>(ctx, timeout_ns, true);
}

}  // namespace detail

/// Synchronises every thread of the grid on every PE (see the contract above):
/// returns when all have entered. Status::Ok, Status::Timeout (timeout_ns > 0
/// expired) or Status::Unreachable (some PE is not load/store reachable), the
/// same in every thread of a block.
__device__ __forceinline__ Status sync_all(const Ctx& ctx, uint64_t timeout_ns = 0) {
  return detail::grid_barrier(ctx, timeout_ns, false);
}

/// quiet() by every calling thread, then sync_all(): all communication issued by
/// any thread of any PE before the barrier is complete and visible to all after
/// it. Same callers, requirements and results as sync_all.
__device__ __forceinline__ Status barrier_all(const Ctx& ctx, uint64_t timeout_ns = 0) {
  return detail::complete_and_barrier(ctx, timeout_ns);
}

}  // namespace tmashmem
