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
//   deterministic  the epilogue stores each fp32 partial tile into the owner's staging slot
//                  for this PE (staging [n_pes][m_shard][N] fp32 in the owner's workspace)
//                  and flags it; the owner sums the n_pes partials of each tile in PE order
//                  (0, 1, ...) in fp32 and rounds once to bf16: bit-identical across runs.
//
// Protocol of call e (sync.cuh has the words): fast: every CTA zeroes its slice of this PE's
// c_shard, the last of them publishes permit = e to every PE; a PE's producer waits for
// permit[owner] >= e before it loads the first tile of the owner's rows (so before the
// epilogue adds into the owner's shard); when every CTA is done
// (its adds complete), the last one sends done = e to every owner and waits until every PE
// has sent done = e here (the shard is complete), then bumps the epoch. deterministic: at
// start CTA 0 publishes permit = e (the previous call's sums are done: this PE's
// staging may be written again); each half-tile stored into an owner's staging is flagged
// (flag[src][half-tile] = e) after its store completes; after its GEMM tiles every CTA sums
// its share of this PE's half-tiles, each once all n_pes flags are in. Every wait is bounded.
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

/// Per owner PE: the map the epilogue writes through (fast: the owner's c_shard, rank 3
/// {N, m_shard, 1}; deterministic: the owner's staging, rank 3 {N, m_shard, n_pes}).
struct OwnerMaps {
  CUtensorMap map[kReduceScatterMaxPes];
};

struct ReduceScatterArgs {
  gemm::GemmArgs gemm;     // batches = n_pes, m = m_shard
  __nv_bfloat16* c_shard;  // this PE's [m_shard, N] (ldc), symmetric
  int64_t ldc;
  float* staging;        // deterministic: this PE's staging [n_pes][m_shard][N]
  uint64_t* ws;          // symmetric signal workspace (sync.cuh), zeroed once
  int halves_per_owner;  // deterministic: 64-row half-tiles of one shard
  uint64_t timeout_ns;
};

/// Flag of half-tile `half` of an owner's shard, stored by PE `src`.
__device__ __forceinline__ int rs_flag_index(const ReduceScatterArgs& a, int src, int half) {
  return words::kFlags + src * a.halves_per_owner + half;
}

/// Half-tile index of (row0, col0) in a shard: rows in 64-row halves, columns in kBlockN.
template <class Cfg>
__device__ __forceinline__ int rs_half_index(const ReduceScatterArgs& a, int row0, int col0) {
  return (row0 / 64) * a.gemm.tile_cols + col0 / Cfg::kBlockN;
}

/// The epilogue hooks: the owner's map, the wait for its permit, and (deterministic) the
/// per-half-tile flag.
template <class Cfg, ReduceScatterMode Mode>
struct ReduceScatterHooks : gemm::NoHooks {
  const Ctx* ctx;
  const ReduceScatterArgs* args;
  const OwnerMaps* maps;
  uint64_t epoch;
  uint64_t permitted = 0;  // bit q: owner q's permit seen (producer thread)

  // The producer thread, before loading a tile of owner `batch`'s rows: the owner permits
  // writes (fast: its shard is zero; deterministic: its staging is free). The acquire reaches
  // the epilogue's thread through the stage barriers (release / acquire at CTA scope), which
  // completes the order before that thread's first write to the owner.
  __device__ __forceinline__ void before_a_loads(int batch, int /*cluster_row*/) {
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
    *batch_coord = Mode == ReduceScatterMode::fast ? 0 : ctx->my_pe;
    return &maps->map[batch];
  }

  __device__ __forceinline__ void after_tile(int batch, int row0, int col0) {
    if constexpr (Mode == ReduceScatterMode::deterministic) {
      if (row0 >= args->gemm.m) return;  // a half-tile wholly past the shard: nothing stored
      bulk_wait_group<0>();
      detail::fence_proxy_async_global();  // the completed async-proxy writes, then the release
      fused_publish(*ctx, args->ws,
                    rs_flag_index(*args, ctx->my_pe, rs_half_index<Cfg>(*args, row0, col0)), epoch,
                    batch);
    } else {
      (void)batch, (void)row0, (void)col0;
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

/// Every thread of the CTA, after its GEMM tiles (deterministic mode): sums this CTA's share
/// of the half-tiles of this PE's shard, each once every PE's partial is flagged.
__device__ __forceinline__ void rs_sum_shard(const Ctx& ctx, const ReduceScatterArgs& a,
                                             uint64_t epoch, int block_n) {
  const int halves_rows = (a.gemm.m + 63) / 64;
  const int units = halves_rows * a.gemm.tile_cols;
  const int n_pes = ctx.n_pes;
  const size_t slot = size_t(a.gemm.m) * a.gemm.n;  // elements of one PE's staging slot
  for (int u = static_cast<int>(blockIdx.x); u < units; u += static_cast<int>(gridDim.x)) {
    if (threadIdx.x < static_cast<unsigned>(n_pes))
      fused_wait_ge(a.ws + rs_flag_index(a, static_cast<int>(threadIdx.x), u), epoch, a.timeout_ns,
                    "matmul_reduce_scatter", ctx.my_pe, "a partial tile from PE",
                    static_cast<int>(threadIdx.x));
    __syncthreads();
    const int row0 = (u / a.gemm.tile_cols) * 64, col0 = (u % a.gemm.tile_cols) * block_n;
    const int rows = min(64, a.gemm.m - row0), cols = min(block_n, a.gemm.n - col0);
    const int quads = cols / 4;  // N is a multiple of 8, so are the column blocks
    for (int i = static_cast<int>(threadIdx.x); i < rows * quads;
         i += static_cast<int>(blockDim.x)) {
      const int r = row0 + i / quads, c = col0 + (i % quads) * 4;
      const float* src = a.staging + size_t(r) * a.gemm.n + c;
      float4 sum = *reinterpret_cast<const float4*>(src);
      for (int p = 1; p < n_pes; ++p) {  // PE order: the same sums every run
        const float4 x = *reinterpret_cast<const float4*>(src + p * slot);
        sum.x += x.x, sum.y += x.y, sum.z += x.z, sum.w += x.w;
      }
      __nv_bfloat162* dst = reinterpret_cast<__nv_bfloat162*>(a.c_shard + size_t(r) * a.ldc + c);
      dst[0] = __floats2bfloat162_rn(sum.x, sum.y);
      dst[1] = __floats2bfloat162_rn(sum.z, sum.w);
    }
    __syncthreads();
  }
}

/// The whole kernel body, every thread of every CTA. Cfg: bf16 reduce-add (fast) or fp32
/// store (deterministic) epilogue, cluster 1.
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
  gemm::gemm_cta<Cfg>(gemm::gemm_shared_storage<Cfg>(smem), a_map, b_map, &maps.map[0], a.gemm,
                      static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), hooks);
  // The epilogue's TMA writes are complete (gemm_cta waited for them): order them before the
  // generic releases that follow.
  detail::fence_proxy_async_global();
  if constexpr (Mode == ReduceScatterMode::deterministic) {
    __syncthreads();
    rs_sum_shard(ctx, a, epoch, Cfg::kBlockN);
  }
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
