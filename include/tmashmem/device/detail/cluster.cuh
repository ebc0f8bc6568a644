// The hardware layer's thread-block-cluster instructions (the cluster's special
// registers, cluster_ctarank and cluster_nctarank, are sreg.cuh's).
#pragma once

#include <stdint.h>

#include "tmashmem/device/detail/sreg.cuh"

namespace tmashmem {
namespace detail {

// shared::cta address `local` -> the shared::cluster address of the same offset in
// the CTA of rank `cta_rank`.
__device__ __forceinline__ uint32_t mapa_shared_cluster(uint32_t local, uint32_t cta_rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(cta_rank));
  return remote;
}

__device__ __forceinline__ void barrier_cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void barrier_cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

}  // namespace detail
}  // namespace tmashmem
