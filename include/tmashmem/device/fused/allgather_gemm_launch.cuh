// Host side of the all-gather GEMM (allgather_gemm.cuh): the problem, its checks, the plan
// (tensor maps, grid, communication CTAs) and the launch. Host code in a .cu file; the
// on-stream call tmashmem_allgather_matmul_on_stream (tmashmem/fused.h) is this, inside the
// library.
//
//   tmashmem::fused::AllgatherGemmProblem p{m_shard, n, k, a_shard, b, ldb, c, ldc,
//                                           a_gathered, workspace};
//   tmashmem::fused::AllgatherGemmPlan<Cfg> plan;
//   if (const char* why = tmashmem::fused::allgather_gemm_plan(ctx, p, &plan)) ...
//   tmashmem::fused::allgather_gemm_run(ctx, plan, stream);
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tmashmem/ctx.h"
#include "tmashmem/device/fused/allgather_gemm.cuh"
#include "tmashmem/device/fused/copier.cuh"
#include "tmashmem/device/fused/sm_share.cuh"
#include "tmashmem/device/gemm/launch.cuh"

namespace tmashmem::fused {

struct AllgatherGemmProblem {
  int m_shard, n, k;             // A shard [m_shard, K]; B [n, K]; C [n_pes * m_shard, n]
  const __nv_bfloat16* a_shard;  // symmetric, rows of K contiguous (lda = K)
  const __nv_bfloat16* b;        // local
  int64_t ldb;
  __nv_bfloat16* c;  // local
  int64_t ldc;
  __nv_bfloat16* a_gathered;  // local [n_pes * m_shard, K] contiguous: receives all_gather(A)
  uint64_t* workspace;        // symmetric, allgather_gemm_workspace_bytes, zeroed once
  bool copy_own = true;       // false: a_gathered receives only the peers' rows (the gathered
                              // A is not wanted; the GEMM reads this PE's rows from the shard)
  int comm_ctas = 0;          // 0: the GEMM CTAs' idle producer warps copy (no SM
                              // leaves the GEMM); > 0: that many CTAs copy instead;
                              // kAllgatherCommByShape: allgather_default_comm_ctas
  uint64_t timeout_ns = kFusedDefaultTimeoutNs;
  int group_rows = 8;
};

/// Chunks a workspace has room for: one per cluster-tile row, counted at 128-row chunks (the
/// smallest), so one size serves every configuration.
inline int64_t allgather_gemm_chunks(int64_t m_shard, int n_pes) {
  return (m_shard + 127) / 128 * n_pes;
}

/// Workspace bytes: per chunk a flag and a piece counter (the host half asks for this through
/// the device library's table, runtime/fused_kernels.h).
inline uint64_t allgather_gemm_workspace_bytes(int64_t m_shard, int n_pes) {
  return fused_workspace_bytes(2 * static_cast<uint64_t>(allgather_gemm_chunks(m_shard, n_pes)));
}

/// The largest piece the idle producer warps copy as one item: small enough that the whole
/// grid shares the chunk the GEMM needs next, large enough that the per-piece barrier and
/// count stay rare.
constexpr int64_t kAllgatherWarpPieceBytes = 32 * 1024;

template <class Cfg>
struct AllgatherGemmPlan {
  CUtensorMap a_map, own_map, b_map, c_map;
  AllgatherGemmArgs args;
  int grid = 0;
};

/// Checks the problem, encodes the maps and sizes the grid. Returns a message or nullptr.
template <class Cfg>
const char* allgather_gemm_plan(const tmashmem_ctx_t& ctx, const AllgatherGemmProblem& p,
                                AllgatherGemmPlan<Cfg>* plan) {
  if (ctx.n_pes < 1 || ctx.n_pes > kFusedMaxPes) return "allgather_matmul: 1 to 64 PEs";
  if (ctx.first_local_pe != 0 || ctx.n_local_pes != ctx.n_pes || !tmashmem::all_reachable(ctx))
    return "allgather_matmul: every PE must be load/store reachable (one node, peer access)";
  if (p.m_shard <= 0) return "allgather_matmul: m_shard must be positive";
  if (p.a_shard == nullptr || p.a_gathered == nullptr || p.workspace == nullptr)
    return "allgather_matmul: a_shard, a_gathered and workspace must be given";
  if ((reinterpret_cast<uintptr_t>(p.a_shard) | reinterpret_cast<uintptr_t>(p.a_gathered)) % 16)
    return "allgather_matmul: a_shard and a_gathered must be 16-byte aligned";
  gemm::GemmProblem g{p.m_shard, p.n, p.k, p.a_gathered, p.k, p.b, p.ldb, p.c, p.ldc};
  g.batches = ctx.n_pes;
  gemm::GemmPlan<Cfg> gp;
  if (const char* why = gemm::gemm_plan_tiles(g, &gp, p.group_rows, ctx.my_pe * p.m_shard))
    return why;
  plan->a_map = gp.a_map;
  plan->b_map = gp.b_map;
  if (!gemm::detail_launch::encode_2d(&plan->own_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                                      p.a_shard, p.m_shard, p.k, p.k, Cfg::kBlockK, Cfg::kBlockM,
                                      CU_TENSOR_MAP_SWIZZLE_128B, 1, int64_t(p.m_shard) * p.k))
    return "allgather_matmul: cuTensorMapEncodeTiled failed for the shard's map";
  plan->c_map = gp.c_map;
  int sms = 0;
  if (const char* why = gemm::gemm_kernel_setup<Cfg>(allgather_gemm_kernel<Cfg>, &sms)) return why;
  const int tiles = gp.args.cluster_rows * gp.args.tile_cols;
  const int usable = fused_sms_per_pe(ctx, sms, tiles);
  if (p.comm_ctas < 0 && p.comm_ctas != kAllgatherCommByShape)
    return "allgather_matmul: comm_ctas must be 0, positive or kAllgatherCommByShape";
  const int asked = p.comm_ctas == kAllgatherCommByShape
                        ? allgather_default_comm_ctas(ctx.n_pes, p.n, usable)
                        : p.comm_ctas;
  const int comm = (asked + Cfg::kClusterM - 1) / Cfg::kClusterM * Cfg::kClusterM;
  if (comm + Cfg::kClusterM > usable)
    return "allgather_matmul: comm_ctas leaves no SM for the GEMM (at most the PE's SMs minus one "
           "cluster)";
  const int clusters = std::min((usable - comm) / Cfg::kClusterM, tiles);
  AllgatherGemmArgs& a = plan->args;
  a.gemm = gp.args;
  a.a_shard = p.a_shard;
  a.a_gathered = p.a_gathered;
  a.copy_own = p.copy_own ? 1 : 0;
  a.ws = p.workspace;
  a.comm_ctas = comm;
  a.chunk_rows = Cfg::kBlockM * Cfg::kClusterM;
  // Dedicated CTAs copy whole chunks (their ring keeps several pieces in flight); the producer
  // warps share each chunk out in pieces.
  const int64_t chunk_bytes = int64_t(a.chunk_rows) * p.k * 2;
  const int64_t max_piece = comm > 0 ? int64_t(1) << 30 : kAllgatherWarpPieceBytes;
  a.pieces_per_chunk = static_cast<int>((chunk_bytes + max_piece - 1) / max_piece);
  const int64_t piece = (chunk_bytes + a.pieces_per_chunk - 1) / a.pieces_per_chunk;
  a.piece_bytes = static_cast<uint32_t>((piece + 15) / 16 * 16);
  a.piece_counters = words::kFlags + static_cast<int>(allgather_gemm_chunks(p.m_shard, ctx.n_pes));
  a.timeout_ns = p.timeout_ns;
  plan->grid = comm + clusters * Cfg::kClusterM;
  return nullptr;
}

template <class Cfg>
cudaError_t allgather_gemm_run(const tmashmem_ctx_t& ctx, const AllgatherGemmPlan<Cfg>& plan,
                               cudaStream_t stream) {
  cudaLaunchAttribute attr{};
  const cudaLaunchConfig_t cfg = gemm::gemm_launch_config<Cfg>(plan.grid, stream, &attr);
  return cudaLaunchKernelEx(&cfg, allgather_gemm_kernel<Cfg>, ctx, plan.a_map, plan.own_map,
                            plan.b_map, plan.c_map, plan.args);
}

}  // namespace tmashmem::fused
