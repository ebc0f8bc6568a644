// Host side of the GEMM: the problem description, its checks, the three tensor maps
// (encoded through the driver entry point cuTensorMapEncodeTiled, fetched at run time from
// the CUDA runtime), the grid, and the launch. Host code only; include from a .cu file.
//
//   tmashmem::gemm::GemmProblem p{m, n, k, a, lda, b, ldb, c, ldc};
//   tmashmem::gemm::GemmPlan<Cfg> plan;
//   if (const char* why = tmashmem::gemm::gemm_plan(p, &plan)) ...  // a message, or nullptr
//   tmashmem::gemm::gemm_run(plan, stream);                            // cudaError_t
//
// Layout: A [M, K] and B bf16, C [M, N] of Cfg::Out, all row-major with leading dimensions
// (elements between rows) lda, ldb, ldc; B is [N, K] (ldb >= K) where Cfg::kBMajor is
// BMajor::k and [K, N] (ldb >= N) where it is BMajor::n. TMA requires 16-byte aligned base
// addresses and row pitches: K, lda, ldb multiples of 8; N * sizeof(Out) and
// ldc * sizeof(Out) multiples of 16. Columns from N to ldc are never written; M is free.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tmashmem/device/gemm/config.cuh"
#include "tmashmem/device/gemm/kernel.cuh"

namespace tmashmem::gemm {

/// `m` rows of A and C per block, `batches` blocks (GemmArgs); block i of A starts at
/// a + i * batch_stride_a elements (0: m * lda, blocks back to back), of C at
/// c + i * batch_stride_c (0: m * ldc).
struct GemmProblem {
  int m, n, k;
  const __nv_bfloat16* a;
  int64_t lda;
  const __nv_bfloat16* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
  int batches = 1;
  int64_t batch_stride_a = 0;
  int64_t batch_stride_c = 0;
};

template <class Cfg>
struct GemmPlan {
  CUtensorMap a_map, b_map, c_map;
  GemmArgs args;
  int grid = 0;
};

namespace detail_launch {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeTiled encode_tiled() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

// A 2-D row-major matrix [rows, cols] with `ld` elements between rows, boxes of
// {box_cols, box_rows}, zero fill outside. With batches > 0: a rank-3 map {cols, rows,
// batches} whose blocks lie batch_stride elements apart, boxes {box_cols, box_rows, 1}.
inline bool encode_2d(CUtensorMap* map, CUtensorMapDataType type, size_t elem_bytes,
                      const void* data, int64_t rows, int64_t cols, int64_t ld, int box_cols,
                      int box_rows, CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B,
                      int batches = 0, int64_t batch_stride = 0) {
  const EncodeTiled fn = encode_tiled();
  if (fn == nullptr) return false;
  const cuuint32_t rank = batches > 0 ? 3 : 2;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batches > 0 ? batches : 1)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * elem_bytes,
                                 static_cast<cuuint64_t>(batch_stride) * elem_bytes};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows),
                             1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return fn(map, type, rank, const_cast<void*>(data), dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The output map of C (or of any buffer laid out like one block-cut C): box {chunk cols,
// 64, 1} in the epilogue's swizzle.
template <class Cfg>
bool encode_output(CUtensorMap* map, void* data, int64_t rows, int64_t cols, int64_t ld,
                   int batches, int64_t batch_stride) {
  using Out = typename Cfg::Out;
  const CUtensorMapDataType out_type =
      sizeof(Out) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode_2d(
      map, out_type, sizeof(Out), data, rows, cols, ld, Cfg::kOutChunkCols, 64,
      Cfg::kOutSwizzleBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
      batches, batch_stride);
}

}  // namespace detail_launch

/// The launch of an engine kernel (gemm_kernel, or a fused kernel built on gemm_cta): `grid`
/// CTAs of kThreads in clusters of kClusterM with the engine's dynamic shared memory, on
/// `stream`. `attr` receives the cluster attribute and must live until the launch.
template <class Cfg>
cudaLaunchConfig_t gemm_launch_config(int grid, cudaStream_t stream, cudaLaunchAttribute* attr) {
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = Cfg::kClusterM;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(Cfg::kThreads);
  cfg.dynamicSmemBytes = gemm_smem_bytes<Cfg>();
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

/// Lets `kernel` (an engine kernel) have the engine's dynamic shared memory, and reads the
/// current device's SM count into *sms. Returns a message or nullptr.
template <class Cfg, class Kernel>
const char* gemm_kernel_setup(Kernel kernel, int* sms) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(gemm_smem_bytes<Cfg>())) != cudaSuccess)
    return "GEMM kernel set-up: cudaFuncSetAttribute(MaxDynamicSharedMemorySize) failed";
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return "GEMM kernel set-up: cannot read the multiprocessor count";
  return nullptr;
}

/// Why `p` cannot run (a sentence naming the value and the rule), or nullptr.
template <class Cfg>
const char* gemm_check(const GemmProblem& p) {
  using Out = typename Cfg::Out;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "gemm: M, N and K must be positive";
  if (p.k % 8 != 0) return "gemm: K must be a multiple of 8 (16-byte rows of A and B)";
  constexpr bool kBKN = Cfg::kBMnMajor;
  if (p.lda < p.k || p.ldc < p.n) return "gemm: lda is below K or ldc below N";
  if (p.ldb < (kBKN ? p.n : p.k))
    return kBKN ? "gemm: ldb is below N (B is [K, N] in this configuration, BMajor::n)"
                : "gemm: ldb is below K (B is [N, K] in this configuration, BMajor::k)";
  if (p.lda % 8 != 0 || p.ldb % 8 != 0) return "gemm: lda and ldb must be multiples of 8";
  if ((p.ldc * static_cast<int64_t>(sizeof(Out))) % 16 != 0)
    return "gemm: ldc * sizeof(Out) must be a multiple of 16";
  if ((p.n * static_cast<int64_t>(sizeof(Out))) % 16 != 0)
    return "gemm: N * sizeof(Out) must be a multiple of 16 (a TMA store clipped at N still "
           "writes up to the next 16-byte boundary of the row)";
  if ((reinterpret_cast<uintptr_t>(p.a) | reinterpret_cast<uintptr_t>(p.b) |
       reinterpret_cast<uintptr_t>(p.c)) %
          16 !=
      0)
    return "gemm: A, B and C must be 16-byte aligned";
  if (p.batches < 1) return "gemm: batches must be at least 1";
  if (p.batch_stride_a % 8 != 0 || (p.batch_stride_c * static_cast<int64_t>(sizeof(Out))) % 16 != 0)
    return "gemm: block strides must keep blocks 16-byte aligned";
  return nullptr;
}

/// Encodes the maps and fills the kernel arguments (gemm_plan also sizes the grid of
/// gemm_kernel; a fused kernel sizes its own). `group_rows`: cluster rows walked
/// together (rasterisation); `max_ctas` > 0 caps the grid; the tile order starts at the
/// cluster row holding row `first_row` of C (counted over all blocks: block i's rows are
/// i * m .. i * m + m - 1), wrapping around. Returns a message or nullptr.
template <class Cfg>
const char* gemm_plan_tiles(const GemmProblem& p, GemmPlan<Cfg>* plan, int group_rows = 8,
                            int first_row = 0) {
  if (const char* why = gemm_check<Cfg>(p)) return why;
  // B's map: [N, K] in boxes of {64 k, the CTA's share of n}, or [K, N] in boxes of {64 n, 64 k}.
  constexpr bool kBKN = Cfg::kBMnMajor;
  static_assert(Cfg::kBlockK == 64, "one box of B is 64 elements (128 bytes) wide");
  const int64_t stride_a = p.batch_stride_a != 0 ? p.batch_stride_a : int64_t(p.m) * p.lda;
  const int64_t stride_c = p.batch_stride_c != 0 ? p.batch_stride_c : int64_t(p.m) * p.ldc;
  if (!detail_launch::encode_2d(&plan->a_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, p.a, p.m, p.k,
                                p.lda, Cfg::kBlockK, Cfg::kBlockM, CU_TENSOR_MAP_SWIZZLE_128B,
                                p.batches, stride_a) ||
      !detail_launch::encode_2d(&plan->b_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, p.b,
                                kBKN ? p.k : p.n, kBKN ? p.n : p.k, p.ldb, 64,
                                kBKN ? Cfg::kBlockK : Cfg::kBSliceRows) ||
      !detail_launch::encode_output<Cfg>(&plan->c_map, p.c, p.m, p.n, p.ldc, p.batches, stride_c))
    return "gemm: cuTensorMapEncodeTiled failed (driver entry point missing or a map rule)";
  GemmArgs& a = plan->args;
  a.m = p.m;
  a.n = p.n;
  a.k = p.k;
  a.batches = p.batches;
  a.batch_cluster_rows =
      (p.m + Cfg::kBlockM * Cfg::kClusterM - 1) / (Cfg::kBlockM * Cfg::kClusterM);
  a.cluster_rows = a.batch_cluster_rows * p.batches;
  a.tile_cols = (p.n + Cfg::kBlockN - 1) / Cfg::kBlockN;
  a.k_blocks = (p.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
  a.group_rows = std::max(1, group_rows);
  if (first_row < 0 || first_row >= int64_t(p.m) * p.batches)
    return "gemm: first_row must lie in [0, M * batches)";
  a.row_rotation = (first_row / p.m) * a.batch_cluster_rows +
                   (first_row % p.m) / (Cfg::kBlockM * Cfg::kClusterM);
  a.linear_rotation = 0;
  return nullptr;
}

/// gemm_plan_tiles, then the grid of gemm_kernel: one CTA per SM (clusters: as many as the
/// device co-schedules), at most one per cluster tile, at most `max_ctas` when > 0.
template <class Cfg>
const char* gemm_plan(const GemmProblem& p, GemmPlan<Cfg>* plan, int group_rows = 8,
                      int max_ctas = 0, int first_row = 0) {
  if (const char* why = gemm_plan_tiles(p, plan, group_rows, first_row)) return why;
  const GemmArgs& a = plan->args;
  const auto kernel = gemm_kernel<Cfg>;
  int sms = 0;
  if (const char* why = gemm_kernel_setup<Cfg>(kernel, &sms)) return why;
  int clusters = sms / Cfg::kClusterM;
  if constexpr (Cfg::kClusterM > 1) {
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t cfg =
        gemm_launch_config<Cfg>(sms / Cfg::kClusterM * Cfg::kClusterM, nullptr, &attr);
    int active = 0;
    if (cudaOccupancyMaxActiveClusters(&active, kernel, &cfg) != cudaSuccess || active <= 0)
      return "gemm: cudaOccupancyMaxActiveClusters found no room for one cluster";
    clusters = active;
  }
  const int tiles = a.cluster_rows * a.tile_cols;
  clusters = std::min(clusters, tiles);
  if (max_ctas > 0) clusters = std::max(1, std::min(clusters, max_ctas / Cfg::kClusterM));
  plan->grid = clusters * Cfg::kClusterM;
  return nullptr;
}

/// The share of the persistent grid's tile slots that hold work: tiles / (rounds * clusters),
/// rounds = ceil(tiles / clusters). The last round leaves the rest of the grid idle, so for
/// a shape the tile width with the highest share usually runs fastest (on 2048 x 3584 with
/// 132 CTAs: 256 tiles of 128 x 224 fill their 2 rounds to 0.97, 224 of 128 x 256 to 0.85).
template <class Cfg>
double gemm_wave_efficiency(const GemmPlan<Cfg>& plan) {
  const int tiles = plan.args.cluster_rows * plan.args.tile_cols;
  const int clusters = plan.grid / Cfg::kClusterM;
  if (tiles <= 0 || clusters <= 0) return 0.0;
  const int rounds = (tiles + clusters - 1) / clusters;
  return static_cast<double>(tiles) / (static_cast<double>(rounds) * clusters);
}

/// Launches the planned GEMM on `stream`.
template <class Cfg>
cudaError_t gemm_run(const GemmPlan<Cfg>& plan, cudaStream_t stream) {
  cudaLaunchAttribute attr{};
  const cudaLaunchConfig_t cfg = gemm_launch_config<Cfg>(plan.grid, stream, &attr);
  return cudaLaunchKernelEx(&cfg, gemm_kernel<Cfg>, plan.a_map, plan.b_map, plan.c_map, plan.args);
}

}  // namespace tmashmem::gemm
