// The persistent, warp-specialised GEMM kernel for sm_90a:
//   C[M, N] = A[M, K] * B[N, K]^T (or C += A * B^T with EpilogueOp::reduce_add),
// bf16 in, fp32 accumulate, Cfg::Out out.
// Warpgroup 0 produces (one thread issues TMA, the warpgroup drops to kProducerRegs
// registers); warpgroups 1 and 2 consume (wgmma on 64-row halves of each 128 x kBlockN
// tile, kConsumerRegs registers) and store their halves by TMA. Launch it through
// gemm_plan / gemm_run (launch.cuh), which size the grid to the resident CTAs.
#pragma once

#include <cuda.h>

#include "tmashmem/device/cluster.cuh"
#include "tmashmem/device/detail/gemm_tma.cuh"
#include "tmashmem/device/detail/warpgroup.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/epilogue.cuh"
#include "tmashmem/device/gemm/mainloop.cuh"
#include "tmashmem/device/gemm/pipeline.cuh"
#include "tmashmem/device/gemm/producer.cuh"
#include "tmashmem/device/gemm/scheduler.cuh"
#include "tmashmem/device/tile.cuh"

namespace tmashmem::gemm {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap a_map,
                const __grid_constant__ CUtensorMap b_map,
                const __grid_constant__ CUtensorMap c_map, const GemmArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const uintptr_t base = (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023);
  auto& s = *reinterpret_cast<GemmSharedStorage<Cfg>*>(base);

  const int wg = static_cast<int>(threadIdx.x / 128);
  const uint32_t thread_in_wg = threadIdx.x % 128;
  const uint32_t rank = Cfg::kClusterM > 1 ? cluster_cta_rank() : 0u;
  const int cluster_id = static_cast<int>(blockIdx.x) / Cfg::kClusterM;
  const int clusters = static_cast<int>(gridDim.x) / Cfg::kClusterM;

  if (threadIdx.x == 0) {
    pipeline_init<Cfg>(s);
    detail::tma_prefetch_map(&a_map);
    detail::tma_prefetch_map(&b_map);
    detail::tma_prefetch_map(&c_map);
  }
  // Peers multicast into this CTA's stages and arrive on its barriers: all barriers of the
  // cluster are initialised before anyone proceeds.
  if constexpr (Cfg::kClusterM > 1)
    cluster_sync();
  else
    __syncthreads();

  if (wg == 0) {
    detail::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (thread_in_wg == 0) produce<Cfg>(s, &a_map, &b_map, args, cluster_id, clusters, rank);
    __syncwarp();
  } else {
    detail::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cwg = wg - 1;
    const TileScheduler sched(args);
    PipelineState<Cfg::kStages> st;
    Accumulators<Cfg> acc;
    uint32_t out_slot = 0;
    for (int t = cluster_id; t < sched.tiles(); t += clusters) {
      const TileCoordMN tc = sched.coord(t);
      const int tile_row = tc.cluster_row * Cfg::kClusterM + static_cast<int>(rank);
      mainloop<Cfg>(s, st, acc, args.k_blocks, cwg, thread_in_wg);
      epilogue_store<Cfg>(s, acc, &c_map, tile_row * Cfg::kBlockM + cwg * 64, tc.col * Cfg::kBlockN,
                          cwg, thread_in_wg, out_slot);
    }
    if (thread_in_wg == 0) bulk_wait_group<0>();
  }
  // No CTA leaves while a peer may still multicast into it or arrive on its barriers.
  if constexpr (Cfg::kClusterM > 1) cluster_sync();
#else
  (void)a_map, (void)b_map, (void)c_map, (void)args;
#endif
}

}  // namespace tmashmem::gemm
