// The hardware layer's fences: memory fences and proxy fences (PTX fence.*).
#pragma once

namespace tmashmem {
namespace detail {

__device__ __forceinline__ void fence_acq_rel_sys() {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }

// Orders this thread's generic-proxy accesses (all state spaces) with its
// async-proxy (cp.async.bulk, TMA) accesses, both ways.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async;" ::: "memory");
}

// The same, for global memory only.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// The same, for this CTA's shared memory only.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Makes this thread's mbarrier.init visible to the async proxy and to the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Acquires the 128-byte CUtensorMap at `map` (global memory written by the host)
// for this thread's later tensor copies.
__device__ __forceinline__ void fence_tensormap_acquire(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
}

}  // namespace detail
}  // namespace tmashmem
