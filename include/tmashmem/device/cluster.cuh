// tmashmem device API: small thread-block-cluster helpers (sm_90) used by the tile layer's
// multicast and distributed-shared-memory copies.
//
// A kernel launched without a cluster is a cluster of one CTA: rank 0 of 1, and every helper
// here still works.
#pragma once

#include <cstdint>

namespace tmashmem {

/// This CTA's rank in its cluster, 0 .. cluster_num_ctas() - 1.
__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// CTAs in this cluster.
__device__ __forceinline__ uint32_t cluster_num_ctas() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

/// The shared::cluster address of `smem` (a shared-memory pointer of this CTA) in the CTA of
/// rank `cta_rank`: the same offset in that CTA's shared memory. For PTX operands only.
__device__ __forceinline__ uint32_t cluster_map_shared(const void* smem, uint32_t cta_rank) {
  uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(cta_rank));
  return remote;
}

/// Every thread of every CTA of the cluster arrives (release) ...
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

/// ... and waits (acquire) for all the others. Call both from every thread, convergent.
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/// cluster_arrive() then cluster_wait(): a full barrier over the cluster. Needed before a
/// CTA touches another CTA's shared memory for the first time (the other CTA must have
/// started and initialised its barriers) and before a CTA exits while others may still
/// read or write its shared memory.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

}  // namespace tmashmem
