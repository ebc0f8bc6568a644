// How a CTA moves one contiguous block of a collective: with its SMs (ordinary 16-byte
// loads and stores, every thread) or with the TMA unit's bulk copies (cp.async.bulk
// through shared-memory staging, a few issuing threads), and how a collective splits a
// block among CTAs (coll_slice).
//
// Contract:
//  - coll_copy_block(dst, src, n, how, scratch): collective over the CTA, no trailing
//    barrier. Either side may be a peer address (ptr()). On return this thread's part of
//    the copy is complete: for CollCopy::Sm its stores are performed (ordinary stores),
//    for CollCopy::Bulk the issuing threads waited for their bulk groups and fenced the
//    async proxy, so a following coll_signal (which begins with __syncthreads) publishes
//    the whole copy. Bulk copies read memory through the async proxy: the reader-side
//    proxy fence that docs/device-api.md ("Tiles and proxies") asks for after an acquire
//    is issued by detail::bulk_copy in each issuing thread, after the CTA's coll_wait.
//  - `scratch` is dynamic shared memory the CTA lends to the bulk path; with fewer than
//    kCollMinScratch bytes the copy falls back to CollCopy::Sm.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/copy_loop.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/threads.cuh"

namespace tmashmem {

/// Which engine moves a collective's bytes.
enum class CollCopy : int {
  Sm = 0,    ///< every thread of the CTA, 16-byte vector loads and stores
  Bulk = 1,  ///< cp.async.bulk through shared staging (the TMA unit), kCollBulkIssuers threads;
             ///< leaves most threads free, but with 32 KiB of staging per CTA it took 1.4-2x
             ///< the time of Sm from 4 MiB (docs/runs.md, "Eighth session")
};

/// Shared memory a CTA lends to the bulk copies (dynamic shared memory, 16-byte aligned).
struct CollScratch {
  void* smem;
  uint32_t bytes;
};

/// Threads (lane 0 of the first warps) that issue bulk copies, each with its own share of
/// the scratch: several copies in flight per SM.
constexpr unsigned kCollBulkIssuers = 4;
/// Smallest useful scratch share per issuer (two staging chunks of 2 KiB and barriers).
constexpr uint32_t kCollMinScratchPerIssuer = 4096 + 64;
constexpr uint32_t kCollMinScratch = kCollMinScratchPerIssuer;

/// A part of a range split among CTAs.
struct CollSlice {
  size_t offset;
  size_t len;
};

/// Part `part` of `parts` of [0, n): boundaries on multiples of `align` bytes (so that
/// parts of aligned buffers stay aligned), the last part takes the remainder; parts past
/// the end are empty. Host and device, so the host can reason about the same split.
__host__ __device__ __forceinline__ CollSlice coll_slice(size_t n, int part, int parts,
                                                         size_t align = 16) {
  const size_t units = (n + align - 1) / align;
  const size_t per = (units + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts);
  size_t begin = static_cast<size_t>(part) * per * align;
  if (begin > n) begin = n;
  size_t end = begin + per * align;
  if (end > n) end = n;
  return CollSlice{begin, end - begin};
}

namespace detail {

// A CTA's piece of `need` bytes does not fit the `room` bytes of the `where` it goes
// through (a staging slot, a low-latency region): says so, naming the PE and the call, and
// traps. The host halves choose CTA counts so that it never happens.
__device__ __noinline__ inline void coll_piece_trap(int pe, const char* what, size_t need,
                                                    size_t room, const char* where) {
  printf(
      "[tmashmem PE %d] %s: a CTA's piece needs %llu bytes of the %s, which holds %llu; use "
      "more CTAs or another form of the collective\n",
      pe, what, static_cast<unsigned long long>(need), where,
      static_cast<unsigned long long>(room));
  __trap();
}

}  // namespace detail

/// Copies n bytes from src to dst with the CTA (see the contract above).
__device__ __forceinline__ void coll_copy_block(void* dst, const void* src, size_t n, CollCopy how,
                                                CollScratch scratch) {
  if (n == 0) return;
  const unsigned tid = detail::block_thread_rank();
  const unsigned threads = detail::block_thread_count();
  unsigned issuers = threads / 32 < kCollBulkIssuers ? threads / 32 : kCollBulkIssuers;
  if (issuers == 0) issuers = 1;
  const uint32_t share = scratch.smem == nullptr ? 0 : (scratch.bytes / issuers) & ~15u;
  const bool congruent =
      ((reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src)) & 15u) == 0;
  // Bulk copies need source and destination equal mod 16 (else bulk_copy would fall back
  // to one thread per issuer): the whole CTA copies instead.
  if (how == CollCopy::Sm || share < kCollMinScratchPerIssuer || !congruent) {
    detail::block_copy_bytes(static_cast<char*>(dst), static_cast<const char*>(src), n, tid,
                             threads);
    return;
  }
  if ((tid & 31u) != 0 || tid / 32 >= issuers) return;
  const unsigned w = tid / 32;
  const CollSlice s = coll_slice(n, static_cast<int>(w), static_cast<int>(issuers));
  if (s.len != 0) {
    BulkStage stage{static_cast<char*>(scratch.smem) + size_t(w) * share, share};
    detail::bulk_copy(static_cast<char*>(dst) + s.offset, static_cast<const char*>(src) + s.offset,
                      s.len, stage);
  }
  detail::bulk_wait_all();      // the writes are performed
  detail::fence_proxy_async();  // and ordered before this thread's generic-proxy release
}

}  // namespace tmashmem
