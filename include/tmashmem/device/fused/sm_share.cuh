// How many SMs one PE's fused kernel may fill at once: a pure function of the job, the GPU and
// the GEMM's tile count. Plain C++ without CUDA, so that CPU tests include it; both fused
// kernels' plans (allgather_gemm_launch.cuh, gemm_reduce_scatter_launch.cuh) size their grids
// with it.
#pragma once

#include "tmashmem/ctx.h"

namespace tmashmem::fused {

/// SMs one PE's fused kernel may fill at once, for a GEMM of `tiles` tiles on a GPU of `sms`
/// SMs: all of them, or, when the whole job runs on this GPU (TMASHMEM_CTX_FLAG_ONE_GPU), an
/// equal share less one, or the whole share where that walks the tiles in fewer waves
/// (4608 x 2816: 396 tiles, 12 waves of 33 CTAs against 13 of 32). PEs sharing a GPU run their
/// kernels side by side under MPS, and each kernel's CTAs wait for each other's copies and for
/// the peers' kernels, so the grid must be resident at once: never more than the share.
/// Measured at 4 PEs on one H100 (docs/fused.md, "The reduce-scatter claims its tiles too"):
/// since both fused kernels claim their tiles (gemm/tile_queue.cuh) the whole share no longer
/// halves their rate, as it did on the static stride ("One SM of each share left free"); it
/// gained 0.05-0.11 where it saves a wave and was level, or up to 0.04 lower, elsewhere.
constexpr int fused_sms_per_pe(const tmashmem_ctx_t& ctx, int sms, int tiles) {
  if ((ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) == 0 || ctx.n_pes <= 1) return sms;
  const int share = sms / ctx.n_pes;
  if (share <= 2) return share > 1 ? share : 1;
  const int waves_share = (tiles + share - 1) / share;
  const int waves_less = (tiles + share - 2) / (share - 1);
  return waves_share < waves_less ? share : share - 1;
}

}  // namespace tmashmem::fused
