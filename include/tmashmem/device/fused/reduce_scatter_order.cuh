// The tile order of the GEMM + reduce-scatter (gemm_reduce_scatter.cuh) as pure functions:
// plain C++ without CUDA, so that CPU tests include it; reduce_scatter_plan
// (gemm_reduce_scatter_launch.cuh) calls them.
#pragma once

namespace tmashmem::fused {

/// The deterministic mode's cluster rows walked together (gemm::TileScheduler's group_rows) for
/// an owner block of `owner_tile_rows` tile rows: the largest divisor of it up to `wanted` (at
/// least 1). The order starts at an owner block's first row, so groups of a divisor tile each
/// block exactly: the tiles of one owner come before the next owner's, and the own tiles come
/// last, after every partial they wait for was computed (else, with a few tile rows per owner,
/// own tiles would come in every round and wait before their mainloop for partials computed in
/// that same round). The price, with fewer than `wanted` tile rows per owner: fewer rows share
/// each tile of B in L2.
constexpr int reduce_scatter_group_rows(int wanted, int owner_tile_rows) {
  int g = wanted < owner_tile_rows ? wanted : owner_tile_rows;
  for (; g > 1; --g)
    if (owner_tile_rows % g == 0) return g;
  return 1;
}

}  // namespace tmashmem::fused
