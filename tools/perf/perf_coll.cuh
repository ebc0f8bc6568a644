// The collectives test (coll) of tmashmem-perf and perf_nvshmem, nccl-tests style: the
// runtime's on-stream collectives (Runtime::coll) and, in the tmashmem build with
// PERF_NCCL_COLL where no two ranks share a GPU, NCCL's. A size is the all-reduce and
// broadcast buffer, the all-gather receive buffer, the reduce-scatter and all-to-all send
// buffer, rounded down to whole floats per rank; every rank calls; a sample is the slowest
// rank's mean time per call over -n calls (after -w warm-up calls), enqueued one by one or,
// with --graph 1, captured into one CUDA graph (runtime <name>-graph); enqueued, the log also
// gives the host's time per call to enqueue (slowest rank). GB/s = size / time
// (algbw). Not checked (check n/a). -s: tmashmem's n_sms (0: the library's choice), swept;
// --algo: its all-reduce algorithm. First, the floor of every row, timed the same way: `launch`,
// an empty kernel in the collectives' launch shape (1 CTA of 512 threads); `launch_overlap`,
// the same launched as tmashmem launches a collective that fits twice (programmatic stream
// serialization: it waits for the grid before it and lets the next one start at once); and in
// the tmashmem build `handshake`, the collectives' handshake alone (Ready and Done with every
// peer, one CTA, no data). Included by perf.cu after the backend.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "tests/common/overlapped_launch.cuh"
#include "tools/perf/backend.cuh"
#include "tools/perf/harness.cuh"
#if PERF_NCCL_COLL
#include "tools/perf/nccl_comm.h"
#endif

namespace perf {

#if PERF_NCCL_COLL
// NCCL's twin of Runtime::coll (the all-to-all: one send and one receive per rank, grouped).
inline void nccl_coll(Coll c, void* dst, const void* src, size_t bytes, ncclComm_t comm,
                      cudaStream_t s) {
  const int n = mpi_size();
  const size_t count = bytes / 4, part = count / size_t(n);
  ncclResult_t r = ncclSuccess;
  switch (c) {
    case Coll::AllReduce:
      r = ncclAllReduce(src, dst, count, ncclFloat, ncclSum, comm, s);
      break;
    case Coll::AllGather:
      r = ncclAllGather(src, dst, part, ncclFloat, comm, s);
      break;
    case Coll::ReduceScatter:
      r = ncclReduceScatter(src, dst, part, ncclFloat, ncclSum, comm, s);
      break;
    case Coll::AllToAll:
      ncclGroupStart();
      for (int q = 0; q < n; ++q) {
        ncclSend(static_cast<const float*>(src) + part * q, part, ncclFloat, q, comm, s);
        ncclRecv(static_cast<float*>(dst) + part * q, part, ncclFloat, q, comm, s);
      }
      r = ncclGroupEnd();
      break;
    case Coll::Broadcast:
      r = ncclBroadcast(src, dst, count, ncclFloat, 0, comm, s);
      break;
  }
  if (r != ncclSuccess)
    die(std::string("NCCL ") + kCollNames[int(c)] + ": " + ncclGetErrorString(r));
}
#endif

// The collectives' launch shape (device/collectives.cu): the floors run in it.
constexpr int kCollThreads = 512;
constexpr unsigned kCollSmemBytes = 0;

__global__ void coll_launch_kernel() {}

// The collective kernel's first two steps (device/collectives.cu), and nothing else.
__global__ void coll_launch_overlap_kernel() {
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
}

// Launched with the attribute the library's overlapped launch sets (device/driver_launch.h;
// the library goes through the driver's cuLaunchKernelEx, this through the runtime's).
inline void launch_overlapped(cudaStream_t s) {
  PERF_CUDA(tmashmem_test::launch_overlapped(coll_launch_overlap_kernel, dim3(1),
                                             dim3(kCollThreads), kCollSmemBytes, s));
}

#if PERF_TMASHMEM
__global__ void __launch_bounds__(kCollThreads)
    coll_handshake_kernel(const __grid_constant__ tmashmem_ctx_t ctx, tmashmem::CollState st,
                          uint64_t timeout_ns) {
  if (tmashmem::coll_exchange_all(
          ctx, st, 0, [] {}, timeout_ns, "coll handshake row") != tmashmem::Status::Ok)
    __trap();
}
#endif

// Per repetition, the slowest rank's mean microseconds per call of `enqueue` on `s` over
// `iters` calls (`warmup` calls first; with `graph`, the iters calls captured into one graph,
// launched once untimed).
inline std::vector<double> time_all_ranks(const Options& opt, cudaStream_t s, long iters,
                                          long warmup, const std::string& what,
                                          const std::function<void()>& enqueue) {
  for (long i = 0; i < warmup; ++i) enqueue();
  sync_stream(s, opt.timeout_s, what + " warm-up");
  cudaGraphExec_t exec = nullptr;
  if (opt.graph) {
    cudaGraph_t graph;
    PERF_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (long i = 0; i < iters; ++i) enqueue();
    PERF_CUDA(cudaStreamEndCapture(s, &graph));
    PERF_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    PERF_CUDA(cudaGraphDestroy(graph));
    PERF_CUDA(cudaGraphLaunch(exec, s));
    sync_stream(s, opt.timeout_s, what + " graph warm-up");
  }
  cudaEvent_t start, stop;
  PERF_CUDA(cudaEventCreate(&start));
  PERF_CUDA(cudaEventCreate(&stop));
  std::vector<double> us, host_us;
  for (int r = 0; r < opt.reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    PERF_CUDA(cudaEventRecord(start, s));
    const auto host_start = std::chrono::steady_clock::now();
    if (exec)
      PERF_CUDA(cudaGraphLaunch(exec, s));
    else
      for (long i = 0; i < iters; ++i) enqueue();
    double host =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_start)
            .count() /
        double(iters);
    PERF_CUDA(cudaEventRecord(stop, s));
    if (!exec) {  // a graph's one launch says nothing per call
      MPI_Allreduce(MPI_IN_PLACE, &host, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      host_us.push_back(host);
    }
    wait_event(stop, opt.timeout_s, what);
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, start, stop));
    double mine = 1e3 * double(ms) / double(iters);
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    us.push_back(mine);
  }
  PERF_CUDA(cudaEventDestroy(start));
  PERF_CUDA(cudaEventDestroy(stop));
  if (exec) PERF_CUDA(cudaGraphExecDestroy(exec));
  // Where the host issues calls slower than the GPU runs them, the time above is the host's.
  if (!exec && mpi_rank() == 0)
    std::printf("# %s: host %.3f us per call to enqueue (median of %d, slowest rank)\n",
                what.c_str(), spread_of(host_us).median, opt.reps);
  return us;
}

inline int test_coll(const Options& opt, Report& report, int) {
  const std::vector<size_t> sizes = size_list(opt, 8, size_t(64) << 20, 2, 1, "coll");
  const long iters = opt.iters ? opt.iters : 20, warmup = opt.warmup ? opt.warmup : 5;
  std::vector<int> n_sms;
  for (const std::string& item : split(opt.sms.empty() ? "0" : opt.sms, ',')) {
    char* end = nullptr;
    n_sms.push_back(int(std::strtol(item.c_str(), &end, 10)));
    if (*end || n_sms.back() < 0) die("coll: -s takes n_sms values (0: the library's choice)");
  }
  if (!PERF_TMASHMEM && (n_sms != std::vector<int>{0} || opt.algo) && mpi_rank() == 0)
    std::printf("# coll: -s and --algo are tmashmem's; NVSHMEM picks its own (rows at 0 SMs)\n");
  char *src = Runtime::alloc(sizes.back()), *dst = Runtime::alloc(sizes.back());
  PERF_CUDA(cudaMemset(src, PERF_TMASHMEM, sizes.back()));  // bytes of 1 (tmashmem) / 0, as before
  cudaStream_t stream;
  PERF_CUDA(cudaStreamCreate(&stream));
  using Enqueue = std::function<void(Coll, size_t bytes, int n_sms)>;
  std::vector<std::pair<std::string, Enqueue>> impls = {
      {Runtime::kName, [&](Coll c, size_t bytes, int sms) {
         Runtime::coll(c, dst, src, bytes, sms, opt.algo, stream);
       }}};
#if PERF_NCCL_COLL
  const ncclComm_t comm = nccl_world_comm("coll");
  if (comm)
    impls.push_back(
        {"nccl", [&](Coll c, size_t bytes, int) { nccl_coll(c, dst, src, bytes, comm, stream); }});
#elif PERF_TMASHMEM
  if (mpi_rank() == 0) std::printf("# NCCL rows left out: built without NCCL\n");
#endif
  const std::string runtime = std::string(Runtime::kName) + (opt.graph ? "-graph" : "");
  std::vector<std::pair<std::string, std::function<void()>>> floors = {
      {"launch", [&] { coll_launch_kernel<<<1, kCollThreads, kCollSmemBytes, stream>>>(); }},
      {"launch_overlap", [&] { launch_overlapped(stream); }}};
#if PERF_TMASHMEM
  // Zeroed on every PE before any PE returns (tmashmem_calloc), as the handshake needs.
  void* state = tmashmem_calloc(1, tmashmem::coll_state_bytes(1));
  if (state == nullptr) die(std::string("tmashmem_calloc: ") + tmashmem_last_error());
  tmashmem_ctx_t ctx;
  tm_check(tmashmem_device_ctx(&ctx), "tmashmem_device_ctx");
  const tmashmem::CollState st = tmashmem::coll_state(state, 1);
  floors.push_back({"handshake", [&] {
                      coll_handshake_kernel<<<1, kCollThreads, kCollSmemBytes, stream>>>(
                          ctx, st, opt.timeout_ns());
                    }});
#endif
  report.table_header("coll: " + runtime + " floors (no data)");
  for (const auto& floor : floors) {
    if (!opt.want(floor.first)) continue;
    Row row("coll", floor.first, 1, kCollThreads, 0, iters);
    row.runtime = runtime;
    row.check = "n/a";
    row.set_samples(
        time_all_ranks(opt, stream, iters, warmup, runtime + " " + floor.first, floor.second));
    report.add(row);
  }
#if PERF_TMASHMEM
  Runtime::free(state);
#endif
  const size_t unit = 4 * size_t(mpi_size());  // whole floats per rank
  for (const auto& impl : impls) {
    const std::string& name = impl.first;
    const Enqueue& enqueue = impl.second;
    const std::string impl_runtime = name + (opt.graph ? "-graph" : "");
    const std::vector<int> sms_list =
        name == Runtime::kName && PERF_TMASHMEM ? n_sms : std::vector<int>{0};
    report.table_header("coll: " + impl_runtime + " on-stream collectives, float");
    for (int c = 0; c < int(std::size(kCollNames)); ++c) {
      if (!opt.want(kCollNames[c])) continue;
      for (int sms : sms_list)
        for (size_t bytes : sizes) {
          const size_t size = bytes / unit * unit;
          if (size == 0) continue;
          Row row("coll", kCollNames[c], sms, 0, size, iters);
          row.runtime = impl_runtime;
          row.check = "n/a";
          const std::string what =
              impl_runtime + " " + row.op + " (" + std::to_string(size) + " B)";
          row.set_samples(time_all_ranks(opt, stream, iters, warmup, what,
                                         [&] { enqueue(Coll(c), size, sms); }));
          report.add(row);
        }
    }
  }
#if PERF_NCCL_COLL
  if (comm) ncclCommDestroy(comm);
#endif
  sync_stream(stream, opt.timeout_s, "coll");
  PERF_CUDA(cudaStreamDestroy(stream));
  Runtime::free(dst);
  Runtime::free(src);
  return 0;
}

}  // namespace perf
