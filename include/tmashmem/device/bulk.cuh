// Non-blocking bulk put_nbi / get_nbi through cp.async.bulk, and the bulk async-group
// waits that they, the tile puts and the tile reduces complete with.
//
// Memory-ordering contract (see rma.cuh for addresses, order.cuh for fence/quiet):
//
// - put_nbi / get_nbi: thread scope. The 16-byte aligned middle of the range goes
//   global -> shared (staging) -> global with cp.async.bulk; the unaligned head
//   and tail (and everything, when source and destination differ in address mod
//   16) are copied with ordinary loads and stores before the call returns. On
//   return the source has been read completely and the staging buffer is free;
//   the destination is final only after quiet() (or fence(), put_signal_nbi,
//   barrier_all) by this thread. The call issues the generic->async proxy fence
//   for the calling thread's own earlier accesses, so a source it wrote with
//   ordinary stores may be passed directly. A source written by OTHER threads of
//   the block needs fence_proxy_async_global() in each of those threads before the
//   barrier that orders them before the call (order.cuh); the same holds for a
//   get_nbi destination that other threads read or wrote before.
// - Bulk async-groups: the tile puts and reduces commit one group each;
//   bulk_wait_group_read<N>() returns when all but the N most recent groups of this
//   thread have read their source, bulk_wait_group<N>() when all but N have completed
//   (their writes performed, not yet published to other PEs: that takes a release).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tmashmem/device/copy_loop.cuh"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/mbarrier.cuh"

namespace tmashmem {

/// Shared memory a thread lends to put_nbi / get_nbi for staging the bulk copy.
/// `smem` points into __shared__ memory (static or dynamic) that nobody else
/// touches during the call; `bytes` is its size. The first 16 bytes (after
/// rounding `smem` up to 16) hold two mbarriers, the rest two staging chunks.
/// At least kBulkStageMinBytes; a few KiB to a few tens of KiB per issuing thread
/// reach full speed. Each thread issuing bulk copies at the same time needs its own.
struct BulkStage {
  void* smem;
  uint32_t bytes;
};

/// Smallest usable BulkStage: alignment slack, two mbarriers, two 16-byte chunks.
constexpr uint32_t kBulkStageMinBytes = 15 + 16 + 2 * 16;

namespace detail {

// Largest chunk per stage: mbarrier transaction counts stay far below their limit.
constexpr uint32_t kBulkMaxChunk = 128u * 1024u;

// Copies `bytes` (a multiple of 16; dst, src 16-byte aligned) global -> shared ->
// global, double-buffered in `stage`. Returns when every bulk store has read its
// staging chunk; the stores themselves are pending in this thread's bulk groups.
// Returns false (and copies nothing) when the stage is too small.
__device__ __forceinline__ bool bulk_copy_aligned(char* dst, const char* src, size_t bytes,
                                                  BulkStage stage) {
  const uintptr_t raw = reinterpret_cast<uintptr_t>(stage.smem);
  const uintptr_t start = (raw + 15u) & ~uintptr_t(15);
  const size_t slack = start - raw;
  if (stage.smem == nullptr || stage.bytes < slack + 16 + 32) return false;
  uint32_t chunk = static_cast<uint32_t>(((stage.bytes - slack - 16) / 2) & ~size_t(15));
  if (chunk > kBulkMaxChunk) chunk = kBulkMaxChunk;

  // Stage s (0 or 1) has its mbarrier at base + 8 s and its chunk at base + 16 + s chunk.
  const uint32_t base = smem_address(reinterpret_cast<void*>(start));
  auto bar = [&](unsigned s) -> uint32_t { return base + 8u * s; };
  auto buf = [&](unsigned s) -> uint32_t { return base + 16u + s * chunk; };
  mbarrier_init(bar(0), 1);
  mbarrier_init(bar(1), 1);
  // Makes the mbarrier initialisation, this thread's earlier generic writes of the
  // source, and earlier generic use of the staging memory visible to the bulk copies.
  fence_proxy_async();

  const size_t n_chunks = (bytes + chunk - 1) / chunk;
  auto length = [&](size_t i) -> uint32_t {
    const size_t left = bytes - i * chunk;
    return static_cast<uint32_t>(left < chunk ? left : chunk);
  };
  auto load = [&](size_t i) {
    const unsigned s = static_cast<unsigned>(i & 1);
    mbarrier_arrive_expect_tx(bar(s), length(i));
    bulk_load(buf(s), src + i * chunk, length(i), bar(s));
  };

  load(0);
  if (n_chunks > 1) load(1);
  for (size_t i = 0; i < n_chunks; ++i) {
    const unsigned s = static_cast<unsigned>(i & 1);
    while (!mbarrier_try_wait_parity(bar(s), static_cast<uint32_t>((i >> 1) & 1))) {
    }
    bulk_store(dst + i * chunk, buf(s), length(i));
    bulk_commit();
    // Refill the stage chunk i-1 used with chunk i+1, once its store has read it.
    if (i >= 1 && i + 1 < n_chunks) {
      bulk_wait_read<1>();
      load(i + 1);
    }
  }
  bulk_wait_read<0>();
  mbarrier_inval(bar(0));
  mbarrier_inval(bar(1));
  return true;
}

// put_nbi / get_nbi body: bulk middle when dst and src agree mod 16, plain copy
// of the head and tail (and of everything otherwise).
__device__ __forceinline__ void bulk_copy(char* dst, const char* src, size_t n, BulkStage stage) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  if (((d ^ s) & 15u) != 0) {
    copy_bytes(dst, src, n, 0, 1);
    return;
  }
  size_t head = (16u - (d & 15u)) & 15u;
  if (head > n) head = n;
  const size_t body = (n - head) & ~size_t(15);
  copy_bytes(dst, src, head, 0, 1);
  copy_bytes(dst + head + body, src + head + body, n - head - body, 0, 1);
  if (body != 0 && !bulk_copy_aligned(dst + head, src + head, body, stage))
    copy_bytes(dst + head, src + head, body, 0, 1);
}

}  // namespace detail

/// Closes the current bulk async-group. The tile calls commit their own groups; this is for
/// bulk copies issued by other code.
__device__ __forceinline__ void bulk_commit_group() { detail::bulk_commit(); }

/// Waits until at most N of this thread's bulk async-groups are pending: the writes of all
/// the others are performed (not yet released to other PEs).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  detail::bulk_wait<N>();
}

/// Waits until at most N of this thread's bulk async-groups are still reading shared
/// memory: the source tiles of all the others may be overwritten.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  detail::bulk_wait_read<N>();
}

// ---- non-blocking bulk, byte counts -------------------------------------------

/// Starts copying `bytes` from local `src` to PE `pe`'s copy of `dest` with
/// cp.async.bulk, staged through `stage`. Thread scope. On return `src` and
/// `stage` may be reused; the data is delivered after this thread's quiet().
/// Fastest when dest and src are equal mod 16 (otherwise this is a blocking put).
__device__ __forceinline__ void putmem_nbi(const Ctx& ctx, void* dest, const void* src,
                                           size_t bytes, int pe, BulkStage stage) {
  char* remote = detail::peer_address(ctx, static_cast<char*>(dest), pe, bytes, "put_nbi");
  detail::bulk_copy(remote, static_cast<const char*>(src), bytes, stage);
}

/// Starts copying `bytes` from PE `pe`'s copy of `src` to local `dest` with
/// cp.async.bulk, staged through `stage`. Thread scope. On return `stage` may be
/// reused; `dest` holds the data after this thread's quiet().
__device__ __forceinline__ void getmem_nbi(const Ctx& ctx, void* dest, const void* src,
                                           size_t bytes, int pe, BulkStage stage) {
  const char* remote =
      detail::peer_address(ctx, static_cast<const char*>(src), pe, bytes, "get_nbi");
  detail::bulk_copy(static_cast<char*>(dest), remote, bytes, stage);
}

/// putmem_nbi of `count` elements of T.
template <class T>
__device__ __forceinline__ void put_nbi(const Ctx& ctx, T* dest, const T* src, size_t count, int pe,
                                        BulkStage stage) {
  putmem_nbi(ctx, dest, src, count * sizeof(T), pe, stage);
}
/// getmem_nbi of `count` elements of T.
template <class T>
__device__ __forceinline__ void get_nbi(const Ctx& ctx, T* dest, const T* src, size_t count, int pe,
                                        BulkStage stage) {
  getmem_nbi(ctx, dest, src, count * sizeof(T), pe, stage);
}

}  // namespace tmashmem
