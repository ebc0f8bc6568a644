// Hooks: the points where a fused kernel joins the GEMM engine without copying it.
//
//   before_a_loads   the producer thread, before the first TMA load of A for a tile: an
//                    all-gather GEMM waits there until the tile's rows of A have arrived
//                    (and fences the generic -> async proxy for them).
//   input_map        the producer thread, per tile: which tensor map and which block
//                    coordinate the rows of block `batch` of A are loaded from (an all-gather
//                    GEMM reads its own block straight from the PE's shard).
//   output_map       the epilogue's issuing thread: which tensor map and which block
//                    coordinate receive the rows of block `batch` (a reduce-scatter GEMM
//                    sends block p to PE p's copy of C).
//   after_tile       the epilogue's issuing thread, after the last store of its 64-row half
//                    of a tile has been committed (a deterministic reduce-scatter waits for
//                    the stores there and signals the owner).
//   producer_warps   the producer warpgroup's warps 1 .. 3 (96 threads, kProducerRegs
//                    registers each), which the GEMM leaves idle: an all-gather GEMM copies
//                    chunks of A with them. `thread` is 0 .. 95; they may synchronise with
//                    named barrier kProducerWarpsBarrier (96 threads).
//
// NoHooks is the plain GEMM: every call compiles away. A hooks object is taken by reference
// and shared by the CTA's threads; calls come from one thread at a time per role.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace tmashmem::gemm {

/// The named barrier the producer warpgroup's idle warps may use (the consumers use 1, 2).
constexpr uint32_t kProducerWarpsBarrier = 3;

struct NoHooks {
  __device__ __forceinline__ void producer_warps(uint32_t /*thread*/) {}
  __device__ __forceinline__ void before_a_loads(int /*batch*/, int /*cluster_row*/) {}
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
  __device__ __forceinline__ void after_tile(int /*batch*/, int /*row0*/, int /*col0*/) {}
};

}  // namespace tmashmem::gemm
