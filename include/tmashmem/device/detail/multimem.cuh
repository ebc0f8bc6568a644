// PTX wrappers for multicast: the multimem instructions (a multicast address: one access
// reaches every GPU bound to the object) and the unicast accesses the fallback fans out
// with. Each instruction is wrapped once; contracts live in tmashmem/device/multicast.cuh.
//
// What the PTX ISA allows on sm_90 (checked with ptxas for sm_90a; docs/multicast.md):
//  - multimem.st: .b32/.b64 and float vectors of 32, 64 or 128 bits (.v4.f32 here).
//  - multimem.ld_reduce / multimem.red, integers (never vectors): add on .u32 .u64 .s32
//    (no .s64); min, max on .u32 .u64 .s32 .s64; and, or, xor on .b32 .b64.
//  - floats: add on .f32 (.v2/.v4), .f64 (scalar only), .f16x2/.bf16x2 (.v2/.v4); min and
//    max on .f16x2/.bf16x2 only (no .f32/.f64); multimem.red float is add only; no scalar
//    16-bit form (an access is 32, 64 or 128 bits); .acc::f32 (accumulate in f32) exists
//    for the 16-bit types only.
//  - semantics: .relaxed or .release (st, red), .relaxed or .acquire (ld_reduce), scope
//    .sys here.
// `Sem` below is 0 for relaxed, 1 for release (st, red) or acquire (ld_reduce).
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

enum class McOp { Add, Min, Max, And, Or, Xor };

// ---- multimem.st --------------------------------------------------------------

// multimem_st_<TY><Sem>(mc, v): Sem 1 is .release, 0 is .relaxed; T in a register of
// constraint C.
#define TMASHMEM_MULTIMEM_ST(TY, T, C)                                                             \
  template <int Sem>                                                                               \
  __device__ __forceinline__ void multimem_st_##TY(void* mc, T v) {                                \
    if constexpr (Sem)                                                                             \
      asm volatile("multimem.st.release.sys.global." #TY " [%0], %1;" ::"l"(mc), C(v) : "memory"); \
    else                                                                                           \
      asm volatile("multimem.st.relaxed.sys.global." #TY " [%0], %1;" ::"l"(mc), C(v) : "memory"); \
  }
TMASHMEM_MULTIMEM_ST(b32, uint32_t, "r")
TMASHMEM_MULTIMEM_ST(b64, uint64_t, "l")
#undef TMASHMEM_MULTIMEM_ST

// 16 bytes of any data: the .v4.f32 form moves bits (a store converts nothing).
template <int Sem>
__device__ __forceinline__ void multimem_st_v4(void* mc, uint4 v) {
  if constexpr (Sem)
    asm volatile("multimem.st.release.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  else
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

// ---- multimem.ld_reduce and multimem.red, one per (op, type) the ISA has ---------

// Scalar: T in a register of constraint C; PTX type TY; op OP.
#define TMASHMEM_MULTIMEM_SCALAR(NAME, OP, TY, T, C)                                         \
  template <int Sem>                                                                         \
  __device__ __forceinline__ T multimem_ld_reduce_##NAME(const void* mc) {                   \
    T v;                                                                                     \
    if constexpr (Sem)                                                                       \
      asm volatile("multimem.ld_reduce.acquire.sys.global." OP "." TY " %0, [%1];"           \
                   : "=" C(v)                                                                \
                   : "l"(mc)                                                                 \
                   : "memory");                                                              \
    else                                                                                     \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." OP "." TY " %0, [%1];"           \
                   : "=" C(v)                                                                \
                   : "l"(mc)                                                                 \
                   : "memory");                                                              \
    return v;                                                                                \
  }                                                                                          \
  template <int Sem>                                                                         \
  __device__ __forceinline__ void multimem_red_##NAME(void* mc, T v) {                       \
    if constexpr (Sem)                                                                       \
      asm volatile("multimem.red.release.sys.global." OP "." TY " [%0], %1;" ::"l"(mc), C(v) \
                   : "memory");                                                              \
    else                                                                                     \
      asm volatile("multimem.red.relaxed.sys.global." OP "." TY " [%0], %1;" ::"l"(mc), C(v) \
                   : "memory");                                                              \
  }

TMASHMEM_MULTIMEM_SCALAR(add_u32, "add", "u32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(add_s32, "add", "s32", int32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(add_u64, "add", "u64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(min_u32, "min", "u32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(min_s32, "min", "s32", int32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(min_u64, "min", "u64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(min_s64, "min", "s64", int64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(max_u32, "max", "u32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(max_s32, "max", "s32", int32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(max_u64, "max", "u64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(max_s64, "max", "s64", int64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(and_b32, "and", "b32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(or_b32, "or", "b32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(xor_b32, "xor", "b32", uint32_t, "r")
TMASHMEM_MULTIMEM_SCALAR(and_b64, "and", "b64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(or_b64, "or", "b64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(xor_b64, "xor", "b64", uint64_t, "l")
TMASHMEM_MULTIMEM_SCALAR(add_f32, "add", "f32", float, "f")
TMASHMEM_MULTIMEM_SCALAR(add_f64, "add", "f64", double, "d")
#undef TMASHMEM_MULTIMEM_SCALAR

// 32-bit pairs of 16-bit floats, as one register of bits (x2 types), and 128-bit vectors
// (.v4) of f32 or of those pairs. ld_reduce ACC is ".acc::f32" for add of 16-bit floats.
#define TMASHMEM_MULTIMEM_X2(NAME, OP, ACC, TY, RED)                                   \
  template <int Sem>                                                                   \
  __device__ __forceinline__ uint32_t multimem_ld_reduce_##NAME(const void* mc) {      \
    uint32_t v;                                                                        \
    if constexpr (Sem)                                                                 \
      asm volatile("multimem.ld_reduce.acquire.sys.global." OP ACC "." TY " %0, [%1];" \
                   : "=r"(v)                                                           \
                   : "l"(mc)                                                           \
                   : "memory");                                                        \
    else                                                                               \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." OP ACC "." TY " %0, [%1];" \
                   : "=r"(v)                                                           \
                   : "l"(mc)                                                           \
                   : "memory");                                                        \
    return v;                                                                          \
  }                                                                                    \
  template <int Sem>                                                                   \
  __device__ __forceinline__ uint4 multimem_ld_reduce_v4_##NAME(const void* mc) {      \
    uint4 v;                                                                           \
    if constexpr (Sem)                                                                 \
      asm volatile("multimem.ld_reduce.acquire.sys.global." OP ACC ".v4." TY           \
                   " {%0, %1, %2, %3}, [%4];"                                          \
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                        \
                   : "l"(mc)                                                           \
                   : "memory");                                                        \
    else                                                                               \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." OP ACC ".v4." TY           \
                   " {%0, %1, %2, %3}, [%4];"                                          \
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                        \
                   : "l"(mc)                                                           \
                   : "memory");                                                        \
    return v;                                                                          \
  }                                                                                    \
  RED(NAME, OP, TY)

#define TMASHMEM_MULTIMEM_RED_X2(NAME, OP, TY)                                                 \
  template <int Sem>                                                                           \
  __device__ __forceinline__ void multimem_red_##NAME(void* mc, uint32_t v) {                  \
    if constexpr (Sem)                                                                         \
      asm volatile("multimem.red.release.sys.global." OP "." TY " [%0], %1;" ::"l"(mc), "r"(v) \
                   : "memory");                                                                \
    else                                                                                       \
      asm volatile("multimem.red.relaxed.sys.global." OP "." TY " [%0], %1;" ::"l"(mc), "r"(v) \
                   : "memory");                                                                \
  }                                                                                            \
  template <int Sem>                                                                           \
  __device__ __forceinline__ void multimem_red_v4_##NAME(void* mc, uint4 v) {                  \
    if constexpr (Sem)                                                                         \
      asm volatile("multimem.red.release.sys.global." OP ".v4." TY                             \
                   " [%0], {%1, %2, %3, %4};" ::"l"(mc),                                       \
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)                                      \
                   : "memory");                                                                \
    else                                                                                       \
      asm volatile("multimem.red.relaxed.sys.global." OP ".v4." TY                             \
                   " [%0], {%1, %2, %3, %4};" ::"l"(mc),                                       \
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)                                      \
                   : "memory");                                                                \
  }
#define TMASHMEM_MULTIMEM_NO_RED(NAME, OP, TY)

TMASHMEM_MULTIMEM_X2(add_f16x2, "add", ".acc::f32", "f16x2", TMASHMEM_MULTIMEM_RED_X2)
TMASHMEM_MULTIMEM_X2(add_bf16x2, "add", ".acc::f32", "bf16x2", TMASHMEM_MULTIMEM_RED_X2)
TMASHMEM_MULTIMEM_X2(min_f16x2, "min", "", "f16x2", TMASHMEM_MULTIMEM_NO_RED)
TMASHMEM_MULTIMEM_X2(min_bf16x2, "min", "", "bf16x2", TMASHMEM_MULTIMEM_NO_RED)
TMASHMEM_MULTIMEM_X2(max_f16x2, "max", "", "f16x2", TMASHMEM_MULTIMEM_NO_RED)
TMASHMEM_MULTIMEM_X2(max_bf16x2, "max", "", "bf16x2", TMASHMEM_MULTIMEM_NO_RED)
#undef TMASHMEM_MULTIMEM_X2
#undef TMASHMEM_MULTIMEM_RED_X2
#undef TMASHMEM_MULTIMEM_NO_RED

template <int Sem>
__device__ __forceinline__ float4 multimem_ld_reduce_v4_add_f32(const void* mc) {
  float4 v;
  if constexpr (Sem)
    asm volatile("multimem.ld_reduce.acquire.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(mc)
                 : "memory");
  else
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(mc)
                 : "memory");
  return v;
}

template <int Sem>
__device__ __forceinline__ void multimem_red_v4_add_f32(void* mc, float4 v) {
  if constexpr (Sem)
    asm volatile("multimem.red.release.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
  else
    asm volatile("multimem.red.relaxed.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}

// ---- the unicast fallback's accesses (strong, relaxed, system scope) ---------------

__device__ __forceinline__ uint4 ld_relaxed_sys_v4(const void* p) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

__device__ __forceinline__ void st_relaxed_sys_v4(void* p, uint4 v) {
  asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

// red.relaxed.sys on one peer's copy: what multimem.red does at each GPU (the unsigned
// adds are red_add_relaxed_sys of detail/atom.cuh).
#define TMASHMEM_UNICAST_RED(NAME, INSTR, T, C)                                           \
  __device__ __forceinline__ void unicast_red_##NAME(void* p, T v) {                      \
    asm volatile("red.relaxed.sys.global." INSTR " [%0], %1;" ::"l"(p), C(v) : "memory"); \
  }
TMASHMEM_UNICAST_RED(add_s32, "add.s32", int32_t, "r")
TMASHMEM_UNICAST_RED(min_u32, "min.u32", uint32_t, "r")
TMASHMEM_UNICAST_RED(min_s32, "min.s32", int32_t, "r")
TMASHMEM_UNICAST_RED(min_u64, "min.u64", uint64_t, "l")
TMASHMEM_UNICAST_RED(min_s64, "min.s64", int64_t, "l")
TMASHMEM_UNICAST_RED(max_u32, "max.u32", uint32_t, "r")
TMASHMEM_UNICAST_RED(max_s32, "max.s32", int32_t, "r")
TMASHMEM_UNICAST_RED(max_u64, "max.u64", uint64_t, "l")
TMASHMEM_UNICAST_RED(max_s64, "max.s64", int64_t, "l")
TMASHMEM_UNICAST_RED(and_b32, "and.b32", uint32_t, "r")
TMASHMEM_UNICAST_RED(or_b32, "or.b32", uint32_t, "r")
TMASHMEM_UNICAST_RED(xor_b32, "xor.b32", uint32_t, "r")
TMASHMEM_UNICAST_RED(and_b64, "and.b64", uint64_t, "l")
TMASHMEM_UNICAST_RED(or_b64, "or.b64", uint64_t, "l")
TMASHMEM_UNICAST_RED(xor_b64, "xor.b64", uint64_t, "l")
TMASHMEM_UNICAST_RED(add_f32, "add.f32", float, "f")
TMASHMEM_UNICAST_RED(add_f64, "add.f64", double, "d")
TMASHMEM_UNICAST_RED(add_f16x2, "add.noftz.f16x2", uint32_t, "r")
TMASHMEM_UNICAST_RED(add_bf16x2, "add.noftz.bf16x2", uint32_t, "r")
#undef TMASHMEM_UNICAST_RED

}  // namespace detail
}  // namespace tmashmem
