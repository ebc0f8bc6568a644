// A PE that never makes a collective call turns into TMASHMEM_ERROR_TIMEOUT on
// the others, naming it, instead of a hang. Runs last in its own program: after a
// timeout the PEs are out of step by design.
#include <string>

#include "absent_pe.h"

using namespace tmashmem_test;

TEST_CASE("bootstrap: a missing PE is named in a timeout error") {
  if (!have_pes(2, "needs 2 PEs: one stays away")) return;
  tmashmem_init_attr_t attr = absent_pe_attr(1500);
  REQUIRE(all_ranks(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS));
  const int last = absent_pe();
  if (mpi_rank() != last) {
    void* p = tmashmem_malloc(4096);  // the last PE never calls this
    CHECK(p == nullptr);
    std::string m = tmashmem_last_error();
    CHECK(m.find("timed out") != std::string::npos);
    CHECK(m.find(std::to_string(last)) != std::string::npos);
    // Exactly the missing PE: the PEs that did call are not in the list.
    check_names_exactly(m, "waiting for PE(s) " + std::to_string(last) + ";");
  }
  // Everyone meets again outside tmashmem; the runtime is abandoned, not finalized
  // (its collectives are out of step), and the emulator's memory goes with the process.
  MPI_Barrier(MPI_COMM_WORLD);
}
