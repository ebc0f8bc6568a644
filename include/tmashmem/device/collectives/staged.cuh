// Small collectives in one handshake, through staging memory: each PE writes its pieces
// straight into the peers' staging (a symmetric region the caller owns), signals Ready,
// waits for every peer's Ready, and builds its destination from its own staging with local
// reads. The direct forms (allgather.cuh, ...) run two handshakes (Ready before any peer
// touches a buffer, Done before the buffers are released); here no peer ever touches this
// PE's src or dest, so no Done is needed, and the data crosses before the one signal
// instead of after it.
//
// Staging layout (per PE, coll_staging_bytes of it): a region of `slot_bytes` for every
// (slot, epoch parity, source PE); PE p's piece for PE q in the step of epoch e on slot b
// lies in q's staging at (b, e % 2, p). A step overwrites its parity's regions in the
// peers only after each peer stored Ready of the step before it on the slot (a wait that
// has normally long been satisfied), so a peer never still reads what is overwritten:
// that peer read them two steps back, before it signalled that Ready.
//
// Contract: that of coll_exchange (exchange.cuh): on Ok dest is complete here, src may be
// reused, no peer touches src or dest for this call. Every PE uses the same staging offset
// and slot_bytes. A CTA's piece for one peer must fit in slot_bytes (the host half chooses
// the CTA count so that it does); a larger one traps with a message. Collective over the CTA.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>

#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"
#include "tmashmem/device/collectives/reduce_math.cuh"
#include "tmashmem/device/copy_loop.cuh"
#include "tmashmem/device/signal.cuh"

namespace tmashmem {

/// A staging region (symmetric; this PE's address) cut into slot_bytes pieces.
struct CollStaging {
  char* base;
  size_t slot_bytes;  ///< bytes per (slot, parity, source PE); a multiple of 16
};

/// Bytes per (slot, parity, source PE) of a staging region of `bytes` over `slots` slots.
__host__ __device__ constexpr size_t coll_staging_slot_bytes(size_t bytes, int slots, int n_pes) {
  return bytes / (static_cast<size_t>(slots) * 2u * static_cast<size_t>(n_pes)) / 16u * 16u;
}

namespace detail {

__device__ __forceinline__ char* coll_staging_at(const CollStaging& stg, int slot, uint64_t epoch,
                                                 int n_pes, int from) {
  const size_t region = (static_cast<size_t>(slot) * 2u + (epoch & 1u)) * n_pes + from;
  return stg.base + region * stg.slot_bytes;
}

// coll_begin for a staged step, with its staging guard overlapped: every thread reads the
// slot's counter, and lane q of the first warp reads peer q's Ready entry right after it
// (both loads in flight at once). Only when some peer has not yet stored Ready of the step
// before this one (rare: that step waited for a subset of the peers) is there a wait.
__device__ __forceinline__ Status coll_staged_begin(const Ctx& ctx, const CollState& st, int slot,
                                                    uint64_t peers, uint64_t timeout_ns,
                                                    const char* what, CollStep* step) {
  __syncthreads();  // the previous step's coll_end store is ordered before these loads
  const unsigned tid = block_thread_rank();
  const bool lane = tid < 32 && static_cast<int>(tid) < ctx.n_pes && ((peers >> tid) & 1u);
  const uint64_t e = *static_cast<volatile uint64_t*>(st.epochs + slot) + 1;
  const uint64_t seen = lane ? signal_fetch(coll_row(st, CollRow::Ready, slot) + tid) : e;
  *step = CollStep{slot, e};
  // Also the barrier after which coll_end may store the counter.
  if (!__syncthreads_or((lane && seen + 1 < e) || ctx.n_pes > 32)) return Status::Ok;
  return coll_wait(ctx, st, CollRow::Ready, CollStep{slot, e - 1}, peers, timeout_ns, what);
}

}  // namespace detail

/// The one-handshake step: push(q, to) copies this CTA's piece for peer q to `to` (q's
/// staging, remote); combine(from) builds this CTA's part of dest, from(q) being the
/// staging that holds peer q's piece (local). Both are called by every thread.
template <class Push, class Combine>
__device__ __forceinline__ Status coll_staged_exchange(const Ctx& ctx, const CollState& st,
                                                       int slot, const CollStaging& stg,
                                                       Push&& push, Combine&& combine,
                                                       uint64_t timeout_ns, const char* what) {
  if (!coll_usable(ctx, st, slot)) return Status::Unreachable;
  const uint64_t peers = coll_all_peers(ctx);
  const int n = ctx.n_pes, me = ctx.my_pe;
  CollStep step;
  Status s = detail::coll_staged_begin(ctx, st, slot, peers, timeout_ns, what, &step);
  if (s == Status::Ok) {
    char* mine = detail::coll_staging_at(stg, slot, step.epoch, n, me);
    for (int k = 1; k < n; ++k) {
      const int q = coll_peer(ctx, k);
      push(q, ptr(ctx, mine, q));
    }
    coll_signal(ctx, st, CollRow::Ready, step, peers);  // publishes the pushes
    s = coll_wait(ctx, st, CollRow::Ready, step, peers, timeout_ns, what);
    if (s == Status::Ok)
      combine([&](int q) -> const char* {
        return detail::coll_staging_at(stg, slot, step.epoch, n, q);
      });
  }
  coll_end(st, step);
  return s;
}

namespace detail {

// Every thread's part of a CTA copy with the SMs (pieces here are at most slot_bytes).
__device__ __forceinline__ void coll_sm_copy(void* dst, const void* src, size_t n) {
  block_copy_bytes(static_cast<char*>(dst), static_cast<const char*>(src), n, block_thread_rank(),
                   block_thread_count());
}

// The gathering collectives' staged step: my piece for q is src + q * src_stride (slice s
// of `bytes`), q's piece lands in dest at q * bytes. src_stride 0: all-gather; bytes:
// all-to-all. Only `root`'s pieces move when root >= 0 (broadcast: dest_stride 0).
__device__ __forceinline__ Status coll_staged_blocks(const Ctx& ctx, const CollState& st, int slot,
                                                     const CollStaging& stg, void* dest,
                                                     const void* src, size_t bytes,
                                                     size_t src_stride, size_t dest_stride,
                                                     int root, int part, int parts,
                                                     uint64_t timeout_ns, const char* what) {
  const CollSlice s = coll_slice(bytes, part, parts);
  if (s.len > stg.slot_bytes)
    coll_piece_trap(ctx.my_pe, what, s.len, stg.slot_bytes, "staging slot");
  char* d = static_cast<char*>(dest) + s.offset;
  const char* f = static_cast<const char*>(src) + s.offset;
  const int me = ctx.my_pe;
  const bool sends = root < 0 || root == me;
  auto push = [&](int q, char* to) {
    if (sends) coll_sm_copy(to, f + size_t(q) * src_stride, s.len);
  };
  auto combine = [&](auto from) {
    for (int q = 0; q < ctx.n_pes; ++q) {
      if (root >= 0 && q != root) continue;
      const char* piece = q == me ? f + size_t(me) * src_stride : from(q);
      if (d + size_t(q) * dest_stride != piece)
        coll_sm_copy(d + size_t(q) * dest_stride, piece, s.len);
    }
  };
  return coll_staged_exchange(ctx, st, slot, stg, push, combine, timeout_ns, what);
}

}  // namespace detail

/// allgather_block (allgather.cuh) in one handshake through staging.
__device__ __forceinline__ Status allgather_staged_block(const Ctx& ctx, const CollState& st,
                                                         int slot, const CollStaging& stg,
                                                         void* dest, const void* src, size_t bytes,
                                                         int part, int parts, uint64_t timeout_ns,
                                                         const char* what = "allgather") {
  return detail::coll_staged_blocks(ctx, st, slot, stg, dest, src, bytes, 0, bytes, -1, part, parts,
                                    timeout_ns, what);
}

/// alltoall_block (alltoall.cuh) in one handshake through staging.
__device__ __forceinline__ Status alltoall_staged_block(const Ctx& ctx, const CollState& st,
                                                        int slot, const CollStaging& stg,
                                                        void* dest, const void* src, size_t bytes,
                                                        int part, int parts, uint64_t timeout_ns,
                                                        const char* what = "alltoall") {
  return detail::coll_staged_blocks(ctx, st, slot, stg, dest, src, bytes, bytes, bytes, -1, part,
                                    parts, timeout_ns, what);
}

/// broadcast_block (broadcast.cuh) in one handshake through staging (dest == src allowed).
__device__ __forceinline__ Status broadcast_staged_block(const Ctx& ctx, const CollState& st,
                                                         int slot, const CollStaging& stg,
                                                         void* dest, const void* src, size_t bytes,
                                                         int root, int part, int parts,
                                                         uint64_t timeout_ns,
                                                         const char* what = "broadcast") {
  return detail::coll_staged_blocks(ctx, st, slot, stg, dest, src, bytes, 0, 0, root, part, parts,
                                    timeout_ns, what);
}

/// reduce_scatter_block (chunk q of my src to PE q) or one-shot allreduce_block (my whole
/// src to every PE) in one handshake through staging; reduces in PE order in fp32 as the
/// direct forms do (bit-identical results). `chunk_stride` is count for reduce-scatter,
/// 0 for all-reduce.
template <tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ Status coll_reduce_staged_block(const Ctx& ctx, const CollState& st,
                                                           int slot, const CollStaging& stg,
                                                           void* dest, const void* src,
                                                           size_t count, size_t chunk_stride,
                                                           int part, int parts, uint64_t timeout_ns,
                                                           const char* what) {
  constexpr size_t es = sizeof(typename CollElem<D>::Bits);
  const CollSlice s = coll_slice(count * es, part, parts);
  if (s.len > stg.slot_bytes)
    detail::coll_piece_trap(ctx.my_pe, what, s.len, stg.slot_bytes, "staging slot");
  const char* f = static_cast<const char*>(src) + s.offset;
  const int me = ctx.my_pe;
  const size_t stride = chunk_stride * es;
  auto push = [&](int q, char* to) { detail::coll_sm_copy(to, f + size_t(q) * stride, s.len); };
  auto combine = [&](auto from) {
    coll_reduce_sources<D, Op>(
        ctx.n_pes, static_cast<char*>(dest) + s.offset,
        [&](int q) -> const void* { return q == me ? f + size_t(me) * stride : from(q); },
        s.len / es);
  };
  return coll_staged_exchange(ctx, st, slot, stg, push, combine, timeout_ns, what);
}

}  // namespace tmashmem
