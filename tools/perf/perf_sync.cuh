// The ping-pong and device-barrier tests of tmashmem-perf and perf_nvshmem: kernels on
// several PEs at once, timed per round trip / per barrier inside the kernel. Included by
// perf.cu.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tools/perf/harness.cuh"
#include "tools/perf/kernels.cuh"

namespace perf {

// Repetition r of a ping-pong waits on flag slot r % kPingFlagSlots (docs/perf-method.md,
// "Do two runs agree?"); the stride is no power of two, so slots differ in many address bits.
constexpr int kPingFlagSlots = 16;
constexpr size_t kPingFlagStride = 4096 + 256;
constexpr size_t kPingFlagBytes = kPingFlagSlots * kPingFlagStride;
inline uint64_t* ping_flag(uint64_t* flags, int rep) {
  return flags + size_t(rep % kPingFlagSlots) * (kPingFlagStride / sizeof(uint64_t));
}

// Runtime::launch with the kernel's arguments by value.
template <class... Args>
void launch_with(const void* kernel, int ctas, int threads, cudaStream_t s, bool grid_sync,
                 Args... args) {
  void* argv[] = {&args...};
  Runtime::launch(kernel, ctas, threads, argv, s, grid_sync);
}

inline int test_pingpong(const Options& opt, Report& report, int) {
  using Device = Runtime::Device;
  if (Runtime::n_pes() < 2) {
    if (mpi_rank() == 0) std::printf("# pingpong needs 2 PEs or more; skipped\n");
    return 0;
  }
  const std::vector<size_t> sizes = size_list(opt, 8, size_t(1) << 20, 8, 8, "pingpong");
  const int me = Runtime::my_pe();
  char *buf = Runtime::alloc(sizes.back()), *src = Runtime::alloc(sizes.back());
  uint64_t* flags = reinterpret_cast<uint64_t*>(Runtime::alloc(kPingFlagBytes));
  PERF_CUDA(cudaMemset(flags, 0, kPingFlagBytes));
  PERF_CUDA(cudaDeviceSynchronize());
  Runtime::barrier_all();
  const Device rt = Runtime::device();
  const int peer = me == 0 ? 1 : 0, initiator = me == 0;
  const uint64_t timeout_ns = opt.timeout_ns();
  std::vector<StampCase> cases;
  // `dev`: the device face the kernel takes (Device, or PtxDevice for the bare signals).
  auto make = [&](const char* op, const void* kernel, size_t bytes, int threads, auto dev) {
    StampCase c;
    c.op = op;
    c.bytes = bytes;
    c.threads = threads;
    c.participates = me < 2;
    c.run = [=](cudaStream_t s, int rep, long warmup, long iters, uint64_t base, uint64_t* stamps,
                int* error) {
      launch_with(kernel, 1, threads, s, false, dev, buf, src, bytes, ping_flag(flags, rep), base,
                  warmup, iters, peer, initiator, timeout_ns, stamps, error);
    };
    cases.push_back(c);
  };
  auto kernel = [](auto k) { return reinterpret_cast<const void*>(k); };
  make("signal", kernel(pingpong_kernel<Device, PingOp::Signal>), 8, 1, rt);
#if PERF_TMASHMEM
  // Like for like with NVSHMEM's wait, which has no timeout: signal_relaxed waits forever;
  // signal_relaxed_timeout is the same round trip with the bound. ptx_* (last): the same
  // round trip from single PTX operations (PtxDevice), same kernel, no library call.
  make("signal_relaxed", kernel(pingpong_kernel<Device, PingOp::SignalRelaxed, false>), 8, 1, rt);
  make("signal_relaxed_timeout", kernel(pingpong_kernel<Device, PingOp::SignalRelaxed>), 8, 1, rt);
#endif
  make("put_signal_thread", kernel(pingpong_kernel<Device, PingOp::PutSignalThread>), 8, 1, rt);
  for (size_t bytes : sizes)
    make("put_signal", kernel(pingpong_kernel<Device, PingOp::PutSignalBlock>), bytes, opt.threads,
         rt);
#if PERF_TMASHMEM
  auto ptx = [&](const char* op, auto face) {
    make(op, kernel(pingpong_kernel<decltype(face), PingOp::SignalRelaxed, false>), 8, 1,
         decltype(face){rt.ctx});
  };
  ptx("ptx_volatile", PtxDevice<Ptx::Volatile>{});
  ptx("ptx_relaxed_sys", PtxDevice<Ptx::RelaxedSys>{});
  ptx("ptx_relaxed_gpu_fence", PtxDevice<Ptx::RelaxedGpuFence>{});
  ptx("ptx_release_sys", PtxDevice<Ptx::ReleaseSys>{});
#endif
  report.table_header(
      "pingpong: PE 0 <-> PE 1, one kernel each, time per round trip (signal: signal_op; "
      "signal_relaxed[_timeout]: signal_op_relaxed, waiting without [with] a timeout; ptx_*: "
      "single PTX stores and polls; "
      "put_signal_thread: put_signal from one thread; put_signal: the block-scope put_signal; "
      "each + a signal wait)");
  const int failures = run_stamped(opt, report, "pingpong", cases, opt.iters ? opt.iters : 1000,
                                   opt.warmup ? opt.warmup : 100);
  Runtime::barrier_all();
  Runtime::free(flags);
  Runtime::free(src);
  Runtime::free(buf);
  return failures;
}

inline int test_barrier(const Options& opt, Report& report, int device_sms) {
  using Device = Runtime::Device;
  // tmashmem's device barriers span a whole grid; NVSHMEM's are per thread group (one CTA).
  const std::vector<int> sms =
      PERF_TMASHMEM ? sm_list(opt, "1,all", device_sms) : std::vector<int>{1};
  const int n = Runtime::n_pes(), threads = 32;
  uint64_t* marks = reinterpret_cast<uint64_t*>(Runtime::alloc(sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaMemset(marks, 0, sizeof(uint64_t) * size_t(n)));
  PERF_CUDA(cudaDeviceSynchronize());
  Runtime::barrier_all();
  const Device rt = Runtime::device();
  const uint64_t timeout_ns = opt.timeout_ns();
  const long iters = opt.iters ? opt.iters : 1000;
  int* verify_error = nullptr;
  uint64_t* verify_stamps = nullptr;
  PERF_CUDA(cudaMalloc(&verify_error, sizeof(int)));
  PERF_CUDA(cudaMalloc(&verify_stamps, sizeof(uint64_t) * stamp_words(iters)));
  std::vector<StampCase> cases;
  for (int ctas : sms) {
    for (int sync_only = 0; sync_only < 2; ++sync_only) {
      StampCase c;
      c.op = sync_only ? "sync_all" : "barrier_all";
      c.ctas = ctas;
      c.threads = threads;
      auto kernel = [sync_only](auto check) {
        constexpr bool kCheck = decltype(check)::value;
        return sync_only ? reinterpret_cast<const void*>(barrier_kernel<Device, kCheck, true>)
                         : reinterpret_cast<const void*>(barrier_kernel<Device, kCheck, false>);
      };
      // Grid-synchronised launch: at most one 32-thread CTA per SM is always resident.
      auto launch = [=](const void* k, cudaStream_t s, uint64_t base, long warmup, long it,
                        uint64_t* stamps, int* error) {
        launch_with(k, ctas, threads, s, true, rt, marks, base, warmup, it, timeout_ns, stamps,
                    error);
      };
      c.run = [=, timed = kernel(std::false_type{})](cudaStream_t s, int, long warmup, long it,
                                                     uint64_t base, uint64_t* stamps, int* error) {
        launch(timed, s, base, warmup, it, stamps, error);
      };
      c.verify = [=, &opt, checked = kernel(std::true_type{})](
                     cudaStream_t s, uint64_t base) -> unsigned long long {
        PERF_CUDA(cudaMemsetAsync(verify_error, 0, sizeof(int), s));
        launch(checked, s, base, 0, iters, verify_stamps, verify_error);
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
  const int failures =
      run_stamped(opt, report, "barrier", cases, iters, opt.warmup ? opt.warmup : 100);
  PERF_CUDA(cudaFree(verify_error));
  PERF_CUDA(cudaFree(verify_stamps));
  Runtime::barrier_all();
  Runtime::free(marks);
  return failures;
}

}  // namespace perf
