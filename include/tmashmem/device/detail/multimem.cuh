// PTX wrappers for multicast: the multimem instructions (a multicast address: one access
// reaches every GPU bound to the object) and the unicast accesses the fallback fans out
// with. Each instruction is wrapped once; contracts live in tmashmem/device/multicast.cuh.
// Every wrapper moves raw bits (32/64-bit words, uint4 for 128 bits): the PTX type of the
// instruction says how they are read (.b32/.b64 registers fit any type of their size).
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

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace tmashmem {
namespace detail {

enum class McOp { Add, Min, Max, And, Or, Xor };

// One multimem instruction in both semantics: Sem 1 takes SEM1 (release or acquire), Sem 0
// relaxed. OPERANDS: the asm operand lists, from their first ':'.
#define TMASHMEM_MULTIMEM_ASM(Sem, INSTR, SEM1, REST, ...)                      \
  do {                                                                          \
    if constexpr (Sem)                                                          \
      asm volatile("multimem." INSTR "." SEM1 ".sys.global." REST __VA_ARGS__); \
    else                                                                        \
      asm volatile("multimem." INSTR ".relaxed.sys.global." REST __VA_ARGS__);  \
  } while (0)
// The four 32-bit registers of a 16-byte access, as asm outputs / inputs.
#define TMASHMEM_V4_OUT(v) "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
#define TMASHMEM_V4_IN(v) "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)

// ---- multimem.st: 32, 64 or 128 bits (the .v4.f32 form moves bits: a store converts
// nothing) -------------------------------------------------------------------------------

template <int Sem>
__device__ __forceinline__ void multimem_st(void* mc, uint32_t v) {
  TMASHMEM_MULTIMEM_ASM(Sem, "st", "release", "b32 [%0], %1;", ::"l"(mc), "r"(v) : "memory");
}
template <int Sem>
__device__ __forceinline__ void multimem_st(void* mc, uint64_t v) {
  TMASHMEM_MULTIMEM_ASM(Sem, "st", "release", "b64 [%0], %1;", ::"l"(mc), "l"(v) : "memory");
}
template <int Sem>
__device__ __forceinline__ void multimem_st(void* mc, uint4 v) {
  TMASHMEM_MULTIMEM_ASM(Sem, "st", "release", "v4.f32 [%0], {%1, %2, %3, %4};", ::"l"(mc),
                        TMASHMEM_V4_IN(v)
                        : "memory");
}

// ---- multimem.ld_reduce and multimem.red, and the fallback's red ---------------------------

// Multimem<Op, T>: the instructions of op Op on elements T (16-bit floats in pairs), one
// specialisation per (op, type) the ISA has, on the bits of one word W (detail/
// multicast_word.cuh: McWord<T>):
//   ld_reduce<Sem>(mc) -> W         multimem.ld_reduce on a multicast address
//   red<Sem>(mc, W)                 multimem.red (where the ISA has it)
//   red_unicast(p, W)               red.relaxed.sys.global on one peer's copy: what
//                                   multimem.red does at each GPU (the fallback)
//   ld_reduce_v4 / red_v4           the 128-bit forms, floats only
template <McOp Op, class T>
struct Multimem;

#define TMASHMEM_MULTIMEM_LD_REDUCE(W, C, OPTY)                           \
  template <int Sem>                                                      \
  __device__ __forceinline__ static W ld_reduce(const void* mc) {         \
    W v;                                                                  \
    TMASHMEM_MULTIMEM_ASM(Sem, "ld_reduce", "acquire", OPTY " %0, [%1];", \
                          : "=" C(v)                                      \
                          : "l"(mc)                                       \
                          : "memory");                                    \
    return v;                                                             \
  }
#define TMASHMEM_MULTIMEM_RED(W, C, OPTY, UNICAST_OPTY)                                          \
  template <int Sem>                                                                             \
  __device__ __forceinline__ static void red(void* mc, W v) {                                    \
    TMASHMEM_MULTIMEM_ASM(Sem, "red", "release", OPTY " [%0], %1;", ::"l"(mc), C(v) : "memory"); \
  }                                                                                              \
  __device__ __forceinline__ static void red_unicast(void* p, W v) {                             \
    asm volatile("red.relaxed.sys.global." UNICAST_OPTY " [%0], %1;" ::"l"(p), C(v) : "memory"); \
  }
#define TMASHMEM_MULTIMEM_LD_REDUCE_V4(OPTY)                                            \
  template <int Sem>                                                                    \
  __device__ __forceinline__ static uint4 ld_reduce_v4(const void* mc) {                \
    uint4 v;                                                                            \
    TMASHMEM_MULTIMEM_ASM(Sem, "ld_reduce", "acquire", OPTY " {%0, %1, %2, %3}, [%4];", \
                          : TMASHMEM_V4_OUT(v)                                          \
                          : "l"(mc)                                                     \
                          : "memory");                                                  \
    return v;                                                                           \
  }
#define TMASHMEM_MULTIMEM_RED_V4(OPTY)                                                       \
  template <int Sem>                                                                         \
  __device__ __forceinline__ static void red_v4(void* mc, uint4 v) {                         \
    TMASHMEM_MULTIMEM_ASM(Sem, "red", "release", OPTY " [%0], {%1, %2, %3, %4};", ::"l"(mc), \
                          TMASHMEM_V4_IN(v)                                                  \
                          : "memory");                                                       \
  }

// Integers and f64: one element per word, the same op and type for all three forms.
#define TMASHMEM_MULTIMEM_SCALAR(OP, T, W, C, OPTY) \
  template <>                                       \
  struct Multimem<McOp::OP, T> {                    \
    TMASHMEM_MULTIMEM_LD_REDUCE(W, C, OPTY)         \
    TMASHMEM_MULTIMEM_RED(W, C, OPTY, OPTY)         \
  };
// and, or, xor of a 32- or 64-bit integer type T (PTX .bBITS).
#define TMASHMEM_MULTIMEM_BITWISE(T, W, C, BITS)        \
  TMASHMEM_MULTIMEM_SCALAR(And, T, W, C, "and.b" #BITS) \
  TMASHMEM_MULTIMEM_SCALAR(Or, T, W, C, "or.b" #BITS)   \
  TMASHMEM_MULTIMEM_SCALAR(Xor, T, W, C, "xor.b" #BITS)
// min and max of an integer type T (PTX .TY).
#define TMASHMEM_MULTIMEM_MIN_MAX(T, W, C, TY)      \
  TMASHMEM_MULTIMEM_SCALAR(Min, T, W, C, "min." TY) \
  TMASHMEM_MULTIMEM_SCALAR(Max, T, W, C, "max." TY)

TMASHMEM_MULTIMEM_SCALAR(Add, uint32_t, uint32_t, "r", "add.u32")
TMASHMEM_MULTIMEM_SCALAR(Add, int32_t, uint32_t, "r", "add.s32")
TMASHMEM_MULTIMEM_SCALAR(Add, uint64_t, uint64_t, "l", "add.u64")
TMASHMEM_MULTIMEM_SCALAR(Add, double, uint64_t, "l", "add.f64")
TMASHMEM_MULTIMEM_MIN_MAX(uint32_t, uint32_t, "r", "u32")
TMASHMEM_MULTIMEM_MIN_MAX(int32_t, uint32_t, "r", "s32")
TMASHMEM_MULTIMEM_MIN_MAX(uint64_t, uint64_t, "l", "u64")
TMASHMEM_MULTIMEM_MIN_MAX(int64_t, uint64_t, "l", "s64")
TMASHMEM_MULTIMEM_BITWISE(uint32_t, uint32_t, "r", 32)
TMASHMEM_MULTIMEM_BITWISE(int32_t, uint32_t, "r", 32)
TMASHMEM_MULTIMEM_BITWISE(uint64_t, uint64_t, "l", 64)
TMASHMEM_MULTIMEM_BITWISE(int64_t, uint64_t, "l", 64)

template <>
struct Multimem<McOp::Add, float> {
  TMASHMEM_MULTIMEM_LD_REDUCE(uint32_t, "r", "add.f32")
  TMASHMEM_MULTIMEM_RED(uint32_t, "r", "add.f32", "add.f32")
  TMASHMEM_MULTIMEM_LD_REDUCE_V4("add.v4.f32")
  TMASHMEM_MULTIMEM_RED_V4("add.v4.f32")
};

// Pairs of 16-bit floats TY (f16x2, bf16x2): add accumulates in f32 in ld_reduce; min and
// max have no red.
#define TMASHMEM_MULTIMEM_X2(T, TY)                                  \
  template <>                                                        \
  struct Multimem<McOp::Add, T> {                                    \
    TMASHMEM_MULTIMEM_LD_REDUCE(uint32_t, "r", "add.acc::f32." TY)   \
    TMASHMEM_MULTIMEM_RED(uint32_t, "r", "add." TY, "add.noftz." TY) \
    TMASHMEM_MULTIMEM_LD_REDUCE_V4("add.acc::f32.v4." TY)            \
    TMASHMEM_MULTIMEM_RED_V4("add.v4." TY)                           \
  };                                                                 \
  template <>                                                        \
  struct Multimem<McOp::Min, T> {                                    \
    TMASHMEM_MULTIMEM_LD_REDUCE(uint32_t, "r", "min." TY)            \
    TMASHMEM_MULTIMEM_LD_REDUCE_V4("min.v4." TY)                     \
  };                                                                 \
  template <>                                                        \
  struct Multimem<McOp::Max, T> {                                    \
    TMASHMEM_MULTIMEM_LD_REDUCE(uint32_t, "r", "max." TY)            \
    TMASHMEM_MULTIMEM_LD_REDUCE_V4("max.v4." TY)                     \
  };
TMASHMEM_MULTIMEM_X2(__half, "f16x2")
TMASHMEM_MULTIMEM_X2(__nv_bfloat16, "bf16x2")

#undef TMASHMEM_MULTIMEM_X2
#undef TMASHMEM_MULTIMEM_MIN_MAX
#undef TMASHMEM_MULTIMEM_BITWISE
#undef TMASHMEM_MULTIMEM_SCALAR
#undef TMASHMEM_MULTIMEM_RED_V4
#undef TMASHMEM_MULTIMEM_LD_REDUCE_V4
#undef TMASHMEM_MULTIMEM_RED
#undef TMASHMEM_MULTIMEM_LD_REDUCE
#undef TMASHMEM_MULTIMEM_ASM

// ---- the unicast fallback's 16-byte accesses (strong, relaxed, system scope) -------------

__device__ __forceinline__ uint4 ld_relaxed_sys_v4(const void* p) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : TMASHMEM_V4_OUT(v)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_sys_v4(void* p, uint4 v) {
  asm volatile("st.relaxed.sys.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), TMASHMEM_V4_IN(v)
               : "memory");
}

#undef TMASHMEM_V4_OUT
#undef TMASHMEM_V4_IN

}  // namespace detail
}  // namespace tmashmem
