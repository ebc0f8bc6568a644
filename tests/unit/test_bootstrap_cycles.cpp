// 100 init/finalize cycles over the MPI bootstrap, with abstract and filesystem
// handle-exchange sockets alternately: no fd, socket, thread or file left behind.
// (The unique-id and single bootstraps: tests/unit/test_bootstrap_uid.cpp.)
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common/catch.h"
#include "common/test_util.h"
#include "init_cycle.h"
#include "runtime_fixture.h"

using namespace tmashmem_test;
namespace emu = tmashmem::emu;

TEST_CASE("bootstrap cycles: 100 MPI init/finalize cycles leave no fd, thread or file") {
  // A private TMPDIR: other tests' sockets come and go in /tmp meanwhile.
  char dir[] = "/tmp/tmashmem-cycles-test.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  setenv("TMPDIR", dir, 1);
  emu::install();
  int failures = 0;
  // Steady state first: MPI may start its own threads on the first duplicate.
  {
    tmashmem_init_attr_t attr = small_heap_attr();
    REQUIRE(tmashmem_init_attr(&attr) == TMASHMEM_SUCCESS);
    REQUIRE(tmashmem_finalize() == TMASHMEM_SUCCESS);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int fds = count_fds(), tasks = count_threads(), files = count_tmp_sockets();
  std::vector<double> init_ms;
  for (int cycle = 0; cycle < 100 && failures == 0; ++cycle) {
    failures += run_init_cycle(cycle, small_heap_attr(), &init_ms);
    failures += leaked_in_cycle(cycle, fds, tasks);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::sort(init_ms.begin(), init_ms.end());
  if (mpi_rank() == 0 && !init_ms.empty())
    std::printf("%zu MPI init cycles on %d PEs: init median %.2f ms, max %.2f ms\n", init_ms.size(),
                mpi_size(), init_ms[init_ms.size() / 2], init_ms.back());
  CHECK(failures == 0);
  CHECK(count_fds() == fds);
  CHECK(count_threads() == tasks);
  CHECK(count_tmp_sockets() == files);
  CHECK(files == 0);
  unsetenv("TMPDIR");
  CHECK(rmdir(dir) == 0);  // empty: every socket directory was removed
  emu::uninstall();
}
