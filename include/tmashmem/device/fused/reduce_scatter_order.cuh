// The deterministic GEMM + reduce-scatter's tile orders and order of additions
// (gemm_reduce_scatter.cuh) as pure functions: plain C++ (host and device under nvcc), so that
// CPU tests include it.
//
// Every PE walks the same base order of the T tiles (the engine's grouped rasterisation over all
// owners' rows), each rotated by a whole number of segments: PE s starts at the first tile of
// segment s + 1 (segment j: base tiles [floor(j T / n), floor((j + 1) T / n))). So PE s reaches
// base tile b at its linear step (b - rotation(s)) mod T, and the PEs reach one tile one after
// another, a segment apart: first PE seg(b) - 1, then seg(b) - 2, ..., last PE seg(b). That is
// the fixed order in which the partials of b are added up: position k = (seg(b) - s - 1) mod n;
// the first stores, each next one adds, the last one starts from the others' sum and writes the
// result into the owner. With T/n tiles per segment the PE at position k reaches a tile T/n
// steps after the one at k - 1 (where an owner's rows are whole segments, segment j is owner j's
// shard and the owner comes last).
#pragma once

#if defined(__CUDACC__)
#define TMASHMEM_RS_ORDER_FN __host__ __device__ constexpr
#else
#define TMASHMEM_RS_ORDER_FN constexpr
#endif

namespace tmashmem::fused {

/// The first base tile of segment j (0 <= j <= n; segment n's first tile is T).
TMASHMEM_RS_ORDER_FN int rs_segment_start(int j, int tiles, int n_pes) {
  return static_cast<int>(static_cast<long long>(j) * tiles / n_pes);
}

/// The segment of base tile b (0 <= b < T): the largest j with rs_segment_start(j) <= b.
TMASHMEM_RS_ORDER_FN int rs_segment(int b, int tiles, int n_pes) {
  return static_cast<int>((static_cast<long long>(b + 1) * n_pes + tiles - 1) / tiles) - 1;
}

/// Where PE `pe`'s walk starts in the base order (GemmArgs::linear_rotation): segment pe + 1.
TMASHMEM_RS_ORDER_FN int rs_rotation(int pe, int tiles, int n_pes) {
  return rs_segment_start((pe + 1) % n_pes, tiles, n_pes);
}

/// Position of PE `src` in the order of additions of a tile of segment `seg` (n_pes - 1: last).
TMASHMEM_RS_ORDER_FN int rs_position(int seg, int src, int n_pes) {
  return ((seg - 1 - src) % n_pes + n_pes) % n_pes;
}

/// The PE at position k of a tile of segment `seg`. The map k = seg - 1 - src (mod n_pes) is its
/// own inverse, so this is rs_position again.
TMASHMEM_RS_ORDER_FN int rs_source_at(int seg, int k, int n_pes) {
  return rs_position(seg, k, n_pes);
}

}  // namespace tmashmem::fused

#undef TMASHMEM_RS_ORDER_FN
