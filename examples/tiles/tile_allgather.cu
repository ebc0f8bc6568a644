// tile_allgather: a matrix all-gather with TMA tiles.
//
// Every PE holds a copy of one float matrix in a symmetric tensor; PE p owns rows
// [p * kRowsPerPe, (p + 1) * kRowsPerPe). Each CTA of the kernel moves one tile of this PE's
// rows: one thread loads it into shared memory with tma_get_tile and writes it into every
// other PE's copy with tma_put_tile. Afterwards every PE holds the whole matrix.
//
// Run:   mpirun -np 4 ./tile_allgather       (one node; PEs may share a GPU)
// Prints "tile_allgather: N PEs, X bytes, OK", or what went wrong (exit 1; 2 without a GPU).
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "example_util.h"
#include "tmashmem/device/tile.cuh"
#include "tmashmem/tensor.h"
#include "tmashmem/tmashmem.h"

constexpr int kCols = 256, kRowsPerPe = 64;  // the matrix: kCols floats per row
constexpr int kBoxCols = 64, kBoxRows = 32;  // one tile: 32 rows of 64 floats (8 KiB)
constexpr uint64_t kWaitNs = 10ull * 1000 * 1000 * 1000;

__global__ void allgather_tiles(const __grid_constant__ tmashmem_tensor_handle_t matrix,
                                int* failed) {
  __shared__ alignas(128) float tile[kBoxRows * kBoxCols];
  __shared__ tmashmem::Mbarrier arrived;
  if (threadIdx.x != 0) return;  // TMA needs one thread; a real kernel would compute here
  const int me = matrix.my_pe;
  const int x = (blockIdx.x % (kCols / kBoxCols)) * kBoxCols;
  const int y = me * kRowsPerPe + (blockIdx.x / (kCols / kBoxCols)) * kBoxRows;

  tmashmem::tma_acquire_tensor_maps(matrix);  // the maps were written by the host
  arrived.init(1);
  arrived.arrive_expect_tx(matrix.box_bytes);
  tmashmem::tma_get_tile(tile, matrix, me, {x, y}, arrived);  // my copy -> shared memory
  if (arrived.wait(0, kWaitNs) != tmashmem::Status::Ok) {
    *failed = 1;
    return;
  }
  for (int pe = matrix.first_local_pe; pe < matrix.first_local_pe + matrix.n_local_pes; ++pe)
    if (pe != me && tmashmem::tma_reachable(matrix, pe))
      tmashmem::tma_put_tile(matrix, pe, {x, y}, tile);  // -> every other copy
  tmashmem::bulk_wait_group<0>();  // all written; the host barrier publishes them
}

float value(int row, int col) { return static_cast<float>(row * 1000 + col); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  tmashmem_status_t st = tmashmem_init();
  if (st != TMASHMEM_SUCCESS) {
    const int exit_status = example_init_failure("tile_allgather", st);
    MPI_Finalize();
    return exit_status;
  }
  cudaSetDevice(tmashmem_device());
  const int me = tmashmem_my_pe(), n = tmashmem_n_pes(), rows = n * kRowsPerPe;

  // The symmetric tensor (collective): rows x kCols floats, moved in kBoxRows x kBoxCols tiles.
  const uint64_t dims[2] = {kCols, static_cast<uint64_t>(rows)};  // innermost first
  const uint32_t box[2] = {kBoxCols, kBoxRows};
  tmashmem_tensor_desc_t desc;
  tmashmem_tensor_t matrix = nullptr;
  tmashmem_tensor_handle_t handle;
  bool ok =
      tmashmem_tensor_desc_init(&desc, TMASHMEM_DTYPE_F32, 2, dims, box) == TMASHMEM_SUCCESS &&
      tmashmem_tensor_create(&desc, &matrix) == TMASHMEM_SUCCESS &&
      tmashmem_tensor_handle(matrix, &handle) == TMASHMEM_SUCCESS;
  if (!ok) std::printf("tile_allgather: %s\n", tmashmem_last_error());

  // Fill my rows; the others are zero until the all-gather.
  std::vector<float> host(static_cast<size_t>(rows) * kCols, 0.0f);
  for (int r = me * kRowsPerPe; r < (me + 1) * kRowsPerPe; ++r)
    for (int c = 0; c < kCols; ++c) host[static_cast<size_t>(r) * kCols + c] = value(r, c);
  const size_t bytes = host.size() * sizeof(float);
  int* failed = nullptr;
  ok = ok &&
       cudaMemcpy(tmashmem_tensor_data(matrix), host.data(), bytes, cudaMemcpyHostToDevice) ==
           cudaSuccess &&
       cudaMalloc(&failed, sizeof(int)) == cudaSuccess &&
       cudaMemset(failed, 0, sizeof(int)) == cudaSuccess;
  ok = ok && tmashmem_barrier_all() == TMASHMEM_SUCCESS;  // every PE's rows are in place

  const int tiles = (kRowsPerPe / kBoxRows) * (kCols / kBoxCols);
  if (ok) allgather_tiles<<<tiles, 32>>>(handle, failed);
  ok = ok && cudaDeviceSynchronize() == cudaSuccess;
  ok = ok && tmashmem_barrier_all() == TMASHMEM_SUCCESS;  // every PE's puts are complete

  int kernel_failed = 1;
  ok = ok &&
       cudaMemcpy(&kernel_failed, failed, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess &&
       kernel_failed == 0 &&
       cudaMemcpy(host.data(), tmashmem_tensor_data(matrix), bytes, cudaMemcpyDeviceToHost) ==
           cudaSuccess;
  size_t bad = 0;
  for (int r = 0; ok && r < rows; ++r)
    for (int c = 0; c < kCols; ++c) bad += host[static_cast<size_t>(r) * kCols + c] != value(r, c);
  if (bad) std::printf("tile_allgather: PE %d: %zu wrong elements\n", me, bad);
  ok = ok && bad == 0;

  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("tile_allgather: %d PEs, %zu bytes, %s\n", n, bytes, all ? "OK" : "FAILED");
  cudaFree(failed);
  tmashmem_tensor_destroy(matrix);
  tmashmem_finalize();
  MPI_Finalize();
  return all ? 0 : 1;
}
