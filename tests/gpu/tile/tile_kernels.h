// The kernels of the tile tests (tile_kernels.cu), behind host launchers that the Catch2
// code (test_tile.cpp, a plain C++ file) calls. Every kernel bounds every wait and reports
// failures through a KernelStatus instead of hanging.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tmashmem/ctx.h"
#include "tmashmem/tensor_handle.h"

#ifdef __CUDACC__
#define TILE_TEST_HD __host__ __device__
#else
#define TILE_TEST_HD
#endif

namespace tile_test {

// One tile of work for one CTA: get the tile at `coords` of `get_pe`'s source tensor; copy
// the raw shared-memory tile to dump + out_index * dump_stride when out_index >= 0; then
// put it (or reduce it) into `put_pe`'s destination tensor at the same coordinates when
// put_pe >= 0.
struct TileJob {
  int32_t get_pe;
  int32_t put_pe;
  int32_t coords[5];
  int32_t out_index;
};

// Failure codes a kernel reports.
enum : int32_t {
  kOk = 0,
  kGetTimeout = 1,     // a get's mbarrier phase did not complete in time
  kSignalTimeout = 2,  // a signal did not arrive in time
  kDataMismatch = 3,   // the consumer saw wrong bytes after the signal
  kDsmemTimeout = 4,
  kMulticastTimeout = 5,
};

struct KernelStatus {
  int32_t failures;
  int32_t first_code;
  int32_t first_job;
  int32_t mismatches;
};

// Reduce operations, numbered like tmashmem::TileReduceOp.
enum ReduceOpId : int32_t { kAdd, kMin, kMax, kInc, kDec, kAnd, kOr, kXor };

// Byte layout of a tensor, for the kernels that address it with ordinary loads.
struct LayoutParams {
  uint32_t rank;
  uint32_t elem_bytes;
  uint64_t dims[5];
  uint64_t strides[4];  // bytes, of dimensions 1..4
  uint32_t box[5];      // tile extent (1 beyond rank)
};

// The byte a producer writes for byte `b` of the element at linear element index `linear`
// in round `round` from PE `pe`: what the consumer expects to read.
TILE_TEST_HD inline uint8_t pattern_byte(int pe, uint64_t linear, uint32_t b, uint32_t round) {
  uint64_t x =
      (linear * 0x9E3779B97F4A7C15ull) ^ (uint64_t(pe + 1) << 56) ^ (uint64_t(round) << 40) ^ b;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<uint8_t>(x);
}

// All launchers return the launch error (cudaSuccess when queued); they do not synchronise.
// Shared memory per CTA: 1024 bytes of alignment slack plus the tiles.

// Jobs as above with plain puts.
cudaError_t launch_get_put(const tmashmem_tensor_handle_t& src, const tmashmem_tensor_handle_t& dst,
                           const TileJob* jobs, int n_jobs, uint8_t* dump, uint64_t dump_stride,
                           KernelStatus* status, int blocks, uint64_t timeout_ns);

// Jobs with tma_reduce_tile<op> instead of the put.
cudaError_t launch_get_reduce(ReduceOpId op, const tmashmem_tensor_handle_t& src,
                              const tmashmem_tensor_handle_t& dst, const TileJob* jobs, int n_jobs,
                              KernelStatus* status, int blocks, uint64_t timeout_ns);

// Producer: for each job, every thread writes pattern_byte(my_pe, ...) into the shared tile
// with ordinary stores (elements at coords + k, swizzle none, element strides 1), then one
// thread puts it to put_pe with tma_put_tile_signal(add 1) on `signal` (symmetric,
// slot my_pe of put_pe's array).
cudaError_t launch_put_signal(const tmashmem_ctx_t& ctx, const tmashmem_tensor_handle_t& dst,
                              LayoutParams layout, const TileJob* jobs, int n_jobs,
                              uint64_t* signal, uint32_t round, int blocks);

// Consumer: waits (acquire, bounded) until signal[p] >= expected[p] for every PE p, then
// checks every in-bounds element of every tile at tiles[j].coords (extent layout.box) in
// slot p of the destination buffer (the tensor at slots + p * slot_bytes) against
// pattern_byte(p, ...), counting mismatches.
cudaError_t launch_consume(const uint8_t* slots, uint64_t slot_bytes, LayoutParams layout,
                           const TileJob* tiles, int n_tiles, const uint64_t* signal,
                           const uint64_t* expected, int n_pes, uint32_t round,
                           KernelStatus* status, uint64_t timeout_ns);

// Clusters of `cluster` CTAs (2 or 4), `n_clusters` of them. CTA r of cluster k issues one
// multicast get of jobs[k * cluster + r] (from get_pe) to every CTA of its cluster, into
// shared slot r; each CTA then dumps all `cluster` slots to
// dump + ((k * cluster + my_rank) * cluster + slot) * dump_stride.
cudaError_t launch_multicast(const tmashmem_tensor_handle_t& src, const TileJob* jobs, int cluster,
                             int n_clusters, uint8_t* dump, uint64_t dump_stride,
                             KernelStatus* status, uint64_t timeout_ns);

// Clusters of `cluster` CTAs: CTA r fills `bytes` of shared memory with
// pattern_byte(k * cluster + r, i, 0, 0) and copies them with dsmem_copy_to_cta into CTA
// (r + 1) % cluster, which dumps what it received to out + (k * cluster + receiver) * bytes.
cudaError_t launch_dsmem(int cluster, int n_clusters, uint32_t bytes, uint8_t* out,
                         KernelStatus* status, uint64_t timeout_ns);

}  // namespace tile_test
