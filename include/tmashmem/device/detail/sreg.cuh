// The hardware layer's reads of PTX special registers: one `mov` each.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

// NAME() reads %REG, a TY-typed special register, into a T in a register of constraint C.
#define TMASHMEM_SREG(NAME, T, TY, C, REG)                \
  __device__ __forceinline__ T NAME() {                   \
    T v;                                                  \
    asm volatile("mov." TY " %0, %%" REG ";" : "=" C(v)); \
    return v;                                             \
  }
// Nanoseconds from the GPU's global timer (same clock on every SM).
TMASHMEM_SREG(global_timer_ns, uint64_t, "u64", "l", "globaltimer")
// This CTA's rank in its cluster, and the number of CTAs in the cluster.
TMASHMEM_SREG(cluster_ctarank, uint32_t, "u32", "r", "cluster_ctarank")
TMASHMEM_SREG(cluster_nctarank, uint32_t, "u32", "r", "cluster_nctarank")
#undef TMASHMEM_SREG

}  // namespace detail
}  // namespace tmashmem
