// Hooks: the points where a fused kernel joins the GEMM engine without copying it.
//
//   before_a_loads   the producer thread, before the first TMA load of A for a tile (block
//                    `batch`, first row `row0` in it, cluster row `cluster_row` over all
//                    blocks, tile column `col`, place `index` in the scheduler's order): an
//                    all-gather GEMM waits there until the tile's rows of A have arrived (and
//                    fences the generic -> async proxy for them); a reduce-scatter waits until the
//                    owner permits writes.
//   input_map        the producer thread, per tile: which tensor map and which block
//                    coordinate the rows of block `batch` of A are loaded from (an all-gather
//                    GEMM reads its own block straight from the PE's shard).
//   output_map       the epilogue's issuing thread: which tensor map and which block
//                    coordinate receive the rows of block `batch` (a reduce-scatter GEMM
//                    sends block p to PE p's copy of C).
//   initial_accumulators
//                    all 128 threads of a consumer warpgroup, per 64-row half of a tile, before
//                    its mainloop: returns true if it set the accumulators (the MMAs then add
//                    the tile to them), false to start from zero (a
//                    deterministic reduce-scatter loads there the other PEs' sum of a half-tile
//                    whose last partial it computes).
//   epilogue         all 128 threads of a consumer warpgroup, per 64-row half of a tile:
//                    returns true if it wrote the slab itself (a deterministic reduce-scatter
//                    waits there for the previous PE's partial of the half-tile in the owner's
//                    staging, then adds its own from the registers), false for the engine's
//                    store.
//   after_tile       the epilogue's issuing thread, after the last store of its 64-row half
//                    of a tile has been issued (a deterministic reduce-scatter notes there the
//                    flag it raises later).
//   after_last_tile  the epilogue's issuing thread, once every store it issued is complete.
//   mid_mainloop     the epilogue's issuing thread, during a tile's mainloop once
//                    kMidMainloopBlock<Cfg> k-blocks of MMAs are issued (a tile with fewer has no
//                    call): the previous tile's stores have had that time to complete, so a
//                    fused kernel can signal them there, while the MMAs run.
//   producer_warps   the producer warpgroup's warps 1 .. 3 (96 threads, kProducerRegs
//                    registers each), which the GEMM leaves idle: an all-gather GEMM copies
//                    chunks of A with them. `thread` is 0 .. 95; they may synchronise with
//                    named barrier kProducerWarpsBarrier (96 threads).
//
//   kClaimTiles, tile_claims()
//                    true and a counter in global memory: the CTAs claim tiles in order from
//                    it (tile_queue.cuh has the contract) instead of taking every clusters-th:
//                    CTAs that run at different speeds (PEs sharing a GPU) share the tiles by
//                    progress. Cluster size 1.
//
// NoHooks is the plain GEMM: every call compiles away. A hooks object is taken by reference
// and shared by the CTA's threads; calls come from one thread at a time per role.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace tmashmem::gemm {

/// The named barrier the producer warpgroup's idle warps may use (the consumers use 1, 2).
constexpr uint32_t kProducerWarpsBarrier = 3;

/// The k-block of a tile after which mainloop() calls mid_mainloop: the last one the producer
/// can fill before the other warpgroup starts the tile, so that a warpgroup reaches it while the
/// other one still waits before the tile (for a peer, say): what it signals there must not wait
/// for the other warpgroup.
template <class Cfg>
constexpr int kMidMainloopBlock = Cfg::kStages - 1;

/// A consumer warpgroup's 64-row half of a tile: rows row0 .. row0 + 63 and columns col0 ..
/// col0 + kBlockN - 1 of block `batch` of C.
struct EpilogueSlab {
  int wg;  // consumer warpgroup, 0 or 1
  uint32_t thread_in_wg;
  int batch, row0, col0;
  int index;  // the tile's place in the scheduler's order (TileCoordMN::index)
};

struct NoHooks {
  static constexpr bool kClaimTiles = false;  // tile_claims() is then never called
  __device__ __forceinline__ void producer_warps(uint32_t /*thread*/) {}
  __device__ __forceinline__ void before_a_loads(int /*batch*/, int /*row0*/, int /*cluster_row*/,
                                                 int /*col*/, int /*index*/) {}
  __device__ __forceinline__ const CUtensorMap* input_map(const CUtensorMap* a_map, int batch,
                                                          int* batch_coord) {
    *batch_coord = batch;
    return a_map;
  }
  __device__ __forceinline__ const CUtensorMap* output_map(const CUtensorMap* c_map, int batch,
                                                           int* batch_coord) {
    *batch_coord = batch;
    return c_map;
  }
  template <class Acc>
  __device__ __forceinline__ bool initial_accumulators(Acc& /*acc*/, const EpilogueSlab& /*slab*/) {
    return false;
  }
  template <class Storage, class Acc>
  __device__ __forceinline__ bool epilogue(Storage& /*s*/, const Acc& /*acc*/,
                                           const EpilogueSlab& /*slab*/, uint32_t& /*slot*/) {
    return false;
  }
  __device__ __forceinline__ void after_tile(const EpilogueSlab& /*slab*/) {}
  __device__ __forceinline__ void after_last_tile(int /*wg*/) {}
  __device__ __forceinline__ void mid_mainloop(int /*wg*/) {}
};

}  // namespace tmashmem::gemm
