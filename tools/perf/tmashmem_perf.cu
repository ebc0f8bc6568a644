// tmashmem-perf: tmashmem's communication measured beside the copy engine and plain
// SM copies in the same run (and beside NVSHMEM by perf_nvshmem, which prints the
// same table and CSV columns). See perf_common.h for the command line, or --help.
//
// Every timed loop is followed by a check of its destination (poisoned before the
// loop, compared with the source pattern after it, guard bytes after it untouched):
// a fast wrong kernel reports FAIL and makes the program exit non-zero.
//
// One translation unit: the tests live in tm_bw.cuh, tm_msg.cuh and tm_sync.cuh.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

#include "tmashmem/tmashmem.h"
#include "tools/perf/perf_common.h"
#include "tools/perf/perf_cuda.cuh"
#include "tools/perf/tm_bw.cuh"
#include "tools/perf/tm_common.cuh"
#include "tools/perf/tm_msg.cuh"
#include "tools/perf/tm_sync.cuh"

using namespace perf;
using namespace perf_tm;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    MPI_Finalize();
    return 2;
  }
  if (opt.help) {
    if (mpi_rank() == 0) print_usage(argv[0]);
    MPI_Finalize();
    return 0;
  }
  select_device("tmashmem");
  const PlacementShift shift;  // before init: the heap's physical pages differ per launch
  tm_check(tmashmem_init(), "tmashmem_init");
  const int device_sms = device_sm_count();
  Report report("tmashmem", opt);
  const Ceilings ceil = measure_ceilings(size_t(256) << 20, opt.reps, opt.timeout_s);
  report.set_ceiling(ceil.d2d_gbps, ceil.peer_gbps);
  shift.print();

  int failures = 0;
  const bool all = opt.test == "all";
  const bool known = all || opt.test == "ceiling" || opt.test == "bw" || opt.test == "msg" ||
                     opt.test == "pingpong" || opt.test == "barrier";
  if (all || opt.test == "ceiling") failures += test_ceiling(opt, report);
  if (all || opt.test == "bw") failures += test_bw(opt, report, device_sms);
  if (all || opt.test == "msg") failures += test_msg(opt, report, device_sms);
  if (all || opt.test == "pingpong") failures += test_pingpong(opt, report);
  if (all || opt.test == "barrier") failures += test_barrier(opt, report, device_sms);
  if (!known && mpi_rank() == 0)
    std::fprintf(stderr, "tmashmem-perf: unknown test '%s' (see --help)\n", opt.test.c_str());

  tm_check(tmashmem_finalize(), "tmashmem_finalize");
  int any = failures || !known;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi_rank() == 0)
    std::printf("\n# tmashmem-perf %s: %s\n", opt.test.c_str(),
                any ? "FAILED (see FAIL rows or messages above)" : "all destinations checked OK");
  MPI_Finalize();
  return any ? 1 : 0;
}
