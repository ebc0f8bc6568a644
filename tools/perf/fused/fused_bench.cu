// tmashmem-fused-bench: the all-gather GEMM kernel (tmashmem/device/fused) beside the same
// work without fusion, every PE running at once (PEs may share one GPU under MPS).
//
//   mpirun -np P tmashmem-fused-bench [reps] [shapes] [[rs] M N K ...]
// FUSED_BENCH_A=0: the copier sweep's variants do not return the gathered A.
// FUSED_BENCH_BATCH=N: each timing covers N launches back to back (time per launch).
// FUSED_BENCH_ROUNDS set: a line per round and variant, "round,<unix time>,<title>,<round>,
// <variant>,<ms of PE 0>,<ms of PE 1>,..." (round 0 and 1 are the warm-up).
// FUSED_BENCH_FLUSH set (not 0): 256 MiB written before each timing, so that no variant finds
// in L2 the operands the one before it left there (fused_timing.h).
// shapes: how many of each list; M N K triples replace the all-gather list and skip the
// reduce-scatter section (the copier sweep over other shapes); after `rs` they replace the
// reduce-scatter list (M x N x K_local) and skip the all-gather section.
//
// Per shape (M = total rows, N = this PE's columns, K): one check (fused C and gathered A
// equal the unfused ones bit for bit: same engine, same tile, same order of sums), then
// `reps` interleaved rounds; each round, for each variant: host barrier, time one launch
// with CUDA events. Printed: per variant the median over rounds of the slowest PE's time,
// and TFLOP/s of the whole job (2 M N K per PE).
//   fused, copy warps  the fused kernel, chunks copied by the GEMM CTAs' idle producer warps
//   fused, X copy SMs  the fused kernel, chunks copied by X dedicated CTAs (bulk copies)
//   fused default, A not kept  the copier chosen by shape, this PE's rows not copied into the
//                  gathered A (the on-stream call with a_gathered NULL)
//   gemm only       our GEMM on an already gathered A, every PE at once (no communication)
//   unfused         getmem_on_stream from every PE, barrier_all_on_stream, our GEMM
//   cublasLt only   cuBLASLt on the gathered A (every PE at once)
//   nccl + cublas   ncclAllGather then cuBLASLt: only when the PEs are on distinct GPUs
// The reduce-scatter section (C = sum_p A_p B_p^T with K_local columns of A per PE, PE q
// keeping rows of block q): the fused kernel in both modes; our GEMM of the local partial alone;
// unfused: our GEMM into a symmetric partial, barrier, every PE sums its rows from every PE's
// partial (peer loads, PE order), barrier; and, on distinct GPUs, cuBLASLt + ncclReduceScatter.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fused_example.h"
#include "fused_timing.h"
#include "gemm_reference.cuh"
#include "nccl_loader.h"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/fused/allgather_gemm_launch.cuh"
#include "tmashmem/device/fused/gemm_reduce_scatter_launch.cuh"
#include "tmashmem/device/gemm/launch.cuh"
#include "tmashmem/tmashmem.h"
#include "tools/perf/gpu_placement.h"

namespace {

using fused_bench::switches;
using fused_bench::time_and_print;
using fused_bench::Variant;

using Bf16 = __nv_bfloat16;
using Cfg = tmashmem::gemm::GemmConfig<256, 4, 1, Bf16>;

struct Shape {
  int m, n, k;  // m: rows of the gathered A or of C (all PEs); reduce-scatter: k per PE
};

__global__ void count_diff(const uint16_t* a, const uint16_t* b, size_t n, unsigned long long* d) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    mine += a[i] != b[i];
  if (mine) atomicAdd(d, mine);
}

unsigned long long differences(const void* a, const void* b, size_t elems) {
  unsigned long long* d;
  CHECK_CUDA(cudaMalloc(&d, 8));
  CHECK_CUDA(cudaMemset(d, 0, 8));
  count_diff<<<1024, 256>>>(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), elems,
                            d);
  unsigned long long h = 0;
  CHECK_CUDA(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  cudaFree(d);
  return h;
}

void bench_shape(const Shape& s, int reps, const tmashmem_ctx_t& ctx, bool distinct_gpus,
                 const nccl_dyn::Api& nccl, nccl_dyn::Comm comm) {
  const int me = ctx.my_pe, n_pes = ctx.n_pes;
  const int ms = s.m / n_pes;
  const int64_t m = int64_t(ms) * n_pes;
  Bf16* a_shard = static_cast<Bf16*>(tmashmem_malloc(size_t(ms) * s.k * 2));
  uint64_t* ws = static_cast<uint64_t*>(
      tmashmem_calloc(tmashmem::fused::allgather_gemm_workspace_bytes(ms, n_pes), 1));
  Bf16 *b, *g_fused, *g_ref, *c_fused, *c_ref;
  CHECK_CUDA(cudaMalloc(&b, size_t(s.n) * s.k * 2));
  CHECK_CUDA(cudaMalloc(&g_fused, size_t(m) * s.k * 2));
  CHECK_CUDA(cudaMalloc(&g_ref, size_t(m) * s.k * 2));
  CHECK_CUDA(cudaMalloc(&c_fused, size_t(m) * s.n * 2));
  CHECK_CUDA(cudaMalloc(&c_ref, size_t(m) * s.n * 2));
  CHECK_CUDA(gemm_ref::fill_uniform(a_shard, ms, s.k, s.k, 0x1234 + me));
  CHECK_CUDA(gemm_ref::fill_uniform(b, s.n, s.k, s.k, 0x5678 + me));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_TM(tmashmem_barrier_all());
  tmashmem_ctx_t c = ctx;
  CHECK_TM(tmashmem_device_ctx(&c));  // after the allocations
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::vector<Variant> variants;
  std::vector<int> comm_counts = {0, 1, 2, 4, 8, 16};
  std::vector<tmashmem::fused::AllgatherGemmPlan<Cfg>> plans(comm_counts.size());
  // The fused problem with copier `comm_ctas`, returning the gathered A or not.
  auto fused_problem = [&](int comm_ctas, bool copy_own) {
    tmashmem::fused::AllgatherGemmProblem fp{};
    fp.m_shard = ms, fp.n = s.n, fp.k = s.k, fp.a_shard = a_shard, fp.b = b, fp.ldb = s.k;
    fp.c = c_fused, fp.ldc = s.n, fp.a_gathered = g_fused, fp.workspace = ws;
    fp.comm_ctas = comm_ctas, fp.copy_own = copy_own;
    return fp;
  };
  // FUSED_BENCH_A=0: the copier sweep without returning the gathered A (as a_gathered NULL).
  const bool keep_a = switches().keep_a;
  const std::string kept = keep_a ? "" : ", A not kept";
  for (size_t i = 0; i < comm_counts.size(); ++i) {
    const tmashmem::fused::AllgatherGemmProblem fp = fused_problem(comm_counts[i], keep_a);
    if (const char* why = tmashmem::fused::allgather_gemm_plan(c, fp, &plans[i])) {
      if (me == 0) std::printf("  fused c=%d: %s\n", comm_counts[i], why);
      continue;
    }
    const std::string name =
        (comm_counts[i] == 0 ? std::string("fused, copy warps")
                             : "fused, " + std::to_string(comm_counts[i]) + " copy SMs") +
        kept;
    auto* plan = &plans[i];
    variants.push_back(
        {name, [=, &c] { CHECK_CUDA(tmashmem::fused::allgather_gemm_run(c, *plan, stream)); }, {}});
  }
  // The default copier without returning the gathered A (a_gathered NULL in the on-stream call:
  // this PE's rows are not copied).
  static tmashmem::fused::AllgatherGemmPlan<Cfg> no_a;
  {
    const tmashmem::fused::AllgatherGemmProblem fp =
        fused_problem(tmashmem::fused::kAllgatherCommByShape, false);
    if (const char* why = tmashmem::fused::allgather_gemm_plan(c, fp, &no_a)) {
      if (me == 0) std::printf("  fused, A not kept: %s\n", why);
    } else {
      variants.push_back(
          {"fused default, A not kept",
           [=, &c] { CHECK_CUDA(tmashmem::fused::allgather_gemm_run(c, no_a, stream)); },
           {}});
    }
  }
  tmashmem::gemm::GemmProblem gp{int(m), s.n, s.k, g_ref, s.k, b, s.k, c_ref, s.n};
  static tmashmem::gemm::GemmPlan<Cfg> gemm;
  if (const char* why = tmashmem::gemm::gemm_plan(gp, &gemm)) {
    std::printf("[PE %d] %s\n", me, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  auto run_gemm = [=] { CHECK_CUDA(tmashmem::gemm::gemm_run(gemm, stream)); };
  auto gather_copies = [=] {
    for (int i = 0; i < n_pes; ++i) {
      const int p = (me + i) % n_pes;
      CHECK_TM(tmashmem_getmem_on_stream(g_ref + size_t(p) * ms * s.k, a_shard,
                                         size_t(ms) * s.k * 2, p, stream));
    }
    CHECK_TM(tmashmem_barrier_all_on_stream(stream));
  };
  gemm_ref::LtGemm lt;
  const bool have_lt = lt.plan(int(m), s.n, s.k, s.k, s.k, s.n, false);
  variants.push_back({"gemm only", run_gemm, {}});
  variants.push_back({"unfused",
                      [=] {
                        gather_copies();
                        run_gemm();
                      },
                      {}});
  if (have_lt)
    variants.push_back({"cublasLt only", [&, stream] { lt.run(g_ref, b, c_ref, stream); }, {}});
  if (distinct_gpus && nccl.ok && comm != nullptr && have_lt)
    variants.push_back({"nccl + cublasLt",
                        [&, stream] {
                          nccl.all_gather(a_shard, g_ref, size_t(ms) * s.k, nccl_dyn::kBfloat16,
                                          comm, stream);
                          lt.run(g_ref, b, c_ref, stream);
                        },
                        {}});

  // Check once: fused (the first plan) against unfused.
  variants.front().run();
  gather_copies();
  run_gemm();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const unsigned long long dc = differences(c_fused, c_ref, size_t(m) * s.n);
  // Without A this PE's rows of g_fused stay unwritten: nothing to compare.
  const unsigned long long dg = keep_a ? differences(g_fused, g_ref, size_t(m) * s.k) : 0;
  int good = dc == 0 && dg == 0, all = 0;
  MPI_Allreduce(&good, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  const double flop = 2.0 * double(m) * s.n * s.k * n_pes;
  char title[160];
  std::snprintf(title, sizeof title, "allgather %lld x %d x %d", (long long)m, s.n, s.k);
  if (me == 0)
    std::printf(
        "\n%lld x %d x %d per PE (M x N_local x K), %d PEs, m_shard %d: check %s (C diff "
        "%llu, gathered %s on PE 0)\n",
        (long long)m, s.n, s.k, n_pes, ms, all ? "ok" : "FAILED", dc,
        keep_a ? ("diff " + std::to_string(dg)).c_str() : "not checked: A not kept");
  {  // the copier the planner picks by shape (tmashmem_allgather_matmul_on_stream, comm_sms 0)
    const tmashmem::fused::AllgatherGemmProblem fp =
        fused_problem(tmashmem::fused::kAllgatherCommByShape, true);
    tmashmem::fused::AllgatherGemmPlan<Cfg> plan{};
    const char* why = tmashmem::fused::allgather_gemm_plan(c, fp, &plan);
    const std::string copier = why ? std::string(why)
                               : plan.args.comm_ctas == 0
                                   ? std::string("copy warps")
                                   : std::to_string(plan.args.comm_ctas) + " copy SMs";
    if (me == 0)
      std::printf("  the default copier (tmashmem_allgather_matmul_on_stream, comm_sms 0): %s\n",
                  copier.c_str());
  }
  time_and_print(variants, reps, stream, flop, title);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_TM(tmashmem_barrier_all());
  cudaStreamDestroy(stream);
  cudaFree(b), cudaFree(g_fused), cudaFree(g_ref), cudaFree(c_fused), cudaFree(c_ref);
  tmashmem_free(ws);
  tmashmem_free(a_shard);
}

// c_shard[r][c] = sum over p of partial_p[q * ms + r][c] (peer loads, PE order).
__global__ void sum_rows(const __grid_constant__ tmashmem_ctx_t ctx, const Bf16* partial,
                         Bf16* c_shard, int ms, int n) {
  const size_t total = size_t(ms) * n;
  const Bf16* mine = partial + size_t(ctx.my_pe) * ms * n;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int p = 0; p < ctx.n_pes; ++p) sum += __bfloat162float(tmashmem::ptr(ctx, mine, p)[i]);
    c_shard[i] = __float2bfloat16(sum);
  }
}

void bench_reduce_scatter(const Shape& s, int reps, const tmashmem_ctx_t& ctx, bool distinct,
                          const nccl_dyn::Api& nccl, nccl_dyn::Comm comm) {
  using namespace tmashmem::fused;
  const int me = ctx.my_pe, n_pes = ctx.n_pes;
  const int ms = s.m / n_pes, m = ms * n_pes, k = s.k;  // k: this PE's slice of K
  Bf16 *a, *b;
  CHECK_CUDA(cudaMalloc(&a, size_t(m) * k * 2));
  CHECK_CUDA(cudaMalloc(&b, size_t(s.n) * k * 2));
  Bf16* c_shard = static_cast<Bf16*>(tmashmem_malloc(size_t(ms) * s.n * 2));
  Bf16* partial = static_cast<Bf16*>(tmashmem_malloc(size_t(m) * s.n * 2));
  uint64_t* ws_fast = static_cast<uint64_t*>(
      tmashmem_calloc(reduce_scatter_workspace_bytes(ms, s.n, n_pes, ReduceScatterMode::fast), 1));
  uint64_t* ws_det = static_cast<uint64_t*>(tmashmem_calloc(
      reduce_scatter_workspace_bytes(ms, s.n, n_pes, ReduceScatterMode::deterministic), 1));
  if (!c_shard || !partial || !ws_fast || !ws_det) {
    std::printf("[PE %d] reduce-scatter bench: allocation failed: %s\n", me, tmashmem_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK_CUDA(gemm_ref::fill_uniform(a, m, k, k, 0x4321 + me));
  CHECK_CUDA(gemm_ref::fill_uniform(b, s.n, k, k, 0x8765 + me));
  CHECK_CUDA(cudaDeviceSynchronize());
  tmashmem_ctx_t c;
  CHECK_TM(tmashmem_device_ctx(&c));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ReduceScatterProblem p{m, s.n, k, a, k, b, k, c_shard, s.n, ws_fast};
  static ReduceScatterPlan<ReduceScatterFastCfg, ReduceScatterMode::fast> fast;
  static ReduceScatterPlan<ReduceScatterDeterministicCfg, ReduceScatterMode::deterministic> det;
  const char* why = reduce_scatter_plan(c, p, &fast);
  p.workspace = ws_det;
  p.mode = ReduceScatterMode::deterministic;
  if (!why) why = reduce_scatter_plan(c, p, &det);
  if (why) {
    if (me == 0) std::printf("  reduce-scatter: %s\n", why);
    return;
  }
  tmashmem::gemm::GemmProblem gp{m, s.n, k, a, k, b, k, partial, s.n};
  static tmashmem::gemm::GemmPlan<Cfg> gemm;
  if (const char* w = tmashmem::gemm::gemm_plan(gp, &gemm)) {
    std::printf("[PE %d] %s\n", me, w);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  gemm_ref::LtGemm lt;
  const bool have_lt = lt.plan(m, s.n, k, k, k, s.n, false);
  std::vector<Variant> v;
  v.push_back({"fused fast", [&] { CHECK_CUDA(reduce_scatter_run(c, fast, stream)); }, {}});
  v.push_back({"fused deterministic", [&] { CHECK_CUDA(reduce_scatter_run(c, det, stream)); }, {}});
  v.push_back({"gemm only", [&] { CHECK_CUDA(tmashmem::gemm::gemm_run(gemm, stream)); }, {}});
  v.push_back({"unfused",
               [&] {
                 CHECK_CUDA(tmashmem::gemm::gemm_run(gemm, stream));
                 CHECK_TM(tmashmem_barrier_all_on_stream(stream));
                 sum_rows<<<264, 512, 0, stream>>>(c, partial, c_shard, ms, s.n);
                 CHECK_TM(tmashmem_barrier_all_on_stream(stream));
               },
               {}});
  if (distinct && nccl.ok && comm != nullptr && have_lt)
    v.push_back({"cublasLt + nccl",
                 [&] {
                   lt.run(a, b, partial, stream);
                   nccl.reduce_scatter(partial, c_shard, size_t(ms) * s.n, nccl_dyn::kBfloat16,
                                       nccl_dyn::kSum, comm, stream);
                 },
                 {}});
  // (Correctness of both modes is the business of tests/gpu/fused/test_reduce_scatter.cu.)
  const double flop = 2.0 * double(m) * s.n * k * n_pes;
  char title[160];
  std::snprintf(title, sizeof title, "reduce-scatter %d x %d x %d", m, s.n, k);
  if (me == 0)
    std::printf(
        "\nreduce-scatter %d x %d x %d (M x N x K_local; K %d in all), %d PEs, m_shard %d\n", m,
        s.n, k, k * n_pes, n_pes, ms);
  time_and_print(v, reps, stream, flop, title);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_TM(tmashmem_barrier_all());
  cudaStreamDestroy(stream);
  cudaFree(a), cudaFree(b);
  tmashmem_free(ws_det), tmashmem_free(ws_fast), tmashmem_free(partial), tmashmem_free(c_shard);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int n_shapes = argc > 2 ? std::atoi(argv[2]) : 4;
  CHECK_TM(tmashmem_init());
  CHECK_CUDA(cudaSetDevice(tmashmem_device()));
  tmashmem_ctx_t ctx;
  CHECK_TM(tmashmem_device_ctx(&ctx));
  // Distinct GPUs by bus id, not by the ctx's ONE_GPU flag: 4 PEs on 2 GPUs are not on one
  // GPU, yet NCCL would refuse them.
  const bool distinct = perf::ranks_on_distinct_gpus() && ctx.n_pes > 1;
  nccl_dyn::Api nccl;
  nccl_dyn::Comm comm = nullptr;
  if (distinct) {
    nccl = nccl_dyn::load();
    if (nccl.ok) {
      nccl_dyn::UniqueId id{};
      if (ctx.my_pe == 0) nccl.get_unique_id(&id);
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
      if (nccl.comm_init_rank(&comm, ctx.n_pes, id, ctx.my_pe) != 0) comm = nullptr;
    }
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, tmashmem_device()));
  if (ctx.my_pe == 0)
    std::printf("tmashmem-fused-bench: %d PEs on %s (%s, %d SMs), %d rounds%s; NCCL baseline: %s\n",
                ctx.n_pes,
                distinct        ? "distinct GPUs"
                : ctx.n_pes > 1 ? "shared GPUs"
                                : "one GPU",
                prop.name, prop.multiProcessorCount, reps,
                switches().flush ? ", L2 flushed before each" : "",
                ctx.n_pes == 1 ? "not run (one PE)"
                : !distinct    ? "not run (PEs share a GPU; NCCL refuses that)"
                : comm         ? "yes"
                               : "not run (libnccl not found or init failed)");
  std::vector<Shape> shapes = {
      {8192, 3584, 8192}, {8192, 8192, 4096}, {4096, 4096, 4096}, {16384, 1024, 4096}};
  std::vector<Shape> rs_shapes = {
      {8192, 8192, 8192}, {8192, 8192, 3584}, {4096, 4096, 4096}, {512, 8192, 8192}};
  if (argc > 3) {
    const bool rs = std::strcmp(argv[3], "rs") == 0;
    std::vector<Shape>& given = rs ? rs_shapes : shapes;
    shapes.clear();
    rs_shapes.clear();
    for (int i = rs ? 4 : 3; i + 2 < argc; i += 3)
      given.push_back({std::atoi(argv[i]), std::atoi(argv[i + 1]), std::atoi(argv[i + 2])});
  }
  for (int i = 0; i < n_shapes && i < int(shapes.size()); ++i)
    bench_shape(shapes[i], reps, ctx, distinct, nccl, comm);
  for (int i = 0; i < n_shapes && i < int(rs_shapes.size()); ++i)
    bench_reduce_scatter(rs_shapes[i], reps, ctx, distinct, nccl, comm);
  if (comm) nccl.comm_destroy(comm);
  CHECK_TM(tmashmem_finalize());
  MPI_Finalize();
  return 0;
}
