// Thread-group arithmetic shared by the collective (warp and block) calls.
#pragma once

namespace tmashmem {
namespace detail {

/// Rank of the calling thread in its block (x fastest, like threadIdx flattening).
__device__ __forceinline__ unsigned block_thread_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/// Threads in the calling block.
__device__ __forceinline__ unsigned block_thread_count() {
  return blockDim.x * blockDim.y * blockDim.z;
}

/// Lanes of the calling thread's warp that exist in the block (the last warp of a
/// block whose size is not a multiple of 32 is partial).
__device__ __forceinline__ unsigned warp_member_mask() {
  const unsigned warp_start = block_thread_rank() & ~31u;
  const unsigned lanes = min(32u, block_thread_count() - warp_start);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

}  // namespace detail
}  // namespace tmashmem
