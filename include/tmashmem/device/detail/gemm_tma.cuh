// The PTX instructions the GEMM and the fused kernels need that the tile layer
// (detail/tensor.cuh, detail/bulk.cuh, detail/mbarrier.cuh, detail/cluster.cuh) does not wrap:
// the tensor-map descriptor prefetch, an mbarrier arrival on another CTA of the cluster with
// the default (CTA-scope) release, and the bulk L2 prefetch of a byte range. Every tensor copy
// of the GEMM goes through detail/tensor.cuh.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/cluster.cuh"

namespace tmashmem::detail {

/// Pulls the 128-byte CUtensorMap at `map` (a __grid_constant__ parameter or global memory)
/// into the TMA unit's descriptor cache ahead of the first use.
__device__ __forceinline__ void tensormap_prefetch(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/// Starts pulling [`src`, `src` + `bytes`) of global memory into L2 (asynchronous, no
/// completion to wait for, no register or shared memory used). `src` and `bytes` multiples of
/// 16. A hint only: a later load of the range reads whatever memory holds then.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(reinterpret_cast<uint64_t>(src)),
               "r"(bytes)
               : "memory");
}

/// One arrival on the mbarrier at `bar`'s offset in the CTA of cluster rank `cta_rank` (this
/// CTA's own rank included), with the default release at CTA scope. Enough for a consumer
/// that hands a stage back after wgmma_wait (its reads of the stage are complete); a
/// .release.cluster arrival would cost a GPU-wide memory barrier per call (docs/gemm.md).
__device__ __forceinline__ void mbarrier_arrive_cluster(const void* bar, uint32_t cta_rank) {
  const uint32_t remote = mapa_shared_cluster(smem_address(bar), cta_rank);
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

}  // namespace tmashmem::detail
