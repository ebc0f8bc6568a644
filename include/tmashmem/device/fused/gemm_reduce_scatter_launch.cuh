// Host side of the GEMM + reduce-scatter (gemm_reduce_scatter.cuh): the problem, the
// workspace layout, the plan (tensor maps of every owner's shard or staging, grid) and the
// launch. Host code in a .cu file; tmashmem_matmul_reduce_scatter_on_stream
// (tmashmem/fused.h) is this, inside the library.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tmashmem/ctx.h"
#include "tmashmem/device/fused/allgather_gemm_launch.cuh"
#include "tmashmem/device/fused/gemm_reduce_scatter.cuh"
#include "tmashmem/device/fused/sm_share.cuh"
#include "tmashmem/device/gemm/launch.cuh"

namespace tmashmem::fused {

/// The configurations of the two modes: 128 x 256 tiles, 4 stages, no cluster; bf16
/// reduce-add (fast) or fp32 store (deterministic: the partials; the last of each tile's order
/// leaves as bf16, LastTileCfg) epilogue.
using ReduceScatterFastCfg =
    gemm::GemmConfig<256, 4, 1, __nv_bfloat16, gemm::EpilogueOp::reduce_add>;
using ReduceScatterDeterministicCfg = gemm::GemmConfig<256, 4, 1, float>;

struct ReduceScatterProblem {
  int m, n, k;             // A [m, k] and B [n, k] on every PE; m = n_pes * m_shard
  const __nv_bfloat16* a;  // local
  int64_t lda;
  const __nv_bfloat16* b;  // local
  int64_t ldb;
  __nv_bfloat16* c_shard;  // symmetric [m / n_pes, n] (ldc, the same on every PE)
  int64_t ldc;
  uint64_t* workspace;  // symmetric, reduce_scatter_workspace_bytes, zeroed once
  ReduceScatterMode mode = ReduceScatterMode::fast;
  uint64_t timeout_ns = kFusedDefaultTimeoutNs;
  int group_rows = 8;
};

/// 64-row half-tiles of one owner's shard (the deterministic mode has a flag per owner and
/// half-tile, and a 64 x 256 fp32 block of staging per half-tile of its own shard).
inline int reduce_scatter_halves(int m_shard, int n) {
  return (m_shard + 63) / 64 * ((n + 255) / 256);
}

/// Byte offset of the staging area in the workspace (deterministic mode).
inline uint64_t reduce_scatter_staging_offset(int m_shard, int n, int n_pes) {
  const uint64_t flags = static_cast<uint64_t>(reduce_scatter_halves(m_shard, n)) * n_pes;
  return (fused_workspace_bytes(flags) + 1023) / 1024 * 1024;
}

/// Workspace bytes: the flags, and for the deterministic mode the staging after them (one
/// whole 64 x 256 fp32 block per half-tile: reduce_scatter_staging.cuh).
inline uint64_t reduce_scatter_workspace_bytes(int m_shard, int n, int n_pes,
                                               ReduceScatterMode mode) {
  if (mode == ReduceScatterMode::fast) return fused_workspace_bytes(0);
  return reduce_scatter_staging_offset(m_shard, n, n_pes) +
         static_cast<uint64_t>(reduce_scatter_halves(m_shard, n)) *
             kStagingHalfFloats<ReduceScatterDeterministicCfg> * sizeof(float);
}

template <class Cfg, ReduceScatterMode Mode>
struct ReduceScatterPlan {
  CUtensorMap a_map, b_map;
  OwnerMaps maps;
  ReduceScatterArgs args;
  int grid = 0;
};

template <class Cfg, ReduceScatterMode Mode>
const char* reduce_scatter_plan(const tmashmem_ctx_t& ctx, const ReduceScatterProblem& p,
                                ReduceScatterPlan<Cfg, Mode>* plan) {
  static_assert(Cfg::kBlockN == 256,
                "reduce_scatter_halves and the workspace size assume 256-column tiles");
  const int n_pes = ctx.n_pes;
  if (n_pes < 1 || n_pes > kReduceScatterMaxPes)
    return "matmul_reduce_scatter: 1 to 8 PEs (one owner map each in the kernel parameters)";
  if (ctx.first_local_pe != 0 || ctx.n_local_pes != n_pes || !tmashmem::all_reachable(ctx))
    return "matmul_reduce_scatter: every PE must be load/store reachable (one node, peer access)";
  if (p.m <= 0 || p.m % n_pes != 0)
    return "matmul_reduce_scatter: m must be a positive multiple of n_pes (m_shard rows each)";
  if (p.c_shard == nullptr || p.workspace == nullptr)
    return "matmul_reduce_scatter: c_shard and workspace must be given";
  if (p.ldc < p.n || p.ldc % 8 != 0 || reinterpret_cast<uintptr_t>(p.c_shard) % 16 != 0)
    return "matmul_reduce_scatter: ldc must be >= n, a multiple of 8, c_shard 16-byte aligned";
  const int ms = p.m / n_pes;
  float* staging = reinterpret_cast<float*>(reinterpret_cast<char*>(p.workspace) +
                                            reduce_scatter_staging_offset(ms, p.n, n_pes));
  // The GEMM over A cut into one block of m_shard rows per owner; C's map is replaced per
  // owner below (the plan's own C map is unused).
  gemm::GemmProblem g{
      ms,
      p.n,
      p.k,
      p.a,
      p.lda,
      p.b,
      p.ldb,
      Mode == ReduceScatterMode::fast ? static_cast<void*>(p.c_shard) : static_cast<void*>(staging),
      Mode == ReduceScatterMode::fast ? p.ldc : int64_t(p.n)};
  g.batches = n_pes;
  g.batch_stride_a = int64_t(ms) * p.lda;
  gemm::GemmPlan<Cfg> gp;
  // fast: others' tiles first, this PE's own shard last: the order starts at the next PE's rows.
  // deterministic: one order for every PE, each walking it from another segment
  // (reduce_scatter_order.cuh); the order of the additions follows from it.
  const bool det = Mode == ReduceScatterMode::deterministic;
  if (const char* why =
          gemm::gemm_plan_tiles(g, &gp, p.group_rows, det ? 0 : ((ctx.my_pe + 1) % n_pes) * ms))
    return why;
  if (det)
    gp.args.linear_rotation =
        rs_rotation(ctx.my_pe, gp.args.cluster_rows * gp.args.tile_cols, n_pes);
  plan->a_map = gp.a_map;
  plan->b_map = gp.b_map;
  for (int q = 0; q < kReduceScatterMaxPes; ++q) {
    plan->maps.map[q] = CUtensorMap{};
    if (!det && q < n_pes &&
        !gemm::detail_launch::encode_output<Cfg>(&plan->maps.map[q],
                                                 tmashmem::ptr(ctx, p.c_shard, q), ms, p.n, p.ldc,
                                                 1, int64_t(ms) * p.ldc))
      return "matmul_reduce_scatter: cuTensorMapEncodeTiled failed for an owner's map";
  }
  for (int q = 0; q < kReduceScatterMaxPes; ++q) {
    plan->maps.shard[q] = CUtensorMap{};
    if (det && q < n_pes &&
        !gemm::detail_launch::encode_output<LastTileCfg<Cfg>>(&plan->maps.shard[q],
                                                              tmashmem::ptr(ctx, p.c_shard, q), ms,
                                                              p.n, p.ldc, 1, int64_t(ms) * p.ldc))
      return "matmul_reduce_scatter: cuTensorMapEncodeTiled failed for an owner's shard map";
  }
  int sms = 0;
  if (const char* why = gemm::gemm_kernel_setup<Cfg>(gemm_reduce_scatter_kernel<Cfg, Mode>, &sms))
    return why;
  const int tiles = gp.args.cluster_rows * gp.args.tile_cols;
  ReduceScatterArgs& a = plan->args;
  a.gemm = gp.args;
  a.c_shard = p.c_shard;
  a.ldc = p.ldc;
  a.staging = staging;
  a.ws = p.workspace;
  a.halves_per_owner = reduce_scatter_halves(ms, p.n);
  a.timeout_ns = p.timeout_ns;
  plan->grid = std::min(fused_sms_per_pe(ctx, sms, tiles), tiles);
  return nullptr;
}

/// The kernel reduce_scatter_run launches: the library's, or a user's own whose every thread
/// calls gemm_reduce_scatter_cta<Cfg, Mode> once (its shared-memory attribute set by
/// gemm::gemm_kernel_setup<Cfg>).
using ReduceScatterKernel = void (*)(tmashmem_ctx_t, CUtensorMap, CUtensorMap, OwnerMaps,
                                     ReduceScatterArgs);

template <class Cfg, ReduceScatterMode Mode>
cudaError_t reduce_scatter_run(const tmashmem_ctx_t& ctx, const ReduceScatterPlan<Cfg, Mode>& plan,
                               cudaStream_t stream,
                               ReduceScatterKernel kernel = gemm_reduce_scatter_kernel<Cfg, Mode>) {
  cudaLaunchAttribute attr{};
  const cudaLaunchConfig_t cfg = gemm::gemm_launch_config<Cfg>(plan.grid, stream, &attr);
  return cudaLaunchKernelEx(&cfg, kernel, ctx, plan.a_map, plan.b_map, plan.maps, plan.args);
}

}  // namespace tmashmem::fused
