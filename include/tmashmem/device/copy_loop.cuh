// The SM copy loops behind the blocking puts and gets (rma.cuh), the unaligned parts of
// put_nbi / get_nbi (bulk.cuh) and the collectives' SM copies (collectives/copy.cuh,
// collectives/staged.cuh): ordinary loads and stores at any alignment, shared by a group
// of threads; block_copy_bytes and warp_may_copy are the block-scope entry.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace tmashmem {
namespace detail {

// ---- cooperative copy at any alignment --------------------------------------

// Copies a few bytes with 8-, 4-, 2- or 1-byte accesses, the widest that both
// addresses' alignment and the remaining length allow (a lone 8-byte message is
// one store, not eight).
__device__ __forceinline__ void copy_small(char* dst, const char* src, size_t n) {
  while (n != 0) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
    if (n >= 8 && (a & 7u) == 0) {
      *reinterpret_cast<uint64_t*>(dst) = *reinterpret_cast<const uint64_t*>(src);
      dst += 8, src += 8, n -= 8;
    } else if (n >= 4 && (a & 3u) == 0) {
      *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
      dst += 4, src += 4, n -= 4;
    } else if (n >= 2 && (a & 1u) == 0) {
      *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src);
      dst += 2, src += 2, n -= 2;
    } else {
      *dst++ = *src++;
      --n;
    }
  }
}

// Copies `units` 16-byte units from s to d (both 16-byte aligned), shared by `count`
// threads of which the caller is `rank`: four independent loads in flight per thread
// before their stores. A thread with no unit leaves after one comparison. The pointers
// keep their address space (no integer round trip), so a caller's global pointers give
// global loads and stores.
__device__ __forceinline__ void copy_units(uint4* d, const uint4* s, size_t units, unsigned rank,
                                           unsigned count) {
  size_t i = rank;
  if (i >= units) return;
  const size_t c = count;
  for (; i + 3 * c < units; i += 4 * c) {
    const uint4 a = s[i];
    const uint4 b = s[i + c];
    const uint4 e = s[i + 2 * c];
    const uint4 f = s[i + 3 * c];
    d[i] = a;
    d[i + c] = b;
    d[i + 2 * c] = e;
    d[i + 3 * c] = f;
  }
  for (; i < units; i += c) d[i] = s[i];
}

// Copies n bytes from src to dst, shared by `count` threads of which the caller is
// `rank`. Both 16-byte aligned and n a multiple of 16 (the common case) is copy_units
// alone, which computes nothing else. Work layout (warp_may_copy relies on it): rank 0
// moves the head and tail, rank r the units r, r + count, ... of at most n / 16.
// Otherwise the destination is written in aligned 16-byte stores except for at most
// 15 head bytes and a short tail. When src and dst agree mod 16, loads are 16-byte
// too; when they agree mod 4, four aligned 4-byte loads feed each store; otherwise
// five aligned 4-byte loads are funnel-shifted into each store. The aligned word
// loads never touch memory outside the 4-byte words that hold source bytes (the
// last 16-byte unit moves to the byte tail when it would), so they stay inside
// the source allocation.
__device__ __forceinline__ void copy_bytes(char* dst, const char* src, size_t n, unsigned rank,
                                           unsigned count) {
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | n) & 15u) == 0) {
    copy_units(reinterpret_cast<uint4*>(dst), reinterpret_cast<const uint4*>(src), n >> 4, rank,
               count);
    return;
  }
  if (n == 0) return;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  size_t head = (16u - (d & 15u)) & 15u;
  if (head > n) head = n;
  size_t units = (n - head) >> 4;
  const uintptr_t s_body = reinterpret_cast<uintptr_t>(src) + head;
  const unsigned shift = static_cast<unsigned>(s_body & 3u);
  // With a shifted source the fifth word of the last unit may reach past src + n.
  if (shift != 0 && units != 0 && n - (head + units * 16) < 4u - shift) --units;
  const size_t tail = head + units * 16;

  // Head and tail are short (< 16 and < 20 bytes): one thread moves them with the
  // widest accesses their alignment allows.
  if (rank == 0) {
    copy_small(dst, src, head);
    copy_small(dst + tail, src + tail, n - tail);
  }
  if (units == 0) return;

  uint4* d4 = reinterpret_cast<uint4*>(dst + head);
  if ((s_body & 15u) == 0) {
    copy_units(d4, reinterpret_cast<const uint4*>(src + head), units, rank, count);
  } else if (shift == 0) {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(src + head);
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      d4[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(src + head - shift);
    const unsigned bits = 8u * shift;
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      const uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
      d4[i] = make_uint4(__funnelshift_r(w0, w1, bits), __funnelshift_r(w1, w2, bits),
                         __funnelshift_r(w2, w3, bits), __funnelshift_r(w3, w4, bits));
    }
  }
}

// True when a thread of the calling warp (block rank `rank`) may have work in a
// copy_bytes/block_copy_bytes of n bytes shared by the block: warp 0 (head and tail) or a
// warp whose first thread's 16-byte unit starts before n. A warp past the end skips the
// call's whole setup: a block-scope call's latency is its slowest warp's setup, and every
// idle warp's instructions take issue slots from the warps that copy.
__device__ __forceinline__ bool warp_may_copy(unsigned rank, size_t n) {
  const unsigned first = rank & ~31u;
  return first == 0 || (size_t(first) << 4) < n;
}

// copy_bytes for a whole block (same arguments). When both ends are 16-byte aligned and
// no thread has more than four units (block puts and gets up to 64 KiB per 1024-thread
// block), 32-bit indices and the fewest instructions and branches per call, because at
// these sizes a block put's time is its path from the call to the stores (docs/runs.md,
// "Twelfth session", where each shape below won its A/B):
// - fewer units than threads (idle warps left at the warp test, the rest one unit each):
//   one load, its index clamped so that no branch stands before it, one store;
// - at least one unit per thread (every warp busy, issue slots count): one unit per step.
// Larger or unaligned copies go through copy_bytes. The 32-bit index is safe because a
// block has at most 1024 threads: units <= 4096.
__device__ __forceinline__ void block_copy_bytes(char* dst, const char* src, size_t n,
                                                 unsigned rank, unsigned count) {
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | n) & 15u) != 0 ||
      (n >> 4) > 4 * size_t(count)) {
    copy_bytes(dst, src, n, rank, count);
    return;
  }
  const unsigned units = static_cast<unsigned>(n >> 4);
  uint4* d = reinterpret_cast<uint4*>(dst);
  const uint4* s = reinterpret_cast<const uint4*>(src);
  if (units >= count) {
    for (unsigned i = rank; i < units; i += count) d[i] = s[i];
    return;
  }
  if (units == 0) return;  // unit 0 below must exist
  const uint4 v = s[rank < units ? rank : 0];
  if (rank < units) d[rank] = v;
}

}  // namespace detail
}  // namespace tmashmem
