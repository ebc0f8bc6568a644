// The hardware layer's loads and stores with a memory-model qualifier (PTX ld/st
// .relaxed/.acquire/.release at .gpu or .sys scope). Generic addresses; each
// wrapper is one instruction. Names read <op>_<semantics>_<scope>.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

// ld_<SEM>_<SCOPE>(const T* p) and st_<SEM>_<SCOPE>(T* p, T v): one PTX
// `ld.<SEM>.<SCOPE>.<TY>` / `st.<SEM>.<SCOPE>.<TY>`, the value in a register of constraint C.
#define TMASHMEM_LD(SEM, SCOPE, TY, T, C)                                                    \
  __device__ __forceinline__ T ld_##SEM##_##SCOPE(const T* p) {                              \
    T v;                                                                                     \
    asm volatile("ld." #SEM "." #SCOPE "." #TY " %0, [%1];" : "=" C(v) : "l"(p) : "memory"); \
    return v;                                                                                \
  }
#define TMASHMEM_ST(SEM, SCOPE, TY, T, C)                                               \
  __device__ __forceinline__ void st_##SEM##_##SCOPE(T* p, T v) {                       \
    asm volatile("st." #SEM "." #SCOPE "." #TY " [%0], %1;" ::"l"(p), C(v) : "memory"); \
  }

// ---- relaxed, system scope: every width (p/g, relaxed signals) ---------------

// Bytes travel in a 16-bit register: PTX has no 8-bit register constraint.
__device__ __forceinline__ void st_relaxed_sys(uint8_t* p, uint8_t v) {
  asm volatile("st.relaxed.sys.u8 [%0], %1;" ::"l"(p), "h"(static_cast<uint16_t>(v)) : "memory");
}
TMASHMEM_ST(relaxed, sys, u16, uint16_t, "h")
TMASHMEM_ST(relaxed, sys, u32, uint32_t, "r")
TMASHMEM_ST(relaxed, sys, u64, uint64_t, "l")

__device__ __forceinline__ uint8_t ld_relaxed_sys(const uint8_t* p) {
  uint16_t v;
  asm volatile("ld.relaxed.sys.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return static_cast<uint8_t>(v);
}
TMASHMEM_LD(relaxed, sys, u16, uint16_t, "h")
TMASHMEM_LD(relaxed, sys, u32, uint32_t, "r")
TMASHMEM_LD(relaxed, sys, u64, uint64_t, "l")

// ---- 64-bit words (signals, barrier counters) ---------------------------------

TMASHMEM_LD(relaxed, gpu, u64, uint64_t, "l")
TMASHMEM_LD(acquire, sys, u64, uint64_t, "l")
TMASHMEM_LD(acquire, gpu, u64, uint64_t, "l")
TMASHMEM_ST(relaxed, gpu, u64, uint64_t, "l")
TMASHMEM_ST(release, sys, u64, uint64_t, "l")
TMASHMEM_ST(release, gpu, u64, uint64_t, "l")

// ---- 16-byte lines of two 64-bit words (the collectives' low-latency form) -----
// A vector access is two 64-bit accesses in the memory model, each single-copy atomic
// (aligned): a word's halves are seen together, the two words independently.

__device__ __forceinline__ void st_relaxed_sys_v2(uint64_t* p, uint64_t w0, uint64_t w1) {
  asm volatile("st.relaxed.sys.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(w0), "l"(w1) : "memory");
}
__device__ __forceinline__ void ld_relaxed_sys_v2(const uint64_t* p, uint64_t& w0, uint64_t& w1) {
  asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(p) : "memory");
}

// ---- fp32 quads, weak (data ordered by a flag's release / acquire) ---------------
// The deterministic reduce-scatter's staging: 16 bytes a thread, a warp's 32 quads adjacent.

/// One `st.global.v4.f32`. p 16-byte aligned.
__device__ __forceinline__ void st_global_v4_f32(float* p, float x, float y, float z, float w) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(w)
               : "memory");
}
/// One `ld.global.cg.v4.f32` if `pred` (cached in L2 only: the data's writers are other SMs),
/// else {0, 0, 0, 0} and p is not read: predicated, not branched, so that every path defines the
/// registers the same way (wgmma accumulators defined on one branch only make ptxas serialise
/// the MMAs: C7515). p 16-byte aligned. Order them after an acquire with a barrier.
__device__ __forceinline__ void ld_cg_v4_f32_if(const float* p, bool pred, float& x, float& y,
                                                float& z, float& w) {
  asm volatile(
      "{\n\t.reg .pred q;\n\t"
      "setp.ne.u32 q, %5, 0;\n\t"
      "mov.b32 %0, 0;\n\t"
      "mov.b32 %1, 0;\n\t"
      "mov.b32 %2, 0;\n\t"
      "mov.b32 %3, 0;\n\t"
      "@q ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\n\t}"
      : "=f"(x), "=f"(y), "=f"(z), "=f"(w)
      : "l"(p), "r"(static_cast<uint32_t>(pred))
      : "memory");
}

#undef TMASHMEM_LD
#undef TMASHMEM_ST

}  // namespace detail
}  // namespace tmashmem
