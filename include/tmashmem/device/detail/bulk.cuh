// The hardware layer's non-tensor bulk copies (PTX cp.async.bulk) and the bulk
// async-group operations (commit_group, wait_group, wait_group.read) that the
// tensor stores and reduces share.
#pragma once

#include <stdint.h>

#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/async_group.cuh"

namespace tmashmem {
namespace detail {

// global -> shared (this CTA, as a shared::cluster address), completing `bytes`
// transaction bytes on the mbarrier `bar`.
__device__ __forceinline__ void bulk_load(uint32_t smem_dst, const void* gmem_src, uint32_t bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_dst),
      "l"(gmem_address(gmem_src)), "r"(bytes), "r"(bar)
      : "memory");
}

// shared -> global, in the current bulk async-group.
__device__ __forceinline__ void bulk_store(void* gmem_dst, uint32_t smem_src, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem_address(gmem_dst)),
      "r"(smem_src), "r"(bytes)
      : "memory");
}

// This CTA's shared memory -> another cluster CTA's (shared::cluster addresses of
// the destination and of its mbarrier), completing `bytes` on that mbarrier.
__device__ __forceinline__ void bulk_copy_to_cluster(uint32_t cluster_dst, uint32_t smem_src,
                                                     uint32_t bytes, uint32_t cluster_bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, "
      "[%3];" ::"r"(cluster_dst),
      "r"(smem_src), "r"(bytes), "r"(cluster_bar)
      : "memory");
}

// bulk_commit() closes the current bulk async-group; bulk_wait<N>() waits until at most N
// of this thread's bulk async-groups are pending; the others have completed, writes
// included (completion makes them visible to the generic proxy).
TMASHMEM_ASYNC_GROUP(bulk, "cp.async.bulk", "", 63)

// Waits until at most N of this thread's bulk async-groups still read their source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  static_assert(N >= 0 && N <= 63, "bulk wait_group.read N is 0..63");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Every bulk async-group this thread committed has completed.
__device__ __forceinline__ void bulk_wait_all() { bulk_wait<0>(); }

}  // namespace detail
}  // namespace tmashmem
