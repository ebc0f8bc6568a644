// GPU tests of tmashmem_allgather_matmul_on_stream (tmashmem/fused.h): fresh random bf16
// shards on every PE, C checked element by element against cuBLASLt on the gathered A (fp32
// out; |err| <= sqrt(K) 2^-8 + 2^-8 |ref|), the gathered A (where returned) checked bit for bit,
// guard regions around C and the gathered A and the padding columns of C checked untouched, NaN in
// B's padding. Back-to-back calls with new data on one stream (a PE that overwrote its shard before
// every peer had read it, or reused a chunk flag too early, fails the check), graph capture and
// replay, and the argument checks.
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

struct AgShape {
  int m_shard, n, k;
  int pad_b = 0, pad_c = 0;  // ldb = k + pad_b, ldc = n + pad_c
  int comm = 0;              // comm_sms (0: by shape; TMASHMEM_COMM_WARPS; > 0: copy SMs)
  bool no_gathered = false;  // a_gathered NULL: the gathered A is not returned
};

using fused_test::kGuard;  // elements before and after C and the gathered A
using fused_test::kSentinel;

struct RoundCounts {
  gemm_ref::CheckCounts c;
  unsigned long long gathered_wrong, gathered_guard;
};

// `rounds` calls back to back on one stream, new shards and B every round, each checked
// in stream order; with `graph`, the call is captured once and the graph replayed.
bool run_allgather(const Session& s, const AgShape& sh, int rounds, bool graph, uint64_t salt) {
  const int me = s.me, n_pes = s.n;
  const int64_t ms = sh.m_shard, m = ms * n_pes, ldb = sh.k + sh.pad_b, ldc = sh.n + sh.pad_c;
  bool ok = true;
  const size_t shard_bytes = size_t(ms) * sh.k * 2;
  const size_t ws_bytes = tmashmem_allgather_matmul_workspace_bytes(ms, sh.k, sh.no_gathered);
  Bf16* a_shard = static_cast<Bf16*>(tmashmem_malloc(shard_bytes));
  void* ws = tmashmem_calloc(ws_bytes, 1);
  if (a_shard == nullptr || ws == nullptr) {
    std::printf("[PE %d] allocation failed: %s\n", me, tmashmem_last_error());
    return false;
  }
  DeviceBuffer<Bf16> gathered_own(sh.no_gathered ? 1 : size_t(m) * sh.k + 2 * kGuard);
  Bf16* gathered = sh.no_gathered ? nullptr : gathered_own.p + kGuard;
  DeviceBuffer<Bf16> b(size_t(sh.n + 8) * ldb), c(size_t(m) * ldc + 2 * kGuard),
      ref_a(size_t(m) * sh.k);
  DeviceBuffer<float> ref(size_t(m) * sh.n);
  DeviceBuffer<RoundCounts> counts(rounds);
  if (!gathered_own.p || !b.p || !c.p || !ref_a.p || !ref.p || !counts.p) {
    std::printf("[PE %d] out of device memory\n", me);
    return false;
  }
  cudaStream_t stream;
  ok &= GPU_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ok &= GPU_TEST_CUDA(cudaMemset(b.p, 0xFF, size_t(sh.n + 8) * ldb * 2));  // NaN padding
  ok &= GPU_TEST_CUDA(cudaMemset(c.p, 0x5A, (size_t(m) * ldc + 2 * kGuard) * 2));
  if (!sh.no_gathered)
    ok &= GPU_TEST_CUDA(cudaMemset(gathered_own.p, 0x5A, (size_t(m) * sh.k + 2 * kGuard) * 2));
  ok &= GPU_TEST_CUDA(cudaMemset(counts.p, 0, sizeof(RoundCounts) * rounds));
  gemm_ref::LtGemm lt;
  if (!lt.plan(int(m), sh.n, sh.k, sh.k, ldb, sh.n, true)) {
    std::printf("[PE %d] cuBLASLt found no algorithm\n", me);
    return false;
  }
  ok &= gpu_test::sync_and_barrier();
  auto call = [&]() {
    return tmashmem_allgather_matmul_on_stream(a_shard, b.p, c.p + kGuard, gathered, ms, sh.n, sh.k,
                                               ldb, ldc, ws, sh.comm, stream);
  };
  cudaGraphExec_t exec = nullptr;
  if (graph && ok) ok &= fused_test::capture(stream, call, &exec);
  const float eps = 1.0f / 256.0f;
  const float tol_abs = std::sqrt(float(sh.k)) * eps;
  for (int r = 0; r < rounds && ok; ++r) {
    const uint64_t round = salt * 1000 + r;
    ok &= GPU_TEST_CUDA(
        fused_test::fill(a_shard, ms, sh.k, sh.k, gpu_test::seed_for(10, me, round), stream));
    ok &= GPU_TEST_CUDA(
        fused_test::fill(b.p, sh.n, sh.k, ldb, gpu_test::seed_for(11, me, round), stream));
    ok &= fused_test::launch(exec, stream, call);
    for (int p = 0; p < n_pes; ++p)
      ok &= GPU_TEST_CUDA(fused_test::fill(ref_a.p + size_t(p) * ms * sh.k, ms, sh.k, sh.k,
                                           gpu_test::seed_for(10, p, round), stream));
    ok &= lt.run(ref_a.p, b.p, ref.p, stream) == CUBLAS_STATUS_SUCCESS;
    gemm_ref::check_kernel<Bf16, uint16_t><<<1024, 256, 0, stream>>>(
        c.p, kGuard, int(m), sh.n, ldc, ref.p, nullptr, tol_abs, eps, kSentinel, &counts.p[r].c);
    if (!sh.no_gathered) {
      fused_test::count_different_kernel<><<<1024, 256, 0, stream>>>(
          reinterpret_cast<const uint16_t*>(gathered), reinterpret_cast<const uint16_t*>(ref_a.p),
          size_t(m) * sh.k, &counts.p[r].gathered_wrong);
      fused_test::count_not_kernel<>
          <<<64, 256, 0, stream>>>(reinterpret_cast<const uint16_t*>(gathered_own.p), kGuard,
                                   kSentinel, &counts.p[r].gathered_guard);
      fused_test::count_not_kernel<>
          <<<64, 256, 0, stream>>>(reinterpret_cast<const uint16_t*>(gathered + size_t(m) * sh.k),
                                   kGuard, kSentinel, &counts.p[r].gathered_guard);
    }
    ok &= GPU_TEST_CUDA(cudaGetLastError());
  }
  ok &= GPU_TEST_CUDA(cudaStreamSynchronize(stream));
  std::vector<RoundCounts> h(rounds);
  ok &= GPU_TEST_CUDA(
      cudaMemcpy(h.data(), counts.p, sizeof(RoundCounts) * rounds, cudaMemcpyDeviceToHost));
  fused_test::CheckTotals c_totals;
  unsigned long long g_wrong = 0, g_guard = 0;
  for (const RoundCounts& rc : h) {
    c_totals.add(rc.c);
    g_wrong += rc.gathered_wrong;
    g_guard += rc.gathered_guard;
  }
  const unsigned long long wrong = c_totals.wrong, guards = c_totals.guards;
  const float worst = c_totals.worst;
  const bool pass = ok && wrong == 0 && guards == 0 && g_wrong == 0 && g_guard == 0;
  if (me == 0 || !pass)
    std::printf(
        "  [PE %d/%d] m_shard %5d n %5d k %5d ldb %5lld ldc %5lld comm %d %s%s x%d: %s (C wrong "
        "%llu, C guard %llu, gathered wrong %llu, gathered guard %llu, max |err|/tol %.3f)\n",
        me, n_pes, sh.m_shard, sh.n, sh.k, (long long)ldb, (long long)ldc, sh.comm,
        sh.no_gathered ? "no-A " : "", graph ? "graph" : "calls", rounds, pass ? "ok" : "FAILED",
        wrong, guards, g_wrong, g_guard, worst);
  ok &= fused_test::end_run(exec, stream, ws, a_shard);
  return pass && ok;
}

bool run_all(const std::vector<AgShape>& shapes, int rounds, bool graph) {
  Session s;
  if (!tmashmem_test::all_ranks(s.ok)) return false;
  bool all = true;
  uint64_t salt = 0;
  for (const AgShape& sh : shapes) all &= run_allgather(s, sh, rounds, graph, ++salt);
  return tmashmem_test::all_ranks(all);
}

}  // namespace

TEST_CASE("allgather_matmul: ragged M, N, K, padded leading dimensions", "[fused]") {
  // n below 2048: the default copier is dedicated copy SMs; the warps explicitly beside it.
  CHECK(run_all({{1000, 1000, 1000, 8, 8},
                 {1000, 1000, 1000, 8, 8, TMASHMEM_COMM_WARPS},
                 {300, 264, 72, 0, 8, 1},
                 {777, 776, 4104, 24, 0, 3},
                 {129, 136, 8, 0, 0, TMASHMEM_COMM_WARPS},
                 {1000, 1000, 1000, 0, 0, 0, true},
                 {777, 776, 4104, 24, 0, TMASHMEM_COMM_WARPS, true}},
                1, false));
}

TEST_CASE("allgather_matmul: small shards (m_shard 16 .. 128)", "[fused]") {
  CHECK(run_all(
      {{16, 1024, 2048}, {64, 2048, 1024, 8}, {100, 3584, 2048}, {128, 1024, 4096, 0, 8, 2}}, 1,
      false));
}

TEST_CASE("allgather_matmul: a large shape", "[fused]") {
  CHECK(run_all({{2048, 3584, 4096}}, 2, false));
}

TEST_CASE("allgather_matmul: 24 back-to-back calls with new data", "[fused]") {
  CHECK(run_all({{256, 512, 512, 0, 0, 2},
                 {200, 264, 1024, 8, 8, 1},
                 {256, 512, 512, 0, 0, TMASHMEM_COMM_WARPS},
                 {256, 512, 512, 0, 0, 2, true}},
                24, false));
}

TEST_CASE("allgather_matmul: captured into a graph and replayed", "[fused]") {
  CHECK(run_all({{384, 768, 1024}, {384, 768, 1024, 0, 0, TMASHMEM_COMM_WARPS}}, 6, true));
}

TEST_CASE("allgather_matmul: argument checks", "[fused]") {
  Session s;
  REQUIRE(tmashmem_test::all_ranks(s.ok));
  void* sym = tmashmem_malloc(1 << 20);
  const size_t ws_bytes = tmashmem_allgather_matmul_workspace_bytes(64, 128, 1);
  void* ws = tmashmem_calloc(ws_bytes, 1);
  DeviceBuffer<Bf16> local(1 << 19);
  REQUIRE(sym != nullptr);
  REQUIRE(ws != nullptr);
  // The shard must be symmetric (peers read it).
  CHECK(tmashmem_allgather_matmul_on_stream(local.p, local.p, local.p, nullptr, 64, 128, 128, 128,
                                            128, ws, 0, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  // k must be a multiple of 8.
  CHECK(tmashmem_allgather_matmul_on_stream(sym, local.p, local.p, nullptr, 64, 128, 12, 16, 128,
                                            ws, 0, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  // ldc below n.
  CHECK(tmashmem_allgather_matmul_on_stream(sym, local.p, local.p, nullptr, 64, 128, 128, 128, 64,
                                            ws, 0, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  // A workspace that is not in the heap.
  CHECK(tmashmem_allgather_matmul_on_stream(sym, local.p, local.p, nullptr, 64, 128, 128, 128, 128,
                                            local.p, 0, 0) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::strstr(tmashmem_last_error(), "workspace") != nullptr);
  // comm_sms below TMASHMEM_COMM_WARPS.
  CHECK(tmashmem_allgather_matmul_on_stream(sym, local.p, local.p, nullptr, 64, 128, 128, 128, 128,
                                            ws, TMASHMEM_COMM_WARPS - 1,
                                            0) == TMASHMEM_ERROR_INVALID_VALUE);
  CHECK(std::strstr(tmashmem_last_error(), "TMASHMEM_COMM_WARPS") != nullptr);
  CHECK(gpu_test::sync_and_barrier());
  tmashmem_free(ws);
  tmashmem_free(sym);
}
