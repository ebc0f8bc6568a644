// All-reduce: `dest` (count elements) on every PE = Op over PEs q of PE q's `src`.
//
//  - One-shot: every PE pulls every peer's part and reduces it in PE order (one step,
//    n_pes - 1 remote reads per element; best for small messages, latency-bound).
//  - Two-shot: reduce-scatter of PE p's chunk (coll_slice of the bytes into n_pes parts)
//    into p's dest, then an all-gather that pulls the other chunks from their owners' dest
//    (two steps on the slot; 2 (n_pes - 1) / n_pes of the data crosses the links, best
//    for large messages). dest must then be symmetric too. The reduce step of CTA `part`
//    reads a part of PE p's chunk, not the CTA's one-shot part: in a kernel that writes
//    src itself, src must be final for the whole grid first (exchange.cuh, "Data").
// Both reduce in PE order in fp32 (reduce_math.cuh): every PE gets bit-identical results.
// A multicast object would turn the two-shot's all-gather into one multimem store per
// element and the reduce into multimem.ld_reduce: tmashmem/device/multicast.cuh is where
// that plugs in (docs/collectives.md). Contract of coll_exchange.
#pragma once

#include <stddef.h>

#include "tmashmem/collectives.h"
#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"
#include "tmashmem/device/collectives/reduce_math.cuh"

namespace tmashmem {

/// The all-reduce algorithms (tmashmem_allreduce_algo_t without AUTO).
enum class AllreduceAlgo : int {
  OneShot = TMASHMEM_ALLREDUCE_ONE_SHOT,
  TwoShot = TMASHMEM_ALLREDUCE_TWO_SHOT,
};

template <tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ Status allreduce_block(const Ctx& ctx, const CollState& st, int slot,
                                                  void* dest, const void* src, size_t count,
                                                  AllreduceAlgo algo, int part, int parts,
                                                  CollCopy how, CollScratch scratch,
                                                  uint64_t timeout_ns,
                                                  const char* what = "allreduce") {
  constexpr size_t es = sizeof(typename CollElem<D>::Bits);
  const size_t bytes = count * es;
  char* d = static_cast<char*>(dest);
  const char* f = static_cast<const char*>(src);
  if (algo == AllreduceAlgo::OneShot) {
    const CollSlice s = coll_slice(bytes, part, parts);
    auto body = [&] { coll_reduce_pes<D, Op>(ctx, d + s.offset, f + s.offset, s.len / es); };
    return coll_exchange_all(ctx, st, slot, body, timeout_ns, what);
  }
  // Two-shot. Chunk boundaries on 16 bytes keep every chunk vector-aligned.
  const CollSlice mine = coll_slice(bytes, ctx.my_pe, ctx.n_pes);
  const CollSlice s = coll_slice(mine.len, part, parts);
  auto reduce = [&] {
    coll_reduce_pes<D, Op>(ctx, d + mine.offset + s.offset, f + mine.offset + s.offset, s.len / es);
  };
  // The all-gather step's Done handshake implies that every peer finished the reduce
  // step's reads of this PE's src (a peer reads its chunk of dest only after its reduce).
  Status status = coll_exchange_all(ctx, st, slot, reduce, timeout_ns, what,
                                    /*done_handshake=*/false);
  if (status != Status::Ok) return status;
  auto gather = [&] {
    for (int k = 1; k < ctx.n_pes; ++k) {
      const int q = coll_peer(ctx, k);
      const CollSlice theirs = coll_slice(bytes, q, ctx.n_pes);
      const CollSlice t = coll_slice(theirs.len, part, parts);
      coll_copy_block(d + theirs.offset + t.offset, ptr(ctx, d + theirs.offset + t.offset, q),
                      t.len, how, scratch);
    }
  };
  return coll_exchange_all(ctx, st, slot, gather, timeout_ns, what);
}

}  // namespace tmashmem
