// Warpgroup-level PTX for warp-specialised kernels (sm_90a): register reallocation between
// warpgroups and named barriers over a subset of a block's threads.
#pragma once

#include <cstdint>

namespace tmashmem::detail {

/// Raises this warpgroup's per-thread register budget to `Regs` (24..256, a multiple of 8).
/// All 128 threads of the warpgroup call it, convergent. Takes effect only in a kernel with
/// a register cap at entry (__launch_bounds__(threads, 1)), and only if every warpgroup's
/// role is one branch of a single if/else; the sum over the block must fit the SM's file.
template <uint32_t Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg: 24..256, step 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}

/// Lowers this warpgroup's per-thread register budget to `Regs`, releasing the rest to the
/// warpgroups that raise theirs. Same calling rules as setmaxnreg_inc.
template <uint32_t Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg: 24..256, step 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}

/// Barrier `id` (1..15; 0 is __syncthreads) over `threads` threads (a multiple of 32):
/// every participating warp calls it; orders their shared-memory accesses like
/// __syncthreads does for the block.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace tmashmem::detail
