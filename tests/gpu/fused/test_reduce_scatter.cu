// GPU tests of tmashmem_matmul_reduce_scatter_on_stream (tmashmem/fused.h), both modes: fresh
// random bf16 A_p and B_p on every PE, this PE's rows of C checked element by element against
// cuBLASLt on the whole problem (A and B concatenated along K, fp32 out), guard regions around
// the shard and its padding columns checked untouched. Tolerance: sqrt(K_total) 2^-8 (fp32
// accumulation, bf16 inputs) plus, per bf16 rounding of the result, 2^-8 |ref|: one rounding
// in the deterministic mode, one per PE's add in the fast mode. Back-to-back calls with new
// data, graph capture and replay, deterministic results bit-identical across runs, argument
// checks.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fused_check.cuh"
#include "gemm_reference.cuh"
#include "gpu_test_util.cuh"
#include "tmashmem/fused.h"

namespace {

using fused_test::Bf16;
using fused_test::DeviceBuffer;
using gpu_test::Session;

struct RsShape {
  int m_shard, n, k;         // per PE: A [n_pes * m_shard, k], B [n, k]
  int pad_a = 0, pad_c = 0;  // lda = ldb = k + pad_a, ldc = n + pad_c
};

using fused_test::kGuard;
using fused_test::kSentinel;

// `rounds` calls back to back (graph: one captured call replayed), new data every round
// unless `same_data`; with `same_data` every round's shard must equal the first bit for bit.
bool run_rs(const Session& s, const RsShape& sh, int mode, int rounds, bool graph, bool same_data,
            uint64_t salt) {
  const int me = s.me, n_pes = s.n;
  const int64_t ms = sh.m_shard, m = ms * n_pes, lda = sh.k + sh.pad_a, ldc = sh.n + sh.pad_c;
  const int64_t k_total = int64_t(sh.k) * n_pes;
  bool ok = true;
  const size_t shard_elems = size_t(ms) * ldc + 2 * kGuard;
  Bf16* shard_base = static_cast<Bf16*>(tmashmem_malloc(shard_elems * 2));
  const size_t ws_bytes = tmashmem_matmul_reduce_scatter_workspace_bytes(m, sh.n, mode);
  void* ws = tmashmem_calloc(ws_bytes, 1);
  if (!shard_base || !ws) {
    std::printf("[PE %d] allocation failed: %s\n", me, tmashmem_last_error());
    return false;
  }
  Bf16* c_shard = shard_base + kGuard;
  DeviceBuffer<Bf16> a(size_t(m) * lda), b(size_t(sh.n + 8) * lda);
  DeviceBuffer<Bf16> a_full(size_t(m) * k_total), b_full(size_t(sh.n) * k_total);
  DeviceBuffer<float> ref(size_t(m) * sh.n);
  DeviceBuffer<gemm_ref::CheckCounts> counts(rounds);
  DeviceBuffer<Bf16> first(size_t(ms) * ldc);
  DeviceBuffer<unsigned long long> repeat_diff(1);
  if (!a.p || !b.p || !a_full.p || !b_full.p || !ref.p || !counts.p || !first.p || !repeat_diff.p) {
    std::printf("[PE %d] out of device memory\n", me);
    return false;
  }
  cudaStream_t stream;
  ok &= GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ok &= GPU_TEST_CUDA(cudaMemset(a.p, 0xFF, size_t(m) * lda * 2));  // NaN in the padding
  ok &= GPU_TEST_CUDA(cudaMemset(b.p, 0xFF, size_t(sh.n + 8) * lda * 2));
  ok &= GPU_TEST_CUDA(cudaMemset(shard_base, 0x5A, shard_elems * 2));
  ok &= GPU_TEST_CUDA(cudaMemset(counts.p, 0, sizeof(gemm_ref::CheckCounts) * rounds));
  ok &= GPU_TEST_CUDA(cudaMemset(repeat_diff.p, 0, 8));
  gemm_ref::LtGemm lt;
  if (!lt.plan(int(m), sh.n, int(k_total), k_total, k_total, sh.n, true)) {
    std::printf("[PE %d] cuBLASLt found no algorithm\n", me);
    return false;
  }
  ok &= gpu_test::sync_and_barrier();
  auto call = [&]() {
    return tmashmem_matmul_reduce_scatter_on_stream(a.p, b.p, c_shard, m, sh.n, sh.k, lda, lda, ldc,
                                                    ws, mode, stream);
  };
  cudaGraphExec_t exec = nullptr;
  if (graph && ok) ok &= fused_test::capture(stream, call, &exec);
  const float eps = 1.0f / 256.0f;
  const bool fast = mode == TMASHMEM_REDUCE_SCATTER_FAST;
  const float tol_abs = std::sqrt(float(k_total)) * eps * (fast ? 2.0f : 1.0f);
  const float tol_rel = fast ? float(n_pes + 1) * eps : eps;
  for (int r = 0; r < rounds && ok; ++r) {
    const uint64_t round = salt * 1000 + (same_data ? 0 : r);
    ok &= GPU_TEST_CUDA(
        fused_test::fill(a.p, m, sh.k, lda, gpu_test::seed_for(20, me, round), stream));
    ok &= GPU_TEST_CUDA(
        fused_test::fill(b.p, sh.n, sh.k, lda, gpu_test::seed_for(21, me, round), stream));
    ok &= fused_test::launch(exec, stream, call);
    for (int p = 0; p < n_pes; ++p) {  // the whole problem: blocks of K side by side
      ok &= GPU_TEST_CUDA(fused_test::fill(a_full.p + size_t(p) * sh.k, m, sh.k, k_total,
                                           gpu_test::seed_for(20, p, round), stream));
      ok &= GPU_TEST_CUDA(fused_test::fill(b_full.p + size_t(p) * sh.k, sh.n, sh.k, k_total,
                                           gpu_test::seed_for(21, p, round), stream));
    }
    ok &= lt.run(a_full.p, b_full.p, ref.p, stream) == CUBLAS_STATUS_SUCCESS;
    gemm_ref::check_kernel<Bf16, uint16_t><<<1024, 256, 0, stream>>>(
        shard_base, kGuard, int(ms), sh.n, ldc, ref.p + size_t(me) * ms * sh.n, nullptr, tol_abs,
        tol_rel, kSentinel, &counts.p[r]);
    if (same_data) {
      if (r == 0)
        ok &= GPU_TEST_CUDA(cudaMemcpyAsync(first.p, c_shard, size_t(ms) * ldc * 2,
                                            cudaMemcpyDeviceToDevice, stream));
      else
        fused_test::count_different_kernel<><<<1024, 256, 0, stream>>>(
            reinterpret_cast<const uint16_t*>(first.p), reinterpret_cast<const uint16_t*>(c_shard),
            size_t(ms) * ldc, repeat_diff.p);
    }
    ok &= GPU_TEST_CUDA(cudaGetLastError());
  }
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  std::vector<gemm_ref::CheckCounts> h(rounds);
  unsigned long long diff = 0;
  ok &= GPU_TEST_CUDA(cudaMemcpy(h.data(), counts.p, sizeof(gemm_ref::CheckCounts) * rounds,
                                 cudaMemcpyDeviceToHost));
  ok &= GPU_TEST_CUDA(cudaMemcpy(&diff, repeat_diff.p, 8, cudaMemcpyDeviceToHost));
  fused_test::CheckTotals totals;
  for (const auto& c : h) totals.add(c);
  const unsigned long long wrong = totals.wrong, guards = totals.guards;
  const float worst = totals.worst;
  const bool pass = ok && wrong == 0 && guards == 0 && diff == 0;
  if (me == 0 || !pass)
    std::printf(
        "  [PE %d/%d] %s m_shard %5d n %5d k %5d lda %5lld ldc %5lld %s x%d%s: %s (wrong %llu, "
        "guard %llu, differing from the first run %llu, max |err|/tol %.3f)\n",
        me, n_pes, fast ? "fast" : "deterministic", sh.m_shard, sh.n, sh.k, (long long)lda,
        (long long)ldc, graph ? "graph" : "calls", rounds, same_data ? " same data" : "",
        pass ? "ok" : "FAILED", wrong, guards, diff, worst);
  ok &= fused_test::end_run(exec, stream, ws, shard_base);
  return pass && ok;
}

bool run_all(const std::vector<RsShape>& shapes, int mode, int rounds, bool graph,
             bool same_data = false) {
  Session s;
  if (!tmashmem_test::all_ranks(s.ok)) return false;
  bool all = true;
  uint64_t salt = 0;
  for (const RsShape& sh : shapes) all &= run_rs(s, sh, mode, rounds, graph, same_data, ++salt);
  return tmashmem_test::all_ranks(all);
}

const std::vector<RsShape> kRagged = {
    {1000, 1000, 1000, 8, 8}, {300, 264, 72, 0, 8}, {129, 776, 520, 24, 0}, {16, 1024, 2048},
    {64, 2048, 1024, 8},      {100, 3584, 512},     {128, 1024, 4096, 0, 8}};

constexpr int kFast = TMASHMEM_REDUCE_SCATTER_FAST;
constexpr int kDet = TMASHMEM_REDUCE_SCATTER_DETERMINISTIC;

}  // namespace

TEST_CASE("matmul_reduce_scatter fast: ragged and small shards", "[fused]") {
  CHECK(run_all(kRagged, kFast, 1, false));
}

TEST_CASE("matmul_reduce_scatter deterministic: ragged and small shards", "[fused]") {
  CHECK(run_all(kRagged, kDet, 1, false));
}

TEST_CASE("matmul_reduce_scatter: a large shape, both modes", "[fused]") {
  CHECK(run_all({{2048, 4096, 2048}}, kFast, 2, false));
  CHECK(run_all({{2048, 4096, 2048}}, kDet, 2, false));
}

TEST_CASE("matmul_reduce_scatter: 100 back-to-back calls with new data", "[fused]") {
  CHECK(run_all({{256, 512, 512}, {200, 264, 1024, 8, 8}}, kFast, 100, false));
  CHECK(run_all({{256, 512, 512}, {200, 264, 1024, 8, 8}}, kDet, 100, false));
}

TEST_CASE("matmul_reduce_scatter: captured into a graph and replayed", "[fused]") {
  CHECK(run_all({{384, 768, 1024}}, kFast, 6, true));
  CHECK(run_all({{384, 768, 1024}}, kDet, 6, true));
}

TEST_CASE("matmul_reduce_scatter deterministic: bit-identical across runs", "[fused]") {
  CHECK(run_all({{1000, 1000, 1000, 8, 8}, {512, 1024, 4096}}, kDet, 10, false, true));
}

TEST_CASE("matmul_reduce_scatter: argument checks", "[fused]") {
  Session s;
  REQUIRE(tmashmem_test::all_ranks(s.ok));
  const int64_t m = 64 * s.n;
  void* shard = tmashmem_malloc(64 * 128 * 2);
  void* ws = tmashmem_calloc(tmashmem_matmul_reduce_scatter_workspace_bytes(m, 128, kDet), 1);
  DeviceBuffer<Bf16> local(size_t(m) * 128);
  REQUIRE(shard != nullptr);
  REQUIRE(ws != nullptr);
  // c_shard must be symmetric (peers write into it).
  CHECK(tmashmem_matmul_reduce_scatter_on_stream(local.p, local.p, local.p, m, 128, 128, 128, 128,
                                                 128, ws, kDet, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  // An unknown mode.
  CHECK(tmashmem_matmul_reduce_scatter_on_stream(local.p, local.p, shard, m, 128, 128, 128, 128,
                                                 128, ws, 7, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  // m not a multiple of the PE count (with more than one PE), or k not a multiple of 8.
  CHECK(tmashmem_matmul_reduce_scatter_on_stream(local.p, local.p, shard, m, 128, 12, 16, 16, 128,
                                                 ws, kFast, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  if (s.n > 1)
    CHECK(tmashmem_matmul_reduce_scatter_on_stream(local.p, local.p, shard, m + 1, 128, 128, 128,
                                                   128, 128, ws, kFast,
                                                   0) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(gpu_test::sync_and_barrier());
  tmashmem_free(ws);
  tmashmem_free(shard);
}
