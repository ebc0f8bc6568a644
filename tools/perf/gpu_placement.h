// Whether the ranks of MPI_COMM_WORLD are on distinct GPUs, by PCI bus id: the one test of
// where the NCCL baselines can run (NCCL up to 2.29 refuses two ranks on one GPU). Used by
// nccl_comm.h (tmashmem-perf coll, bench_init_nccl) and tmashmem-fused-bench. Needs only MPI,
// the CUDA runtime and tests/common/test_util.h.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "tests/common/test_util.h"  // mpi_rank, mpi_size

namespace perf {

// True when no two ranks' current GPUs share a PCI bus id (a rank whose id cannot be read
// counts as sharing). Rank 0 decides for every rank (one answer per job). COLLECTIVE over
// MPI_COMM_WORLD.
inline bool ranks_on_distinct_gpus() {
  constexpr int kBusIdBytes = 32;
  char bus[kBusIdBytes] = {0};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, kBusIdBytes, dev) != cudaSuccess)
    bus[0] = '\0';
  const int rank = tmashmem_test::mpi_rank(), size = tmashmem_test::mpi_size();
  std::vector<char> all(rank == 0 ? size_t(size) * kBusIdBytes : 0);
  MPI_Gather(bus, kBusIdBytes, MPI_CHAR, all.data(), kBusIdBytes, MPI_CHAR, 0, MPI_COMM_WORLD);
  int distinct = 0;
  if (rank == 0) {
    std::set<std::string> gpus;
    for (int i = 0; i < size; ++i) gpus.insert(std::string(&all[size_t(i) * kBusIdBytes]));
    distinct = gpus.size() == size_t(size) && gpus.count("") == 0;
  }
  MPI_Bcast(&distinct, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return distinct != 0;
}

}  // namespace perf
