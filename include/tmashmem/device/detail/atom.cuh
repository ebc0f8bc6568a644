// The hardware layer's atomics: atom (returns the old value) and red (no result),
// on generic addresses. Names read <op>_<semantics>_<scope>.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

enum class AtomicOp { Add, Exch, And, Or, Xor };

// ---- relaxed, system scope (the atomics of atomic.cuh) -----------------------

// atom_relaxed_sys(op, p, v) and atom_cas_relaxed_sys for a BITS-wide word T held in
// a register of constraint C: one PTX atom per operation.
#define TMASHMEM_ATOM_ONE(INSTR, BITS, C)                       \
  asm volatile("atom.relaxed.sys." INSTR #BITS " %0, [%1], %2;" \
               : "=" C(old)                                     \
               : "l"(p), C(v)                                   \
               : "memory")
#define TMASHMEM_ATOM_RELAXED_SYS(T, BITS, C)                                      \
  __device__ __forceinline__ T atom_relaxed_sys(AtomicOp op, T* p, T v) {          \
    T old = 0;                                                                     \
    switch (op) {                                                                  \
      case AtomicOp::Add:                                                          \
        TMASHMEM_ATOM_ONE("add.u", BITS, C);                                       \
        break;                                                                     \
      case AtomicOp::Exch:                                                         \
        TMASHMEM_ATOM_ONE("exch.b", BITS, C);                                      \
        break;                                                                     \
      case AtomicOp::And:                                                          \
        TMASHMEM_ATOM_ONE("and.b", BITS, C);                                       \
        break;                                                                     \
      case AtomicOp::Or:                                                           \
        TMASHMEM_ATOM_ONE("or.b", BITS, C);                                        \
        break;                                                                     \
      case AtomicOp::Xor:                                                          \
        TMASHMEM_ATOM_ONE("xor.b", BITS, C);                                       \
        break;                                                                     \
    }                                                                              \
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
#undef TMASHMEM_ATOM_ONE

// red_add_<NAME>(p, v): one PTX `red.<PTX>`.
#define TMASHMEM_RED_ADD(NAME, PTX, T, C)                            \
  __device__ __forceinline__ void red_add_##NAME(T* p, T v) {        \
    asm volatile("red." PTX " [%0], %1;" ::"l"(p), C(v) : "memory"); \
  }
TMASHMEM_RED_ADD(relaxed_sys, "relaxed.sys.add.u32", uint32_t, "r")
TMASHMEM_RED_ADD(relaxed_sys, "relaxed.sys.add.u64", uint64_t, "l")

// ---- 64-bit signal and barrier counters -----------------------------------------

TMASHMEM_RED_ADD(release_sys, "release.sys.add.u64", uint64_t, "l")
TMASHMEM_RED_ADD(release_gpu, "release.gpu.add.u64", uint64_t, "l")
#undef TMASHMEM_RED_ADD

__device__ __forceinline__ uint64_t atom_add_acq_rel_gpu(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

}  // namespace detail
}  // namespace tmashmem
