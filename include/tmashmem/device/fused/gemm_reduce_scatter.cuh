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
//                  reproducible (bf16 rounding after each add).
//   deterministic  each owner's staging tile (fp32 [m_shard][N] in its workspace) receives the
//                  PEs' fp32 partial tiles one after another in a fixed order, the order in
//                  which the tile orders reach it (PE owner - 1 first, then owner - 2, ...,
//                  the owner last): the first stores, each next one waits for its
//                  predecessor's flag and TMA-adds. Once the owner's own add is in, the idle
//                  producer warps of the owner's CTA that computed the tile round it to bf16
//                  into c_shard, while the GEMM goes on: bit-identical across runs (the same
//                  fp32 additions in the same order, one rounding to bf16).
//
// Protocol of call e (sync.cuh has the words): fast: every CTA zeroes its slice of this PE's
// c_shard, the last of them publishes permit = e to every PE; a PE's producer waits for
// permit[owner] >= e before it loads the first tile of the owner's rows (so before the
// epilogue adds into the owner's shard); when every CTA is done (its adds complete), the last
// one sends done = e to every owner and waits until every PE has sent done = e here (the
// shard is complete), then bumps the epoch. deterministic: at start CTA 0 publishes permit = e
// (the previous call's conversions are done: this PE's staging may be written again); the
// flag of an owner's half-tile counts the partials in: (e - 1) * n_pes + k + 1 once the k-th
// (from 0) is complete. A half-tile's flag is raised when its stores are complete, which the
// epilogue's thread checks a few k-blocks into its next tile (mid_mainloop: the stores complete
// behind those MMAs), at its next epilogue if the tile is shorter, before it blocks on anything
// itself, and at its end. Every wait is bounded.
//
// Co-residency: as for the all-gather GEMM (allgather_gemm.cuh): the grid fits on the SMs
// this PE may use at once.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/fused/sync.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::fused {

constexpr int kReduceScatterMaxPes = 8;  // one tensor map per owner in the kernel parameters

enum class ReduceScatterMode : int { fast = 0, deterministic = 1 };

/// Per owner PE: the map the epilogue writes through, rank 3 {N, m_shard, 1}: fast: the
/// owner's c_shard (bf16); deterministic: the owner's staging (fp32).
struct OwnerMaps {
  CUtensorMap map[kReduceScatterMaxPes];
};

struct ReduceScatterArgs {
  gemm::GemmArgs gemm;     // batches = n_pes, m = m_shard
  __nv_bfloat16* c_shard;  // this PE's [m_shard, N] (ldc), symmetric
  int64_t ldc;
  float* staging;        // deterministic: this PE's staging [m_shard][N]
  uint64_t* ws;          // symmetric signal workspace (sync.cuh), zeroed once
  int halves_per_owner;  // deterministic: 64-row half-tiles of one shard
  uint64_t timeout_ns;
};

/// Where PE `src`'s partial of owner `owner`'s tiles comes in the fixed order of additions:
/// the phase of src's tile order (which starts at the next PE's rows) that covers the owner.
__device__ __forceinline__ int rs_position(int owner, int src, int n_pes) {
  return (owner - 1 - src + 2 * n_pes) % n_pes;
}

/// The PE at position k of owner `owner`'s order (position n_pes - 1: the owner). The map
/// k = owner - 1 - src (mod n_pes) is its own inverse, so this is rs_position again.
__device__ __forceinline__ int rs_source_at(int owner, int k, int n_pes) {
  return rs_position(owner, k, n_pes);
}

/// Deterministic: the word, in the workspace of the PE that waits for it, that counts the
/// partials of owner `owner`'s half-tile at (row0, col0) of its shard: the PE at position k
/// waits there for k of them, the owner's producer warps for all. Each partial's writer raises
/// it in the workspace of the next PE in the order (the owner after the last).
template <class Cfg>
__device__ __forceinline__ int rs_flag_index(const ReduceScatterArgs& a, int owner, int row0,
                                             int col0) {
  return words::kFlags + owner * a.halves_per_owner + (row0 / 64) * a.gemm.tile_cols +
         col0 / Cfg::kBlockN;
}

/// The producer warps of an owner's CTA (96 threads, `t` 0 .. 95): one complete staging
/// half-tile, rounded to bf16 into c_shard.
template <class Cfg>
__device__ __forceinline__ void rs_round_half(const ReduceScatterArgs& a, int row0, int col0,
                                              uint32_t t) {
  constexpr uint32_t kThreads = 96;
  const int rows = min(64, a.gemm.m - row0), quads = min(Cfg::kBlockN, a.gemm.n - col0) / 4;
  const int units = rows * quads;  // N is a multiple of 8: whole float4 units
  const float* src = a.staging + size_t(row0) * a.gemm.n + col0;
  __nv_bfloat16* dst = a.c_shard + size_t(row0) * a.ldc + col0;
  for (int u = static_cast<int>(t); u < units; u += 4 * kThreads) {
    float4 v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int w = u + i * static_cast<int>(kThreads);
      if (w < units)
        v[i] =
            __ldcg(reinterpret_cast<const float4*>(src + size_t(w / quads) * a.gemm.n) + w % quads);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int w = u + i * static_cast<int>(kThreads);
      if (w < units) {
        __nv_bfloat162 lo = __floats2bfloat162_rn(v[i].x, v[i].y);
        __nv_bfloat162 hi = __floats2bfloat162_rn(v[i].z, v[i].w);
        uint2 packed;
        packed.x = *reinterpret_cast<uint32_t*>(&lo);
        packed.y = *reinterpret_cast<uint32_t*>(&hi);
        reinterpret_cast<uint2*>(dst + size_t(w / quads) * a.ldc)[w % quads] = packed;
      }
    }
  }
}

/// The hooks: the owner's map, the wait for its permit, and (deterministic) the order of the
/// additions, the flags, and the rounding of the own tiles by the producer warps.
template <class Cfg, ReduceScatterMode Mode>
struct ReduceScatterHooks : gemm::NoHooks {
  static constexpr bool kDeterministic = Mode == ReduceScatterMode::deterministic;
  const Ctx* ctx;
  const ReduceScatterArgs* args;
  const OwnerMaps* maps;
  uint64_t epoch;
  int cta = 0;             // this CTA's index among the GEMM's (for the producer warps)
  uint64_t permitted = 0;  // bit q: owner q's permit seen (producer thread)
  int pending_pe = -1;     // deterministic, epilogue thread: a half-tile not yet flagged, the PE
  int pending_flag = 0;    // whose word it raises, and the value
  uint64_t pending_value = 0;

  // The producer thread, before loading a tile of owner `batch`'s rows: the owner permits
  // writes (fast: its shard is zero; deterministic: its staging is free). The acquire reaches
  // the epilogue's thread through the stage barriers (release / acquire at CTA scope), which
  // completes the order before that thread's first write to the owner.
  __device__ __forceinline__ void before_a_loads(int batch, int /*row0*/, int /*cluster_row*/,
                                                 int /*col*/) {
    if ((permitted >> batch) & 1u) return;
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

  // Epilogue thread: raises the flag of the half-tile whose stores are complete.
  __device__ __forceinline__ void publish_pending() {
    detail::fence_proxy_async_global();  // the completed async-proxy writes, then the release
    fused_publish(*ctx, args->ws, pending_flag, pending_value, pending_pe);
    pending_pe = -1;
  }

  // Deterministic: the first partial of a half-tile is stored (the engine's epilogue); every
  // later one waits for its predecessor's and adds.
  template <class Storage, class Acc>
  __device__ __forceinline__ bool epilogue(Storage& s, const Acc& acc, const gemm::EpilogueSlab& e,
                                           uint32_t& slot) {
    if constexpr (!kDeterministic) {
      (void)s, (void)acc, (void)e, (void)slot;
      return false;
    } else {
      const ReduceScatterArgs& a = *args;
      const int k = rs_position(e.batch, ctx->my_pe, ctx->n_pes);
      if (k == 0 || e.row0 >= a.gemm.m) return false;
      if (e.thread_in_wg == 0) {
        const uint64_t* flag = a.ws + rs_flag_index<Cfg>(a, e.batch, e.row0, e.col0);
        const uint64_t want = (epoch - 1) * ctx->n_pes + k;
        if (detail::ld_acquire_sys(flag) < want) {
          // Peers may be waiting for this PE's last half-tile: raise its flag before blocking.
          if (pending_pe >= 0) {
            bulk_wait_group<0>();
            publish_pending();
          }
          fused_wait_ge(flag, want, a.timeout_ns, "matmul_reduce_scatter", ctx->my_pe,
                        "the previous partial of a tile of owner PE", e.batch);
        }
        detail::fence_proxy_async_global();  // the acquire, then this thread's TMA adds
      }
      gemm::epilogue_store<Cfg, gemm::EpilogueOp::reduce_add>(
          s, acc, &maps->map[e.batch], 0, e.row0, e.col0, e.wg, e.thread_in_wg, slot);
      return true;
    }
  }

  __device__ __forceinline__ void after_tile(int /*wg*/, int batch, int row0, int col0) {
    if constexpr (kDeterministic) {
      if (row0 >= args->gemm.m) return;      // a half-tile wholly past the shard: nothing stored
      if (pending_pe >= 0) {                 // a tile too short for mid_mainloop
        bulk_wait_group<Cfg::kOutChunks>();  // all but this half-tile's stores complete
        publish_pending();
      }
      const int n_pes = ctx->n_pes, k = rs_position(batch, ctx->my_pe, n_pes);
      pending_pe = k + 1 < n_pes ? rs_source_at(batch, k + 1, n_pes) : batch;
      pending_flag = rs_flag_index<Cfg>(*args, batch, row0, col0);
      pending_value = (epoch - 1) * n_pes + k + 1;
    } else {
      (void)batch, (void)row0, (void)col0;
    }
  }

  // The previous half-tile's stores have had gemm::kMidMainloopBlock k-blocks to complete: flag it
  // now rather than one whole tile later (its successor may be waiting for it).
  __device__ __forceinline__ void mid_mainloop(int /*wg*/) {
    if constexpr (kDeterministic) {
      if (pending_pe >= 0) {
        bulk_wait_group<0>();
        publish_pending();
      }
    }
  }

  __device__ __forceinline__ void after_last_tile(int /*wg*/) {
    if constexpr (kDeterministic) {
      if (pending_pe >= 0) publish_pending();  // the engine waited for every store
    }
  }

  // Deterministic: this CTA's own half-tiles, each rounded once its last partial is in.
  __device__ __forceinline__ void producer_warps(uint32_t t) {
    if constexpr (kDeterministic) {
      const ReduceScatterArgs& a = *args;
      const gemm::TileScheduler sched(a.gemm);
      const uint64_t complete = epoch * ctx->n_pes;
      for (int i = cta; i < sched.tiles(); i += static_cast<int>(gridDim.x)) {
        const gemm::TileCoordMN tc = sched.coord(i);
        const gemm::TileRowInBatch tr =
            gemm::tile_row_in_batch<Cfg::kBlockM, 1>(a.gemm, tc.cluster_row, 0);
        if (tr.batch != ctx->my_pe) continue;
        for (int h = 0; h < Cfg::kBlockM; h += 64) {
          const int row0 = tr.row0 + h, col0 = tc.col * Cfg::kBlockN;
          if (row0 >= a.gemm.m) break;
          const int flag = rs_flag_index<Cfg>(a, ctx->my_pe, row0, col0);
          if (t == 0)
            fused_wait_ge(a.ws + flag, complete, a.timeout_ns, "matmul_reduce_scatter", ctx->my_pe,
                          "the last partial of own half-tile", flag - words::kFlags);
          detail::named_barrier_sync(gemm::kProducerWarpsBarrier, 96);  // after the acquire
          rs_round_half<Cfg>(a, row0, col0, t);
        }
      }
    } else {
      (void)t;
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
  const uint64_t epoch = fused_epoch(a.ws);
  const int me = ctx.my_pe, n_pes = ctx.n_pes;
  if constexpr (Mode == ReduceScatterMode::fast) {
    rs_zero_shard(a);
    detail::fence_proxy_async_global();  // the zeros, before peers' TMA adds
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      const unsigned long long before =
          atomicAdd(reinterpret_cast<unsigned long long*>(a.ws + words::kCounter), 1ull);
      if (before + 1 == gridDim.x) {  // the whole shard is zero: let every PE add into it
        __threadfence();
        detail::fence_acq_rel_sys();
        for (int q = 0; q < n_pes; ++q) fused_publish(ctx, a.ws, words::kPermit + me, epoch, q);
      }
    }
  } else {
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
  hooks.cta = static_cast<int>(blockIdx.x);
  gemm::gemm_cta<Cfg>(gemm::gemm_shared_storage<Cfg>(smem), a_map, b_map, &maps.map[0], a.gemm,
                      static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), hooks);
  // The epilogue's TMA writes are complete (gemm_cta waited for them; deterministic: the
  // producer warps have rounded this CTA's own tiles): order them before the generic releases
  // that follow.
  detail::fence_proxy_async_global();
  __syncthreads();
  // A consumer thread finishes: the producer warpgroup runs on kProducerRegs registers.
  if (threadIdx.x == kFinishThread)
    fused_finish(a.ws, epoch, [&] {
      if constexpr (Mode == ReduceScatterMode::fast) {
        detail::fence_acq_rel_sys();
        for (int q = 0; q < n_pes; ++q)
          if (q != me) fused_publish(ctx, a.ws, words::kDone + me, epoch, q);
        for (int q = 0; q < n_pes; ++q)
          if (q != me)
            fused_wait_ge(a.ws + words::kDone + q, epoch, a.timeout_ns, "matmul_reduce_scatter", me,
                          "the adds into this shard from PE", q);
      }
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
