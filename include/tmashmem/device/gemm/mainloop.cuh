// The consumer mainloop: one warpgroup accumulates its 64 x kBlockN slab of a tile over all
// k-blocks. Per stage it issues four m64nNk16 MMAs (k = 0, 16, 32, 48: inside the 128-byte
// swizzle row of A and of a K-major B; 16 rows apart in an MN-major B), keeps one stage's MMAs
// in flight, and releases the stage before last.
#pragma once

#include "tmashmem/device/detail/wgmma.cuh"
#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/hooks.cuh"
#include "tmashmem/device/gemm/pipeline.cuh"

namespace tmashmem::gemm {

template <class Cfg>
using Accumulators = float[Cfg::kBlockN / 2];

/// All 128 threads of consumer warpgroup `wg` (0 or 1: rows wg * 64 .. + 63 of the tile).
/// k_blocks >= 1. The first MMA overwrites `acc`, or with `accumulate` adds to it (a fused
/// kernel's initial_accumulators hook, before the first wgmma fence: an ordinary write of the
/// accumulators between the fence and the MMAs would make ptxas serialise them).
/// `hooks.mid_mainloop(wg)` runs on thread 0 once kMidMainloopBlock<Cfg> k-blocks are in flight,
/// if the tile has more. On return every MMA has retired.
template <class Cfg, class Hooks>
__device__ __forceinline__ void mainloop(GemmSharedStorage<Cfg>& s, PipelineState<Cfg::kStages>& st,
                                         Accumulators<Cfg>& acc, int k_blocks, int wg,
                                         uint32_t thread_in_wg, Hooks& hooks,
                                         bool accumulate = false) {
  constexpr int kAcc = Cfg::kBlockN / 2;
  // A k16 step: 32 bytes along a K-major row, or 16 rows of 128 bytes of an MN-major B.
  constexpr bool kBMnMajor = Cfg::kBMnMajor;
  constexpr uint32_t kBStepBytes = kBMnMajor ? 16 * 128 : 32;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) detail::wgmma_fence_operand(acc[i]);
  uint32_t previous = 0;
  for (int kb = 0; kb < k_blocks; ++kb) {
    stage_wait(s.full[st.stage], st.phase);
    const uint64_t desc_a = detail::wgmma_desc_k_major_sw128(s.a[st.stage] + wg * 64 * 128);
    const uint64_t desc_b =
        kBMnMajor ? detail::wgmma_desc_mn_major_sw128(s.b[st.stage], Cfg::kBNBlockBytes)
                  : detail::wgmma_desc_k_major_sw128(s.b[st.stage]);
    detail::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockK / 16; ++kk)
      detail::wgmma_m64k16_bf16<Cfg::kBlockN, kBMnMajor>(
          acc, detail::wgmma_desc_advance(desc_a, kk * 32),
          detail::wgmma_desc_advance(desc_b, kk * kBStepBytes),
          (kb | kk) != 0 || accumulate ? 1u : 0u);
    detail::wgmma_commit();
    detail::wgmma_wait<1>();
    if (kb > 0) pipeline_release<Cfg>(s, previous, thread_in_wg);
    if (kb == kMidMainloopBlock<Cfg> && thread_in_wg == 0) hooks.mid_mainloop(wg);
    previous = st.stage;
    st.advance();
  }
  detail::wgmma_wait<0>();
  pipeline_release<Cfg>(s, previous, thread_in_wg);
#pragma unroll
  for (int i = 0; i < kAcc; ++i) detail::wgmma_fence_operand(acc[i]);
}

}  // namespace tmashmem::gemm
