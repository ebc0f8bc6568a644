// The words of a multicast call: the element types and (op, type) pairs the ISA has, the
// unit of access, and the fallback's running reduction. Internal to
// tmashmem/device/multicast.cuh, whose contract covers these; the instructions (one
// Multimem<Op, T> per pair) are wrapped in detail/multimem.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>

#include "tmashmem/device/detail/multimem.cuh"

namespace tmashmem {
namespace detail {

template <class T>
constexpr bool kHalfLike = std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value;
template <class T>
constexpr bool kMulticastType =
    std::is_same<T, uint32_t>::value || std::is_same<T, int32_t>::value ||
    std::is_same<T, uint64_t>::value || std::is_same<T, int64_t>::value ||
    std::is_same<T, float>::value || std::is_same<T, double>::value || kHalfLike<T>;

// The unit of access: 32 bits (a 32-bit element or a pair of 16-bit ones) or 64 bits.
template <class T>
using McWord = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <McOp Op, class T>
__host__ __device__ constexpr bool ld_reduce_exists() {
  constexpr bool integer = std::is_integral<T>::value;
  if (Op == McOp::Add) return !std::is_same<T, int64_t>::value;
  if (Op == McOp::Min || Op == McOp::Max) return integer || kHalfLike<T>;
  return integer;  // and, or, xor
}

template <McOp Op, class T>
__host__ __device__ constexpr bool red_exists() {
  return ld_reduce_exists<Op, T>() && (std::is_integral<T>::value || Op == McOp::Add);
}

// Whether multimem has a 128-bit form for (Op, T): floats only.
template <McOp Op, class T>
__host__ __device__ constexpr bool multimem_v4(bool red) {
  if (std::is_same<T, float>::value) return Op == McOp::Add;
  if (kHalfLike<T>) return !red || Op == McOp::Add;
  return false;
}

template <class W>
__device__ __forceinline__ W bits_of(const void* p) {
  return *static_cast<const W*>(p);
}

// ---- the fallback: the same word, one peer at a time ----------------------------------

// The running value of one word of an ld_reduce fallback: 16-bit float adds accumulate in
// f32 (as .acc::f32 does), everything else in the element type.
template <McOp Op, class T>
struct McAccumulator {
  static constexpr bool kWide = kHalfLike<T> && Op == McOp::Add;
  float lo = 0.f, hi = 0.f;  // kWide
  McWord<T> word = 0;        // otherwise: the bits of the running value

  __device__ __forceinline__ static float2 to_float2(uint32_t w) {
    if constexpr (std::is_same<T, __half>::value) {
      __half2 h;
      memcpy(&h, &w, 4);
      return __half22float2(h);
    } else {
      __nv_bfloat162 h;
      memcpy(&h, &w, 4);
      return __bfloat1622float2(h);
    }
  }

  __device__ __forceinline__ void first(McWord<T> w) {
    if constexpr (kWide) {
      const float2 f = to_float2(w);
      lo = f.x;
      hi = f.y;
    } else {
      word = w;
    }
  }

  __device__ __forceinline__ void add(McWord<T> w) {
    if constexpr (kWide) {
      const float2 f = to_float2(w);
      lo += f.x;
      hi += f.y;
    } else if constexpr (kHalfLike<T>) {
      using H2 = std::conditional_t<std::is_same<T, __half>::value, __half2, __nv_bfloat162>;
      H2 a, b;
      memcpy(&a, &word, 4);
      memcpy(&b, &w, 4);
      const H2 r = Op == McOp::Min ? __hmin2(a, b) : __hmax2(a, b);
      memcpy(&word, &r, 4);
    } else {
      T a, b;
      memcpy(&a, &word, sizeof(T));
      memcpy(&b, &w, sizeof(T));
      T r = a;
      if constexpr (Op == McOp::Add) r = a + b;
      if constexpr (Op == McOp::Min) r = b < a ? b : a;
      if constexpr (Op == McOp::Max) r = a < b ? b : a;
      if constexpr (std::is_integral<T>::value) {
        if constexpr (Op == McOp::And) r = a & b;
        if constexpr (Op == McOp::Or) r = a | b;
        if constexpr (Op == McOp::Xor) r = a ^ b;
      }
      memcpy(&word, &r, sizeof(T));
    }
  }

  __device__ __forceinline__ McWord<T> result() const {
    if constexpr (kWide) {
      uint32_t w;
      if constexpr (std::is_same<T, __half>::value) {
        const __half2 h = __floats2half2_rn(lo, hi);
        memcpy(&w, &h, 4);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        memcpy(&w, &h, 4);
      }
      return w;
    } else {
      return word;
    }
  }
};

}  // namespace detail
}  // namespace tmashmem
