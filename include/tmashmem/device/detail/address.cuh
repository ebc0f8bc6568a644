// Address-space conversions for PTX operands.
#pragma once

#include <stdint.h>

namespace tmashmem {
namespace detail {

/// The 32-bit shared::cta address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// The global-space address of a generic pointer into global memory.
__device__ __forceinline__ uint64_t gmem_address(const void* p) {
  return static_cast<uint64_t>(__cvta_generic_to_global(p));
}

}  // namespace detail
}  // namespace tmashmem
