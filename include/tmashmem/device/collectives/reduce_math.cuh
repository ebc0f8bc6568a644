// The arithmetic of the reducing collectives: element types, accumulation types and the
// PE-ordered reduction of one range by one CTA.
//
// Contract:
//  - f16 and bf16 accumulate in fp32 and are rounded once, to nearest even, when stored;
//    f32 accumulates in fp32, i32 in 32-bit two's complement (sums wrap).
//  - coll_reduce_pes reduces in PE order 0, 1, ..., n_pes - 1 (acc = x0; acc = op(acc,
//    x1); ...), so every PE that reduces the same inputs gets bit-identical results.
//  - Min and max of floating-point values follow fminf/fmaxf (a NaN loses to a number).
//  - The sources are read with ordinary loads: the CTA must have acquired them (coll_wait)
//    before the call. Collective over the CTA, no trailing barrier.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

#include "tmashmem/collectives.h"
#include "tmashmem/device/ctx.cuh"
#include "tmashmem/device/detail/threads.cuh"

namespace tmashmem {

/// The reductions (tmashmem_reduce_op_t).
enum class RedOp : int {
  Sum = TMASHMEM_REDUCE_SUM,
  Min = TMASHMEM_REDUCE_MIN,
  Max = TMASHMEM_REDUCE_MAX,
};

/// Element traits of the reducing dtypes: Bits is the stored element, Acc what it is
/// reduced in.
template <tmashmem_dtype_t D>
struct CollElem;

/// f32 and i32: reduced as they are stored.
template <class T>
struct CollSameElem {
  using Bits = T;
  using Acc = T;
  __device__ static __forceinline__ Acc load(Bits x) { return x; }
  __device__ static __forceinline__ Bits store(Acc x) { return x; }
};

/// f16 and bf16: 16-bit storage reduced in fp32; Convert has to_float and from_float (the
/// one rounding, to nearest even).
template <class Convert>
struct CollHalfElem {
  using Bits = uint16_t;
  using Acc = float;
  __device__ static __forceinline__ Acc load(Bits x) { return Convert::to_float(x); }
  __device__ static __forceinline__ Bits store(Acc x) { return Convert::from_float(x); }
};

struct CollF16Convert {
  __device__ static __forceinline__ float to_float(uint16_t x) {
    return __half2float(__ushort_as_half(x));
  }
  __device__ static __forceinline__ uint16_t from_float(float x) {
    return __half_as_ushort(__float2half_rn(x));
  }
};

struct CollBf16Convert {
  __device__ static __forceinline__ float to_float(uint16_t x) {
    return __uint_as_float(static_cast<uint32_t>(x) << 16);
  }
  __device__ static __forceinline__ uint16_t from_float(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  }
};

template <>
struct CollElem<TMASHMEM_DTYPE_F32> : CollSameElem<float> {};
template <>
struct CollElem<TMASHMEM_DTYPE_I32> : CollSameElem<int32_t> {};
template <>
struct CollElem<TMASHMEM_DTYPE_F16> : CollHalfElem<CollF16Convert> {};
template <>
struct CollElem<TMASHMEM_DTYPE_BF16> : CollHalfElem<CollBf16Convert> {};

/// Whether the reducing collectives take `dtype` (any op of RedOp applies to each).
__host__ __device__ constexpr bool coll_reduce_dtype_supported(uint32_t dtype) {
  return dtype == TMASHMEM_DTYPE_F32 || dtype == TMASHMEM_DTYPE_F16 ||
         dtype == TMASHMEM_DTYPE_BF16 || dtype == TMASHMEM_DTYPE_I32;
}

namespace detail {

template <RedOp Op>
__device__ __forceinline__ float coll_combine(float a, float b) {
  if constexpr (Op == RedOp::Sum)
    return a + b;
  else if constexpr (Op == RedOp::Min)
    return fminf(a, b);
  else
    return fmaxf(a, b);
}

template <RedOp Op>
__device__ __forceinline__ int32_t coll_combine(int32_t a, int32_t b) {
  if constexpr (Op == RedOp::Sum)
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  else if constexpr (Op == RedOp::Min)
    return a < b ? a : b;
  else
    return a > b ? a : b;
}

// One 16-byte vector of elements.
template <tmashmem_dtype_t D>
struct CollVec {
  using E = CollElem<D>;
  static constexpr int kLanes = 16 / sizeof(typename E::Bits);
  union {
    uint4 raw;
    typename E::Bits e[kLanes];
  };
};

}  // namespace detail

/// dst[i] = Op over q = 0..n-1 of source(q)[i], i in [0, count), in that order (see the
/// contract); source(q) is a `const void*` to q's elements (any memory this GPU reaches:
/// a peer's buffer, staging). 16-byte vector accesses where dst and every source are
/// 16-byte aligned. Collective over the CTA.
template <tmashmem_dtype_t D, RedOp Op, class Source>
__device__ __forceinline__ void coll_reduce_sources(int n, void* dst, Source&& source,
                                                    size_t count) {
  using E = CollElem<D>;
  using Bits = typename E::Bits;
  using Acc = typename E::Acc;
  using Vec = detail::CollVec<D>;
  constexpr int kLanes = Vec::kLanes;
  const unsigned tid = detail::block_thread_rank();
  const unsigned threads = detail::block_thread_count();
  Bits* out = static_cast<Bits*>(dst);
  uintptr_t bits = reinterpret_cast<uintptr_t>(dst);
  for (int q = 0; q < n; ++q) bits |= reinterpret_cast<uintptr_t>(source(q));
  size_t head = 0;
  if ((bits & 15u) == 0) {
    const size_t n_vec = count / kLanes;
    for (size_t v = tid; v < n_vec; v += threads) {
      Acc acc[kLanes];
      Vec x;
      x.raw = static_cast<const uint4*>(source(0))[v];
#pragma unroll
      for (int l = 0; l < kLanes; ++l) acc[l] = E::load(x.e[l]);
      for (int q = 1; q < n; ++q) {
        x.raw = static_cast<const uint4*>(source(q))[v];
#pragma unroll
        for (int l = 0; l < kLanes; ++l) acc[l] = detail::coll_combine<Op>(acc[l], E::load(x.e[l]));
      }
#pragma unroll
      for (int l = 0; l < kLanes; ++l) x.e[l] = E::store(acc[l]);
      reinterpret_cast<uint4*>(out)[v] = x.raw;
    }
    head = n_vec * kLanes;
  }
  for (size_t i = head + tid; i < count; i += threads) {
    Acc acc = E::load(static_cast<const Bits*>(source(0))[i]);
    for (int q = 1; q < n; ++q)
      acc = detail::coll_combine<Op>(acc, E::load(static_cast<const Bits*>(source(q))[i]));
    out[i] = E::store(acc);
  }
}

/// dst[i] = Op over PEs q = 0..n_pes-1 of PE q's copy of src_sym[i], i in [0, count),
/// in PE order (see the contract). `src_sym` is a symmetric address of this PE; `dst`
/// any memory of this GPU (this PE's or a peer's). Collective over the CTA.
template <tmashmem_dtype_t D, RedOp Op>
__device__ __forceinline__ void coll_reduce_pes(const Ctx& ctx, void* dst, const void* src_sym,
                                                size_t count) {
  const int64_t stride = static_cast<int64_t>(ctx.peer_stride);
  const char* base = static_cast<const char*>(src_sym) - int64_t(ctx.my_pe) * stride;  // PE 0's
  coll_reduce_sources<D, Op>(
      ctx.n_pes, dst, [&](int q) -> const void* { return base + q * stride; }, count);
}

}  // namespace tmashmem
