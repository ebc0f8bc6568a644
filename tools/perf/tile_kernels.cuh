// tmashmem tile (TMA) views and kernels: one thread per CTA issues everything.
//
// tile_copy_kernel is the bandwidth form of tile put and tile get: a pipelined copy
// through shared memory, `stages` tiles deep, of the CTA's share of the tiles of a
// 2-D tensor (rows of 256 u32 = 1 KiB, boxes of box[1] rows). Tile put reads this
// PE's tensor with tma_get_tile and writes PE `pe`'s with tma_put_tile; tile get
// the other way round. tile_msg_kernel is the small-message form: back-to-back
// tma_put_tile of one tile from shared memory.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "tmashmem/tensor.h"
#include "tools/perf/backend_tmashmem.cuh"

namespace perf {

constexpr uint32_t kTileRowBytes = 1024;  // tile tensors: rows of 256 u32

// A 2-D u32 view of `bytes` at `p` (symmetric), rows of `inner` bytes, tiles of `box_rows`
// rows. COLLECTIVE. Destroyed with destroy().
struct TileView {
  tmashmem_tensor_t tensor = nullptr;
  tmashmem_tensor_handle_t handle{};
  TileView() = default;
  TileView(void* p, size_t bytes, uint32_t inner, uint32_t box_rows) {
    tmashmem_tensor_desc_t d;
    const uint64_t dims[2] = {inner / 4, bytes / inner};
    const uint32_t box[2] = {inner / 4, box_rows};
    tm_check(tmashmem_tensor_desc_init(&d, TMASHMEM_DTYPE_U32, 2, dims, box),
             "tmashmem_tensor_desc_init");
    d.l2_promotion = TMASHMEM_L2_PROMOTION_256B;
    tm_check(tmashmem_tensor_view(p, &d, &tensor), "tmashmem_tensor_view");
    tm_check(tmashmem_tensor_handle(tensor, &handle), "tmashmem_tensor_handle");
  }
  void destroy() {
    if (tensor) tm_check(tmashmem_tensor_destroy(tensor), "tmashmem_tensor_destroy");
    tensor = nullptr;
  }
};

// Shared memory the kernels below need: the tiles (128-byte aligned inside a buffer
// that may start anywhere 16-byte aligned) and one mbarrier per stage.
inline size_t tile_smem_bytes(uint32_t box_bytes, uint32_t stages) {
  return 128 + size_t(box_bytes) * stages + 8 * size_t(stages);
}

__device__ __forceinline__ unsigned char* align128(unsigned char* p) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(p) + 127) & ~uintptr_t(127));
}

// Copies the `rows / box[1]` tiles that start at row `row0` of `src` on `src_pe` into the
// same rows of `dst` on `dst_pe`, `iters` times over. Launch with one thread per CTA and
// tile_smem_bytes() of dynamic shared memory. *error = 1 if a get did not complete within
// timeout_ns.
static __global__ void tile_copy_kernel(const __grid_constant__ tmashmem_tensor_handle_t src,
                                        int src_pe,
                                        const __grid_constant__ tmashmem_tensor_handle_t dst,
                                        int dst_pe, uint32_t row0, uint32_t rows, uint32_t stages,
                                        long iters, uint64_t timeout_ns, int* error) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* tiles = align128(smem_raw);
  const uint32_t box_bytes = src.box_bytes;
  tmashmem::Mbarrier* bars =
      reinterpret_cast<tmashmem::Mbarrier*>(tiles + size_t(box_bytes) * stages);
  const uint32_t box_rows = src.box[1];
  const Range mine = share(rows / box_rows, blockIdx.x, gridDim.x, 1);
  const long n = static_cast<long>(mine.end - mine.begin);
  if (threadIdx.x != 0 || n == 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  for (uint32_t s = 0; s < stages; ++s) bars[s].init(1);

  const long total = n * iters;
  auto row = [&](long k) {
    return static_cast<int32_t>(row0 + (mine.begin + size_t(k % n)) * box_rows);
  };
  auto get = [&](long k) {
    const uint32_t s = static_cast<uint32_t>(k % stages);
    bars[s].arrive_expect_tx(box_bytes);
    tmashmem::tma_get_tile(tiles + size_t(s) * box_bytes, src, src_pe, {0, row(k)}, bars[s]);
  };
  for (long k = 0; k < total && k < static_cast<long>(stages); ++k) get(k);
  for (long k = 0; k < total; ++k) {
    const uint32_t s = static_cast<uint32_t>(k % stages);
    if (bars[s].wait(static_cast<uint32_t>((k / stages) & 1), timeout_ns) != tmashmem::Status::Ok) {
      *error = 1;  // copies may still be in flight: leave the barriers alone
      tmashmem::quiet();
      return;
    }
    tmashmem::tma_put_tile(dst, dst_pe, {0, row(k)}, tiles + size_t(s) * box_bytes);
    // Refill the stage put k-1 used, once that put has read it.
    if (k >= 1 && k - 1 + static_cast<long>(stages) < total) {
      tmashmem::bulk_wait_group_read<1>();
      get(k - 1 + stages);
    }
  }
  tmashmem::quiet();  // every put has written its tile
  for (uint32_t s = 0; s < stages; ++s) bars[s].inval();
}

// Back-to-back tma_put_tile of one tile (box_bytes) from shared memory into `dst` on
// `pe`: CTA c always writes tile c (rows row0 + c*box[1] ...), its shared tile loaded once
// from `src` (this PE) at the same place, so the destination must equal the source.
// kQuietEach: bulk_wait_group<0> + quiet() after every put (latency); otherwise at
// most 8 puts in flight and one quiet() at the end (rate). One thread per CTA.
template <bool kQuietEach>
__global__ void tile_msg_kernel(const __grid_constant__ tmashmem_tensor_handle_t src,
                                const __grid_constant__ tmashmem_tensor_handle_t dst, int pe,
                                uint32_t row0, long iters, uint64_t timeout_ns, int* error) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* tile = align128(smem_raw);
  tmashmem::Mbarrier* bar = reinterpret_cast<tmashmem::Mbarrier*>(tile + src.box_bytes);
  if (threadIdx.x != 0) return;
  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  bar->init(1);
  const tmashmem::TileCoord at(0, static_cast<int32_t>(row0 + blockIdx.x * src.box[1]));
  bar->arrive_expect_tx(src.box_bytes);
  tmashmem::tma_get_tile(tile, src, src.my_pe, at, *bar);
  if (bar->wait(0, timeout_ns) != tmashmem::Status::Ok) {
    *error = 1;
    return;
  }
  for (long m = 0; m < iters; ++m) {
    tmashmem::tma_put_tile(dst, pe, at, tile);
    if constexpr (kQuietEach)
      tmashmem::quiet();
    else
      tmashmem::bulk_wait_group<8>();
  }
  tmashmem::quiet();
  bar->inval();
}

}  // namespace perf
