// The producer: one thread of the producer warpgroup walks the CTA's tiles and k-blocks and
// fills the stage ring by TMA. Per stage it loads this CTA's 128 x 64 slice of A and its
// 1/kClusterM share of the kBlockN x 64 slice of B, the latter multicast to every CTA of the
// cluster, and announces the whole stage (A + all of B) on its own full barrier.
#pragma once

#include <cuda.h>

#include "tmashmem/device/detail/gemm_tma.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/pipeline.cuh"
#include "tmashmem/device/gemm/scheduler.cuh"

namespace tmashmem::gemm {

/// Called by exactly one thread. `a_map`: box {64, 128} over A [M, K]; `b_map`: box
/// {64, kBSliceRows} over B [N, K]; both 128-byte swizzled.
template <class Cfg>
__device__ __forceinline__ void produce(GemmSharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, const GemmArgs& args,
                                        int cluster_id, int clusters, uint32_t rank) {
  const TileScheduler sched(args);
  PipelineState<Cfg::kStages> st;
  for (int t = cluster_id; t < sched.tiles(); t += clusters) {
    const TileCoordMN tc = sched.coord(t);
    const int row0 = (tc.cluster_row * Cfg::kClusterM + static_cast<int>(rank)) * Cfg::kBlockM;
    const int b_row0 = tc.col * Cfg::kBlockN + static_cast<int>(rank) * Cfg::kBSliceRows;
    for (int kb = 0; kb < args.k_blocks; ++kb) {
      stage_wait(s.empty[st.stage], st.phase ^ 1u);
      s.full[st.stage].arrive_expect_tx(Cfg::kStageBytes);
      const int k0 = kb * Cfg::kBlockK;
      detail::tma_load_2d(s.a[st.stage], a_map, k0, row0, &s.full[st.stage]);
      uint8_t* b_dst = s.b[st.stage] + rank * Cfg::kBSliceBytes;
      if constexpr (Cfg::kClusterM == 1)
        detail::tma_load_2d(b_dst, b_map, k0, b_row0, &s.full[st.stage]);
      else
        detail::tma_load_2d_multicast(b_dst, b_map, k0, b_row0, &s.full[st.stage],
                                      static_cast<uint16_t>((1u << Cfg::kClusterM) - 1));
      st.advance();
    }
  }
}

}  // namespace tmashmem::gemm
