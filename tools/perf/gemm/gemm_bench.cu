// tmashmem-gemm-bench: the sm_90a GEMM (tmashmem/device/gemm) beside cuBLASLt on the same
// shapes and the same random bf16 data, C = A * B^T (A [M, K], B [N, K], C [M, N] bf16), or
// with `kn` C = A * B, B given as [K, N] (both libraries read that layout directly).
// Per shape and kernel: warm-up launches, then `reps` launches timed one by one with CUDA
// events, the kernels interleaved round by round (so that clocks, which fall as the card
// reaches its power limit, affect all alike); best and median TFLOP/s (2 M N K / time).
// Every variant's result is checked against the cuBLAS fp32 result element by element
// (tolerance as in tests/gpu/gemm/test_gemm.cu) before it is timed.
//
//   tmashmem-gemm-bench [rounds [shapes [kn]]]    (default 40 rounds, all 6 shapes, B [N, K])
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gemm_reference.cuh"
#include "tmashmem/device/gemm/launch.cuh"

namespace {

using tmashmem::gemm::BMajor;
using tmashmem::gemm::EpilogueOp;
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

struct Shape {
  int m, n, k;
};

struct Data {
  Shape s;
  Bf16 *a, *b, *c;
  float* ref;
  gemm_ref::CheckCounts* counts;
};

// One kernel under test: its launch, whether its result passed the check, its times.
struct Kernel {
  std::string name;
  std::function<bool()> launch;
  bool ours = false;
  bool checked = true;
  double wave_efficiency = 1.0;  // tiles / tile slots of the persistent grid (ours)
  std::vector<double> ms;
  double best() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
  double median() const {
    if (ms.empty()) return 0;
    std::vector<double> v = ms;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

// Elements of c outside the tolerance against ref (the cuBLAS fp32 result).
unsigned long long count_wrong(const Data& d) {
  BENCH_CUDA(cudaMemset(d.counts, 0, sizeof(gemm_ref::CheckCounts)));
  const float tol_abs = std::sqrt(static_cast<float>(d.s.k)) / 256.0f;
  gemm_ref::check_kernel<Bf16, uint16_t><<<2048, 256>>>(
      d.c, 0, d.s.m, d.s.n, d.s.n, d.ref, nullptr, tol_abs, 1.0f / 256.0f, uint16_t(0), d.counts);
  BENCH_CUDA(cudaGetLastError());
  gemm_ref::CheckCounts h{};
  BENCH_CUDA(cudaMemcpy(&h, d.counts, sizeof h, cudaMemcpyDeviceToHost));
  return h.wrong;
}

// Plans variant Cfg, runs it once on poisoned C and checks the result.
template <class Cfg>
Kernel our_kernel(const char* name, const Data& d, int group_rows) {
  Kernel k;
  k.name = std::string(name) + " g" + std::to_string(group_rows);
  k.ours = true;
  const int64_t ldb = Cfg::kBMajor == BMajor::n ? d.s.n : d.s.k;
  tmashmem::gemm::GemmProblem p{d.s.m, d.s.n, d.s.k, d.a, d.s.k, d.b, ldb, d.c, d.s.n};
  auto plan = std::make_shared<tmashmem::gemm::GemmPlan<Cfg>>();
  if (const char* why = tmashmem::gemm::gemm_plan(p, plan.get(), group_rows)) {
    std::printf("  %s: %s\n", k.name.c_str(), why);
    k.checked = false;
    return k;
  }
  k.launch = [plan] { return tmashmem::gemm::gemm_run(*plan, 0) == cudaSuccess; };
  k.wave_efficiency = tmashmem::gemm::gemm_wave_efficiency(*plan);
  BENCH_CUDA(cudaMemset(d.c, 0xFF, size_t(d.s.m) * d.s.n * sizeof(Bf16)));
  k.checked = k.launch();
  BENCH_CUDA(cudaDeviceSynchronize());
  const unsigned long long wrong = count_wrong(d);
  if (wrong) std::printf("  %s: %llu elements wrong\n", k.name.c_str(), wrong);
  k.checked = k.checked && wrong == 0;
  return k;
}

// Warm-up (`warmup_ms` of every kernel in turn), then `reps` rounds; each round launches
// every kernel once, timed alone with events, so all kernels see the same clocks and
// temperature on average.
void time_interleaved(std::vector<Kernel>& ks, int reps, double warmup_ms) {
  cudaEvent_t e0, e1;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  for (Kernel& k : ks) {
    if (!k.launch) continue;
    float t = 0;
    BENCH_CUDA(cudaEventRecord(e0));
    int n = 0;
    do {
      if (!k.launch()) std::exit(2);
      ++n;
      BENCH_CUDA(cudaEventRecord(e1));
      BENCH_CUDA(cudaEventSynchronize(e1));
      BENCH_CUDA(cudaEventElapsedTime(&t, e0, e1));
    } while (t < warmup_ms && n < 10000);
  }
  std::vector<cudaEvent_t> ev(2 * reps * ks.size());
  for (auto& e : ev) BENCH_CUDA(cudaEventCreate(&e));
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < ks.size(); ++i) {
      if (!ks[i].launch) continue;
      BENCH_CUDA(cudaEventRecord(ev[2 * (r * ks.size() + i)]));
      if (!ks[i].launch()) std::exit(2);
      BENCH_CUDA(cudaEventRecord(ev[2 * (r * ks.size() + i) + 1]));
    }
  BENCH_CUDA(cudaDeviceSynchronize());
  BENCH_CUDA(cudaGetLastError());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < ks.size(); ++i) {
      if (!ks[i].launch) continue;
      float t = 0;
      BENCH_CUDA(
          cudaEventElapsedTime(&t, ev[2 * (r * ks.size() + i)], ev[2 * (r * ks.size() + i) + 1]));
      ks[i].ms.push_back(t);
    }
  for (auto& e : ev) cudaEventDestroy(e);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

// The variants timed beside cuBLAS, B stored as L says (224-wide tiles only with B [N, K]:
// B [K, N] is loaded in boxes of 64 n).
template <BMajor L>
void add_variants(std::vector<Kernel>& ks, const Data& d) {
  ks.push_back(our_kernel<GemmConfig<256, 4, 1, Bf16, EpilogueOp::store, L>>("128x256 s4", d, 8));
  ks.push_back(our_kernel<GemmConfig<256, 4, 1, Bf16, EpilogueOp::store, L>>("128x256 s4", d, 16));
  ks.push_back(
      our_kernel<GemmConfig<256, 4, 2, Bf16, EpilogueOp::store, L>>("128x256 s4 c2", d, 4));
  ks.push_back(
      our_kernel<GemmConfig<256, 4, 2, Bf16, EpilogueOp::store, L>>("128x256 s4 c2", d, 8));
  if constexpr (L == BMajor::k) {
    ks.push_back(our_kernel<GemmConfig<224, 4, 1, Bf16>>("128x224 s4", d, 8));
    ks.push_back(our_kernel<GemmConfig<224, 4, 1, Bf16>>("128x224 s4", d, 16));
    ks.push_back(our_kernel<GemmConfig<224, 4, 2, Bf16>>("128x224 s4 c2", d, 8));
  } else {
    ks.push_back(our_kernel<GemmConfig<192, 4, 1, Bf16, EpilogueOp::store, L>>("128x192 s4", d, 8));
    ks.push_back(
        our_kernel<GemmConfig<128, 6, 2, Bf16, EpilogueOp::store, L>>("128x128 s6 c2", d, 8));
  }
}

double tflops(const Shape& s, double ms) {
  return ms > 0 ? 2.0 * s.m * double(s.n) * s.k / (ms * 1e-3) / 1e12 : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 40;
  const bool kn = argc > 3 && std::strcmp(argv[3], "kn") == 0;
  if (argc > 3 && !kn) {
    std::fprintf(stderr, "third argument: 'kn' (B given as [K, N]) or nothing, not '%s'\n",
                 argv[3]);
    return 2;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "device: %s, %d SMs, L2 %d MiB; %d interleaved rounds after 100 ms warm-up per "
      "kernel (best / median of single launches); B given as %s\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, reps, kn ? "[K, N]" : "[N, K]");

  std::vector<Shape> shapes = {{8192, 8192, 8192}, {8192, 3584, 8192}, {8192, 8192, 3584},
                               {8192, 1024, 8192}, {4096, 4096, 4096}, {2048, 3584, 8192}};
  if (argc > 2) shapes.resize(std::min(shapes.size(), size_t(std::max(1, std::atoi(argv[2])))));
  struct Summary {
    Shape s;
    double cublas_med, cublas_best, ours_med, ours_best;
    std::string variant;
  };
  std::vector<Summary> summary;
  bool all_checked = true;
  for (const Shape& s : shapes) {
    Data d{s, nullptr, nullptr, nullptr, nullptr, nullptr};
    BENCH_CUDA(cudaMalloc(&d.a, size_t(s.m) * s.k * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.b, size_t(s.n) * s.k * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.c, size_t(s.m) * s.n * sizeof(Bf16)));
    BENCH_CUDA(cudaMalloc(&d.ref, size_t(s.m) * s.n * sizeof(float)));
    BENCH_CUDA(cudaMalloc(&d.counts, sizeof(gemm_ref::CheckCounts)));
    BENCH_CUDA(gemm_ref::fill_uniform(d.a, s.m, s.k, s.k, 0x1234 + s.m * 7 + s.k));
    const int ldb = kn ? s.n : s.k;
    BENCH_CUDA(
        gemm_ref::fill_uniform(d.b, kn ? s.k : s.n, kn ? s.n : s.k, ldb, 0x5678 + s.n * 13 + s.k));
    gemm_ref::LtGemm ref_lt, lt;
    if (!ref_lt.plan(s.m, s.n, s.k, s.k, ldb, s.n, true, kn) ||
        ref_lt.run(d.a, d.b, d.ref) != CUBLAS_STATUS_SUCCESS ||
        !lt.plan(s.m, s.n, s.k, s.k, ldb, s.n, false, kn)) {
      std::printf("cuBLASLt failed for %d x %d x %d\n", s.m, s.n, s.k);
      return 2;
    }
    std::vector<Kernel> ks;
    Kernel cublas;
    cublas.name = "cublasLt";
    cublas.launch = [&] { return lt.run(d.a, d.b, d.c) == CUBLAS_STATUS_SUCCESS; };
    ks.push_back(cublas);
    if (kn)
      add_variants<BMajor::n>(ks, d);
    else
      add_variants<BMajor::k>(ks, d);
    time_interleaved(ks, reps, 100.0);

    std::printf("\n%d x %d x %d (M x N x K)\n", s.m, s.n, s.k);
    std::printf("  %-22s %9s %9s %9s %9s %7s %6s %s\n", "kernel", "best ms", "med ms", "best TF",
                "med TF", "ratio", "waves", "check");
    const double ref_ms = ks.front().median();
    Summary sum{s, ref_ms, ks.front().best(), 0, 0, ""};
    for (const Kernel& k : ks) {
      std::printf("  %-22s %9.3f %9.3f %9.1f %9.1f %7.3f %6.3f %s\n", k.name.c_str(), k.best(),
                  k.median(), tflops(s, k.best()), tflops(s, k.median()),
                  k.median() > 0 ? ref_ms / k.median() : 0.0, k.wave_efficiency,
                  k.checked ? "ok" : "WRONG");
      all_checked &= k.checked;
      if (k.ours && k.checked && k.median() > 0 &&
          (sum.ours_med == 0 || k.median() < sum.ours_med)) {
        sum.ours_med = k.median();
        sum.ours_best = k.best();
        sum.variant = k.name;
      }
    }
    summary.push_back(sum);
    cudaFree(d.a), cudaFree(d.b), cudaFree(d.c), cudaFree(d.ref), cudaFree(d.counts);
  }

  std::printf("\nsummary: TFLOP/s, median (best) of %d interleaved launches\n", reps);
  std::printf(
      "| M x N x K | cuBLASLt | ours (fastest variant) | variant | ours / cuBLAS (median) |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Summary& x : summary) {
    const double c = tflops(x.s, x.cublas_med), o = tflops(x.s, x.ours_med);
    std::printf("| %d x %d x %d | %.1f (%.1f) | %.1f (%.1f) | %s | %.3f |\n", x.s.m, x.s.n, x.s.k,
                c, tflops(x.s, x.cublas_best), o, tflops(x.s, x.ours_best), x.variant.c_str(),
                c > 0 ? o / c : 0.0);
  }
  return all_checked ? 0 : 1;
}
