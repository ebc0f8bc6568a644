// The hardware layer's atomics: atom (returns the old value) and red (no result),
// on generic addresses. Names read <op>_<semantics>_<scope>.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

enum class AtomicOp { Add, Exch, And, Or, Xor };

// ---- relaxed, system scope (the atomics of atomic.cuh) -----------------------

// X(op, opcode, BITS, C) for every AtomicOp: its PTX opcode, less the width (an operation
// missing here leaves a case out of atom_relaxed_sys's switch, which -Wswitch reports).
// clang-format off
#define TMASHMEM_ATOMIC_OPS(X, BITS, C) \
  X(Add, "add.u", BITS, C) X(Exch, "exch.b", BITS, C) X(And, "and.b", BITS, C) \
  X(Or, "or.b", BITS, C) X(Xor, "xor.b", BITS, C)
// clang-format on

// atom_relaxed_sys(op, p, v) and atom_cas_relaxed_sys for a BITS-wide word T held in
// a register of constraint C: one PTX atom per operation.
#define TMASHMEM_ATOM_CASE(OP, OPCODE, BITS, C)                    \
  case AtomicOp::OP:                                               \
    asm volatile("atom.relaxed.sys." OPCODE #BITS " %0, [%1], %2;" \
                 : "=" C(old)                                      \
                 : "l"(p), C(v)                                    \
                 : "memory");                                      \
    break;
#define TMASHMEM_ATOM_RELAXED_SYS(T, BITS, C)                                      \
  __device__ __forceinline__ T atom_relaxed_sys(AtomicOp op, T* p, T v) {          \
    T old = 0;                                                                     \
    switch (op) { TMASHMEM_ATOMIC_OPS(TMASHMEM_ATOM_CASE, BITS, C) }               \
    return old;                                                                    \
  }                                                                                \
  __device__ __forceinline__ T atom_cas_relaxed_sys(T* p, T expected, T desired) { \
    T old;                                                                         \
    asm volatile("atom.relaxed.sys.cas.b" #BITS " %0, [%1], %2, %3;"               \
                 : "=" C(old)                                                      \
                 : "l"(p), C(expected), C(desired)                                 \
                 : "memory");                                                      \
    return old;                                                                    \
  }
TMASHMEM_ATOM_RELAXED_SYS(uint32_t, 32, "r")
TMASHMEM_ATOM_RELAXED_SYS(uint64_t, 64, "l")
#undef TMASHMEM_ATOM_RELAXED_SYS
#undef TMASHMEM_ATOM_CASE
#undef TMASHMEM_ATOMIC_OPS

// red_add_<SEM>_<SCOPE>(p, v): one PTX `red.<SEM>.<SCOPE>.add.<TY>`.
#define TMASHMEM_RED_ADD(SEM, SCOPE, TY, T, C)                                               \
  __device__ __forceinline__ void red_add_##SEM##_##SCOPE(T* p, T v) {                       \
    asm volatile("red." #SEM "." #SCOPE ".add." #TY " [%0], %1;" ::"l"(p), C(v) : "memory"); \
  }
TMASHMEM_RED_ADD(relaxed, sys, u32, uint32_t, "r")
TMASHMEM_RED_ADD(relaxed, sys, u64, uint64_t, "l")

// ---- 64-bit signal and barrier counters -----------------------------------------

TMASHMEM_RED_ADD(release, sys, u64, uint64_t, "l")
TMASHMEM_RED_ADD(release, gpu, u64, uint64_t, "l")
#undef TMASHMEM_RED_ADD

/// One `red.relaxed.gpu.global.add.v4.f32` (sm_90): four fp32 adds, each rounded to nearest.
/// p 16-byte aligned.
__device__ __forceinline__ void red_add_relaxed_gpu_v4_f32(float* p, float x, float y, float z,
                                                           float w) {
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y),
               "f"(z), "f"(w)
               : "memory");
}

__device__ __forceinline__ uint64_t atom_add_acq_rel_gpu(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

}  // namespace detail
}  // namespace tmashmem
