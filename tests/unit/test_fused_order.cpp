// The GEMM + reduce-scatter's tile order (include/tmashmem/device/fused/reduce_scatter_order.cuh):
// the rows walked together tile every owner's block exactly, so no group mixes two owners.
#include "common/catch.h"
#include "tmashmem/device/fused/reduce_scatter_order.cuh"

using tmashmem::fused::reduce_scatter_group_rows;

TEST_CASE("reduce-scatter order: the group divides the owner's tile rows") {
  for (int wanted = 1; wanted <= 16; ++wanted)
    for (int rows = 1; rows <= 80; ++rows) {
      const int g = reduce_scatter_group_rows(wanted, rows);
      INFO("wanted " << wanted << ", owner tile rows " << rows << ": " << g);
      CHECK(g >= 1);
      CHECK(g <= wanted);
      CHECK(rows % g == 0);
      for (int larger = g + 1; larger <= wanted && larger <= rows; ++larger)
        CHECK(rows % larger != 0);  // the largest such divisor
    }
}

TEST_CASE("reduce-scatter order: the shapes of the benchmark") {
  CHECK(reduce_scatter_group_rows(8, 32) == 8);  // 8192 rows, 2 PEs
  CHECK(reduce_scatter_group_rows(8, 2) == 2);   // 512 rows, 2 PEs: was 8, mixing the owners
  CHECK(reduce_scatter_group_rows(8, 1) == 1);   // 512 rows, 4 PEs
  CHECK(reduce_scatter_group_rows(8, 7) == 7);   // m_shard 777
  CHECK(reduce_scatter_group_rows(8, 9) == 3);
  CHECK(reduce_scatter_group_rows(0, 9) == 1);
}
