// All-gather of contiguous blocks: `dest` (n_pes * bytes) on every PE receives PE q's
// `src` (bytes) at q * bytes. One CTA moves part `part` of `parts` of every PE's block
// (coll_slice, 16-byte boundaries); every PE calls with the same part, parts and slot.
//
//  - CollMode::Pull reads each peer's src (src symmetric; dest any memory of this GPU);
//  - CollMode::Push writes into each peer's dest (dest symmetric; src any memory).
// Both run coll_exchange (exchange.cuh): on Ok, dest is complete here and src may be
// reused. The engine is `how` (copy.cuh). Collective over the CTA. With a multicast
// object the push form's n_pes - 1 stores become one store to the multicast address
// (tmashmem/device/multicast.cuh plugs in there; docs/collectives.md).
#pragma once

#include <stddef.h>

#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"

namespace tmashmem {

/// Who moves the data of a collective.
enum class CollMode : int {
  Pull = 0,  ///< each PE reads its peers' buffers
  Push = 1,  ///< each PE writes into its peers' buffers
};

namespace detail {

// The step all-gather and all-to-all share: PE p's block for PE q, src + q * src_stride
// (bytes long), lands in PE q's dest at p * bytes; CTA `part` moves part `part` of `parts`
// of every block. src_stride 0: every PE gets the same block (all-gather); bytes: each its
// own (all-to-all). Pull reads the peers' src, push writes the peers' dest.
__device__ __forceinline__ Status coll_blocks_step(const Ctx& ctx, const CollState& st, int slot,
                                                   void* dest, const void* src, size_t bytes,
                                                   size_t src_stride, int part, int parts,
                                                   CollMode mode, CollCopy how, CollScratch scratch,
                                                   uint64_t timeout_ns, const char* what) {
  const CollSlice s = coll_slice(bytes, part, parts);
  char* d = static_cast<char*>(dest) + s.offset;
  const char* f = static_cast<const char*>(src) + s.offset;
  const int me = ctx.my_pe;
  auto body = [&] {
    coll_copy_block(d + size_t(me) * bytes, f + size_t(me) * src_stride, s.len, how, scratch);
    for (int k = 1; k < ctx.n_pes; ++k) {
      const int q = coll_peer(ctx, k);
      if (mode == CollMode::Pull)
        coll_copy_block(d + size_t(q) * bytes, ptr(ctx, f + size_t(me) * src_stride, q), s.len, how,
                        scratch);
      else
        coll_copy_block(ptr(ctx, d + size_t(me) * bytes, q), f + size_t(q) * src_stride, s.len, how,
                        scratch);
    }
  };
  return coll_exchange_all(ctx, st, slot, body, timeout_ns, what);
}

}  // namespace detail

__device__ __forceinline__ Status allgather_block(const Ctx& ctx, const CollState& st, int slot,
                                                  void* dest, const void* src, size_t bytes,
                                                  int part, int parts, CollMode mode, CollCopy how,
                                                  CollScratch scratch, uint64_t timeout_ns,
                                                  const char* what = "allgather") {
  return detail::coll_blocks_step(ctx, st, slot, dest, src, bytes, 0, part, parts, mode, how,
                                  scratch, timeout_ns, what);
}

}  // namespace tmashmem
