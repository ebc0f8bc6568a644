// tmashmem device API: small thread-block-cluster helpers (sm_90) used by the tile layer's
// multicast and distributed-shared-memory copies.
//
// A kernel launched without a cluster is a cluster of one CTA: rank 0 of 1, and every helper
// here still works.
#pragma once

#include <cstdint>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/cluster.cuh"

namespace tmashmem {

/// This CTA's rank in its cluster, 0 .. cluster_num_ctas() - 1.
__device__ __forceinline__ uint32_t cluster_cta_rank() { return detail::cluster_ctarank(); }

/// CTAs in this cluster.
__device__ __forceinline__ uint32_t cluster_num_ctas() { return detail::cluster_nctarank(); }

/// The shared::cluster address of `smem` (a shared-memory pointer of this CTA) in the CTA of
/// rank `cta_rank`: the same offset in that CTA's shared memory. For PTX operands only.
__device__ __forceinline__ uint32_t cluster_map_shared(const void* smem, uint32_t cta_rank) {
  return detail::mapa_shared_cluster(detail::smem_address(smem), cta_rank);
}

/// Every thread of every CTA of the cluster arrives (release) ...
__device__ __forceinline__ void cluster_arrive() { detail::barrier_cluster_arrive_release(); }

/// ... and waits (acquire) for all the others. Call both from every thread, convergent.
__device__ __forceinline__ void cluster_wait() { detail::barrier_cluster_wait_acquire(); }

/// cluster_arrive() then cluster_wait(): a full barrier over the cluster. Needed before a
/// CTA touches another CTA's shared memory for the first time (the other CTA must have
/// started and initialised its barriers) and before a CTA exits while others may still
/// read or write its shared memory.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

}  // namespace tmashmem
