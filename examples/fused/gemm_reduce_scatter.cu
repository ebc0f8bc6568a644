// gemm_reduce_scatter: one kernel that multiplies and reduce-scatters (a tensor-parallel
// row-linear layer), written as a kernel of one's own around the device building block
// tmashmem::fused::gemm_reduce_scatter_cta (tmashmem/device/fused/gemm_reduce_scatter.cuh).
//
// Every PE holds A_p [M, K_p] and B_p [N, K_p] (its slice of the reduction dimension). The
// result C = sum over PEs of A_p * B_p^T is scattered by rows: PE q keeps rows
// q * M/P .. (q + 1) * M/P - 1 in its c_shard (symmetric). Both modes run: FAST (each tile
// added straight into its owner's shard; the order of the additions varies) and
// DETERMINISTIC (fp32 partials added into the owner's staging in a fixed order, the last one
// rounded once into the owner's shard; bit-identical across runs, checked by running it twice). The
// host plans once (reduce_scatter_plan: tensor maps of every owner, the grid) and launches
// row_linear_kernel, where a layer of one's own would add its work before or after the block.
// The same kernel is what tmashmem_matmul_reduce_scatter_on_stream (tmashmem/fused.h) runs.
// A sample of the shard is checked against a double-precision host reference. PE 0 prints
// the times (median of 20 rounds that run both modes in turn, every PE at once).
//
// Run:   mpirun -np 2 ./gemm_reduce_scatter [M N K_per_PE]   (PEs may share a GPU: MPS)
// Prints "gemm_reduce_scatter: N PEs, ... OK" or what went wrong; exits 2 without a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "fused_example.h"
#include "tmashmem/device/fused/gemm_reduce_scatter_launch.cuh"
#include "tmashmem/tmashmem.h"

namespace {

using fused_example::interleaved_median_ms;
using fused_example::random_matrix;
using Bf16 = __nv_bfloat16;
using tmashmem::fused::ReduceScatterMode;
template <ReduceScatterMode Mode>
using RsCfg =
    std::conditional_t<Mode == ReduceScatterMode::fast, tmashmem::fused::ReduceScatterFastCfg,
                       tmashmem::fused::ReduceScatterDeterministicCfg>;

// The layer's kernel. Contract of the block: every thread of every CTA calls it once, with
// Cfg::kThreads threads per CTA and gemm_smem_bytes<Cfg>() of dynamic shared memory, and the
// grid (the plan's) fits on the PE's SMs at once (CTAs wait for other CTAs and for peers).
template <ReduceScatterMode Mode>
__global__ void __launch_bounds__(RsCfg<Mode>::kThreads, 1)
    row_linear_kernel(const __grid_constant__ tmashmem_ctx_t ctx,
                      const __grid_constant__ CUtensorMap a_map,
                      const __grid_constant__ CUtensorMap b_map,
                      const __grid_constant__ tmashmem::fused::OwnerMaps maps,
                      const __grid_constant__ tmashmem::fused::ReduceScatterArgs args) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem[];
  // (Work of one's own before the GEMM goes here: it must not touch c_shard or the workspace.)
  tmashmem::fused::gemm_reduce_scatter_cta<RsCfg<Mode>, Mode>(ctx, &a_map, &b_map, maps, args,
                                                              smem);
  // (Work after it: this CTA's tiles are sent; the shard is complete only when the kernel is.)
#else
  (void)ctx, (void)a_map, (void)b_map, (void)maps, (void)args;
#endif
}

// One mode: the plan (once) and the launch of row_linear_kernel on it.
template <ReduceScatterMode Mode>
struct RowLinear {
  tmashmem::fused::ReduceScatterPlan<RsCfg<Mode>, Mode> plan;
  tmashmem_ctx_t ctx;

  const char* prepare(const tmashmem::fused::ReduceScatterProblem& p) {
    if (tmashmem_device_ctx(&ctx) != TMASHMEM_SUCCESS) return tmashmem_last_error();
    if (const char* why = tmashmem::fused::reduce_scatter_plan(ctx, p, &plan)) return why;
    int sms = 0;  // the kernel's shared-memory attribute (the plan set the library's kernel's)
    return tmashmem::gemm::gemm_kernel_setup<RsCfg<Mode>>(row_linear_kernel<Mode>, &sms);
  }
  void run(cudaStream_t stream) const {
    CHECK_CUDA(tmashmem::fused::reduce_scatter_run(ctx, plan, stream, row_linear_kernel<Mode>));
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (!fused_example::start(&argc, &argv, "gemm_reduce_scatter")) return 2;
  int64_t dims[3];
  fused_example::shape_args(argc, argv, dims, 8192, 8192, 4096);
  const int64_t m = dims[0], n = dims[1], k = dims[2];
  const int me = tmashmem_my_pe(), n_pes = tmashmem_n_pes();
  const int64_t ms = m / n_pes;

  // This PE's operands (local), its shard of C and the workspaces (symmetric, zeroed once).
  const std::vector<Bf16> my_a = random_matrix(size_t(m) * k, 3000 + me);
  const std::vector<Bf16> my_b = random_matrix(size_t(n) * k, 4000 + me);
  Bf16 *a, *b;
  CHECK_CUDA(cudaMalloc(&a, my_a.size() * 2));
  CHECK_CUDA(cudaMalloc(&b, my_b.size() * 2));
  CHECK_CUDA(cudaMemcpy(a, my_a.data(), my_a.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, my_b.data(), my_b.size() * 2, cudaMemcpyHostToDevice));
  Bf16* c_shard = static_cast<Bf16*>(tmashmem_malloc(size_t(ms) * n * 2));
  const ReduceScatterMode modes[2] = {ReduceScatterMode::fast, ReduceScatterMode::deterministic};
  uint64_t* ws[2];
  for (int i = 0; i < 2; ++i)
    ws[i] = static_cast<uint64_t*>(tmashmem_calloc(
        tmashmem::fused::reduce_scatter_workspace_bytes(int(ms), int(n), n_pes, modes[i]), 1));
  if (!c_shard || !ws[0] || !ws[1]) {
    std::printf("[PE %d] allocation failed: %s\n", me, tmashmem_last_error());
    return 1;
  }
  RowLinear<ReduceScatterMode::fast> fast;
  RowLinear<ReduceScatterMode::deterministic> deterministic;
  for (int i = 0; i < 2; ++i) {
    tmashmem::fused::ReduceScatterProblem p{int(m), int(n), int(k), a, k, b, k, c_shard, n, ws[i]};
    p.mode = modes[i];
    if (const char* why = i == 0 ? fast.prepare(p) : deterministic.prepare(p)) {
      std::printf("[PE %d] %s\n", me, why);
      return 1;
    }
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto run = [&](int i) { i == 0 ? fast.run(stream) : deterministic.run(stream); };

  // Every PE's operands, regenerated from their seeds, for the host reference.
  std::vector<std::vector<Bf16>> all_a(n_pes), all_b(n_pes);
  for (int p = 0; p < n_pes; ++p) {
    all_a[p] = p == me ? my_a : random_matrix(size_t(m) * k, 3000 + p);
    all_b[p] = p == me ? my_b : random_matrix(size_t(n) * k, 4000 + p);
  }
  bool good = true;
  std::vector<Bf16> h(size_t(ms) * n), first(size_t(ms) * n);
  for (int i = 0; i < 2; ++i) {
    for (int rep = 0; rep < 2; ++rep) {
      run(i);
      CHECK_CUDA(cudaStreamSynchronize(stream));
      CHECK_CUDA(cudaMemcpy(h.data(), c_shard, h.size() * 2, cudaMemcpyDeviceToHost));
      if (i == 1 && rep == 1 && std::memcmp(h.data(), first.data(), h.size() * 2) != 0) {
        std::printf("[PE %d] deterministic mode: two runs differ\n", me);
        good = false;
      }
      first = h;
    }
    std::mt19937_64 pick(7 + me);
    for (int s = 0; s < 64; ++s) {
      const int64_t r = int64_t(pick() % uint64_t(ms)), col = int64_t(pick() % uint64_t(n));
      double ref = 0;
      for (int p = 0; p < n_pes; ++p)
        for (int64_t kk = 0; kk < k; ++kk)
          ref += double(__bfloat162float(all_a[p][size_t(me * ms + r) * k + kk])) *
                 double(__bfloat162float(all_b[p][size_t(col) * k + kk]));
      const double got = __bfloat162float(h[size_t(r) * n + col]);
      const double tol =
          2 * std::sqrt(double(k * n_pes)) / 256 + (n_pes + 1) * std::fabs(ref) / 256;
      if (std::fabs(got - ref) > tol) good = false;
    }
  }
  int mine = good, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  const std::vector<float> ms_mode =
      interleaved_median_ms(stream, 20, {[&] { run(0); }, [&] { run(1); }});
  if (me == 0) {
    const double flop = 2.0 * double(m) * n * k * n_pes;
    std::printf("gemm_reduce_scatter: C [%lld x %lld] = sum of %d products of K %lld each\n",
                (long long)m, (long long)n, n_pes, (long long)k);
    std::printf("  fast           %8.3f ms %8.1f job TF/s\n", ms_mode[0], flop / ms_mode[0] / 1e9);
    std::printf("  deterministic  %8.3f ms %8.1f job TF/s\n", ms_mode[1], flop / ms_mode[1] / 1e9);
    std::printf("gemm_reduce_scatter: %d PEs, %zu bytes per shard, %s\n", n_pes, size_t(ms) * n * 2,
                all ? "OK" : "FAILED");
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_TM(tmashmem_barrier_all());
  cudaFree(a), cudaFree(b);
  tmashmem_free(ws[1]), tmashmem_free(ws[0]), tmashmem_free(c_shard);
  tmashmem_finalize();
  MPI_Finalize();
  return all ? 0 : 1;
}
