// Shared-memory placement for TMA tiles.
//
// Dynamic shared memory (`extern __shared__ __align__(1024) uint8_t smem[];`) starts
// where the launch places it: the declared alignment is not guaranteed at run time
// (the CUDA documentation promises 16 bytes), and static shared variables of the
// kernel may come first. A 128B-swizzled tile needs a 1024-byte aligned shared
// address (512 for 64B, 256 for 32B; plain tiles 128): reserve `Align - 16` more bytes
// of dynamic shared memory than the tiles need and round the pointer with align_smem.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/address.cuh"

namespace tmashmem {

/// `p` (a pointer into shared memory) rounded up so that its shared-memory address is a
/// multiple of Align (a power of two). The swizzle pattern follows the shared address
/// bits, so the rounding is done on that address, not on the generic pointer.
template <uint32_t Align, class T>
__device__ __forceinline__ T* align_smem(T* p) {
  static_assert(Align != 0 && (Align & (Align - 1)) == 0, "align_smem: Align is a power of two");
  const uint32_t pad = (Align - (detail::smem_address(p) & (Align - 1))) & (Align - 1);
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + pad);
}

}  // namespace tmashmem
