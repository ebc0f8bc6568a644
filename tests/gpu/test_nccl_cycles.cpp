// The NCCL bootstrap over an application's ncclComm_t: 100 init/finalize cycles leave no
// fd, thread or socket file behind, every cycle's heap works, and the communicator is the
// application's throughout (tmashmem never destroys or aborts it: it still reduces after).
// One PE per GPU: NCCL 2.28 refuses two ranks on one GPU ("Duplicate GPU detected"), so
// with more PEs than GPUs the test case is reported skipped.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/catch.h"
#include "common/leak_counts.h"
#include "common/test_util.h"
#include "tmashmem/tmashmem.h"

namespace {

struct Leftovers {
  int fds = tmashmem_test::count_fds(), threads = tmashmem_test::count_threads();
  int sockets = tmashmem_test::count_tmp_sockets();
};

// One cycle: init over the communicator, a symmetric allocation written and read back, free,
// finalize. Returns an empty string or what went wrong.
std::string cycle(ncclComm_t comm, int round) {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.bootstrap = TMASHMEM_BOOTSTRAP_NCCL;
  attr.nccl_comm = comm;
  if (tmashmem_init_attr(&attr) != TMASHMEM_SUCCESS)
    return std::string("init: ") + tmashmem_last_error();
  std::string why;
  if (std::strncmp(tmashmem_bootstrap_choice(), "nccl", 4) != 0)
    why = std::string("bootstrap is ") + tmashmem_bootstrap_choice();
  const size_t bytes = size_t(1) << 20;
  auto* p = static_cast<unsigned char*>(tmashmem_malloc(bytes));
  if (why.empty() && !p) why = std::string("malloc: ") + tmashmem_last_error();
  if (why.empty()) {
    const unsigned char mark = static_cast<unsigned char>(0xA5 ^ round), none = 0;
    unsigned char seen = 0;
    if (cudaMemcpy(p + bytes - 1, &none, 1, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(tmashmem_ptr(p + bytes - 1, tmashmem_my_pe()), &mark, 1,
                   cudaMemcpyHostToDevice) != cudaSuccess ||
        tmashmem_barrier_all() != TMASHMEM_SUCCESS ||
        cudaMemcpy(&seen, p + bytes - 1, 1, cudaMemcpyDeviceToHost) != cudaSuccess || seen != mark)
      why = "the heap did not hold what was written";
  }
  if (p && tmashmem_free(p) != TMASHMEM_SUCCESS && why.empty())
    why = std::string("free: ") + tmashmem_last_error();
  if (tmashmem_finalize() != TMASHMEM_SUCCESS && why.empty())
    why = std::string("finalize: ") + tmashmem_last_error();
  return why;
}

}  // namespace

TEST_CASE(
    "NCCL bootstrap: 100 init/finalize cycles leave nothing behind; the comm stays the user's") {
  int devices = 0, version = 0;
  const int size = tmashmem_test::mpi_size(), rank = tmashmem_test::mpi_rank();
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < size) {
    tmashmem_test::mark_skipped("NCCL bootstrap cycles need one GPU per PE (" +
                                std::to_string(size) + " PE(s), " + std::to_string(devices) +
                                " GPU(s))");
    return;
  }
  REQUIRE(cudaSetDevice(rank % devices) == cudaSuccess);
  ncclGetVersion(&version);
  ncclUniqueId id;
  if (rank == 0) REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess);
  if (rank == 0) std::printf("NCCL %d, %d PE(s)\n", version, size);

  // Steady state first: the first init loads libnccl's symbols and may start threads.
  std::string why = cycle(comm, 0);
  const Leftovers before;
  int round = 1;
  for (; round <= 100 && why.empty(); ++round) why = cycle(comm, round);
  const Leftovers after;
  INFO("cycle " << round - 1 << ": " << why);
  CHECK(why.empty());
  CHECK(after.fds == before.fds);
  CHECK(after.threads == before.threads);
  CHECK(after.sockets == before.sockets);

  // The communicator is still the application's and still works.
  int* d = nullptr;
  int h = rank + 1;
  REQUIRE(cudaMalloc(&d, sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(ncclAllReduce(d, d, 1, ncclInt32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h == size * (size + 1) / 2);
  cudaFree(d);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
