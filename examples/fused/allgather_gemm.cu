// allgather_gemm: one kernel that all-gathers A and multiplies (a tensor-parallel
// column-linear layer), beside the same work done in two steps.
//
// Every PE holds a shard A_p [m_shard, K] of A in the symmetric heap and its own B [N, K].
// The result on every PE is C = all_gather(A) * B^T, [n_pes * m_shard, N]. Three ways:
//   fused    tmashmem::fused::allgather_gemm_run: the GEMM starts on the PE's own rows while
//            the GEMM CTAs' idle producer warps pull the peers' shards chunk by chunk, each
//            GEMM tile waiting only for its rows;
//   unfused  tmashmem_getmem_on_stream from every PE into the gathered A, then the GEMM;
//   GEMM     the GEMM alone on an already gathered A (no communication).
// The fused C and gathered A must equal the unfused ones bit for bit (the same GEMM engine
// and tile shape, so the same sums in the same order), and a sample of C is checked against
// a double-precision host reference. PE 0 prints the times (every PE running at once; the
// median of 20 rounds that run the three in turn, each the slowest PE's time) and the job's
// rate (every PE's GEMM).
//
// Run:   mpirun -np 2 ./allgather_gemm [m_shard N K]   (PEs may share a GPU: start MPS)
// Prints "allgather_gemm: N PEs, ... OK" or what went wrong; exits 2 without a CUDA device.
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
#include "tmashmem/device/fused/allgather_gemm_launch.cuh"
#include "tmashmem/device/gemm/launch.cuh"
#include "tmashmem/tmashmem.h"

namespace {

using fused_example::interleaved_median_ms;
using fused_example::random_matrix;
using Bf16 = __nv_bfloat16;
using Cfg = tmashmem::gemm::GemmConfig<256, 4, 1, Bf16>;  // 128 x 256 tiles, 4 stages

}  // namespace

int main(int argc, char** argv) {
  if (!fused_example::start(&argc, &argv, "allgather_gemm")) return 2;
  int64_t dims[3];
  fused_example::shape_args(argc, argv, dims, 4096, 3584, 8192);
  const int m_shard = int(dims[0]), n = int(dims[1]), k = int(dims[2]);
  const int me = tmashmem_my_pe(), n_pes = tmashmem_n_pes();
  const int64_t m = int64_t(m_shard) * n_pes;

  // Symmetric: the shard (peers read it) and the fused kernel's flags (zeroed once).
  Bf16* a_shard = static_cast<Bf16*>(tmashmem_malloc(size_t(m_shard) * k * sizeof(Bf16)));
  const size_t ws_bytes = tmashmem::fused::allgather_gemm_workspace_bytes(m_shard, n_pes);
  uint64_t* workspace = static_cast<uint64_t*>(tmashmem_calloc(ws_bytes, 1));
  // Local: B, the gathered A and C of both ways.
  Bf16 *b, *gathered, *gathered_ref, *c, *c_ref;
  CHECK_CUDA(cudaMalloc(&b, size_t(n) * k * sizeof(Bf16)));
  CHECK_CUDA(cudaMalloc(&gathered, size_t(m) * k * sizeof(Bf16)));
  CHECK_CUDA(cudaMalloc(&gathered_ref, size_t(m) * k * sizeof(Bf16)));
  CHECK_CUDA(cudaMalloc(&c, size_t(m) * n * sizeof(Bf16)));
  CHECK_CUDA(cudaMalloc(&c_ref, size_t(m) * n * sizeof(Bf16)));
  if (!a_shard || !workspace) {
    std::printf("[PE %d] tmashmem_malloc failed: %s\n", me, tmashmem_last_error());
    return 1;
  }
  const std::vector<Bf16> my_shard = random_matrix(size_t(m_shard) * k, 1000 + me);
  const std::vector<Bf16> my_b = random_matrix(size_t(n) * k, 2000 + me);
  CHECK_CUDA(cudaMemcpy(a_shard, my_shard.data(), my_shard.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, my_b.data(), my_b.size() * 2, cudaMemcpyHostToDevice));
  CHECK_TM(tmashmem_barrier_all());  // every shard is in place before anyone reads it

  tmashmem_ctx_t ctx;
  CHECK_TM(tmashmem_device_ctx(&ctx));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // The fused kernel: plan once (tensor maps, grid, communication CTAs), launch many times.
  tmashmem::fused::AllgatherGemmProblem fp{};
  fp.m_shard = m_shard, fp.n = n, fp.k = k;
  fp.a_shard = a_shard, fp.b = b, fp.ldb = k, fp.c = c, fp.ldc = n;
  fp.a_gathered = gathered, fp.workspace = workspace;
  tmashmem::fused::AllgatherGemmPlan<Cfg> fused;
  if (const char* why = tmashmem::fused::allgather_gemm_plan(ctx, fp, &fused)) {
    std::printf("[PE %d] %s\n", me, why);
    return 1;
  }
  auto run_fused = [&] { CHECK_CUDA(tmashmem::fused::allgather_gemm_run(ctx, fused, stream)); };

  // Unfused: copy every PE's shard into the gathered A (the copy engine through the peer
  // mappings), then the GEMM on all of it.
  tmashmem::gemm::GemmProblem gp{int(m), n, k, gathered_ref, k, b, k, c_ref, n};
  tmashmem::gemm::GemmPlan<Cfg> gemm;
  if (const char* why = tmashmem::gemm::gemm_plan(gp, &gemm)) {
    std::printf("[PE %d] %s\n", me, why);
    return 1;
  }
  auto run_gemm = [&] { CHECK_CUDA(tmashmem::gemm::gemm_run(gemm, stream)); };
  auto run_unfused = [&] {
    for (int i = 0; i < n_pes; ++i) {
      const int p = (me + i) % n_pes;
      CHECK_TM(tmashmem_getmem_on_stream(gathered_ref + size_t(p) * m_shard * k, a_shard,
                                         size_t(m_shard) * k * sizeof(Bf16), p, stream));
    }
    // The next call may overwrite a shard only when every PE has copied it.
    CHECK_TM(tmashmem_barrier_all_on_stream(stream));
    run_gemm();
  };

  run_fused();
  run_unfused();
  CHECK_CUDA(cudaStreamSynchronize(stream));

  // Check: fused == unfused bit for bit, and a sample of C against the host.
  std::vector<Bf16> h_c(size_t(m) * n), h_cref(size_t(m) * n), h_g(size_t(m) * k),
      h_gref(size_t(m) * k);
  CHECK_CUDA(cudaMemcpy(h_c.data(), c, h_c.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_cref.data(), c_ref, h_cref.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_g.data(), gathered, h_g.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_gref.data(), gathered_ref, h_gref.size() * 2, cudaMemcpyDeviceToHost));
  size_t c_diff = 0, g_diff = 0, sample_bad = 0;
  for (size_t i = 0; i < h_c.size(); ++i) c_diff += std::memcmp(&h_c[i], &h_cref[i], 2) != 0;
  for (size_t i = 0; i < h_g.size(); ++i) g_diff += std::memcmp(&h_g[i], &h_gref[i], 2) != 0;
  std::vector<std::vector<Bf16>> shards(n_pes);  // every PE's shard, regenerated from its seed
  for (int p = 0; p < n_pes; ++p)
    shards[p] = p == me ? my_shard : random_matrix(size_t(m_shard) * k, 1000 + p);
  std::mt19937_64 pick(42 + me);
  for (int s = 0; s < 64; ++s) {
    const int64_t row = int64_t(pick() % uint64_t(m)), col = int64_t(pick() % uint64_t(n));
    const std::vector<Bf16>& shard = shards[size_t(row / m_shard)];
    double ref = 0;
    for (int kk = 0; kk < k; ++kk)
      ref += double(__bfloat162float(shard[size_t(row % m_shard) * k + kk])) *
             double(__bfloat162float(my_b[size_t(col) * k + kk]));
    const double got = __bfloat162float(h_c[size_t(row) * n + col]);
    sample_bad += std::fabs(got - ref) > std::sqrt(double(k)) / 256.0 + std::fabs(ref) / 256.0;
  }
  int mine = c_diff == 0 && g_diff == 0 && sample_bad == 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!mine)
    std::printf("[PE %d] C differs in %zu elements, gathered A in %zu, %zu of 64 samples off\n", me,
                c_diff, g_diff, sample_bad);

  const int reps = 20;
  const std::vector<float> t =
      interleaved_median_ms(stream, reps, {run_fused, run_unfused, run_gemm});
  const float t_fused = t[0], t_unfused = t[1], t_gemm = t[2];
  const double flop = 2.0 * double(m) * n * k * n_pes;  // every PE's GEMM: the job's rate
  if (me == 0) {
    std::printf(
        "allgather_gemm: %d PEs, C [%lld x %d] = all_gather(A [%d x %d per PE]) * B^T "
        "[%d x %d]; %d CTAs per PE, the idle producer warps of each copy A\n",
        n_pes, (long long)m, n, m_shard, k, n, k, fused.grid);
    std::printf("  %-34s %9s %9s\n", "what (every PE at once)", "ms", "job TF/s");
    std::printf("  %-34s %9.3f %9.1f\n", "fused all-gather + GEMM", t_fused, flop / t_fused / 1e9);
    std::printf("  %-34s %9.3f %9.1f\n", "unfused: getmem x P, barrier, GEMM", t_unfused,
                flop / t_unfused / 1e9);
    std::printf("  %-34s %9.3f %9.1f\n", "GEMM alone (A already gathered)", t_gemm,
                flop / t_gemm / 1e9);
    std::printf("allgather_gemm: %d PEs, %zu bytes gathered per PE, %s\n", n_pes,
                size_t(m) * k * sizeof(Bf16), all ? "OK" : "FAILED");
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_TM(tmashmem_barrier_all());
  cudaFree(b), cudaFree(gathered), cudaFree(gathered_ref), cudaFree(c), cudaFree(c_ref);
  tmashmem_free(workspace);
  tmashmem_free(a_shard);
  tmashmem_finalize();
  MPI_Finalize();
  return all ? 0 : 1;
}
