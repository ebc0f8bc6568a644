// The persistent, warp-specialised GEMM kernel for sm_90a:
//   C[M, N] = A[M, K] * B[N, K]^T (or C += A * B^T with EpilogueOp::reduce_add),
// bf16 in, fp32 accumulate, Cfg::Out out.
// Warpgroup 0 produces (one thread issues TMA, the warpgroup drops to kProducerRegs
// registers); warpgroups 1 and 2 consume (wgmma on 64-row halves of each 128 x kBlockN
// tile, kConsumerRegs registers) and store their halves by TMA. Launch it through
// gemm_plan / gemm_run (launch.cuh), which size the grid to the resident CTAs.
//
// gemm_cta() is the whole of one CTA's work, for kernels that give some CTAs another role
// (the fused kernels of tmashmem/device/fused): it takes the CTA's cluster index among the
// GEMM's clusters and the hooks (hooks.cuh) the fused kernel joins through.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "tmashmem/device/cluster.cuh"
#include "tmashmem/device/detail/gemm_tma.cuh"
#include "tmashmem/device/detail/warpgroup.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/epilogue.cuh"
#include "tmashmem/device/gemm/hooks.cuh"
#include "tmashmem/device/gemm/mainloop.cuh"
#include "tmashmem/device/gemm/pipeline.cuh"
#include "tmashmem/device/gemm/producer.cuh"
#include "tmashmem/device/gemm/scheduler.cuh"
#include "tmashmem/device/tile.cuh"

namespace tmashmem::gemm {

/// The 1024-byte aligned shared storage inside the kernel's dynamic shared memory
/// (gemm_smem_bytes<Cfg>() of it).
template <class Cfg>
__device__ __forceinline__ GemmSharedStorage<Cfg>& gemm_shared_storage(uint8_t* smem_raw) {
  const uintptr_t base = (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023);
  return *reinterpret_cast<GemmSharedStorage<Cfg>*>(base);
}

/// Every thread of a CTA (kThreads, all of its cluster's CTAs likewise): cluster `cluster_id`
/// of `clusters` computes its tiles. Contains the cluster barriers after the barrier init and
/// before return.
template <class Cfg, class Hooks>
__device__ __forceinline__ void gemm_cta(GemmSharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                         const CUtensorMap* b_map, const CUtensorMap* c_map,
                                         const GemmArgs& args, int cluster_id, int clusters,
                                         Hooks& hooks) {
  const int wg = static_cast<int>(threadIdx.x / 128);
  const uint32_t thread_in_wg = threadIdx.x % 128;
  const uint32_t rank = Cfg::kClusterM > 1 ? cluster_cta_rank() : 0u;

  if (threadIdx.x == 0) {
    pipeline_init<Cfg>(s);
    if constexpr (Hooks::kClaimTiles) tile_queue_init<Cfg::kConsumers>(s.tiles);
    detail::tensormap_prefetch(a_map);
    detail::tensormap_prefetch(b_map);
    detail::tensormap_prefetch(c_map);
  }
  // Peers multicast into this CTA's stages and arrive on its barriers: all barriers of the
  // cluster are initialised before anyone proceeds.
  if constexpr (Cfg::kClusterM > 1)
    cluster_sync();
  else
    __syncthreads();

  if (wg == 0) {
    detail::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (thread_in_wg == 0)
      produce<Cfg>(s, a_map, b_map, args, cluster_id, clusters, rank, hooks);
    else if (thread_in_wg >= 32)
      hooks.producer_warps(thread_in_wg - 32);
    __syncwarp();
  } else {
    detail::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cwg = wg - 1;
    const TileScheduler sched(args);
    PipelineState<Cfg::kStages> st;
    Accumulators<Cfg> acc;
    uint32_t out_slot = 0;
    TileQueueState queue;
    for (int t = cluster_id;; t += clusters) {
      // With claims the producer's step replaces the stride's (in this form the plain GEMM
      // compiles to the same PTX as before claims existed).
      if constexpr (Hooks::kClaimTiles) t = tile_queue_take(s.tiles, queue, stage_wait);
      if (t >= sched.tiles()) break;
      const TileCoordMN tc = sched.coord(t);
      const TileRowInBatch tr =
          tile_row_in_batch<Cfg::kBlockM, Cfg::kClusterM>(args, tc.cluster_row, rank);
      const int row0 = tr.row0 + cwg * 64, col0 = tc.col * Cfg::kBlockN;
      const EpilogueSlab slab{cwg, thread_in_wg, tr.batch, row0, col0, tc.index};
      const bool accumulate = hooks.initial_accumulators(acc, slab);
      mainloop<Cfg>(s, st, acc, args.k_blocks, cwg, thread_in_wg, hooks, accumulate);
      if (!hooks.epilogue(s, acc, slab, out_slot)) {
        int batch_coord = tr.batch;
        const CUtensorMap* out =
            thread_in_wg == 0 ? hooks.output_map(c_map, tr.batch, &batch_coord) : c_map;
        epilogue_store<Cfg>(s, acc, out, batch_coord, row0, col0, cwg, thread_in_wg, out_slot);
      }
      if (thread_in_wg == 0) hooks.after_tile(slab);
    }
    if (thread_in_wg == 0) {
      bulk_wait_group<0>();
      hooks.after_last_tile(cwg);
    }
  }
  // No CTA leaves while a peer may still multicast into it or arrive on its barriers.
  if constexpr (Cfg::kClusterM > 1) cluster_sync();
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap a_map,
                const __grid_constant__ CUtensorMap b_map,
                const __grid_constant__ CUtensorMap c_map, const GemmArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  NoHooks hooks;
  gemm_cta<Cfg>(gemm_shared_storage<Cfg>(smem_raw), &a_map, &b_map, &c_map, args,
                static_cast<int>(blockIdx.x) / Cfg::kClusterM,
                static_cast<int>(gridDim.x) / Cfg::kClusterM, hooks);
#else
  (void)a_map, (void)b_map, (void)c_map, (void)args;
#endif
}

}  // namespace tmashmem::gemm
