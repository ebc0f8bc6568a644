// A PE that comes to tmashmem_init after the bootstrap timeout is named by the PEs
// that came in time (not "some PE"). Its own program: afterwards the PEs are out of step.
#include <unistd.h>

#include <string>

#include "absent_pe.h"

using namespace tmashmem_test;

TEST_CASE("bootstrap: a PE late to tmashmem_init is named exactly") {
  if (!have_pes(2, "needs 2 PEs: one comes late")) return;
  tmashmem_init_attr_t attr = absent_pe_attr(1000);
  const int late = absent_pe();
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == late) usleep(2500 * 1000);
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  std::string m = tmashmem_last_error();
  if (mpi_rank() != late) {
    CHECK(st == TMASHMEM_ERROR_TIMEOUT);
    check_names_exactly(m, "PE(s) " + std::to_string(late) + " did not call tmashmem_init");
  }
  CHECK_FALSE(tmashmem_initialized());
  MPI_Barrier(MPI_COMM_WORLD);
}
