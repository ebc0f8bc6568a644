// gemm_reduce_scatter: one kernel that multiplies and reduce-scatters (a tensor-parallel
// row-linear layer), through the on-stream call of tmashmem/fused.h.
//
// Every PE holds A_p [M, K_p] and B_p [N, K_p] (its slice of the reduction dimension). The
// result C = sum over PEs of A_p * B_p^T is scattered by rows: PE q keeps rows
// q * M/P .. (q + 1) * M/P - 1 in its c_shard (symmetric). Both modes run: FAST (each tile
// added straight into its owner's shard; the order of the additions varies) and
// DETERMINISTIC (fp32 partials added into the owner's staging in a fixed order and rounded
// once; bit-identical across runs, checked by running it twice). A sample of the shard is checked
// against a double-precision host reference. PE 0 prints the times (median of 20, every PE at
// once).
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
#include <vector>

#include "fused_example.h"
#include "tmashmem/tmashmem.h"

namespace {

using fused_example::median_ms;
using fused_example::random_matrix;
using Bf16 = __nv_bfloat16;

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
  const int modes[2] = {TMASHMEM_REDUCE_SCATTER_FAST, TMASHMEM_REDUCE_SCATTER_DETERMINISTIC};
  void* ws[2];
  for (int i = 0; i < 2; ++i)
    ws[i] = tmashmem_calloc(tmashmem_matmul_reduce_scatter_workspace_bytes(m, n, modes[i]), 1);
  if (!c_shard || !ws[0] || !ws[1]) {
    std::printf("[PE %d] allocation failed: %s\n", me, tmashmem_last_error());
    return 1;
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto run = [&](int i) {
    CHECK_TM(tmashmem_matmul_reduce_scatter_on_stream(a, b, c_shard, m, n, k, k, k, n, ws[i],
                                                      modes[i], stream));
  };

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

  float ms_mode[2];
  for (int i = 0; i < 2; ++i) ms_mode[i] = median_ms(stream, 20, [&] { run(i); });
  if (me == 0) {
    const double flop = 2.0 * double(m) * n * k * n_pes;
    std::printf("gemm_reduce_scatter: C [%lld x %lld] = sum of %d products of K %lld each\n",
                (long long)m, (long long)n, n_pes, (long long)k);
    std::printf("  fast           %8.3f ms %8.1f TFLOP/s\n", ms_mode[0], flop / ms_mode[0] / 1e9);
    std::printf("  deterministic  %8.3f ms %8.1f TFLOP/s\n", ms_mode[1], flop / ms_mode[1] / 1e9);
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
