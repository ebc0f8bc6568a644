// tmashmem-perf and perf_nvshmem, one source: each runtime's communication measured beside
// the copy engine and plain SM copies in the same run, with the same tests, kernels, checks,
// table and CSV columns. PERF_NVSHMEM selects NVSHMEM's backend (backend.cuh),
// otherwise tmashmem's. See harness_options.h for the command line, or --help.
//
// Every timed loop but coll's (check n/a) is followed by a check of its destination (poisoned
// before the loop, compared with the source pattern after it, guard bytes after it
// untouched): a fast wrong kernel reports FAIL and makes the program exit non-zero.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <utility>

#include "tools/perf/backend.cuh"  // PERF_NVSHMEM: NVSHMEM's, else tmashmem's
#include "tools/perf/perf_bw.cuh"
#include "tools/perf/perf_coll.cuh"
#include "tools/perf/perf_msg.cuh"
#include "tools/perf/perf_sync.cuh"

using namespace perf;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options opt;
  int code = 0;
  if (!parse_options(argc, argv, &opt, &code)) {
    MPI_Finalize();
    return code;
  }
  select_device(Runtime::kName, argc, argv);
  const PlacementShift shift;  // before init: the heap's physical pages differ per launch
  Runtime::bootstrap();
  Runtime::init();
  const int device_sms = device_sm_count();
  Report report(Runtime::kName, opt);
  measure_ceilings(&report.d2d_gbps, &report.peer_gbps, opt.reps, opt.timeout_s);
  shift.print();

  using Test = int (*)(const Options&, Report&, int);
  const std::pair<const char*, Test> tests[] = {
    {"bw", test_bw},
#if PERF_TMASHMEM
    {"mcast", test_mcast},
#endif
    {"msg", test_msg},
    {"pingpong", test_pingpong},
    {"barrier", test_barrier},
    {"coll", test_coll},
  };
  int failures = 0;
  bool known = false;
  for (const auto& [name, test] : tests) {
    if (opt.test != name) continue;
    known = true;
    failures += test(opt, report, device_sms);
  }
  if (!known && mpi_rank() == 0)
    std::fprintf(stderr, "perf: unknown test '%s' (see --help)\n", opt.test.c_str());
  Runtime::finalize();
  int any = failures || !known;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi_rank() == 0)
    std::printf("\n# %s perf %s: %s\n", Runtime::kName, opt.test.c_str(),
                any ? "FAILED (see FAIL rows or messages above)" : "all destinations checked OK");
  MPI_Finalize();
  return any ? 1 : 0;
}
