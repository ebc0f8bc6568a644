// A PE that never makes a collective call turns into TMASHMEM_ERROR_TIMEOUT on
// the others, naming it, instead of a hang. Runs last in its own program: after a
// timeout the PEs are out of step by design.
#include <unistd.h>

#include <string>

#include "common/catch.h"
#include "common/test_util.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;

TEST_CASE("bootstrap: a missing PE is named in a timeout error") {
  if (mpi_size() < 2) {
    mark_skipped("needs 2 PEs: one stays away");
    return;
  }
  tmashmem_init_attr_t attr = small_heap_attr();
  attr.bootstrap_timeout_ms = 1500;
  tmashmem::emu::install();
  REQUIRE(all_ranks(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS));
  int last = mpi_size() - 1;
  if (mpi_rank() != last) {
    void* p = tmashmem_malloc(4096);  // the last PE never calls this
    CHECK(p == nullptr);
    std::string m = tmashmem_last_error();
    CHECK(m.find("timed out") != std::string::npos);
    CHECK(m.find(std::to_string(last)) != std::string::npos);
    // Exactly the missing PE: the PEs that did call are not in the list.
    std::string exact = "waiting for PE(s) " + std::to_string(last) + ";";
    CHECK(m.find(exact) != std::string::npos);
    if (m.find(exact) == std::string::npos) std::printf("[PE %d] %s\n", mpi_rank(), m.c_str());
  }
  // Everyone meets again outside tmashmem; the runtime is abandoned, not finalized
  // (its collectives are out of step), and the emulator's memory goes with the process.
  MPI_Barrier(MPI_COMM_WORLD);
}
