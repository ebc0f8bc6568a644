// The fused benchmark's timing loop (tmashmem-fused-bench): its variants, its FUSED_BENCH_*
// switches (fused_bench.cu's header lists them) and the rounds that time and print them.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fused_example.h"  // CHECK_CUDA, CHECK_TM, timed_run_ms
#include "tmashmem/tmashmem.h"

namespace fused_bench {

struct Variant {
  std::string name;
  std::function<void()> run;
  std::vector<float> ms;
};

// The FUSED_BENCH_* switches, read from the environment once.
struct Switches {
  bool keep_a = true;   // FUSED_BENCH_A not 0: the copier sweep returns the gathered A
  int batch = 1;        // FUSED_BENCH_BATCH: launches per timing
  bool rounds = false;  // FUSED_BENCH_ROUNDS set: print every round
  bool flush = false;   // FUSED_BENCH_FLUSH set, not 0: L2 written over before every timing
};

inline const Switches& switches() {
  static const Switches sw = [] {
    Switches w;
    const char* a = std::getenv("FUSED_BENCH_A");
    w.keep_a = a == nullptr || std::strcmp(a, "0") != 0;
    const char* b = std::getenv("FUSED_BENCH_BATCH");
    w.batch = b && std::atoi(b) > 0 ? std::atoi(b) : 1;
    w.rounds = std::getenv("FUSED_BENCH_ROUNDS") != nullptr;
    const char* f = std::getenv("FUSED_BENCH_FLUSH");
    w.flush = f != nullptr && *f != '\0' && std::strcmp(f, "0") != 0;
    return w;
  }();
  return sw;
}

// `reps` rounds (after 2 warm-up rounds), each launching every variant once: a host barrier,
// then one launch timed with CUDA events on every PE; a round's time is the slowest PE's. PE 0
// prints per variant the median and best over rounds, TFLOP/s of the job (`flop` in all), the
// ratio to "gemm only", and the same as a line "csv,<title>,<PEs>,<median ms>,<ratio>,<variant>".
inline void time_and_print(std::vector<Variant>& variants, int reps, cudaStream_t stream,
                           double flop, const char* title) {
  // With a batch, the host's launch of all but the first overlaps the GPU's work; the time is
  // per launch.
  const int batch = switches().batch;
  // With the flush, each timing (of `batch` launches) starts from an L2 holding none of its
  // operands (50 MB of L2 hold, for example, a whole A of 4096 x 4096 that the variant before
  // read): every variant then reads its operands from HBM, whatever ran before it. The L2 is
  // left full of the scratch's dirty lines, whose write-back every variant pays alike.
  const size_t flush_bytes = switches().flush ? size_t(256) << 20 : 0;
  void* flush = nullptr;
  if (flush_bytes) CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  for (int r = 0; r < reps + 2; ++r)
    for (Variant& v : variants) {
      if (flush) CHECK_CUDA(cudaMemsetAsync(flush, r & 0xff, flush_bytes, stream));
      auto launches = [&] {
        for (int b = 0; b < batch; ++b) v.run();
      };
      float t = 0;  // this PE's, per launch
      const float worst = fused_example::timed_run_ms(stream, e0, e1, launches, &t) / float(batch);
      t /= float(batch);
      if (switches().rounds) {
        std::vector<float> all(static_cast<size_t>(tmashmem_n_pes()));
        MPI_Gather(&t, 1, MPI_FLOAT, all.data(), 1, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (tmashmem_my_pe() == 0) {
          const double now =
              std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
          std::printf("round,%.4f,%s,%d,%s", now, title, r, v.name.c_str());
          for (float x : all) std::printf(",%.4f", x);
          std::printf("\n");
        }
      }
      if (r >= 2) v.ms.push_back(worst);
    }
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  if (flush) CHECK_CUDA(cudaFree(flush));
  if (tmashmem_my_pe() != 0) return;
  double gemm_med = 0;
  for (Variant& v : variants) {
    std::sort(v.ms.begin(), v.ms.end());
    if (v.name == "gemm only") gemm_med = v.ms[v.ms.size() / 2];
  }
  std::printf("  %-26s %9s %9s %9s %8s\n", "variant", "med ms", "best ms", "job TF/s", "vs gemm");
  for (const Variant& v : variants) {
    const double med = v.ms[v.ms.size() / 2];
    std::printf("  %-26s %9.3f %9.3f %9.1f %8.3f\n", v.name.c_str(), med, v.ms.front(),
                flop / med / 1e9, gemm_med / med);
  }
  for (const Variant& v : variants)
    std::printf("csv,%s,%d,%.4f,%.4f,%s\n", title, tmashmem_n_pes(), v.ms[v.ms.size() / 2],
                gemm_med / v.ms[v.ms.size() / 2], v.name.c_str());
}

}  // namespace fused_bench
