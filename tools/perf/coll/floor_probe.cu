// tmashmem-floor-probe: where the time of a small on-stream collective goes. In one run,
// the same back-to-back timing (slowest rank's mean per call over `iters` calls, median of
// `reps`), enqueued one by one and captured into one CUDA graph, of:
//   - an empty kernel, 1 CTA of 32 threads, and in the collectives' launch shape (512
//     threads, 32 KiB + 16 of dynamic shared memory);
//   - a kernel that runs only the collectives' handshake (coll_exchange_all, empty body),
//     with and without its Done half, on a state of its own;
//   - tmashmem's on-stream all-reduce and all-gather of 4 KiB-256 KiB;
// and the host's own cost per call: the enqueue loop timed on the CPU while a spin kernel
// holds the stream (nothing runs, so the loop measures the host path alone), median and
// minimum over three times the repetitions.
//
// With "sweep", the rows are the all-reduce, all-gather and reduce-scatter of 4 KiB - 1 MiB
// at n_sms 0 (the library's choice), 1, 2, 4, ..., 32 instead.
//
//   mpirun -np 2 tmashmem-floor-probe [iters] [reps] [sweep]
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tmashmem/collectives.h"
#include "tmashmem/device.cuh"
#include "tmashmem/tmashmem.h"
#include "tools/perf/backend.cuh"

namespace {

constexpr int kCollThreads = 512;
constexpr unsigned kCollSmem = 32u * 1024u + 16u;

__global__ void empty_kernel() {}

// An empty kernel with a parameter the size of the collectives' (CollArgs).
struct Params {
  unsigned char bytes[256];
};
__global__ void empty_params_kernel(const __grid_constant__ Params) {}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

__global__ void __launch_bounds__(kCollThreads)
    handshake_kernel(const __grid_constant__ tmashmem_ctx_t ctx, tmashmem::CollState st,
                     int done_handshake, uint64_t timeout_ns) {
  const tmashmem::Status s = tmashmem::coll_exchange_all(
      ctx, st, static_cast<int>(blockIdx.x), [] {}, timeout_ns, "probe handshake",
      done_handshake != 0);
  if (s != tmashmem::Status::Ok) __trap();
}

// The handshake's pieces without a peer: what = 1: the step's epoch read and written back
// (coll_begin, coll_end); 2: the proxy fence every thread runs first; 3: both.
__global__ void __launch_bounds__(kCollThreads) pieces_kernel(tmashmem::CollState st, int what) {
  if (what & 2) tmashmem::detail::fence_proxy_async();
  if (what & 1) tmashmem::coll_end(st, tmashmem::coll_begin(st, static_cast<int>(blockIdx.x)));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double gpu_us, graph_us, host_us, host_min_us;
};

// The three figures of one variant (every rank calls; slowest rank's numbers).
Timing time_variant(cudaStream_t s, long iters, int reps, const std::function<void()>& enqueue) {
  auto slowest = [](double mine) {
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mine;
  };
  cudaEvent_t a, b;
  PERF_CUDA(cudaEventCreate(&a));
  PERF_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 20; ++i) enqueue();
  PERF_CUDA(cudaStreamSynchronize(s));
  auto timed = [&](const std::function<void()>& body) {
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      PERF_CUDA(cudaEventRecord(a, s));
      body();
      PERF_CUDA(cudaEventRecord(b, s));
      PERF_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
      us.push_back(slowest(1e3 * ms / double(iters)));
    }
    return median(us);
  };
  Timing t{};
  t.gpu_us = timed([&] {
    for (long i = 0; i < iters; ++i) enqueue();
  });
  cudaGraph_t g;
  cudaGraphExec_t exec;
  PERF_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (long i = 0; i < iters; ++i) enqueue();
  PERF_CUDA(cudaStreamEndCapture(s, &g));
  PERF_CUDA(cudaGraphInstantiate(&exec, g, 0));
  PERF_CUDA(cudaGraphLaunch(exec, s));
  PERF_CUDA(cudaStreamSynchronize(s));
  t.graph_us = timed([&] { PERF_CUDA(cudaGraphLaunch(exec, s)); });
  PERF_CUDA(cudaGraphExecDestroy(exec));
  PERF_CUDA(cudaGraphDestroy(g));
  // Host path: 200 calls behind a 20 ms spin (the queue holds them all).
  std::vector<double> host;
  for (int r = 0; r < 3 * reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    spin_kernel<<<1, 1, 0, s>>>(20'000'000ull);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) enqueue();
    const auto t1 = std::chrono::steady_clock::now();
    PERF_CUDA(cudaStreamSynchronize(s));
    host.push_back(slowest(std::chrono::duration<double, std::micro>(t1 - t0).count() / 200));
  }
  t.host_us = median(host);
  t.host_min_us = *std::min_element(host.begin(), host.end());
  PERF_CUDA(cudaEventDestroy(a));
  PERF_CUDA(cudaEventDestroy(b));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long iters = argc > 1 ? std::atol(argv[1]) : 1000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const bool sweep = argc > 3 && std::string(argv[3]) == "sweep";
  perf::tm_check(tmashmem_init(), "tmashmem_init");
  const int me = tmashmem_my_pe(), npes = tmashmem_n_pes();
  PERF_CUDA(cudaSetDevice(tmashmem_device()));
  const size_t max_bytes = size_t(1) << 20;  // the largest row of the sweep
  float* src = static_cast<float*>(tmashmem_malloc(max_bytes * npes));
  float* dst = static_cast<float*>(tmashmem_malloc(max_bytes * npes));
  void* state = tmashmem_calloc(1, tmashmem::coll_state_bytes(4));
  void* own_state = tmashmem_calloc(1, tmashmem::coll_state_bytes(1));  // pieces_kernel's
  if (!src || !dst || !state || !own_state) perf::die("tmashmem_malloc");
  PERF_CUDA(cudaMemset(src, 0, max_bytes * npes));
  const tmashmem::CollState st = tmashmem::coll_state(state, 4);
  const tmashmem::CollState own = tmashmem::coll_state(own_state, 1);
  tmashmem_ctx_t ctx;
  perf::tm_check(tmashmem_device_ctx(&ctx), "device_ctx");
  perf::tm_check(tmashmem_barrier_all(), "barrier");
  cudaStream_t s;
  PERF_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const uint64_t timeout = 10'000'000'000ull;

  struct Variant {
    std::string name;
    std::function<void()> enqueue;
  };
  std::vector<Variant> vs;
  const Params params{};
  CUfunction empty_params_fn = nullptr;
  PERF_CUDA(cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&empty_params_fn),
                                reinterpret_cast<const void*>(empty_params_kernel)));
  auto allreduce = [&](size_t bytes, int sms) {
    perf::tm_check(
        tmashmem_allreduce_on_stream(dst, src, bytes / 4, TMASHMEM_DTYPE_F32, TMASHMEM_REDUCE_SUM,
                                     TMASHMEM_ALLREDUCE_AUTO, sms, s),
        "allreduce");
  };
  auto allgather = [&](size_t bytes, int sms) {  // bytes: the total (what dest receives)
    perf::tm_check(tmashmem_allgather_on_stream(dst, src, bytes / size_t(npes), sms, s),
                   "allgather");
  };
  auto reduce_scatter = [&](size_t bytes, int sms) {  // bytes: the send buffer
    perf::tm_check(
        tmashmem_reduce_scatter_on_stream(dst, src, bytes / 4 / size_t(npes), TMASHMEM_DTYPE_F32,
                                          TMASHMEM_REDUCE_SUM, sms, s),
        "reduce_scatter");
  };
  const std::string ctas = " CTAs";
  if (sweep) {
    const std::pair<const char*, std::function<void(size_t, int)>> kinds[] = {
        {"allreduce", allreduce}, {"allgather", allgather}, {"reducescatter", reduce_scatter}};
    for (const auto& kind : kinds)
      for (size_t kib : {4, 16, 64, 256, 1024})
        for (int sms : {0, 1, 2, 4, 8, 16, 32}) {
          const auto& call = kind.second;
          vs.push_back({std::string(kind.first) + " " + std::to_string(kib) + " KiB, " +
                            (sms ? std::to_string(sms) + ctas : "default" + ctas),
                        [=] { call(kib << 10, sms); }});
        }
  } else {
    vs = {
        {"empty <<<1,32>>>", [&] { empty_kernel<<<1, 32, 0, s>>>(); }},
        {"empty <<<1,512,32K>>>", [&] { empty_kernel<<<1, kCollThreads, kCollSmem, s>>>(); }},
        {"empty <<<1,512,32K>>>, 256-byte parameter",
         [&] { empty_params_kernel<<<1, kCollThreads, kCollSmem, s>>>(params); }},
        {"the same by cuLaunchKernel",
         [&] {
           void* args[] = {const_cast<Params*>(&params)};
           if (cuLaunchKernel(empty_params_fn, 1, 1, 1, kCollThreads, 1, 1, kCollSmem, s, args,
                              nullptr) != CUDA_SUCCESS)
             perf::die("cuLaunchKernel");
         }},
        {"cudaGetDevice+cudaSetDevice+empty <<<1,512,32K>>>",
         [&] {
           int d = 0;
           PERF_CUDA(cudaGetDevice(&d));
           PERF_CUDA(cudaSetDevice(d));
           empty_kernel<<<1, kCollThreads, kCollSmem, s>>>();
         }},
        {"allreduce of 0 elements (host checks, no launch)", [&] { allreduce(0, 1); }},
        {"tmashmem_barrier_all_on_stream",
         [&] { perf::tm_check(tmashmem_barrier_all_on_stream(s), "barrier_all_on_stream"); }},
        {"broadcast 4 KiB, default CTAs",
         [&] {
           perf::tm_check(tmashmem_broadcast_on_stream(dst, src, 4096, 0, 0, s), "broadcast");
         }},
        {"epoch read + write (coll_begin, coll_end), 1 CTA",
         [&] { pieces_kernel<<<1, kCollThreads, 0, s>>>(own, 1); }},
        {"fence.proxy.async in every thread, 1 CTA",
         [&] { pieces_kernel<<<1, kCollThreads, 0, s>>>(own, 2); }},
        {"both, 1 CTA", [&] { pieces_kernel<<<1, kCollThreads, 0, s>>>(own, 3); }},
        {"handshake, Ready only, 1 CTA",
         [&] { handshake_kernel<<<1, kCollThreads, 0, s>>>(ctx, st, 0, timeout); }},
        {"handshake, Ready+Done, 1 CTA",
         [&] { handshake_kernel<<<1, kCollThreads, 0, s>>>(ctx, st, 1, timeout); }},
        {"handshake, Ready+Done, 4 CTAs",
         [&] { handshake_kernel<<<4, kCollThreads, 0, s>>>(ctx, st, 1, timeout); }},
    };
    for (size_t kib : {4, 64, 256}) {
      const std::string k = std::to_string(kib) + " KiB";
      vs.push_back({"allreduce " + k + ", 1 CTA", [=] { allreduce(kib << 10, 1); }});
      vs.push_back({"allreduce " + k + ", default CTAs", [=] { allreduce(kib << 10, 0); }});
      vs.push_back({"allgather " + k + " (total), default CTAs", [=] { allgather(kib << 10, 0); }});
    }
  }
  if (me == 0)
    std::printf(
        "# %d PEs, %ld calls per sample, median of %d (host: of %d, and their minimum); us per "
        "call\n%-44s %9s %9s %9s %9s\n",
        npes, iters, reps, 3 * reps, "variant", "enqueued", "graph", "host", "host min");
  for (const Variant& v : vs) {
    const Timing t = time_variant(s, iters, reps, v.enqueue);
    if (me == 0)
      std::printf("%-44s %9.3f %9.3f %9.3f %9.3f\n", v.name.c_str(), t.gpu_us, t.graph_us,
                  t.host_us, t.host_min_us);
  }
  PERF_CUDA(cudaStreamDestroy(s));
  perf::tm_check(tmashmem_finalize(), "finalize");
  MPI_Finalize();
  return 0;
}
