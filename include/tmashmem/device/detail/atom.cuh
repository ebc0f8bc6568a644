// The hardware layer's atomics: atom (returns the old value) and red (no result),
// on generic addresses. Names read <op>_<semantics>_<scope>.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

enum class AtomicOp { Add, Exch, And, Or, Xor };

// ---- relaxed, system scope (the atomics of atomic.cuh) -----------------------

__device__ __forceinline__ uint32_t atom_relaxed_sys(AtomicOp op, uint32_t* p, uint32_t v) {
  uint32_t old = 0;
  switch (op) {
    case AtomicOp::Add:
      asm volatile("atom.relaxed.sys.add.u32 %0, [%1], %2;"
                   : "=r"(old)
                   : "l"(p), "r"(v)
                   : "memory");
      break;
    case AtomicOp::Exch:
      asm volatile("atom.relaxed.sys.exch.b32 %0, [%1], %2;"
                   : "=r"(old)
                   : "l"(p), "r"(v)
                   : "memory");
      break;
    case AtomicOp::And:
      asm volatile("atom.relaxed.sys.and.b32 %0, [%1], %2;"
                   : "=r"(old)
                   : "l"(p), "r"(v)
                   : "memory");
      break;
    case AtomicOp::Or:
      asm volatile("atom.relaxed.sys.or.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
      break;
    case AtomicOp::Xor:
      asm volatile("atom.relaxed.sys.xor.b32 %0, [%1], %2;"
                   : "=r"(old)
                   : "l"(p), "r"(v)
                   : "memory");
      break;
  }
  return old;
}

__device__ __forceinline__ uint64_t atom_relaxed_sys(AtomicOp op, uint64_t* p, uint64_t v) {
  uint64_t old = 0;
  switch (op) {
    case AtomicOp::Add:
      asm volatile("atom.relaxed.sys.add.u64 %0, [%1], %2;"
                   : "=l"(old)
                   : "l"(p), "l"(v)
                   : "memory");
      break;
    case AtomicOp::Exch:
      asm volatile("atom.relaxed.sys.exch.b64 %0, [%1], %2;"
                   : "=l"(old)
                   : "l"(p), "l"(v)
                   : "memory");
      break;
    case AtomicOp::And:
      asm volatile("atom.relaxed.sys.and.b64 %0, [%1], %2;"
                   : "=l"(old)
                   : "l"(p), "l"(v)
                   : "memory");
      break;
    case AtomicOp::Or:
      asm volatile("atom.relaxed.sys.or.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
      break;
    case AtomicOp::Xor:
      asm volatile("atom.relaxed.sys.xor.b64 %0, [%1], %2;"
                   : "=l"(old)
                   : "l"(p), "l"(v)
                   : "memory");
      break;
  }
  return old;
}

__device__ __forceinline__ uint32_t atom_cas_relaxed_sys(uint32_t* p, uint32_t expected,
                                                         uint32_t desired) {
  uint32_t old;
  asm volatile("atom.relaxed.sys.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(p), "r"(expected), "r"(desired)
               : "memory");
  return old;
}

__device__ __forceinline__ uint64_t atom_cas_relaxed_sys(uint64_t* p, uint64_t expected,
                                                         uint64_t desired) {
  uint64_t old;
  asm volatile("atom.relaxed.sys.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old)
               : "l"(p), "l"(expected), "l"(desired)
               : "memory");
  return old;
}

__device__ __forceinline__ void red_add_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("red.relaxed.sys.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void red_add_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ---- 64-bit signal and barrier counters -----------------------------------------

__device__ __forceinline__ void red_add_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void red_add_release_gpu(uint64_t* p, uint64_t v) {
  asm volatile("red.release.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t atom_add_acq_rel_gpu(uint64_t* p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

}  // namespace detail
}  // namespace tmashmem
