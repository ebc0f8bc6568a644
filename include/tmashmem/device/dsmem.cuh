// Distributed shared memory: a bulk copy from this CTA's shared memory into another CTA
// of the same thread-block cluster, completing on that CTA's mbarrier.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tmashmem/device/cluster.cuh"
#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/mbarrier.cuh"

namespace tmashmem {

/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from this CTA's shared
/// memory `src` into the shared memory of the cluster CTA `dst_cta_rank`, at the same offset
/// as this CTA's `dst`; completes `bytes` on that CTA's mbarrier at the same offset as
/// `dst_bar`. The receiver announces the bytes on its own barrier (expect_tx) and waits on
/// it; its barrier must be initialised before the copy is issued (cluster_sync() after
/// init). The sender learns nothing about completion: it must not overwrite `src` or exit
/// before the receiver says it is done (e.g. a final cluster_sync()). Shared memory that
/// other threads wrote with ordinary stores needs fence_proxy_async_shared() in them first.
__device__ __forceinline__ void dsmem_copy_to_cta(void* dst, const void* src, uint32_t bytes,
                                                  uint32_t dst_cta_rank, Mbarrier& dst_bar) {
#ifdef TMASHMEM_DEVICE_DEBUG
  if ((detail::smem_address(dst) | detail::smem_address(src) | bytes) % 16 != 0) {
    printf("[tmashmem] dsmem_copy_to_cta: dst %u, src %u and bytes %u must be multiples of 16\n",
           detail::smem_address(dst), detail::smem_address(src), bytes);
    __trap();
  }
#endif
  detail::fence_proxy_async_shared();
  detail::bulk_copy_to_cluster(cluster_map_shared(dst, dst_cta_rank), detail::smem_address(src),
                               bytes, cluster_map_shared(&dst_bar, dst_cta_rank));
}

}  // namespace tmashmem
