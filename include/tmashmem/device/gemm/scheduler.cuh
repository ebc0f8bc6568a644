// Persistent tile scheduler with grouped rasterisation.
//
// The output is cut into cluster tiles of (kBlockM * kClusterM) x kBlockN. Cluster c of the
// persistent grid takes linear tiles c, c + clusters, c + 2 * clusters, ... (or claims them
// in order: tile_queue.cuh). Linear order
// walks `group_rows` cluster rows together down each tile column before moving to the next
// column, so the CTAs running at one time share A rows and B columns in L2. The order
// starts at cluster row `row_rotation` and wraps around (a fused all-gather GEMM starts with
// the rows a PE already holds); the walk starts at tile `linear_rotation` of that order and
// wraps around (the deterministic reduce-scatter's PEs walk one order a segment apart).
#pragma once

#include "tmashmem/device/gemm/config.cuh"

namespace tmashmem::gemm {

struct TileCoordMN {
  int cluster_row;  // 0 .. cluster_rows - 1, over all blocks of rows (GemmArgs::batches)
  int col;
  int index;  // the tile's place in the order before linear_rotation
};

/// Where a cluster row lies: block `batch` of rows, and the first row of this CTA's tile
/// inside that block (the CTA of cluster rank `rank` takes the rank-th 128-row tile).
struct TileRowInBatch {
  int batch;
  int row0;
};

template <int BlockM, int ClusterM>
__device__ __forceinline__ TileRowInBatch tile_row_in_batch(const GemmArgs& a, int cluster_row,
                                                            uint32_t rank) {
  const int batch = cluster_row / a.batch_cluster_rows;
  const int local = cluster_row - batch * a.batch_cluster_rows;
  return {batch, (local * ClusterM + static_cast<int>(rank)) * BlockM};
}

struct TileScheduler {
  int cluster_rows, tile_cols, group_rows, row_rotation, linear_rotation;

  __device__ __forceinline__ explicit TileScheduler(const GemmArgs& a)
      : cluster_rows(a.cluster_rows),
        tile_cols(a.tile_cols),
        group_rows(a.group_rows),
        row_rotation(a.row_rotation),
        linear_rotation(a.linear_rotation) {}

  __device__ __forceinline__ int tiles() const { return cluster_rows * tile_cols; }

  __device__ __forceinline__ TileCoordMN coord(int step) const {
    int linear = step + linear_rotation;
    if (linear >= tiles()) linear -= tiles();
    const int per_group = group_rows * tile_cols;
    const int group = linear / per_group;
    const int first_row = group * group_rows;
    const int rows = min(cluster_rows - first_row, group_rows);
    const int in_group = linear - group * per_group;
    int row = first_row + in_group % rows + row_rotation;
    if (row >= cluster_rows) row -= cluster_rows;
    return {row, in_group / rows, linear};
  }
};

}  // namespace tmashmem::gemm
