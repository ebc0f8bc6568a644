// One word (32 or 64 bits) or one 16-byte vector of a multicast call, through multimem
// or through one peer's mapping: which instruction each (op, element type) takes, and the
// fallback's running reduction. Internal to tmashmem/device/multicast.cuh, whose
// contract covers these; the instructions are wrapped in detail/multimem.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>

#include "tmashmem/device/detail/atom.cuh"
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

// ---- one word through multimem (Sem: 1 = release / acquire) ------------------------

template <McOp Op, class T, int Sem>
__device__ __forceinline__ McWord<T> multimem_ld_reduce_word(const void* mc) {
  using W = McWord<T>;
  constexpr bool kSigned = std::is_signed<T>::value;
  if constexpr (std::is_same<T, float>::value) {
    return __float_as_uint(multimem_ld_reduce_add_f32<Sem>(mc));
  } else if constexpr (std::is_same<T, double>::value) {
    return static_cast<W>(__double_as_longlong(multimem_ld_reduce_add_f64<Sem>(mc)));
  } else if constexpr (std::is_same<T, __half>::value) {
    if constexpr (Op == McOp::Add) return multimem_ld_reduce_add_f16x2<Sem>(mc);
    if constexpr (Op == McOp::Min) return multimem_ld_reduce_min_f16x2<Sem>(mc);
    if constexpr (Op == McOp::Max) return multimem_ld_reduce_max_f16x2<Sem>(mc);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    if constexpr (Op == McOp::Add) return multimem_ld_reduce_add_bf16x2<Sem>(mc);
    if constexpr (Op == McOp::Min) return multimem_ld_reduce_min_bf16x2<Sem>(mc);
    if constexpr (Op == McOp::Max) return multimem_ld_reduce_max_bf16x2<Sem>(mc);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (Op == McOp::Add)
      return kSigned ? static_cast<W>(multimem_ld_reduce_add_s32<Sem>(mc))
                     : multimem_ld_reduce_add_u32<Sem>(mc);
    if constexpr (Op == McOp::Min)
      return kSigned ? static_cast<W>(multimem_ld_reduce_min_s32<Sem>(mc))
                     : multimem_ld_reduce_min_u32<Sem>(mc);
    if constexpr (Op == McOp::Max)
      return kSigned ? static_cast<W>(multimem_ld_reduce_max_s32<Sem>(mc))
                     : multimem_ld_reduce_max_u32<Sem>(mc);
    if constexpr (Op == McOp::And) return multimem_ld_reduce_and_b32<Sem>(mc);
    if constexpr (Op == McOp::Or) return multimem_ld_reduce_or_b32<Sem>(mc);
    if constexpr (Op == McOp::Xor) return multimem_ld_reduce_xor_b32<Sem>(mc);
  } else {
    if constexpr (Op == McOp::Add) return multimem_ld_reduce_add_u64<Sem>(mc);
    if constexpr (Op == McOp::Min)
      return kSigned ? static_cast<W>(multimem_ld_reduce_min_s64<Sem>(mc))
                     : multimem_ld_reduce_min_u64<Sem>(mc);
    if constexpr (Op == McOp::Max)
      return kSigned ? static_cast<W>(multimem_ld_reduce_max_s64<Sem>(mc))
                     : multimem_ld_reduce_max_u64<Sem>(mc);
    if constexpr (Op == McOp::And) return multimem_ld_reduce_and_b64<Sem>(mc);
    if constexpr (Op == McOp::Or) return multimem_ld_reduce_or_b64<Sem>(mc);
    if constexpr (Op == McOp::Xor) return multimem_ld_reduce_xor_b64<Sem>(mc);
  }
  return 0;
}

template <McOp Op, class T, int Sem>
__device__ __forceinline__ uint4 multimem_ld_reduce_v4(const void* mc) {
  if constexpr (std::is_same<T, float>::value) {
    const float4 f = multimem_ld_reduce_v4_add_f32<Sem>(mc);
    return make_uint4(__float_as_uint(f.x), __float_as_uint(f.y), __float_as_uint(f.z),
                      __float_as_uint(f.w));
  } else if constexpr (std::is_same<T, __half>::value) {
    if constexpr (Op == McOp::Add) return multimem_ld_reduce_v4_add_f16x2<Sem>(mc);
    if constexpr (Op == McOp::Min) return multimem_ld_reduce_v4_min_f16x2<Sem>(mc);
    if constexpr (Op == McOp::Max) return multimem_ld_reduce_v4_max_f16x2<Sem>(mc);
  } else {
    if constexpr (Op == McOp::Add) return multimem_ld_reduce_v4_add_bf16x2<Sem>(mc);
    if constexpr (Op == McOp::Min) return multimem_ld_reduce_v4_min_bf16x2<Sem>(mc);
    if constexpr (Op == McOp::Max) return multimem_ld_reduce_v4_max_bf16x2<Sem>(mc);
  }
  return make_uint4(0, 0, 0, 0);
}

template <McOp Op, class T, int Sem>
__device__ __forceinline__ void multimem_red_word(void* mc, McWord<T> w) {
  constexpr bool kSigned = std::is_signed<T>::value;
  if constexpr (std::is_same<T, float>::value) {
    multimem_red_add_f32<Sem>(mc, __uint_as_float(w));
  } else if constexpr (std::is_same<T, double>::value) {
    multimem_red_add_f64<Sem>(mc, __longlong_as_double(static_cast<long long>(w)));
  } else if constexpr (std::is_same<T, __half>::value) {
    multimem_red_add_f16x2<Sem>(mc, w);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    multimem_red_add_bf16x2<Sem>(mc, w);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (Op == McOp::Add && kSigned)
      multimem_red_add_s32<Sem>(mc, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Add && !kSigned) multimem_red_add_u32<Sem>(mc, w);
    if constexpr (Op == McOp::Min && kSigned)
      multimem_red_min_s32<Sem>(mc, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Min && !kSigned) multimem_red_min_u32<Sem>(mc, w);
    if constexpr (Op == McOp::Max && kSigned)
      multimem_red_max_s32<Sem>(mc, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Max && !kSigned) multimem_red_max_u32<Sem>(mc, w);
    if constexpr (Op == McOp::And) multimem_red_and_b32<Sem>(mc, w);
    if constexpr (Op == McOp::Or) multimem_red_or_b32<Sem>(mc, w);
    if constexpr (Op == McOp::Xor) multimem_red_xor_b32<Sem>(mc, w);
  } else {
    if constexpr (Op == McOp::Add) multimem_red_add_u64<Sem>(mc, w);
    if constexpr (Op == McOp::Min && kSigned)
      multimem_red_min_s64<Sem>(mc, static_cast<int64_t>(w));
    if constexpr (Op == McOp::Min && !kSigned) multimem_red_min_u64<Sem>(mc, w);
    if constexpr (Op == McOp::Max && kSigned)
      multimem_red_max_s64<Sem>(mc, static_cast<int64_t>(w));
    if constexpr (Op == McOp::Max && !kSigned) multimem_red_max_u64<Sem>(mc, w);
    if constexpr (Op == McOp::And) multimem_red_and_b64<Sem>(mc, w);
    if constexpr (Op == McOp::Or) multimem_red_or_b64<Sem>(mc, w);
    if constexpr (Op == McOp::Xor) multimem_red_xor_b64<Sem>(mc, w);
  }
}

template <McOp Op, class T, int Sem>
__device__ __forceinline__ void multimem_red_v4(void* mc, uint4 v) {
  if constexpr (std::is_same<T, float>::value)
    multimem_red_v4_add_f32<Sem>(mc, make_float4(__uint_as_float(v.x), __uint_as_float(v.y),
                                                 __uint_as_float(v.z), __uint_as_float(v.w)));
  else if constexpr (std::is_same<T, __half>::value)
    multimem_red_v4_add_f16x2<Sem>(mc, v);
  else
    multimem_red_v4_add_bf16x2<Sem>(mc, v);
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

template <McOp Op, class T>
__device__ __forceinline__ void unicast_red_word(void* p, McWord<T> w) {
  constexpr bool kSigned = std::is_signed<T>::value;
  if constexpr (std::is_same<T, float>::value) {
    unicast_red_add_f32(p, __uint_as_float(w));
  } else if constexpr (std::is_same<T, double>::value) {
    unicast_red_add_f64(p, __longlong_as_double(static_cast<long long>(w)));
  } else if constexpr (std::is_same<T, __half>::value) {
    unicast_red_add_f16x2(p, w);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    unicast_red_add_bf16x2(p, w);
  } else if constexpr (sizeof(T) == 4) {
    if constexpr (Op == McOp::Add && kSigned) unicast_red_add_s32(p, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Add && !kSigned) red_add_relaxed_sys(static_cast<uint32_t*>(p), w);
    if constexpr (Op == McOp::Min && kSigned) unicast_red_min_s32(p, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Min && !kSigned) unicast_red_min_u32(p, w);
    if constexpr (Op == McOp::Max && kSigned) unicast_red_max_s32(p, static_cast<int32_t>(w));
    if constexpr (Op == McOp::Max && !kSigned) unicast_red_max_u32(p, w);
    if constexpr (Op == McOp::And) unicast_red_and_b32(p, w);
    if constexpr (Op == McOp::Or) unicast_red_or_b32(p, w);
    if constexpr (Op == McOp::Xor) unicast_red_xor_b32(p, w);
  } else {
    if constexpr (Op == McOp::Add) red_add_relaxed_sys(static_cast<uint64_t*>(p), w);
    if constexpr (Op == McOp::Min && kSigned) unicast_red_min_s64(p, static_cast<int64_t>(w));
    if constexpr (Op == McOp::Min && !kSigned) unicast_red_min_u64(p, w);
    if constexpr (Op == McOp::Max && kSigned) unicast_red_max_s64(p, static_cast<int64_t>(w));
    if constexpr (Op == McOp::Max && !kSigned) unicast_red_max_u64(p, w);
    if constexpr (Op == McOp::And) unicast_red_and_b64(p, w);
    if constexpr (Op == McOp::Or) unicast_red_or_b64(p, w);
    if constexpr (Op == McOp::Xor) unicast_red_xor_b64(p, w);
  }
}

}  // namespace detail
}  // namespace tmashmem
