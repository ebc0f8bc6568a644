// The deterministic GEMM + reduce-scatter's order of additions
// (include/tmashmem/device/fused/reduce_scatter_order.cuh): for every tile, the PEs' positions
// are a permutation, and each position reaches the tile strictly after the one before it in its
// walk, a segment (at least floor(T / n) steps) later. The wait of position k for position k - 1
// then never points forward, which is what keeps the waits free of cycles.
#include <vector>

#include "common/catch.h"
#include "tmashmem/device/fused/reduce_scatter_order.cuh"

using namespace tmashmem::fused;

namespace {

int step_of(int pe, int b, int tiles, int n) {  // PE pe's linear step that reaches base tile b
  return ((b - rs_rotation(pe, tiles, n)) % tiles + tiles) % tiles;
}

}  // namespace

TEST_CASE("reduce-scatter order: segments cover the tiles in order") {
  for (int n = 1; n <= 8; ++n)
    for (int tiles = n; tiles <= 70; ++tiles) {
      INFO("n " << n << ", tiles " << tiles);
      CHECK(rs_segment_start(0, tiles, n) == 0);
      CHECK(rs_segment_start(n, tiles, n) == tiles);
      for (int b = 0; b < tiles; ++b) {
        const int j = rs_segment(b, tiles, n);
        REQUIRE(j >= 0);
        REQUIRE(j < n);
        CHECK(rs_segment_start(j, tiles, n) <= b);
        CHECK(b < rs_segment_start(j + 1, tiles, n));
      }
    }
}

TEST_CASE("reduce-scatter order: positions follow the walks, a segment apart") {
  for (int n = 1; n <= 8; ++n)
    for (int tiles = n; tiles <= 70; ++tiles)
      for (int b = 0; b < tiles; ++b) {
        INFO("n " << n << ", tiles " << tiles << ", tile " << b);
        const int seg = rs_segment(b, tiles, n);
        std::vector<int> pe_at(n, -1);
        for (int s = 0; s < n; ++s) {
          const int k = rs_position(seg, s, n);
          REQUIRE(k >= 0);
          REQUIRE(k < n);
          CHECK(pe_at[k] == -1);  // a permutation
          pe_at[k] = s;
          CHECK(rs_source_at(seg, k, n) == s);
        }
        CHECK(pe_at[n - 1] == seg);  // the last is the segment's PE
        for (int k = 1; k < n; ++k)
          CHECK(step_of(pe_at[k], b, tiles, n) - step_of(pe_at[k - 1], b, tiles, n) >= tiles / n);
      }
}

TEST_CASE("reduce-scatter order: whole owner blocks make the owner last") {
  // 4 PEs, 2 tile rows per owner, 8 tile columns, rows walked one owner block at a time:
  // segment j is owner j's 16 tiles.
  const int n = 4, tiles = 4 * 16;
  for (int owner = 0; owner < n; ++owner)
    for (int b = owner * 16; b < (owner + 1) * 16; ++b) {
      CHECK(rs_segment(b, tiles, n) == owner);
      CHECK(rs_position(owner, owner, n) == n - 1);
    }
  CHECK(rs_rotation(0, tiles, n) == 16);  // PE 0 starts at PE 1's rows
  CHECK(rs_rotation(3, tiles, n) == 0);
}
