// tmashmem-gemm-bench: the sm_90a GEMM (tmashmem/device/gemm) beside cuBLASLt on the same
// shapes and the same random bf16 data, C = A * B^T (A [M, K], B [N, K], C [M, N] bf16).
// Per shape and kernel: warm-up launches, then `reps` launches timed one by one with CUDA
// events; best and median TFLOP/s (2 M N K / time). cuBLAS is timed before and after our
// variants (its spread shows the noise). Every variant's result is checked against the
// cuBLAS fp32 result element by element (tolerance as in tests/gpu/gemm/test_gemm.cu).
//
//   tmashmem-gemm-bench [reps]          (default 30)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gemm_reference.cuh"
#include "tmashmem/device/gemm/launch.cuh"

namespace {

using tmashmem::gemm::GemmConfig;
using Bf16 = __nv_bfloat16;

#define BENCH_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "line %d: %s failed: %s\n", __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

struct Timing {
  double best_ms = 0, median_ms = 0;
};

Timing time_launches(const std::function<bool()>& launch, int reps) {
  for (int i = 0; i < 5; ++i)
    if (!launch()) return {};
  BENCH_CUDA(cudaDeviceSynchronize());
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) BENCH_CUDA(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    BENCH_CUDA(cudaEventRecord(ev[2 * i]));
    if (!launch()) return {};
    BENCH_CUDA(cudaEventRecord(ev[2 * i + 1]));
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  std::vector<double> ms(reps);
  for (int i = 0; i < reps; ++i) {
    float t = 0;
    BENCH_CUDA(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]));
    ms[i] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[reps / 2]};
}

struct Shape {
  int m, n, k;
};

struct Row {
  std::string kernel;
  Timing t;
  bool checked = true;
};

struct Data {
  Shape s;
  Bf16 *a, *b, *c;
  float* ref;
  gemm_ref::CheckCounts* counts;
};

// Elements of c outside the tolerance against ref (the cuBLAS fp32 result).
unsigned long long count_wrong(const Data& d) {
  BENCH_CUDA(cudaMemset(d.counts, 0, sizeof(gemm_ref::CheckCounts)));
  const float tol_abs = std::sqrt(static_cast<float>(d.s.k)) / 256.0f;
  gemm_ref::check_kernel<Bf16, uint16_t><<<2048, 256>>>(d.c, 0, d.s.m, d.s.n, d.s.n, d.ref, tol_abs,
                                                        1.0f / 256.0f, uint16_t(0), d.counts);
  BENCH_CUDA(cudaGetLastError());
  gemm_ref::CheckCounts h{};
  BENCH_CUDA(cudaMemcpy(&h, d.counts, sizeof h, cudaMemcpyDeviceToHost));
  return h.wrong;
}

template <class Cfg>
Row run_ours(const char* name, const Data& d, int group_rows, int reps) {
  tmashmem::gemm::GemmProblem p{d.s.m, d.s.n, d.s.k, d.a, d.s.k, d.b, d.s.k, d.c, d.s.n};
  tmashmem::gemm::GemmPlan<Cfg> plan;
  Row row{std::string(name) + " g" + std::to_string(group_rows), {}, false};
  if (const char* why = tmashmem::gemm::gemm_plan(p, &plan, group_rows)) {
    std::printf("  %s: %s\n", name, why);
    return row;
  }
  BENCH_CUDA(cudaMemset(d.c, 0xFF, size_t(d.s.m) * d.s.n * sizeof(Bf16)));
  row.t = time_launches([&] { return tmashmem::gemm::gemm_run(plan, 0) == cudaSuccess; }, reps);
  BENCH_CUDA(cudaGetLastError());
  const unsigned long long wrong = count_wrong(d);
  row.checked = wrong == 0;
  if (wrong) std::printf("  %s: %llu elements wrong\n", row.kernel.c_str(), wrong);
  return row;
}

Row run_cublas(const char* name, gemm_ref::LtGemm& lt, const Data& d, int reps) {
  Row row{name, {}, true};
  row.t = time_launches([&] { return lt.run(d.a, d.b, d.c) == CUBLAS_STATUS_SUCCESS; }, reps);
  return row;
}

double tflops(const Shape& s, double ms) {
  return ms > 0 ? 2.0 * s.m * double(s.n) * s.k / (ms * 1e-3) / 1e12 : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 30;
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MiB; reps %d (best / median ms of single launches)\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, reps);

  const std::vector<Shape> shapes = {{8192, 8192, 8192}, {8192, 3584, 8192}, {8192, 8192, 3584},
                                     {8192, 1024, 8192}, {4096, 4096, 4096}, {2048, 3584, 8192}};
  struct Summary {
    Shape s;
    Row cublas, ours;
  };
  std::vector<Summary> summary;
  for (const Shape& s : shapes) {
    Data d{s, nullptr, nullptr, nullptr, nullptr, nullptr};
    BENCH_CUDA(cudaMalloc(&d.a, size_t(s.m) * s.k * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.b, size_t(s.n) * s.k * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.c, size_t(s.m) * s.n * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.ref, size_t(s.m) * s.n * sizeof(float)));
    BENCH_CUDA(cudaMalloc(&d.counts, sizeof(gemm_ref::CheckCounts)));
    BENCH_CUDA(gemm_ref::fill_uniform(d.a, s.m, s.k, s.k, 0x1234 + s.m * 7 + s.k));
    BENCH_CUDA(gemm_ref::fill_uniform(d.b, s.n, s.k, s.k, 0x5678 + s.n * 13 + s.k));
    gemm_ref::LtGemm ref_lt, lt;
    if (!ref_lt.plan(s.m, s.n, s.k, s.k, s.k, s.n, true) ||
        ref_lt.run(d.a, d.b, d.ref) != CUBLAS_STATUS_SUCCESS ||
        !lt.plan(s.m, s.n, s.k, s.k, s.k, s.n, false)) {
      std::printf("cuBLASLt failed for %d x %d x %d\n", s.m, s.n, s.k);
      return 2;
    }
    std::vector<Row> rows;
    rows.push_back(run_cublas("cublasLt", lt, d, reps));
    rows.push_back(run_ours<GemmConfig<256, 4, 1, Bf16>>("128x256 s4", d, 8, reps));
    rows.push_back(run_ours<GemmConfig<256, 4, 1, Bf16>>("128x256 s4", d, 16, reps));
    rows.push_back(run_ours<GemmConfig<256, 4, 2, Bf16>>("128x256 s4 c2", d, 4, reps));
    rows.push_back(run_ours<GemmConfig<256, 4, 2, Bf16>>("128x256 s4 c2", d, 8, reps));
    rows.push_back(run_ours<GemmConfig<128, 6, 1, Bf16>>("128x128 s6", d, 8, reps));
    rows.push_back(run_cublas("cublasLt again", lt, d, reps));

    const double ref_ms = std::min(rows.front().t.median_ms, rows.back().t.median_ms);
    std::printf("\n%d x %d x %d (M x N x K)\n", s.m, s.n, s.k);
    std::printf("  %-22s %9s %9s %9s %9s %7s %s\n", "kernel", "best ms", "med ms", "best TF",
                "med TF", "ratio", "check");
    Summary sum{s, rows.front(), {}};
    if (rows.back().t.median_ms < sum.cublas.t.median_ms && rows.back().t.median_ms > 0)
      sum.cublas = rows.back();
    for (const Row& r : rows) {
      std::printf("  %-22s %9.3f %9.3f %9.1f %9.1f %7.3f %s\n", r.kernel.c_str(), r.t.best_ms,
                  r.t.median_ms, tflops(s, r.t.best_ms), tflops(s, r.t.median_ms),
                  r.t.median_ms > 0 ? ref_ms / r.t.median_ms : 0.0, r.checked ? "ok" : "WRONG");
      if (r.kernel.rfind("cublas", 0) != 0 && r.checked && r.t.median_ms > 0 &&
          (sum.ours.t.median_ms == 0 || r.t.median_ms < sum.ours.t.median_ms))
        sum.ours = r;
    }
    summary.push_back(sum);
    cudaFree(d.a), cudaFree(d.b), cudaFree(d.c), cudaFree(d.ref), cudaFree(d.counts);
  }

  std::printf("\nsummary (median TFLOP/s; cuBLAS: the better of its two runs)\n");
  std::printf("| M x N x K | cuBLASLt | ours (best variant) | variant | ours / cuBLAS |\n");
  std::printf("|---|---|---|---|---|\n");
  bool all_checked = true;
  for (const Summary& x : summary) {
    const double c = tflops(x.s, x.cublas.t.median_ms), o = tflops(x.s, x.ours.t.median_ms);
    all_checked &= x.ours.t.median_ms > 0;
    std::printf("| %d x %d x %d | %.1f | %.1f | %s | %.3f |\n", x.s.m, x.s.n, x.s.k, c, o,
                x.ours.kernel.c_str(), c > 0 ? o / c : 0.0);
  }
  return all_checked ? 0 : 1;
}
