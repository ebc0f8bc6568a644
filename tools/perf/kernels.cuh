// The benchmark kernels, one template per operation, shared by tmashmem-perf and
// perf_nvshmem: `Rt` is the runtime's device face (backend_tmashmem.cuh or
// nvshmem/backend.cuh), passed by value, so both programs run the same loops, partitions,
// destinations and stamps and differ only in the calls inside them.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "tools/perf/harness.cuh"

namespace perf {

// put: local src -> PE pe's dst; get: PE pe's src -> local dst. Each CTA moves its share
// (cta_range) `iters` times over with the block-scope call.
template <class Rt, bool kPut>
__global__ void block_kernel(const __grid_constant__ Rt rt, char* dst, const char* src,
                             size_t bytes, int pe, long iters) {
  const Range r = cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;  // the whole CTA leaves together
  for (long it = 0; it < iters; ++it)
    rt.template block<kPut>(dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

// The non-blocking form: each thread moves rt.nbi_share of its CTA's share (tmashmem: its
// part, blockDim.x issuers with `stage_bytes` of dynamic shared memory each; NVSHMEM: the
// whole share with the block-scope call), then rt.quiet_cta completes everything.
template <class Rt, bool kPut>
__global__ void nbi_kernel(const __grid_constant__ Rt rt, char* dst, const char* src, size_t bytes,
                           int pe, long iters, uint32_t stage_bytes) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Range r = rt.nbi_share(cta_range(bytes, blockIdx.x, gridDim.x));
  if (r.end > r.begin)
    for (long it = 0; it < iters; ++it)
      rt.template nbi<kPut>(dst + r.begin, src + r.begin, r.end - r.begin, pe, smem, stage_bytes);
  rt.quiet_cta();
}

enum class MsgOp { RawStore, P, Put, PutSignal };

// Message m of thread g (of T) lands in slot g + (m mod laps) * T, so consecutive messages
// of a warp go to consecutive slots and the destination holds `laps * T` slots of `size`
// bytes. The source holds the pattern at the same offsets, so the destination must equal it
// wherever a message landed. kQuietEach: quiet after every message (the latency form, one
// thread); otherwise one quiet at the end (the rate form). RawStore is the reference for p:
// one plain 8-byte store through the peer mapping `raw_dst`.
template <class Rt, MsgOp kOp, bool kQuietEach>
__global__ void msg_kernel(const __grid_constant__ Rt rt, char* dst, char* raw_dst, const char* src,
                           size_t size, uint64_t* sig, long laps, int pe, long iters) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t g = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  long lap = 0;
  for (long m = 0; m < iters; ++m) {
    const size_t off = (g + size_t(lap) * threads) * size;
    if constexpr (kOp == MsgOp::RawStore)
      *reinterpret_cast<volatile uint64_t*>(raw_dst + off) =
          *reinterpret_cast<const uint64_t*>(src + off);
    else if constexpr (kOp == MsgOp::P)
      rt.p(reinterpret_cast<uint64_t*>(dst + off), *reinterpret_cast<const uint64_t*>(src + off),
           pe);
    else if constexpr (kOp == MsgOp::Put)
      rt.put(dst + off, src + off, size, pe);
    else
      rt.template put_signal<true>(dst + off, src + off, size, sig + g, 1, pe);
    if constexpr (kQuietEach) rt.quiet();
    if (++lap == laps) lap = 0;
  }
  if constexpr (!kQuietEach) rt.quiet();
}

// Ping-pong between PE 0 (initiator) and PE 1, one CTA each. Round i sends base + i + 1
// (PingOp): a signal, a relaxed signal, or a put_signal of `bytes` from one thread or from
// the whole block whose first and last words carry the value (the receiver checks both after
// its wait). kBounded: waits are bounded by timeout_ns where the runtime has a bound
// (*error = 1 on a timeout); otherwise they wait forever (the host watchdog ends a hung
// run). *error = 2 on wrong data. The initiator stamps every timed round trip.
//
// Thread-scope rounds run in a one-thread CTA and keep their status in a register; only the
// block-scope round shares it through shared memory and __syncthreads (a shared-memory round
// trip on the critical path costs about 0.04 us per wait).
template <class Rt, PingOp kOp, bool kBounded = true>
__global__ void pingpong_kernel(const __grid_constant__ Rt rt, char* buf, char* src, size_t bytes,
                                uint64_t* flag, uint64_t base, long warmup, long iters, int peer,
                                int initiator, uint64_t timeout_ns, uint64_t* stamps, int* error) {
  constexpr bool kBlock = kOp == PingOp::PutSignalBlock;
  constexpr bool kData = kBlock || kOp == PingOp::PutSignalThread;
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
      if (!rt.wait_ge(flag, v, kBounded ? timeout_ns : 0, peer)) {
        failed = 1;
      } else if (kData) {
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
      rt.put_signal_block(buf, src, bytes, flag, v, peer);
    } else if constexpr (kOp == PingOp::PutSignalThread) {
      out[0] = v;
      out[last] = v;
      rt.template put_signal<false>(buf, src, bytes, flag, v, peer);
    } else if constexpr (kOp == PingOp::SignalRelaxed) {
      rt.signal_relaxed(flag, v, peer);
    } else {
      rt.signal(flag, v, peer);
    }
  };
  for (long i = 0; i < warmup + iters; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (initiator && threadIdx.x == 0 && i == warmup) stamp_start(stamps, iters);
    if (!initiator) receive(v);
    if (failed) break;
    send(v);
    if (initiator) receive(v);
    if (failed) break;
    if (initiator && threadIdx.x == 0 && i >= warmup) stamp_iteration(stamps, i - warmup);
  }
  if (threadIdx.x == 0) {
    if (initiator && !failed) stamp_end(stamps, iters);
    stamp_sm(stamps, iters);
    if (failed) *error = failed;
  }
}

// Back-to-back device barriers over every PE, gridDim.x CTAs per PE. With kCheck, before
// barrier i thread 0 of CTA 0 stores base + i + 1 into marks[my_pe] on every PE, and after
// it checks that every PE's mark reached that value (a PE may already have stored the next
// one). *error = 1 on a timeout, 3 on a stale mark. CTA 0's thread 0 stamps every barrier.
template <class Rt, bool kCheck, bool kSyncOnly>
__global__ void barrier_kernel(const __grid_constant__ Rt rt, uint64_t* marks, uint64_t base,
                               long warmup, long iters, uint64_t timeout_ns, uint64_t* stamps,
                               int* error) {
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  const int me = rt.my_pe(), n = rt.n_pes();
  for (long i = 0; i < warmup + iters; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (leader && i == warmup) stamp_start(stamps, iters);
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) rt.p(&marks[me], v, q);
      if (kSyncOnly && !Rt::kSyncAllCompletesStores) rt.quiet();
    }
    if (!(kSyncOnly ? rt.sync_all(timeout_ns) : rt.barrier_all(timeout_ns))) {
      if (threadIdx.x == 0) *error = 1;
      return;
    }
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) {
        const uint64_t seen = rt.read_local(&marks[q]);
        if (seen < v || seen > v + 1) *error = 3;
      }
    }
    if (leader && i >= warmup) stamp_iteration(stamps, i - warmup);
  }
  if (leader) stamp_end(stamps, iters);
}

}  // namespace perf
