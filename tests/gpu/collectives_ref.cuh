// Test data and CPU references for tests/gpu/test_collectives.cu: element values that
// every PE (and the host) can compute for every PE from a shared seed, their stored bits,
// the exact reduction over PEs, and a byte comparison that reports the collective, dtype,
// size, PE, first bad index, expected and seen values.
//
// The floating-point values are chosen so that fp32 accumulation over up to 64 PEs is
// exact (f32: multiples of 1/256 below 128; f16: multiples of 1/64 below 16; bf16:
// multiples of 1/16 below 8), so the only rounding is the one the library promises, the
// final round to nearest even into f16/bf16; the reference computes the exact value in
// double and rounds it once with the CUDA host conversions, and the results must match
// bit for bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test_util.cuh"

namespace coll_test {

using gpu_test::mix64;

__host__ __device__ inline uint32_t hash32(uint64_t seed, uint64_t i) {
  return static_cast<uint32_t>(mix64(seed ^ mix64(i)) >> 32);
}

// The value element i of the stream `seed` has, as a double (exact) or int32.
__host__ __device__ inline double value_f(uint32_t dtype, uint64_t seed, uint64_t i) {
  const uint32_t h = hash32(seed, i);
  switch (dtype) {
    case TMASHMEM_DTYPE_F32:
      return (static_cast<int>(h & 0xFFFFu) - 32768) / 256.0;
    case TMASHMEM_DTYPE_F16:
      return (static_cast<int>(h % 2048u) - 1024) / 64.0;
    default:  // bf16
      return (static_cast<int>(h % 256u) - 128) / 16.0;
  }
}
__host__ __device__ inline int32_t value_i(uint64_t seed, uint64_t i) {
  return static_cast<int32_t>(hash32(seed, i));
}

// The seed of (round, pe): a function of a base the same on every PE
// (tests/gpu/test_collectives_stress.cu reads it from device memory when a graph runs).
__host__ __device__ inline uint64_t round_seed(uint64_t base, uint64_t round, int pe) {
  return mix64(base ^ mix64(round * 1000003ull + uint64_t(pe)));
}

inline size_t elem_bytes(uint32_t dtype) {
  return dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16 ? 2 : 4;
}

inline const char* dtype_name(uint32_t dtype) {
  switch (dtype) {
    case TMASHMEM_DTYPE_F32:
      return "f32";
    case TMASHMEM_DTYPE_F16:
      return "f16";
    case TMASHMEM_DTYPE_BF16:
      return "bf16";
    case TMASHMEM_DTYPE_I32:
      return "i32";
  }
  return "bytes";
}

inline const char* op_name(int op) {
  return op == TMASHMEM_REDUCE_SUM ? "sum" : op == TMASHMEM_REDUCE_MIN ? "min" : "max";
}

// The stored bits of a double that is exactly representable in f32 (and, for f16/bf16,
// rounded once to nearest even), appended to `out`.
inline void store_value(uint32_t dtype, double v, uint8_t* out) {
  if (dtype == TMASHMEM_DTYPE_F32) {
    const float f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
  } else if (dtype == TMASHMEM_DTYPE_F16) {
    const __half h = __float2half_rn(static_cast<float>(v));
    std::memcpy(out, &h, 2);
  } else {
    const __nv_bfloat16 b = __float2bfloat16_rn(static_cast<float>(v));
    std::memcpy(out, &b, 2);
  }
}

// PE `pe`'s input for a reduction: `count` elements of stream seed(pe), from element `first`.
inline std::vector<uint8_t> make_input(uint32_t dtype, uint64_t seed, size_t first, size_t count) {
  const size_t es = elem_bytes(dtype);
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == TMASHMEM_DTYPE_I32) {
      const int32_t v = value_i(seed, first + i);
      std::memcpy(&out[i * es], &v, 4);
    } else {
      store_value(dtype, value_f(dtype, seed, first + i), &out[i * es]);
    }
  }
  return out;
}

// Op over PEs 0..n-1 of element `first + i` of each PE's stream (seeds[q]), stored bits.
inline std::vector<uint8_t> reduce_reference(uint32_t dtype, int op,
                                             const std::vector<uint64_t>& seeds, size_t first,
                                             size_t count) {
  const size_t es = elem_bytes(dtype);
  std::vector<uint8_t> out(count * es);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == TMASHMEM_DTYPE_I32) {
      uint32_t acc = static_cast<uint32_t>(value_i(seeds[0], first + i));
      for (size_t q = 1; q < seeds.size(); ++q) {
        const int32_t x = value_i(seeds[q], first + i);
        const int32_t a = static_cast<int32_t>(acc);
        acc = op == TMASHMEM_REDUCE_SUM   ? acc + static_cast<uint32_t>(x)
              : op == TMASHMEM_REDUCE_MIN ? static_cast<uint32_t>(x < a ? x : a)
                                          : static_cast<uint32_t>(x > a ? x : a);
      }
      std::memcpy(&out[i * es], &acc, 4);
    } else {
      double acc = value_f(dtype, seeds[0], first + i);
      for (size_t q = 1; q < seeds.size(); ++q) {
        const double x = value_f(dtype, seeds[q], first + i);
        acc = op == TMASHMEM_REDUCE_SUM   ? acc + x
              : op == TMASHMEM_REDUCE_MIN ? std::fmin(acc, x)
                                          : std::fmax(acc, x);
      }
      store_value(dtype, acc, &out[i * es]);
    }
  }
  return out;
}

// One element's bits as text, for messages.
inline void describe(uint32_t dtype, const uint8_t* p, char* text, size_t size) {
  if (dtype == TMASHMEM_DTYPE_I32 || dtype == TMASHMEM_DTYPE_F32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    float f;
    std::memcpy(&f, p, 4);
    if (dtype == TMASHMEM_DTYPE_I32)
      std::snprintf(text, size, "%d", static_cast<int32_t>(u));
    else
      std::snprintf(text, size, "%g (0x%08x)", static_cast<double>(f), u);
  } else if (dtype == TMASHMEM_DTYPE_F16 || dtype == TMASHMEM_DTYPE_BF16) {
    uint16_t u;
    std::memcpy(&u, p, 2);
    std::snprintf(text, size, "0x%04x", u);
  } else {
    std::snprintf(text, size, "0x%02x", *p);
  }
}

// Compares `got` with `want` element by element (elements of elem bytes; 1 for raw bytes);
// prints the first three differences and the count, naming `what`.
inline bool compare(const char* what, uint32_t dtype, size_t elem, const std::vector<uint8_t>& got,
                    const std::vector<uint8_t>& want, size_t index_base = 0) {
  size_t bad = 0;
  const size_t n = want.size() / elem;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i * elem], &want[i * elem], elem) == 0) continue;
    if (bad++ < 3) {
      char e[48], s[48];
      describe(dtype, &want[i * elem], e, sizeof e);
      describe(dtype, &got[i * elem], s, sizeof s);
      std::printf("[PE %d] %s: element %zu: expected %s, seen %s\n", gpu_test::mpi_rank(), what,
                  index_base + i, e, s);
    }
  }
  if (bad)
    std::printf("[PE %d] %s: %zu of %zu elements wrong\n", gpu_test::mpi_rank(), what, bad, n);
  return bad == 0;
}

}  // namespace coll_test
