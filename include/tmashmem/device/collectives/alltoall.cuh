// All-to-all of equal blocks and of variable blocks (MoE dispatch/combine).
//
//  - alltoall_block: PE p's src[q * bytes, +bytes) lands in PE q's dest[p * bytes, +bytes).
//    Pull reads peers' src (symmetric), Push writes peers' dest (symmetric).
//  - alltoallv_block (push): PE p sends src[send_offsets[q], +send_counts[q]) to PE q, which
//    receives it at dest[recv_offsets[p], +send_counts[q]) (bytes). send_counts and
//    send_offsets are this PE's (device memory), recv_offsets is symmetric and read on the
//    receiver after its ready signal, so every array may be written by earlier work of the
//    stream. A range outside src_bytes or the receiver's dest_bytes is a programming error:
//    the CTA prints the PEs and values and traps (nothing is written out of bounds).
// One CTA moves part `part` of `parts` of every block; contract of coll_exchange.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>

#include "tmashmem/device/collectives/allgather.cuh"
#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"

namespace tmashmem {

__device__ __forceinline__ Status alltoall_block(const Ctx& ctx, const CollState& st, int slot,
                                                 void* dest, const void* src, size_t bytes,
                                                 int part, int parts, CollMode mode, CollCopy how,
                                                 CollScratch scratch, uint64_t timeout_ns,
                                                 const char* what = "alltoall") {
  return detail::coll_blocks_step(ctx, st, slot, dest, src, bytes, bytes, part, parts, mode, how,
                                  scratch, timeout_ns, what);
}

namespace detail {

__device__ __noinline__ inline void coll_range_trap(const Ctx& ctx, const char* what, int peer,
                                                    const char* which, uint64_t offset,
                                                    uint64_t count, uint64_t limit) {
  printf(
      "[tmashmem PE %d] %s: the block for PE %d has %s offset %llu + count %llu past %llu "
      "bytes; fix send_counts/send_offsets/recv_offsets\n",
      ctx.my_pe, what, peer, which, static_cast<unsigned long long>(offset),
      static_cast<unsigned long long>(count), static_cast<unsigned long long>(limit));
  __trap();
}

}  // namespace detail

__device__ __forceinline__ Status alltoallv_block(
    const Ctx& ctx, const CollState& st, int slot, void* dest, size_t dest_bytes, const void* src,
    size_t src_bytes, const uint64_t* send_counts, const uint64_t* send_offsets,
    const uint64_t* recv_offsets, int part, int parts, CollCopy how, CollScratch scratch,
    uint64_t timeout_ns, const char* what = "alltoallv") {
  const int me = ctx.my_pe;
  auto body = [&] {
    for (int k = 0; k < ctx.n_pes; ++k) {
      const int q = coll_peer(ctx, k);  // k = 0: this PE's own block
      const uint64_t count = send_counts[q], soff = send_offsets[q];
      const uint64_t roff = *static_cast<const volatile uint64_t*>(ptr(ctx, recv_offsets, q) + me);
      if (soff > src_bytes || count > src_bytes - soff)
        detail::coll_range_trap(ctx, what, q, "send", soff, count, src_bytes);
      if (roff > dest_bytes || count > dest_bytes - roff)
        detail::coll_range_trap(ctx, what, q, "receive", roff, count, dest_bytes);
      const CollSlice s = coll_slice(count, part, parts);
      coll_copy_block(ptr(ctx, static_cast<char*>(dest) + roff + s.offset, q),
                      static_cast<const char*>(src) + soff + s.offset, s.len, how, scratch);
    }
  };
  return coll_exchange_all(ctx, st, slot, body, timeout_ns, what);
}

}  // namespace tmashmem
