// The SM copy loop behind the blocking puts and gets (rma.cuh) and the unaligned
// parts of put_nbi / get_nbi (bulk.cuh): ordinary loads and stores at any alignment,
// shared by a group of threads.
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

// Copies n bytes from src to dst, shared by `count` threads of which the caller is
// `rank`. The destination is written in aligned 16-byte stores except for at most
// 15 head bytes and a short tail. When src and dst agree mod 16, loads are 16-byte
// too; when they agree mod 4, four aligned 4-byte loads feed each store; otherwise
// five aligned 4-byte loads are funnel-shifted into each store. The aligned word
// loads never touch memory outside the 4-byte words that hold source bytes (the
// last 16-byte unit moves to the byte tail when it would), so they stay inside
// the source allocation.
__device__ __forceinline__ void copy_bytes(char* dst, const char* src, size_t n, unsigned rank,
                                           unsigned count) {
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
    const uint4* s4 = reinterpret_cast<const uint4*>(s_body);
    size_t i = rank;
    // Four independent 16-byte loads in flight per thread before their stores.
    for (; i + 3 * size_t(count) < units; i += 4 * size_t(count)) {
      const uint4 a = s4[i];
      const uint4 b = s4[i + count];
      const uint4 c = s4[i + 2 * size_t(count)];
      const uint4 e = s4[i + 3 * size_t(count)];
      d4[i] = a;
      d4[i + count] = b;
      d4[i + 2 * size_t(count)] = c;
      d4[i + 3 * size_t(count)] = e;
    }
    for (; i < units; i += count) d4[i] = s4[i];
  } else if (shift == 0) {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(s_body);
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      d4[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else {
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(s_body - shift);
    const unsigned bits = 8u * shift;
    for (size_t i = rank; i < units; i += count) {
      const uint32_t* w = sw + 4 * i;
      const uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
      d4[i] = make_uint4(__funnelshift_r(w0, w1, bits), __funnelshift_r(w1, w2, bits),
                         __funnelshift_r(w2, w3, bits), __funnelshift_r(w3, w4, bits));
    }
  }
}

}  // namespace detail
}  // namespace tmashmem
