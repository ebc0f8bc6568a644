// Reduce-scatter: `dest` (count elements) on PE p = Op over PEs q of PE q's
// src[p * count, (p + 1) * count) (src symmetric, n_pes * count elements).
//
// This form is the deterministic one: each PE pulls its chunk from every peer and reduces
// in PE order in fp32 (reduce_math.cuh), so the result does not depend on timing. The
// TMA alternative, every PE reducing its tiles into the owner's tensor with
// tma_reduce_tile (coll_tile_reduce in tile.cuh), adds in arrival order and, for f16/bf16,
// rounds every addition to the storage type.
// One CTA reduces part `part` of `parts` of the chunk; contract of coll_exchange: on Ok,
// dest is final here and src may be reused.
#pragma once

#include <stddef.h>

#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"
#include "tmashmem/device/collectives/reduce_math.cuh"

namespace tmashmem {

template <tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ Status reduce_scatter_block(const Ctx& ctx, const CollState& st,
                                                       int slot, void* dest, const void* src,
                                                       size_t count, int part, int parts,
                                                       uint64_t timeout_ns,
                                                       const char* what = "reduce_scatter") {
  constexpr size_t es = sizeof(typename CollElem<D>::Bits);
  const CollSlice s = coll_slice(count * es, part, parts);
  const char* chunk = static_cast<const char*>(src) + size_t(ctx.my_pe) * count * es;
  auto body = [&] {
    coll_reduce_pes<D, Op>(ctx, static_cast<char*>(dest) + s.offset, chunk + s.offset, s.len / es);
  };
  return coll_exchange_all(ctx, st, slot, body, timeout_ns, what);
}

}  // namespace tmashmem
