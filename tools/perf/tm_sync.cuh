// tmashmem-perf's ping-pong and device-barrier tests: kernels on several PEs at once,
// timed per round trip / per barrier inside the kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tools/perf/msg_kernels.cuh"
#include "tools/perf/perf_driver.cuh"
#include "tools/perf/tm_common.cuh"

namespace perf_tm {

using namespace perf;

// ---- ping-pong --------------------------------------------------------------------------

inline int test_pingpong(const Options& opt, Report& report) {
  if (tmashmem_n_pes() < 2) {
    if (mpi_rank() == 0) std::printf("# pingpong needs 2 PEs or more; skipped\n");
    return 0;
  }
  const std::vector<size_t> sizes =
      size_list(opt.min_bytes ? opt.min_bytes : 8, opt.max_bytes ? opt.max_bytes : size_t(1) << 20,
                opt.step_factor ? opt.step_factor : 8);
  for (size_t s : sizes)
    if (s == 0 || s % 8) die("pingpong sizes must be multiples of 8 bytes");
  if (sizes.empty()) die("pingpong: no sizes between -b and -e");
  const int me = tmashmem_my_pe();
  char* buf = sym_alloc(sizes.back());
  char* src = sym_alloc(sizes.back());
  uint64_t* flags = reinterpret_cast<uint64_t*>(sym_alloc(kPingFlagBytes));
  PERF_CUDA(cudaMemset(flags, 0, kPingFlagBytes));
  PERF_CUDA(cudaDeviceSynchronize());
  tm_check(tmashmem_barrier_all(), "tmashmem_barrier_all");
  const tmashmem_ctx_t ctx = device_ctx();
  const int peer = me == 0 ? 1 : 0;
  const int initiator = me == 0;
  const uint64_t timeout_ns = opt.timeout_ns();

  std::vector<StampCase> cases;
  auto make = [&](const char* op, PingOp ping, size_t bytes, int threads, bool bounded = true) {
    StampCase c;
    c.op = op;
    c.bytes = bytes;
    c.threads = threads;
    c.participates = me < 2;
    c.values = [](long warmup, long iters) { return uint64_t(warmup + iters); };
    auto kernel = ping == PingOp::Signal            ? pingpong_kernel<PingOp::Signal>
                  : ping == PingOp::PutSignalThread ? pingpong_kernel<PingOp::PutSignalThread>
                  : ping == PingOp::PutSignalBlock  ? pingpong_kernel<PingOp::PutSignalBlock>
                  : bounded                         ? pingpong_kernel<PingOp::SignalRelaxed>
                                                    : pingpong_kernel<PingOp::SignalRelaxed, false>;
    c.run = [=](cudaStream_t s, int rep, long warmup, long iters, uint64_t base, uint64_t* stamps,
                int* error) {
      kernel<<<1, threads, 0, s>>>(ctx, buf, src, bytes, ping_flag(flags, rep), base, warmup, iters,
                                   peer, initiator, timeout_ns, stamps, error);
      PERF_LAUNCHED("pingpong_kernel");
    };
    return c;
  };
  cases.push_back(make("signal", PingOp::Signal, 8, 1));
  // Like for like with NVSHMEM's (whose wait has no timeout): signal_relaxed waits
  // forever; signal_relaxed_timeout is the same round trip with the timeout.
  cases.push_back(make("signal_relaxed", PingOp::SignalRelaxed, 8, 1, false));
  cases.push_back(make("signal_relaxed_timeout", PingOp::SignalRelaxed, 8, 1));
  cases.push_back(make("put_signal_thread", PingOp::PutSignalThread, 8, 1));
  for (size_t bytes : sizes)
    cases.push_back(make("put_signal", PingOp::PutSignalBlock, bytes, opt.threads));
  report.table_header(
      "pingpong: PE 0 <-> PE 1, one kernel each, time per round trip "
      "(signal: signal_op (release) + signal_wait_until; signal_relaxed: signal_op_relaxed + "
      "signal_wait_until without a timeout, like NVSHMEM's; signal_relaxed_timeout: with one; "
      "put_signal_thread: put_signal from one thread; put_signal: put_signal_block; each + "
      "signal_wait_until)");
  uint64_t base = 0;
  const long iters = opt.iters ? opt.iters : 1000;
  const long warmup = opt.warmup ? opt.warmup : 100;
  const int failures = run_stamped(opt, report, "pingpong", cases, iters, warmup, &base);
  tm_check(tmashmem_barrier_all(), "tmashmem_barrier_all");
  tm_check(tmashmem_free(flags), "tmashmem_free");
  tm_check(tmashmem_free(src), "tmashmem_free");
  tm_check(tmashmem_free(buf), "tmashmem_free");
  return failures;
}

// ---- device barrier -----------------------------------------------------------------------

inline int test_barrier(const Options& opt, Report& report, int device_sms) {
  std::vector<int> sms;
  if (!sm_list(opt.sms.empty() ? "1,all" : opt.sms, device_sms, &sms))
    die("bad SM list '" + opt.sms + "'");
  const int n = tmashmem_n_pes();
  uint64_t* marks = reinterpret_cast<uint64_t*>(sym_alloc(sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaMemset(marks, 0, sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaDeviceSynchronize());
  tm_check(tmashmem_barrier_all(), "tmashmem_barrier_all");
  const tmashmem_ctx_t ctx = device_ctx();
  const uint64_t timeout_ns = opt.timeout_ns();
  const int threads = 32;
  const long iters = opt.iters ? opt.iters : 1000;
  int* verify_error = nullptr;
  PERF_CUDA(cudaMalloc(&verify_error, sizeof(int)));
  uint64_t* verify_stamps = nullptr;
  PERF_CUDA(cudaMalloc(&verify_stamps, sizeof(uint64_t) * stamp_words(iters)));

  // Cooperative launch: the runtime checks that every CTA of the grid is resident. Where
  // it is refused, an ordinary launch (at most one 32-thread CTA per SM is always
  // resident); the device waits are bounded either way.
  auto launch = [=](const void* kernel, int ctas, cudaStream_t s, uint64_t base, long warmup,
                    long n_iters, uint64_t* stamps, int* error) {
    tmashmem_ctx_t c = ctx;
    uint64_t* m = marks;
    uint64_t b = base, t = timeout_ns;
    long w = warmup, it = n_iters;
    void* args[] = {&c, &m, &b, &w, &it, &t, &stamps, &error};
    const cudaError_t e =
        cudaLaunchCooperativeKernel(kernel, dim3(ctas), dim3(threads), args, 0, s);
    if (e == cudaSuccess) return;
    (void)cudaGetLastError();
    static bool told = false;
    if (!told && mpi_rank() == 0)
      std::fprintf(stderr, "barrier: cooperative launch refused (%s); launching normally\n",
                   cudaGetErrorString(e));
    told = true;
    PERF_CUDA(cudaLaunchKernel(kernel, dim3(ctas), dim3(threads), args, 0, s));
  };
  std::vector<StampCase> cases;
  for (int ctas : sms) {
    for (int sync_only = 0; sync_only < 2; ++sync_only) {
      StampCase c;
      c.op = sync_only ? "sync_all" : "barrier_all";
      c.ctas = ctas;
      c.threads = threads;
      c.values = [](long warmup, long it) { return uint64_t(warmup + it); };
      const void* timed =
          sync_only ? reinterpret_cast<const void*>(perf_tm::barrier_kernel<false, true>)
                    : reinterpret_cast<const void*>(perf_tm::barrier_kernel<false, false>);
      const void* checked =
          sync_only ? reinterpret_cast<const void*>(perf_tm::barrier_kernel<true, true>)
                    : reinterpret_cast<const void*>(perf_tm::barrier_kernel<true, false>);
      c.run = [=](cudaStream_t s, int /*rep*/, long warmup, long it, uint64_t base,
                  uint64_t* stamps,
                  int* error) { launch(timed, ctas, s, base, warmup, it, stamps, error); };
      c.verify = [=, &opt](cudaStream_t s, uint64_t base) -> unsigned long long {
        PERF_CUDA(cudaMemsetAsync(verify_error, 0, sizeof(int), s));
        launch(checked, ctas, s, base, 0, iters, verify_stamps, verify_error);
        sync_stream(s, opt.timeout_s + 5, "barrier check");
        int e = 0;
        PERF_CUDA(cudaMemcpy(&e, verify_error, sizeof(int), cudaMemcpyDeviceToHost));
        if (e && mpi_rank() == 0) std::fprintf(stderr, "barrier check: error %d\n", e);
        return e ? 1 : 0;
      };
      cases.push_back(c);
    }
  }
  report.table_header("barrier: every PE, back-to-back device barriers in one kernel, " +
                      std::to_string(threads) + " threads/CTA, time per barrier");
  uint64_t base = 0;
  const long warmup = opt.warmup ? opt.warmup : 100;
  const int failures = run_stamped(opt, report, "barrier", cases, iters, warmup, &base);
  PERF_CUDA(cudaFree(verify_error));
  PERF_CUDA(cudaFree(verify_stamps));
  tm_check(tmashmem_barrier_all(), "tmashmem_barrier_all");
  tm_check(tmashmem_free(marks), "tmashmem_free");
  return failures;
}

}  // namespace perf_tm
