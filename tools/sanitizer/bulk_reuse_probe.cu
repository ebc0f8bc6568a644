// tmashmem-bulk-reuse-probe: is a racecheck report on a reused bulk-copy staging buffer
// the tool's or the code's? Each kernel loads four 4 KiB chunks of `src` one after the
// other into ONE shared-memory buffer with cp.async.bulk (completion on an mbarrier) and
// stores each to `dst` before the next load, the reuse pattern of put_nbi / get_nbi
// (bulk.cuh) and the collectives' bulk copies. Every reuse is ordered by the PTX memory
// model: the next load is issued only after the mbarrier wait that completes the previous
// load and the bulk wait that completes the store reading the buffer. No two threads touch
// one buffer.
//   one_thread   thread 0 alone
//   one_sync     the same, with __syncthreads between the chunks
//   four_lanes   lanes 0-3 of one warp, each with its own buffer and mbarrier
//   lib_one      thread 0 calls the library's put_nbi body (detail::bulk_copy: two buffers,
//                two mbarriers initialised per call, a buffer refilled after
//                cp.async.bulk.wait_group.read 1), three calls in a row
//   lib_lanes    lanes 0-3 the same, each with its own stage
//   double_full  lib_one's double-buffered loop written out, the refill after a full
//                cp.async.bulk.wait_group 0 instead of .read 1
// Run under `compute-sanitizer --tool racecheck`: a hazard reported where one thread
// alone touches the buffers is not a race between threads (docs/reliability.md). The
// program checks dst == src and exits non-zero otherwise.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "tmashmem/device/bulk.cuh"
#include "tmashmem/device/detail/address.cuh"
#include "tmashmem/device/detail/bulk.cuh"
#include "tmashmem/device/detail/fence.cuh"
#include "tmashmem/device/detail/mbarrier.cuh"

namespace {

using namespace tmashmem::detail;

constexpr uint32_t kChunk = 4096, kChunks = 4, kLanes = 4;

enum class Mode { OneThread, OneSync, FourLanes, LibOne, LibLanes, DoubleFull };

// Chunk k of a part, through `buf` (kChunk bytes) on mbarrier `bar` (phase k).
__device__ void move_chunk(char* dst, const char* src, uint32_t buf, uint32_t bar, uint32_t k) {
  mbarrier_arrive_expect_tx(bar, kChunk);
  bulk_load(buf, src + size_t(k) * kChunk, kChunk, bar);
  while (!mbarrier_try_wait_parity(bar, k & 1u)) {
  }
  bulk_store(dst + size_t(k) * kChunk, buf, kChunk);
  bulk_commit();
  bulk_wait<0>();
}

template <Mode kMode>
__global__ void probe_kernel(char* dst, const char* src) {
  __shared__ __align__(128) char bufs[kLanes][kChunk];
  __shared__ __align__(8) uint64_t bars[kLanes];
  const unsigned t = threadIdx.x;
  const unsigned lanes = kMode == Mode::FourLanes ? kLanes : 1u;
  if (t < lanes && kMode != Mode::LibOne && kMode != Mode::LibLanes) {
    mbarrier_init(smem_address(&bars[t]), 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  const size_t part = size_t(kChunk) * kChunks;
  if constexpr (kMode == Mode::OneSync) {
    for (uint32_t k = 0; k < kChunks; ++k) {
      if (t == 0) move_chunk(dst, src, smem_address(bufs[0]), smem_address(&bars[0]), k);
      __syncthreads();
    }
  } else if constexpr (kMode == Mode::LibOne || kMode == Mode::LibLanes) {
    // A stage of 16 + 2 x 2032 bytes (inside the lane's 4 KiB buffer): the part's 16 KiB goes
    // in nine chunks, double-buffered.
    const unsigned users = kMode == Mode::LibLanes ? kLanes : 1u;
    if (t < users) {
      const tmashmem::BulkStage stage{bufs[t], 16 + 2 * 2032};
      for (int call = 0; call < 3; ++call) bulk_copy(dst + t * part, src + t * part, part, stage);
      bulk_wait<0>();
    }
  } else if constexpr (kMode == Mode::DoubleFull) {
    if (t == 0) {
      const uint32_t bar[2] = {smem_address(&bars[0]), smem_address(&bars[1])};
      const uint32_t buf[2] = {smem_address(bufs[0]), smem_address(bufs[0] + 2048)};
      constexpr uint32_t kHalf = 2048, kN = uint32_t(part / kHalf);
      mbarrier_init(bar[1], 1);
      fence_mbarrier_init();
      auto load = [&](uint32_t i) {
        mbarrier_arrive_expect_tx(bar[i & 1], kHalf);
        bulk_load(buf[i & 1], src + size_t(i) * kHalf, kHalf, bar[i & 1]);
      };
      load(0);
      load(1);
      for (uint32_t i = 0; i < kN; ++i) {
        while (!mbarrier_try_wait_parity(bar[i & 1], (i >> 1) & 1u)) {
        }
        bulk_store(dst + size_t(i) * kHalf, buf[i & 1], kHalf);
        bulk_commit();
        if (i >= 1 && i + 1 < kN) {
          bulk_wait<0>();
          load(i + 1);
        }
      }
      bulk_wait<0>();
    }
  } else if (t < lanes) {
    for (uint32_t k = 0; k < kChunks; ++k)
      move_chunk(dst + t * part, src + t * part, smem_address(bufs[t]), smem_address(&bars[t]), k);
  }
}

template <Mode kMode>
bool run(const char* name, char* d_dst, const char* d_src, const std::vector<char>& want) {
  const bool lanes = kMode == Mode::FourLanes || kMode == Mode::LibLanes;
  const size_t bytes = size_t(kChunk) * kChunks * (lanes ? kLanes : 1u);
  cudaMemset(d_dst, 0, want.size());
  probe_kernel<kMode><<<1, 64>>>(d_dst, d_src);
  std::vector<char> got(bytes);
  const cudaError_t e = cudaMemcpy(got.data(), d_dst, bytes, cudaMemcpyDeviceToHost);
  const bool ok = e == cudaSuccess && std::memcmp(got.data(), want.data(), bytes) == 0;
  std::printf("%-12s %s\n", name, e != cudaSuccess ? cudaGetErrorString(e) : ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

int main() {
  const size_t bytes = size_t(kChunk) * kChunks * kLanes;
  std::vector<char> host(bytes);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<char>((i * 131u + 7u) >> 3);
  char *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess ||
      cudaMemcpy(src, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    std::printf("bulk-reuse-probe: no GPU or allocation failed\n");
    return 2;
  }
  int failed = 0;
  failed += !run<Mode::OneThread>("one_thread", dst, src, host);
  failed += !run<Mode::OneSync>("one_sync", dst, src, host);
  failed += !run<Mode::FourLanes>("four_lanes", dst, src, host);
  failed += !run<Mode::LibOne>("lib_one", dst, src, host);
  failed += !run<Mode::LibLanes>("lib_lanes", dst, src, host);
  failed += !run<Mode::DoubleFull>("double_full", dst, src, host);
  std::printf("%d passed, %d failed\n", 6 - failed, failed);
  cudaFree(src);
  cudaFree(dst);
  return failed == 0 ? 0 : 1;
}
