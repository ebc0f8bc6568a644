// The collective benchmarks' shared half (tools/perf/coll/): nccl-tests-style options and
// output, for tmashmem-coll-perf (tmashmem, and NCCL where every rank has its own GPU) and
// coll-perf-nvshmem (NVSHMEM's on-stream collectives).
//
//   -b <bytes>  smallest size (default 8)        -e <bytes>  largest size (default 64M)
//   -f <n>      size factor between rows (2)     -g <n>      GPUs per rank: 1 only
//   -n <iters>  timed iterations (20)            -w <iters>  warm-up iterations (5)
//   -t <coll>   allreduce|allgather|reducescatter|alltoall|broadcast|all (all)
//   -m <n_sms>  tmashmem CTAs (0: default)       -a <algo>   tmashmem all-reduce: 0 auto, 1, 2
//   -G <0|1>    1 times the -n calls captured into one CUDA graph (device time
//               without the host's enqueue cost); 0 (default) enqueues every call
//
// Sizes follow nccl-tests: the all-reduce and broadcast buffer, the all-gather receive
// buffer, the reduce-scatter and all-to-all send buffer, in bytes of float. Rows print
// time (the slowest rank's mean per call), algbw = size / time and busbw = algbw times
// 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter, all-to-all) or 1 (broadcast).
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tools/perf/harness.cuh"  // die, mpi_rank, parse_size, PERF_CUDA

namespace coll_perf {

using perf::die;
using perf::mpi_rank;

struct Options {
  size_t min_bytes = 8, max_bytes = size_t(64) << 20;
  size_t factor = 2;
  int gpus = 1, iters = 20, warmup = 5, n_sms = 0, algo = 0, graph = 0;
  std::string test = "all";
};

inline bool parse(int argc, char** argv, Options* o) {
  const std::pair<const char*, size_t*> sizes[] = {
      {"-b", &o->min_bytes}, {"-e", &o->max_bytes}, {"-f", &o->factor}};
  const std::pair<const char*, int*> numbers[] = {{"-g", &o->gpus},   {"-n", &o->iters},
                                                  {"-w", &o->warmup}, {"-m", &o->n_sms},
                                                  {"-a", &o->algo},   {"-G", &o->graph}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    bool known = k == "-t";
    if (known) o->test = v;
    for (const auto& f : sizes)
      if (k == f.first) {
        if (!perf::parse_size(v, f.second)) {
          std::fprintf(stderr, "bad size %s %s\n", k.c_str(), v);
          return false;
        }
        known = true;
      }
    for (const auto& f : numbers)
      if (k == f.first) *f.second = std::atoi(v), known = true;
    if (!known) {
      std::fprintf(stderr, "unknown option %s (see tools/perf/coll/coll_perf.h)\n", k.c_str());
      return false;
    }
  }
  if (o->gpus != 1) {
    std::fprintf(stderr, "-g %d: these benchmarks drive one GPU per rank (-g 1)\n", o->gpus);
    return false;
  }
  if (o->factor < 2) o->factor = 2;
  if (o->min_bytes < 4) o->min_bytes = 4;
  return true;
}

// MPI_Init and the options; false (after MPI_Finalize, the message printed) on bad ones.
inline bool start(int argc, char** argv, Options* o) {
  MPI_Init(&argc, &argv);
  if (parse(argc, argv, o)) return true;
  MPI_Finalize();
  return false;
}

inline const std::vector<std::string>& collectives() {
  static const std::vector<std::string> all = {"allreduce", "allgather", "reducescatter",
                                               "alltoall", "broadcast"};
  return all;
}

inline double bus_factor(const std::string& coll, int n) {
  if (coll == "allreduce") return 2.0 * (n - 1) / n;
  if (coll == "broadcast") return 1.0;
  return double(n - 1) / n;
}

inline void header(const char* impl, int n) {
  if (mpi_rank() != 0) return;
  std::printf("# %s collectives, %d ranks, float\n", impl, n);
  std::printf("# %-8s %-14s %12s %12s %10s %10s %10s\n", "impl", "collective", "size(B)", "count",
              "time(us)", "algbw", "busbw");
}

// Prints one row from this rank's mean time per call; the slowest rank's time counts.
inline void row(const char* impl, const std::string& coll, size_t bytes, int n, double us) {
  double worst = us;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (mpi_rank() != 0) return;
  const double algbw = worst > 0 ? double(bytes) / (worst * 1e3) : 0;  // GB/s
  std::printf("  %-8s %-14s %12zu %12zu %10.2f %10.2f %10.2f\n", impl, coll.c_str(), bytes,
              bytes / 4, worst, algbw, algbw * bus_factor(coll, n));
}

// Mean microseconds per call of `enqueue` on `stream` (warm-up first). With o.graph the
// timed calls are captured into one graph first and the graph's launch is timed.
inline double time_calls(const Options& o, cudaStream_t stream,
                         const std::function<void()>& enqueue) {
  for (int i = 0; i < o.warmup; ++i) enqueue();
  PERF_CUDA(cudaStreamSynchronize(stream));
  cudaGraphExec_t exec = nullptr;
  if (o.graph) {
    cudaGraph_t graph;
    PERF_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < o.iters; ++i) enqueue();
    PERF_CUDA(cudaStreamEndCapture(stream, &graph));
    PERF_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    PERF_CUDA(cudaGraphDestroy(graph));
    PERF_CUDA(cudaGraphLaunch(exec, stream));
    PERF_CUDA(cudaStreamSynchronize(stream));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  cudaEvent_t start, stop;
  PERF_CUDA(cudaEventCreate(&start));
  PERF_CUDA(cudaEventCreate(&stop));
  PERF_CUDA(cudaEventRecord(start, stream));
  if (exec)
    PERF_CUDA(cudaGraphLaunch(exec, stream));
  else
    for (int i = 0; i < o.iters; ++i) enqueue();
  PERF_CUDA(cudaEventRecord(stop, stream));
  PERF_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  PERF_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (exec) cudaGraphExecDestroy(exec);
  return 1000.0 * ms / o.iters;
}

// Buffer sizes (bytes) of a row: what each rank sends and receives.
struct Shape {
  size_t send, recv;
};
inline Shape shape(const std::string& coll, size_t bytes, int n) {
  if (coll == "allgather") return {bytes / n, bytes};
  if (coll == "reducescatter") return {bytes, bytes / n};
  return {bytes, bytes};
}

}  // namespace coll_perf
