// The all-to-all exchange through tmashmem_ptr that the heap tests run, under mpiexec
// (tests/unit/test_heap.cpp) and under the unique-id bootstrap
// (tests/unit/test_bootstrap_uid.cpp): one pattern, one writer loop, one checker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "tmashmem/tmashmem.h"

namespace tmashmem_test {

// Byte `i` of what `writer` puts into `reader`'s copy in round `salt`.
inline uint8_t heap_pattern(uint64_t seed, int writer, int reader, size_t i, uint64_t salt) {
  uint64_t x = seed ^ (uint64_t(writer) << 48) ^ (uint64_t(reader) << 40) ^
               (i * 0x9E3779B97F4A7C15ull) ^ salt;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x);
}

// How many bytes of the n segments of `bytes` in `x` (segment w written by PE w for
// `reader`) differ from the pattern.
inline size_t count_bad_segments(const uint8_t* x, size_t bytes, int n, int reader, uint64_t seed,
                                 uint64_t salt) {
  size_t bad = 0;
  for (int writer = 0; writer < n; ++writer)
    for (size_t i = 0; i < bytes; ++i)
      if (x[size_t(writer) * bytes + i] != heap_pattern(seed, writer, reader, i, salt)) ++bad;
  return bad;
}

// Every PE writes segment [me] of `bytes` into every reachable peer's copy of `x`,
// then every PE checks every segment of its own copy, byte by byte. `seed` must be
// the same on every PE.
inline bool exchange_and_check(uint8_t* x, size_t bytes, uint64_t salt, uint64_t seed) {
  int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  for (int peer = 0; peer < n; ++peer) {
    auto* dst = static_cast<uint8_t*>(tmashmem_ptr(x + size_t(me) * bytes, peer));
    if (!dst) return false;
    for (size_t i = 0; i < bytes; ++i) dst[i] = heap_pattern(seed, me, peer, i, salt);
  }
  if (tmashmem_barrier_all() != TMASHMEM_SUCCESS) return false;
  size_t bad = count_bad_segments(x, bytes, n, me, seed, salt);
  tmashmem_barrier_all();  // nobody frees or rewrites before everyone has checked
  if (bad) std::printf("[PE %d] %zu bad bytes (segment size %zu)\n", me, bad, bytes);
  return bad == 0;
}

}  // namespace tmashmem_test
