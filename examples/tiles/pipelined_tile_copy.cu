// pipelined_tile_copy: stream a large tensor into the next PE with several tiles in flight.
//
// Each CTA owns a strided share of the tiles of a 2-D float tensor. One thread per CTA runs
// a pipeline of kStages shared-memory stages: it keeps kStages - 1 gets (this PE's tensor ->
// shared memory) ahead of the put (shared memory -> next PE's tensor) it is issuing, and
// reuses a stage only once the put that last read it has finished reading. The host times
// the kernel and checks every element that arrived.
//
// Run:   mpirun -np 2 ./pipelined_tile_copy [MiB]     (one node; PEs may share a GPU)
// Prints "pipelined_tile_copy: N PEs, X bytes, ... GB/s, OK", or what went wrong.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "example_util.h"
#include "tmashmem/device/tile.cuh"
#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"

constexpr int kStages = 4;
constexpr int kBoxCols = 64, kBoxRows = 64;  // a 16 KiB tile of floats; 256-byte rows
constexpr int kCols = 4096;                  // tensor width in floats (16 KiB rows)
constexpr uint64_t kWaitNs = 10ull * 1000 * 1000 * 1000;

// smem: kStages tiles of smem_bytes (from a 1024-byte aligned start), then kStages mbarriers.
// Dynamic shared memory is not guaranteed the declared alignment: the launch reserves
// kSmemAlign - 16 bytes more and the kernel rounds the pointer up with align_smem.
constexpr uint32_t kSmemAlign = 1024;
__global__ void pipelined_copy(const __grid_constant__ tmashmem_tensor_handle_t src,
                               const __grid_constant__ tmashmem_tensor_handle_t dst, int dst_pe,
                               int n_tiles, int* failed) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = tmashmem::align_smem<kSmemAlign>(smem_raw);
  if (threadIdx.x != 0) return;
  tmashmem::Mbarrier* full = reinterpret_cast<tmashmem::Mbarrier*>(smem + kStages * src.smem_bytes);
  const int tiles_x = kCols / kBoxCols;
  auto coord = [&](int k) {  // the k-th tile of this CTA
    const int t = static_cast<int>(blockIdx.x) + k * static_cast<int>(gridDim.x);
    return tmashmem::TileCoord((t % tiles_x) * kBoxCols, (t / tiles_x) * kBoxRows);
  };
  const int mine = (n_tiles - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) /
                   static_cast<int>(gridDim.x);

  tmashmem::tma_acquire_tensor_maps(src);
  tmashmem::tma_acquire_tensor_maps(dst);
  for (int s = 0; s < kStages; ++s) full[s].init(1);
  auto issue_get = [&](int k) {  // tile k into stage k % kStages
    tmashmem::Mbarrier& bar = full[k % kStages];
    bar.arrive_expect_tx(src.box_bytes);
    tmashmem::tma_get_tile(smem + (k % kStages) * src.smem_bytes, src, src.my_pe, coord(k), bar);
  };
  for (int k = 0; k < kStages - 1 && k < mine; ++k) issue_get(k);  // fill the pipeline

  for (int k = 0; k < mine; ++k) {
    const int s = k % kStages;
    // Stage s completes once per kStages tiles: its phase parity is (k / kStages) & 1.
    if (full[s].wait(static_cast<uint32_t>((k / kStages) & 1), kWaitNs) != tmashmem::Status::Ok) {
      *failed = 1;
      break;
    }
    tmashmem::tma_put_tile(dst, dst_pe, coord(k), smem + s * src.smem_bytes);
    const int next = k + kStages - 1;
    if (next < mine) {
      // Stage next % kStages was last read by the put of tile k - 1: let it finish reading
      // (the put of tile k may stay in flight), then refill the stage.
      tmashmem::bulk_wait_group_read<1>();
      issue_get(next);
    }
  }
  tmashmem::bulk_wait_group<0>();  // every put has written its tile
}

float value(int pe, size_t i) {
  return static_cast<float>((i * 7 + static_cast<size_t>(pe) * 1000003) % 16777216);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  tmashmem_status_t st = tmashmem_init();
  if (st != TMASHMEM_SUCCESS) {
    const int exit_status = example_init_failure("pipelined_tile_copy", st);
    MPI_Finalize();
    return exit_status;
  }
  cudaSetDevice(tmashmem_device());
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const int rows =
      static_cast<int>(mib * 1024 * 1024 / (kCols * sizeof(float))) / kBoxRows * kBoxRows;

  // Two symmetric tensors of the same shape: the source, and the destination the previous
  // PE writes into.
  const uint64_t dims[2] = {kCols, static_cast<uint64_t>(rows)};
  const uint32_t box[2] = {kBoxCols, kBoxRows};
  tmashmem_tensor_desc_t desc;
  tmashmem_tensor_t src = nullptr, dst = nullptr;
  tmashmem_tensor_handle_t src_h, dst_h;
  bool ok = rows > 0 &&
            tmashmem_tensor_desc_init(&desc, TMASHMEM_DTYPE_F32, 2, dims, box) == TMASHMEM_SUCCESS;
  desc.l2_promotion = TMASHMEM_L2_PROMOTION_256B;
  ok = ok && tmashmem_tensor_create(&desc, &src) == TMASHMEM_SUCCESS &&
       tmashmem_tensor_create(&desc, &dst) == TMASHMEM_SUCCESS &&
       tmashmem_tensor_handle(src, &src_h) == TMASHMEM_SUCCESS &&
       tmashmem_tensor_handle(dst, &dst_h) == TMASHMEM_SUCCESS;
  if (!ok)
    std::printf("pipelined_tile_copy: %s\n", rows > 0 ? tmashmem_last_error() : "size too small");

  const size_t count = static_cast<size_t>(rows) * kCols, bytes = count * sizeof(float);
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = value(me, i);
  int* failed = nullptr;
  ok = ok &&
       cudaMemcpy(tmashmem_tensor_data(src), host.data(), bytes, cudaMemcpyHostToDevice) ==
           cudaSuccess &&
       cudaMemset(tmashmem_tensor_data(dst), 0, bytes) == cudaSuccess &&
       cudaMalloc(&failed, sizeof(int)) == cudaSuccess &&
       cudaMemset(failed, 0, sizeof(int)) == cudaSuccess;
  const size_t smem = kSmemAlign - 16 + kStages * (src_h.smem_bytes + sizeof(tmashmem::Mbarrier));
  ok = ok && cudaFuncSetAttribute(pipelined_copy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)) == cudaSuccess;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, tmashmem_device());
  const int n_tiles = rows / kBoxRows * (kCols / kBoxCols);
  const int blocks = n_tiles < sms ? n_tiles : sms;
  ok = ok && tmashmem_barrier_all() == TMASHMEM_SUCCESS;

  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float ms = 0;
  if (ok) {
    cudaEventRecord(start);
    pipelined_copy<<<blocks, 32, smem>>>(src_h, dst_h, next, n_tiles, failed);
    cudaEventRecord(stop);
    ok = cudaEventSynchronize(stop) == cudaSuccess && cudaGetLastError() == cudaSuccess;
    cudaEventElapsedTime(&ms, start, stop);
  }
  ok = ok && tmashmem_barrier_all() == TMASHMEM_SUCCESS;  // the previous PE's puts are complete

  int kernel_failed = 1;
  ok = ok &&
       cudaMemcpy(&kernel_failed, failed, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess &&
       kernel_failed == 0 &&
       cudaMemcpy(host.data(), tmashmem_tensor_data(dst), bytes, cudaMemcpyDeviceToHost) ==
           cudaSuccess;
  size_t bad = 0;
  for (size_t i = 0; ok && i < count; ++i) bad += host[i] != value(prev, i);
  if (bad)
    std::printf("pipelined_tile_copy: PE %d: %zu wrong elements from PE %d\n", me, bad, prev);
  ok = ok && bad == 0;

  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (me == 0)
    std::printf(
        "pipelined_tile_copy: %d PEs, %zu bytes, %d CTAs x %d stages, %.3f ms, %.1f GB/s, %s\n", n,
        bytes, blocks, kStages, ms, ms > 0 ? bytes / (ms * 1e6) : 0.0, all ? "OK" : "FAILED");
  cudaFree(failed);
  tmashmem_tensor_destroy(dst);
  tmashmem_tensor_destroy(src);
  tmashmem_finalize();
  MPI_Finalize();
  return all ? 0 : 1;
}
