// tmashmem small-message, ping-pong and barrier kernels. Each runs many operations
// inside one launch, so the launch cost does not hide the operation's own.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "tmashmem/device.cuh"
#include "tools/perf/perf_cuda.cuh"

namespace perf_tm {

using tmashmem::Ctx;

enum class MsgOp { RawStore, P, Put, PutSignal };

// Message m of thread g (of T) lands in slot g + (m mod laps) * T, so consecutive
// messages of a warp go to consecutive slots and the destination holds `laps * T`
// slots of `size` bytes. The source holds the pattern at the same offsets, so the
// destination must end up equal to it wherever a message landed.
//
// kQuietEach: quiet() after every message (the latency form, run by one thread);
// otherwise one quiet() at the end (the rate form).
template <MsgOp kOp, bool kQuietEach>
__global__ void msg_kernel(const __grid_constant__ Ctx ctx, char* dst, char* raw_dst,
                           const char* src, size_t size, uint64_t* sig, long laps, int pe,
                           long iters) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t g = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  long lap = 0;
  for (long m = 0; m < iters; ++m) {
    const size_t off = (g + size_t(lap) * threads) * size;
    if constexpr (kOp == MsgOp::RawStore) {
      // The reference for p: one plain 8-byte store through the peer mapping.
      *reinterpret_cast<volatile uint64_t*>(raw_dst + off) =
          *reinterpret_cast<const uint64_t*>(src + off);
    } else if constexpr (kOp == MsgOp::P) {
      tmashmem::p(ctx, reinterpret_cast<uint64_t*>(dst + off),
                  *reinterpret_cast<const uint64_t*>(src + off), pe);
    } else if constexpr (kOp == MsgOp::Put) {
      tmashmem::putmem(ctx, dst + off, src + off, size, pe);
    } else {
      tmashmem::put_signal(ctx, dst + off, src + off, size, sig + g, 1, tmashmem::SignalOp::Add,
                           pe);
    }
    if constexpr (kQuietEach) tmashmem::quiet();
    if (++lap == laps) lap = 0;
  }
  if constexpr (!kQuietEach) tmashmem::quiet();
}

// Ping-pong between PE 0 (initiator) and PE 1, one CTA each. Round i sends value
// base + i + 1 (perf::PingOp): a bare signal_op, or signal_op_relaxed (which orders
// nothing, like NVSHMEM's nvshmemx_signal_op), or a put_signal of `bytes` from one
// thread or from the whole block, whose first and last words carry the value (the
// receiver checks both after its acquire). With kBounded, waits are bounded by
// timeout_ns (*error = 1 on a timeout); without, they wait forever, like NVSHMEM's
// nvshmem_signal_wait_until (the host watchdog ends a hung run). *error = 2 on wrong
// data. The initiator stamps every timed round trip.
//
// Thread-scope rounds run in a one-thread CTA and keep their status in a register;
// only the block-scope round shares it through shared memory and __syncthreads (a
// shared-memory round trip on the critical path costs about 0.04 us per wait on an
// H200: tmashmem-signal-cost, "acquire poll, checked"). perf_nv::pingpong_kernel has
// the same structure.
template <perf::PingOp kOp, bool kBounded = true>
__global__ void pingpong_kernel(const __grid_constant__ Ctx ctx, char* buf, char* src, size_t bytes,
                                uint64_t* flag, uint64_t base, long warmup, long iters, int peer,
                                int initiator, uint64_t timeout_ns, uint64_t* stamps, int* error) {
  using perf::PingOp;
  constexpr bool kData = perf::ping_carries_data(kOp);
  constexpr bool kBlock = kOp == PingOp::PutSignalBlock;
  __shared__ int block_failed;
  if (kBlock && threadIdx.x == 0) block_failed = 0;
  if (kBlock) __syncthreads();
  const size_t last = bytes / 8 - 1;
  uint64_t* out = reinterpret_cast<uint64_t*>(src);
  const volatile uint64_t* in = reinterpret_cast<const volatile uint64_t*>(buf);
  int failed = 0;  // thread 0's status (every thread's, for kBlock)
  auto receive = [&](uint64_t v) {
    if (threadIdx.x == 0) {
      // A literal 0 lets the compiler drop the deadline from the poll loop.
      if (tmashmem::signal_wait_until(ctx, flag, tmashmem::Cmp::GE, v, kBounded ? timeout_ns : 0,
                                      peer) != tmashmem::Status::Ok)
        failed = 1;
      else if (kData) {
        const uint64_t first = in[0], final_word = in[last];  // both loads in flight at once
        if (first != v || final_word != v) failed = 2;
      }
    }
    if constexpr (kBlock) {
      if (threadIdx.x == 0 && failed) block_failed = failed;
      __syncthreads();
      failed = block_failed;
    }
  };
  auto send = [&](uint64_t v) {
    if constexpr (kBlock) {
      if (threadIdx.x == 0) {
        out[0] = v;
        out[last] = v;
      }
      __syncthreads();
      tmashmem::put_signal_block(ctx, buf, src, bytes, flag, v, tmashmem::SignalOp::Set, peer);
    } else if constexpr (kOp == PingOp::PutSignalThread) {
      out[0] = v;
      out[last] = v;
      tmashmem::put_signal(ctx, buf, src, bytes, flag, v, tmashmem::SignalOp::Set, peer);
    } else if constexpr (kOp == PingOp::SignalRelaxed) {
      tmashmem::signal_op_relaxed(ctx, flag, v, tmashmem::SignalOp::Set, peer);
    } else {
      tmashmem::signal_op(ctx, flag, v, tmashmem::SignalOp::Set, peer);
    }
  };
  const long total = warmup + iters;
  for (long i = 0; i < total; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (initiator && threadIdx.x == 0 && i == warmup) perf::stamp_start(stamps, iters);
    if (!initiator) receive(v);
    if (failed) break;
    send(v);
    if (initiator) receive(v);
    if (failed) break;
    if (initiator && threadIdx.x == 0 && i >= warmup) perf::stamp_iteration(stamps, i - warmup);
  }
  if (threadIdx.x == 0) {
    if (initiator && !failed) perf::stamp_end(stamps, iters);
    perf::stamp_sm(stamps, iters);
    if (failed) *error = failed;
  }
}

// Back-to-back device barriers over every PE, `gridDim.x` CTAs per PE. With kCheck,
// before barrier i thread 0 of CTA 0 stores base + i + 1 into marks[my_pe] on every
// PE, and after it checks that every PE's mark reached that value (a PE may already
// have stored the next one). *error = 1 on a timeout or unreachable PE, 3 on a
// stale mark. CTA 0's thread 0 stamps every timed barrier.
template <bool kCheck, bool kSyncOnly>
__global__ void barrier_kernel(const __grid_constant__ Ctx ctx, uint64_t* marks, uint64_t base,
                               long warmup, long iters, uint64_t timeout_ns, uint64_t* stamps,
                               int* error) {
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  const long total = warmup + iters;
  for (long i = 0; i < total; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (leader && i == warmup) perf::stamp_start(stamps, iters);
    if (kCheck && leader)
      for (int q = 0; q < ctx.n_pes; ++q) tmashmem::p(ctx, &marks[ctx.my_pe], v, q);
    const tmashmem::Status st =
        kSyncOnly ? tmashmem::sync_all(ctx, timeout_ns) : tmashmem::barrier_all(ctx, timeout_ns);
    if (st != tmashmem::Status::Ok) {
      if (threadIdx.x == 0) *error = 1;
      return;
    }
    if (kCheck && leader) {
      for (int q = 0; q < ctx.n_pes; ++q) {
        const uint64_t seen = tmashmem::g(ctx, &marks[q], ctx.my_pe);
        if (seen < v || seen > v + 1) *error = 3;
      }
    }
    if (leader && i >= warmup) perf::stamp_iteration(stamps, i - warmup);
  }
  if (leader) perf::stamp_end(stamps, iters);
}

}  // namespace perf_tm
