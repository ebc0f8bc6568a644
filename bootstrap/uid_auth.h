// SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit MAC. The unique-id bootstrap
// proves knowledge of the job's secret with it, on a fresh challenge, so that the
// secret never crosses the network and a recorded answer is worthless later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tmashmem {

inline uint64_t siphash24(const uint8_t key[16], const void* data, size_t length) {
  auto rotl = [](uint64_t x, int b) { return (x << b) | (x >> (64 - b)); };
  uint64_t k0, k1;
  std::memcpy(&k0, key, 8);
  std::memcpy(&k1, key + 8, 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  auto round = [&]() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  };
  const auto* in = static_cast<const uint8_t*>(data);
  size_t whole = length & ~size_t(7);
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m;
    std::memcpy(&m, in + i, 8);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t last = uint64_t(length & 0xff) << 56;
  for (size_t i = 0; i < (length & 7); ++i) last |= uint64_t(in[whole + i]) << (8 * i);
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// Equality of two byte strings in time independent of where they differ.
inline bool equal_constant_time(const void* a, const void* b, size_t length) {
  const auto* x = static_cast<const volatile uint8_t*>(a);
  const auto* y = static_cast<const volatile uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < length; ++i) diff = static_cast<uint8_t>(diff | (x[i] ^ y[i]));
  return diff == 0;
}

}  // namespace tmashmem
