// The GEMM + reduce-scatter as a device building block (tensor-parallel row-linear layer):
// each PE holds A_p [M, K_p] and B_p [N, K_p];
//   C = sum over PEs p of A_p * B_p^T   [M, N],
// and PE q owns (receives) rows [q * m_shard, (q + 1) * m_shard) of C in its c_shard
// [m_shard, N] (symmetric). The GEMM's rows are cut into one block per owner (rank-3 maps),
// so no tile straddles two owners, and its tile order starts at the next PE's rows: the
// others' tiles first, this PE's own shard last.
//
// Two modes:
//   fast           the epilogue adds each finished tile straight into its owner's c_shard
//                  (TMA reduce-add on the owner's tensor map, bf16). Every PE adds into every
//                  shard, in an order that depends on timing: the sums are not bit-for-bit
//                  reproducible (bf16 rounding after each add). One PE stores its tiles.
//   deterministic  each owner's staging (fp32, in its workspace, in the accumulators' layout:
//                  reduce_scatter_staging.cuh) receives the PEs' fp32 partial tiles one after
//                  another in a fixed order, the order in which their walks reach the tile
//                  (reduce_scatter_order.cuh: the PEs walk one tile order, each a segment of
//                  T / n_pes tiles after the next): the first stores, each next one waits for
//                  its predecessor's flag and adds (red.add from its registers), the last
//                  waits before its mainloop, starts its MMAs from the sum and stores the result
//                  as bf16 into the owner's c_shard: bit-identical across runs (the same fp32
//                  additions in the same order, one rounding to bf16). Where an owner's rows
//                  are whole segments, the owner is last and its own tiles come last.
//
// Protocol of call e (sync.cuh has the words), with 2 PEs or more (one PE needs none: stream
// order): fast: every CTA zeroes its slice of this PE's c_shard, the last of them publishes
// permit = e to every PE; deterministic: CTA 0 publishes permit = e at start (the previous call
// is complete here: this PE's staging and shard may be written again). A PE's producer waits for
// permit[owner] >= e before it loads the first tile of the owner's rows (so before the epilogue
// writes into the owner). When every CTA is done (its writes complete), the last one sends done = e
// to every PE and waits until every PE has sent done = e here (the shard is complete), then bumps
// the epoch. Deterministic: the flag of a half-tile, in the workspace of the PE at position k,
// counts the partials in: (e - 1) * n_pes + k once the k before it are. A writer's epilogue
// thread raises it a few k-blocks into its next tile (mid_mainloop: the release waits for the
// writes, which complete behind those MMAs; the stages of those k-blocks come without the other
// warpgroup), at its next epilogue if the tile is shorter, before it blocks on anything itself,
// and at its end. Every wait points to a tile an earlier step of a walk
// reaches, so the waits form no cycle. Every wait is bounded.
//
// Co-residency: as for the all-gather GEMM (allgather_gemm.cuh): the grid fits on the SMs
// this PE may use at once.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/fused/reduce_scatter_order.cuh"
#include "tmashmem/device/fused/reduce_scatter_staging.cuh"
#include "tmashmem/device/fused/sync.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::fused {

constexpr int kReduceScatterMaxPes = 8;  // one tensor map per owner in the kernel parameters

enum class ReduceScatterMode : int { fast = 0, deterministic = 1 };

/// Per owner PE, rank 3 {N, m_shard, 1}: `map` (fast), the owner's c_shard (bf16), where the
/// epilogue adds; `shard` (deterministic), the owner's c_shard (bf16, LastTileCfg's box), where
/// the last of a tile's order writes the sum. (The deterministic partials go to the owner's
/// staging without TMA: reduce_scatter_staging.cuh.)
struct OwnerMaps {
  CUtensorMap map[kReduceScatterMaxPes];
  CUtensorMap shard[kReduceScatterMaxPes];
};

struct ReduceScatterArgs {
  gemm::GemmArgs gemm;     // batches = n_pes, m = m_shard
  __nv_bfloat16* c_shard;  // this PE's [m_shard, N] (ldc), symmetric
  int64_t ldc;
  float* staging;        // deterministic: this PE's staging (reduce_scatter_staging.cuh)
  uint64_t* ws;          // symmetric signal workspace (sync.cuh), zeroed once
  int halves_per_owner;  // deterministic: 64-row half-tiles of one shard
  uint64_t timeout_ns;
};

/// Deterministic: the word, in the workspace of the PE that waits for it, that counts the
/// partials of owner `owner`'s half-tile at (row0, col0) of its shard: the PE at position k
/// waits there for k of them. Each partial's writer raises it in the workspace of the next PE
/// in the order.
template <class Cfg>
__device__ __forceinline__ int rs_half_index(const ReduceScatterArgs& a, int row0, int col0) {
  return (row0 / 64) * a.gemm.tile_cols + col0 / Cfg::kBlockN;
}
template <class Cfg>
__device__ __forceinline__ int rs_flag_index(const ReduceScatterArgs& a, int owner, int row0,
                                             int col0) {
  return words::kFlags + owner * a.halves_per_owner + rs_half_index<Cfg>(a, row0, col0);
}

/// Deterministic: the configuration of the last partial of each tile, which leaves the GEMM as
/// the bf16 sum (the same tile, buffers and chunk bytes as Cfg's fp32 partials).
template <class Cfg>
using LastTileCfg = gemm::GemmConfig<Cfg::kBlockN, Cfg::kStages, Cfg::kClusterM, __nv_bfloat16>;

/// The hooks: the owner's map, the wait for its permit, and (deterministic) the order of the
/// additions, the flags, and the last partial's start from the sum and its bf16 store.
template <class Cfg, ReduceScatterMode Mode>
struct ReduceScatterHooks : gemm::NoHooks {
  static constexpr bool kDeterministic = Mode == ReduceScatterMode::deterministic;
  // Tiles claimed in order (gemm/tile_queue.cuh): the walk keeps this PE's order (and so the
  // deterministic mode's order of additions); which CTA takes a step follows progress.
  static constexpr bool kClaimTiles = true;
  __device__ __forceinline__ unsigned long long* tile_claims() const {
    return as_counter(args->ws + words::kTileClaim);
  }
  const Ctx* ctx;
  const ReduceScatterArgs* args;
  const OwnerMaps* maps;
  uint64_t epoch;
  uint64_t permitted = 0;  // bit q: owner q's permit seen (producer thread)
  int pending_pe = -1;     // deterministic, epilogue thread: a half-tile not yet flagged, the PE
  int pending_flag = 0;    // whose word it raises, and the value
  uint64_t pending_value = 0;
  // Deterministic, consumer threads: the current tile's segment and this PE's position in its
  // order of additions, set by initial_accumulators before the mainloop. Kept, not recomputed
  // in the epilogue: there the accumulators hold the registers, and the division spilled.
  int tile_seg = 0;
  int tile_k = 0;

  // Deterministic: the staging block of owner `owner`'s half-tile at (row0, col0).
  __device__ __forceinline__ float* staging_block(int owner, int row0, int col0) const {
    return staging_half<Cfg>(tmashmem::ptr(*ctx, args->staging, owner),
                             rs_half_index<Cfg>(*args, row0, col0));
  }

  // Deterministic: the segment of the tile at `index` of the order (its last partial is that
  // PE's).
  __device__ __forceinline__ int segment_of(int index) const {
    return rs_segment(index, args->gemm.cluster_rows * args->gemm.tile_cols, ctx->n_pes);
  }

  // The producer thread, before loading a tile of owner `batch`'s rows: the owner permits
  // writes (fast: its shard is zero; deterministic: its staging is free). The acquire reaches
  // the epilogue's thread through the stage barriers (release / acquire at CTA scope), which
  // completes the order before that thread's first write to the owner.
  __device__ __forceinline__ void before_a_loads(int batch, int row0, int /*cluster_row*/, int col,
                                                 int index) {
    if constexpr (kDeterministic) {
      // The last partial of an own tile starts its MMAs from the sum in this PE's staging
      // (initial_accumulators): pull it into L2 while the consumers finish the previous tile (a
      // hint: they read it after their acquire), each half's block by one bulk prefetch.
      if (batch == ctx->my_pe && ctx->n_pes > 1 && segment_of(index) == batch) {
        for (int h = 0; h < Cfg::kBlockM && row0 + h < args->gemm.m; h += 64)
          detail::bulk_prefetch_l2(staging_block(batch, row0 + h, col * Cfg::kBlockN),
                                   static_cast<uint32_t>(kStagingHalfFloats<Cfg> * sizeof(float)));
      }
    } else {
      (void)row0, (void)col, (void)index;
    }
    // One PE: its previous call is complete in stream order, and nothing is zeroed first.
    if (ctx->n_pes == 1 || ((permitted >> batch) & 1u)) return;
    fused_wait_ge(args->ws + words::kPermit + batch, epoch, args->timeout_ns,
                  "matmul_reduce_scatter", ctx->my_pe, "the permit of owner PE", batch);
    permitted |= uint64_t(1) << batch;
  }

  __device__ __forceinline__ const CUtensorMap* output_map(const CUtensorMap* /*c_map*/, int batch,
                                                           int* batch_coord) {
    // The permit's acquire (by the producer) came through generic-proxy synchronisation: fence
    // before this thread's TMA writes.
    detail::fence_proxy_async_global();
    *batch_coord = 0;
    return &maps->map[batch];
  }

  // Epilogue thread: raises the flag of the last half-tile it wrote into a staging (its
  // warpgroup's writes are ordered before this thread's release by the barrier that followed
  // them).
  __device__ __forceinline__ void publish_pending() {
    fused_publish(*ctx, args->ws, pending_flag, pending_value, pending_pe);
    pending_pe = -1;
  }

  // Epilogue thread, deterministic: the PE at position k > 0 of the half-tile's order waits
  // for the k partials before its own.
  __device__ __forceinline__ void wait_for_predecessor(int owner, int row0, int col0, int k) {
    const ReduceScatterArgs& a = *args;
    const uint64_t* flag = a.ws + rs_flag_index<Cfg>(a, owner, row0, col0);
    const uint64_t want = (epoch - 1) * ctx->n_pes + k;
    if (detail::ld_acquire_sys(flag) < want) {
      // Peers may be waiting for this PE's last half-tile: raise its flag before blocking.
      if (pending_pe >= 0) publish_pending();
      fused_wait_ge(flag, want, a.timeout_ns, "matmul_reduce_scatter", ctx->my_pe,
                    "the previous partial of a tile of owner PE", owner);
    }
  }

  // Deterministic: the last partial of a half-tile (with other PEs) starts its MMAs from the
  // others' sum in the owner's staging, so the tile's sum is complete in registers and leaves
  // once, as bf16 (epilogue). Every other half-tile starts from zeros written here too, by the
  // same predicated instructions: accumulators written by ordinary instructions on some tiles
  // only, or on two branches, make ptxas serialise every wgmma (C7515).
  template <class Acc>
  __device__ __forceinline__ bool initial_accumulators(Acc& acc, const gemm::EpilogueSlab& e) {
    if constexpr (kDeterministic) {
      const ReduceScatterArgs& a = *args;
      const int n_pes = ctx->n_pes;
      tile_seg = segment_of(e.index);
      tile_k = rs_position(tile_seg, ctx->my_pe, n_pes);
      const bool sum = tile_k == n_pes - 1 && n_pes > 1 && e.row0 < a.gemm.m;
      if (sum) {
        if (e.thread_in_wg == 0) wait_for_predecessor(e.batch, e.row0, e.col0, tile_k);
        detail::named_barrier_sync(1 + static_cast<uint32_t>(e.wg), 128);  // after the acquire
      }
      staging_load<Cfg>(acc, staging_block(e.batch, e.row0, e.col0), sum, e.thread_in_wg);
      return true;
    } else {
      (void)acc, (void)e;
      return false;
    }
  }

  // fast, one PE: the shard's only partial is stored (nothing was zeroed to add into).
  // Deterministic: the first partial of a half-tile is stored into the owner's staging; every
  // later one waits for its predecessor's flag and adds; the last (initial_accumulators: the
  // whole sum) is stored as bf16 into the owner's c_shard. A partial's flag is raised later
  // (publish_pending), after the warpgroup's barrier here.
  template <class Storage, class Acc>
  __device__ __forceinline__ bool epilogue(Storage& s, const Acc& acc, const gemm::EpilogueSlab& e,
                                           uint32_t& slot) {
    if constexpr (!kDeterministic) {
      if (ctx->n_pes > 1) return false;  // the engine's add into the owner
      gemm::epilogue_store<Cfg, gemm::EpilogueOp::store>(s, acc, &maps->map[0], 0, e.row0, e.col0,
                                                         e.wg, e.thread_in_wg, slot);
      return true;
    } else {
      const ReduceScatterArgs& a = *args;
      if (e.row0 >= a.gemm.m) return true;  // wholly past the shard: nothing is stored
      if (tile_k == ctx->n_pes - 1) {
        // The permit's and the predecessor's acquires, then this thread's TMA writes.
        if (e.thread_in_wg == 0) detail::fence_proxy_async_global();
        gemm::epilogue_store<Cfg, gemm::EpilogueOp::store, LastTileCfg<Cfg>>(
            s, acc, &maps->shard[e.batch], 0, e.row0, e.col0, e.wg, e.thread_in_wg, slot);
        return true;
      }
      const uint32_t barrier_id = 1 + static_cast<uint32_t>(e.wg);
      float* block = staging_block(e.batch, e.row0, e.col0);
      if (tile_k == 0) {
        staging_write<Cfg, StagingOp::store>(block, acc, e.thread_in_wg);
      } else {
        if (e.thread_in_wg == 0) wait_for_predecessor(e.batch, e.row0, e.col0, tile_k);
        detail::named_barrier_sync(barrier_id, 128);  // the acquire, then every thread's adds
        staging_write<Cfg, StagingOp::add>(block, acc, e.thread_in_wg);
      }
      detail::named_barrier_sync(barrier_id, 128);  // every thread's writes, then the release
      return true;
    }
  }

  __device__ __forceinline__ void after_tile(const gemm::EpilogueSlab& e) {
    if constexpr (kDeterministic) {
      if (e.row0 >= args->gemm.m) return;  // a half-tile wholly past the shard: nothing stored
      const int n_pes = ctx->n_pes;
      const bool last = tile_k + 1 == n_pes;
      if (pending_pe >= 0) publish_pending();  // a tile too short for mid_mainloop
      if (last) return;                        // the sum is final, nobody waits for it
      pending_pe = rs_source_at(tile_seg, tile_k + 1, n_pes);
      pending_flag = rs_flag_index<Cfg>(*args, e.batch, e.row0, e.col0);
      pending_value = (epoch - 1) * n_pes + tile_k + 1;
    } else {
      (void)e;
    }
  }

  // The previous half-tile's writes have had gemm::kMidMainloopBlock k-blocks to complete (the
  // release would wait for them): flag it now rather than one whole tile later (its successor
  // may be waiting for it).
  __device__ __forceinline__ void mid_mainloop(int /*wg*/) {
    if constexpr (kDeterministic) {
      if (pending_pe >= 0) publish_pending();
    }
  }

  __device__ __forceinline__ void after_last_tile(int /*wg*/) {
    if constexpr (kDeterministic) {
      if (pending_pe >= 0) publish_pending();
    }
  }
};

/// Every thread of the CTA: zeroes this CTA's slice of the c_shard rows (fast mode).
__device__ __forceinline__ void rs_zero_shard(const ReduceScatterArgs& a) {
  const int64_t row_vec = a.gemm.n / 8;  // 16-byte units of a row (N is a multiple of 8)
  const int64_t total = int64_t(a.gemm.m) * row_vec;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t r = i / row_vec, v = i - r * row_vec;
    reinterpret_cast<uint4*>(a.c_shard + r * a.ldc)[v] = make_uint4(0, 0, 0, 0);
  }
}

/// The whole kernel body, every thread of every CTA. Cfg: bf16 reduce-add (fast) or fp32
/// store (deterministic; it also adds) epilogue, cluster 1.
template <class Cfg, ReduceScatterMode Mode>
__device__ __forceinline__ void gemm_reduce_scatter_cta(const Ctx& ctx, const CUtensorMap* a_map,
                                                        const CUtensorMap* b_map,
                                                        const OwnerMaps& maps,
                                                        const ReduceScatterArgs& a, uint8_t* smem) {
  static_assert(Cfg::kClusterM == 1, "the reduce-scatter GEMM runs without clusters");
  static_assert(Mode != ReduceScatterMode::fast || Cfg::kEpilogueOp == gemm::EpilogueOp::reduce_add,
                "fast mode adds into the owners' shards");
  const int me = ctx.my_pe, n_pes = ctx.n_pes;
  // One PE has no permit to give or wait for and no peer to finish with: its epoch is never
  // read (the hooks use it only with peers), and stream order completes the call.
  const uint64_t epoch = n_pes > 1 ? fused_epoch(a.ws) : 0;
  if (Mode == ReduceScatterMode::fast && n_pes > 1) {
    rs_zero_shard(a);
    detail::fence_proxy_async_global();  // the zeros, before peers' TMA adds
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      const unsigned long long before = atomicAdd(as_counter(a.ws + words::kCounter), 1ull);
      if (before + 1 == gridDim.x) {  // the whole shard is zero: let every PE add into it
        __threadfence();
        detail::fence_acq_rel_sys();
        for (int q = 0; q < n_pes; ++q) fused_publish(ctx, a.ws, words::kPermit + me, epoch, q);
      }
    }
  } else if (n_pes > 1) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      detail::fence_acq_rel_sys();
      for (int q = 0; q < n_pes; ++q) fused_publish(ctx, a.ws, words::kPermit + me, epoch, q);
    }
  }
  ReduceScatterHooks<Cfg, Mode> hooks;
  hooks.ctx = &ctx;
  hooks.args = &a;
  hooks.maps = &maps;
  hooks.epoch = epoch;
  // The engine's own output map is never used by the deterministic mode (its hooks store every
  // half-tile), but it is prefetched: give it a real one.
  const CUtensorMap* c_map =
      Mode == ReduceScatterMode::deterministic ? &maps.shard[0] : &maps.map[0];
  gemm::gemm_cta<Cfg>(gemm::gemm_shared_storage<Cfg>(smem), a_map, b_map, c_map, a.gemm,
                      static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), hooks);
  // The epilogue's TMA writes are complete (gemm_cta waited for them): order them before the
  // generic releases that follow. The barrier also lets a user's kernel reuse the shared memory
  // after this call.
  detail::fence_proxy_async_global();
  __syncthreads();
  // One PE: the shard is this kernel's stores alone, complete when the kernel is; no finishing
  // count, which would end the kernel's last CTA on a chain of fences and an atomic round trip.
  if (n_pes == 1) return;
  // A consumer thread finishes: the producer warpgroup runs on kProducerRegs registers.
  if (threadIdx.x == kFinishThread)
    fused_finish(a.ws, epoch, [&] {
      detail::fence_acq_rel_sys();
      for (int q = 0; q < n_pes; ++q)
        if (q != me) fused_publish(ctx, a.ws, words::kDone + me, epoch, q);
      for (int q = 0; q < n_pes; ++q)
        if (q != me)
          fused_wait_ge(a.ws + words::kDone + q, epoch, a.timeout_ns, "matmul_reduce_scatter", me,
                        "the writes into this shard from PE", q);
    });
}

template <class Cfg, ReduceScatterMode Mode>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_reduce_scatter_kernel(const __grid_constant__ tmashmem_ctx_t ctx,
                               const __grid_constant__ CUtensorMap a_map,
                               const __grid_constant__ CUtensorMap b_map,
                               const __grid_constant__ OwnerMaps maps,
                               const __grid_constant__ ReduceScatterArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  gemm_reduce_scatter_cta<Cfg, Mode>(ctx, &a_map, &b_map, maps, args, smem_raw);
#else
  (void)ctx, (void)a_map, (void)b_map, (void)maps, (void)args;
#endif
}

}  // namespace tmashmem::fused
