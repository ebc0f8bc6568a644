// The producer: one thread of the producer warpgroup walks the CTA's tiles (the static stride,
// or claimed in order: tile_queue.cuh) and k-blocks and fills the stage ring by TMA. Per stage it
// loads this CTA's 128 x 64 slice of A and its 1/kClusterM share of the kBlockN x 64 slice of B,
// the latter multicast to every CTA of the cluster, and announces the whole stage (A + all of B) on
// its own full barrier.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/tensor.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/pipeline.cuh"
#include "tmashmem/device/gemm/scheduler.cuh"
#include "tmashmem/device/gemm/tile_queue.cuh"

namespace tmashmem::gemm {

/// One tile: every k-block of A and of this CTA's share of B into the stage ring.
template <class Cfg, class Hooks>
__device__ __forceinline__ void produce_tile(GemmSharedStorage<Cfg>& s,
                                             PipelineState<Cfg::kStages>& st,
                                             const CUtensorMap* a_map, uint64_t b_op,
                                             const GemmArgs& args, const TileCoordMN& tc,
                                             uint32_t rank, Hooks& hooks) {
  const TileRowInBatch tr =
      tile_row_in_batch<Cfg::kBlockM, Cfg::kClusterM>(args, tc.cluster_row, rank);
  const int b_row0 = tc.col * Cfg::kBlockN + static_cast<int>(rank) * Cfg::kBSliceRows;
  hooks.before_a_loads(tr.batch, tr.row0, tc.cluster_row, tc.col, tc.index);
  int a_batch = tr.batch;
  const uint64_t a_op = reinterpret_cast<uint64_t>(hooks.input_map(a_map, tr.batch, &a_batch));
  for (int kb = 0; kb < args.k_blocks; ++kb) {
    stage_wait(s.empty[st.stage], st.phase ^ 1u);
    s.full[st.stage].arrive_expect_tx(Cfg::kStageBytes);
    const int32_t k0 = kb * Cfg::kBlockK;
    const uint32_t bar = s.full[st.stage].smem_address();
    const int32_t ca[3] = {k0, tr.row0, a_batch};
    detail::tensor_load<3>(detail::smem_address(s.a[st.stage]), a_op, bar, ca);
    const uint32_t b_dst = detail::smem_address(s.b[st.stage] + rank * Cfg::kBSliceBytes);
#pragma unroll
    for (int box = 0; box < Cfg::kBSliceBoxes; ++box) {
      // [N, K]: {k, n} of the slice's first row; [K, N]: {n, k} of one 64-wide block of n.
      const int32_t cb[2] = {Cfg::kBMnMajor ? b_row0 + box * 64 : k0, Cfg::kBMnMajor ? k0 : b_row0};
      const uint32_t dst = b_dst + box * Cfg::kBNBlockBytes;
      if constexpr (Cfg::kClusterM == 1)
        detail::tensor_load<2>(dst, b_op, bar, cb);
      else
        detail::tensor_load_multicast<2>(dst, b_op, bar,
                                         static_cast<uint16_t>((1u << Cfg::kClusterM) - 1), cb);
    }
    st.advance();
  }
}

/// Called by exactly one thread. `a_map`: box {64, 128, 1} over A [batches][m][K];
/// `b_map`: box {64, kBSliceRows} over B [N, K] (BMajor::k) or box {64, 64} over B [K, N]
/// (BMajor::n); all 128-byte swizzled. `hooks`:
/// before_a_loads(batch, row0, cluster_row, col, index) runs once per tile before its first load,
/// and input_map(a_map, batch, &coord) names the map (same box) and block coordinate of its A.
/// With Hooks::kClaimTiles the tiles are claimed in order and handed to the consumers
/// (tile_queue.cuh); else cluster `cluster_id` takes every `clusters`-th.
template <class Cfg, class Hooks>
__device__ __forceinline__ void produce(GemmSharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, const GemmArgs& args,
                                        int cluster_id, int clusters, uint32_t rank, Hooks& hooks) {
  const TileScheduler sched(args);
  PipelineState<Cfg::kStages> st;
  const uint64_t b_op = reinterpret_cast<uint64_t>(b_map);
  if constexpr (Hooks::kClaimTiles) {
    static_assert(Cfg::kClusterM == 1, "claimed tiles: cluster size 1");
    TileQueueState q;
    for (;;) {
      const int t =
          tile_queue_claim(s.tiles, q, hooks.tile_claims(), sched.tiles() + clusters, stage_wait);
      if (t >= sched.tiles()) return;
      produce_tile<Cfg>(s, st, a_map, b_op, args, sched.coord(t), rank, hooks);
    }
  } else {
    for (int t = cluster_id; t < sched.tiles(); t += clusters)
      produce_tile<Cfg>(s, st, a_map, b_op, args, sched.coord(t), rank, hooks);
  }
}

}  // namespace tmashmem::gemm
