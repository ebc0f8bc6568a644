// GPU tests of the sm_90a GEMM (tmashmem/device/gemm): C = A * B^T against cuBLASLt with
// fresh random bf16 operands, every element checked, guard bytes around C and the padding
// columns between N and ldc checked untouched, NaN in the operands' padding (columns K..lda
// and the rows after M and N; for B given as [K, N], columns N..ldb and the rows after K) so
// that any read outside the matrices poisons the result.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gemm_reference.cuh"
#include "gpu_test_util.cuh"
#include "tmashmem/device/gemm/launch.cuh"

namespace {

using tmashmem::gemm::GemmConfig;
using Bf16 = __nv_bfloat16;
using CfgBf16 = GemmConfig<256, 4, 1, Bf16>;
using CfgBf16Cluster = GemmConfig<256, 4, 2, Bf16>;
using CfgN128 = GemmConfig<128, 6, 1, Bf16>;
using CfgF32 = GemmConfig<256, 4, 1, float>;
using tmashmem::gemm::EpilogueOp;
using CfgAddBf16 = GemmConfig<256, 4, 1, Bf16, EpilogueOp::reduce_add>;
using CfgAddF32Cluster = GemmConfig<256, 4, 2, float, EpilogueOp::reduce_add>;
// 224 and 192 columns: bf16 rows of 448 bytes go out in 64-byte swizzled chunks (7 of them),
// fp32 rows of 896 bytes in 7 chunks of 128; 192 bf16 columns in 3 chunks of 128 bytes.
using CfgN224 = GemmConfig<224, 4, 1, Bf16>;
using CfgN224Cluster = GemmConfig<224, 4, 2, Bf16>;
using CfgN224F32 = GemmConfig<224, 4, 1, float>;
using CfgN224AddBf16 = GemmConfig<224, 4, 1, Bf16, EpilogueOp::reduce_add>;
using CfgN192 = GemmConfig<192, 4, 1, Bf16>;
// B given as [K, N] (N-major: MN-major wgmma operand, TMA boxes of 64 n x 64 k).
using tmashmem::gemm::BMajor;
using CfgKN = GemmConfig<256, 4, 1, Bf16, EpilogueOp::store, BMajor::n>;
using CfgKNCluster = GemmConfig<256, 4, 2, Bf16, EpilogueOp::store, BMajor::n>;
using CfgKN128Cluster = GemmConfig<128, 6, 2, Bf16, EpilogueOp::store, BMajor::n>;
using CfgKN192 = GemmConfig<192, 4, 1, Bf16, EpilogueOp::store, BMajor::n>;
using CfgKNF32 = GemmConfig<256, 4, 1, float, EpilogueOp::store, BMajor::n>;
using CfgKNAddBf16Cluster = GemmConfig<256, 4, 2, Bf16, EpilogueOp::reduce_add, BMajor::n>;

struct Shape {
  int m, n, k;
  int pad_k = 0;  // lda = K + pad_k; ldb = K + pad_k for B [N, K]
  int pad_n = 0;  // ldc = N + pad_n; ldb = N + pad_n for B [K, N]
  int group_rows = 8;
  int first_row = 0;  // the tile order starts at this row's cluster row
};

using gemm_ref::DeviceBuffer;

// Runs one shape with configuration Cfg; returns false (after printing why) on any failure.
template <class Cfg>
bool run_shape(const char* name, const Shape& s, uint64_t round) {
  using Out = typename Cfg::Out;
  using Bits = std::conditional_t<sizeof(Out) == 4, uint32_t, uint16_t>;
  constexpr bool kBKN = Cfg::kBMajor == tmashmem::gemm::BMajor::n;
  const int64_t lda = s.k + s.pad_k, ldc = s.n + s.pad_n;
  const int64_t ldb = kBKN ? s.n + s.pad_n : lda;
  const int64_t b_rows = kBKN ? s.k : s.n, b_cols = kBKN ? s.n : s.k;
  const int64_t extra_rows = 8, guard = 4096;
  DeviceBuffer<Bf16> a((s.m + extra_rows) * lda), b((b_rows + extra_rows) * ldb);
  DeviceBuffer<Out> c(size_t(s.m) * ldc + 2 * guard);
  DeviceBuffer<float> ref(size_t(s.m) * s.n);
  DeviceBuffer<gemm_ref::CheckCounts> counts(1);
  if (!a.p || !b.p || !c.p || !ref.p || !counts.p) {
    std::printf("  %s: out of device memory\n", name);
    return false;
  }
  bool ok = true;
  // 0xFF bytes: bf16 NaN everywhere outside the matrices; 0x5A: the guard sentinel.
  ok &= GPU_TEST_CUDA(cudaMemset(a.p, 0xFF, (s.m + extra_rows) * lda * sizeof(Bf16)));
  ok &= GPU_TEST_CUDA(cudaMemset(b.p, 0xFF, (b_rows + extra_rows) * ldb * sizeof(Bf16)));
  ok &= GPU_TEST_CUDA(gemm_ref::fill_uniform(a.p, s.m, s.k, lda, gpu_test::seed_for(1, 0, round)));
  ok &= GPU_TEST_CUDA(
      gemm_ref::fill_uniform(b.p, b_rows, b_cols, ldb, gpu_test::seed_for(2, 0, round)));
  ok &= GPU_TEST_CUDA(cudaMemset(c.p, 0x5A, (size_t(s.m) * ldc + 2 * guard) * sizeof(Out)));
  ok &= GPU_TEST_CUDA(cudaMemset(counts.p, 0, sizeof(gemm_ref::CheckCounts)));
  // A GEMM that adds into C starts from random values there (kept in c0 for the check).
  constexpr bool kAdds = Cfg::kEpilogueOp == EpilogueOp::reduce_add;
  DeviceBuffer<Out> c0(kAdds ? size_t(s.m) * ldc : 1);
  if (kAdds) {
    DeviceBuffer<Bf16> init(size_t(s.m) * s.n);
    if (!init.p || !c0.p) {
      std::printf("  %s: out of device memory\n", name);
      return false;
    }
    ok &= GPU_TEST_CUDA(
        gemm_ref::fill_uniform(init.p, s.m, s.n, s.n, gpu_test::seed_for(3, 0, round)));
    ok &= GPU_TEST_CUDA(gemm_ref::widen_rows(c.p + guard, init.p, s.m, s.n, ldc));
    ok &= GPU_TEST_CUDA(
        cudaMemcpy(c0.p, c.p + guard, size_t(s.m) * ldc * sizeof(Out), cudaMemcpyDeviceToDevice));
  }

  gemm_ref::LtGemm lt;
  if (!lt.plan(s.m, s.n, s.k, lda, ldb, s.n, true, kBKN)) {
    std::printf("  %s: cuBLASLt found no algorithm\n", name);
    return false;
  }
  if (lt.run(a.p, b.p, ref.p) != CUBLAS_STATUS_SUCCESS) {
    std::printf("  %s: cuBLASLt matmul failed\n", name);
    return false;
  }

  tmashmem::gemm::GemmProblem p{s.m, s.n, s.k, a.p, lda, b.p, ldb, c.p + guard, ldc};
  tmashmem::gemm::GemmPlan<Cfg> plan;
  if (const char* why = tmashmem::gemm::gemm_plan(p, &plan, s.group_rows, 0, s.first_row)) {
    std::printf("  %s: %s\n", name, why);
    return false;
  }
  ok &= GPU_TEST_CUDA(tmashmem::gemm::gemm_run(plan, 0));
  ok &= GPU_TEST_CUDA(cudaDeviceSynchronize());

  const float eps_bf16 = 1.0f / 256.0f;  // 2^-8: unit roundoff of bf16 (8-bit significand)
  const float tol_abs = std::sqrt(static_cast<float>(s.k)) * eps_bf16;  // |a|, |b| <= 1
  // bf16 results round once (twice when added into C: the tile, then the sum).
  const float tol_rel = sizeof(Out) == 2 ? (kAdds ? 2 : 1) * eps_bf16 : 1e-6f;
  gemm_ref::check_kernel<Out, Bits>
      <<<2048, 256>>>(c.p, guard, s.m, s.n, ldc, ref.p, kAdds ? c0.p : nullptr, tol_abs, tol_rel,
                      Bits(sizeof(Out) == 4 ? 0x5A5A5A5Au : 0x5A5Au), counts.p);
  ok &= GPU_TEST_CUDA(cudaGetLastError());
  gemm_ref::CheckCounts h{};
  ok &= GPU_TEST_CUDA(cudaMemcpy(&h, counts.p, sizeof h, cudaMemcpyDeviceToHost));
  float max_ratio, max_err;
  std::memcpy(&max_ratio, &h.max_ratio, 4);
  std::memcpy(&max_err, &h.max_err, 4);
  const bool pass = ok && h.wrong == 0 && h.guards == 0;
  std::printf(
      "  %-14s M %5d N %5d K %5d lda %5lld ldb %5lld ldc %5lld grid %3d: %s (wrong %llu, "
      "guard %llu, max |err| %.3g, max |err|/tol %.3f)\n",
      name, s.m, s.n, s.k, static_cast<long long>(lda), static_cast<long long>(ldb),
      static_cast<long long>(ldc), plan.grid, pass ? "ok" : "FAILED", h.wrong, h.guards, max_err,
      max_ratio);
  return pass;
}

template <class Cfg>
bool run_shapes(const char* name, const std::vector<Shape>& shapes) {
  bool all = true;
  uint64_t round = 0;
  for (const Shape& s : shapes) all &= run_shape<Cfg>(name, s, ++round);
  return all;
}

// Shapes that exercise the edges: M, N, K off the tile sizes (TMA zero fill and clipping),
// padded leading dimensions, one k-block, several tiles per CTA.
const std::vector<Shape> kRagged = {
    {1000, 1024, 1024},           // M not a multiple of 128
    {777, 1000, 1000, 8, 8},      // N not a multiple of 256, K not of 64, padded lda and ldc
    {1100, 776, 72, 24, 16},      // a partial second k-block; odd cluster-row count
    {300, 264, 8, 0, 8},          // K = 8: one mostly empty k-block
    {2304, 2560, 4104, 8, 8, 3},  // several tiles per CTA, group of 3 rows
};

const std::vector<Shape> kSmallM = {
    {16, 4096, 4096},
    {64, 2048, 4096, 0, 8},
    {100, 3584, 2048},
    {128, 1024, 8192, 8, 0},
};

}  // namespace

TEST_CASE("gemm bf16 8192^3 matches cuBLAS", "[gemm]") {
  CHECK(run_shapes<CfgBf16>("bf16", {{8192, 8192, 8192}}));
}

TEST_CASE("gemm bf16 ragged M, N, K and padded leading dimensions", "[gemm]") {
  CHECK(run_shapes<CfgBf16>("bf16", kRagged));
}

TEST_CASE("gemm bf16 small M", "[gemm]") { CHECK(run_shapes<CfgBf16>("bf16", kSmallM)); }

TEST_CASE("gemm bf16 cluster of 2 with B multicast", "[gemm]") {
  CHECK(run_shapes<CfgBf16Cluster>("bf16-cluster2", {{8192, 8192, 8192}}));
  CHECK(run_shapes<CfgBf16Cluster>("bf16-cluster2", kRagged));
  CHECK(run_shapes<CfgBf16Cluster>("bf16-cluster2", kSmallM));
}

TEST_CASE("gemm bf16 128-wide tiles", "[gemm]") {
  CHECK(run_shapes<CfgN128>("bf16-n128", {{2048, 3584, 8192}}));
  CHECK(run_shapes<CfgN128>("bf16-n128", kRagged));
}

TEST_CASE("gemm bf16 224- and 192-wide tiles (odd chunk counts, 64-byte output swizzle)",
          "[gemm]") {
  CHECK(run_shapes<CfgN224>("bf16-n224", {{2048, 3584, 8192}}));
  CHECK(run_shapes<CfgN224>("bf16-n224", kRagged));
  CHECK(run_shapes<CfgN224>("bf16-n224", kSmallM));
  CHECK(run_shapes<CfgN224Cluster>("bf16-n224-c2", {{8192, 8192, 2048}}));
  CHECK(run_shapes<CfgN224Cluster>("bf16-n224-c2", kRagged));
  CHECK(run_shapes<CfgN224F32>("f32-n224", kRagged));
  CHECK(run_shapes<CfgN224AddBf16>("bf16-n224-add", kRagged));
  CHECK(run_shapes<CfgN192>("bf16-n192", kRagged));
}

TEST_CASE("gemm fp32 output", "[gemm]") {
  CHECK(run_shapes<CfgF32>("f32", {{4096, 4096, 4096}}));
  CHECK(run_shapes<CfgF32>("f32", kRagged));
  CHECK(run_shapes<CfgF32>("f32", kSmallM));
}

TEST_CASE("gemm tile order rotated to start at a given row", "[gemm]") {
  CHECK(run_shapes<CfgBf16>("bf16-rotated",
                            {{1000, 1024, 1024, 0, 0, 8, 300}, {2304, 2560, 4104, 8, 8, 3, 2303}}));
  CHECK(run_shapes<CfgBf16Cluster>(
      "bf16-c2-rotated", {{1100, 776, 72, 24, 16, 8, 600}, {8192, 1024, 2048, 0, 0, 4, 4096}}));
}

TEST_CASE("gemm adding into C (TMA reduce-add epilogue)", "[gemm]") {
  CHECK(run_shapes<CfgAddBf16>("bf16-add", {{4096, 4096, 4096}}));
  CHECK(run_shapes<CfgAddBf16>("bf16-add", kRagged));
  CHECK(run_shapes<CfgAddF32Cluster>("f32-add-c2", {{2048, 3584, 8192}}));
  CHECK(run_shapes<CfgAddF32Cluster>("f32-add-c2", kRagged));
}

TEST_CASE("gemm with B given as [K, N] (N-major B)", "[gemm]") {
  CHECK(run_shapes<CfgKN>("kn", {{8192, 8192, 8192}}));
  CHECK(run_shapes<CfgKN>("kn", kRagged));
  CHECK(run_shapes<CfgKN>("kn", kSmallM));
  CHECK(run_shapes<CfgKNCluster>("kn-c2", {{4096, 3584, 4096}}));
  CHECK(run_shapes<CfgKNCluster>("kn-c2", kRagged));
  CHECK(run_shapes<CfgKNCluster>("kn-c2", kSmallM));
  CHECK(run_shapes<CfgKN128Cluster>("kn-n128-c2", kRagged));
  CHECK(run_shapes<CfgKN192>("kn-n192", kRagged));
  CHECK(run_shapes<CfgKNF32>("kn-f32", kRagged));
  CHECK(run_shapes<CfgKNAddBf16Cluster>("kn-add-c2", kRagged));
  CHECK(run_shapes<CfgKN>("kn-rotated", {{2304, 2560, 4104, 8, 8, 3, 2303}}));
}

TEST_CASE("gemm rejects shapes TMA cannot address", "[gemm]") {
  tmashmem::gemm::GemmPlan<CfgBf16> plan;
  alignas(16) static Bf16 dummy[64];
  tmashmem::gemm::GemmProblem p{128, 128, 12, dummy, 16, dummy, 16, dummy, 128};
  CHECK(tmashmem::gemm::gemm_plan(p, &plan) != nullptr);  // K = 12: rows not 16-byte
  p.k = 16;
  p.ldc = 132;
  p.n = 132;
  CHECK(tmashmem::gemm::gemm_plan(p, &plan) != nullptr);  // ldc * 2 not a multiple of 16
  p.n = 1001;
  p.ldc = 1008;
  CHECK(tmashmem::gemm::gemm_plan(p, &plan) != nullptr);  // N * 2 not a multiple of 16
  p.n = 1000;
  CHECK(tmashmem::gemm::gemm_plan(p, &plan, 8, 0, 128) != nullptr);  // first_row >= M
  // B as [K, N]: ldb is counted in n, so an ldb that fits K but not N is refused.
  tmashmem::gemm::GemmPlan<CfgKN> plan_kn;
  tmashmem::gemm::GemmProblem q{128, 256, 64, dummy, 64, dummy, 64, dummy, 256};
  const char* why = tmashmem::gemm::gemm_plan(q, &plan_kn);
  CHECK(why != nullptr);
  CHECK((why != nullptr && std::strstr(why, "ldb is below N") != nullptr));
}
