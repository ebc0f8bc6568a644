// nccl_bootstrap: tmashmem started over an existing NCCL communicator.
//
// The application owns an ncclComm_t (here made the usual way: rank 0's
// ncclUniqueId broadcast with MPI, one rank per GPU) and hands it to tmashmem in
// tmashmem_init_attr_t.nccl_comm; tmashmem's bootstrap then runs over NCCL, and the
// communicator stays the application's (tmashmem never destroys or aborts it).
//
// Every PE writes fresh random numbers into the next PE's symmetric inbox through
// tmashmem_ptr, and each PE checks what the previous one sent.
// Run:   mpirun -np 1 ./nccl_bootstrap     (more ranks need one GPU each)
// Prints "nccl_bootstrap: N PEs, X bytes, OK"; exits non-zero on failure, 2 without a GPU.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "tmashmem/tmashmem.h"

namespace {

constexpr size_t kCount = (size_t(1) << 18) + 5;

std::vector<uint32_t> numbers(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(kCount);
  for (uint32_t& x : v) x = static_cast<uint32_t>(rng() >> 11);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nccl_bootstrap: no CUDA device\n");
    MPI_Finalize();
    return 2;
  }
  cudaSetDevice(rank % devices);
  ncclUniqueId nccl_id;
  if (rank == 0) ncclGetUniqueId(&nccl_id);
  MPI_Bcast(&nccl_id, sizeof nccl_id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, size, nccl_id, rank) != ncclSuccess) {
    std::printf("nccl_bootstrap: ncclCommInitRank failed\n");
    MPI_Finalize();
    return 1;
  }

  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.nccl_comm = comm;  // auto: the NCCL bootstrap (attr.bootstrap = TMASHMEM_BOOTSTRAP_NCCL forces it)
  bool ok = tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS;
  if (!ok) std::printf("nccl_bootstrap: tmashmem_init_attr failed: %s\n", tmashmem_last_error());
  const size_t bytes = kCount * sizeof(uint32_t);
  uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::vector<uint64_t> seeds(static_cast<size_t>(size));
  MPI_Allgather(&seed, 1, MPI_UINT64_T, seeds.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  if (ok) {
    std::printf("nccl_bootstrap: PE %d of %d, %s\n", tmashmem_my_pe(), tmashmem_n_pes(),
                tmashmem_bootstrap_choice());
    const int me = tmashmem_my_pe(), n = tmashmem_n_pes();
    auto* inbox = static_cast<uint32_t*>(tmashmem_malloc(bytes));
    auto* there = inbox ? static_cast<uint32_t*>(tmashmem_ptr(inbox, (me + 1) % n)) : nullptr;
    ok = there != nullptr;
    std::vector<uint32_t> mine = numbers(seed);
    ok = ok && cudaMemcpy(there, mine.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess;
    ok = tmashmem_barrier_all() == TMASHMEM_SUCCESS && ok;
    std::vector<uint32_t> got(kCount);
    ok = ok && cudaMemcpy(got.data(), inbox, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
    std::vector<uint32_t> expect = numbers(seeds[static_cast<size_t>((me + n - 1) % n)]);
    size_t bad = 0;
    for (size_t i = 0; ok && i < kCount; ++i) bad += got[i] != expect[i];
    if (bad) std::printf("nccl_bootstrap: PE %d: %zu of %zu numbers wrong\n", me, bad, kCount);
    ok = ok && bad == 0;
    tmashmem_free(inbox);
    ok = tmashmem_finalize() == TMASHMEM_SUCCESS && ok;
  }
  int mine_ok = ok ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) std::printf("nccl_bootstrap: %d PEs, %zu bytes, %s\n", size, bytes, all_ok ? "OK" : "FAILED");
  ncclCommDestroy(comm);  // the communicator was ours all along
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
