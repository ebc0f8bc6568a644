// Broadcast: `dest` (bytes) on every PE receives PE root's `src` (bytes). Every PE pulls
// its part from the root (src symmetric); the root copies its own and waits until every
// peer has read its src, so it may reuse src when the call returns. One CTA moves part
// `part` of `parts`; contract of coll_exchange. A multicast object (NVLink SHARP) would
// replace the n_pes - 1 pulls by one store from the root: that is where
// tmashmem/device/multicast.cuh plugs in (docs/collectives.md).
#pragma once

#include <stddef.h>

#include "tmashmem/device/collectives/copy.cuh"
#include "tmashmem/device/collectives/exchange.cuh"

namespace tmashmem {

__device__ __forceinline__ Status broadcast_block(const Ctx& ctx, const CollState& st, int slot,
                                                  void* dest, const void* src, size_t bytes,
                                                  int root, int part, int parts, CollCopy how,
                                                  CollScratch scratch, uint64_t timeout_ns,
                                                  const char* what = "broadcast") {
  const CollSlice s = coll_slice(bytes, part, parts);
  char* d = static_cast<char*>(dest) + s.offset;
  const char* f = static_cast<const char*>(src) + s.offset;
  const bool is_root = ctx.my_pe == root;
  const uint64_t announce = is_root ? coll_all_peers(ctx) : 0;
  const uint64_t visit = is_root ? 0 : uint64_t(1) << root;
  auto body = [&] {
    if (is_root) {
      if (d != f) coll_copy_block(d, f, s.len, how, scratch);
    } else {
      coll_copy_block(d, ptr(ctx, f, root), s.len, how, scratch);
    }
  };
  return coll_exchange(
      ctx, st, slot, announce, visit, [] {}, body, timeout_ns, what);
}

}  // namespace tmashmem
