// tmashmem-signal-cost: what a signal round trip is made of. PE 0 and PE 1 ping-pong
// one 64-bit flag inside one kernel each (one thread), with the send and the wait
// built from single PTX memory operations, so the price of each ordering choice
// (release store, fence, acquire load, clock reads for timeouts) is measured beside
// the library's own signal_op / signal_op_relaxed / signal_wait_until, in one run.
// docs/performance.md ("What a signal costs") reads the numbers out. The bare instructions
// are this file's own PTX, so the benchmark depends only on the library's public calls.
//
//   mpirun -np 2 tmashmem-signal-cost [iterations]     (under MPS on one GPU)
//
// Exits non-zero if a round trip saw a wrong value or a wait timed out.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/perf/backend_tmashmem.cuh"

namespace {

using tmashmem::Cmp;
using tmashmem::SignalOp;

enum class Send {
  LibRelease,
  LibRelaxed,
  StRelaxedGpu,
  StRelaxedSys,
  StVolatile,
  FenceThenStRelaxed,
  StReleaseSys
};
enum class Wait {
  LibTimeout,             // signal_wait_until with a timeout (acquire poll, clock every 64 polls)
  LibForever,             // signal_wait_until without one
  AcquireGpuPoll,         // ld.acquire.gpu until it holds
  RelaxedPollFence,       // ld.relaxed.gpu until it holds, then fence.acq_rel.gpu
  VolatilePoll,           // ld.volatile until it holds: no ordering (NVSHMEM's wait)
  AcquireSysPoll,         // ld.acquire.sys
  LibCtxForever,          // signal_wait_until(ctx, ..., timeout 0): the ctx form, no clock
  AcquireGpuPollChecked,  // ld.acquire.gpu until it holds, with a failure path kept alive
};

#define SIGNAL_COST_ST(name, ptx)                                 \
  __device__ __forceinline__ void name(uint64_t* p, uint64_t v) { \
    asm volatile(ptx " [%0], %1;" ::"l"(p), "l"(v) : "memory");   \
  }
#define SIGNAL_COST_LD(name, ptx)                                 \
  __device__ __forceinline__ uint64_t name(const uint64_t* p) {   \
    uint64_t v;                                                   \
    asm volatile(ptx " %0, [%1];" : "=l"(v) : "l"(p) : "memory"); \
    return v;                                                     \
  }
SIGNAL_COST_ST(st_volatile, "st.volatile.u64")
SIGNAL_COST_ST(st_relaxed_gpu, "st.relaxed.gpu.u64")
SIGNAL_COST_ST(st_relaxed_sys, "st.relaxed.sys.u64")
SIGNAL_COST_ST(st_release_sys, "st.release.sys.u64")
SIGNAL_COST_LD(ld_volatile, "ld.volatile.u64")
SIGNAL_COST_LD(ld_relaxed_gpu, "ld.relaxed.gpu.u64")
SIGNAL_COST_LD(ld_acquire_gpu, "ld.acquire.gpu.u64")
SIGNAL_COST_LD(ld_acquire_sys, "ld.acquire.sys.u64")
__device__ __forceinline__ void fence_acq_rel_gpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

constexpr uint64_t kTimeoutNs = 10ull * 1000 * 1000 * 1000;

// Round i sends base + i + 1; the initiator times the last 90% of the rounds.
// kShaped: each round also does what tmashmem-perf's ping-pong kernel does around
// the signal (a shared failure flag, __syncthreads, a timestamp store per round), to
// tell the cost of the signal calls from their interplay with that code.
template <Send kSend, Wait kWait, bool kShaped = false>
__global__ void pingpong(const __grid_constant__ tmashmem_ctx_t ctx, uint64_t* flag, uint64_t base,
                         long iters, int peer, int initiator, unsigned long long* elapsed_ns,
                         int* error) {
  __shared__ int failed;
  if (kShaped) failed = 0;
  __syncthreads();
  uint64_t* remote = tmashmem::ptr(ctx, flag, peer);
  auto send = [&](uint64_t v) {
    if constexpr (kSend == Send::LibRelease) tmashmem::signal_op(ctx, flag, v, SignalOp::Set, peer);
    if constexpr (kSend == Send::LibRelaxed)
      tmashmem::signal_op_relaxed(ctx, flag, v, SignalOp::Set, peer);
    if constexpr (kSend == Send::FenceThenStRelaxed) fence_acq_rel_gpu();
    if constexpr (kSend == Send::StRelaxedGpu || kSend == Send::FenceThenStRelaxed)
      st_relaxed_gpu(remote, v);
    if constexpr (kSend == Send::StRelaxedSys) st_relaxed_sys(remote, v);
    if constexpr (kSend == Send::StVolatile) st_volatile(remote, v);
    if constexpr (kSend == Send::StReleaseSys) st_release_sys(remote, v);
  };
  auto wait = [&](uint64_t v) {
    bool ok = true;
    uint64_t seen = 0;
    if constexpr (kWait == Wait::LibTimeout)
      ok = tmashmem::signal_wait_until(ctx, flag, Cmp::GE, v, kTimeoutNs, peer) ==
           tmashmem::Status::Ok;
    if constexpr (kWait == Wait::LibForever) tmashmem::signal_wait_until(ctx, flag, Cmp::GE, v);
    if constexpr (kWait == Wait::LibCtxForever)
      ok = tmashmem::signal_wait_until(ctx, flag, Cmp::GE, v, 0, peer) == tmashmem::Status::Ok;
    if constexpr (kWait == Wait::AcquireGpuPoll)
      while (ld_acquire_gpu(flag) < v) continue;
    if constexpr (kWait == Wait::RelaxedPollFence) {
      while (ld_relaxed_gpu(flag) < v) continue;
      fence_acq_rel_gpu();
    }
    if constexpr (kWait == Wait::VolatilePoll)
      while (ld_volatile(flag) < v) continue;
    if constexpr (kWait == Wait::AcquireSysPoll)
      while (ld_acquire_sys(flag) < v) continue;
    if constexpr (kWait == Wait::AcquireGpuPollChecked) {
      while ((seen = ld_acquire_gpu(flag)) < v) continue;
      ok = seen != ~0ull;  // never false, but the compiler cannot know
    }
    if (!ok) *error = 1;
    return ok;
  };
  uint64_t start = 0;
  for (long i = 0; i < iters; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (i == iters / 10) start = perf::global_timer();
    if (kShaped) {
      if (!initiator) {
        if (!wait(v)) failed = 1;
        __syncthreads();
        if (failed) return;
      }
      send(v);
      if (initiator) {
        if (!wait(v)) failed = 1;
        __syncthreads();
        if (failed) return;
        elapsed_ns[1 + (i & 1023)] = perf::global_timer();
      }
      continue;
    }
    if (!initiator && !wait(v)) return;
    send(v);
    if (initiator && !wait(v)) return;
  }
  // The flag holds exactly the last value: nothing was lost or reordered.
  if (ld_volatile(flag) != base + uint64_t(iters)) *error = 2;
  if (initiator) *elapsed_ns = perf::global_timer() - start;
}

// The text of each part of a variant's name.
const char* const kSendName[] = {"signal_op (release)", "signal_op_relaxed",
                                 "st.relaxed.gpu",      "st.relaxed.sys",
                                 "st.volatile",         "fence.acq_rel.gpu + st.relaxed.gpu",
                                 "st.release.sys"};
const char* const kWaitName[] = {"signal_wait_until(timeout)",
                                 "signal_wait_until",
                                 "ld.acquire.gpu poll",
                                 "ld.relaxed.gpu poll + fence",
                                 "ld.volatile poll",
                                 "ld.acquire.sys poll",
                                 "signal_wait_until(ctx, timeout 0)",
                                 "ld.acquire.gpu poll, checked"};

using Launch = void (*)(const tmashmem_ctx_t&, uint64_t*, uint64_t, long, int, int,
                        unsigned long long*, int*);
struct Variant {
  Send send;
  Wait wait;
  bool shaped;
  Launch launch;
  std::string name() const {
    return std::string(shaped ? "perf-shaped: " : "") + kSendName[int(send)] + " + " +
           kWaitName[int(wait)];
  }
};

template <Send kSend, Wait kWait, bool kShaped = false>
Variant variant() {
  return {kSend, kWait, kShaped,
          [](const tmashmem_ctx_t& ctx, uint64_t* flag, uint64_t base, long iters, int peer,
             int initiator, unsigned long long* elapsed, int* error) {
            pingpong<kSend, kWait, kShaped>
                <<<1, 1>>>(ctx, flag, base, iters, peer, initiator, elapsed, error);
          }};
}

using S = Send;
using W = Wait;
const Variant kVariants[] = {
    variant<S::LibRelease, W::LibTimeout>(),
    variant<S::LibRelease, W::LibForever>(),
    variant<S::LibRelaxed, W::LibTimeout>(),
    variant<S::LibRelaxed, W::LibForever>(),
    variant<S::LibRelaxed, W::AcquireGpuPoll>(),
    variant<S::StRelaxedGpu, W::LibTimeout>(),
    variant<S::StRelaxedGpu, W::LibForever>(),
    variant<S::StRelaxedGpu, W::AcquireGpuPoll>(),
    variant<S::StRelaxedGpu, W::RelaxedPollFence>(),
    variant<S::StVolatile, W::VolatilePoll>(),
    variant<S::FenceThenStRelaxed, W::AcquireGpuPoll>(),
    variant<S::StReleaseSys, W::AcquireSysPoll>(),
    variant<S::StRelaxedSys, W::AcquireSysPoll>(),
    variant<S::StRelaxedSys, W::LibForever>(),
    // The same calls inside the shape of tmashmem-perf's ping-pong kernel.
    variant<S::LibRelaxed, W::LibTimeout, true>(),
    variant<S::LibRelaxed, W::LibCtxForever, true>(),
    variant<S::StRelaxedGpu, W::LibTimeout, true>(),
    variant<S::LibRelaxed, W::AcquireGpuPoll, true>(),
    variant<S::StRelaxedGpu, W::AcquireGpuPollChecked, true>(),
    variant<S::StVolatile, W::VolatilePoll, true>(),
    variant<S::StRelaxedGpu, W::AcquireGpuPoll, true>(),
};

}  // namespace

int main(int argc, char** argv) {
  using perf::Runtime;
  MPI_Init(&argc, &argv);
  const long iters = argc > 1 ? std::atol(argv[1]) : 20000;
  if (perf::mpi_size() != 2 || iters < 10) {
    if (perf::mpi_rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np 2 tmashmem-signal-cost [iterations >= 10]\n");
    MPI_Finalize();
    return 2;
  }
  perf::select_device("tmashmem", argc, argv);
  Runtime::init();
  const int me = Runtime::my_pe();
  // Repetition r of every variant waits on flag slot r: each variant sees the same 7 flag
  // placements (where a flag sits in the L2 moves a round trip; perf::ping_flag).
  constexpr int kReps = 7;
  static_assert(kReps <= perf::kPingFlagSlots, "one flag slot per repetition");
  auto* flags = reinterpret_cast<uint64_t*>(Runtime::alloc(perf::kPingFlagBytes));
  PERF_CUDA(cudaMemset(flags, 0, perf::kPingFlagBytes));
  PERF_CUDA(cudaDeviceSynchronize());
  const tmashmem_ctx_t ctx = Runtime::device().ctx;
  unsigned long long* elapsed = nullptr;
  int* error = nullptr;
  PERF_CUDA(cudaMalloc(&elapsed, 1025 * sizeof *elapsed));
  PERF_CUDA(cudaMalloc(&error, sizeof *error));
  PERF_CUDA(cudaMemset(error, 0, sizeof *error));
  if (me == 0)
    std::printf(
        "signal round trip, PE 0 <-> PE 1, one thread each, %ld rounds x %d repetitions, one "
        "flag address per repetition (one_gpu flag %d)\n%-64s %9s %9s %9s  (us per round trip)\n",
        iters, kReps, (ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) != 0, "send + wait", "min", "median",
        "max");
  uint64_t base = 0;
  int err = 0;
  for (const Variant& v : kVariants) {
    const std::string name = v.name();
    std::vector<double> us;
    for (int rep = 0; rep < kReps && !err; ++rep) {
      Runtime::barrier_all();
      v.launch(ctx, perf::ping_flag(flags, rep), base, iters, 1 - me, me == 0, elapsed, error);
      PERF_LAUNCHED(name.c_str());
      perf::sync_stream(nullptr, 60, name);
      base += uint64_t(iters);
      unsigned long long ns = 0;
      PERF_CUDA(cudaMemcpy(&ns, elapsed, sizeof ns, cudaMemcpyDeviceToHost));
      PERF_CUDA(cudaMemcpy(&err, error, sizeof err, cudaMemcpyDeviceToHost));
      if (err)
        std::fprintf(stderr, "[PE %d] %s: %s\n", me, name.c_str(),
                     err == 1 ? "a wait timed out" : "the flag did not end at the last value");
      us.push_back(double(ns) / 1000.0 / double(iters - iters / 10));
    }
    MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (err) break;
    const perf::Spread t = perf::spread_of(us);
    if (me == 0) std::printf("%-64s %9.3f %9.3f %9.3f\n", name.c_str(), t.min, t.median, t.max);
  }
  if (me == 0) std::printf("%s\n", err ? "FAILED" : "all round trips checked");
  Runtime::free(flags);
  PERF_CUDA(cudaFree(elapsed));
  PERF_CUDA(cudaFree(error));
  Runtime::finalize();
  MPI_Finalize();
  return err ? 1 : 0;
}
