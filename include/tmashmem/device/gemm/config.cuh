// GEMM tile configuration: the compile-time shape of one CTA's work and of its shared
// memory. C[M, N] = A[M, K] * B^T with bf16 A [M, K] and B given as [N, K] (BMajor::k) or
// [K, N] (BMajor::n), all row-major storage, fp32 accumulation and `Out` (bf16 or float)
// results.
//
// One CTA = one producer warpgroup (TMA loads) + two consumer warpgroups (wgmma), which
// split the 128-row tile into two 64-row halves and share the B tile. A cluster of
// `ClusterM` CTAs works on ClusterM vertically adjacent tiles of one tile column; each CTA
// loads 1/ClusterM of the common B tile and multicasts it to the others.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "tmashmem/device/gemm/tile_queue.cuh"
#include "tmashmem/device/mbarrier.cuh"

namespace tmashmem::gemm {

/// What the epilogue does with a finished tile: write C, or add it into C element-wise
/// (TMA reduce-add: C += A * B^T; concurrent adds from several GEMMs, e.g. of several PEs
/// into one PE's C, all apply).
enum class EpilogueOp { store, reduce_add };

/// How B is stored: BMajor::k, B [N, K] row-major (K contiguous: the weight layout of a
/// linear layer, C = A * B^T); BMajor::n, B [K, N] row-major (N contiguous: C = A * B).
enum class BMajor { k, n };

template <int BlockN, int Stages, int ClusterM, class OutT, EpilogueOp Op = EpilogueOp::store,
          BMajor BLayout = BMajor::k>
struct GemmConfig {
  static_assert(BlockN == 128 || BlockN == 192 || BlockN == 224 || BlockN == 256,
                "BlockN: 128, 192, 224 or 256 (one wgmma n-extent)");
  static_assert(Stages >= 2 && Stages <= 8, "Stages: 2..8");
  static_assert(ClusterM == 1 || ClusterM == 2, "ClusterM: 1 or 2");
  static_assert(BLayout == BMajor::k || (BlockN / ClusterM) % 64 == 0,
                "B given as [K, N] is loaded in boxes of 64 n: each CTA's share of the tile "
                "width (BlockN / ClusterM) must be a multiple of 64");

  using Out = OutT;
  static constexpr EpilogueOp kEpilogueOp = Op;
  static constexpr BMajor kBMajor = BLayout;
  static constexpr bool kBMnMajor = BLayout == BMajor::n;  // B [K, N]: wgmma's MN-major operand
  static constexpr int kBlockM = 128;  // two consumer warpgroups x 64 rows (wgmma m64)
  static constexpr int kBlockN = BlockN;
  static constexpr int kBlockK = 64;  // one 128-byte swizzle row of bf16
  static constexpr int kStages = Stages;
  static constexpr int kClusterM = ClusterM;
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  // Register budgets after setmaxnreg: 128 * (kProducerRegs + 2 * kConsumerRegs) <= 64 Ki.
  static constexpr uint32_t kProducerRegs = 40;
  static constexpr uint32_t kConsumerRegs = 232;
  static_assert(128 * (kProducerRegs + kConsumers * kConsumerRegs) <= 65536,
                "the register budgets exceed the SM's 64 Ki registers");

  static constexpr uint32_t kABytes = kBlockM * kBlockK * 2;
  static constexpr uint32_t kBBytes = kBlockN * kBlockK * 2;
  static constexpr uint32_t kStageBytes = kABytes + kBBytes;  // expect_tx per stage
  static constexpr int kBSliceRows = kBlockN / kClusterM;     // n of the B tile each CTA loads
  static constexpr uint32_t kBSliceBytes = kBSliceRows * kBlockK * 2;
  // B as [K, N]: a stage's B is kBlockN / 64 MN-major boxes of 64 k rows x 64 n (128 bytes),
  // one after another in n; each CTA loads kBSliceBoxes of them. As [N, K]: one box a CTA.
  static constexpr uint32_t kBNBlockBytes = 64 * kBlockK * 2;
  static constexpr int kBSliceBoxes = kBMnMajor ? kBSliceRows / 64 : 1;

  // Epilogue: each consumer writes its 64 x kBlockN results as chunks of 64 rows x
  // kOutSwizzleBytes (one swizzled TMA box: 128-byte rows where the tile's row of results
  // divides into them, else 64-byte rows), through two alternating buffers.
  static constexpr int kOutRowBytes = kBlockN * static_cast<int>(sizeof(Out));
  static constexpr int kOutSwizzleBytes = kOutRowBytes % 128 == 0 ? 128 : 64;
  static_assert(kOutRowBytes % kOutSwizzleBytes == 0, "a tile row must be whole chunks");
  static constexpr int kOutChunkCols = kOutSwizzleBytes / static_cast<int>(sizeof(Out));
  static constexpr int kOutChunks = kOutRowBytes / kOutSwizzleBytes;
  static constexpr uint32_t kOutChunkBytes = 64 * kOutSwizzleBytes;
  static constexpr int kOutBuffers = 2;
};

/// Shared memory of one CTA. Every operand and output buffer is a whole number of 1024-byte
/// swizzle atoms at a 1024-byte aligned address (the kernel aligns the base).
template <class Cfg>
struct GemmSharedStorage {
  alignas(1024) uint8_t a[Cfg::kStages][Cfg::kABytes];
  alignas(1024) uint8_t b[Cfg::kStages][Cfg::kBBytes];
  alignas(1024) uint8_t out[Cfg::kConsumers][Cfg::kOutBuffers][Cfg::kOutChunkBytes];
  Mbarrier full[Cfg::kStages];   // the stage's tiles have landed (1 arrival + bytes)
  Mbarrier empty[Cfg::kStages];  // every consumer of the cluster is done with the stage
  TileQueue tiles;               // claimed tiles (Hooks::kClaimTiles), producer -> consumers
};

/// Dynamic shared memory to request: the storage plus slack to align its base to 1024.
template <class Cfg>
constexpr size_t gemm_smem_bytes() {
  return sizeof(GemmSharedStorage<Cfg>) + 1024;
}

/// The run-time arguments of the kernel (shape and the tile grid derived from it).
///
/// A and C may be cut into `batches` blocks of `m` rows each (A [batches][m][K], C
/// [batches][m][N]; rank-3 tensor maps {K or N, m, batches}): tiles never straddle two
/// blocks, and TMA zero-fills (loads) and clips (stores) each block at its own m rows. The
/// fused kernels use one block per PE (an all-gathered A, a reduce-scattered C); a plain
/// GEMM is one block.
struct GemmArgs {
  int m, n, k;             // m: rows of one block
  int batches;             // blocks of m rows (1 for a plain GEMM)
  int batch_cluster_rows;  // ceil(m / (kBlockM * kClusterM)): cluster-tile rows per block
  int cluster_rows;        // batches * batch_cluster_rows: rows of cluster tiles in all
  int tile_cols;           // ceil(N / kBlockN)
  int k_blocks;            // ceil(K / kBlockK); the last block's tail reads as zero
  int group_rows;          // rasterisation: cluster rows walked together down one tile column
  int row_rotation;        // 0 .. cluster_rows - 1: the cluster row the tile order starts at
  int linear_rotation;     // 0 .. tiles - 1: the tile of that order the walk starts at
};

}  // namespace tmashmem::gemm
