// A PE that comes to tmashmem_init after the bootstrap timeout is named by the PEs
// that came in time (not "some PE"). Its own program: afterwards the PEs are out of step.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;

TEST_CASE("bootstrap: a PE late to tmashmem_init is named exactly") {
  if (mpi_size() < 2) {
    mark_skipped("needs 2 PEs: one comes late");
    return;
  }
  tmashmem_init_attr_t attr = small_heap_attr();
  attr.bootstrap_timeout_ms = 1000;
  tmashmem::emu::install();
  int late = mpi_size() - 1;
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == late) usleep(2500 * 1000);
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  std::string m = tmashmem_last_error();
  if (mpi_rank() != late) {
    CHECK(st == TMASHMEM_ERROR_TIMEOUT);
    std::string exact = "PE(s) " + std::to_string(late) + " did not call tmashmem_init";
    CHECK(m.find(exact) != std::string::npos);
    if (m.find(exact) == std::string::npos) std::printf("[PE %d] %s\n", mpi_rank(), m.c_str());
  }
  CHECK_FALSE(tmashmem_initialized());
  MPI_Barrier(MPI_COMM_WORLD);
}
