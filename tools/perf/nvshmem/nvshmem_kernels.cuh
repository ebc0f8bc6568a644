// NVSHMEM's side of tmashmem-perf: the same kernels as bw_kernels.cuh and
// msg_kernels.cuh, with NVSHMEM's calls. Same partition (perf::cta_range), same
// destinations, same stamps, so the numbers compare one to one.
#pragma once

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>

#include "tools/perf/perf_cuda.cuh"

namespace perf_nv {

// ---- bandwidth --------------------------------------------------------------------

static __global__ void block_put_kernel(char* dst, const char* src, size_t bytes, int pe,
                                        long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  for (long it = 0; it < iters; ++it)
    nvshmemx_putmem_block(dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

static __global__ void block_get_kernel(char* dst, const char* src, size_t bytes, int pe,
                                        long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  for (long it = 0; it < iters; ++it)
    nvshmemx_getmem_block(dst + r.begin, src + r.begin, r.end - r.begin, pe);
}

// putmem_nbi_block / getmem_nbi_block `iters` times, then one quiet per CTA.
static __global__ void nbi_put_kernel(char* dst, const char* src, size_t bytes, int pe,
                                      long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  for (long it = 0; it < iters; ++it)
    nvshmemx_putmem_nbi_block(dst + r.begin, src + r.begin, r.end - r.begin, pe);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

static __global__ void nbi_get_kernel(char* dst, const char* src, size_t bytes, int pe,
                                      long iters) {
  const perf::Range r = perf::cta_range(bytes, blockIdx.x, gridDim.x);
  if (r.begin == r.end) return;
  for (long it = 0; it < iters; ++it)
    nvshmemx_getmem_nbi_block(dst + r.begin, src + r.begin, r.end - r.begin, pe);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

// ---- small messages (see perf_tm::msg_kernel for the slot layout) --------------------

enum class MsgOp { RawStore, P, Put, PutSignal };

template <MsgOp kOp, bool kQuietEach>
__global__ void msg_kernel(char* dst, char* raw_dst, const char* src, size_t size, uint64_t* sig,
                           long laps, int pe, long iters) {
  const size_t threads = size_t(gridDim.x) * blockDim.x;
  const size_t g = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  long lap = 0;
  for (long m = 0; m < iters; ++m) {
    const size_t off = (g + size_t(lap) * threads) * size;
    if constexpr (kOp == MsgOp::RawStore) {
      *reinterpret_cast<volatile uint64_t*>(raw_dst + off) =
          *reinterpret_cast<const uint64_t*>(src + off);
    } else if constexpr (kOp == MsgOp::P) {
      nvshmem_uint64_p(reinterpret_cast<uint64_t*>(dst + off),
                       *reinterpret_cast<const uint64_t*>(src + off), pe);
    } else if constexpr (kOp == MsgOp::Put) {
      nvshmem_putmem(dst + off, src + off, size, pe);
    } else {
      nvshmem_putmem_signal(dst + off, src + off, size, sig + g, 1, NVSHMEM_SIGNAL_ADD, pe);
    }
    if constexpr (kQuietEach) nvshmem_quiet();
    if (++lap == laps) lap = 0;
  }
  if constexpr (!kQuietEach) nvshmem_quiet();
}

// ---- ping-pong (see perf_tm::pingpong_kernel) ------------------------------------------

// NVSHMEM's waits have no timeout: the host watchdog (perf::sync_stream) bounds them.
// kOp: Signal (nvshmemx_signal_op), PutSignalThread (nvshmem_putmem_signal, one-thread
// CTA) or PutSignalBlock (nvshmemx_putmem_signal_block). Same structure as
// perf_tm::pingpong_kernel: only the block-scope round shares its status through shared
// memory.
template <perf::PingOp kOp>
__global__ void pingpong_kernel(char* buf, char* src, size_t bytes, uint64_t* flag, uint64_t base,
                                long warmup, long iters, int peer, int initiator, uint64_t* stamps,
                                int* error) {
  using perf::PingOp;
  constexpr bool kData = perf::ping_carries_data(kOp);
  constexpr bool kBlock = kOp == PingOp::PutSignalBlock;
  __shared__ int block_failed;
  if (kBlock && threadIdx.x == 0) block_failed = 0;
  if (kBlock) __syncthreads();
  const size_t last = bytes / 8 - 1;
  uint64_t* out = reinterpret_cast<uint64_t*>(src);
  const volatile uint64_t* in = reinterpret_cast<const volatile uint64_t*>(buf);
  int failed = 0;
  auto receive = [&](uint64_t v) {
    if (threadIdx.x == 0) {
      nvshmem_signal_wait_until(flag, NVSHMEM_CMP_GE, v);
      if (kData) {
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
      nvshmemx_putmem_signal_block(buf, src, bytes, flag, v, NVSHMEM_SIGNAL_SET, peer);
    } else if constexpr (kOp == PingOp::PutSignalThread) {
      out[0] = v;
      out[last] = v;
      nvshmem_putmem_signal(buf, src, bytes, flag, v, NVSHMEM_SIGNAL_SET, peer);
    } else {
      nvshmemx_signal_op(flag, v, NVSHMEM_SIGNAL_SET, peer);
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

// ---- barrier (see perf_tm::barrier_kernel): one CTA per PE, block-scope calls --------

template <bool kCheck, bool kSyncOnly>
__global__ void barrier_kernel(uint64_t* marks, uint64_t base, long warmup, long iters,
                               uint64_t* stamps, int* error) {
  const bool leader = threadIdx.x == 0;
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  const long total = warmup + iters;
  for (long i = 0; i < total; ++i) {
    const uint64_t v = base + uint64_t(i) + 1;
    if (leader && i == warmup) perf::stamp_start(stamps, iters);
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) nvshmem_uint64_p(&marks[me], v, q);
      if (kSyncOnly) nvshmem_quiet();  // sync_all does not complete earlier stores
    }
    if (kSyncOnly)
      nvshmemx_sync_all_block();
    else
      nvshmemx_barrier_all_block();
    if (kCheck && leader) {
      for (int q = 0; q < n; ++q) {
        const uint64_t seen = reinterpret_cast<volatile uint64_t*>(marks)[q];
        if (seen < v || seen > v + 1) *error = 3;
      }
    }
    if (leader && i >= warmup) perf::stamp_iteration(stamps, i - warmup);
  }
  if (leader) perf::stamp_end(stamps, iters);
}

}  // namespace perf_nv
