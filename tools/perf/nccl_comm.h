// NCCL over every rank, for the benchmarks' NCCL rows (tmashmem-perf coll, bench_init_nccl):
// one test of whether NCCL can run here and one way to make the communicator. Include only
// where nccl.h is found (PERF_NCCL_COLL, PERF_NCCL_BOOTSTRAP).
#pragma once

#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#include "tools/perf/gpu_placement.h"
#include "tools/perf/harness_cuda.cuh"

namespace perf {

// The communicator, or nullptr (rank 0 says why, naming `who`) where two ranks share a GPU
// (gpu_placement.h): NCCL up to 2.29 refuses that; 2.30 and later accept it with
// NCCL_MULTI_RANK_GPU_ENABLE=1, which is honoured there. Rank 0 decides for every rank (one
// environment, one answer). COLLECTIVE.
inline ncclComm_t nccl_world_comm(const char* who) {
  const bool distinct = ranks_on_distinct_gpus();
  int version = 0;
  ncclGetVersion(&version);
  int use = 0;
  if (mpi_rank() == 0) {
    const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
    use = distinct || (version >= 23000 && multi != nullptr && std::atoi(multi) == 1);
    if (!use)
      std::printf(
          "# %s: NCCL %d left out: ranks share a GPU (NCCL refuses two ranks on one GPU; "
          "2.30 and later accept NCCL_MULTI_RANK_GPU_ENABLE=1)\n",
          who, version);
  }
  MPI_Bcast(&use, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!use) return nullptr;
  ncclUniqueId id;
  if (mpi_rank() == 0 && ncclGetUniqueId(&id) != ncclSuccess) die("ncclGetUniqueId failed");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, mpi_size(), id, mpi_rank()) != ncclSuccess)
    die("ncclCommInitRank failed");
  if (mpi_rank() == 0) std::printf("# %s: NCCL %d over %d ranks\n", who, version, mpi_size());
  return comm;
}

}  // namespace perf
