// The fused kernels' synchronisation state: one symmetric, zero-initialised array of 64-bit
// words per PE (the "signal workspace"), the call epoch, bounded waits that trap with a
// message, and the end-of-call protocol. No reset kernel and no global barrier: every flag
// is compared against the epoch of the current call, which only grows.
//
// Layout (word offsets; FusedWords names them):
//   0            epoch: calls of this kind completed on this PE (the kernel of call e, counting
//                from 1, reads e - 1 here and writes e when its last CTA finishes; the
//                reduce-scatter with one PE, which has no peer to wait for, neither reads nor
//                writes it)
//   1            CTAs of the current call that have finished (reset by the last one)
//   2            all-gather: the next copy piece to claim (reset by the last CTA)
//   3            the next GEMM tile to claim (gemm/tile_queue.cuh; the launch's last claim
//                resets it)
//   8 + p        permit[p]: PE p's epoch when it allowed this call's traffic (written by p):
//                all-gather: p's shard is ready to be read; reduce-scatter: p's output
//                (or staging) may be written
//   72 + p       done[p]: PE p's epoch once it finished with this PE (written by p):
//                all-gather: p has read this PE's shard; reduce-scatter: p's adds into
//                this PE's output have completed (a count: p adds 1 per call)
//   136 + p      a local per-peer counter of the current call (reset by the last CTA)
//   256 + i      per-chunk or per-tile flags (all-gather: then one piece counter per chunk;
//                reduce-scatter, deterministic: counts of the partials added, in units of
//                the epoch times n_pes)
//
// Every PE must pass the same workspace (same symmetric address) to the same sequence of
// calls; a workspace serves one kind of call (all-gather or reduce-scatter). Up to
// kFusedMaxPes PEs.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/clock.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/ld_st.cuh"
#include "tmashmem/device/signal.cuh"

namespace tmashmem::fused {

constexpr int kFusedMaxPes = 64;
constexpr uint64_t kFusedDefaultTimeoutNs = 10ull * 1000 * 1000 * 1000;

namespace words {
constexpr int kEpoch = 0;
constexpr int kFinished = 1;
constexpr int kClaim = 2;      // the all-gather's next copy piece to hand out (claimed in order)
constexpr int kTileClaim = 3;  // the GEMM's next tile to hand out (gemm/tile_queue.cuh)
constexpr int kPermit = 8;
constexpr int kDone = 72;
constexpr int kCounter = 136;
constexpr int kFlags = 256;
}  // namespace words

/// A workspace word as the 64-bit integer CUDA's atomics take (counts and claims).
__device__ __forceinline__ unsigned long long* as_counter(uint64_t* word) {
  return reinterpret_cast<unsigned long long*>(word);
}

/// Bytes of a signal workspace with `flags` per-chunk / per-tile flags.
__host__ __device__ constexpr uint64_t fused_workspace_bytes(uint64_t flags) {
  return (words::kFlags + flags) * sizeof(uint64_t);
}

/// The epoch of the call this kernel runs (1 for the first). Stable for the whole kernel:
/// only the call's last CTA changes the word, after every CTA has read it.
__device__ __forceinline__ uint64_t fused_epoch(const uint64_t* ws) {
  return detail::ld_relaxed_gpu(ws + words::kEpoch) + 1;
}

/// Traps: a lost signal is a bug or a PE that never joined the call, and a trap fails the
/// stream (the next synchronisation reports the launch failure) instead of hanging it. Debug
/// builds (TMASHMEM_DEVICE_DEBUG) first print who waited for what. Release builds print
/// nothing: printf is a function call, and any call in a kernel with wgmma makes ptxas
/// serialise every wgmma of the kernel (warning C7510).
__device__ __forceinline__ void fused_timeout(const char* call, int pe, const char* what, int index,
                                              uint64_t expected, uint64_t seen) {
#ifdef TMASHMEM_DEVICE_DEBUG
  printf(
      "[tmashmem PE %d] %s: timed out waiting for %s %d (expected >= %llu, seen %llu); every PE "
      "must make the same calls with the same workspace\n",
      pe, call, what, index, static_cast<unsigned long long>(expected),
      static_cast<unsigned long long>(seen));
#else
  (void)call, (void)pe, (void)what, (void)index, (void)expected, (void)seen;
#endif
  __trap();
}

/// Polls this PE's word `w` (acquire, system scope) until it reaches `value`, at most
/// `timeout_ns`; traps with a message otherwise.
__device__ __forceinline__ void fused_wait_ge(const uint64_t* w, uint64_t value,
                                              uint64_t timeout_ns, const char* call, int pe,
                                              const char* what, int index) {
  uint64_t seen = detail::ld_acquire_sys(w);
  if (seen >= value) return;
  detail::Deadline deadline(timeout_ns);
  while ((seen = detail::ld_acquire_sys(w)) < value)
    if (deadline.expired()) fused_timeout(call, pe, what, index, value, seen);
}

/// Sets PE `pe`'s copy of word `index` of the workspace to `value` with release semantics
/// (GPU scope when the whole job shares this GPU, else system scope).
__device__ __forceinline__ void fused_publish(const Ctx& ctx, uint64_t* ws, int index,
                                              uint64_t value, int pe, SignalOp op = SignalOp::Set) {
  detail::signal_update_release(ptr(ctx, ws + index, pe), value, op,
                                (ctx.flags & TMASHMEM_CTX_FLAG_ONE_GPU) != 0);
}

/// The thread of each CTA that runs fused_finish: the first consumer thread of a GEMM CTA.
constexpr unsigned kFinishThread = 128;

/// Thread kFinishThread of every CTA, once the CTA's work is done (its bulk stores complete):
/// counts the CTA finished; the call's last CTA runs `last()` (the waits that make the call
/// complete in stream order), resets the per-call words and bumps the epoch. Returns true in that
/// CTA.
template <class Last>
__device__ __forceinline__ bool fused_finish(uint64_t* ws, uint64_t epoch, Last&& last) {
  __threadfence();
  const unsigned long long before = atomicAdd(as_counter(ws + words::kFinished), 1ull);
  if (before + 1 != gridDim.x) return false;
  __threadfence();
  last();
  for (int p = 0; p < kFusedMaxPes; ++p) ws[words::kCounter + p] = 0;
  ws[words::kFinished] = 0;
  ws[words::kClaim] = 0;
  __threadfence();
  detail::st_relaxed_gpu(ws + words::kEpoch, epoch);
  return true;
}

}  // namespace tmashmem::fused
