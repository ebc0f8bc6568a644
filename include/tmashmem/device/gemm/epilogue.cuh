// The epilogue: a consumer warpgroup converts its 64 x kBlockN fp32 slab to `Out` and
// stores it (or adds it into C: EpilogueOp::reduce_add) by TMA, one 64-row x 128-byte chunk at a
// time through two alternating 128-byte-swizzled shared-memory buffers (TMA clips the chunks at M
// and N).
//
// Accumulator layout of wgmma m64nNk16 (fp32): thread (warp w, lane l) of the warpgroup
// holds, for every 8-column group j, columns 8j + 2(l % 4) + {0, 1} of rows 16w + l / 4
// (acc[4j], acc[4j + 1]) and 16w + l / 4 + 8 (acc[4j + 2], acc[4j + 3]). The chunk layout is
// the TMA swizzle of its row width S (128 or 64 bytes): byte a of the unswizzled chunk lives
// at a ^ (((a >> 7) & (S / 16 - 1)) << 4), so with S = 128 (16-byte unit u of row r at
// u ^ (r % 8)) the eight rows a warp writes at once fall on distinct banks.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/tensor.cuh"
#include "tmashmem/device/detail/warpgroup.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/mainloop.cuh"
#include "tmashmem/device/tile.cuh"

namespace tmashmem::gemm {

namespace detail_epilogue {

// Byte offset of (row, byte within the row) in a chunk of RowBytes-wide rows swizzled with
// the TMA pattern of that span.
template <uint32_t RowBytes>
__device__ __forceinline__ uint32_t swizzled_offset(uint32_t row, uint32_t byte) {
  static_assert(RowBytes == 128 || RowBytes == 64, "swizzle span: 128 or 64 bytes");
  const uint32_t a = row * RowBytes + byte;
  return a ^ (((a >> 7) & (RowBytes / 16 - 1)) << 4);
}

template <class Out>
__device__ __forceinline__ void store_pair(uint8_t* chunk, uint32_t offset, float x, float y) {
  if constexpr (std::is_same_v<Out, float>) {
    *reinterpret_cast<float2*>(chunk + offset) = make_float2(x, y);
  } else {
    static_assert(std::is_same_v<Out, __nv_bfloat16>, "Out: float or __nv_bfloat16");
    *reinterpret_cast<__nv_bfloat162*>(chunk + offset) = __floats2bfloat162_rn(x, y);
  }
}

}  // namespace detail_epilogue

/// All 128 threads of consumer warpgroup `wg`, after mainloop(). `row0`, `col0`: the slab's
/// first element in block `batch` of C. `c_map`: box {kOutChunkCols, 64, 1} over C
/// [batches][m][N], swizzled with span kOutSwizzleBytes (read by the issuing thread only). `Op`:
/// store or add (Cfg's, unless a fused kernel does both). `OutCfg`: the output type and chunk
/// shape (Cfg's, unless a fused kernel writes another type through the same buffers). Uses named
/// barrier 1 + wg. Thread 0 of the warpgroup issues the stores and owns their bulk async-groups:
/// it waits for them at the next call and before the kernel ends. `slot`: the warpgroup's next
/// chunk buffer (starts at 0; kept across tiles so that the buffers alternate also when a tile has
/// an odd number of chunks).
template <class Cfg, EpilogueOp Op = Cfg::kEpilogueOp, class OutCfg = Cfg>
__device__ __forceinline__ void epilogue_store(GemmSharedStorage<Cfg>& s,
                                               const Accumulators<Cfg>& acc,
                                               const CUtensorMap* c_map, int batch, int row0,
                                               int col0, int wg, uint32_t thread_in_wg,
                                               uint32_t& slot) {
  using Out = typename OutCfg::Out;
  static_assert(OutCfg::kBlockN == Cfg::kBlockN && OutCfg::kOutBuffers == Cfg::kOutBuffers &&
                    OutCfg::kOutChunkBytes == Cfg::kOutChunkBytes,
                "OutCfg: the same tile width and chunk buffers as Cfg");
  constexpr int kGroupsPerChunk = OutCfg::kOutChunkCols / 8;  // 8-column accumulator groups
  const uint32_t warp = thread_in_wg / 32, lane = thread_in_wg % 32;
  const uint32_t r0 = warp * 16 + lane / 4;
  const uint32_t barrier_id = 1 + static_cast<uint32_t>(wg);
#pragma unroll
  for (int c = 0; c < OutCfg::kOutChunks; ++c) {
    uint8_t* chunk = s.out[wg][slot];
    slot = slot + 1 == OutCfg::kOutBuffers ? 0 : slot + 1;
    // The store issued from this buffer two chunks ago has finished reading it.
    if (thread_in_wg == 0) bulk_wait_group_read<OutCfg::kOutBuffers - 1>();
    detail::named_barrier_sync(barrier_id, 128);
#pragma unroll
    for (int g = 0; g < kGroupsPerChunk; ++g) {
      const int j = c * kGroupsPerChunk + g;
      const uint32_t byte = static_cast<uint32_t>((g * 8 + 2 * (lane % 4)) * sizeof(Out));
      detail_epilogue::store_pair<Out>(
          chunk, detail_epilogue::swizzled_offset<OutCfg::kOutSwizzleBytes>(r0, byte), acc[4 * j],
          acc[4 * j + 1]);
      detail_epilogue::store_pair<Out>(
          chunk, detail_epilogue::swizzled_offset<OutCfg::kOutSwizzleBytes>(r0 + 8, byte),
          acc[4 * j + 2], acc[4 * j + 3]);
    }
    fence_proxy_async_shared();
    detail::named_barrier_sync(barrier_id, 128);
    if (thread_in_wg == 0) {
      const int32_t coord[3] = {col0 + c * OutCfg::kOutChunkCols, row0, batch};
      const uint64_t map = reinterpret_cast<uint64_t>(c_map);
      if constexpr (Op == EpilogueOp::reduce_add)
        detail::tensor_reduce<detail::TensorReduceOp::add, 3>(map, detail::smem_address(chunk),
                                                              coord);
      else
        detail::tensor_store<3>(map, detail::smem_address(chunk), coord);
      bulk_commit_group();
    }
  }
}

}  // namespace tmashmem::gemm
